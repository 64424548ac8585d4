"""The compiled Ouster scan decoder: a scan's packet bytes straight into its point array.

Why compiled: the numpy whole-scan decoder (strided views of the packets, one
masked copy per field, then a gather of the valid pixels of a structured
grid) goes through a scan's 1 MB point array five or six times and cost about
1 ms a scan, 0.4x ouster-sdk's C++ path. Here two loops do it: :func:`select`
walks the columns once (the last copy of each measurement id, its status bit,
its count of returns), :func:`fill` writes each valid return's 12 fields once,
x/y/z from the beam intrinsics as ``XYZLut`` does (``range * direction +
offset``, with ``XYZLut``'s tables in float32, from
:func:`~adapters.lidar._ouster_geometry.beam_tables`).

Nothing here knows a packet layout. :class:`ScanViews` takes zero-copy
strided views of the joined packets at the byte offsets of the profile's
:class:`~adapters.lidar._ouster_layout.PacketLayout`; the kernels read those
views, so numba compiles them once per combination of word types (LEGACY and
the RNG19 profiles share one), and the masks and shifts (the low-data profiles'
8 mm range steps) come in as numbers.

This module imports numba, so it is imported on first use (by
:class:`~adapters.lidar._ouster_packets.ScanAssembler`); the compiled code is
cached on disk next to it when that is writable (``cache=True``), so only the
first process pays the compile (see BENCHMARKS.md); :func:`warm` loads or
compiles it for a layout before the first scan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from adapters.lidar._ouster_layout import PacketLayout

FIELD_ORDER = ("RANGE", "SIGNAL", "REFLECTIVITY", "NEAR_IR")
_jit = numba.njit(nogil=True, cache=True, boundscheck=False)


def _select(
    mid: Any, status: Any, rng: Any, range_mask: Any, slot: Any, ids: Any
) -> Any:  # pragma: no cover - compiled
    """(Compiled: ``select``.) Pick a scan's columns: ``slot[m]``, the column
    (``packet * columns + column``) holding measurement id ``m`` (its last copy; -1: none,
    or not valid), ``ids[:n]`` the valid ids ascending. Returns ``(n, valid returns)``."""
    packets, cpp, beams = rng.shape
    width = slot.shape[0]
    for m in range(width):
        slot[m] = -1
    for p in range(packets):
        for c in range(cpp):
            at = np.int64(mid[p, c])
            if at < width:
                slot[at] = p * cpp + c
    n_cols = 0
    n_points = 0
    for m in range(width):  # ascending measurement id: firing order
        j = slot[m]
        if j < 0:
            continue
        p, c = j // cpp, j % cpp
        if np.int64(status[p, c]) & 1 == 0:
            slot[m] = -1
            continue
        ids[n_cols] = m
        n_cols += 1
        for b in range(beams):
            if np.int64(rng[p, c, b]) & range_mask != 0:
                n_points += 1
    return n_cols, n_points


def _fill(
    slot: Any,
    ids: Any,
    n_cols: Any,
    stamps: Any,
    rng: Any,
    signal: Any,
    reflectivity: Any,
    near_ir: Any,
    masks: Any,
    shifts: Any,
    direction: Any,
    offset: Any,
    ring: Any,
    out: Any,
) -> Any:  # pragma: no cover - compiled
    """(Compiled: ``fill``.) Write the valid returns of ``ids[:n_cols]`` into ``out``
    (``OUSTER_DTYPE``, sized by ``select``); return the first column's timestamp (each
    point's ``t`` is after it)."""
    cpp, beams = rng.shape[1], rng.shape[2]
    first = slot[ids[0]]
    t0 = np.int64(stamps[first // cpp, first % cpp])
    rm, sm, fm, nm = masks[0], masks[1], masks[2], masks[3]
    rs, ss, fs, ns = shifts[0], shifts[1], shifts[2], shifts[3]
    k = 0
    for i in range(n_cols):
        m = ids[i]
        j = slot[m]
        p, c = j // cpp, j % cpp
        dt = np.uint32((np.int64(stamps[p, c]) - t0) & 0xFFFFFFFF)
        for b in range(beams):
            r = (np.int64(rng[p, c, b]) & rm) << rs
            if r == 0:
                continue
            metres = np.float32(r)
            s = (np.int64(signal[p, c, b]) & sm) << ss
            point = out[k]
            point.x = metres * direction[m, b, 0] + offset[m, b, 0]
            point.y = metres * direction[m, b, 1] + offset[m, b, 1]
            point.z = metres * direction[m, b, 2] + offset[m, b, 2]
            point.intensity = np.float32(s)
            point.t = dt
            point.range = r
            point.signal = s
            point.reflectivity = (np.int64(reflectivity[p, c, b]) & fm) << fs
            point.near_ir = (np.int64(near_ir[p, c, b]) & nm) << ns
            point.ring = ring[b]
            point.column = m
            point.beam = b
            k += 1
    return t0


select: Callable[..., tuple[int, int]] = _jit(_select)
fill: Callable[..., int] = _jit(_fill)


class ScanViews:
    """The kernels' inputs for one layout: views of a scan's joined packets, the masks
    and shifts."""

    def __init__(self, layout: PacketLayout) -> None:
        self.layout = layout
        self.masks = np.zeros(len(FIELD_ORDER), np.int64)
        self.shifts = np.zeros(len(FIELD_ORDER), np.int64)
        for row, name in enumerate(FIELD_ORDER):
            if name in layout.fields:
                self.masks[row] = layout.fields[name][3]
                self.shifts[row] = layout.shifts.get(name, 0)

    def __call__(self, data: bytes) -> tuple[Any, ...]:
        """``(ids, status, stamps, range, signal, reflectivity, near_ir)`` of ``data``: column
        words ``(packets, columns)``, pixel fields ``(packets, columns, beams)``."""
        lay = self.layout
        fields = []
        for name in FIELD_ORDER:
            if name in lay.fields:
                where, _stride, word, _mask = lay.fields[name]
                fields.append(lay.packed(data, where, word, True))
            else:  # a profile without it: zeros (never read past the mask 0)
                shape = (len(data) // lay.size, lay.columns, lay.beams)
                fields.append(np.broadcast_to(np.zeros(1, np.uint8), shape))
        return (
            lay.packed(data, lay.id_at, np.dtype("<u2"), False),
            lay.packed(data, lay.status_at, lay.status_word, False),
            lay.packed(data, lay.stamp_at, np.dtype("<u8"), False),
            *fields,
        )


def warm(views: ScanViews, dtype: np.dtype[Any]) -> None:
    """Load (or compile) both kernels for this layout's word types, on a blank packet."""
    ids, status, stamps, *fields = views(bytes(views.layout.size))
    slot, picked = np.empty(1, np.int64), np.empty(1, np.int64)
    select(ids, status, fields[0], views.masks[0], slot, picked)
    table = np.zeros((1, views.layout.beams, 3), np.float32)
    ring = np.zeros(views.layout.beams, np.uint16)
    slot[0], picked[0] = 0, 0
    fill(
        slot, picked, 0, stamps, *fields, views.masks, views.shifts, table, table, ring,
        np.empty(0, dtype),
    )  # fmt: skip
