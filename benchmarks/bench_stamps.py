"""Stamps without payloads (formats 1.4 to 1.6): sync and info on a large recording,
and grouping from a file against polars reading a Parquet of the same stamps.

Writes (and deletes) a recording of about ``--gb`` GB: a 30 Hz camera of
incompressible 1 MB frames, a 10 Hz LiDAR reference and a 200 Hz IMU, and
times, in one run, on the 1.5 file (footer stamp index) and then on the same
file cut back to what a 1.4 writer left (its STAMPS record removed: the stamps
come from the chunks' blocks):

* ``hyperframes sync FILE --policy nearest ... -o groups.parquet``,
  ``hyperframes info --quick FILE`` and, on the new file, plain ``hyperframes
  info FILE`` (drops, payloads, clock fit: from the 1.6 frame details) as
  subprocesses (what a user runs: interpreter start included), wall and CPU of
  the child;
* the same file's stamps grouped in-process (``sync_recording``, open
  included) against polars ``read_parquet`` of Parquet files holding the same
  stamps + two ``join_asof(strategy="nearest", tolerance=)``, interleaved, best
  of ``--repeat``, with a check that the groups are the same rows.

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
from typing import Any

import numpy as np

from fusion import Frame, Nearest
from recordings import Recorder, open_recording
from recordings._offline_sync import sync_recording
from recordings.hfr._stamps import read_stamps

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


def strip_stamp_index(path: Path) -> None:
    """Cut ``path`` back to what a 1.4 writer left: the STAMPS record (the last one
    before the trailer) removed, the trailer kept."""
    import struct

    from recordings.hfr._format import PRELUDE, TRAILER

    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek(size - TRAILER.size)
        trailer = f.read(TRAILER.size)
        (index_offset,) = struct.unpack_from("<Q", trailer)
        f.seek(index_offset)
        _, _, meta_len, payload_len, _, _ = PRELUDE.unpack(f.read(PRELUDE.size))
        end = index_offset + PRELUDE.size + meta_len + payload_len
        f.truncate(end)
        f.seek(end)
        f.write(trailer)


def _groups(path: Path, policy: Nearest) -> int:
    with sync_recording(path, policy) as g:
        return len(g)


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: stamps of a ~60 MB file from the stamp index (1.5)
    vs from the payloads."""
    policy = Nearest("lidar", ["lidar", "cam", "imu"], TOL)
    with tempfile.TemporaryDirectory() as tmp:
        fast, slow = Path(tmp) / "index.hfr", Path(tmp) / "payloads.hfr"
        write(fast, 0.06)
        write(slow, 0.06, stamp_blocks=False)
        times = {}
        for name, path in (("index", fast), ("payloads", slow)):
            _, wall, _ = best(lambda p=path: _groups(p, policy), 3)
            times[name] = wall
    ratio = times["payloads"] / times["index"]
    return [
        {
            "measure": "sync_recording on a 60 MB file (format 1.5 stamp index)",
            "value": f"{times['index'] * 1e3:.1f} ms",
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
    parser.add_argument(
        "--files",
        nargs=2,
        type=Path,
        metavar=("NEW", "OLD"),
        help="measure these (a 1.5 and a 1.4 file of write()'s recording) instead of writing one",
    )
    args = parser.parse_args()
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        if args.files:
            path, old = args.files
            with open_recording(path) as log:
                stamps = {s: st.t for s, st in read_stamps(log, ["lidar", "cam", "imu"]).items()}
        else:
            path = old = Path(tmp) / "big.hfr"
            t0 = time.perf_counter()
            stamps = write(path, args.gb)
            print(f"wrote {path.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
        parquet = Path(tmp) / "stamps.parquet"
        for s, col in stamps.items():
            pq.write_table(
                pa.table({"t": col, s: np.arange(len(col))}), parquet.with_suffix(f".{s}.parquet")
            )
        for label, file in (
            ("1.6 (stamp index, frame details)", path),
            ("1.4 (stamp blocks)", old),
        ):
            if file == path == old and label.startswith("1.4"):
                strip_stamp_index(file)
            with open_recording(file) as log:
                print(f"-- {label}: {file.stat().st_size / 1e9:.2f} GB, {len(log.chunks)} chunks")
            measure(
                file, Path(tmp), stamps, parquet, args.repeat, pl, full_info=label.startswith("1.6")
            )
        os.sync()


def measure(
    path: Path,
    tmp: Path,
    stamps: dict[str, np.ndarray],
    parquet: Path,
    repeat: int,
    pl: Any,
    *,
    full_info: bool = True,
) -> None:
    py = sys.executable
    env_cmd = [py, "-m", "hyperframes"]
    sync_cmd = [*env_cmd, "sync", str(path), "--policy", "nearest", "--reference", "lidar"]
    sync_cmd += ["--sensors", "lidar", "cam", "imu", "--tolerance", "cam=20ms"]
    sync_cmd += ["--tolerance", "imu=2ms", "--tolerance", "20ms", "-q"]
    sync_cmd += ["-o", str(tmp / "groups.parquet")]
    commands = [
        ("hyperframes sync -o groups.parquet", sync_cmd),
        ("hyperframes info --quick", [*env_cmd, "info", "--quick", str(path)]),
        ("python -c pass (interpreter start)", [py, "-c", "pass"]),
    ]
    if full_info:
        commands.insert(2, ("hyperframes info", [*env_cmd, "info", str(path)]))
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in commands}
    for _ in range(repeat):  # interleaved
        for name, cmd in commands:
            runs[name].append(run(cmd))
    for name, got in runs.items():
        w, c = min(x[0] for x in got), min(x[1] for x in got)
        print(f"{name}: {w:.3f} s wall, {c:.3f} s CPU")

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
    for _ in range(max(repeat, 7)):  # interleaved; each side is milliseconds
        for name, fn in (("hyperframes", ours), ("polars", polars)):
            out, w, c = best(fn, 1)
            results[name] = out
            old = times.get(name, (float("inf"), float("inf")))
            times[name] = (min(old[0], w), min(old[1], c))
    same = all(
        np.array_equal(a, b) for a, b in zip(results["hyperframes"], results["polars"], strict=True)
    )
    for name, (w, c) in times.items():
        print(
            f"grouping {n:,} stamps from a file, {name}: {n / w / 1e6:.2f} M frames/s "
            f"({w * 1e3:.2f} ms, CPU {c * 1e3:.2f} ms)"
        )
    h, p = times["hyperframes"], times["polars"]
    print(f"ratio vs polars: {p[0] / h[0]:.2f}x wall, {p[1] / h[1]:.2f}x CPU; same rows: {same}")


if __name__ == "__main__":
    main()
