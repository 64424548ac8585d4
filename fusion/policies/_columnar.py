"""The groups of ``ExactTime`` and ``Nearest``, computed at once from stamp columns.

Theory of operation
-------------------
Offline, every stamp is known before the first group is formed, so the
streaming policies' waiting (is this group certain yet?) is unnecessary; what
remains is arithmetic on sorted arrays. :func:`group_columns` takes a policy
object as the specification (its sensors, reference, tolerances, windows,
optional sensors) and each sensor's stamps in recorded order, and returns
the groups as index columns (:class:`GroupColumns`), exactly those the
policy's ``push``/``drain`` give on the same stamps.

Admission is per sensor, as ``push`` does it: a stamp not after the
sensor's latest is dropped as ``out_of_order``, so the admitted stamps of a
sensor are strictly increasing and can be searched.

**ExactTime.** A group per distinct admitted ``t`` whose sensors with a frame
at ``t`` include every required one. The streaming policy gives these groups
for frames fed in time order (any ``queue_size``), or in any order when its
``queue_size`` never overflows.

**Nearest.** References are resolved in order; each sensor keeps a *cut*,
the last frame a group took (frames up to it are used or dropped). For a
reference at ``r``, a matched sensor offers its frame nearest ``r`` among
those after the cut (the earlier wins a tie) if within tolerance; a window
sensor its frames after the cut in ``[r - before, r + after]``. The group is
emitted if every required sensor offers something, and only then do the
cuts advance. This is what ``Nearest.push`` decides once a group is certain,
whatever the arrival interleaving, as long as its ``max_buffer`` never
overflows and ``expire`` is not called (neither exists offline).

The cuts make the decisions sequential, but only where two references can
reach the same frame. With ``lo[k]``/``hi[k]`` the index range of frames
within reach of reference ``k`` (monotone in ``k``), reference ``k`` is
*independent* when ``hi[k - 1] <= lo[k]`` for every sensor: no earlier group
can have taken a frame it could use, so its decision is the plain nearest
or window search, done for all such references with ``searchsorted``
(one search per matched sensor: two references further apart than twice its
tolerance cannot share a frame, so only closer pairs search their overlap). The
references that do share frames with a neighbour (a tolerance wider than half
the reference period, a sensor slower than the reference, windows that
touch) form runs, each resolved by a short loop over its references, starting
from an independent one. ``ApproximateTime`` has no such form: its choice of
a set depends on the whole history of the queues, so it stays streaming.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from fusion.policies._approximate import ApproximateTime
from fusion.policies._base import SyncPolicy
from fusion.policies._exact import ExactTime
from fusion.policies._nearest import Nearest

__all__ = ["GroupColumns", "admitted", "group_columns"]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_MIN = np.iinfo(np.int64).min
_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True, slots=True)
class GroupColumns:
    """Groups as columns: row ``i`` of every array describes group ``i``.

    Indices point into each sensor's *admitted* stamps (see :func:`admitted`).
    """

    sensors: tuple[str, ...]
    """Every sensor of the policy, in its order."""
    t: Int64
    """Each group's time (the reference frame's ``t``, or the shared stamp)."""
    picks: Mapping[str, Int64]
    """Single-frame sensors (the reference, matched sensors, every ExactTime
    sensor): the index of the frame in the group, -1 where missing."""
    spans: Mapping[str, tuple[Int64, Int64]] = field(default_factory=dict)
    """Window sensors: ``[lo, hi)`` index range of the group's frames (empty
    where missing)."""
    dropped_groups: int = 0
    """References (or stamps) whose group lacked a required sensor."""

    def __len__(self) -> int:
        return len(self.t)

    def missing(self, sensor: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Where ``sensor`` has no frame in the group."""
        if sensor in self.spans:
            lo, hi = self.spans[sensor]
            return lo >= hi
        return self.picks[sensor] < 0


