"""Live robustness of SyncHub on a virtual clock: clock models in the loop, sensors
that fall silent and come back, a sensor that floods, and the metrics that show it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import anyio
import pytest

from adapters import Source
from adapters.synthetic import SensorTiming, SyntheticSensor
from fusion import (
    FrameGroup,
    Nearest,
    OnlineClock,
    SensorSpec,
    SyncHub,
    VirtualClock,
    use_clock,
)
from fusion._frames import Frame
from fusion._hub import LATENCY_BUCKETS_NS

MS = 1_000_000
S = 1_000_000_000


class ScheduledSource(Source):
    """Frames at given sensor stamps, each delivered ``delay`` ns of runtime clock after it."""

    def __init__(self, spec: SensorSpec, stamps: Sequence[int], *, delay: int = 2 * MS) -> None:
        super().__init__(spec)
        self.stamps = stamps
        self.delay = delay

    async def frames(self) -> AsyncIterator[Frame]:
        clock = self.clock()
        for t in self.stamps:
            await clock.sleep_until(t + self.delay)
            yield self.make_frame(t, None, t_arrival=clock.now())

    @staticmethod
    def clock() -> VirtualClock:
        from fusion import current_clock

        clock = current_clock()
        assert isinstance(clock, VirtualClock)
        return clock


def every(period: int, start: int, stop: int, *, skip: tuple[int, int] | None = None) -> list[int]:
    """Stamps ``start, start + period, ...`` before ``stop``, minus those in ``skip`` [a, b)."""
    return [t for t in range(start, stop, period) if skip is None or not (skip[0] <= t < skip[1])]


async def run_hub(hub: SyncHub, sources: list[Source], clock: VirtualClock) -> list[FrameGroup]:
    out: list[FrameGroup] = []
    with use_clock(clock), anyio.fail_after(10):
        async with clock.autojump(), hub.open(sources) as groups:
            async for g in groups:
                out.append(g)
    return out


class TestSensorComingAndGoing:
    @pytest.mark.parametrize("optional", [False, True])
    async def test_a_silent_sensor_is_left_out_after_max_latency_and_rejoins_when_back(
        self, optional: bool
    ) -> None:
        clock = VirtualClock()
        silence = (1 * S, 2_500 * MS)
        ref = ScheduledSource(SensorSpec("ref"), every(100 * MS, 0, 5 * S))
        cam = ScheduledSource(
            SensorSpec("cam", optional=optional), every(100 * MS, 1 * MS, 5 * S, skip=silence)
        )
        hub = SyncHub(
            Nearest("ref", ["ref", "cam"], tolerance=10 * MS, optional=["cam"] if optional else ()),
            max_latency=250 * MS,
        )
        groups = await run_hub(hub, [ref, cam], clock)

        # Refs at 1.0 .. 2.4 s had no cam frame: 15 groups went out without it or were dropped.
        in_silence = [t for t in every(100 * MS, 0, 5 * S) if silence[0] <= t < silence[1]]
        assert len(in_silence) == 15
        complete = [g.t for g in groups if not g.missing]
        assert complete == [t for t in every(100 * MS, 0, 5 * S) if t not in in_silence]
        stats = hub.statistics()
        assert stats.groups_complete == 35
        if optional:
            assert [g.t for g in groups if g.missing == {"cam"}] == in_silence
            assert stats.groups_partial == 15
            assert stats.groups_dropped == 0
            # The deadline resolved them while the sensor was away, not its return.
            assert stats.groups_expired >= 13
        else:
            assert stats.groups_dropped == 15
            assert stats.dropped[("ref", "incomplete")] == 15
        assert stats.sensors["cam"].frames_in == 35
        assert stats.sensors["cam"].dropped.get("late", 0) == 0

    async def test_the_others_are_not_held_back_longer_than_max_latency(self) -> None:
        clock = VirtualClock()
        ref = ScheduledSource(SensorSpec("ref"), every(100 * MS, 0, 3 * S))
        gps = ScheduledSource(
            SensorSpec("gps", optional=True), every(100 * MS, 2 * MS, 3 * S, skip=(0, 2 * S))
        )
        hub = SyncHub(
            Nearest("ref", ["ref", "gps"], tolerance=10 * MS, optional=["gps"]),
            max_latency=300 * MS,
        )
        emitted: list[tuple[int, int]] = []
        with use_clock(clock), anyio.fail_after(10):
            async with clock.autojump(), hub.open([ref, gps]) as groups:
                async for g in groups:
                    emitted.append((g.t, clock.now()))
        assert len(emitted) == 30
        for t, at in emitted[:-1]:
            # Received 2 ms after capture, out at most max_latency (+ one frame period) later.
            assert at - (t + 2 * MS) <= 300 * MS + 100 * MS


class BurstSource(Source):
    """A sensor far over its declared rate: ``burst`` frames at once every ``period``."""

    def __init__(self, spec: SensorSpec, *, period: int, burst: int, stop: int) -> None:
        super().__init__(spec)
        self.period, self.burst, self.stop = period, burst, stop
        self.sent = 0

    async def frames(self) -> AsyncIterator[Frame]:
        clock = ScheduledSource.clock()
        for start in range(0, self.stop, self.period):
            await clock.sleep_until(start + MS)
            for i in range(self.burst):
                self.sent += 1
                yield self.make_frame(start + i * 1_000, None, t_arrival=clock.now())


class TestFlooding:
    async def flood(self, consumer_delay: int) -> tuple[SyncHub, BurstSource, list[FrameGroup]]:
        clock = VirtualClock()
        ref = ScheduledSource(SensorSpec("ref"), every(100 * MS, 0, 2 * S))
        # Declared 100 Hz, sends 5 kHz in bursts into a 16-frame drop_oldest channel.
        imu = BurstSource(
            SensorSpec("imu", rate_hz=100, capacity=16, overflow="drop_oldest"),
            period=10 * MS,
            burst=50,
            stop=2 * S,
        )
        hub = SyncHub(
            Nearest("ref", ["ref", "imu"], tolerance=5 * MS, optional=["imu"], max_buffer=64),
            max_latency=200 * MS,
            output_capacity=1,
        )
        seen: list[FrameGroup] = []
        with use_clock(clock), anyio.fail_after(20):
            async with clock.autojump(), hub.open([ref, imu]) as groups:
                async for g in groups:
                    seen.append(g)
                    await clock.sleep_until(clock.now() + consumer_delay)
        return hub, imu, seen

    async def test_a_flooding_sensor_is_bounded_and_the_others_lose_nothing(self) -> None:
        hub, imu, seen = await self.flood(consumer_delay=50 * MS)
        stats = hub.statistics()
        assert stats.channels["imu->hub"].high_water <= 16
        imu_stats = stats.sensors["imu"]
        assert imu_stats.frames_in + imu_stats.dropped.get("overflow", 0) == imu.sent
        assert imu_stats.dropped["queue_full"] > 0  # held to the policy's buffer, not memory
        assert stats.peak_buffer_used <= 64 + 2
        assert stats.sensors["ref"].dropped == {}
        assert stats.channels["ref->hub"].dropped == {}
        assert [g.t for g in seen] == every(100 * MS, 0, 2 * S)

    async def test_a_slow_consumer_does_not_turn_backpressure_into_lost_frames(self) -> None:
        hub, _, seen = await self.flood(consumer_delay=300 * MS)
        assert hub.statistics().sensors["ref"].dropped == {}
        assert [g.t for g in seen] == every(100 * MS, 0, 2 * S)


class TestClockModelsInTheHub:
    async def test_online_clocks_align_frames_and_report_their_estimate(self) -> None:
        clock = VirtualClock()
        timings = {
            "lidar": SensorTiming(
                offset_ns=-7 * S, skew_ppm=-80, delay_ns=3 * MS, jitter_mean_ns=MS
            ),
            "cam": SensorTiming(
                offset_ns=123 * S, skew_ppm=150, delay_ns=5 * MS, jitter_mean_ns=2 * MS
            ),
        }
        sources: list[Source] = [
            SyntheticSensor(
                name,
                rate,
                timing=timings[name],
                duration_s=15,
                clock=OnlineClock(extra_offset_ns=-timings[name].delay_ns),
            )
            for name, rate in [("lidar", 10.0), ("cam", 30.0)]
        ]
        hub = SyncHub(Nearest("lidar", ["lidar", "cam"], tolerance=16 * MS), max_latency=300 * MS)
        groups = await run_hub(hub, sources, clock)

        assert len(groups) == 150
        settled = [g for g in groups if g.t - groups[0].t >= 3 * S]
        for g in settled:
            for f in g.members():
                assert abs(f.t - f.meta["t_true"]) < 0.5 * MS  # aligned to the host clock
                assert f.t_sensor != f.t  # the sensor's own stamp is kept
        stats = hub.statistics()
        for name, timing in timings.items():
            estimate = stats.sensors[name].clock
            assert estimate["model"] == "OnlineClock"
            assert estimate["skew_ppm"] == pytest.approx(timing.skew_ppm, abs=20)
            assert estimate["resets"] == 0
            assert json.loads(json.dumps(dict(estimate))) == dict(estimate)
            assert stats.sensors[name].lag_ns is not None

    async def test_hub_metrics_include_a_latency_histogram(self) -> None:
        clock = VirtualClock()
        ref = ScheduledSource(SensorSpec("ref"), every(100 * MS, 0, 2 * S))
        cam = ScheduledSource(SensorSpec("cam"), every(100 * MS, 30 * MS, 2 * S))
        hub = SyncHub(Nearest("ref", ["ref", "cam"], tolerance=40 * MS), max_latency=S)
        await run_hub(hub, [ref, cam], clock)
        latency = hub.statistics().latency
        assert latency is not None
        assert [b for b, _ in latency.histogram] == [*LATENCY_BUCKETS_NS, None]
        assert sum(n for _, n in latency.histogram) == latency.count
        # Each group is certain when its cam frame arrives and goes out at once.
        assert latency.histogram[0] == (LATENCY_BUCKETS_NS[0], latency.count)
