"""Benchmark: the recorders' write cost at a git revision against the working tree.

For a change of the write side that must not make it slower: the same
sessions are written by ``Recorder`` and ``SnapshotRecorder`` of both trees,
each round in fresh interpreters, the trees alternating round by round so a
load burst on a shared machine does not land on one only. Reported per
session and tree: process CPU time (every thread: the caller, compression,
the writer) and wall time, min and median over the rounds, with the load
average seen; and the recorder's per-frame cost (``write()`` of 48-byte IMU
rows into one open chunk: the caller thread's CPU per frame, no sealing).

Sessions: ``imu`` (200,000 rows of 6 float64 at 200 Hz, the default chunking),
``camlidar`` (120 noisy 640x480 RGB frames and 40 LiDAR sweeps of 100,000
x/y/z/i float32: 175 MB), ``snap`` (the IMU rows through a 5 s
``SnapshotRecorder`` ring and one snapshot).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_recorder_revisions.py REV [--rounds 3]

Files go to ``/dev/shm``.
"""

from __future__ import annotations

import argparse
import json
import os
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


def child(tree: str, which: str) -> None:
    """Runs in a fresh interpreter with ``tree`` first on the path; prints one JSON line."""
    sys.path.insert(0, tree)
    import numpy as np

    from fusion import Frame
    from recordings import Recorder, SnapshotRecorder

    rng = np.random.default_rng(0)
    if which == "hot":
        rows = rng.normal(size=(100_000, 6))
        frames = [Frame("imu", i, i * 5 * MS, rows[i]) for i in range(len(rows))]
        path = tempfile.mktemp(dir="/dev/shm", suffix=".hfr")
        rec = Recorder(
            path, chunk_bytes=64 << 20, chunk_duration=None, flush_interval=None, wall_clock=False
        )
        c0 = time.thread_time()
        for f in frames:
            rec.write(f)
        ns = (time.thread_time() - c0) / len(frames) * 1e9
        rec.close()
        os.unlink(path)
        print(json.dumps({"ns_per_frame": ns}))
        return
    if which == "camlidar":
        cam = rng.integers(0, 255, (480, 640, 3), np.uint8)
        pts = rng.normal(size=(100_000, 4)).astype(np.float32)
        frames = []
        for i in range(120):
            frames.append(Frame("cam", i, i * 33 * MS, cam))
            if i % 3 == 0:
                frames.append(Frame("lidar", i // 3, i * 33 * MS + 1, pts))
    else:
        rows = rng.normal(size=(200_000, 6))
        frames = [Frame("imu", i, i * 5 * MS, rows[i]) for i in range(len(rows))]
    folder = tempfile.mkdtemp(dir="/dev/shm")
    path = os.path.join(folder, "r.hfr")
    w0, c0 = time.perf_counter(), time.process_time()
    if which == "snap":
        with SnapshotRecorder(path, keep=5.0, max_bytes=64 << 20) as snap:
            for f in frames:
                snap.write(f)
            snap.trigger("bench")
    else:
        with Recorder(path) as rec:
            for f in frames:
                rec.write(f)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)
    mb = sum(f.data.nbytes for f in frames) / 1e6
    print(json.dumps({"cpu": cpu, "wall": wall, "mb": mb}))


def run(tree: str, which: str) -> dict[str, float]:
    return run_child(__file__, tree, which)


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench`` rows: the working tree's write cost alone (no revision to compare)."""
    hot = run(str(ROOT), "hot")
    return [
        {
            "measure": "Recorder.write, working tree (ns/frame CPU)",
            "value": f"{hot['ns_per_frame']:.0f}",
            "ratio": "n/a (compare a revision: run the script)",
            "target": "no slower than the revision compared",
            "met": None,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", help="the git revision to compare the working tree with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    base = checkout(args.rev)
    trees = {args.rev: base, "working tree": str(ROOT)}
    got: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for which in ("imu", "camlidar", "snap", "hot"):
            for name, tree in trees.items():
                got.setdefault((which, name), []).append(run(tree, which))
    print(f"machine: {os.cpu_count()} CPUs; {args.rounds} rounds, trees alternating")
    for (which, name), rows in got.items():
        loads = f"load {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}"
        if which == "hot":
            ns = sorted(r["ns_per_frame"] for r in rows)
            print(
                f"  {'write() ns/frame':17} {name:14} min {ns[0]:6.0f} median "
                f"{statistics.median(ns):6.0f}  {loads}"
            )
            continue
        cpu = sorted(r["cpu"] for r in rows)
        wall = sorted(r["wall"] for r in rows)
        label = f"{which} ({rows[0]['mb']:.0f} MB)"
        print(
            f"  {label:17} {name:14} CPU min {cpu[0]:.3f} "
            f"median {statistics.median(cpu):.3f} s, wall min {wall[0]:.3f} "
            f"median {statistics.median(wall):.3f} s  {loads}"
        )


if __name__ == "__main__":
    main()
