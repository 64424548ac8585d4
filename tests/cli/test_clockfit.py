"""The clock fit info prints: the glitch filter and the envelope skew on columns."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hyperframes.cli._clockfit import EARLY_GLITCH_NS, envelope_skew, without_early_glitches


def naive_keep(y: list[float], half: int = 4) -> list[bool]:
    """The filter point by point: each delay against the median of its neighbours."""
    a = np.asarray(y, np.float64)
    out = []
    for i in range(len(a)):
        near = np.concatenate([a[max(0, i - half) : i], a[i + 1 : i + 1 + half]])
        out.append(not (len(near) and a[i] < np.median(near) - EARLY_GLITCH_NS))
    return out


delays = st.lists(
    st.one_of(
        st.integers(1_000_000, 3_000_000),
        st.integers(-60_000_000, -20_000_000),  # a glitch: far below its neighbours
    ),
    max_size=40,
)


@given(y=delays)
def test_the_glitch_filter_keeps_what_the_point_by_point_filter_keeps(y: list[int]) -> None:
    got = without_early_glitches(np.asarray(y, np.float64))
    assert got.tolist() == naive_keep([float(v) for v in y])


def test_a_sensor_clock_running_50_ppm_fast_reads_50_ppm_through_a_glitch() -> None:
    rng = np.random.default_rng(3)
    n = 5_000
    t_sensor = np.arange(n, dtype=np.int64) * 10_000_000  # 100 Hz
    host = (t_sensor / (1 + 50e-6)).astype(np.int64)  # the host sees a fast sensor clock
    arrival = host + 2_000_000 + rng.integers(0, 3_000_000, n)
    arrival[2_500] -= 40_000_000  # one frame handed over early
    skew = envelope_skew(t_sensor, arrival)
    assert skew is not None
    assert abs(skew - 50.0) < 1.0
