"""The compiled merge kernel behind :func:`~fusion.policies.group_columns` for ``Nearest``.

Why compiled: the numpy form (:mod:`fusion.policies._columnar`) finds each
reference's neighbours with ``searchsorted``, a binary search per reference
over a whole column (cache misses at every level), then gathers, masks and
resolves the references that share frames in a Python loop. Offline every
column is sorted, so merging does it: the references in order, and per other
sensor a pointer that only moves forward, each column read once front to back.

Two steps, each a compiled loop:

1. **One pass per sensor** (``_matched_pass``, ``_window_pass``), the
   decision of the policy for a reference no earlier group took anything
   from: a matched sensor's pointer moves to its first frame at or after the
   reference ``r``, and the nearest of it and the one before (the earlier
   wins a tie) is offered if within tolerance; a window sensor's two pointers
   move to its first frame at or after ``r - before`` and its first after
   ``r + after``. The pointers stride over a fast sensor's frames eight at a
   time and count the last few without a branch per frame.
2. **The cuts** (``_resolve``), one pass over the references with every
   sensor: the definition in :mod:`fusion.policies._columnar`. Where a
   sensor's offer is at or before its cut (an earlier group took it) the
   offer moves to the first frame after the cut, which is then the nearest
   left (no offer stays none: the frames left are no nearer); a window
   starts after the cut. A group is written when every
   required sensor offers something, and the cuts move to what it took. So
   references that share frames need no separate treatment, and nothing runs
   in Python per frame.

Stamp arithmetic never wraps, as in the numpy form: a distance between two
stamps is taken only where it is non-negative, in uint64 (exact up to
``2**64 - 1``), a window bound saturates at the int64 range (computed on the
order-preserving unsigned key ``t - MIN``), and tolerances and windows
arrive clamped to ``2**64 - 1``, which every distance is within.

This module imports numba; :mod:`fusion.policies._columnar` imports it only
when the kernel is wanted (``import fusion`` stays light). The compiled code
is cached on disk next to this module when that is writable, so a later
process loads it (~0.16 s of CPU, after numba's own ~0.33 s import) instead
of compiling it (~3 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numba
import numpy as np

from fusion.policies._nearest_native import (
    Unsorted,
    limits,
    references_alone,
    scratch,
    trimmed,
)

__all__ = ["Unsorted", "loaded", "nearest_groups"]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_SPAN = (1 << 64) - 1
_SIGN = np.uint64(1 << 63)
_TOP_KEY = np.uint64(_SPAN)
_T_MIN = np.int64(-(1 << 63))
_T_MAX = np.int64((1 << 63) - 1)
# Module-level functions and constants, not a closure: numba keys its disk
# cache on a closure's cell contents, and a cell holding another compiled
# function never matches, so every process would compile again.
_jit = numba.njit(nogil=True, cache=True, boundscheck=False)
_used = False


@_jit
def _first_unsorted(col: Any) -> int:  # pragma: no cover - compiled
    n = len(col)
    start = 1
    while start < n:  # in blocks, so the comparisons vectorise
        stop = min(start + 4096, n)
        here = col[start:stop]
        prev = col[start - 1 : stop - 1]
        bad = 0
        for i in range(stop - start):
            bad += here[i] <= prev[i]
        if bad:
            for i in range(stop - start):
                if here[i] <= prev[i]:
                    return start + i
        start = stop
    return -1


@_jit
def _below(col: Any, i: int, b: Any) -> int:  # pragma: no cover - compiled
    """The first index from ``i`` whose stamp is at or after ``b``."""
    n = len(col)
    # A data-dependent loop exit per frame costs a misprediction per
    # reference; striding, then counting the last few, costs one.
    while i + 8 < n and col[i + 7] < b:
        i += 8
    if i + 8 <= n:
        c = 0
        for q in range(8):
            c += col[i + q] < b
        return i + c
    while i < n and col[i] < b:
        i += 1
    return i


@_jit
def _through(col: Any, i: int, b: Any) -> int:  # pragma: no cover - compiled
    """The first index from ``i`` whose stamp is after ``b``."""
    n = len(col)
    while i + 8 < n and col[i + 7] <= b:
        i += 8
    if i + 8 <= n:
        c = 0
        for q in range(8):
            c += col[i + q] <= b
        return i + c
    while i < n and col[i] <= b:
        i += 1
    return i


@_jit
def _matched_pass(refs: Any, col: Any, tol: Any, out: Any) -> None:  # pragma: no cover
    """``out[k]``: the frame nearest ``refs[k]`` if within ``tol``, else -1."""
    n = len(col)
    if n == 0:
        out[:] = -1
        return
    i = 0
    for k in range(len(refs)):
        r = refs[k]
        i = _below(col, i, r)
        if i == 0:
            c = 0
            d = np.uint64(col[0]) - np.uint64(r)
        else:
            c = i - 1
            d = np.uint64(r) - np.uint64(col[i - 1])
            if i < n:
                d_next = np.uint64(col[i]) - np.uint64(r)
                c = i if d_next < d else c  # the earlier wins a tie
                d = d_next if d_next < d else d
        out[k] = c if d <= tol else -1


@_jit
def _window_pass(  # pragma: no cover - compiled
    refs: Any, col: Any, before: Any, after: Any, lo: Any, hi: Any
) -> None:
    """``lo[k]``/``hi[k]``: the frames in ``[refs[k] - before, refs[k] + after]``."""
    i = 0
    h = 0
    for k in range(len(refs)):
        r = refs[k]
        key = np.uint64(r) ^ _SIGN  # r - MIN, exact
        low = _T_MIN if before >= key else np.int64((key - before) ^ _SIGN)
        high = _T_MAX if after >= _TOP_KEY - key else np.int64((key + after) ^ _SIGN)
        i = _below(col, i, low)
        h = _through(col, max(h, i), high)
        lo[k] = i
        hi[k] = h


@_jit
def _resolve(  # pragma: no cover - compiled
    refs: Any,
    cols: Any,
    required: Any,
    tol: Any,
    pick: Any,
    lo: Any,
    hi: Any,
    out_t: Any,
    out_ref: Any,
) -> int:
    """The cuts, in order; the groups written in place (row ``g`` from reference ``k >= g``)."""
    n_m = len(pick)
    n_w = len(lo)
    cut = np.full(n_m + n_w, -1, np.int64)  # matched sensors first, as in ``cols``
    took = np.empty(n_m + n_w, np.int64)  # the last frame the group takes, -1: none
    start = np.empty(max(n_w, 1), np.int64)
    g = 0
    for k in range(len(refs)):
        complete = True
        for j in range(n_m):
            c = pick[j, k]
            first = cut[j] + 1
            if c < 0:  # nothing within tolerance, so nothing after the cut either
                c = -1
            elif c < first:  # the nearest was taken: the first frame left is at or after r
                col = cols[j]
                c = -1
                if first < len(col) and np.uint64(col[first]) - np.uint64(refs[k]) <= tol[j]:
                    c = first
            took[j] = c
            if c < 0 and required[j]:
                complete = False
        for w in range(n_w):
            s = max(lo[w, k], cut[n_m + w] + 1)
            start[w] = s
            took[n_m + w] = hi[w, k] - 1 if s < hi[w, k] else -1
            if s >= hi[w, k] and required[n_m + w]:
                complete = False
        if complete:
            out_t[g] = refs[k]
            out_ref[g] = k
            for j in range(n_m):
                pick[j, g] = took[j]
            for w in range(n_w):
                hi[w, g] = max(hi[w, k], start[w])
                lo[w, g] = start[w]
            for j in range(n_m + n_w):
                if took[j] >= 0:
                    cut[j] = took[j]
            g += 1
    return g


@_jit
def _nearest_columns(  # pragma: no cover - compiled
    refs: Any,
    cols: Any,
    required: Any,
    tol: Any,
    before: Any,
    after: Any,
    pick: Any,
    lo: Any,
    hi: Any,
    out_t: Any,
    out_ref: Any,
    unsorted: Any,
) -> int:
    """The whole computation, one entry (so one cached library to load):
    the columns checked (``unsorted[0]`` the references, ``[1 + j]``
    column ``j``; -1 returned if any is set), each sensor's pass, the cuts."""
    unsorted[0] = _first_unsorted(refs) >= 0
    for j in range(len(cols)):
        unsorted[1 + j] = _first_unsorted(cols[j]) >= 0
    for j in range(len(unsorted)):
        if unsorted[j]:
            return -1
    n_m = len(pick)
    for j in range(len(cols)):
        if j < n_m:
            _matched_pass(refs, cols[j], tol[j], pick[j])
        else:
            _window_pass(refs, cols[j], before[j], after[j], lo[j - n_m], hi[j - n_m])
    return _resolve(refs, cols, required, tol, pick, lo, hi, out_t, out_ref)


