"""SyncHub: the async shell, driven by a virtual clock (no sleeps)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterable

import anyio
import anyio.lowlevel
import pytest

from adapters import Source, SyntheticCamera, SyntheticImu, SyntheticLidar
from fusion import (
    ExactTime,
    FixedOffset,
    Frame,
    FrameGroup,
    Nearest,
    SensorSpec,
    SyncHub,
    VirtualClock,
    use_clock,
)

MS = 1_000_000


class ListSource(Source):
    """Emits the given stamps for one sensor, ``gap`` ns of runtime clock apart."""

    def __init__(self, spec: SensorSpec, stamps: Iterable[int], *, gap: int = 0) -> None:
        super().__init__(spec)
        self.stamps = stamps
        self.gap = gap
        self.closed = False

    async def frames(self) -> AsyncIterator[Frame]:
        from fusion import current_clock

        clock = current_clock()
        for t in self.stamps:
            if self.gap:
                await clock.sleep_until(clock.now() + self.gap)
            yield self.make_frame(t, None, t_arrival=clock.now())

    async def aclose(self) -> None:
        self.closed = True
        await super().aclose()


async def collect(hub: SyncHub, sources: list[Source]) -> list[FrameGroup]:
    out: list[FrameGroup] = []
    async with hub.open(sources) as groups:
        async for g in groups:
            out.append(g)
    return out


class TestSyncHub:
    async def test_groups_three_synthetic_sensors_on_a_virtual_clock(self) -> None:
        clock = VirtualClock()
        with use_clock(clock), anyio.fail_after(5):
            async with clock.autojump():
                sources = [
                    SyntheticLidar(duration_s=3, points=64),
                    SyntheticCamera(duration_s=3, width=8, height=6),
                    SyntheticImu(duration_s=3),
                ]
                hub = SyncHub(
                    Nearest(
                        "lidar",
                        ["lidar", "cam", "imu"],
                        tolerance=20 * MS,
                        windows={"imu": (50 * MS, 49 * MS)},
                    ),
                    max_latency=200 * MS,
                )
                groups = await collect(hub, sources)
        assert [g.t for g in groups] == [i * 100 * MS for i in range(30)]
        for g in groups:
            imu = g.frames["imu"]
            assert isinstance(imu, list)
            assert len(imu) == (10 if g.t == 0 else 20)  # 200 Hz over [t - 50 ms, t + 49 ms]
        stats = hub.statistics()
        assert stats.groups_complete == 30
        assert stats.sensors["imu"].frames_in == 600
        assert clock.now() >= 2_990 * MS  # virtual time passed; the test did not sleep

    async def test_replaying_the_same_sources_twice_gives_identical_groups(self) -> None:
        def run_once() -> list[list[tuple[str, int]]]:
            async def main() -> list[list[tuple[str, int]]]:
                clock = VirtualClock()
                with use_clock(clock):
                    async with clock.autojump():
                        hub = SyncHub(
                            Nearest("lidar", ["lidar", "cam"], tolerance=20 * MS),
                            max_latency=100 * MS,
                        )
                        groups = await collect(
                            hub,
                            [
                                SyntheticLidar(duration_s=2, points=16),
                                SyntheticCamera(duration_s=2, width=4, height=4),
                            ],
                        )
                return [g.keys for g in groups]

            return anyio.run(main)

        first = await anyio.to_thread.run_sync(run_once)
        assert len(first) == 20
        for _ in range(3):
            assert await anyio.to_thread.run_sync(run_once) == first

    async def test_clock_model_sets_t_and_keeps_t_sensor(self) -> None:
        spec = SensorSpec("a", clock=FixedOffset(1_000))
        hub = SyncHub(ExactTime(["a", "b"]))
        groups = await collect(
            hub, [ListSource(spec, [0, 10]), ListSource(SensorSpec("b"), [1_000, 1_010])]
        )
        assert [(g.t, g.frames["a"].t_sensor) for g in groups] == [(1_000, 0), (1_010, 10)]  # type: ignore[union-attr]

    async def test_frame_going_backwards_is_dropped_and_counted(self) -> None:
        hub = SyncHub(ExactTime(["a", "b"]))
        groups = await collect(
            hub, [ListSource(SensorSpec("a"), [10, 5, 20]), ListSource(SensorSpec("b"), [10, 20])]
        )
        assert [g.t for g in groups] == [10, 20]
        assert hub.statistics().dropped[("a", "out_of_order")] == 1

    async def test_silent_optional_sensor_is_missing_after_max_latency(self) -> None:
        clock = VirtualClock()
        ref = ListSource(SensorSpec("ref"), [i * 100 * MS for i in range(10)], gap=100 * MS)
        cam = ListSource(SensorSpec("cam"), [i * 100 * MS + 1 for i in range(10)], gap=100 * MS)
        gps = ListSource(SensorSpec("gps", optional=True), [], gap=0)  # never speaks
        hub = SyncHub(
            Nearest("ref", ["ref", "cam", "gps"], tolerance=10 * MS, optional=["gps"]),
            max_latency=250 * MS,
            clock=clock,
        )
        received: list[tuple[int, int]] = []
        with anyio.fail_after(5):
            async with clock.autojump(), hub.open([ref, cam, gps]) as groups:
                async for g in groups:
                    received.append((g.t, clock.now()))
                    assert g.missing == frozenset({"gps"})
        assert len(received) == 10
        # Each group waited for gps for max_latency after its frames arrived, not longer.
        for t, emitted_at in received[:-1]:
            assert emitted_at - (t + 100 * MS) <= 250 * MS + 100 * MS
        stats = hub.statistics()
        assert stats.groups_partial == 10
        assert stats.groups_expired >= 7  # the last ones are resolved by the final drain

    async def test_silent_required_sensor_drops_groups_and_the_others_go_on(self) -> None:
        clock = VirtualClock()
        ref = ListSource(SensorSpec("ref"), [i * 100 * MS for i in range(10)], gap=100 * MS)
        cam = ListSource(SensorSpec("cam"), [i * 100 * MS for i in range(3)], gap=100 * MS)
        hub = SyncHub(
            Nearest("ref", ["ref", "cam"], tolerance=10 * MS), max_latency=150 * MS, clock=clock
        )
        with anyio.fail_after(5):
            async with clock.autojump():
                groups = await collect(hub, [ref, cam])
        assert [g.t for g in groups] == [0, 100 * MS, 200 * MS]
        stats = hub.statistics()
        assert stats.groups_dropped == 7
        assert stats.dropped[("ref", "incomplete")] == 7

    async def test_flooding_sensor_is_bounded_by_its_channel_policy(self) -> None:
        flood = ListSource(SensorSpec("imu", capacity=4, overflow="drop_oldest"), list(range(5000)))
        slow_consumer_hub = SyncHub(ExactTime(["imu"]), output_capacity=1)
        seen = 0
        async with slow_consumer_hub.open([flood]) as groups:
            async for _ in groups:
                seen += 1
                await anyio.lowlevel.checkpoint()
        stats = slow_consumer_hub.statistics()
        channel = stats.channels["imu->hub"]
        assert channel.high_water <= 4
        assert seen + stats.sensors["imu"].dropped.get("overflow", 0) == 5000
        assert stats.sensors["imu"].dropped["overflow"] > 0

    async def test_cancelling_the_hub_closes_sources_and_output(self) -> None:
        clock = VirtualClock()
        endless = ListSource(SensorSpec("a"), itertools.count(), gap=MS)
        hub = SyncHub(ExactTime(["a"]), clock=clock)
        async with clock.autojump(), hub.open([endless]) as groups:
            n = 0
            async for _ in groups:
                n += 1
                if n == 5:
                    break
        assert endless.closed
        with pytest.raises(anyio.ClosedResourceError):
            await hub.groups.receive()


class BurstSource(ListSource):
    """The same stamps as a :class:`ListSource`, handed over ``burst`` frames at a time."""

    def __init__(self, spec: SensorSpec, stamps: Iterable[int], *, burst: int, gap: int) -> None:
        super().__init__(spec, stamps, gap=gap)
        self.burst = burst

    async def frame_batches(self) -> AsyncIterator[list[Frame]]:
        from fusion import current_clock

        clock = current_clock()
        batch: list[Frame] = []
        for t in self.stamps:
            batch.append(self.make_frame(t, None, t_arrival=clock.now()))
            if len(batch) == self.burst:
                await clock.sleep_until(clock.now() + self.gap)
                yield batch
                batch = []
        if batch:
            yield batch


@pytest.mark.parametrize("overflow", ["block", "drop_oldest"])
async def test_bursts_make_the_groups_single_frames_make(overflow: str) -> None:
    """A source handing over bursts (a drained UDP socket) through the batch path: the
    same groups, frames, seq and counters as one frame at a time; the recorder's
    batch tap sees every frame once, in order."""

    async def run(burst: bool) -> tuple[list[tuple[int, tuple[int, ...]]], list[int], int]:
        clock = VirtualClock()
        spec = SensorSpec("imu", capacity=256, overflow=overflow)  # type: ignore[arg-type]
        stamps = [i * MS for i in range(200)]
        ref = ListSource(SensorSpec("ref"), [i * 10 * MS for i in range(20)], gap=10 * MS)
        imu: Source = ListSource(spec, stamps, gap=MS)
        if burst:
            imu = BurstSource(spec, stamps, burst=7, gap=7 * MS)
        tapped: list[int] = []

        async def tap_batch(frames: list[Frame]) -> None:
            tapped.extend(f.t for f in frames if f.sensor == "imu")
            await anyio.lowlevel.checkpoint()

        hub = SyncHub(
            Nearest("ref", ["ref", "imu"], tolerance=MS, windows={"imu": (5 * MS, 4 * MS)}),
            clock=clock,
            tap_batch=tap_batch,
        )
        with anyio.fail_after(10):
            async with clock.autojump():
                groups = await collect(hub, [ref, imu])
        shape = [
            (g.t, tuple(f.seq for f in g.frames["imu"]))  # type: ignore[union-attr]
            for g in groups
        ]
        return shape, tapped, hub.statistics().frames_in

    single, bursts = await run(False), await run(True)
    assert bursts == single
    assert bursts[1] == [i * MS for i in range(200)]
    assert bursts[2] == 220
