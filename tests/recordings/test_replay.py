"""Replay as a Source: order, pacing on the runtime clock, selection, loop, determinism."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from adapters.synthetic import SyntheticCamera, SyntheticImu, SyntheticLidar, synthetic_timeline
from fusion._frames import Frame, FrameGroup
from fusion._hub import SyncHub
from fusion._source import Source
from fusion._timing import VirtualClock, current_clock, use_clock
from fusion.policies import ApproximateTime, Nearest
from recordings import Recorder, Replay
from recordings.pytest_plugin import HfrHelper

from .helpers import make_frames, same_frame

MS = 1_000_000


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 60 s synthetic session (small payloads) recorded in arrival order."""
    sensors = [
        SyntheticCamera(duration_s=60, width=8, height=6, realtime=False),
        SyntheticLidar(duration_s=60, points=32, realtime=False),
        SyntheticImu(duration_s=60, realtime=False),
    ]
    path = tmp_path_factory.mktemp("replay") / "session.hfr"
    with Recorder(path, sensors=[s.spec for s in sensors], chunk_bytes=256_000) as rec:
        for frame in synthetic_timeline(sensors):
            rec.write(frame)
    return path


async def emitted(replay: Replay) -> list[tuple[int, Frame]]:
    """``(clock time, frame)`` for every frame the replay yields."""
    clock = current_clock()
    return [(clock.now(), f) async for f in replay.frames()]


async def test_a_60s_session_replays_in_real_time_on_a_virtual_clock(
    hfr: HfrHelper, session: Path
) -> None:
    clock = VirtualClock(start=5_000)
    out = await hfr.run(session, emitted, speed=1.0, clock=clock)
    assert len(out) == 1800 + 600 + 12000
    first_arrival = out[0][1].t_arrival
    assert first_arrival is not None
    due = 0
    for now, frame in out:
        assert frame.t_arrival is not None
        due = max(due, 5_000 + frame.t_arrival - first_arrival)
        assert now == due  # on time, to the nanosecond
    assert clock.now() >= 59_900 * MS


@pytest.mark.parametrize("speed", [2.0, 0.5])
async def test_speed_scales_the_pacing(hfr: HfrHelper, tmp_path: Path, speed: float) -> None:
    path = hfr.record([Frame("a", i, i * 100 * MS, t_arrival=i * 100 * MS) for i in range(11)])
    out = await hfr.run(path, emitted, speed=speed)
    assert [now for now, _ in out] == [int(i * 100 * MS / speed) for i in range(11)]


async def test_speed_none_ignores_time(hfr: HfrHelper) -> None:
    path = hfr.record([Frame("a", i, i * 10**9) for i in range(50)])
    out = await hfr.run(path, emitted, speed=None)
    assert {now for now, _ in out} == {0}
    assert [f.seq for _, f in out] == list(range(50))


async def test_frames_come_back_exactly_as_recorded(hfr: HfrHelper) -> None:
    frames = make_frames(90)
    path = hfr.record(frames, chunk_bytes=5_000)
    back = await hfr.frames(path, speed=None)
    assert all(same_frame(a, b) for a, b in zip(frames, back, strict=True))


async def test_sensor_and_time_selection(hfr: HfrHelper, session: Path) -> None:
    out = await hfr.frames(session, speed=None, sensors=["lidar"], start=10 * 10**9, end=12 * 10**9)
    assert [f.seq for f in out] == list(range(100, 120))
    replay = hfr.replay(session, sensors=["lidar", "cam"])
    assert [s.name for s in replay.specs] == ["lidar", "cam"]
    assert {s.overflow for s in replay.specs} == {"block"}
    assert replay.specs[1].kind == "camera"


def test_an_unknown_sensor_is_named(hfr: HfrHelper, session: Path) -> None:
    with pytest.raises(ValueError, match=r"has no sensor 'radar'; it has 'cam', 'lidar', 'imu'"):
        Replay(session, sensors=["radar"])