def loaded() -> bool:
    """Whether the kernel has run in this process (its machine code compiled or read)."""
    return _used


def _frozen(a: Int64) -> Int64:
    """A read-only C-contiguous view, so every column has one numba type."""
    v = np.ascontiguousarray(a, np.int64).view()
    v.flags.writeable = False
    return v


def nearest_groups(
    refs: Int64,
    matched: Sequence[tuple[Int64, int, bool]],
    windows: Sequence[tuple[Int64, int, int, bool]],
) -> tuple[Int64, Int64, list[Int64], list[tuple[Int64, Int64]]]:
    """The complete groups of ``Nearest`` over strictly increasing stamp columns.

    ``matched``: ``(column, tolerance, required)`` per matched sensor;
    ``windows``: ``(column, before, after, required)`` per window sensor;
    tolerances and windows are non-negative ints of any size. Returns the
    groups' times, their reference indices, per matched sensor the picked
    index (-1: missing) and per window sensor the ``[lo, hi)`` ranges (empty
    where missing), each with a row per complete group, in the order given.
    Raises :class:`Unsorted` for columns that are not strictly increasing.
    """
    refs = _frozen(refs)
    m = len(refs)
    n_m, n_w = len(matched), len(windows)
    if n_m + n_w == 0:
        return references_alone(refs)
    cols = tuple(_frozen(c) for c in [x[0] for x in matched] + [x[0] for x in windows])
    tol, before, after, required = limits(matched, windows)
    # A row per sensor, filled by its pass, then compacted in place by the
    # resolution (group g is written from reference k >= g, already read).
    pick, lo, hi, out_t, out_ref = scratch(n_m, n_w, m)
    unsorted = np.zeros(1 + n_m + n_w, bool)
    global _used
    _used = True
    g = int(
        _nearest_columns(
            refs, cols, required, tol, before, after, pick, lo, hi, out_t, out_ref, unsorted
        )
    )
    if g < 0:
        raise Unsorted(np.flatnonzero(unsorted).tolist())
    return trimmed(g, pick, lo, hi, out_t, out_ref)