def admitted(t: Int64) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which stamps (in recorded order) a policy admits: each one after every earlier one."""
    t = np.asarray(t, np.int64)
    keep = np.ones(len(t), bool)
    if len(t) > 1:
        keep[1:] = t[1:] > np.maximum.accumulate(t)[:-1]
    return keep


def group_columns(
    policy: SyncPolicy, stamps: Mapping[str, Int64], *, compiled: bool | None = None
) -> GroupColumns:
    """The groups ``policy`` forms from ``stamps`` (per sensor, admitted, strictly increasing).

    ``policy`` only supplies parameters; it is not fed. Raises ``ValueError``
    for ``ApproximateTime`` (streaming only) and for stamps that are not
    strictly increasing (pass them through :func:`admitted` first), and
    ``TypeError`` for any other policy than ``ExactTime`` and ``Nearest``.

    ``compiled`` chooses how ``Nearest`` is computed, never what: ``True``
    runs a compiled merge kernel, 3-7x faster than numpy: the C one
    (:mod:`fusion.policies._nearest_native`: ~1 ms to load once built; built
    by the system C compiler the first time, ~0.3 s), else numba's
    (:mod:`fusion.policies._nearest_kernel`: ~0.3 s of CPU to load in each
    process, ~3 s to compile the first time); ``False`` the numpy form;
    ``None`` (the default) whichever costs least now: the C kernel when it
    is built (a ``stat`` says so), numba's when it is already loaded in this
    process, the C kernel built now from 100,000 stamps (a one-time cost
    that every later process saves), numba's from 100 M stamps when there is no
    C compiler, else numpy.
    """
    if isinstance(policy, ApproximateTime):
        raise ValueError(
            "ApproximateTime has no offline form: which set it emits depends on the "
            "history of its queues, so replay the frames through it instead"
        )
    if not isinstance(policy, (ExactTime, Nearest)):
        raise TypeError(f"expected ExactTime or Nearest, got {type(policy).__name__}")
    cols = {s: np.asarray(stamps.get(s, np.empty(0, np.int64)), np.int64) for s in policy.sensors}
    if isinstance(policy, Nearest):
        engine = _engine(compiled, cols)
        if engine != "numpy":
            return _nearest_compiled(policy, cols, engine)  # checks the order in its first pass
    for s, t in cols.items():
        if len(t) > 1 and not bool(np.all(t[1:] > t[:-1])):
            raise _unsorted(s)
    if isinstance(policy, ExactTime):
        return _exact(policy, cols)
    return _nearest(policy, cols)


def _unsorted(sensor: str) -> ValueError:
    return ValueError(f"stamps of {sensor!r} are not strictly increasing; filter with admitted()")


# When ``compiled`` is None. Loading numba's kernel costs ~0.3-0.5 s of CPU once
# per process (numba's import, the machine code read from its cache) and saves
# ~4.7 ns of CPU a stamp over numpy, so a single call pays for it from about
# _KERNEL_FROM stamps. The C kernel loads in ~1 ms once built, so it is used
# whenever it is built; building it (~0.2-0.8 s of the C compiler, once per
# installation) is paid by the first call from _BUILD_FROM stamps (numpy takes
# about a millisecond there, polars as long): below it, numpy is as fast as any.
_KERNEL_FROM = 100_000_000
_BUILD_FROM = 100_000

Engine = Literal["native", "numba", "numpy"]


def _engine(compiled: bool | None, cols: Mapping[str, Int64]) -> Engine:
    """Which form computes ``Nearest``: see ``compiled`` in :func:`group_columns`."""
    if compiled is False:
        return "numpy"
    from fusion.policies import _nearest_native as native

    if native.load(build_if_missing=False):  # loaded, or built: a stat
        return "native"
    kernel = sys.modules.get("fusion.policies._nearest_kernel")  # loaded without importing numba
    if kernel is not None and kernel.loaded():
        return "numba"
    total = sum(len(t) for t in cols.values())
    if compiled or total >= _BUILD_FROM:
        if native.load():
            return "native"
        if compiled or total >= _KERNEL_FROM:
            return "numba"
    return "numpy"


def _nearest_compiled(policy: Nearest, cols: dict[str, Int64], engine: Engine) -> GroupColumns:
    """``Nearest`` by a merge kernel: the same columns as :func:`_nearest`."""
    from fusion.policies._nearest_native import Unsorted

    if engine == "native":
        from fusion.policies._nearest_native import nearest_groups
    else:
        from fusion.policies._nearest_kernel import nearest_groups

    matched = list(policy.tolerance)
    windows = list(policy.windows)
    try:
        t, ref, picks, spans = nearest_groups(
            cols[policy.reference],
            [(cols[s], policy.tolerance[s], s not in policy.optional) for s in matched],
            [(cols[s], b, a, s not in policy.optional) for s, (b, a) in policy.windows.items()],
        )
    except Unsorted as err:
        bad = {[policy.reference, *matched, *windows][i] for i in err.columns}
        raise _unsorted(next(s for s in policy.sensors if s in bad)) from None
    return GroupColumns(
        sensors=policy.sensors,
        t=t,
        picks={policy.reference: ref} | dict(zip(matched, picks, strict=True)),
        spans=dict(zip(windows, spans, strict=True)),
        dropped_groups=len(cols[policy.reference]) - len(t),
    )


def _exact(policy: ExactTime, cols: dict[str, Int64]) -> GroupColumns:
    every = [cols[s] for s in policy.sensors]
    times = np.unique(np.concatenate(every)) if every else np.empty(0, np.int64)
    picks: dict[str, Int64] = {}
    complete = np.ones(len(times), bool)
    for s in policy.sensors:
        col = cols[s]
        idx = np.searchsorted(col, times)
        present = idx < len(col)
        present[present] = col[idx[present]] == times[present]
        picks[s] = np.where(present, idx, -1)
        if s not in policy.optional:
            complete &= present
    return GroupColumns(
        sensors=policy.sensors,
        t=times[complete],
        picks={s: p[complete] for s, p in picks.items()},
        dropped_groups=int(len(times) - complete.sum()),
    )


@dataclass(slots=True)
class _Matched:
    col: Int64
    tol: int
    nearest: Int64
    ok: np.ndarray[Any, np.dtype[np.bool_]]
    shares: np.ndarray[Any, np.dtype[np.bool_]]
    """``shares[k - 1]``: reference ``k`` has a frame within reach that ``k - 1`` has too."""


@dataclass(slots=True)
class _Window:
    col: Int64
    lo: Int64
    hi: Int64


# Stamp arithmetic never wraps. Stamps span the whole int64 range and a
# tolerance or window may be any non-negative int (the streaming policy does
# the same sums in Python ints), so a bound ``r - b`` saturates at the int64
# range, and a distance between two stamps (up to 2**64 - 1) is exact in
# uint64.
_U8 = np.dtype(np.uint64)
_SPAN = _MAX - _MIN  # 2**64 - 1: the largest distance between two int64 stamps


def _sub(a: Int64, b: int) -> Int64:
    """``a - b`` for any int ``b``, saturating at the int64 range."""
    if b >= 0:
        if b > _SPAN:
            return np.full_like(a, _MIN)
        x = np.maximum(a, _MIN + b)  # so x - b >= MIN: exact in modular uint64
        return (x.view(_U8) - np.uint64(b)).view(np.int64)
    c = -b
    if c > _SPAN:
        return np.full_like(a, _MAX)
    x = np.minimum(a, _MAX - c)
    return (x.view(_U8) + np.uint64(c)).view(np.int64)


def _add(a: Int64, b: int) -> Int64:
    """``a + b`` for any int ``b``, saturating at the int64 range."""
    return _sub(a, -b)


def _distance(hi: Int64, lo: Int64) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """``hi - lo`` where ``hi >= lo``, exact in uint64 (garbage elsewhere, to be masked)."""
    return hi.view(_U8) - lo.view(_U8)


def _within(d: np.ndarray[Any, np.dtype[np.uint64]], tol: int) -> np.ndarray[Any, Any]:
    """``d <= tol`` for a uint64 distance and any non-negative int ``tol``."""
    return np.ones(len(d), bool) if tol >= _SPAN else d <= np.uint64(tol)


def _shares(col: Int64, refs: Int64, tol: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Where reference ``k`` (from 1) shares a frame of ``col`` within ``tol`` with ``k - 1``.

    Some frame lies in both reaches iff one lies in ``[r[k] - tol, r[k - 1] + tol]``;
    that interval is empty unless the two references are at most ``2 * tol``
    apart, so only those few pairs are searched: the common case (tolerance
    under half the reference period) costs one comparison per reference and no
    binary search.
    """
    out = np.zeros(max(len(refs) - 1, 0), bool)
    if len(refs) < 2 or len(col) == 0:
        return out
    first = _sub(refs[1:], tol)
    last = _add(refs[:-1], tol)
    near = np.flatnonzero(first <= last)
    if len(near):
        hi = np.searchsorted(col, last[near], "right")
        lo = np.searchsorted(col, first[near], "left")
        out[near] = hi > lo
    return out


