"""Live ``hyperframes record`` CPU per frame at 1 kHz, with a real UDP sender process.

All in one run: a sender process (``tests/acceptance/senders.py imu``: one
JSON line per datagram, stamped with its own clock) sends at ``--rate`` to

(r) ``hyperframes record`` (a ``timeseries_udp`` IMU source with the online
    clock, the hub, the recorder) in a child process, stdout a pipe;
(p) the peer: a plain Python receiver process a user would write instead,
    ``recvfrom`` -> ``json.loads`` -> ``mcap`` writer (one channel, JSON
    messages, zstd chunks), nothing else (no clock model, no sync, no ledger).

Each receiver's process CPU (user + system, ``/proc/<pid>/stat``, all its
threads) is read after ``--warmup`` seconds and again ``--seconds`` later;
divided by the datagrams sent in between (the sender's own count over its
life, at its measured rate) it is the CPU per frame. ``--repeat`` rounds
interleave (r) and (p); the best of each is reported with the spread.

    .venv/bin/python benchmarks/bench_live_record.py [--rate 1000] [--seconds 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SENDERS = ROOT / "tests" / "acceptance" / "senders.py"
TICK = os.sysconf("SC_CLK_TCK")

PEER = r"""
import json, signal, socket, sys
from mcap.writer import Writer, CompressionType
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
sock.settimeout(0.2)
n = 0
with open(sys.argv[2], "wb") as f:
    w = Writer(f, compression=CompressionType.ZSTD)
    w.start()
    schema = w.register_schema("imu", "jsonschema", b"{}")
    ch = w.register_channel("imu", "json", schema)
    print("ready", flush=True)
    while not stop:
        try:
            data = sock.recv(65536)
        except (TimeoutError, InterruptedError):
            continue
        s = json.loads(data)
        w.add_message(ch, log_time=s["w"], publish_time=s["w"], data=data, sequence=n)
        n += 1
    w.finish()
print("received", n, flush=True)
"""


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT) + os.pathsep + out.get("PYTHONPATH", "")
    out["PYTHONUNBUFFERED"] = "1"
    return out


def wait_bound(proc: subprocess.Popen[str], port: int, timeout: float = 60) -> None:
    """Until the receiver has bound ``port`` (our own bind then fails)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the receiver never bound port {port} (exit {proc.poll()})")


def measure(receiver: list[str], port: int, rate: float, warmup: float, seconds: float) -> float:
    """CPU seconds per datagram of the receiver process over ``seconds`` of steady sending."""
    proc = subprocess.Popen(
        receiver, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=ROOT
    )
    try:
        wait_bound(proc, port)
        assert proc.stdout is not None
        drain = subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
        sender = subprocess.Popen(
            [sys.executable, str(SENDERS), "imu", str(port), "--rate", str(rate)],
            stdout=subprocess.PIPE,
            text=True,
        )
        started = time.monotonic()
        time.sleep(warmup)
        c0, t0 = cpu_s(proc.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_s(proc.pid), time.monotonic()
        sender.send_signal(signal.SIGTERM)
        out, _ = sender.communicate(timeout=30)
        lived = time.monotonic() - started
        sent = int(out.split()[-1])
        per_s = sent / lived
        proc.send_signal(signal.SIGINT if "-c" not in receiver else signal.SIGTERM)
        proc.wait(timeout=60)
        drain.wait(timeout=10)
        return (c1 - c0) / (per_s * (t1 - t0))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def rounds(
    rate: float, warmup: float, seconds: float, repeat: int, gather_ms: float | None = None
) -> tuple[list[float], list[float]]:
    """CPU seconds per frame of ``hyperframes record`` and of the plain peer, per round
    (``gather_ms``: the source's, else record's default)."""
    gather = "" if gather_ms is None else f"gather_ms = {gather_ms}\n"
    ours: list[float] = []
    peer: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            port = free_port()
            config = Path(tmp) / "imu.toml"
            config.write_text(
                "[[sources]]\n"
                'type = "timeseries_udp"\nname = "imu"\nkind = "imu"\n'
                f'port = {port}\nclock = "online"\n{gather}'
            )
            out = Path(tmp) / f"r{i}.hfr"
            record = [sys.executable, "-m", "hyperframes", "record", str(config), "-o", str(out)]
            ours.append(measure(record, port, rate, warmup, seconds))
            port = free_port()
            plain = [sys.executable, "-c", PEER, str(port), str(Path(tmp) / f"p{i}.mcap")]
            peer.append(measure(plain, port, rate, warmup, seconds))
    return ours, peer


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` rows: one 3 s round at 1 kHz."""
    ours, peer = rounds(1000.0, 1.5, 3.0, 1)
    return [
        {
            "measure": "live record, 1 kHz UDP IMU (CPU per frame)",
            "value": f"{ours[0] * 1e6:.0f} us",
            "ratio": f"{ours[0] / peer[0]:.2f}x plain receiver",
            "target": "<= 60 us",
            "met": ours[0] * 1e6 <= 60,
        }
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--gather-ms",
        type=float,
        default=None,
        help="the UDP source's gather (default: record's own, 50 ms; live views use 10)",
    )
    args = parser.parse_args()
    ours, peer = rounds(args.rate, args.warmup, args.seconds, args.repeat, args.gather_ms)
    best, best_peer = min(ours), min(peer)
    print(
        json.dumps(
            {
                "rate_hz": args.rate,
                "gather_ms": args.gather_ms if args.gather_ms is not None else "record's 50",
                "record_us_per_frame": round(best * 1e6, 1),
                "record_rounds_us": [round(x * 1e6, 1) for x in ours],
                "peer_us_per_frame": round(best_peer * 1e6, 1),
                "peer_rounds_us": [round(x * 1e6, 1) for x in peer],
                "record_vs_peer": round(best / best_peer, 2),
                "goal_60us": "met" if best * 1e6 <= 60 else "NOT met",
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
