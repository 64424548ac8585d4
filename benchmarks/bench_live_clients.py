"""Can a crowd of Foxglove clients cost ``record --serve`` memory or data?

One ``hyperframes record --serve`` per run, fed live by senders started in the same run:
ffmpeg's ``testsrc`` at 1280x720 15 Hz (H.264 over UDP, decoded by the record process:
2.76 MB RGB frames, served as ``foxglove.RawImage``) and a 500 Hz UDP IMU
(``tests/acceptance/senders.py imu``). The runs, back to back so they share the machine's
load:

* **0 clients**: the server runs, nobody connects (the run the others are held to);
* **N stalled**: N clients (1, 10, 50) upgrade, subscribe to every channel with a 4 kB
  receive buffer and never read again;
* **10 reading**: 10 clients subscribe to every channel and read everything (one thread,
  ``recv_into``; bytes counted, not parsed);
* **50 stalled + 10 reading**.

Reported per run: IMU datagrams sent and recorded (a datagram the pipeline missed is lost
for good), camera frames recorded against the 0-client run, the record process's peak RSS
(``/proc/PID/status`` every 50 ms) against the 0-client peak plus the budget
(``--serve-budget``, 256 MiB by default), the messages dropped for slow clients in all
and per client (min..max of those the summary names), and bytes the readers got.

    PYTHONPATH=$PWD python benchmarks/bench_live_clients.py [--seconds 12] [--budget 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recordings.outputs.live import _websocket as wsproto  # noqa: E402
from tests.interop.foxglove_client import LiveClient, connect  # noqa: E402

SENDERS = ROOT / "tests" / "acceptance" / "senders.py"
TOPICS = {"/cam", "/imu"}
CONFIG = """
[pipeline]
max_latency_ms = 300
[sync]
policy = "nearest"
reference = "cam"
tolerance_ms = 40
optional = ["imu"]
windows_ms = {{ imu = [20, 20] }}
[[sources]]
type = "video"
name = "cam"
url = "udp://127.0.0.1:{cam}"
[[sources]]
type = "timeseries_udp"
name = "imu"
kind = "imu"
port = {imu}
"""


def _port(kind: int = socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (all threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def _advertised(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            async with connect(f"ws://127.0.0.1:{port}") as ws:
                await asyncio.wait_for(LiveClient(ws).wait_topics(TOPICS), 5)
                return
        except (OSError, TimeoutError, AssertionError, Exception):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server never advertised /cam and /imu") from None
            await asyncio.sleep(0.2)


def _subscribed(port: int, rcvbuf: int | None) -> socket.socket:
    """A raw client subscribed to every channel (the caller reads on, or never again)."""
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    request, _ = wsproto.upgrade_request("127.0.0.1", port)
    sock.sendall(request)
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(4096)
    reader = wsproto.FrameReader(limit=1 << 30, masked=False)
    pending = answer.partition(b"\r\n\r\n")[2]
    channels: dict[str, int] = {}
    while True:
        for message in reader.feed(pending):
            if message.opcode == wsproto.TEXT:
                doc = json.loads(bytes(message.payload))
                if doc["op"] == "advertise":
                    channels.update({c["topic"]: c["id"] for c in doc["channels"]})
        if set(channels) >= TOPICS:
            break
        pending = sock.recv(1 << 16)
    subs = [{"id": i + 1, "channelId": cid} for i, cid in enumerate(channels.values())]
    body = json.dumps({"op": "subscribe", "subscriptions": subs}).encode()
    sock.sendall(wsproto.masked(wsproto.TEXT, body))
    return sock


def _read_all(socks: list[socket.socket], got: list[int], stop: threading.Event) -> None:
    sel = selectors.DefaultSelector()
    for i, sock in enumerate(socks):
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ, i)
    buf = bytearray(1 << 20)
    while not stop.is_set():
        for key, _ in sel.select(0.2):
            try:
                n = key.fileobj.recv_into(buf)  # type: ignore[union-attr]
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                n = 0
            if not n:
                sel.unregister(key.fileobj)
            got[key.data] += n
    sel.close()


def run(
    stalled: int, reading: int, seconds: float, budget: float | None, tmp: Path, root: Path = ROOT
) -> dict[str, Any]:
    cam_port, imu_port, port = _port(), _port(), _port(socket.SOCK_STREAM)
    config = tmp / "live.toml"
    config.write_text(CONFIG.format(cam=cam_port, imu=imu_port))
    out = tmp / f"run-{stalled}-{reading}.hfr"
    limits = [] if budget is None else ["--serve-budget", str(budget), "--serve-clients", "100"]
    record = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record", str(config), "-o", str(out),
         "--serve", f"127.0.0.1:{port}", *limits],
        cwd=tmp, env={**_env(), "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    time.sleep(2.0)  # the UDP sockets bound
    cam = subprocess.Popen(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-f", "lavfi",
         "-i", "testsrc=size=1280x720:rate=15", "-t", str(seconds), "-c:v", "libx264",
         "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-f", "mpegts",
         f"udp://127.0.0.1:{cam_port}?pkt_size=1316"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    imu = subprocess.Popen(
        [sys.executable, str(SENDERS), "imu", str(imu_port), "--rate", "500",
         "--seconds", str(seconds)],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    asyncio.run(_advertised(port, record))
    baseline_rss = _rss_mib(record.pid)
    socks = [_subscribed(port, 4096) for _ in range(stalled)]
    readers = [_subscribed(port, None) for _ in range(reading)]
    got = [0] * reading
    stop = threading.Event()
    thread = threading.Thread(target=_read_all, args=(readers, got, stop), daemon=True)
    thread.start()
    peak = baseline_rss
    while imu.poll() is None or cam.poll() is None:
        peak = max(peak, _rss_mib(record.pid))
        time.sleep(0.05)
    imu_sent = int(re.search(r"sent (\d+)", imu.communicate()[0])[1])  # type: ignore[index]
    time.sleep(3.0)  # the last frames through the pipeline (a loaded machine lags)
    peak = max(peak, _rss_mib(record.pid))
    cpu = _cpu_s(record.pid)
    sigint = time.monotonic()
    record.send_signal(signal.SIGINT)
    text = record.communicate(timeout=60)[0].decode(errors="replace")
    exit_s = time.monotonic() - sigint
    stop.set()
    thread.join(5)
    for sock in socks + readers:
        sock.close()
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "hyperframes", "info", str(out), "--json"],
            capture_output=True, env=_env(), check=True,
        ).stdout
    )  # fmt: skip
    served = next((x for x in text.splitlines() if x.startswith("served ")), "")
    slow = re.search(r"(\d+) messages dropped for slow clients \((.*)\)", served)
    named = [int(n) for n in re.findall(r": (\d+) dropped", slow[2])] if slow else []
    return {
        "run": f"{stalled} stalled" + (f" + {reading} reading" if reading else ""),
        "imu_sent": imu_sent,
        "imu": doc["sensors"]["imu"]["frames"],
        "cam": doc["sensors"]["cam"]["frames"],
        "lost": sum(s.get("dropped", 0) for s in doc["sensors"].values()),
        "imu_ledger": doc.get("ledger", {}).get("imu"),
        "cpu_s": cpu,
        "rss_before": baseline_rss,
        "rss_peak": peak,
        "slow_dropped": int(slow[1]) if slow else 0,
        "per_client": f"{min(named)}..{max(named)}" if named else "-",
        "read_mb": sum(got) / 1e6,
        "exit_s": exit_s,
        "rc": record.returncode,
    }


def _losses(ledger: dict[str, Any] | None) -> str:
    if not ledger or not ledger.get("lost"):
        return "none"
    return ", ".join(f"{k} {v}" for k, v in ledger["lost"].items())


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: 10 stalled clients against none, 4 s runs."""
    with tempfile.TemporaryDirectory() as tmp:
        alone = run(0, 0, 4.0, 256.0, Path(tmp))
        crowd = run(10, 0, 4.0, 256.0, Path(tmp))
    kept = crowd["imu"] >= alone["imu"] * crowd["imu_sent"] / max(alone["imu_sent"], 1) - 1
    return [
        {
            "measure": "record --serve with 10 stalled clients: RSS over no clients",
            "value": f"{crowd['rss_peak'] - alone['rss_peak']:+.0f} MiB",
            "ratio": f"IMU {crowd['imu']}/{crowd['imu_sent']} (alone {alone['imu']}/"
            f"{alone['imu_sent']})",
            "target": "under the 256 MiB budget, nothing more lost",
            "met": crowd["rss_peak"] - alone["rss_peak"] < 256 and kept,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--budget", type=float, default=256.0, help="--serve-budget, MiB")
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="run the record command of this checkout (an older commit: no --serve-* limits)",
    )
    parser.add_argument(
        "--plan", default="0,1,10,50,0+10,50+10", help="runs: STALLED[+READING], comma-separated"
    )
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()}, cpus: {os.cpu_count()}")
    plan = [tuple(int(n) for n in (p + "+0").split("+")[:2]) for p in args.plan.split(",")]
    limits = args.budget if args.root == ROOT else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for stalled, reading in plan:
            rows.append(run(stalled, reading, args.seconds, limits, Path(tmp), args.root))
            print(rows[-1], flush=True)
    print(f"load after: {os.getloadavg()}")
    base = rows[0]
    print(
        "| run | IMU sent / recorded (ledger losses) | cam frames (0-client run) | ledger lost | peak RSS MiB "
        "(start) | over 0-client peak | slow-client drops (per client) | reader MB | CPU s | "
        "exit s |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['run']} | {r['imu_sent']} / {r['imu']} ({_losses(r['imu_ledger'])}) | "
            f"{r['cam']} ({base['cam']}) | "
            f"{r['lost']} | {r['rss_peak']:.0f} ({r['rss_before']:.0f}) | "
            f"{r['rss_peak'] - base['rss_peak']:+.0f} (budget {args.budget:.0f}) | "
            f"{r['slow_dropped']} ({r['per_client']}) | {r['read_mb']:.0f} | {r['cpu_s']:.1f} | "
            f"{r['exit_s']:.2f} |"
        )


if __name__ == "__main__":
    main()
