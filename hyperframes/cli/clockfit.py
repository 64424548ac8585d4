"""The clock fit ``hyperframes info`` reports per sensor: offset, skew and delay.

From the ``(t_sensor, t, t_arrival, measured)`` rows of one pass over a
recording's frames: the offset of ``t`` against ``t_sensor``, the sensor
clock's skew (the lower envelope of the measured delays, as the online
clock model fits it, or a robust slope without arrival times) and the
transport delay percentiles. A restarted sender starts a new segment, and
only the longest segment is fitted.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np


def segmented_clock_fit(
    rows: list[tuple[int, int, int, bool]], starts: list[int]
) -> dict[str, Any]:
    """:func:`clock_fit` of the longest segment (one line across a restart means nothing);
    the offset is taken at the recording's first frame."""
    bounds = [0, *starts, len(rows)]
    pieces = [rows[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    longest = max(pieces, key=len)
    fit = clock_fit(longest)
    fit["offset_ns"] = int(rows[0][1] - rows[0][0])
    if len(pieces) > 1:
        fit["skew_segment"] = pieces.index(longest)
    return fit


def clock_fit(rows: list[tuple[int, int, int, bool]]) -> dict[str, Any]:
    """Offset of ``t`` vs ``t_sensor`` (at the first frame), the sensor clock's skew and the
    delay ``t_arrival - t``.

    With measured arrival times the skew is the TICSync fit of the delays'
    lower envelope over the whole segment (:mod:`fusion.clock_envelope`, the
    estimator the online clock runs over a sliding window): how fast the
    sensor's clock runs against the host's. Frames whose arrival was
    re-paced after an opening burst (``meta["t_read"]``) are left out.
    Without arrivals it is a robust slope of ``t - t_sensor``. Either way the
    sign is the clock models': positive when the sensor's clock runs fast.
    """
    a = np.asarray([r[:3] for r in rows], np.float64)
    ts, t, arrival = a[:, 0] - a[0, 0], a[:, 1] - a[0, 0], a[:, 2]
    fit: dict[str, Any] = {"offset_ns": int(rows[0][1] - rows[0][0])}
    envelope = envelope_skew([(r[0], r[2]) for r in rows if r[3]])
    if envelope is not None:
        fit["skew_ppm"] = envelope
    elif len(rows) > 2 and np.ptp(ts) > 0:
        slope = robust_slope(ts, t - ts)
        if slope > -1:  # at -1, t stands still while t_sensor runs: no skew to give
            fit["skew_ppm"] = float((1 / (1 + slope) - 1) * 1e6)
    delay = arrival - a[:, 1]
    if np.any(delay != 0):
        fit["delay_ms_p50"] = float(np.percentile(delay, 50) / 1e6)
        fit["delay_ms_p99"] = float(np.percentile(delay, 99) / 1e6)
    return fit


def envelope_skew(pairs: list[tuple[int, int]]) -> float | None:
    """Skew (ppm) of the sensor clock from ``(t_sensor, t_arrival)`` pairs; ``None`` if too few."""
    from fusion.clock_envelope import LowerEnvelope

    points: list[tuple[int, int]] = []
    for x, arrival in pairs:
        if not points or x > points[-1][0]:
            points.append((x, arrival - x))
    points = without_early_glitches(points)
    if len(points) < 3:
        return None
    env = LowerEnvelope(points[-1][0] - points[0][0] + 1, len(points) + 1)
    for x, y in points:
        env.add(x, y)
    slope = env.fit(-0.5, 0.5).slope
    return float((1 / (1 + slope) - 1) * 1e6)


EARLY_GLITCH_NS = 20_000_000
"""A delay this much below its neighbours' median is a glitch, not the link's floor."""


def without_early_glitches(points: list[tuple[int, int]], half: int = 4) -> list[tuple[int, int]]:
    """Drop points whose delay is far *below* their neighbours' (the lower envelope would
    follow them): a demuxer that holds each frame until the next one's data arrives
    (MPEG-TS) hands the last frame of a connection over at once, ``one frame period``
    earlier than all the others."""
    y = np.asarray([p[1] for p in points], np.float64)
    keep = []
    for i, point in enumerate(points):
        neighbours = np.concatenate([y[max(0, i - half) : i], y[i + 1 : i + 1 + half]])
        if len(neighbours) and y[i] < np.median(neighbours) - EARLY_GLITCH_NS:
            continue
        keep.append(point)
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
