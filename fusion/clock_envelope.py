"""The lower envelope of one-way delays over a sliding window (pure math, no I/O).

Theory of operation
-------------------
A sensor stamps a frame at sensor time ``x``; the host receives it at
``x + y``, so ``y = t_arrival - t_sensor`` is the clock offset plus a transport
delay. The offset is affine in ``x`` (a skewed clock); the delay is positive
and random. Every point therefore lies *on or above* the line
``offset(x) + min_delay``, and the points that come closest to it are the ones
that crossed the link fastest. A least-squares line goes through the middle of
the cloud instead, pulled up by every congested frame.

Following TICSync (Harrison and Newman, ICRA 2011), the estimate is the line
that lies below every point and is as high as possible on average: maximise
``sum(line(x_i))`` subject to ``line(x_i) <= y_i``. That linear program's
optimum touches the *lower convex hull* of the points; since
``sum(line(x_i)) = n * line(mean x)``, it is the hull edge above the mean
``x`` (or, when the slope is boxed in, the line of the allowed slope through
the hull vertex that supports it).

Points arrive with increasing ``x``; they live in a window (``window`` ns of
``x`` and at most ``max_points``). The hull is kept by Andrew's monotone chain,
one point at a time (amortised O(1)). When the window drops the hull's first
vertex, the rest of the chain stays exact right of its new first vertex; only
the part left of it may gain vertices from points the old vertex hid. That
part is rebuilt lazily, only when an answer needs it (the mean ``x`` or the
supporting vertex falls there, or a new point would pop the chain's first
vertex), so sliding costs O(1) per point in the usual case. Coordinates are
Python ints, so the hull tests are exact; only the slope is a float.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fit:
    """The line ``y(x) = y0 + round(slope * (x - x0))`` through hull vertex ``(x0, y0)``."""

    x0: int
    y0: int
    slope: float

    def at(self, x: int) -> int:
        """The line's value at ``x``, exactly reproducible (int arithmetic but one rounding)."""
        return self.y0 + round(self.slope * (x - self.x0))


def _turns_left(ax: int, ay: int, bx: int, by: int, cx: int, cy: int) -> bool:
    """True when ``a -> b -> c`` turns strictly counter-clockwise (b stays on the lower hull)."""
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax) > 0


class LowerEnvelope:
    """Points ``(x, y)``, ``x`` strictly increasing, in a sliding window, and their lower hull."""

    __slots__ = ("_hx", "_hy", "_pts", "_stale", "_sum_x", "max_points", "window")

    def __init__(self, window: int, max_points: int) -> None:
        if window <= 0:
            raise ValueError(f"window must be > 0 ns, got {window}")
        if max_points < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points}")
        self.window = window
        self.max_points = max_points
        self._pts: deque[tuple[int, int]] = deque()
        self._hx: list[int] = []  # hull vertices, x ascending
        self._hy: list[int] = []
        self._sum_x = 0
        self._stale = False  # the hull may lack vertices left of its first one

    def __len__(self) -> int:
        return len(self._pts)

    @property
    def first_x(self) -> int:
        return self._pts[0][0]

    @property
    def last_x(self) -> int:
        return self._pts[-1][0]

    @property
    def span(self) -> int:
        """``x`` distance from the oldest to the newest point in the window."""
        return self._pts[-1][0] - self._pts[0][0] if self._pts else 0

    @property
    def hull(self) -> list[tuple[int, int]]:
        """The lower hull's vertices, left to right (a copy)."""
        if self._stale:
            self._rebuild_left()
        return list(zip(self._hx, self._hy, strict=True))

    def points(self) -> list[tuple[int, int]]:
        """Every point in the window, oldest first (a copy)."""
        return list(self._pts)

    def add(self, x: int, y: int) -> None:
        """Add a point right of every other one, then slide the window."""
        pts = self._pts
        if pts and x <= pts[-1][0]:
            raise ValueError(f"x must increase: {x} after {pts[-1][0]}")
        pts.append((x, y))
        self._sum_x += x
        self._push_hull(x, y)
        limit = x - self.window
        if pts[0][0] < limit or len(pts) > self.max_points:
            self._slide(limit)

    def drop_before(self, x: int) -> None:
        """Forget every point left of ``x`` (the newest point always stays)."""
        self._slide(x)

    def clear(self) -> None:
        self._pts.clear()
        self._hx.clear()
        self._hy.clear()
        self._sum_x = 0
        self._stale = False

    def fit(self, lo: float, hi: float) -> Fit:
        """The LP optimum with the slope boxed in ``[lo, hi]`` (requires a point).

        Without the box the answer is the hull edge above the mean ``x``; a box
        keeps the few first points (a short span, so a wild slope) from
        extrapolating far.
        """
        hx, hy = self._hx, self._hy
        mean_x = self._sum_x / len(self._pts)
        if self._stale and (len(hx) == 1 or mean_x < hx[0]):
            self._rebuild_left()
        n = len(hx)
        if n == 1:
            return Fit(hx[0], hy[0], float(min(max(0.0, lo), hi)))
        k = min(max(bisect_right(hx, mean_x) - 1, 0), n - 2)  # edge k..k+1 spans mean x
        slope = (hy[k + 1] - hy[k]) / (hx[k + 1] - hx[k])
        if lo <= slope <= hi:
            # Anchor at the edge's end nearer the newest data (same line either way).
            return Fit(hx[k + 1], hy[k + 1], slope)
        slope = float(lo if slope < lo else hi)
        i = self._support(slope)
        if i == 0 and self._stale:
            self._rebuild_left()
            i = self._support(slope)
        return Fit(hx[i], hy[i], slope)

    def _support(self, slope: float) -> int:
        """The hull vertex where a line of ``slope`` touches from below."""
        hx, hy = self._hx, self._hy
        lo, hi = 0, len(hx) - 1
        # Edge slopes increase left to right; find the first vertex whose right edge is steeper.
        while lo < hi:
            mid = (lo + hi) // 2
            if (hy[mid + 1] - hy[mid]) < slope * (hx[mid + 1] - hx[mid]):
                lo = mid + 1
            else:
                hi = mid
        return lo

    # -- internals --------------------------------------------------------------------

    def _push_hull(self, x: int, y: int) -> None:
        hx, hy = self._hx, self._hy
        while True:
            while len(hx) >= 2 and not _turns_left(hx[-2], hy[-2], hx[-1], hy[-1], x, y):
                hx.pop()
                hy.pop()
            if len(hx) == 1 and self._stale:
                self._rebuild_left()  # the first vertex may have to go too: needs its left
                continue
            break
        hx.append(x)
        hy.append(y)

    def _slide(self, limit: int) -> None:
        pts, hx, hy = self._pts, self._hx, self._hy
        while len(pts) > 1 and (pts[0][0] < limit or len(pts) > self.max_points):
            x, _ = pts.popleft()
            self._sum_x -= x
            if x == hx[0]:
                del hx[0], hy[0]
        self._stale = pts[0][0] != hx[0]

    def _rebuild_left(self) -> None:
        """Complete the hull left of its first vertex from the window's points."""
        self._stale = False
        hx, hy = self._hx, self._hy
        tail_x, tail_y = hx[:], hy[:]
        stop = tail_x[0]
        hx.clear()
        hy.clear()
        for x, y in self._pts:
            if x >= stop:
                break
            self._push_hull(x, y)
        for x, y in zip(tail_x, tail_y, strict=True):
            self._push_hull(x, y)
