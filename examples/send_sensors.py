"""Stand-in sensors on this machine, for trying live recording without hardware.

Plays a real Velodyne VLP-16 capture (``examples/data/vlp16_sweeps.pcap``) to
UDP port 2368 at its captured timing, looped, and sends an IMU as one JSON line
per sample (``t`` in the IMU's own nanoseconds, ``ax..gz``) to UDP port 5601 at
200 Hz. The camera comes from FFmpeg (see docs/recipes.md). Ctrl-C stops it.

    python examples/send_sensors.py [--seconds 3] [--lidar-port 2368] [--imu-port 5601]

``--seconds 0`` sends until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import threading
import time
from pathlib import Path

from adapters.lidar._pcap import read_udp

PCAP = Path(__file__).resolve().parent / "data" / "vlp16_sweeps.pcap"


def send_lidar(port: int, stop: threading.Event) -> int:
    packets = read_udp(PCAP, dst_port=2368)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    while not stop.is_set():
        start, first = time.monotonic_ns(), packets[0].t_capture
        for d in packets:
            delay = (start + d.t_capture - first - time.monotonic_ns()) / 1e9
            if stop.wait(delay) if delay > 0 else stop.is_set():
                break
            sock.sendto(d.payload, ("127.0.0.1", port))
            sent += 1
    sock.close()
    return sent


def send_imu(port: int, rate: float, stop: threading.Event) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start, sent = time.monotonic_ns(), 0
    while not stop.is_set():
        due = start + round(sent * 1e9 / rate)
        delay = (due - time.monotonic_ns()) / 1e9
        if delay > 0 and stop.wait(delay):
            break
        phase = (due - start) / 1e9
        sample = {"t": due - start, "ax": 0.1 * math.sin(phase), "ay": 0.0, "az": 9.81,
                  "gx": 0.0, "gy": 0.0, "gz": 0.01 * math.cos(phase)}  # fmt: skip
        sock.sendto(json.dumps(sample).encode(), ("127.0.0.1", port))
        sent += 1
    sock.close()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3, help="stop after S s (0: Ctrl-C)")
    parser.add_argument("--lidar-port", type=int, default=2368)
    parser.add_argument("--imu-port", type=int, default=5601)
    args = parser.parse_args()
    stop = threading.Event()
    counts: dict[str, int] = {}
    threads = [
        threading.Thread(target=lambda: counts.update(lidar=send_lidar(args.lidar_port, stop))),
        threading.Thread(target=lambda: counts.update(imu=send_imu(args.imu_port, 200.0, stop))),
    ]
    for t in threads:
        t.start()
    try:
        if args.seconds > 0:
            stop.wait(args.seconds)
        else:
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        for t in threads:
            t.join()
    print(f"sent {counts.get('lidar', 0)} lidar packets and {counts.get('imu', 0)} imu samples")


if __name__ == "__main__":
    main()
