"""Format 1.7: per-sensor summaries reduced chunk by chunk equal the full computation.

:class:`recordings.hfr._sensor_summary.SensorReducer` is fed one sensor's rows in random
chunk splits; the report ``info`` builds from its summary must equal
:func:`hyperframes.cli._sensorstats.summarize` over the whole columns (segments,
restarts, connections, re-paced arrivals, early glitches, seq gaps, payload sizes
and shapes), the delay percentiles exactly while a segment's delays take few
distinct values (always here).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperframes.cli._sensorstats import SensorColumns, _report_of, summarize
from recordings.hfr._details import PLAIN, REPACED, SEGMENT
from recordings.hfr._sensor_summary import SensorReducer, hull_candidates

MS = 1_000_000
SHAPES = [(6,), (3, 2)]


@st.composite
def sensors(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    period = int(draw(st.sampled_from([1, 10, 100]))) * MS
    t = np.cumsum(rng.integers(period // 2, period * 2, n)).astype(np.int64)
    ts = t - 5 * MS + rng.integers(-20_000, 20_000, n)
    for at in draw(st.lists(st.integers(1, n), max_size=3)):  # restarts: t_sensor jumps back
        if at < n:
            ts[at:] -= int(draw(st.sampled_from([2, 5, 60]))) * 1_000_000_000
    has = rng.random(n) < draw(st.sampled_from([0.0, 0.5, 1.0]))
    arrival = t + rng.integers(200_000, 2_200_000, n)
    glitch = rng.random(n) < 0.05
    arrival[glitch] -= 30 * MS  # early glitches the fit leaves out
    arrival = np.where(has, arrival, t)
    flags = np.zeros(n, np.uint8)
    flags[rng.random(n) < 0.02] |= SEGMENT
    flags[rng.random(n) < 0.1] |= REPACED
    seq = np.cumsum(rng.integers(1, 3, n)) - 1  # some numbers never seen
    kind = draw(st.sampled_from(["plain", "bytes", "mixed"]))
    shape = rng.integers(0, 2, n).astype(np.int32) if kind != "bytes" else np.full(n, -1, np.int32)
    size = np.full(n, PLAIN, np.int64)
    if kind != "plain":
        sized = rng.random(n) < (1.0 if kind == "bytes" else 0.5)
        size[sized] = rng.integers(10, 20, int(sized.sum()))
        shape[sized] = -1
    conn = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=3)))) if n > 1 else []
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=6)))) if n > 1 else []
    return {
        "seq": seq.astype(np.int64), "t": t, "ts": ts.astype(np.int64), "arrival": arrival,
        "has": has, "flags": flags, "size": size, "shape": shape, "conn": conn, "cuts": cuts,
    }  # fmt: skip


def _full(s: dict[str, Any]) -> dict[str, Any]:
    size = s["size"].copy()
    ids: dict[int, int] = {}
    for i in np.flatnonzero(size == PLAIN).tolist():  # numbered by first appearance
        size[i] = -2 - ids.setdefault(int(s["shape"][i]), len(ids))
    return summarize(
        SensorColumns(
            seq=s["seq"], t=s["t"], t_sensor=s["ts"], arrival=s["arrival"], has_arrival=s["has"],
            flags=s["flags"], size=size, shapes=tuple(SHAPES[k] for k in ids),
            first=("array", 0, "float32", "x"), gaps=[], conn=s["conn"],
        )
    )  # fmt: skip


def _reduced(s: dict[str, Any]) -> dict[str, Any] | str:
    r = SensorReducer()
    bounds = [0, *s["cuts"], len(s["t"])]
    for a, b in itertools.pairwise(bounds):
        r.add(
            s["seq"][a:b], s["t"][a:b], (s["ts"] - s["t"])[a:b], s["arrival"][a:b],
            s["has"][a:b], s["flags"][a:b], s["size"][a:b], SHAPES, s["shape"][a:b],
            [c for c in s["conn"] if a <= c < b],
        )  # fmt: skip
    wire = r.finish([])
    if isinstance(wire, str):
        return wire
    assert wire["bin"] == 0  # few distinct delays: exact percentiles
    wire["first"] = ["array", 0, "float32", "x"]
    return _report_of(wire, len(s["t"]))


@given(sensors())
@settings(max_examples=150, deadline=None)
def test_a_summary_reduced_chunk_by_chunk_gives_the_full_report(s: dict[str, Any]) -> None:
    got = _reduced(s)
    if isinstance(got, str):  # a segment whose fit is a robust slope over every frame
        assert "measured arrivals" in got
        return
    want = _full(s)
    assert got == want
    assert list(got) == list(want)  # the same keys in the same order: the same JSON


def test_seq_going_back_is_left_to_the_full_computation() -> None:
    r = SensorReducer()
    t = np.arange(4, dtype=np.int64) * MS
    z = np.zeros(4, np.int64)
    r.add(np.array([0, 2, 1, 3]), t, z, t, z.astype(bool), z.astype(np.uint8), z, [], z, [])
    assert r.finish([]) == "its seq numbers go back"


def _chain(xs: list[int], ys: list[int]) -> list[tuple[int, int]]:
    """The exact lower hull (Andrew's monotone chain in Python ints, collinear points
    dropped), as the reducer builds it."""
    hull: list[tuple[int, int]] = []
    for px, py in zip(xs, ys, strict=True):
        while len(hull) >= 2:
            (ax, ay), (bx, by) = hull[-2], hull[-1]
            if (bx - ax) * (py - ay) - (by - ay) * (px - ax) > 0:
                break
            hull.pop()
        hull.append((px, py))
    return hull


@given(
    start=st.sampled_from([0, 10**15, 1_700_000_000 * 10**9, 2**62]),
    gaps=st.lists(st.sampled_from([1, 5 * MS, 5 * MS, 5 * MS + 1, 2**40]), min_size=1),
    delays=st.lists(st.sampled_from([0, 1000, 1000, 1000, 2000, -(2**40), 2**40])),
)
@settings(max_examples=200, deadline=None)
def test_hull_candidates_keep_every_vertex_of_collinear_runs(
    start: int, gaps: list[int], delays: list[int]
) -> None:
    """Evenly spaced stamps with few distinct delays (collinear runs, decided exactly in
    int64 where the products fit, huge spans where they do not): the hull over the
    candidates is the hull over every point, and a straight run leaves its two ends."""
    x = start + np.cumsum(np.array([0, *gaps], np.int64))
    y = np.resize(np.array(delays or [1000], np.int64), len(x))
    cand = hull_candidates(x, y)
    assert _chain(x[cand].tolist(), y[cand].tolist()) == _chain(x.tolist(), y.tolist())
    if len(set(gaps)) == 1 and len(set(delays)) <= 1 and gaps[0] < 2**40:
        assert len(cand) == min(len(x), 2)


@given(s=sensors(), batch=st.integers(1, 300), flip=st.booleans(), back=st.integers(0, 500))
@settings(max_examples=150, deadline=None)
def test_chunks_reduced_in_batches_give_what_they_give_one_by_one(
    s: dict[str, Any], batch: int, flip: bool, back: int
) -> None:
    """Gathering chunks (``BATCH_ROWS``) changes nothing: with tiny delay buffers and bins
    (the histogram merges and its buckets widen often) the wire form is the same as
    reduced chunk by chunk, with chunks numbering their shapes differently and a ``seq``
    going back (the reason is the first chunk's)."""
    import pytest

    from recordings.hfr import _sensor_summary as summary

    if back and back < len(s["seq"]):
        s["seq"][back] = s["seq"][back - 1] - 1

    def wire(rows: int) -> Any:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(summary, "BUFFER_ROWS", 16)
            mp.setattr(summary, "DELAY_BINS", 8)
            mp.setattr(summary, "BATCH_ROWS", rows)
            r = SensorReducer()
            bounds = [0, *s["cuts"], len(s["t"])]
            for k, (a, b) in enumerate(itertools.pairwise(bounds)):
                shapes, shape = SHAPES, s["shape"][a:b]
                if flip and k % 2:  # this chunk numbers the two shapes the other way
                    shapes, shape = SHAPES[::-1], np.where(shape >= 0, 1 - shape, shape)
                r.add(
                    s["seq"][a:b], s["t"][a:b], (s["ts"] - s["t"])[a:b], s["arrival"][a:b],
                    s["has"][a:b], s["flags"][a:b], s["size"][a:b], shapes, shape,
                    [c for c in s["conn"] if a <= c < b],
                )  # fmt: skip
            return r.finish([5])

    assert wire(batch) == wire(1)
