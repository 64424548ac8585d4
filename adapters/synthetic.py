"""Synthetic sensors with known clocks: the test double of every real sensor.

Each sensor samples at ``rate_hz`` on a *true* timeline (the reference clock)
and stamps frames with its own, imperfect clock::

    t_sensor  = offset + true * (1 + skew_ppm * 1e-6)        (then wrapped, or reset)
    t_arrival = max(previous arrival, true + delay + jitter)  (FIFO transport)

where ``jitter`` is exponential with mean ``jitter_mean_ns`` and, with
probability ``spike_prob``, ``spike_ns`` more (a congested link). Frames are
lost with probability ``drop_prob``. ``reset_at_ns`` makes the sensor clock
jump back to 0 at that true time (a device reboot). Everything is drawn from a
seeded generator, so a sensor's frames are identical on every run.

Ground truth travels in ``frame.meta``: ``t_true`` (capture time on the host
clock), ``index`` (sample number before drops). With ``realtime=True`` the
source waits on the runtime clock until each frame's arrival time, so under a
:class:`~fusion.VirtualClock` a long session runs in milliseconds; with
``realtime=False`` it yields at once, with the same stamps.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio.lowlevel
import numpy as np

from fusion import Frame, Overflow, SensorKind, SensorSpec, Source, current_clock
from fusion.clock import ClockModel

POINT_DTYPE = np.dtype(
    [
        ("x", "<f4"),
        ("y", "<f4"),
        ("z", "<f4"),
        ("intensity", "<f4"),
        ("ring", "<u2"),
        ("time", "<f4"),
    ]
)
"""Structured point layout of synthetic sweeps (``time``: seconds from sweep start)."""


@dataclass(frozen=True, slots=True)
class SensorTiming:
    """How a synthetic sensor's clock and link misbehave."""

    offset_ns: int = 0
    """Sensor clock minus true time at true time 0."""
    skew_ppm: float = 0.0
    """Sensor clock rate error, parts per million (positive: runs fast)."""
    delay_ns: int = 1_000_000
    """Minimum transport delay."""
    jitter_mean_ns: int = 0
    """Mean of the exponential extra delay."""
    spike_prob: float = 0.0
    """Probability that a frame is delayed by ``spike_ns`` more."""
    spike_ns: int = 0
    drop_prob: float = 0.0
    """Probability that a frame is lost in transport."""
    reset_at_ns: int | None = None
    """True time at which the sensor clock jumps back to 0 (a reboot)."""
    wrap_period_ns: int | None = None
    """Sensor clock wraps modulo this period (e.g. an hour for Velodyne)."""

    def sensor_time(self, true_ns: int) -> int:
        if self.reset_at_ns is not None and true_ns >= self.reset_at_ns:
            local = round((true_ns - self.reset_at_ns) * (1 + self.skew_ppm * 1e-6))
        else:
            local = self.offset_ns + round(true_ns * (1 + self.skew_ppm * 1e-6))
        if self.wrap_period_ns is not None:
            local %= self.wrap_period_ns
        return local


@dataclass(frozen=True, slots=True)
class Sample:
    """One scheduled frame: true capture time, sensor stamp, arrival, index."""

    index: int
    t_true: int
    t_sensor: int
    t_arrival: int


