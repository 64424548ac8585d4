"""Recordings, run files and the one-machine baseline shared by the fleet tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import numpy as np

from adapters import SensorTiming, SyntheticCamera, SyntheticImu, SyntheticLidar
from fusion import VirtualClock, use_clock
from fusion._frames import Frame
from hyperframes.config import build_pipeline, validate_config
from hyperframes.fleet._config import FleetConfig, validate_fleet_config
from hyperframes.fleet._results import ResultGroup
from recordings import Recorder

MS = 1_000_000

SYNC = {
    "policy": "nearest",
    "reference": "lidar",
    "tolerance_ms": 20,
    "windows_ms": {"imu": [50, 49]},
}
WORKERS: list[dict[str, Any]] = [
    {
        "name": "edges",
        "model": "builtin:sobel_edges",
        "input": "cam",
        "preprocess": "image",
        "height": 12,
        "width": 16,
    },
    {
        "name": "occupancy",
        "model": "builtin:bev_occupancy",
        "input": "lidar",
        "preprocess": "points",
        "points": 256,
    },
]


def make_recording(path: Path, seconds: float, seed: int) -> Path:
    """A camera + LiDAR + IMU session with jittered arrivals, in arrival order."""
    sources = [
        SyntheticLidar(duration_s=seconds, points=256, seed=seed, realtime=False),
        SyntheticCamera(
            duration_s=seconds,
            width=16,
            height=12,
            seed=seed + 1,
            realtime=False,
            timing=SensorTiming(delay_ns=5 * MS, jitter_mean_ns=2 * MS),
        ),
        SyntheticImu(duration_s=seconds, seed=seed + 2, realtime=False),
    ]

    async def collect() -> list[Frame]:
        return [f for s in sources async for f in s.frames()]

    # One virtual instant for every source's epoch: on the real clock each source started
    # when the one before had finished, so their arrivals (the file's order, its chunks)
    # moved with the machine's load.
    with use_clock(VirtualClock()):
        frames = anyio.run(collect)
    frames.sort(key=lambda f: (f.t_arrival, f.sensor))
    # Small chunks, so a time range of a split recording reads a few of them; sealed by
    # size only (no flush timer of host time), so the same file on any machine.
    with Recorder(
        path, sensors=[s.spec for s in sources], chunk_bytes=32 * 1024, flush_interval=None
    ) as rec:
        for frame in frames:
            rec.write(frame)
    return path


def run_config(recordings: list[Any], output: Path, **fleet: Any) -> FleetConfig:
    """A run file over ``recordings`` with the shared sync and workers."""
    raw = {
        "fleet": {"recordings": [str(r) for r in recordings], "output": str(output), **fleet},
        "sync": SYNC,
        "workers": WORKERS,
    }
    return validate_fleet_config(raw)


def local_pipeline_groups(path: Path) -> list[ResultGroup]:
    """The reference: ``build_pipeline`` of the same config with a replay source, run here."""
    config = validate_config(
        {
            "pipeline": {"max_latency_ms": None},
            "sources": [{"type": "replay", "name": "drive", "path": str(path)}],
            "sync": SYNC,
            "workers": WORKERS,
        }
    )

    async def collect() -> list[ResultGroup]:
        pipeline = build_pipeline(config)
        out: list[ResultGroup] = []
        async with pipeline.open() as groups:
            async for g in groups:
                members = {
                    name: [f.seq for f in item] if isinstance(item, list) else item.seq
                    for name, item in g.frames.items()
                }
                out.append(ResultGroup(len(out), g.t, members, g.missing, dict(g.results)))
        return out

    return anyio.run(collect)


def assert_same_groups(got: list[ResultGroup], expected: list[ResultGroup]) -> None:
    assert [g.index for g in got] == list(range(len(got)))
    assert [(g.t, dict(g.members), g.missing) for g in got] == [
        (g.t, dict(g.members), g.missing) for g in expected
    ]
    for a, b in zip(got, expected, strict=True):
        assert a.results.keys() == b.results.keys()
        for name in a.results:
            np.testing.assert_array_equal(a.results[name], b.results[name])


def write_run_file(path: Path, recordings: list[Path], output: Path) -> Path:
    """The shared run config as a RUN.toml."""
    lines = [
        "[fleet]",
        f"recordings = {[str(r) for r in recordings]!r}".replace("'", '"'),
        f'output = "{output}"',
        "",
        "[sync]",
        'policy = "nearest"',
        'reference = "lidar"',
        "tolerance_ms = 20",
        "windows_ms = { imu = [50, 49] }",
    ]
    for worker in WORKERS:
        lines += ["", "[[workers]]"]
        for key, value in worker.items():
            lines.append(f"{key} = {value!r}".replace("'", '"'))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
