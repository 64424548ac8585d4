"""Does ``record --serve`` cost the recording anything, even with a client that stops reading?

Four runs of ``hyperframes record --duration S`` (the built-in synthetic camera 30 Hz
64x48 RGB, LiDAR 10 Hz, IMU 200 Hz), back to back in one process tree, so all see the
same machine load:

* **no serve**: the baseline;
* **serve, no client**: the server runs, nobody subscribes (frames are not encoded);
* **serve, reading client**: a WebSocket client subscribes to every channel and reads;
* **serve, stalled client**: a client subscribes to every channel and never reads
  (``max_queue=1``: it stops reading the socket), so the kernel buffers and then its
  outbox fill (the live view's relay drops its oldest messages and counts them).

Reported per run: frames recorded and their rate against the nominal rate (a slowed
pipeline records fewer frames or drops them: ``lost`` is the recording's ledger, hub
overflow included), the live view's own drops (encoder behind; messages dropped for a
slow client), messages the reading client got, and
the record process's CPU time (user + system, all threads; ``RUSAGE_CHILDREN``).

    PYTHONPATH=$PWD python benchmarks/bench_live_view.py [--duration 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recordings import open_recording  # noqa: E402
from tests.interop.foxglove_client import LiveClient, connect  # noqa: E402

RATES = {"cam": 30, "lidar": 10, "imu": 200}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _client(url: str, proc: subprocess.Popen[bytes], mode: str) -> int:
    deadline = time.monotonic() + 60
    while True:
        try:
            ws = await connect(url, **({"max_queue": 1} if mode == "stalled" else {}))
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                return 0
            await asyncio.sleep(0.1)
    client = LiveClient(ws)
    await client.wait_topics({"/cam", "/lidar", "/imu"})
    await client.subscribe(set(client.topics()))
    got = 0
    try:
        while proc.poll() is None:
            if mode == "stalled":
                await asyncio.sleep(0.1)
                continue
            try:
                if await asyncio.wait_for(client.receive(), 1) is not None:
                    got += 1
            except TimeoutError:
                continue
    except Exception:  # the server went away with the process
        pass
    return got


def run(mode: str, duration: float, tmp: Path) -> dict[str, object]:
    out = tmp / f"{mode}.hfr"
    port = _port()
    args = [sys.executable, "-m", "hyperframes", "record", "--duration", str(duration)]
    args += ["-o", str(out), "-q"]
    if mode != "no serve":
        args += ["--serve", f"127.0.0.1:{port}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(args, cwd=tmp, env=env, stdout=subprocess.PIPE)
    got = 0
    if mode in ("reading", "stalled"):
        got = asyncio.run(_client(f"ws://127.0.0.1:{port}", proc, mode))
    stdout = proc.communicate()[0].decode()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    with open_recording(out) as log:
        summary = log.summary()
    rates = {}
    for name, nominal in RATES.items():
        s = summary.sensors[name]
        span = ((s.t_end or 0) - (s.t_start or 0)) / 1e9
        rates[name] = s.count / (nominal * span) if span > 0 else 0.0
    lost = sum(ledger.lost_total for ledger in summary.ledgers.values())
    dropped = re.search(r"(\d+) dropped \(encoder behind\)", stdout)
    slow = re.search(r"(\d+) messages dropped for slow clients", stdout)
    return {
        "mode": mode,
        "frames": summary.count,
        "rate_vs_nominal": min(rates.values()),
        "lost": lost,
        "live_dropped": int(dropped[1]) if dropped else 0,
        "client_dropped": int(slow[1]) if slow else 0,
        "client_messages": got,
        "cpu_s": cpu,
        "rc": proc.returncode,
    }


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` rows: 3 s with no server against 3 s with a stalled client."""
    with tempfile.TemporaryDirectory() as tmp:
        plain = run("no serve", 3.0, Path(tmp))
        stalled = run("stalled", 3.0, Path(tmp))
    ratio = float(stalled["rate_vs_nominal"]) / max(float(plain["rate_vs_nominal"]), 1e-9)  # type: ignore[arg-type]
    return [
        {
            "measure": "record --serve, a stalled client (rate / nominal)",
            "value": f"{float(stalled['rate_vs_nominal']):.3f}",  # type: ignore[arg-type]
            "ratio": f"{ratio:.2f}x no --serve",
            "target": ">= 0.99x, 0 lost",
            "met": ratio >= 0.99 and stalled["lost"] == 0,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=8.0)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            run(mode, args.duration, Path(tmp))
            for mode in ("no serve", "no client", "reading", "stalled")
        ]
    print(
        f"{'run':<12} {'frames':>7} {'min rate/nominal':>17} {'lost':>5} {'live dropped':>13} "
        f"{'slow dropped':>13} {'client msgs':>12} {'cpu s':>7} {'rc':>3}"
    )
    for r in rows:
        print(
            f"{r['mode']!s:<12} {r['frames']:>7} {r['rate_vs_nominal']:>17.3f} {r['lost']:>5} "
            f"{r['live_dropped']:>13} {r['client_dropped']:>13} {r['client_messages']:>12} "
            f"{r['cpu_s']:>7.2f} {r['rc']:>3}"
        )


if __name__ == "__main__":
    main()
