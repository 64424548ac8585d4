"""Bag import throughput: BagSource against reading the same bag with rosbags alone.

Baseline: ``AnyReader.messages()`` + ``deserialize`` of every message (what any
rosbags user pays). Ours: ``BagSource.frames()`` to the end, i.e. the same
reading and deserialising plus decoding to arrays (images, structured point
arrays, IMU dicts) and building frames on the event loop. Target: within 20 %.
Bags are written in the run with rosbags: ROS 2 MCAP.

Run:  .venv/bin/python benchmarks/bench_bags.py [--seconds S] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.bags import BagSource
from tests.interop.bagdata import write_bag

CASES = {
    "camera 24x32 + lidar 500 pts + imu + gps + pose": (
        "/cam/image",
        "/lidar",
        "/imu",
        "/gps",
        "/pose",
    ),
    "imu only (100 Hz, small messages)": ("/imu",),
    "lidar only (500-point PointCloud2)": ("/lidar",),
}


def rosbags_alone(path: Path) -> int:
    from rosbags.highlevel import AnyReader

    n = 0
    with AnyReader([path]) as reader:
        for conn, _, raw in reader.messages():
            reader.deserialize(raw, conn.msgtype)
            n += 1
    return n


def bag_source(path: Path) -> int:
    async def run() -> int:
        n = 0
        source = BagSource(path)
        async with source:
            async for _ in source.frames():
                n += 1
        return n

    return anyio.run(run)


def best_of(repeat: int, fn: Callable[[], int]) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="bag length (s)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'bag':50} {'messages':>8} {'rosbags msg/s':>14} {'BagSource msg/s':>16} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, topics) in enumerate(CASES.items()):
            path = Path(tmp) / f"bag{i}"
            write_bag(path, "mcap", args.seconds, topics)
            base, n = best_of(args.repeat, lambda p=path: rosbags_alone(p))
            ours, m = best_of(args.repeat, lambda p=path: bag_source(p))
            assert m == n, (m, n)
            print(f"{name:50} {n:8} {n / base:14,.0f} {m / ours:16,.0f} {ours / base:6.2f}")
    print("ratio = BagSource time / rosbags-alone time (1.20 = 20 % slower)")


if __name__ == "__main__":
    main()
