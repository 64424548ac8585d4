"""OnlineClock accuracy against synthetic ground truth (sans-I/O, no event loop).

The error of an aligned frame is measured against its true capture time plus
the sensor's minimum transport delay: a constant that no one-way method can
observe (``extra_offset_ns`` is where a calibration puts it).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import deque

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adapters.synthetic import SensorTiming, SyntheticSensor, synthetic_timeline
from fusion import OnlineClock
from fusion._frames import Frame
from fusion.clock import ClockModel

MS = 1_000_000
US = 1_000
S = 1_000_000_000

# The headline link: 0.5 s offset, 200 ppm, 2 ms + Exp(5 ms) delay, 1 % of frames +50 ms.
HEADLINE = SensorTiming(
    offset_ns=500 * MS,
    skew_ppm=200,
    delay_ns=2 * MS,
    jitter_mean_ns=5 * MS,
    spike_prob=0.01,
    spike_ns=50 * MS,
)


class LeastSquaresClock:
    """The baseline: a least-squares line through ``t_arrival - t_sensor`` over the same window."""

    def __init__(self, window_ns: int = 20 * S) -> None:
        self.window_ns = window_ns
        self._pts: deque[tuple[float, float]] = deque()
        self._x0: int | None = None
        self._sums = [0.0, 0.0, 0.0, 0.0]  # x, y, xx, xy (x in s from the first sample)
        self._line = (0.0, 0.0)

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        if self._x0 is None:
            self._x0 = t_sensor
        x, y = (t_sensor - self._x0) / S, float(t_arrival - t_sensor)
        self._pts.append((x, y))
        self._accumulate(x, y, 1)
        while self._pts[0][0] < x - self.window_ns / S:
            self._accumulate(*self._pts.popleft(), -1)
        n = len(self._pts)
        sx, sy, sxx, sxy = self._sums
        var = sxx - sx * sx / n
        slope = (sxy - sx * sy / n) / var if n > 1 and var > 1e-12 else 0.0
        self._line = ((sy - slope * sx) / n, slope)

    def _accumulate(self, x: float, y: float, sign: int) -> None:
        s = self._sums
        s[0] += sign * x
        s[1] += sign * y
        s[2] += sign * x * x
        s[3] += sign * x * y

    def align(self, t_sensor: int) -> int:
        assert self._x0 is not None
        intercept, slope = self._line
        return t_sensor + round(intercept + slope * (t_sensor - self._x0) / S)

    def describe(self) -> dict[str, object]:
        return {"model": "LeastSquares"}


def errors(model: ClockModel, frames: list[Frame], min_delay: int) -> np.ndarray:
    """Online alignment errors (ns), fed in arrival order as the hub does: observe, then align."""
    out = np.empty(len(frames), np.int64)
    for i, f in enumerate(frames):
        assert f.t_arrival is not None
        model.observe(f.t_sensor, f.t_arrival)
        out[i] = model.align(f.t_sensor) - (f.meta["t_true"] + min_delay)
    return out


def true_times(frames: list[Frame]) -> np.ndarray:
    return np.array([f.meta["t_true"] for f in frames])


def p99(values: np.ndarray) -> float:
    return float(np.percentile(np.abs(values), 99))


def sensor(
    timing: SensorTiming, *, seconds: float, rate_hz: float = 100, seed: int = 0
) -> list[Frame]:
    return synthetic_timeline(
        [SyntheticSensor("s", rate_hz, timing=timing, duration_s=seconds, seed=seed)]
    )


def at_rate(timing: SensorTiming, rate_hz: float) -> SensorTiming:
    """``timing`` for a sensor at ``rate_hz``: jitter at most one frame interval.

    The synthetic link is FIFO: a frame never overtakes the one before it. With a
    mean jitter of 5 ms at 1 kHz, each frame would queue behind its five
    predecessors and almost none would cross at the minimum delay, which is a
    different link, not a faster sensor. At 1 kHz the window holds ``max_points``
    (4096, about 4 s) rather than 20 s of samples.
    """
    interval = round(1e9 / rate_hz)
    return dataclasses.replace(timing, jitter_mean_ns=min(timing.jitter_mean_ns, interval))


class TestHeadlineAccuracy:
    @pytest.mark.parametrize(("seed", "rate_hz"), [(0, 100), (1, 100), (2, 100), (0, 1000)])
    def test_after_10_s_at_100_hz_p99_error_is_under_half_a_ms_and_least_squares_is_worse(
        self, seed: int, rate_hz: float
    ) -> None:
        frames = sensor(at_rate(HEADLINE, rate_hz), seconds=20, seed=seed, rate_hz=rate_hz)
        after = true_times(frames) >= 10 * S
        envelope = errors(OnlineClock(), frames, HEADLINE.delay_ns)
        least_squares = errors(LeastSquaresClock(), frames, HEADLINE.delay_ns)
        assert p99(envelope[after]) < 0.5 * MS
        assert p99(least_squares[after]) > 0.5 * MS
        # Not just the constant bias of the mean delay: even re-centred, its spread is wider.
        assert p99(least_squares[after] - np.median(least_squares[after])) > p99(envelope[after])

    def test_the_estimate_reports_offset_skew_and_a_shrinking_uncertainty(self) -> None:
        frames = sensor(HEADLINE, seconds=10)
        clock = OnlineClock()
        uncertainty: list[int] = []
        for f in frames:
            assert f.t_arrival is not None
            clock.observe(f.t_sensor, f.t_arrival)
            if f.seq % 200 == 199:
                assert clock.uncertainty_ns is not None
                uncertainty.append(clock.uncertainty_ns)
        assert clock.skew_ppm == pytest.approx(200, abs=5)
        last = frames[-1]
        expected_offset = last.meta["t_true"] + HEADLINE.delay_ns - last.t_sensor
        assert clock.offset_ns == pytest.approx(expected_offset, abs=0.2 * MS)
        assert uncertainty == sorted(uncertainty, reverse=True)
        assert 0 < uncertainty[-1] < 0.1 * MS
        described = clock.describe()
        assert json.loads(json.dumps(described)) == described
        assert described["model"] == "OnlineClock"
        assert described["resets"] == 0
        assert described["samples"] == len(frames)
        assert described["settled"] is True

    def test_converges_from_the_first_samples(self) -> None:
        frames = sensor(HEADLINE, seconds=3)
        err = errors(OnlineClock(), frames, HEADLINE.delay_ns)
        t = true_times(frames)
        # The first sample already gives the offset to within its own delay jitter.
        assert abs(err[0]) < 60 * MS
        assert p99(err[(t >= 2 * S)]) < 0.5 * MS


class TestJumps:
    @pytest.mark.parametrize("rate_hz", [100, 1000])
    def test_after_a_reboot_to_zero_the_error_is_back_under_half_a_ms_within_2_s(
        self, rate_hz: float
    ) -> None:
        timing = dataclasses.replace(at_rate(HEADLINE, rate_hz), reset_at_ns=10 * S)
        frames = sensor(timing, seconds=16, rate_hz=rate_hz)
        clock = OnlineClock()
        err = errors(clock, frames, timing.delay_ns)
        t = true_times(frames)
        assert clock.resets == 1
        assert p99(err[(t >= 10 * S + 2 * S)]) < 0.5 * MS
        assert p99(err[(t >= 5 * S) & (t < 10 * S)]) < 0.5 * MS  # before it, all was well

    def test_a_forward_jump_is_detected_as_a_negative_delay(self) -> None:
        frames = sensor(SensorTiming(delay_ns=2 * MS, jitter_mean_ns=1 * MS), seconds=8)
        for f in frames:
            if f.meta["t_true"] >= 4 * S:
                f.t_sensor += 3_600 * S  # the sensor clock leaps an hour ahead
        clock = OnlineClock()
        err = errors(clock, frames, 2 * MS)
        assert clock.resets == 1
        assert p99(err[true_times(frames) >= 6 * S]) < 0.5 * MS

    def test_a_small_backward_jump_resets_onto_the_raised_envelope(self) -> None:
        # 8 ms back is less than the 10 ms frame period, so sensor time still increases;
        # every delay now reads 8 ms longer than the envelope allows.
        frames = sensor(SensorTiming(delay_ns=2 * MS, jitter_mean_ns=500 * US), seconds=8)
        for f in frames:
            if f.meta["t_true"] >= 4 * S:
                f.t_sensor -= 8 * MS
        clock = OnlineClock(jump_threshold_ns=5 * MS)
        err = errors(clock, frames, 2 * MS)
        assert clock.resets == 1
        assert p99(err[true_times(frames) >= 6 * S]) < 0.5 * MS

    def test_a_single_glitched_stamp_is_rejected_without_a_reset(self) -> None:
        frames = sensor(HEADLINE, seconds=6)
        frames[300].t_sensor -= 200 * MS
        frames[400].t_sensor += 200 * MS
        clock = OnlineClock()
        err = errors(clock, frames, HEADLINE.delay_ns)
        assert clock.resets == 0
        assert clock.rejected == 2
        assert p99(np.delete(err, [300, 400])[400:]) < 0.5 * MS

    def test_a_repeated_stamp_is_ignored(self) -> None:
        clock = OnlineClock()
        clock.observe(1_000 * MS, 1_002 * MS)
        clock.observe(1_010 * MS, 1_012 * MS)
        clock.observe(1_010 * MS, 1_013 * MS)
        assert clock.ignored == 1
        assert clock.align(1_010 * MS) == 1_012 * MS

    def test_reset_forgets_the_model(self) -> None:
        clock = OnlineClock(extra_offset_ns=7)
        clock.observe(0, 5 * MS)
        assert clock.align(0) == 5 * MS + 7
        clock.reset()
        assert clock.align(0) == 7
        assert clock.describe()["offset_ns"] is None


class TestWrapAndCalibration:
    @pytest.mark.parametrize("period", [1 * S, 3 * S])
    def test_a_wrapping_counter_aligns_monotonically_without_resets(self, period: int) -> None:
        timing = dataclasses.replace(HEADLINE, wrap_period_ns=period)
        frames = sensor(timing, seconds=12)
        assert any(b.t_sensor < a.t_sensor for a, b in itertools.pairwise(frames))
        clock = OnlineClock(wrap_period_ns=period)
        err = errors(clock, frames, timing.delay_ns)
        assert clock.resets == 0
        assert p99(err[true_times(frames) >= 10 * S]) < 0.5 * MS
        aligned = [clock.align(f.t_sensor) for f in frames[-50:]]
        assert aligned == sorted(aligned)

    def test_the_wrap_period_comes_from_the_spec_meta(self) -> None:
        clock = OnlineClock.for_spec({"wrap_period_ns": 3_600 * S}, extra_offset_ns=1)
        assert (clock.wrap_period_ns, clock.extra_offset_ns) == (3_600 * S, 1)
        assert OnlineClock.for_spec({}).wrap_period_ns is None

    def test_extra_offset_shifts_every_aligned_time_by_the_calibration(self) -> None:
        frames = sensor(HEADLINE, seconds=4)
        plain = errors(OnlineClock(), frames, HEADLINE.delay_ns)
        calibrated = errors(
            OnlineClock(extra_offset_ns=-HEADLINE.delay_ns), frames, HEADLINE.delay_ns
        )
        assert np.array_equal(calibrated, plain - HEADLINE.delay_ns)

    def test_align_before_any_sample_applies_only_the_extra_offset(self) -> None:
        assert OnlineClock(extra_offset_ns=-3).align(100) == 97

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"jump_threshold_ns": 0}, "jump_threshold_ns must be > 0, got 0"),
            ({"confirm_samples": 0}, "confirm_samples must be >= 1, got 0"),
            ({"max_skew_ppm": -1}, r"max_skew_ppm must be in \[0, 1e6\), got -1"),
            ({"wrap_period_ns": 10 * MS}, "wrap_period_ns must exceed twice jump_threshold_ns"),
            ({"window_ns": 0}, "window must be > 0 ns, got 0"),
        ],
    )
    def test_rejects_bad_parameters(self, kwargs: dict[str, int], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            OnlineClock(**kwargs)


class TestProperties:
    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        offset=st.integers(-(10**13), 10**13),
        skew=st.floats(-500, 500),
        delay=st.integers(0, 20 * MS),
        jitter=st.integers(50 * US, 10 * MS),
        spike_prob=st.floats(0, 0.05),
        rate=st.sampled_from([20.0, 50.0, 100.0]),
        seed=st.integers(0, 2**16),
    )
    @example(0, 0.0, 0, 6859755, 0.03125, 20.0, 1647)  # a fresh clone's run: skew 100.0 ppm
    def test_converges_for_any_offset_skew_and_delay(
        self,
        offset: int,
        skew: float,
        delay: int,
        jitter: int,
        spike_prob: float,
        rate: float,
        seed: int,
    ) -> None:
        timing = SensorTiming(
            offset_ns=offset,
            skew_ppm=skew,
            delay_ns=delay,
            jitter_mean_ns=jitter,
            spike_prob=spike_prob,
            spike_ns=50 * MS,
        )
        frames = sensor(timing, seconds=10, rate_hz=rate, seed=seed)
        clock = OnlineClock()
        err = errors(clock, frames, delay)
        late = err[true_times(frames) >= 5 * S]
        # A least-squares fit would be off by about the mean jitter; the envelope, with 5 s of
        # data at the sparsest rate and widest jitter here, by a fraction of it.
        assert p99(late) < 0.25 * jitter + 50 * US
        assert clock.resets == 0
        # The skew is the envelope's slope: its ends may each be off by the alignment bound
        # above, over the 5 s settled at least (20 Hz and 6.9 ms of jitter once gave 100.0 ppm
        # for a true 0, at the old fixed 100 ppm bound).
        slope_bound = 2 * (0.25 * jitter + 50 * US) / (5 * S) * 1e6
        assert clock.skew_ppm == pytest.approx(skew, abs=max(100.0, slope_bound))
        # The reported uncertainty is the right scale (microsecond errors are not held to it).
        uncertainty = clock.uncertainty_ns
        assert uncertainty is not None
        assert np.median(np.abs(late[-len(late) // 5 :])) <= 3 * uncertainty + 10 * US

    def test_about_95_percent_of_settled_errors_are_within_the_reported_uncertainty(self) -> None:
        rng = np.random.default_rng(7)
        within = []
        for seed in range(20):
            timing = SensorTiming(
                offset_ns=int(rng.integers(-(10**12), 10**12)),
                skew_ppm=float(rng.uniform(-300, 300)),
                delay_ns=int(rng.integers(1 * MS, 10 * MS)),
                jitter_mean_ns=int(rng.integers(100 * US, 8 * MS)),
                spike_prob=0.01,
                spike_ns=50 * MS,
            )
            frames = sensor(timing, seconds=15, rate_hz=float(rng.choice([10, 30, 100])), seed=seed)
            clock = OnlineClock()
            for f in frames:
                assert f.t_arrival is not None
                clock.observe(f.t_sensor, f.t_arrival)
                if f.seq % 5 == 0 and f.meta["t_true"] >= 2 * S:
                    error = clock.align(f.t_sensor) - f.meta["t_true"] - timing.delay_ns
                    uncertainty = clock.uncertainty_ns
                    assert uncertainty is not None
                    within.append(abs(error) <= uncertainty)
        assert 0.85 <= np.mean(within) <= 0.995

    @settings(max_examples=30, deadline=None)
    @given(
        pairs=st.lists(
            st.tuples(st.integers(1, 50 * MS), st.integers(0, 30 * MS)), min_size=1, max_size=60
        ),
        start=st.integers(-(10**15), 10**15),
    )
    def test_align_is_deterministic_and_follows_the_envelope(
        self, pairs: list[tuple[int, int]], start: int
    ) -> None:
        a, b = OnlineClock(), OnlineClock()
        t = start
        for step, delay in pairs:
            t += step
            for clock in (a, b):
                clock.observe(t, t + delay)
        assert a.describe() == b.describe()
        assert a.align(t) == b.align(t)
        assert isinstance(a.align(t), int)
        if a.resets == 0 and a.rejected == 0 and a.ignored == 0:
            # Delays are non-negative: the envelope never answers a time after an arrival.
            assert a.align(t) <= t + pairs[-1][1] + 1


def test_uncertainty_is_none_before_the_first_sample() -> None:
    clock = OnlineClock()
    assert clock.uncertainty_ns is None
    assert clock.skew_ppm is None
