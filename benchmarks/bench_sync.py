"""Sync throughput: each policy (sans-I/O, one core) and the async SyncHub end to end.

Workload: camera 30 Hz, LiDAR 10 Hz, IMU 200 Hz (240 frames per second of
sensor time). Every row is compared with a naive matcher written here, the
straightforward "scan every buffered frame" approach, run in the same process
on the same frames, so the ratio survives a noisy shared machine.

Run: .venv/bin/python benchmarks/bench_sync.py [--seconds 600]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Callable

import anyio
import numpy as np
from rich.console import Console
from rich.table import Table

from fusion import (
    ApproximateTime,
    ExactTime,
    Frame,
    MonotonicClock,
    Nearest,
    SensorSpec,
    Source,
    SyncHub,
)

MS = 1_000_000
RATES = {"cam": 30, "lidar": 10, "imu": 200}


def make_frames(seconds: int, *, jitter: bool) -> list[Frame]:
    """Frames of the three sensors in arrival order; exact shared ticks when not jittered."""
    rng = np.random.default_rng(1)
    events = []
    for name, hz in RATES.items():
        n = seconds * hz
        ticks = np.arange(n, dtype=np.int64) * (600 // hz)  # a common 600 Hz grid
        stamps = ticks * (1_000_000_000 // 600)
        if jitter:
            stamps = stamps + rng.integers(0, 2 * MS, n)
        arrival = stamps + rng.integers(1 * MS, 6 * MS, n)
        arrival = np.maximum.accumulate(arrival)
        events += [
            (int(a), name, i, int(t)) for i, (t, a) in enumerate(zip(stamps, arrival, strict=True))
        ]
    events.sort()
    return [Frame(name, seq, t, None, t_arrival=a) for a, name, seq, t in events]


class NaiveNearest:
    """Baseline: keep the last second of frames; on every push, rescan everything buffered."""

    def __init__(self, reference: str, others: list[str], tolerance: int) -> None:
        self.reference, self.others, self.tolerance = reference, others, tolerance
        self.buffered: list[Frame] = []
        self.pending: list[Frame] = []

    def push(self, frame: Frame) -> list[tuple[Frame, ...]]:
        out = []
        if frame.sensor == self.reference:
            self.pending.append(frame)
        else:
            self.buffered.append(frame)
        self.buffered = [f for f in self.buffered if f.t > frame.t - 1_000_000_000]
        still = []
        for ref in self.pending:
            chosen = []
            for sensor in self.others:
                cands = [f for f in self.buffered if f.sensor == sensor]
                later = [f for f in cands if f.t >= ref.t]
                if not later:
                    break
                best = min(cands, key=lambda f: abs(f.t - ref.t))
                if abs(best.t - ref.t) > self.tolerance:
                    break
                chosen.append(best)
            if len(chosen) == len(self.others):
                out.append((ref, *chosen))
            else:
                still.append(ref)
        self.pending = still
        return out


def rate(push: Callable[[Frame], object], frames: list[Frame], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for f in frames:
            push(f)
        best = min(best, time.perf_counter() - start)
    return len(frames) / best


class FrameListSource(Source):
    def __init__(self, name: str, frames: list[Frame]) -> None:
        super().__init__(SensorSpec(name, capacity=256))
        self._frames = frames

    async def frames(self) -> AsyncIterator[Frame]:
        for f in self._frames:
            yield f


class PacedSource(Source):
    """Emits at the sensor's real rate, stamping t and t_arrival with the host clock."""

    def __init__(self, name: str, hz: int, seconds: float, start: int) -> None:
        super().__init__(SensorSpec(name))
        self.hz, self.seconds, self.start = hz, seconds, start

    async def frames(self) -> AsyncIterator[Frame]:
        clock = MonotonicClock()
        period = (1_000_000_000 // 600) * (600 // self.hz)  # shared 600 Hz grid
        for i in range(int(self.seconds * self.hz)):
            t = self.start + i * period
            await clock.sleep_until(t)
            yield self.make_frame(t, None, t_arrival=clock.now())


def hub_throughput(frames: list[Frame]) -> float:
    by_sensor = {
        s: [Frame(f.sensor, f.seq, f.t, None) for f in frames if f.sensor == s] for s in RATES
    }

    async def main() -> float:
        hub = SyncHub(
            Nearest("lidar", list(RATES), tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}),
            output_capacity=256,
        )
        sources = [FrameListSource(s, fs) for s, fs in by_sensor.items()]
        start = time.perf_counter()
        n = 0
        async with hub.open(sources) as groups:
            async for _ in groups:
                n += 1
        elapsed = time.perf_counter() - start
        assert n > 0
        return len(frames) / elapsed

    return anyio.run(main)


