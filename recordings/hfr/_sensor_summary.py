"""Per-sensor summaries (format 1.7): what ``hyperframes info`` reports, reduced as written.

Theory of operation. ``info`` reports per sensor the ``seq`` numbers never seen,
the typical payload, segments (a restarted sender), announced gaps and the
clock fit (:mod:`hyperframes.cli._clockfit`): computed from every frame's
columns, that is seconds and gigabytes for hours of a 1 kHz IMU. The recorder
therefore reduces each sensor's rows chunk by chunk, in numpy, into what the
report needs, and writes the result in the INDEX's ``summaries`` key; ``info``
of a long file reads only that. :class:`SensorReducer` keeps, per sensor:

* the ``seq`` numbers: whether they never decrease, how many distinct, the
  last (then ``0..max`` minus the distinct ones are the ones never seen);
* payload sizes of structured arrays and bytes as a histogram (median, min,
  max exactly), plain array shapes with counts in order of first appearance;
* segment starts (``t_sensor`` back by more than :data:`SEGMENT_JUMP_NS`, or
  a frame marked ``segment_start``);
* per segment the clock fit's inputs: the frames whose arrival was measured,
  less the :data:`TAIL_FRAMES` before each segment or connection end (decided
  two rows late), less those whose ``t_sensor`` does not pass every one
  before, less early glitches (a delay :data:`EARLY_GLITCH_NS` below the
  median of its 4 neighbours on each side: decided four points late), reduced
  to the lower convex hull of ``(t_sensor, t_arrival - t_sensor)`` (exact, in
  Python ints) with the count and sum of the kept ``t_sensor``; and a
  histogram of the delays ``t_arrival - t``. When a segment ends, its skew and
  delay percentiles are computed and only the longest segment's kept.

What the full computation gives, this gives, but for two documented
approximations: the delay percentiles are exact while a segment's delays take
at most :data:`DELAY_BINS` distinct values, else read from buckets of ``2**k``
ns (the ``bin`` key gives ``k``; 8 hours of a 1 kHz IMU jittered over 2 ms: 256 ns); the
mean ``t_sensor`` that picks the hull edge is the exact integer mean, where
numpy sums floats (they differ only when the mean lands within a rounding
error of a hull vertex). A sensor the reduction cannot describe (``seq``
going back, more than :data:`MAX_SIZES` payload sizes or
:data:`MAX_STARTS` segments, a segment without measured arrivals, whose fit is
a robust slope over all its frames, or details notes over their bound) gets
the reason instead, and ``info`` computes that file's report from the footer's
columns. ``hyperframes check`` runs the same reduction over the decoded frames
and compares.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from recordings.hfr._details import OTHER, REPACED, SEGMENT

__all__ = [
    "DELAY_BINS",
    "EARLY_GLITCH_NS",
    "SEGMENT_JUMP_NS",
    "TAIL_FRAMES",
    "SensorReducer",
    "hull_candidates",
    "skew_from_hull",
]

Int64 = np.ndarray[Any, np.dtype[np.int64]]

SEGMENT_JUMP_NS = 1_000_000_000
"""``t_sensor`` going back by more than this starts a new segment (a restarted sender)."""

TAIL_FRAMES = 2
"""Frames at the end of a connection or segment left out of the skew fit (a demuxer hands
the last ones over at once when the stream ends)."""

EARLY_GLITCH_NS = 20_000_000
"""A delay this much below its neighbours' median is a glitch, not the link's floor."""

HALF = 4
"""Neighbours on each side of a delay in the glitch test."""

DELAY_BINS = 1 << 13
"""Distinct delay values (or buckets) a segment's histogram holds before its buckets double.

