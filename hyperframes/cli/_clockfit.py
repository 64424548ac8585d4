"""The clock fit ``hyperframes info`` reports per sensor: offset, skew and delay.

From one sensor's ``t_sensor``, ``t``, ``t_arrival`` and ``measured``
columns (the recording's footer, or one pass over its frames): the offset
of ``t`` against ``t_sensor``, the sensor clock's skew (the lower envelope
of the measured delays, as the online clock model fits it, or a robust
slope without arrival times) and the transport delay percentiles. A
restarted sender starts a new segment, and only the longest segment is
fitted.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from recordings.hfr import EARLY_GLITCH_NS, hull_candidates, skew_from_hull

__all__ = [
    "EARLY_GLITCH_NS",
    "clock_fit",
    "envelope_skew",
    "hull_candidates",
    "robust_slope",
    "segmented_clock_fit",
    "without_early_glitches",
]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]


def segmented_clock_fit(
    t_sensor: Int64, t: Int64, arrival: Int64, measured: Bools, starts: list[int]
) -> dict[str, Any]:
    """:func:`clock_fit` of the longest segment (one line across a restart means nothing);
    the offset is taken at the recording's first frame. The columns are one sensor's
    frames in recorded order; ``starts`` are the rows that begin a new segment."""
    bounds = [0, *starts, len(t)]
    pieces = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
    k = int(np.argmax([b - a for a, b in pieces]))  # the first of the longest
    a, b = pieces[k]
    fit = clock_fit(t_sensor[a:b], t[a:b], arrival[a:b], measured[a:b])
    fit["offset_ns"] = int(t[0] - t_sensor[0])
    if len(pieces) > 1:
        fit["skew_segment"] = k
    return fit


def clock_fit(t_sensor: Int64, t: Int64, arrival: Int64, measured: Bools) -> dict[str, Any]:
    """Offset of ``t`` vs ``t_sensor`` (at the first frame), the sensor clock's skew and the
    delay ``t_arrival - t``.

    With measured arrival times the skew is the TICSync fit of the delays'
    lower envelope over the whole segment (:mod:`fusion._clock_envelope`, the
    estimator the online clock runs over a sliding window): how fast the
    sensor's clock runs against the host's. Frames whose arrival was
    re-paced after an opening burst (``meta["t_read"]``) are left out.
    Without arrivals it is a robust slope of ``t - t_sensor``. Either way the
    sign is the clock models': positive when the sensor's clock runs fast.
    """
    base = float(t_sensor[0])
    ts = t_sensor.astype(np.float64) - base
    tf = t.astype(np.float64)
    fit: dict[str, Any] = {"offset_ns": int(t[0] - t_sensor[0])}
    envelope = envelope_skew(t_sensor[measured], arrival[measured])
    if envelope is not None:
        fit["skew_ppm"] = envelope
    elif len(t) > 2 and np.ptp(ts) > 0:
        slope = robust_slope(ts, (tf - base) - ts)
        if slope > -1:  # at -1, t stands still while t_sensor runs: no skew to give
            fit["skew_ppm"] = float((1 / (1 + slope) - 1) * 1e6)
    delay = arrival.astype(np.float64) - tf
    if np.any(delay != 0):
        fit["delay_ms_p50"] = float(np.percentile(delay, 50) / 1e6)
        fit["delay_ms_p99"] = float(np.percentile(delay, 99) / 1e6)
    return fit


def envelope_skew(x: Int64, arrival: Int64) -> float | None:
    """Skew (ppm) of the sensor clock from ``t_sensor`` and ``t_arrival`` columns (frames
    whose ``t_sensor`` does not pass every one before it are left out); ``None`` if too
    few."""
    from fusion import LowerEnvelope

    if len(x) < 3:
        return None
    before = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min], x[:-1]]))
    ahead = x > before
    xs, ys = x[ahead], arrival[ahead] - x[ahead]
    keep = without_early_glitches(ys.astype(np.float64))
    xs, ys = xs[keep], ys[keep]
    if len(xs) < 3:
        return None
    mean_x = float(np.mean(xs - xs[0])) + int(xs[0])  # the LP's optimum is over every point
    cand = hull_candidates(xs, ys)
    env = LowerEnvelope(int(xs[-1]) - int(xs[0]) + 1, len(cand) + 1)
    for px, py in zip(xs[cand].tolist(), ys[cand].tolist(), strict=True):
        env.add(px, py)
    return skew_from_hull(env.hull, mean_x)


def without_early_glitches(y: np.ndarray, half: int = 4) -> Bools:
    """Which delays ``y`` to keep: not those far *below* their neighbours' median (the
    lower envelope would follow them): a demuxer that holds each frame until the next
    one's data arrives (MPEG-TS) hands the last frame of a connection over at once,
    ``one frame period`` earlier than all the others. The neighbours are the ``half``
    points on each side (fewer at the ends)."""
    n = len(y)
    keep = np.ones(n, bool)
    if n > 2 * half:
        # A point below its neighbours' median by the margin is below their largest by
        # it: only those few need the median (a median per point cost seconds an hour).
        top = np.full(n - 2 * half, -np.inf)
        for k in range(2 * half + 1):
            if k != half:
                np.maximum(top, y[k : n - 2 * half + k], out=top)
        suspects = np.flatnonzero(y[half : n - half] < top - EARLY_GLITCH_NS) + half
    else:
        suspects = np.empty(0, np.int64)
    block = 1 << 18  # rows of neighbour windows built at once (bounded memory)
    for lo in range(0, len(suspects), block):
        rows = suspects[lo : lo + block]
        windows = y[rows[:, None] + np.arange(-half, half + 1)]
        neighbours = np.delete(windows, half, axis=1)
        keep[rows] = ~(y[rows] < np.median(neighbours, axis=1) - EARLY_GLITCH_NS)
    for i in {*range(min(half, n)), *range(max(half, n - half), n)}:
        neighbours = np.concatenate([y[max(0, i - half) : i], y[i + 1 : i + 1 + half]])
        if len(neighbours) and y[i] < np.median(neighbours) - EARLY_GLITCH_NS:
            keep[i] = False
    return keep


def robust_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Median of the slopes between each point and the one half the data later.

    A Theil-Sen style estimate in O(n log n): a few frames aligned before the
    clock settled (the first of a segment) do not tilt it, as they tilt a
    least-squares line.
    """
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    half = len(x) // 2
    dx = x[half:] - x[: len(x) - half]
    dy = y[half:] - y[: len(x) - half]
    keep = dx > 0
    if not np.any(keep):
        return 0.0
    return float(np.median(dy[keep] / dx[keep]))
