"""Hours of a drive: a synthetic 8-hour recording written, closed, reopened and read.

Writes in virtual time (frame stamps made up, no waiting) a drive of
``--hours`` (default 8) with a 1 kHz IMU, a 400 Hz IMU, a 30 Hz small camera,
a 10 Hz LiDAR and a 10 Hz GNSS (1,450 frames a second: 41.8 M frames in 8 h),
with jittered sensor stamps and arrivals, through one ``Recorder`` with its
defaults, and reports:

* the write rate (frames/s of wall time) over the whole run, the first
  minute and each hour, and the writer's RSS at each hour (flat is the goal);
* probes (unless ``--no-probes``): after the first minute, at each hour and
  at the end, the recorder's CPU per frame against fresh recorders writing
  the drive's first minute, in alternate turns of 3 virtual seconds in the
  same process, so that both sides see the same load (on 2 shared cores the
  CPU time of a frame swings 10-15 % with the other jobs: the per-hour
  ratios against the first minute cannot tell that from the writer's work);
* the ``close()`` time (the footer: frame details, index, stamp index);
* on the reopened file, as subprocesses (interpreter start included, and
  timed on its own): ``hyperframes info``, ``hyperframes replay
  --start-offset S --duration 0.05 -r max`` at several S (the seek),
  ``hyperframes sync ... -o groups.parquet`` against polars reading a
  Parquet of the same stamps and joining them (``--peers``; the bench extra);
* ``hyperframes check --repair`` of the same file cut back to its last
  sealed chunk (what a killed writer leaves): time, and that every chunk and
  frame came back.

Run: PYTHONPATH=. nice .venv/bin/python benchmarks/bench_long_recording.py [--hours 8]
     [--dir /tmp] [--keep] [--peers] [--no-repair] [--no-probes]
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

from fusion import Frame
from recordings import Recorder, open_recording

MS = 1_000_000
SENSORS = {"imu": 1000, "imu2": 400, "cam": 30, "lidar": 10, "gnss": 10}
"""Sensor -> rate in Hz."""
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def second(k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Virtual second ``k``: (sensor index, t, t_arrival) of its frames, in arrival order."""
    names, ts = [], []
    for i, hz in enumerate(SENSORS.values()):
        period = 1_000_000_000 // hz
        t = k * 1_000_000_000 + np.arange(hz, dtype=np.int64) * period + i
        t += rng.integers(0, 20_000, hz)  # sensor stamp jitter, 0-20 us
        names.append(np.full(hz, i))
        ts.append(t)
    sensor, t = np.concatenate(names), np.concatenate(ts)
    arrival = t + 200_000 + rng.integers(0, 2 * MS, len(t))  # 0.2-2.2 ms transport
    order = np.argsort(arrival, kind="stable")
    return sensor[order], t[order], arrival[order]


def payloads(rng: np.random.Generator) -> list[list[Any]]:
    """A few distinct payloads per sensor, cycled (content matters little here)."""
    imu = [rng.normal(size=6).astype(np.float32) for _ in range(16)]
    cam = [rng.integers(0, 255, (24, 32, 3), np.uint8) for _ in range(8)]
    pts = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("i", "<f4")])
    lidar = [np.frombuffer(rng.bytes(pts.itemsize * 512), pts) for _ in range(8)]
    gnss = [np.array([48.1 + j * 1e-6, 11.5, 520.0]) for j in range(16)]
    return [imu, imu, cam, lidar, gnss]