def _nearest(policy: Nearest, cols: dict[str, Int64]) -> GroupColumns:
    refs = cols[policy.reference]
    m = len(refs)
    matched: dict[str, _Matched] = {}
    for s, tol in policy.tolerance.items():
        col = cols[s]
        n = len(col)
        i = np.searchsorted(col, refs, "left")  # first frame at or after r
        if n == 0:
            nearest = np.full(m, -1, np.int64)
            ok = np.zeros(m, bool)
        else:
            prev = np.maximum(i - 1, 0)
            nxt = np.minimum(i, n - 1)
            d_prev = _distance(refs, col[prev])  # valid where i > 0
            d_next = _distance(col[nxt], refs)  # valid where i < n
            use_prev = (i > 0) & ((i >= n) | (d_prev <= d_next))
            nearest = np.where(use_prev, i - 1, i)
            ok = _within(np.where(use_prev, d_prev, d_next), tol)
        matched[s] = _Matched(col, tol, nearest, ok, _shares(col, refs, tol))
    windows: dict[str, _Window] = {}
    for s, (before, after) in policy.windows.items():
        col = cols[s]
        lo = np.searchsorted(col, _sub(refs, before), "left")
        hi = np.searchsorted(col, _add(refs, after), "right")
        windows[s] = _Window(col, lo, hi)

    # The plain decision, right for every independent reference.
    picks = {s: np.where(x.ok, x.nearest, -1) for s, x in matched.items()}
    spans = {s: (w.lo.copy(), w.hi.copy()) for s, w in windows.items()}
    # Reference k shares reach with k - 1 when some sensor's ranges overlap.
    shared = np.zeros(m, bool)
    reach: list[_Matched | _Window] = [*matched.values(), *windows.values()]
    for x in reach:
        if isinstance(x, _Matched):
            shared[1:] |= x.shares
        else:
            shared[1:] |= x.hi[:-1] > x.lo[1:]
    complete = np.ones(m, bool)
    for s in policy.sensors:
        if s == policy.reference or s in policy.optional:
            continue
        complete &= picks[s] >= 0 if s in picks else spans[s][0] < spans[s][1]
    if shared.any():
        starts = np.flatnonzero(~shared)
        ends = np.append(starts[1:], m)
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            if b - a > 1:
                _resolve_run(policy, a, b, refs, matched, windows, picks, spans, complete)
    return GroupColumns(
        sensors=policy.sensors,
        t=refs[complete],
        picks={policy.reference: np.flatnonzero(complete)}
        | {s: p[complete] for s, p in picks.items()},
        spans={s: (lo[complete], hi[complete]) for s, (lo, hi) in spans.items()},
        dropped_groups=int(m - complete.sum()),
    )


