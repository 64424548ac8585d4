"""Stamps without payloads (format 1.4): sync and info on a large recording, and
grouping from a file against polars reading a Parquet of the same stamps.

Writes (and deletes) a recording of about ``--gb`` GB: a 30 Hz camera of
incompressible 1 MB frames, a 10 Hz LiDAR reference and a 200 Hz IMU, and
times, in one run:

* ``hyperframes sync FILE --policy nearest ...`` and ``hyperframes info --quick FILE``
  as subprocesses (what a user runs: interpreter start included), wall and CPU;
* the same file's stamps grouped in-process (``sync_recording``) against
  polars ``read_parquet`` of a Parquet holding the same stamps + two
  ``join_asof(strategy="nearest", tolerance=)``, with a check that the groups
  are the same rows.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_stamps.py [--gb 3] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fusion import Frame, Nearest
from recordings import Recorder
from recordings.offline_sync import sync_recording

MS = 1_000_000
TOL = {"cam": 20 * MS, "imu": 2 * MS}


def write(path: Path, gb: float, *, stamp_blocks: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    seconds = max(1, int(gb * 1e9 / (30 * 1e6)))
    stamps: dict[str, np.ndarray] = {}
    for name, hz in {"lidar": 10, "cam": 30, "imu": 200}.items():
        n = seconds * hz
        t = np.arange(n, dtype=np.int64) * (1_000_000_000 // hz) + 4 * rng.integers(0, MS // 2, n)
        stamps[name] = t + 1 if name == "lidar" else t + 2 * (name == "imu")
    events = sorted((int(t), s, i) for s, col in stamps.items() for i, t in enumerate(col))
    pool = rng.integers(
        0, 255, min(64 << 20, int(gb * 1e9) + (2 << 20)), np.uint8
    )  # frames are random windows of it
    with Recorder(path, stamp_blocks=stamp_blocks) as rec:
        for t, s, i in events:
            if s == "cam":
                at = int(rng.integers(0, len(pool) - (1 << 20)))
                data: object = pool[at : at + (1 << 20)]
            elif s == "imu":
                data = np.zeros(6)
            else:
                data = np.zeros((100, 4), np.float32)
            rec.write(Frame(s, i, t, data))
    return stamps


def run(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(fn, repeat: int):  # type: ignore[no-untyped-def]
    out, wall, cpu = None, float("inf"), float("inf")
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return out, wall, cpu


def _groups(path: Path, policy: Nearest) -> int:
    with sync_recording(path, policy) as g:
        return len(g)


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: stamps of a ~60 MB file from blocks vs from payloads."""
    policy = Nearest("lidar", ["lidar", "cam", "imu"], TOL)
    with tempfile.TemporaryDirectory() as tmp:
        fast, slow = Path(tmp) / "blocks.hfr", Path(tmp) / "payloads.hfr"
        write(fast, 0.06)
        write(slow, 0.06, stamp_blocks=False)
        times = {}
        for name, path in (("blocks", fast), ("payloads", slow)):
            _, wall, _ = best(lambda p=path: _groups(p, policy), 3)
            times[name] = wall
    ratio = times["payloads"] / times["blocks"]
    return [
        {
            "measure": "sync_recording on a 60 MB file (format 1.4 stamp blocks)",
            "value": f"{times['blocks'] * 1e3:.1f} ms",
            "ratio": f"{ratio:.1f}x reading the payloads",
            "target": "faster than reading the payloads",
            "met": ratio > 1,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gb", type=float, default=3.0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "big.hfr"
        t0 = time.perf_counter()
        stamps = write(path, args.gb)
        print(f"wrote {path.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
        py = sys.executable
        env_cmd = [py, "-m", "hyperframes"]
        sync_cmd = [*env_cmd, "sync", str(path), "--policy", "nearest", "--reference", "lidar"]
        sync_cmd += ["--sensors", "lidar", "cam", "imu", "--tolerance", "cam=20ms"]
        sync_cmd += ["--tolerance", "imu=2ms", "--tolerance", "20ms", "-q"]
        sync_cmd += ["-o", str(Path(tmp) / "groups.parquet")]
        for name, cmd in (
            ("hyperframes sync -o groups.parquet", sync_cmd),
            ("hyperframes info --quick", [*env_cmd, "info", "--quick", str(path)]),
            ("python -c pass (interpreter start)", [py, "-c", "pass"]),
        ):
            walls = [run(cmd) for _ in range(args.repeat)]
            w, c = min(x[0] for x in walls), min(x[1] for x in walls)
            print(f"{name}: {w:.3f} s wall, {c:.3f} s CPU")

        parquet = Path(tmp) / "stamps.parquet"
        for s, col in stamps.items():
            pq.write_table(
                pa.table({"t": col, s: np.arange(len(col))}), parquet.with_suffix(f".{s}.parquet")
            )
        policy = Nearest("lidar", ["lidar", "cam", "imu"], TOL)

        def ours():  # type: ignore[no-untyped-def]
            with sync_recording(path, policy) as g:
                c = g.columns
                return c.t, g.stamps["cam"].seq[c.picks["cam"]], g.stamps["imu"].seq[c.picks["imu"]]

        def polars():  # type: ignore[no-untyped-def]
            frames = {s: pl.read_parquet(parquet.with_suffix(f".{s}.parquet")) for s in stamps}
            out = frames["lidar"]
            for s, tol in TOL.items():
                out = out.join_asof(frames[s], on="t", strategy="nearest", tolerance=tol)
            out = out.drop_nulls()
            return tuple(out.get_column(c).to_numpy() for c in ("t", "cam", "imu"))

        n = sum(len(c) for c in stamps.values())
        results, times = {}, {}
        for _ in range(args.repeat):
            for name, fn in (("hyperframes", ours), ("polars", polars)):
                out, w, c = best(fn, 1)
                results[name] = out
                old = times.get(name, (float("inf"), float("inf")))
                times[name] = (min(old[0], w), min(old[1], c))
        same = all(
            np.array_equal(a, b)
            for a, b in zip(results["hyperframes"], results["polars"], strict=True)
        )
        for name, (w, c) in times.items():
            print(
                f"grouping {n:,} stamps from a file, {name}: {n / w / 1e6:.2f} M frames/s ({w * 1e3:.1f} ms, CPU {c * 1e3:.1f} ms)"
            )
        h, p = times["hyperframes"], times["polars"]
        print(
            f"ratio vs polars: {p[0] / h[0]:.2f}x wall, {p[1] / h[1]:.2f}x CPU; same rows: {same}"
        )
        os.sync()


if __name__ == "__main__":
    main()