class Drive:
    """The synthetic drive, second by second from its start, into one ``Recorder``."""

    def __init__(self, path: Path) -> None:
        self.rng = np.random.default_rng(7)
        self.pool = payloads(self.rng)
        self.seq = [0] * len(SENSORS)
        self.k = 0  # the next virtual second
        self.rec = Recorder(path, wall_clock=False)

    def run(self, seconds: int) -> int:
        """Write the drive's next ``seconds``; the frames written."""
        names, seq, pool, rng = list(SENSORS), self.seq, self.pool, self.rng
        write_frame = self.rec.write
        frames = 0
        for _ in range(seconds):
            sensor, t, arrival = second(self.k, rng)
            self.k += 1
            for s, ts, ta in zip(sensor.tolist(), t.tolist(), arrival.tolist(), strict=True):
                n = seq[s]
                seq[s] = n + 1
                data = pool[s][n % len(pool[s])]
                write_frame(Frame(names[s], n, ts, data, t_sensor=ts + 5 * MS, t_arrival=ta))
            frames += len(t)
        return frames

    def settle(self) -> None:
        """Wait (not spinning) until every sealed chunk is compressed and written."""
        while self.rec.statistics().pending_chunks:
            time.sleep(0.0005)


PROBE_ROUNDS, PROBE_SECONDS, PROBE_FRESH = 20, 3, 3
"""A probe: 3 fresh recorders in turn, each against the long one in 20 rounds of a turn of
3 virtual seconds each (a fresh recorder writes the drive's first minute)."""


def probe(drive: Drive, path: Path) -> dict[str, float]:
    """The long recorder's CPU per frame now against fresh recorders' over the drive's
    first minute, in alternate turns of the same process (so that both see the same
    load); also the long recorder's frames, wall and CPU time in its turns.

    Each turn is timed (``process_time``: every thread) from both recorders idle to the
    turn's chunks written; the open chunk's rest is sealed in the recorder's next turn.
    ``median``: the median over every round of the fresh turn's CPU over the long one's.
    """
    cpu = {"long": 0.0, "fresh": 0.0}
    count = {"long": 0, "fresh": 0}
    wall = 0.0
    pairs = []  # per round: fresh CPU per frame over long CPU per frame
    for _ in range(PROBE_FRESH):
        fresh = Drive(path)
        for r in range(PROBE_ROUNDS):
            turns = [("long", drive), ("fresh", fresh)]
            took = {}
            for name, d in turns if r % 2 == 0 else turns[::-1]:
                drive.settle()
                fresh.settle()
                w0, c0 = time.perf_counter(), time.process_time()
                n = d.run(PROBE_SECONDS)
                d.settle()
                took[name] = time.process_time() - c0
                cpu[name] += took[name]
                count[name] += n
                if name == "long":
                    wall += time.perf_counter() - w0
            pairs.append(took["fresh"] / max(1e-9, took["long"]))
        fresh.rec.close()
        path.unlink()
    return {
        "long_us": cpu["long"] / count["long"] * 1e6,
        "fresh_us": cpu["fresh"] / count["fresh"] * 1e6,
        "median": float(np.median(pairs)),
        "frames": count["long"],
        "wall": wall,
        "cpu": cpu["long"],
    }