def _resolve_run(
    policy: Nearest,
    a: int,
    b: int,
    refs: Int64,
    matched: dict[str, _Matched],
    windows: dict[str, _Window],
    picks: dict[str, Int64],
    spans: dict[str, tuple[Int64, Int64]],
    complete: np.ndarray[Any, np.dtype[np.bool_]],
) -> None:
    """Decide references ``a..b-1`` in order, with cuts; ``a`` is independent.

    No group before ``a`` took a frame within reach of ``a``, so the cuts can
    start empty. Writes the decisions into ``picks``, ``spans`` and ``complete``.
    """
    r_list = refs[a:b].tolist()
    m_state = []
    for s, x in matched.items():
        m_state.append(
            (
                s,
                s in policy.optional,
                x.col,
                x.tol,
                x.nearest[a:b].tolist(),
                x.ok[a:b].tolist(),
                picks[s],
            )
        )
    w_state = []
    for s, w in windows.items():
        lo_arr, hi_arr = spans[s]
        w_state.append(
            (s, s in policy.optional, w.lo[a:b].tolist(), w.hi[a:b].tolist(), lo_arr, hi_arr)
        )
    cut: dict[str, int] = dict.fromkeys((*matched, *windows), -1)
    col_lists: dict[str, list[int]] = {}
    for j, r in enumerate(r_list):
        k = a + j
        ok_all = True
        chosen: list[tuple[str, int]] = []
        for s, optional, col, tol, nearest, ok, out in m_state:
            c = nearest[j]
            if c <= cut[s]:
                c = cut[s] + 1
                values = col_lists.get(s)
                if values is None:
                    values = col_lists[s] = col.tolist()
                if c >= len(values) or abs(values[c] - r) > tol:
                    c = -1
            elif not ok[j]:
                c = -1
            out[k] = c
            if c >= 0:
                chosen.append((s, c))
            elif not optional:
                ok_all = False
        for s, optional, lo, hi, lo_arr, hi_arr in w_state:
            start = max(lo[j], cut[s] + 1)
            lo_arr[k] = start
            hi_arr[k] = max(hi[j], start)
            if start < hi[j]:
                chosen.append((s, hi[j] - 1))
            elif not optional:
                ok_all = False
        complete[k] = ok_all
        if ok_all:
            for s, c in chosen:
                cut[s] = c