Small, as every buffer here, so that no temporary of the writer thread passes 128 KB:
once glibc frees a large block it raises its mmap threshold, and later blocks of that
size fragment the thread's heap (the recorder grew 11 MB an hour with 64 K bins and
1 MB buffers, 1 MB an hour like the recorder without summaries with this)."""

BUFFER_ROWS = 1 << 13
"""Delays and kept points a segment buffers before it merges them (64 KB a column)."""

MAX_SIZES = 1 << 16
"""Distinct payload sizes a sensor's histogram holds."""

MAX_STARTS = 4096
"""Segment starts a sensor's summary lists."""

BATCH_ROWS = 1024
"""Rows a sensor's reducer gathers before it reduces them at once. A 200 Hz IMU in 1 s
chunks brings 200 rows a chunk, and numpy pays per call: reduced chunk by chunk, the
small benchmark session's 1,000 chunks cost 0.75 us a frame of the writer thread. What
is reduced is the same either way: every step decides a row from its neighbours, and
the delay histogram ends at the smallest bucket width that holds its values in
:data:`DELAY_BINS`, whenever it merges (a width too small then is too small later, and
a step at most halves the buckets). A batch that may reach a reason (``seq`` going
back, near :data:`MAX_STARTS` or :data:`MAX_SIZES`) is reduced chunk by chunk, so the
reason given is the first chunk's. (The largest temporary, the glitch test's 8
neighbours a row, stays near 128 KB: see :data:`DELAY_BINS`.)"""


def hull_candidates(x: Int64, y: Int64, passes: int = 64) -> Int64:
    """Indices of the points that may be vertices of the lower convex hull of ``(x, y)``
    (``x`` strictly increasing): every vertex, and fewer points the more passes run.

    Each pass drops, all at once and in numpy, the points that lie clearly above the
    segment joining their two remaining neighbours (a point above a segment between two
    points of the set is no vertex, whatever else is dropped). The test is in float64
    with a margin far above its rounding error, so a doubtful point stays; the exact
    hull is then built over the few left. A doubtful point whose two products fit in
    int64 is decided exactly: on the segment it is no vertex either (the exact hull
    drops collinear points), so evenly spaced stamps with a constant delay, which are
    all collinear, leave two candidates instead of every point to the Python loop.
    """
    idx = np.arange(len(x))
    if not len(x):
        return idx
    fx = (x - x[0]).astype(np.float64)
    fy = (y - y.min()).astype(np.float64)
    for _ in range(passes):
        if len(fx) < 3:
            break
        one = (fx[1:-1] - fx[:-2]) * (fy[2:] - fy[:-2])  # neighbours by slicing: no gathers
        two = (fy[1:-1] - fy[:-2]) * (fx[2:] - fx[:-2])
        margin = np.abs(one)
        margin += np.abs(two)
        small = margin < _EXACT_PRODUCTS  # both products surely fit in int64
        margin *= 1e-9
        margin += 1.0
        one -= two
        above = one < -margin
        _collinear(above, one <= margin, small, x[idx], y[idx])
        if not above.any():
            break
        keep = np.ones(len(fx), bool)
        keep[1:-1] = ~above
        fx, fy, idx = fx[keep], fy[keep], idx[keep]
    return idx


_EXACT_PRODUCTS = float(1 << 61)
"""Below this float sum of the two products' magnitudes both fit in int64 with room
for the float estimate's error."""


def _collinear(above: Any, doubt: Any, small: Any, x: Int64, y: Int64) -> None:
    """Mark in ``above`` the interior points (``above[i]`` is point ``i + 1``) that
    ``doubt`` leaves open and that lie exactly on the segment joining their two
    neighbours, where ``small`` says the exact products fit in int64."""
    d = np.flatnonzero(doubt & small & ~above)
    if not len(d):
        return
    x0, x1, x2 = x[d], x[d + 1], x[d + 2]
    y0, y1, y2 = y[d], y[d + 1], y[d + 2]
    on = (x1 - x0) * (y2 - y0) - (y1 - y0) * (x2 - x0) <= 0
    above[d[on]] = True