class SyntheticSensor(Source):
    """A sensor with a known clock; subclasses choose the payload."""

    kind: SensorKind = "generic"

    def __init__(
        self,
        name: str,
        rate_hz: float,
        *,
        timing: SensorTiming | None = None,
        duration_s: float | None = 10.0,
        start_ns: int = 0,
        seed: int = 0,
        realtime: bool = True,
        optional: bool = False,
        clock: ClockModel | None = None,
        capacity: int = 64,
        overflow: Overflow = "block",
    ) -> None:
        super().__init__(
            SensorSpec(
                name,
                kind=self.kind,
                rate_hz=rate_hz,
                optional=optional,
                clock=clock,
                capacity=capacity,
                overflow=overflow,
            )
        )
        self.rate_hz = rate_hz
        self.timing = timing or SensorTiming()
        self.duration_s = duration_s
        self.start_ns = start_ns
        self.seed = seed
        self.realtime = realtime

    def schedule(self) -> Iterator[Sample]:
        """The frames this sensor will deliver, in arrival order (deterministic)."""
        rng = np.random.default_rng([self.seed, _stable_hash(self.name)])
        timing = self.timing
        period = 1e9 / self.rate_hz
        count = None if self.duration_s is None else math.ceil(self.duration_s * self.rate_hz)
        last_arrival = -(2**62)
        index = 0
        while count is None or index < count:
            true = self.start_ns + round(index * period)
            extra = rng.exponential(timing.jitter_mean_ns) if timing.jitter_mean_ns else 0.0
            if timing.spike_prob and rng.random() < timing.spike_prob:
                extra += timing.spike_ns
            lost = bool(timing.drop_prob) and rng.random() < timing.drop_prob
            arrival = max(last_arrival, true + timing.delay_ns + round(extra))
            if not lost:
                last_arrival = arrival
                yield Sample(index, true, timing.sensor_time(true), arrival)
            index += 1

    def payload(self, sample: Sample) -> Any:
        """The frame's data for ``sample`` (override)."""
        return None

    async def frames(self) -> AsyncIterator[Frame]:
        clock = current_clock()
        epoch = clock.now()
        for sample in self.schedule():
            arrival = epoch + sample.t_arrival
            if self.realtime:
                await clock.sleep_until(arrival)
            else:
                await anyio.lowlevel.checkpoint()
            yield self.make_frame(
                sample.t_sensor,
                self.payload(sample),
                t_arrival=arrival,
                meta={"t_true": epoch + sample.t_true, "index": sample.index},
            )


