"""Benchmark: the reader's cost at a git revision against the working tree.

For a change of the read side that must not make it slower: the same files
are read whole (``open_recording(...).frames()``, default readahead) by both
trees, each round in fresh interpreters, the trees alternating round by round
so a load burst on a shared machine does not land on one only. Reported per
file and tree: process CPU time (every thread: the caller and the readahead
decoders) and wall time of the read, min and median over the rounds (each
round the best of 3 reads), with the load average seen; and the per-chunk cost
of ``raw_chunk`` and ``decode_chunk`` with no readahead (the caller's CPU per
chunk, best of 15 passes over the many-chunk file).

Files, written once by the working tree (the format did not change):
``large`` (300 240x320 RGB frames, 100 LiDAR sweeps of 20,000 x/y/z/i float32,
2,100 IMU rows), ``imu`` (200,000 rows of 6 float64: columns), ``msgpack``
(30,000 dict frames with metas: msgpack records), ``tiny`` (40,000 IMU rows in
4 KiB chunks: 715 chunks, per-chunk costs dominate).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_reader_revisions.py REV [--rounds 5]

Files go to ``/dev/shm``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MS = 1_000_000
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _revisions import checkout, run_child  # noqa: E402

FILES = ("large", "imu", "msgpack", "tiny")


def write(folder: str) -> None:
    """The four files, written with the tree first on the path."""
    import numpy as np

    from fusion import Frame
    from recordings import Recorder

    rng = np.random.default_rng(0)
    with Recorder(os.path.join(folder, "large.hfr")) as rec:
        for i in range(300):
            rec.write(Frame("cam", i, i * 33 * MS, rng.integers(0, 255, (240, 320, 3), np.uint8)))
            if i % 3 == 0:
                sweep = rng.random((20_000, 4), np.float32)
                rec.write(Frame("lidar", i // 3, i * 33 * MS + 1, sweep))
            for k in range(7):
                rec.write(Frame("imu", i * 7 + k, i * 33 * MS + k * 4 * MS + 2, rng.random(6)))
    with Recorder(os.path.join(folder, "imu.hfr")) as rec:
        for i in range(200_000):
            rec.write(Frame("imu", i, i * 5 * MS, np.full(6, i, np.float64)))
    with Recorder(os.path.join(folder, "msgpack.hfr")) as rec:
        for i in range(30_000):
            rec.write(Frame("can", i, i * MS, {"id": i % 7, "b": bytes(8)}, meta={"k": i}))
    tiny = os.path.join(folder, "tiny.hfr")
    with Recorder(tiny, chunk_bytes=4096, flush_interval=None) as rec:
        for i in range(40_000):
            rec.write(Frame("imu", i, i * MS, np.full(6, i, np.float64)))


def child(tree: str, folder: str) -> None:
    """Runs in a fresh interpreter with ``tree`` first on the path; prints one JSON line."""
    sys.path.insert(0, tree)
    from recordings import open_recording

    out: dict[str, float] = {}
    for name in FILES:
        best = (1e9, 1e9)
        for _ in range(3):
            w0, c0 = time.perf_counter(), time.process_time()
            with open_recording(os.path.join(folder, f"{name}.hfr")) as log:
                n = sum(1 for _ in log.frames())
            best = min(best, (time.process_time() - c0, time.perf_counter() - w0))
        out[f"{name}_cpu"], out[f"{name}_wall"], out[f"{name}_frames"] = *best, n
    with open_recording(os.path.join(folder, "tiny.hfr"), readahead=0) as log:
        chunks = list(log.chunks)
        for what, step in (("raw", log.raw_chunk), ("decode", log.decode_chunk)):
            cpu = 1e9
            for _ in range(15):
                c0 = time.process_time()
                for c in chunks:
                    step(c)
                cpu = min(cpu, time.process_time() - c0)
            out[f"{what}_us"] = cpu / len(chunks) * 1e6
    out["chunks"] = len(chunks)
    print(json.dumps(out))


def run(tree: str, folder: str) -> dict[str, float]:
    return run_child(__file__, tree, folder)


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench`` rows: the working tree's read cost per chunk alone."""
    folder = tempfile.mkdtemp(dir="/dev/shm")
    try:
        write(folder)
        got = run(str(ROOT), folder)
    finally:
        shutil.rmtree(folder)
    return [
        {
            "measure": f"{what} of a small chunk, working tree (us CPU)",
            "value": f"{got[f'{what}_us']:.1f}",
            "ratio": "n/a (compare a revision: run the script)",
            "target": "no slower than the revision compared",
            "met": None,
        }
        for what in ("raw", "decode")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", help="the git revision to compare the working tree with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    base = checkout(args.rev)
    folder = tempfile.mkdtemp(dir="/dev/shm")
    write(folder)
    trees = {args.rev: base, "working tree": str(ROOT)}
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for i in range(args.rounds):
        order = list(trees.items()) if i % 2 == 0 else list(trees.items())[::-1]
        for name, tree in order:
            got[name].append(run(tree, folder))
    shutil.rmtree(folder)
    shutil.rmtree(base)
    rows = [r for results in got.values() for r in results]
    print(
        f"machine: {os.cpu_count()} CPUs; {args.rounds} rounds, trees alternating; "
        f"load {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}"
    )
    for file in FILES:
        for name, results in got.items():
            cpu = sorted(r[f"{file}_cpu"] for r in results)
            wall = sorted(r[f"{file}_wall"] for r in results)
            print(
                f"  {file:8} {int(results[0][f'{file}_frames']):7d} frames  {name:14} CPU min "
                f"{cpu[0] * 1e3:6.1f} median {statistics.median(cpu) * 1e3:6.1f} ms, wall min "
                f"{wall[0] * 1e3:6.1f} median {statistics.median(wall) * 1e3:6.1f} ms"
            )
    for what in ("raw", "decode"):
        for name, results in got.items():
            us = sorted(r[f"{what}_us"] for r in results)
            print(
                f"  {what + '_chunk':13} per chunk ({int(results[0]['chunks'])} chunks)  "
                f"{name:14} CPU min {us[0]:5.1f} median {statistics.median(us):5.1f} us"
            )


if __name__ == "__main__":
    main()