def write(path: Path, hours: float, *, probes: bool = False) -> dict[str, Any]:
    """Write the drive; with ``probes``, :func:`probe` after its first minute, at each hour
    and for its last 3 minutes (the fresh recorders' wall and CPU time are left out of the
    marks; the long recorder's turns are the drive's own seconds and stay in)."""
    drive = Drive(path)
    seconds = max(1, round(hours * 3600))
    last = seconds - PROBE_FRESH * PROBE_ROUNDS * PROBE_SECONDS  # the last probe ends the drive
    at = {60, *range(3600, last, 3600), last} if probes and last > 60 else set()
    # (virtual s, wall s, frames, rss MB, CPU s of the process: every thread, load average)
    marks: list[tuple[int, float, int, float, float, float]] = []
    # (virtual s, load, long us/frame, fresh us/frame, median of the rounds' ratios)
    probed: list[tuple[int, float, float, float, float]] = []
    frames = 0
    aside = [0.0, 0.0]  # wall and CPU of the probes less the long recorder's turns
    start = time.perf_counter()
    cpu0 = time.process_time()

    def mark() -> None:
        marks.append(
            (
                drive.k,
                time.perf_counter() - start - aside[0],
                frames,
                rss_mb(),
                time.process_time() - cpu0 - aside[1],
                os.getloadavg()[0],
            )
        )

    while drive.k < seconds:
        frames += drive.run(1)
        if drive.k % 60 == 0 or drive.k == seconds:
            mark()
        if drive.k in at:
            w0, c0, load = time.perf_counter(), time.process_time(), os.getloadavg()[0]
            got = probe(drive, path.with_name("probe.hfr"))
            frames += int(got["frames"])
            aside[0] += time.perf_counter() - w0 - got["wall"]
            aside[1] += time.process_time() - c0 - got["cpu"]
            begun = drive.k - PROBE_FRESH * PROBE_ROUNDS * PROBE_SECONDS
            probed.append((begun, load, got["long_us"], got["fresh_us"], got["median"]))
            mark()
    wrote = time.perf_counter() - start - aside[0]
    t0 = time.perf_counter()
    drive.rec.close()
    closed = time.perf_counter() - t0
    return {
        "frames": frames,
        "write_s": wrote,
        "close_s": closed,
        "marks": marks,
        "probes": probed,
    }


