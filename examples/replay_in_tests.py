"""Replay a recorded session in your test suite: deterministic, fast, no sleeps.

The ``hfr`` pytest fixture comes with hyperframes (a pytest plugin, nothing to
configure). ``hfr.run(path, consume)`` replays a ``.hfr`` file at its recorded
pace on a virtual clock: a 10 s session runs in a fraction of a second, and the
same file gives the same groups on every run. Copy the test below into your
suite and point it at your own recording and pipeline.

    python examples/replay_in_tests.py      # runs this file's test with pytest
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from adapters import synthetic_session
from fusion import Nearest, Pipeline, VirtualClock, use_clock
from recordings import Recorder

MS = 1_000_000


def my_pipeline(sources: list, **options) -> Pipeline:
    """The pipeline under test: your sync policy, stages and workers."""
    policy = Nearest(
        "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
    )
    return Pipeline(sources, policy, max_latency=200 * MS, **options)


@pytest.fixture
def drive(tmp_path: Path) -> Path:
    """A recording to test against (yours would live in tests/data/)."""
    path = tmp_path / "drive.hfr"
    clock = VirtualClock()

    async def record() -> None:
        with use_clock(clock):
            async with clock.autojump():
                await my_pipeline(synthetic_session(10), recorder=Recorder(path)).run()

    anyio.run(record)
    return path


async def test_every_lidar_sweep_gets_a_camera_frame_and_imu_window(hfr, drive: Path) -> None:
    async def run_pipeline(replay) -> list:
        return [group async for group in my_pipeline([replay])]

    groups = await hfr.run(drive, run_pipeline, speed=1.0)  # real-time pacing, virtual clock
    assert len(groups) == 100
    assert all(len(g.frames["imu"]) >= 10 for g in groups)
    again = await hfr.run(drive, run_pipeline, speed=1.0)
    assert [g.keys for g in again] == [g.keys for g in groups]  # deterministic


if __name__ == "__main__":
    # A fresh interpreter, as your test run would be (pytest rewrites asserts at import).
    command = [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"]
    sys.exit(subprocess.call(command))
