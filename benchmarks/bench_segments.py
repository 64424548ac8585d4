"""Segment parallelism: 1080p H.264 -> a per-frame numpy feature, 1, 2 and 3 processes
against the threaded pipeline (VideoSource's decoder thread + the feature in the consumer).

The clip is encoded here (libx264, 1920x1080, 30 fps, a key frame every
second). The feature is deliberately Python/numpy heavy (float conversion,
gradients, a histogram), the kind of per-frame preprocessing that holds the
GIL for a good part of its time, so threads cannot spread it over cores and
processes can. Every row checks its features equal the serial run's.

Run: .venv/bin/python benchmarks/bench_segments.py [--seconds 20] [--repeat 3] [--processes 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from rich.console import Console
from rich.table import Table

from adapters import VideoSource
from adapters.video._synth import write_video
from hyperframes.segments import SegmentStatistics, VideoJob, run_segments, run_serial


def features(image: np.ndarray) -> np.ndarray:
    """Per-frame feature of an RGB image: gray gradients' magnitude histogram and means."""
    gray = image[::2, ::2].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    gx = np.diff(gray, axis=1)[:-1]
    gy = np.diff(gray, axis=0)[:, :-1]
    mag = np.sqrt(gx * gx + gy * gy)
    hist = np.histogram(mag, bins=32, range=(0, 128))[0].astype(np.float32)
    rows = [float(r.mean()) for r in gray[::16]]  # a little plain Python per frame
    return np.concatenate([hist, np.asarray(rows, np.float32)])


def make_clip(path: Path, seconds: int) -> None:
    write_video(
        path,
        [i * 1000 // 30 for i in range(seconds * 30)],
        size=(1920, 1080),
        gop=30,
        options={"preset": "veryfast"},
    )


def threaded(path: Path) -> list[tuple[int, np.ndarray]]:
    async def main() -> list[tuple[int, np.ndarray]]:
        out = []
        async for frame in VideoSource(path, threads=0).frames():
            out.append((frame.t_sensor, features(frame.data)))
        return out

    return anyio.run(main)


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def measure(seconds: int, repeat: int, processes: tuple[int, ...] = (1, 2)) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        clip = Path(tmp) / "clip1080.mp4"
        make_clip(clip, seconds)
        n = seconds * 30
        job = VideoJob(str(clip), features, threads=1)
        t_thr, ref = timed(lambda: threaded(clip), repeat)
        t_ser, serial = timed(lambda: list(run_serial(job)), repeat)
        rows: dict[str, Any] = {
            "frames": n,
            "cores": os.cpu_count(),
            "threaded": n / t_thr,
            "serial": n / t_ser,
            "same_threaded": [t for t, _ in ref] == [t for t, _ in serial]
            and all(np.array_equal(a, b) for (_, a), (_, b) in zip(ref, serial, strict=True)),
        }
        cores = os.cpu_count() or 1
        for procs in processes:
            stats = SegmentStatistics()
            # The cores not used by processes go to each one's decoder threads.
            each = VideoJob(
                str(clip), features, threads=max(1, cores // procs), keyframes=job.keyframes
            )
            t_par, got = timed(
                lambda p=procs, s=stats, j=each: list(
                    run_segments(j, processes=p, target_s=2.0, stats=s)
                ),
                repeat,
            )
            rows[f"p{procs}"] = n / t_par
            rows[f"p{procs}_same"] = [t for t, _ in got] == [t for t, _ in serial] and all(
                np.array_equal(a, b) for (_, a), (_, b) in zip(got, serial, strict=True)
            )
            rows[f"p{procs}_segments"] = stats.planned
    return rows


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` rows; runs this script in a process of its own (its feature
    function must be importable by the pool's spawned processes)."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--seconds",
            "4",
            "--repeat",
            "1",
            "--json",
            "--processes",
            "1",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    r = json.loads(done.stdout)
    return [
        {
            "measure": f"1080p H.264 -> feature, {p} process(es)",
            "value": f"{r[f'p{p}']:.1f} frames/s",
            "ratio": f"{r[f'p{p}'] / r['threaded']:.2f}x threaded pipeline",
            "target": "reported, same features",
            "met": r[f"p{p}_same"],
        }
        for p in (1, 2)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=20, help="length of the 1080p clip")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1, 2, 3], help="pool sizes to measure"
    )
    args = parser.parse_args()
    r = measure(args.seconds, args.repeat, tuple(args.processes))
    if args.json:
        print(json.dumps(r))
        return
    table = Table(
        title=f"1080p H.264 -> per-frame feature ({r['frames']} frames, {r['cores']} cores)"
    )
    for col in ("run", "frames/s", "vs threaded pipeline", "segments", "same features"):
        table.add_column(col, justify="left" if col == "run" else "right")
    table.add_row(
        "threaded pipeline (VideoSource)",
        f"{r['threaded']:.1f}",
        "1.00x",
        "",
        str(r["same_threaded"]),
    )
    table.add_row(
        "serial, one process", f"{r['serial']:.1f}", f"{r['serial'] / r['threaded']:.2f}x", "", ""
    )
    for p in args.processes:
        table.add_row(
            f"segments, {p} process(es)",
            f"{r[f'p{p}']:.1f}",
            f"{r[f'p{p}'] / r['threaded']:.2f}x",
            str(r[f"p{p}_segments"]),
            str(r[f"p{p}_same"]),
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
