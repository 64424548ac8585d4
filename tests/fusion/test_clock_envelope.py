"""The lower-envelope LP behind OnlineClock, checked against brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion._clock_envelope import Fit, LowerEnvelope


def brute_hull(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Lower hull by definition: points no segment of two others passes below (or through)."""
    out = []
    for i, (px, py) in enumerate(points):
        covered = False
        for (ax, ay), (bx, by) in itertools.combinations(points[:i] + points[i + 1 :], 2):
            if ax < px < bx and (by - ay) * (px - ax) <= (py - ay) * (bx - ax):
                covered = True
                break
        if not covered:
            out.append((px, py))
    return out


def brute_fit_value(points: list[tuple[int, int]], lo: float, hi: float) -> float:
    """Max of the line at mean x over lines below all points, slope in [lo, hi] (float)."""
    mean_x = sum(x for x, _ in points) / len(points)
    best = -float("inf")
    slopes = {lo, hi}
    for (ax, ay), (bx, by) in itertools.combinations(points, 2):
        slope = (by - ay) / (bx - ax)
        if lo <= slope <= hi:
            slopes.add(slope)
    for slope in slopes:
        # The highest line of this slope below all points touches the lowest y - slope x.
        intercept = min(y - slope * x for x, y in points)
        best = max(best, intercept + slope * mean_x)
    return best


xs_and_ys = st.lists(
    st.tuples(st.integers(1, 1_000), st.integers(-10_000, 10_000)), min_size=1, max_size=40
).map(
    # Strictly increasing x from positive steps.
    lambda steps: list(
        zip(itertools.accumulate(s for s, _ in steps), [y for _, y in steps], strict=True)
    )
)


class TestLowerEnvelope:
    @settings(max_examples=150, deadline=None)
    @given(points=xs_and_ys, window=st.integers(1, 40_000), max_points=st.integers(2, 50))
    def test_hull_after_sliding_equals_the_hull_of_the_window(
        self, points: list[tuple[int, int]], window: int, max_points: int
    ) -> None:
        env = LowerEnvelope(window, max_points)
        for x, y in points:
            env.add(x, y)
            kept = env.points()
            assert kept == [p for p in points if p[0] >= x - window and p[0] <= x][-max_points:]
            assert env.hull == brute_hull(kept)

    @settings(max_examples=150, deadline=None)
    @given(
        points=xs_and_ys,
        box=st.tuples(st.floats(-5, 5), st.floats(-5, 5)).map(sorted),
        window=st.integers(1, 40_000),
        max_points=st.integers(2, 50),
        fit_every=st.integers(1, 7),
    )
    def test_fit_is_below_every_point_and_optimal_at_the_mean(
        self,
        points: list[tuple[int, int]],
        box: list[float],
        window: int,
        max_points: int,
        fit_every: int,
    ) -> None:
        # Fits between adds exercise the lazy rebuild of the hull's left end.
        lo, hi = box
        env = LowerEnvelope(window, max_points)
        for i, (x, y) in enumerate(points):
            env.add(x, y)
            if i % fit_every == 0:
                env.fit(lo, hi)
        fit = env.fit(lo, hi)
        points = env.points()
        assert lo <= fit.slope <= hi or (len(points) == 1 and fit.slope == min(max(0.0, lo), hi))
        mean_x = sum(x for x, _ in points) / len(points)
        for x, y in points:
            assert fit.y0 + fit.slope * (x - fit.x0) <= y + 1e-6 * (1 + abs(y))
        value = fit.y0 + fit.slope * (mean_x - fit.x0)
        assert value == pytest.approx(brute_fit_value(points, lo, hi), abs=1e-6)

    def test_fit_through_two_points_is_their_line(self) -> None:
        env = LowerEnvelope(100, 10)
        env.add(0, 10)
        env.add(10, 30)
        assert env.fit(-10, 10) == Fit(10, 30, 2.0)
        assert env.fit(-1, 1) == Fit(0, 10, 1.0)  # boxed: only the left vertex supports it

    def test_rejects_points_that_do_not_move_right(self) -> None:
        env = LowerEnvelope(100, 10)
        env.add(5, 0)
        with pytest.raises(ValueError, match="x must increase: 5 after 5"):
            env.add(5, 1)

    @pytest.mark.parametrize(
        ("window", "max_points", "message"),
        [(0, 10, "window must be > 0 ns, got 0"), (10, 1, "max_points must be >= 2, got 1")],
    )
    def test_rejects_bad_limits(self, window: int, max_points: int, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            LowerEnvelope(window, max_points)
