"""Resample a window of time-series samples at one instant.

A ``Nearest`` policy with ``windows={"imu": (before, after)}`` hands each group
every IMU frame around the reference time; what a model usually wants is the
IMU state *at* that time. :func:`interpolate` gives it: linear for vectors,
spherical linear for quaternions (a linear blend of quaternions is not a
rotation), nearest sample for integer and boolean fields.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fusion import Frame

_QUATERNION_PREFIXES = ("q", "q_", "quat_", "orientation_")


def interpolate(
    window: Sequence[Frame] | np.ndarray,
    t: int,
    *,
    quaternions: Sequence[Sequence[str]] | None = None,
) -> np.ndarray:
    """Resample a window of samples at time ``t`` (ns): one row, ``t`` field set to ``t``.

    ``window`` is the list of frames a ``Nearest`` group collected for a
    windowed sensor (or their concatenated rows). Float fields are linear
    between the two samples around ``t``; each quaternion ``(w, x, y, z)``
    field group is spherically interpolated (found automatically for the
    prefixes ``q``, ``q_``, ``quat_``, ``orientation_``, or given by
    ``quaternions``); other fields take the nearer sample's value. Raises
    ``ValueError`` if ``t`` lies outside the window: extrapolating IMU data
    silently is how drift bugs start.
    """
    rows = (
        window
        if isinstance(window, np.ndarray)
        else (np.concatenate([f.data for f in window]) if window else None)
    )
    if rows is None or len(rows) == 0:
        raise ValueError(f"cannot interpolate at t={t}: the window is empty")
    rows = rows[np.argsort(rows["t"], kind="stable")]
    stamps = rows["t"]
    if not stamps[0] <= t <= stamps[-1]:
        raise ValueError(
            f"cannot interpolate at t={t}: the window spans [{int(stamps[0])}, {int(stamps[-1])}]"
        )
    hi = int(np.searchsorted(stamps, t, side="left"))
    lo = max(hi - 1, 0) if stamps[hi] != t else hi
    span = int(stamps[hi]) - int(stamps[lo])
    w = 0.0 if span == 0 else (t - int(stamps[lo])) / span
    a, b = rows[lo], rows[hi]
    out = np.empty(1, rows.dtype)
    out["t"] = t
    names = [n for n in rows.dtype.names or () if n != "t"]
    groups = _quaternion_groups(names) if quaternions is None else [tuple(q) for q in quaternions]
    in_group = {n for g in groups for n in g}
    for n in names:
        if n in in_group:
            continue
        if rows.dtype[n].kind in "fc":
            out[n] = (1.0 - w) * a[n] + w * b[n]
        else:
            out[n] = a[n] if w < 0.5 else b[n]
    for group in groups:
        q = slerp(
            np.array([a[n] for n in group], np.float64),
            np.array([b[n] for n in group], np.float64),
            w,
        )
        for n, v in zip(group, q, strict=True):
            out[n] = v
    return out


def slerp(q0: np.ndarray, q1: np.ndarray, w: float) -> np.ndarray:
    """Spherical linear interpolation of unit quaternions (shortest arc), 0 <= w <= 1."""
    q0 = q0 / np.linalg.norm(q0)
    q1 = q1 / np.linalg.norm(q1)
    dot = float(np.dot(q0, q1))
    if dot < 0.0:  # q and -q are the same rotation: take the short way round
        q1, dot = -q1, -dot
    if dot > 0.9995:  # nearly parallel: lerp is exact to float precision and avoids 0/0
        lerp: np.ndarray = q0 + w * (q1 - q0)
        lerp /= np.linalg.norm(lerp)
        return lerp
    theta = math.acos(dot)
    arc: np.ndarray = (math.sin((1 - w) * theta) * q0 + math.sin(w * theta) * q1) / math.sin(theta)
    return arc


def _quaternion_groups(names: Sequence[str]) -> list[tuple[str, str, str, str]]:
    present = set(names)
    groups = []
    for prefix in _QUATERNION_PREFIXES:
        group = (prefix + "w", prefix + "x", prefix + "y", prefix + "z")
        if all(n in present for n in group):
            groups.append(group)
    return groups
