"""Fleet throughput: recordings per minute on local Ray (1 and 2 actors) vs the plain loop.

All in one run, on recordings generated here (synthetic camera 128x96 at
30 Hz, LiDAR 4096 points at 10 Hz, IMU at 200 Hz, ``--seconds`` each), with
a run file of ``nearest`` sync (LiDAR reference, IMU window) and two models,
``sobel_edges`` on the camera and ``bev_occupancy`` on the LiDAR:

(a) plain loop: :func:`hyperframes.fleet.run_local`, each recording through
    the one-machine pipeline (replay -> hub -> workers), one after another;
(b) Ray, 1 inference actor; (c) Ray, 2 inference actors. Ray starts once
    (``--cpus`` CPUs, default 2) before (b); its start-up is reported apart.
    Each Ray run includes its actors' start-up and model loading.

Every run writes the same results files; the table reports recordings per
minute and the ratio to (a) measured in the same run.

    .venv/bin/python benchmarks/bench_fleet.py [--recordings 8] [--seconds 4] [--cpus 2]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from adapters import SensorTiming, SyntheticCamera, SyntheticImu, SyntheticLidar
from fusion._frames import Frame
from hyperframes.fleet import run_fleet, run_local
from hyperframes.fleet._config import FleetConfig, validate_fleet_config
from recordings import Recorder

MS = 1_000_000


def make_recording(path: Path, seconds: float, seed: int) -> None:
    sources = [
        SyntheticLidar(duration_s=seconds, points=4096, seed=seed, realtime=False),
        SyntheticCamera(
            duration_s=seconds,
            width=128,
            height=96,
            seed=seed + 1,
            realtime=False,
            timing=SensorTiming(delay_ns=5 * MS, jitter_mean_ns=2 * MS),
        ),
        SyntheticImu(duration_s=seconds, seed=seed + 2, realtime=False),
    ]

    async def collect() -> list[Frame]:
        return [f for s in sources async for f in s.frames()]

    frames = sorted(anyio.run(collect), key=lambda f: (f.t_arrival, f.sensor))
    with Recorder(path, sensors=[s.spec for s in sources]) as rec:
        for frame in frames:
            rec.write(frame)


def run_file(inputs: Path, output: Path, actors: int) -> FleetConfig:
    return validate_fleet_config(
        {
            "fleet": {
                "recordings": [str(inputs / "*.hfr")],
                "output": str(output),
                "actors": actors,
                "overwrite": True,
            },
            "sync": {
                "policy": "nearest",
                "reference": "lidar",
                "tolerance_ms": 20,
                "windows_ms": {"imu": [50, 49]},
            },
            "workers": [
                {
                    "name": "edges",
                    "model": "builtin:sobel_edges",
                    "input": "cam",
                    "preprocess": "image",
                    "height": 96,
                    "width": 128,
                },
                {
                    "name": "occupancy",
                    "model": "builtin:bev_occupancy",
                    "input": "lidar",
                    "preprocess": "points",
                    "points": 4096,
                },
            ],
        }
    )


def measure(
    recordings: int, seconds: float, cpus: int
) -> tuple[list[tuple[str, float]], float, int]:
    """Seconds for the plain loop and Ray with 1 and 2 actors; Ray start-up; input bytes."""
    import ray

    work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    try:
        inputs = work / "in"
        inputs.mkdir()
        for i in range(recordings):
            make_recording(inputs / f"drive-{i:03d}.hfr", seconds, 100 + 10 * i)
        size = sum(p.stat().st_size for p in inputs.iterdir())
        rows: list[tuple[str, float]] = []

        started = time.perf_counter()
        report = run_local(run_file(inputs, work / "local", 1))
        assert report.count("written") == recordings, report
        rows.append(("plain local loop", time.perf_counter() - started))

        started = time.perf_counter()
        ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        ray_start = time.perf_counter() - started
        try:
            for actors in (1, 2):
                started = time.perf_counter()
                report = run_fleet(run_file(inputs, work / f"ray{actors}", actors), progress=False)
                assert report.count("written") == recordings, report
                assert report.plan is not None
                elapsed = time.perf_counter() - started
                label = f"Ray, {actors} actor(s) x {report.plan.cpus_per_actor:g} CPU"
                rows.append((label, elapsed))
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows, ray_start, size


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench`` rows: 4 recordings x 2 s (Ray on one machine only adds overhead)."""
    rows, _, _ = measure(4, 2.0, 2)
    base = rows[0][1]
    return [
        {
            "measure": f"{name} (recordings/min)",
            "value": f"{4 / elapsed * 60:.1f}",
            "ratio": f"{base / elapsed:.2f}x plain loop",
            "target": "reported (scales with nodes)",
            "met": None,
        }
        for name, elapsed in rows
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recordings", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        print(
            "bench_fleet needs Ray: pip install '.[ray]' in the hyperframes clone", file=sys.stderr
        )
        return 1
    rows, ray_start, size = measure(args.recordings, args.seconds, args.cpus)
    base = rows[0][1]
    table = Table(
        title=(
            f"{args.recordings} recordings x {args.seconds:g} s ({size / 1e6:.1f} MB), "
            f"{args.cpus}-CPU local Ray, {os.cpu_count()} cores visible"
        )
    )
    for col in ("run", "seconds", "recordings / min", "vs plain loop"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for name, elapsed in rows:
        table.add_row(
            name,
            f"{elapsed:.2f}",
            f"{args.recordings / elapsed * 60:.1f}",
            f"{base / elapsed:.2f}x",
        )
    Console().print(table)
    Console().print(f"Ray start-up (once, not in the rows): {ray_start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