async def test_loop_continues_time_and_seq(hfr: HfrHelper) -> None:
    path = hfr.record([Frame("a", i, i * 10 * MS, t_arrival=i * 10 * MS) for i in range(10)])

    async def take(replay: Replay) -> list[Frame]:
        out: list[Frame] = []
        async for f in replay.frames():
            out.append(f)
            if len(out) == 25:
                break
        return out

    out = await hfr.run(path, take, loop=True)
    assert [f.seq for f in out] == list(range(25))
    assert [f.t for f in out] == [i * 10 * MS for i in range(25)]


async def test_a_slow_consumer_loses_nothing(hfr: HfrHelper) -> None:
    path = hfr.record([Frame("a", i, i * MS, t_arrival=i * MS) for i in range(200)])

    async def slow(replay: Replay) -> list[int]:
        clock = current_clock()
        seqs = []
        async for f in replay.frames():
            await clock.sleep_until(clock.now() + 5 * MS)  # 5x slower than the data
            seqs.append(f.seq)
        return seqs

    assert await hfr.run(path, slow) == list(range(200))


async def test_damaged_chunks_are_skipped_and_counted(hfr: HfrHelper) -> None:
    path = hfr.record(make_frames(120), chunk_bytes=6_000)
    log = hfr.open(path)
    chunk = log.chunks[1]
    data = bytearray(path.read_bytes())
    data[chunk.offset + 200] ^= 0xFF
    path.write_bytes(bytes(data))

    async def run(replay: Replay) -> tuple[int, dict[str, int]]:
        n = len([f async for f in replay.frames()])
        return n, dict(replay.errors)

    n, errors = await hfr.run(path, run, speed=None)
    assert n == 120 - chunk.count
    assert errors == {"damaged": 1}


# -- determinism --------------------------------------------------------------------


class Tee(Source):
    """Passes a source's frames through, recording each one first."""

    def __init__(self, inner: Source, rec: Recorder) -> None:
        super().__init__(specs=inner.specs)
        self.inner = inner
        self.rec = rec

    async def frames(self) -> AsyncIterator[Frame]:
        async with self.inner:
            async for frame in self.inner.frames():
                await self.rec.send(frame)
                yield frame


def live_sensors() -> list[Source]:
    return [
        SyntheticLidar(duration_s=4, points=32, seed=3),
        SyntheticCamera(duration_s=4, width=8, height=6, seed=3),
        SyntheticImu(duration_s=4, seed=3),
    ]


def policy() -> Nearest:
    return Nearest(
        "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
    )


async def hub_groups(
    sources: list[Source], make_policy: type | None = None
) -> list[tuple[object, ...]]:
    hub = SyncHub(policy() if make_policy is None else make_policy(), max_latency=200 * MS)
    out: list[FrameGroup] = []
    async with hub.open(sources) as groups:
        async for g in groups:
            out.append(g)
    return [(g.t, tuple(g.keys), tuple(sorted(g.missing))) for g in out]


async def test_replaying_a_recorded_pipeline_run_gives_identical_groups(
    hfr: HfrHelper, tmp_path: Path
) -> None:
    path = tmp_path / "live.hfr"
    clock = VirtualClock()
    with use_clock(clock), anyio.fail_after(20):
        async with clock.autojump(), Recorder(path) as rec:
            live = await hub_groups([Tee(s, rec) for s in live_sensors()])
    assert len(live) == 40

    async def through_hub(replay: Replay) -> list[tuple[object, ...]]:
        return await hub_groups([replay])

    runs = [await hfr.run(path, through_hub) for _ in range(10)]
    assert len({tuple(r) for r in runs}) == 1  # one distinct group sequence
    assert runs[0] == live


async def test_approximate_time_is_deterministic_over_replays(
    hfr: HfrHelper, session: Path
) -> None:
    async def through_hub(replay: Replay) -> list[tuple[object, ...]]:
        hub = SyncHub(ApproximateTime(["cam", "lidar"], queue_size=10))
        async with hub.open([replay]) as groups:
            return [(g.t, tuple(g.keys)) async for g in groups]

    runs = [
        await hfr.run(session, through_hub, speed=4.0, sensors=["cam", "lidar"], end=20 * 10**9)
        for _ in range(3)
    ]
    assert len(runs[0]) > 150
    assert runs[0] == runs[1] == runs[2]