class SyntheticCamera(SyntheticSensor):
    """RGB frames (``height x width x 3`` uint8) with a square moving over a gradient."""

    kind: SensorKind = "camera"

    def __init__(
        self,
        name: str = "cam",
        rate_hz: float = 30.0,
        *,
        width: int = 64,
        height: int = 48,
        noise: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, rate_hz, **kwargs)
        self.width, self.height, self.noise = width, height, noise
        yy, xx = np.mgrid[0:height, 0:width]
        base = np.stack(
            [xx * 255 // max(1, width - 1), yy * 255 // max(1, height - 1), np.full_like(xx, 96)],
            axis=-1,
        )
        self._base = base.astype(np.uint8)
        self._rng = np.random.default_rng(self.seed)

    def payload(self, sample: Sample) -> np.ndarray[Any, np.dtype[np.uint8]]:
        image = self._base.copy()
        side = max(2, min(self.width, self.height) // 4)
        x = (sample.index * 2) % max(1, self.width - side)
        y = (sample.index) % max(1, self.height - side)
        image[y : y + side, x : x + side] = 255
        if self.noise:
            noise = self._rng.normal(0.0, self.noise, image.shape)
            image = np.clip(image + noise, 0, 255).astype(np.uint8)
        return image


class SyntheticLidar(SyntheticSensor):
    """Sweeps of a spinning multi-ring LiDAR inside a box room (structured points)."""

    kind: SensorKind = "lidar"

    def __init__(
        self,
        name: str = "lidar",
        rate_hz: float = 10.0,
        *,
        points: int = 2048,
        rings: int = 16,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, rate_hz, **kwargs)
        self.points, self.rings = points, rings

    def payload(self, sample: Sample) -> np.ndarray[Any, np.dtype[np.void]]:
        n = self.points
        per_ring = max(1, n // self.rings)
        azimuth = np.linspace(0, 2 * np.pi, per_ring, endpoint=False)
        azimuth = np.tile(azimuth, self.rings)[:n] + sample.index * 1e-3
        ring = np.repeat(np.arange(self.rings, dtype=np.uint16), per_ring)[:n]
        elevation = np.deg2rad(-15 + 30 * ring / max(1, self.rings - 1))
        c, s = np.cos(azimuth), np.sin(azimuth)
        # Distance to the walls of a 20 m x 12 m room centred on the sensor.
        dist = np.minimum(10 / np.maximum(np.abs(c), 1e-6), 6 / np.maximum(np.abs(s), 1e-6))
        out = np.empty(n, POINT_DTYPE)
        out["x"] = dist * c * np.cos(elevation)
        out["y"] = dist * s * np.cos(elevation)
        out["z"] = dist * np.sin(elevation)
        out["intensity"] = (ring * 7 % 100).astype(np.float32)
        out["ring"] = ring
        out["time"] = (azimuth % (2 * np.pi)) / (2 * np.pi) / self.rate_hz
        return out


class SyntheticImu(SyntheticSensor):
    """IMU samples: ``{"accel": float32[3], "gyro": float32[3]}`` of a gently turning body."""

    kind: SensorKind = "imu"

    def __init__(self, name: str = "imu", rate_hz: float = 200.0, **kwargs: Any) -> None:
        super().__init__(name, rate_hz, **kwargs)

    def payload(self, sample: Sample) -> dict[str, np.ndarray[Any, np.dtype[np.float32]]]:
        phase = sample.t_true * 1e-9
        return {
            "accel": np.array([0.1 * math.sin(phase), 0.0, 9.81], np.float32),
            "gyro": np.array([0.0, 0.0, 0.05 * math.cos(phase)], np.float32),
        }


def synthetic_session(
    duration_s: float = 10.0, *, seed: int = 0, realtime: bool = True, **kwargs: Any
) -> list[SyntheticSensor]:
    """Camera 30 Hz, LiDAR 10 Hz and IMU 200 Hz with distinct clock offsets and skews."""
    common = {"duration_s": duration_s, "seed": seed, "realtime": realtime, **kwargs}
    return [
        SyntheticCamera(
            timing=SensorTiming(
                offset_ns=0, skew_ppm=20, delay_ns=8_000_000, jitter_mean_ns=2_000_000
            ),
            **common,
        ),
        SyntheticLidar(
            timing=SensorTiming(
                offset_ns=0, skew_ppm=-35, delay_ns=3_000_000, jitter_mean_ns=1_000_000
            ),
            **common,
        ),
        SyntheticImu(
            timing=SensorTiming(
                offset_ns=0, skew_ppm=50, delay_ns=1_000_000, jitter_mean_ns=300_000
            ),
            **common,
        ),
    ]


def synthetic_timeline(sensors: Iterable[SyntheticSensor], *, epoch: int = 0) -> list[Frame]:
    """All sensors' frames merged in arrival order, without any event loop.

    For sans-I/O tests and benchmarks; frames are numbered as the sources would.
    """

    def stream(sensor: SyntheticSensor) -> Iterator[tuple[int, str, Sample, SyntheticSensor]]:
        for sample in sensor.schedule():
            yield (sample.t_arrival, sensor.name, sample, sensor)

    out: list[Frame] = []
    seqs: dict[str, int] = {}
    for arrival, name, sample, sensor in heapq.merge(
        *(stream(s) for s in sensors), key=lambda e: (e[0], e[1])
    ):
        seq = seqs.get(name, 0)
        seqs[name] = seq + 1
        out.append(
            Frame(
                name,
                seq,
                sample.t_sensor,
                sensor.payload(sample),
                t_arrival=epoch + arrival,
                meta={"t_true": epoch + sample.t_true, "index": sample.index},
            )
        )
    return out


def _stable_hash(text: str) -> int:
    value = 0
    for byte in text.encode():
        value = (value * 131 + byte) % (2**31)
    return value
