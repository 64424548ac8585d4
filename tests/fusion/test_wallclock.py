"""Dating reference-clock times: anchors, steps, and the inverse (fusion._wallclock)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import WallAnchor, WallClock, reference_to_utc, sample_anchor

S = 1_000_000_000
EPOCH = 1_796_000_000 * S  # late 2026


def test_an_ntp_step_shows_as_a_step_not_as_skew() -> None:
    # anchors each second; at reference 3 s the wall clock was stepped back 250 ms
    anchors = [WallAnchor(i * S, EPOCH + i * S) for i in range(3)]
    anchors += [WallAnchor(i * S, EPOCH + i * S - S // 4) for i in range(3, 6)]
    wall = WallClock(anchors)
    assert wall.to_utc(2 * S + 999_999_999) == EPOCH + 2 * S + 999_999_999
    assert wall.to_utc(3 * S) == EPOCH + 3 * S - S // 4
    assert wall.to_utc(-5 * S) == EPOCH - 5 * S  # before the first anchor: the first one
    assert wall.steps() == [(3 * S, -S // 4)]
    assert reference_to_utc(4 * S, anchors) == EPOCH + 4 * S - S // 4


@given(
    st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=20),
    st.integers(0, 30 * S),
)
def test_from_utc_inverts_to_utc_within_a_stretch_without_steps(
    jitter_us: list[int], t: int
) -> None:
    anchors = [WallAnchor(i * 2 * S, EPOCH + i * 2 * S + j * 1000) for i, j in enumerate(jitter_us)]
    wall = WallClock(anchors)
    utc = wall.to_utc(t)
    assert utc - t == wall.anchor_for(t).offset_ns
    if all(a.offset_ns == anchors[0].offset_ns for a in anchors):
        assert wall.from_utc(utc) == t


def test_sample_anchor_pairs_the_host_clocks() -> None:
    before = time.time_ns()
    anchor = sample_anchor()
    after = time.time_ns()
    assert before <= anchor.utc_ns <= after
    assert abs(anchor.reference_ns - time.monotonic_ns()) < 5 * S
    assert WallAnchor.from_wire(anchor.as_list()) == anchor
    assert WallAnchor.from_wire(["x", 1]) is None


def test_a_wall_clock_needs_an_anchor() -> None:
    with pytest.raises(ValueError, match="at least one anchor"):
        WallClock([])