def skew_from_hull(hull: Sequence[tuple[int, int]], mean_x: float) -> float:
    """The skew (ppm) of the lower hull's edge above ``mean_x`` (the TICSync estimate,
    :mod:`fusion._clock_envelope`), its slope boxed to [-0.5, 0.5]."""
    if len(hull) == 1:
        return 0.0
    hx = [h[0] for h in hull]
    k = min(max(bisect.bisect_right(hx, mean_x) - 1, 0), len(hull) - 2)
    (ax, ay), (bx, by) = hull[k], hull[k + 1]
    slope = min(max((by - ay) / (bx - ax), -0.5), 0.5)  # LowerEnvelope.fit(-0.5, 0.5)'s box
    return float((1 / (1 + slope) - 1) * 1e6)


def _percentile(keys: Int64, counts: Int64, shift: int, q: float) -> float:
    """``np.percentile(values, q)`` (linear) of the values a histogram holds: exact when
    ``shift`` is 0, else each value placed evenly inside its ``2**shift`` ns bucket."""
    cum = np.cumsum(counts)
    n = int(cum[-1])
    virtual = (n - 1) * (q / 100)
    lo = math.floor(virtual)
    hi = min(lo + 1, n - 1)
    gamma = virtual - lo

    def order_stat(r: int) -> float:
        b = int(np.searchsorted(cum, r, side="right"))
        if shift == 0:
            return float(keys[b])
        before = int(cum[b] - counts[b])
        width = 1 << shift
        return float((int(keys[b]) << shift) + (r - before + 0.5) * width / int(counts[b]))

    a, b = order_stat(lo), order_stat(hi)
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1 - gamma)
    return a + diff * gamma


