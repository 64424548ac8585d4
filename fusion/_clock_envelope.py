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
vertex). Coordinates are Python ints, so the hull tests are exact; only the
slope is a float.

The rebuild costs O(hull), not O(window), so the cost per point is flat in
the sample rate (a 1 kHz sensor holds 10x the points of a 100 Hz one). The
window is kept as a queue made of two stacks, the way a queue with a
``min`` is: the *back* (points added since the last hand-over) has its lower
hull kept by the monotone chain; the *front* (older points) has the lower
hull of what is left of it, built once per hand-over by adding its points
right to left, with each addition's popped vertices logged so that removing
the oldest point undoes its addition exactly. When the front runs out, the
back's points become the new front (O(points) once per window's worth of
points: amortised O(1)). The hull of the whole window is the front's and the
back's joined by their lower common tangent, found by walking the two chains
(O(hull), a handful of vertices).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from typing import NamedTuple

from fusion.errors import ConfigError


class Fit(NamedTuple):
    """The line ``y(x) = y0 + round(slope * (x - x0))`` through hull vertex ``(x0, y0)``.

    A tuple rather than a frozen dataclass: one is made per observed frame, and a
    frozen dataclass costs a microsecond to build."""

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

    __slots__ = (
        "_back",
        "_fhull",
        "_fpos",
        "_front",
        "_hx",
        "_hy",
        "_pts",
        "_stale",
        "_sum_x",
        "_undo",
        "max_points",
        "window",
    )

    def __init__(self, window: int, max_points: int) -> None:
        if window <= 0:
            raise ConfigError(f"window must be > 0 ns, got {window}")
        if max_points < 2:
            raise ConfigError(f"max_points must be >= 2, got {max_points}")
        self.window = window
        self.max_points = max_points
        self._pts: deque[tuple[int, int]] = deque()
        self._hx: list[int] = []  # hull vertices, x ascending
        self._hy: list[int] = []
        self._sum_x = 0
        self._stale = False  # the hull may lack vertices left of its first one
        # The two-stack queue (see the module docstring): the back's lower hull, left to right;
        # the front's points, the next to leave at _fpos, the lower hull of _front[_fpos:]
        # with its leftmost vertex last, and per front point the vertices its addition popped.
        self._back: list[tuple[int, int]] = []
        self._front: list[tuple[int, int]] = []
        self._fpos = 0
        self._fhull: list[tuple[int, int]] = []
        self._undo: list[list[tuple[int, int]]] = []

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
        back = self._back  # the same chain as _push_hull's, inlined: it runs once per point
        while len(back) >= 2:
            (ax, ay), (bx, by) = back[-2], back[-1]
            if (bx - ax) * (y - ay) - (by - ay) * (x - ax) > 0:
                break
            back.pop()
        back.append((x, y))
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
        self._back.clear()
        self._front, self._fpos = [], 0
        self._fhull.clear()
        self._undo = []

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
        max_points = self.max_points
        while len(pts) > 1 and (pts[0][0] < limit or len(pts) > max_points):
            j = self._fpos
            if j == len(self._front):
                self._hand_over()
                j = 0
            # Undo the oldest front point's addition to the front's hull (it is the
            # hull's leftmost vertex, added last): restore what it popped.
            self._fpos = j + 1
            fhull = self._fhull
            fhull.pop()
            popped = self._undo[j]
            if popped:
                fhull.extend(reversed(popped))
                self._undo[j] = []
            x, _ = pts.popleft()
            self._sum_x -= x
            if x == hx[0]:
                del hx[0], hy[0]
        self._stale = pts[0][0] != hx[0]

    def _hand_over(self) -> None:
        """The front ran out: every point in the window becomes the front, the back is empty."""
        front = list(self._pts)
        fhull: list[tuple[int, int]] = []
        undo: list[list[tuple[int, int]]] = [[] for _ in front]
        for j in range(len(front) - 1, -1, -1):
            px, py = front[j]
            popped = undo[j]
            # Adding on the left: a = fhull[-1] stays iff p -> a -> b turns left.
            while len(fhull) >= 2 and not _turns_left(px, py, *fhull[-1], *fhull[-2]):
                popped.append(fhull.pop())
            fhull.append((px, py))
        self._front, self._fpos, self._fhull, self._undo = front, 0, fhull, undo
        self._back = []

    def _rebuild_left(self) -> None:
        """The exact hull of the window: the front's and the back's, bridged. O(hull)."""
        self._stale = False
        front = self._fhull[::-1]  # left to right
        back = self._back
        if not front:
            joined = back
        elif not back:
            joined = front
        else:
            i, j = len(front) - 1, 0
            moved = True
            while moved:  # walk both chains down to their lower common tangent
                moved = False
                while i > 0 and not _turns_left(*front[i - 1], *front[i], *back[j]):
                    i -= 1
                    moved = True
                while j < len(back) - 1 and not _turns_left(*front[i], *back[j], *back[j + 1]):
                    j += 1
                    moved = True
            joined = front[: i + 1] + back[j:]
        self._hx[:] = [x for x, _ in joined]
        self._hy[:] = [y for _, y in joined]
