"""Nearest over three sensors with independent clocks matches the ground-truth grouping.

Each sensor stamps frames with its own clock (offsets up to ±1000 s, skews up to
±300 ppm) and its own link (min delay, exponential jitter, 1 % of frames 50 ms
late). The frames go, in arrival order, through per-sensor clock models into
``Nearest``; the oracle is the same policy fed the true capture times. Each
``extra_offset_ns`` is the sensor's calibrated minimum delay (which no one-way
method can observe).
"""

from __future__ import annotations

import numpy as np
import pytest

from adapters.synthetic import SensorTiming, SyntheticSensor, synthetic_timeline
from fusion import FixedOffset, Frame, Nearest, OnlineClock
from fusion.clock import ClockModel

MS = 1_000_000
TOLERANCE = {"cam": 17 * MS, "radar": 25 * MS}
# Trigger phases of cam 30 Hz and radar 20 Hz against the 10 Hz LiDAR reference.
LAYOUT = [("lidar", 10.0, 0), ("cam", 30.0, 4 * MS), ("radar", 20.0, 11 * MS)]


def session(seed: int, seconds: float) -> list[SyntheticSensor]:
    rng = np.random.default_rng(seed)
    return [
        SyntheticSensor(
            name,
            rate,
            start_ns=start,
            duration_s=seconds,
            seed=seed,
            timing=SensorTiming(
                offset_ns=int(rng.integers(-(10**12), 10**12)),
                skew_ppm=float(rng.uniform(-300, 300)),
                delay_ns=int(rng.integers(1 * MS, 10 * MS)),
                jitter_mean_ns=int(rng.integers(MS // 2, 5 * MS)),
                spike_prob=0.01,
                spike_ns=50 * MS,
            ),
        )
        for name, rate, start in LAYOUT
    ]


def groupings(
    sensors: list[SyntheticSensor], models: dict[str, ClockModel]
) -> tuple[dict[int, list[tuple[str, int]]], dict[int, list[tuple[str, int]]]]:
    """(aligned, truth): per LiDAR seq, the sorted keys of its group."""
    names = [s.name for s in sensors]
    aligned_policy = Nearest("lidar", names, tolerance=TOLERANCE)
    truth_policy = Nearest("lidar", names, tolerance=TOLERANCE)
    aligned, truth = [], []
    for f in synthetic_timeline(sensors):
        assert f.t_arrival is not None
        model = models[f.sensor]
        model.observe(f.t_sensor, f.t_arrival)
        aligned += aligned_policy.push(
            Frame(f.sensor, f.seq, model.align(f.t_sensor), t_sensor=f.t_sensor)
        )
        truth += truth_policy.push(Frame(f.sensor, f.seq, f.meta["t_true"]))
    aligned += aligned_policy.drain()
    truth += truth_policy.drain()

    def by_ref(groups: list) -> dict[int, list[tuple[str, int]]]:  # type: ignore[type-arg]
        return {g.frames["lidar"].seq: sorted(g.keys) for g in groups}

    return by_ref(aligned), by_ref(truth)


def match_rate(
    aligned: dict[int, list[tuple[str, int]]], truth: dict[int, list[tuple[str, int]]]
) -> float:
    refs = set(aligned) | set(truth)
    return sum(aligned.get(r) == truth.get(r) for r in refs) / len(refs)


class TestGroupingWithOnlineClocks:
    def test_matches_the_ground_truth_grouping_for_999_of_1000_reference_frames(self) -> None:
        matched = total = 0
        for seed in range(5):
            sensors = session(seed, seconds=60)
            models: dict[str, ClockModel] = {
                s.name: OnlineClock(extra_offset_ns=-s.timing.delay_ns) for s in sensors
            }
            aligned, truth = groupings(sensors, models)
            assert len(truth) == 600
            refs = set(aligned) | set(truth)
            matched += sum(aligned.get(r) == truth.get(r) for r in refs)
            total += len(refs)
            assert all(isinstance(m, OnlineClock) and m.resets == 0 for m in models.values())
        assert matched / total >= 0.999

    @pytest.mark.parametrize("seed", [0, 1])
    def test_without_skew_estimation_the_grouping_drifts_away(self, seed: int) -> None:
        # The control: knowing each offset exactly at t=0 but ignoring skew is not enough.
        sensors = session(seed, seconds=60)
        models: dict[str, ClockModel] = {s.name: FixedOffset(-s.timing.offset_ns) for s in sensors}
        aligned, truth = groupings(sensors, models)
        assert match_rate(aligned, truth) < 0.95