def run(cmd: list[str], *, check: bool = True) -> tuple[float, float, int]:
    """(wall, CPU of the child, exit status) of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if check and done.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def report_write(got: dict[str, Any], path: Path) -> None:
    marks = got["marks"]
    frames, wall = got["frames"], got["write_s"]
    print(
        f"wrote {frames:,} frames ({path.stat().st_size / 1e9:.2f} GB) in {wall:.0f} s: "
        f"{frames / wall:,.0f} frames/s"
    )
    first = marks[0]
    first_rate, first_cpu = first[2] / first[1], first[2] / max(1e-9, first[4])
    print(
        f"  first minute: {first_rate:,.0f} frames/s, {first_cpu:,.0f} frames per CPU s, "
        f"RSS {first[3]:.0f} MB"
    )
    prev = (0, 0.0, 0, 0.0, 0.0, 0.0)
    worst = [1.0, 1.0]
    for m in marks:
        if m[0] % 3600 == 0 or m is marks[-1]:
            rate = (m[2] - prev[2]) / max(1e-9, m[1] - prev[1])
            per_cpu = (m[2] - prev[2]) / max(1e-9, m[4] - prev[4])
            worst = [min(worst[0], rate / first_rate), min(worst[1], per_cpu / first_cpu)]
            print(
                f"  up to {m[0] / 3600:.2f} h: {rate:,.0f} frames/s ({rate / first_rate:.2f} of "
                f"the first minute), {per_cpu:,.0f} frames per CPU s "
                f"({per_cpu / first_cpu:.2f}), RSS {m[3]:.0f} MB, load {m[5]:.1f}"
            )
            prev = m
    print(
        f"  slowest stretch against the first minute: {worst[0]:.2f} in wall time, "
        f"{worst[1]:.2f} in CPU time"
    )
    rss = [m[3] for m in marks]
    print(
        f"  RSS over the run: min {min(rss):.0f} MB, max {max(rss):.0f} MB "
        f"(peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    for k, load, long_us, fresh_us, median in got.get("probes", ()):
        print(
            f"  probe at {k / 3600:.2f} h (load {load:.1f}), in alternate turns with a fresh "
            f"recorders over the drive's first minute: {long_us:.2f} against {fresh_us:.2f} us "
            f"CPU a frame, throughput {fresh_us / long_us:.3f} of the first minute's (median "
            f"of the {PROBE_FRESH * PROBE_ROUNDS} rounds {median:.3f})"
        )
    print(f"close(): {got['close_s']:.2f} s")


def measure_reads(path: Path, tmp: Path, hours: float, peers: bool) -> None:
    hf = [sys.executable, "-m", "hyperframes"]
    w, c, _ = run([sys.executable, "-c", "pass"])
    print(f"python -c pass (interpreter start): {w:.3f} s")
    w, c, _ = run([*hf, "--help"])
    print(f"hyperframes --help (CLI start): {w:.3f} s wall, {c:.3f} s CPU")
    t0, c0 = time.perf_counter(), time.process_time()
    with open_recording(path) as log:
        summary = log.summary()
        table = log.chunk_table_problem
    print(
        f"open_recording + summary in-process: {time.perf_counter() - t0:.3f} s wall, "
        f"{time.process_time() - c0:.3f} s CPU ({summary.count:,} frames, "
        f"{summary.chunks:,} chunks; chunk table problem: {table})"
    )
    with open_recording(path) as log:
        log.frame_details()
        problem = log.frame_details_problem, log.stamp_index() is None and log.stamp_index_problem
        missing = [n for n, s in (log.sensor_summaries() or {}).items() if isinstance(s, str)]
    print(f"details/stamp index problems: {problem}; sensors without a summary: {missing}")
    for _ in range(2):
        w, c, _ = run([*hf, "info", str(path)])
        print(f"hyperframes info: {w:.3f} s wall, {c:.3f} s CPU")
    span = max(1, round(hours * 3600))
    for at in (0.0, span * 0.37, span * 0.5, span - 2.0):
        cmd = [*hf, "replay", str(path), "--start-offset", f"{at:.1f}", "--duration", "0.05"]
        w, c, _ = run([*cmd, "-r", "max", "-q"])
        print(
            f"hyperframes replay --start-offset {at:.0f} --duration 0.05 -r max: "
            f"{w:.3f} s wall, {c:.3f} s CPU"
        )
    for at in (0.0, span * 0.61, span - 2.0):
        t0, c0 = time.perf_counter(), time.process_time()
        with open_recording(path) as log:
            start = int(at * 1e9)
            first = next(iter(log.frames(start=start, end=start + MS)))
        print(
            f"in-process open + seek to {at:.0f} s and first frame: "
            f"{time.perf_counter() - t0:.3f} s wall, {time.process_time() - c0:.3f} s CPU "
            f"({first.sensor} seq {first.seq})"
        )
    out = tmp / "groups.parquet"
    sync = [
        *hf,
        "sync",
        str(path),
        "--policy",
        "nearest",
        "--reference",
        "lidar",
        "--sensors",
        "lidar",
        "cam",
        "gnss",
        "--tolerance",
        "20ms",
        "--tolerance",
        "gnss=60ms",
        "-q",
        "-o",
        str(out),
    ]
    w, c, _ = run(sync)
    print(f"hyperframes sync lidar+cam+gnss -o groups.parquet: {w:.3f} s wall, {c:.3f} s CPU")
    if peers:
        peer_sync(path, tmp)


def peer_sync(path: Path, tmp: Path) -> None:
    """polars reading a Parquet of the same stamps and joining them, in-process."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fusion import Nearest
    from recordings._offline_sync import sync_recording
    from recordings.hfr._stamps import read_stamps

    names = ["lidar", "cam", "gnss"]
    tol = {"cam": 20 * MS, "gnss": 60 * MS}
    with open_recording(path) as log:
        stamps = {s: st.t for s, st in read_stamps(log, names).items()}
    for s, col in stamps.items():
        pq.write_table(pa.table({"t": col, s: np.arange(len(col))}), tmp / f"{s}.parquet")
    policy = Nearest("lidar", names, tol)

    def ours() -> int:
        with sync_recording(path, policy) as g:
            return len(g)

    def polars() -> int:
        frames = {s: pl.read_parquet(tmp / f"{s}.parquet") for s in names}
        out = frames["lidar"]
        for s, t in tol.items():
            out = out.join_asof(frames[s], on="t", strategy="nearest", tolerance=t)
        return len(out.drop_nulls())

    best = {"hyperframes": float("inf"), "polars": float("inf")}
    cpu = {"hyperframes": float("inf"), "polars": float("inf")}
    counts = {}
    load = os.getloadavg()[0]
    for _ in range(9):  # interleaved
        for name, fn in (("hyperframes", ours), ("polars", polars)):
            t0, c0 = time.perf_counter(), time.process_time()
            counts[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    print(
        f"grouping lidar+cam+gnss in-process (best of 9, interleaved, load {load:.1f}-"
        f"{os.getloadavg()[0]:.1f}): hyperframes (open "
        f"included) {best['hyperframes'] * 1e3:.0f} ms wall / {cpu['hyperframes'] * 1e3:.0f} ms "
        f"CPU, polars read_parquet + join_asof {best['polars'] * 1e3:.0f} ms wall / "
        f"{cpu['polars'] * 1e3:.0f} ms CPU (polars threads: CPU over wall); ratio "
        f"{best['polars'] / best['hyperframes']:.2f}x wall (groups {counts})"
    )


def measure_repair(path: Path, tmp: Path) -> None:
    """Cut the file back to its last chunk (no footer: a killed writer) and repair it."""
    with open_recording(path) as log:
        chunks, frames = len(log.chunks), log.summary().count
        last = log.chunks[-1]
        end = last.offset + last.record_size if hasattr(last, "record_size") else None
    if end is None:
        from recordings.hfr._format import PRELUDE

        fd = os.open(path, os.O_RDONLY)
        try:
            _, _, meta_len, payload_len, _, _ = PRELUDE.unpack(
                os.pread(fd, PRELUDE.size, last.offset)
            )
        finally:
            os.close(fd)
        end = last.offset + PRELUDE.size + meta_len + payload_len
    os.truncate(path, end)
    fixed = tmp / "fixed.hfr"
    w, c, rc = run(
        [
            sys.executable,
            "-m",
            "hyperframes",
            "check",
            str(path),
            "--repair",
            "-o",
            str(fixed),
            "-q",
        ],
        check=False,
    )
    with open_recording(fixed) as log:
        got_chunks, got = len(log.chunks), log.summary().count
    print(
        f"check --repair of the unclosed file ({end / 1e9:.2f} GB, no footer): {w:.1f} s wall, "
        f"{c:.1f} s CPU, rc {rc}; {got:,} of {frames:,} frames back "
        f"({got_chunks:,} chunks rewritten from {chunks:,})"
    )


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: two minutes of the drive written, closed and reopened."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "drive.hfr"
        got = write(path, 2 / 60)
        wall, cpu, _ = run([sys.executable, "-m", "hyperframes", "info", str(path)])
    rate = got["frames"] / got["write_s"]
    return [
        {
            "measure": "2 min of the 8-hour drive's sensors: write, close, info",
            "value": f"{rate / 1e3:.0f} k frames/s",
            "ratio": f"close {got['close_s']:.2f} s, info {wall:.2f} s ({cpu:.2f} s CPU)",
            "target": "closes; info under 1 s",
            "met": wall < 1.0,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hours", type=float, default=8.0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the recording (printed)")
    parser.add_argument("--peers", action="store_true", help="sync against polars (bench extra)")
    parser.add_argument("--no-repair", action="store_true")
    parser.add_argument(
        "--no-probes",
        action="store_true",
        help="no fresh recorder in alternate turns after the first minute and each hour",
    )
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()}, nice {os.nice(0)}")
    tmpdir = tempfile.mkdtemp(dir=args.dir, prefix="long-")
    tmp = Path(tmpdir)
    path = tmp / "drive.hfr"
    got = write(path, args.hours, probes=not args.no_probes)
    report_write(got, path)
    measure_reads(path, tmp, args.hours, args.peers)
    if not args.no_repair:
        measure_repair(path, tmp)
    print(f"load at the end {os.getloadavg()}")
    if args.keep:
        print(f"kept {tmp}")
    else:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()