def hub_latency(seconds: float) -> tuple[float, float, float, int]:
    """Paced sources at real rates; latency = group received - last member received by the hub."""

    async def main() -> tuple[float, float, float, int]:
        clock = MonotonicClock()
        start = clock.now() + 50 * MS
        # ExactTime on a shared grid: a group is certain when its last member arrives.
        sources = [PacedSource(s, hz, seconds, start) for s, hz in (("cam", 30), ("lidar", 10))]
        hub = SyncHub(ExactTime(["cam", "lidar"]), max_latency=100 * MS)
        lat = []
        async with hub.open(sources) as groups:
            async for g in groups:
                received = clock.now()
                lat.append(received - max(f.t_arrival or 0 for f in g.members()))
        arr = np.array(lat) / 1e6
        return (
            float(np.percentile(arr, 50)),
            float(np.percentile(arr, 99)),
            float(arr.max()),
            len(arr),
        )

    return anyio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=600, help="sensor time to simulate")
    parser.add_argument("--latency-seconds", type=float, default=5.0, help="paced run for latency")
    args = parser.parse_args()
    console = Console()
    exact_frames = make_frames(args.seconds, jitter=False)
    jittered = make_frames(args.seconds, jitter=True)
    console.print(
        f"{len(jittered):,} frames ({args.seconds} s of cam 30 Hz + LiDAR 10 Hz + IMU 200 Hz)"
    )

    naive = NaiveNearest("lidar", ["cam", "imu"], 20 * MS)
    naive_n = min(len(jittered), 24_000)  # the baseline is slow; its rate is per frame
    base = rate(naive.push, jittered[:naive_n], repeat=1)

    rows: list[tuple[str, float, float | None]] = [
        ("naive scan-all matcher (baseline)", base, None)
    ]
    cases = [
        (
            "ExactTime(queue_size=10)",
            lambda: ExactTime(list(RATES), queue_size=10),
            exact_frames,
            400_000,
        ),
        (
            "ApproximateTime(queue_size=10)",
            lambda: ApproximateTime(list(RATES), queue_size=10),
            jittered,
            200_000,
        ),
        (
            "ApproximateTime(queue_size=100)",
            lambda: ApproximateTime(list(RATES), queue_size=100),
            jittered,
            150_000,
        ),
        (
            "Nearest(lidar; cam nearest; imu window)",
            lambda: Nearest(
                "lidar", list(RATES), tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
            ),
            jittered,
            400_000,
        ),
    ]
    for label, make, frames, target in cases:
        best = 0.0
        for _ in range(3):
            policy = make()
            best = max(best, rate(policy.push, frames, repeat=1))
        rows.append((label, best, target))
    hub_rate = hub_throughput(jittered)
    rows.append(("SyncHub end to end (3 sources, Nearest)", hub_rate, 50_000))

    table = Table(title="Sync throughput (one process)")
    table.add_column("path")
    table.add_column("frames/s", justify="right")
    table.add_column("x naive", justify="right")
    table.add_column("target", justify="right")
    table.add_column("met", justify="center")
    for label, value, target in rows:
        table.add_row(
            label,
            f"{value:,.0f}",
            f"{value / base:,.1f}",
            "" if target is None else f"{target:,}",
            "" if target is None else ("yes" if value >= target else "NO"),
        )
    console.print(table)

    p50, p99, worst, n = hub_latency(args.latency_seconds)
    lat = Table(title=f"SyncHub added latency, paced real-time run ({n} groups)")
    for col in ("p50 ms", "p99 ms", "max ms", "target p99"):
        lat.add_column(col, justify="right")
    lat.add_row(f"{p50:.3f}", f"{p99:.3f}", f"{worst:.3f}", "< 1 ms")
    console.print(lat)


if __name__ == "__main__":
    main()