class _Segment:
    """The clock fit's inputs of one segment, reduced."""

    __slots__ = (
        "any_delay",
        "buffered",
        "buffered_rows",
        "ctx",
        "hist",
        "hull",
        "kept",
        "measured",
        "pend_x",
        "pend_y",
        "points",
        "points_rows",
        "rows",
        "runmax",
        "shift",
        "sum_dx",
        "ts_max",
        "ts_min",
        "x0",
    )

    def __init__(self) -> None:
        self.rows = 0
        self.measured = 0
        self.runmax: int | None = None
        self.ctx = np.empty(0, np.float64)  # the last <= HALF decided ahead delays
        self.pend_x = np.empty(0, np.int64)
        self.pend_y = np.empty(0, np.int64)
        self.hull: list[tuple[int, int]] = []
        self.kept = 0
        self.x0 = 0
        self.sum_dx = 0
        self.hist = (np.empty(0, np.int64), np.empty(0, np.int64))
        self.buffered: list[Int64] = []
        self.buffered_rows = 0
        self.points: list[tuple[Int64, Int64]] = []  # kept points not in the hull yet
        self.points_rows = 0
        self.shift = 0
        self.any_delay = False
        self.ts_min: int | None = None
        self.ts_max: int | None = None

    def feed(self, ts: Int64, t: Int64, arrival: Int64, measured: np.ndarray[Any, Any]) -> None:
        if not len(ts):
            return
        self.rows += len(ts)
        lo, hi = int(ts.min()), int(ts.max())
        self.ts_min = lo if self.ts_min is None else min(self.ts_min, lo)
        self.ts_max = hi if self.ts_max is None else max(self.ts_max, hi)
        delay = arrival - t
        if not self.any_delay and bool(np.any(delay != 0)):
            self.any_delay = True
        self.buffered.append(delay)
        self.buffered_rows += len(delay)
        if self.buffered_rows > BUFFER_ROWS:
            self._merge()
        x = ts[measured]
        if not len(x):
            return
        self.measured += len(x)
        first = np.iinfo(np.int64).min if self.runmax is None else self.runmax
        before = np.maximum.accumulate(np.concatenate([[first], x[:-1]]))
        ahead = x > before
        self.runmax = max(first, int(x.max()))
        xs = x[ahead]
        ys = arrival[measured][ahead] - xs
        self.pend_x = np.concatenate([self.pend_x, xs])
        self.pend_y = np.concatenate([self.pend_y, ys])
        self._decide(final=False)

    def _decide(self, final: bool) -> None:
        """Keep or drop each pending point whose neighbours are all known (every one when
        ``final``): dropped when below its neighbours' median by EARLY_GLITCH_NS."""
        a = np.concatenate([self.ctx, self.pend_y.astype(np.float64)])
        start = len(self.ctx)
        stop = len(a) if final else len(a) - HALF
        if stop <= start:
            return
        decided = stop - start
        keep: Any = slice(None)  # every one, unless some delay is EARLY_GLITCH_NS below another
        if a.min() < a.max() - EARLY_GLITCH_NS:  # else no neighbours' top is that far above
            keep = self._glitch_free(a, start, stop)
        xs, ys = self.pend_x[:decided][keep], self.pend_y[:decided][keep]
        self._add_points(xs, ys)
        self.ctx = a[max(0, stop - HALF) : stop]
        self.pend_x, self.pend_y = self.pend_x[decided:], self.pend_y[decided:]

    @staticmethod
    def _glitch_free(a: np.ndarray[Any, Any], start: int, stop: int) -> np.ndarray[Any, Any]:
        """Which of ``a[start:stop]`` are not below their neighbours' median by
        EARLY_GLITCH_NS (``a`` holds up to HALF neighbours on each side)."""
        pos = np.arange(start, stop)
        offsets = np.array([*range(-HALF, 0), *range(1, HALF + 1)])
        idx = pos[:, None] + offsets
        valid = (idx >= 0) & (idx < len(a))
        vals = a[np.clip(idx, 0, len(a) - 1)]
        y = a[pos]
        top = np.where(valid, vals, -np.inf).max(axis=1)
        keep = np.ones(len(pos), bool)
        suspects = np.flatnonzero(y < top - EARLY_GLITCH_NS)
        for i in suspects.tolist():
            neighbours = vals[i][valid[i]]
            keep[i] = not (y[i] < np.median(neighbours) - EARLY_GLITCH_NS)
        return keep

    def _add_points(self, xs: Int64, ys: Int64) -> None:
        if not len(xs):
            return
        if not self.kept:
            self.x0 = int(xs[0])
        self.kept += len(xs)
        self.sum_dx += int((xs - self.x0).sum())
        self.points.append((xs, ys))
        self.points_rows += len(xs)
        if self.points_rows >= BUFFER_ROWS:  # numpy's passes pay per call: batched
            self._hull()

    def _hull(self) -> None:
        """The buffered points into the hull (exact: Andrew's monotone chain in ints over
        the candidates, which follow every point already in it)."""
        if not self.points:
            return
        xs = np.concatenate([p[0] for p in self.points])
        ys = np.concatenate([p[1] for p in self.points])
        self.points, self.points_rows = [], 0
        cand = hull_candidates(xs, ys)
        hull = self.hull
        for px, py in zip(xs[cand].tolist(), ys[cand].tolist(), strict=True):
            while len(hull) >= 2:
                (ax, ay), (bx, by) = hull[-2], hull[-1]
                if (bx - ax) * (py - ay) - (by - ay) * (px - ax) > 0:
                    break
                hull.pop()
            hull.append((px, py))

    def _merge(self) -> None:
        keys, counts = self.hist  # sorted, each key once
        if self.buffered:
            new = np.concatenate(self.buffered) >> self.shift
            self.buffered, self.buffered_rows = [], 0
            # The new keys' counts merged into the sorted histogram: np.unique of both
            # joined made nine allocations over 128 KiB a merge (the writer thread's).
            nk, nc = np.unique(new, return_counts=True)
            at = np.asarray(np.searchsorted(keys, nk))
            hit: np.ndarray[Any, Any] = at < len(keys)
            hit[hit] = keys[at[hit]] == nk[hit]
            counts = counts.copy()
            counts[at[hit]] += nc[hit]
            miss = ~hit
            keys = np.insert(keys, at[miss], nk[miss])
            counts = np.insert(counts, at[miss], nc[miss])
        while len(keys) > DELAY_BINS:
            grow = max(1, math.ceil(math.log2(len(keys) / DELAY_BINS)))
            self.shift += grow
            u, inv = np.unique(keys >> grow, return_inverse=True)
            c = np.zeros(len(u), np.int64)
            np.add.at(c, inv, counts)
            keys, counts = u, c
        self.hist = (keys, counts)

    def result(self) -> tuple[dict[str, Any], str | None]:
        """The fit of this segment (``clock_fit``'s keys but the offset) and why it
        cannot be given from the reduction (a robust slope over all its frames)."""
        self._decide(final=True)
        self._hull()
        fit: dict[str, Any] = {}
        why = None
        if self.measured >= 3 and self.kept >= 3:
            fit["skew_ppm"] = skew_from_hull(self.hull, self.sum_dx / self.kept + self.x0)
        elif self.rows > 2 and self.ts_min != self.ts_max:
            why = "a segment has too few measured arrivals (its fit needs every frame)"
        self._merge()
        if self.any_delay:
            keys, counts = self.hist
            fit["delay_ms_p50"] = _percentile(keys, counts, self.shift, 50) / 1e6
            fit["delay_ms_p99"] = _percentile(keys, counts, self.shift, 99) / 1e6
        return fit, why


