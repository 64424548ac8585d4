"""Pipeline end to end: sources -> hub -> stages -> workers -> sinks and recorder."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np

from adapters import SensorTiming, SyntheticCamera, SyntheticImu, SyntheticLidar
from adapters.lidar import VoxelDownsample
from fusion import (
    BatchWorker,
    FrameGroup,
    Nearest,
    Pipeline,
    SensorStage,
    VirtualClock,
    WorkerError,
)
from fusion.workers._models import FAIL_MARKER, bev_occupancy, failing_model
from recordings import Recorder, Replay, open_recording

MS = 1_000_000


def sensors(seconds: float, *, gps_silent_after: float | None = None) -> list:
    out = [
        SyntheticLidar(duration_s=seconds, points=512, seed=1),
        SyntheticCamera(
            duration_s=seconds,
            width=16,
            height=12,
            seed=2,
            timing=SensorTiming(delay_ns=5 * MS, jitter_mean_ns=2 * MS),
        ),
        SyntheticImu(duration_s=seconds, seed=3),
    ]
    if gps_silent_after is not None:
        out.append(SyntheticImu("gps", rate_hz=10, duration_s=gps_silent_after, optional=True))
    return out


def policy(optional_gps: bool) -> Nearest:
    names = ["lidar", "cam", "imu"] + (["gps"] if optional_gps else [])
    return Nearest(
        "lidar",
        names,
        tolerance=20 * MS,
        optional=["gps"] if optional_gps else (),
        windows={"imu": (50 * MS, 49 * MS)},
    )


def cam_brightness(groups: list[FrameGroup]) -> np.ndarray:
    """Mean brightness per image as the model input; every 7th sweep is poisoned."""
    rows = []
    for g in groups:
        value = float(g.frames["cam"].data.mean())  # type: ignore[union-attr]
        if g.frames["lidar"].seq % 7 == 3:  # type: ignore[union-attr]
            value = FAIL_MARKER
        rows.append([value, 0.0, 0.0, 0.0])
    return np.asarray(rows, np.float32)


def lidar_points(groups: list[FrameGroup]) -> np.ndarray:
    batch = np.zeros((len(groups), 512, 3), np.float32)
    for i, g in enumerate(groups):
        pts = g.frames["lidar"].data  # type: ignore[union-attr]
        n = min(512, len(pts))
        batch[i, :n] = np.stack([pts["x"][:n], pts["y"][:n], pts["z"][:n]], axis=1)
    return batch


def workers() -> dict[str, BatchWorker]:
    return {
        "brightness": BatchWorker(
            failing_model(4),
            preprocess=cam_brightness,
            postprocess=lambda items, out: [float(r[0]) for r in out[0]],
            max_batch=4,
            max_delay=5 * MS,
        ),
        "occupancy": BatchWorker(
            bev_occupancy(grid=16, extent=12.0, points=512),
            preprocess=lidar_points,
            postprocess=lambda items, out: [float(o.sum()) for o in out[0]],
            max_batch=4,
            max_delay=5 * MS,
        ),
    }


class TestPipeline:
    async def test_whole_path_isolates_model_errors_and_survives_a_silent_sensor(
        self, tmp_path: Path
    ) -> None:
        clock = VirtualClock()
        seen: list[FrameGroup] = []
        recorder = Recorder(tmp_path / "run.hfr")
        pipeline = Pipeline(
            sensors(3, gps_silent_after=1.0),
            policy(optional_gps=True),
            max_latency=300 * MS,
            stages=[SensorStage("lidar", VoxelDownsample(0.5))],
            workers=workers(),
            sinks=[seen.append],
            recorder=recorder,
            clock=clock,
        )
        with anyio.fail_after(30):
            async with clock.autojump():
                stats = await pipeline.run()
        assert [g.frames["lidar"].seq for g in seen] == list(range(30))  # type: ignore[union-attr]
        failed = [
            g.frames["lidar"].seq
            for g in seen  # type: ignore[union-attr]
            if isinstance(g.results["brightness"], WorkerError)
        ]
        assert failed == [s for s in range(30) if s % 7 == 3]
        for g in seen:
            err = g.results["brightness"]
            if isinstance(err, WorkerError):
                assert err.sensor == "lidar"
                assert err.seq == g.frames["lidar"].seq  # type: ignore[union-attr]
            assert g.results["occupancy"] > 0
            assert len(g.frames["lidar"].data) < 512  # type: ignore[union-attr]  # voxel stage ran
        # gps went silent after 1 s: later groups went out without it, after max_latency.
        assert sum(1 for g in seen if "gps" in g.missing) >= 18
        assert stats.groups_out == 30
        assert stats.errors == {"brightness": len(failed)}
        assert stats.hub.groups_partial >= 18
        assert stats.stages[0].groups_in == 30
        with open_recording(tmp_path / "run.hfr") as log:
            counts = {name: s.count for name, s in log.summary().sensors.items()}
        assert counts == {name: s.frames_in for name, s in stats.hub.sensors.items()}

    async def test_replaying_the_recording_through_the_same_pipeline_gives_the_same_groups(
        self, tmp_path: Path
    ) -> None:
        clock = VirtualClock()
        live = Pipeline(
            sensors(2),
            policy(False),
            max_latency=300 * MS,
            recorder=Recorder(tmp_path / "s.hfr"),
            clock=clock,
        )
        async with clock.autojump():
            original = [g.keys async for g in live]

        for _ in range(3):
            replay = Pipeline([Replay(tmp_path / "s.hfr", speed=None)], policy(False))
            assert [g.keys async for g in replay] == original
        assert len(original) == 20

    async def test_stop_drains_in_flight_frames_and_closes_the_recording(
        self, tmp_path: Path
    ) -> None:
        clock = VirtualClock()
        pipeline = Pipeline(
            sensors(600),
            policy(False),
            max_latency=300 * MS,
            recorder=Recorder(tmp_path / "stopped.hfr"),
            clock=clock,
        )
        got = 0
        async with clock.autojump(), pipeline.open() as groups:
            async for _ in groups:
                got += 1
                if got == 5:
                    pipeline.stop()
        assert 5 <= got < 50
        with open_recording(tmp_path / "stopped.hfr") as log:
            summary = log.summary()
        assert summary.indexed  # footer written
        assert summary.sensors["lidar"].count >= got