class SensorReducer:
    """One sensor's rows, chunk by chunk, reduced to its ``info`` report (see the module)."""

    def __init__(self) -> None:
        self.rows = 0
        self.why: str | None = None
        self._seq_last: int | None = None
        self._distinct = 0
        self._sizes: dict[int, int] = {}
        self._shapes: dict[tuple[int, ...], int] = {}
        self._starts: list[int] = []
        self._ts_last: int | None = None
        self._offset0: int | None = None
        self._held: tuple[Int64, Int64, Int64, np.ndarray[Any, Any]] | None = None
        self._held_base = 0  # absolute row of the first held row
        self._pending_starts: list[int] = []
        self._seg = _Segment()
        self._seg_index = 0
        self._best: tuple[int, int, dict[str, Any], str | None] | None = None
        self._bin = 0
        self._batch: list[tuple[Any, ...]] = []  # chunks' rows gathered (BATCH_ROWS)
        self._batch_rows = 0

    def add(
        self,
        seq: Int64,
        t: Int64,
        offset: Int64,
        arrival: Int64,
        has: np.ndarray[Any, Any],
        flags: np.ndarray[Any, Any],
        size: Int64,
        shapes: Sequence[tuple[int, ...]],
        shape: np.ndarray[Any, Any],
        conn: Sequence[int],
    ) -> None:
        """The sensor's next rows in recorded order: ``offset`` is ``t_sensor - t``,
        ``arrival`` is ``t`` where ``has`` is 0; ``size`` as the DETAILS column's before
        shape numbering (plain arrays: ``shapes[shape[i]]``); ``conn`` the absolute rows
        whose connection differs from the row before. Reduced once :data:`BATCH_ROWS`
        are gathered, or at :meth:`finish`."""
        if self.why is not None:
            self.rows += len(t)
        elif len(t):
            self._batch.append((seq, t, offset, arrival, has, flags, size, shapes, shape, conn))
            self._batch_rows += len(t)
            if self._batch_rows >= BATCH_ROWS:
                self._drain()

    def _drain(self) -> None:
        """The gathered chunks' rows into the reduction, at once where that gives the same."""
        batch, self._batch, self._batch_rows = self._batch, [], 0
        if len(batch) < 2:
            for piece in batch:
                self._add_rows(*piece)
            return
        rows = sum(len(p[1]) for p in batch)
        seq, t, offset, arrival, has, flags, size = (
            np.concatenate([p[i] for p in batch]) for i in range(7)
        )
        last = self._seq_last
        if (
            len(self._starts) + rows > MAX_STARTS
            or len(self._sizes) + rows > MAX_SIZES
            or (last is not None and int(seq[0]) < last)
            or bool(np.any(seq[1:] < seq[:-1]))
        ):
            for piece in batch:  # a reason may be reached: the first chunk's, as ever
                self._add_rows(*piece)
            return
        shapes: list[tuple[int, ...]] = list(batch[0][7])
        if all(p[7] == batch[0][7] for p in batch):
            shape = np.concatenate([p[8] for p in batch])
        else:  # each chunk numbers its own shapes: renumbered into one list
            numbers = {tuple(s): i for i, s in enumerate(shapes)}
            parts = []
            for p in batch:
                ids = np.array([numbers.setdefault(tuple(s), len(numbers)) for s in p[7]])
                part = np.zeros(len(p[8]), np.int64)
                plain = p[6] < OTHER
                part[plain] = ids[p[8][plain]]
                parts.append(part)
            shape = np.concatenate(parts)
            shapes = list(numbers)
        conn = [c for p in batch for c in p[9]]
        self._add_rows(seq, t, offset, arrival, has, flags, size, shapes, shape, conn)

    def _add_rows(
        self,
        seq: Int64,
        t: Int64,
        offset: Int64,
        arrival: Int64,
        has: np.ndarray[Any, Any],
        flags: np.ndarray[Any, Any],
        size: Int64,
        shapes: Sequence[tuple[int, ...]],
        shape: np.ndarray[Any, Any],
        conn: Sequence[int],
    ) -> None:
        """:meth:`add` of these rows, now."""
        m = len(t)
        if not m or self.why is not None:
            self.rows += m
            return
        base = self.rows
        self.rows += m
        ts = t + offset
        if self._offset0 is None:
            self._offset0 = int(-offset[0])
        self._seqs(seq)
        self._payload(size, shapes, shape)
        prev = ts[0] if self._ts_last is None else self._ts_last
        before = np.concatenate([[prev], ts[:-1]])
        jump = np.flatnonzero(ts < before - SEGMENT_JUMP_NS)
        marked = np.flatnonzero(flags & SEGMENT)
        starts = sorted({int(i) + base for i in (*jump.tolist(), *marked.tolist())} - {0})
        self._ts_last = int(ts[-1])
        self._starts += starts
        if len(self._starts) > MAX_STARTS:
            self.why = f"over {MAX_STARTS} segments"
            return
        measured = np.asarray(has, bool) & ((np.asarray(flags) & REPACED) == 0)
        # the rows held back (the last TAIL_FRAMES) and these, from absolute row h0
        if self._held is not None:
            hts, ht, harr, hmeas = self._held
            ts = np.concatenate([hts, ts])
            t = np.concatenate([ht, t])
            arrival = np.concatenate([harr, arrival])
            measured = np.concatenate([hmeas, measured])
        h0 = base - (0 if self._held is None else len(self._held[0]))
        for end in {*starts, *conn}:
            measured[max(0, end - TAIL_FRAMES - h0) : max(0, end - h0)] = False
        self._pending_starts += starts
        done = len(ts) - TAIL_FRAMES
        self._flush(ts, t, arrival, measured, h0, max(0, done))
        rest = slice(max(0, done), None)
        self._held = (ts[rest], t[rest], arrival[rest], measured[rest])

    def _flush(self, ts: Int64, t: Int64, arrival: Int64, meas: Any, h0: int, done: int) -> None:
        """Rows ``[0, done)`` (absolute ``h0 + i``) are final: into their segments."""
        lo = 0
        while self._pending_starts and self._pending_starts[0] < h0 + done:
            s = self._pending_starts.pop(0) - h0
            self._seg.feed(ts[lo:s], t[lo:s], arrival[lo:s], meas[lo:s])
            self._close_segment()
            lo = s
        self._seg.feed(ts[lo:done], t[lo:done], arrival[lo:done], meas[lo:done])

    def _close_segment(self) -> None:
        seg = self._seg
        fit, why = seg.result()
        self._bin = max(self._bin, seg.shift)
        if self._best is None or seg.rows > self._best[0]:
            self._best = (seg.rows, self._seg_index, fit, why)
        self._seg = _Segment()
        self._seg_index += 1

    def _seqs(self, seq: Int64) -> None:
        last = self._seq_last
        if (last is not None and int(seq[0]) < last) or bool(np.any(seq[1:] < seq[:-1])):
            self.why = "its seq numbers go back"
            return
        self._distinct += int(np.count_nonzero(seq[1:] != seq[:-1]))
        self._distinct += 1 if last is None or int(seq[0]) != last else 0
        self._seq_last = int(seq[-1])

    def _payload(self, size: Int64, shapes: Sequence[tuple[int, ...]], shape: Any) -> None:
        counted = size[size >= 0]
        if len(counted):
            u, c = np.unique(counted, return_counts=True)
            for v, k in zip(u.tolist(), c.tolist(), strict=True):
                self._sizes[v] = self._sizes.get(v, 0) + k
            if len(self._sizes) > MAX_SIZES:
                self.why = f"over {MAX_SIZES} payload sizes"
        plain = shape[size < OTHER]
        if len(plain):
            n = np.bincount(plain)  # shape numbers of this chunk: small ints
            used = np.flatnonzero(n)
            first = [int(np.argmax(plain == i)) for i in used.tolist()]
            for k in np.argsort(first, kind="stable").tolist():
                key = tuple(shapes[int(used[k])])
                self._shapes[key] = self._shapes.get(key, 0) + int(n[used[k]])

    def finish(self, gaps: Sequence[int]) -> dict[str, Any] | str:
        """The summary (its wire form: ``recordings/hfr/FORMAT.md``), or why there is none."""
        self._drain()
        if self.why is not None:
            return self.why
        if not self.rows:
            return "no frames"
        if self._held is not None:
            hts, ht, harr, hmeas = self._held
            hmeas = hmeas.copy()
            hmeas[max(0, len(hts) - TAIL_FRAMES) :] = False  # the end of the recording
            self._flush(hts, ht, harr, hmeas, self._held_base_of(len(hts)), len(hts))
            self._held = None
        self._close_segment()
        assert self._best is not None
        _, k, fit, why = self._best
        if why is not None:
            return why
        assert self._seq_last is not None
        assert self._offset0 is not None
        sizes = sorted(self._sizes.items())
        payload: dict[str, Any] = {"shapes": [[list(s), n] for s, n in self._shapes.items()]}
        if sizes:
            payload.update(median=_median(sizes), min=sizes[0][0], max=sizes[-1][0])
        out: dict[str, Any] = {
            "n": self.rows,
            "dropped": self._seq_last + 1 - self._distinct,
            "segments": 1 + len(self._starts),
            "gaps": [int(g) for g in gaps],
            "offset": self._offset0,
            "payload": payload,
            "fit": fit,
            "bin": self._bin,
        }
        if self._starts:
            out["skew_segment"] = k
        return out

    def _held_base_of(self, held: int) -> int:
        return self.rows - held


def _median(sizes: list[tuple[int, int]]) -> int:
    """``int(np.median(values))`` of the values ``[(value, count), ...]`` (sorted) hold."""
    values = np.array([v for v, _ in sizes], np.int64)
    cum = np.cumsum([c for _, c in sizes])
    n = int(cum[-1])

    def at(r: int) -> int:
        return int(values[int(np.searchsorted(cum, r, side="right"))])

    if n % 2:
        return at(n // 2)
    return int((float(at(n // 2 - 1)) + float(at(n // 2))) / 2)
