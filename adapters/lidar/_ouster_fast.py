"""Whole-scan numpy decoding of Ouster lidar packets.

A scan's packets all have the layout the metadata says, so they are kept as
bytes until the scan ends and then decoded at once with numpy views: one
``frombuffer`` for the scan, one strided read per field, at the byte offsets
of :class:`~adapters.lidar._ouster_layout.PacketLayout` (written from Ouster's
packet documentation; no ouster-sdk). ``decoder="numpy"`` uses this; the
compiled kernels of :mod:`adapters.lidar._ouster_kernel` read the same views.
:func:`frame_columns` takes the same columns from an ouster-sdk ``LidarFrame``
(an OSF file's scans, or ``decoder="ouster-sdk"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapters.lidar._ouster_layout import FIELDS, PacketLayout


class Columns:
    """A scan's valid columns: ids (ascending), their timestamps, ``(n, beams)`` fields."""

    __slots__ = ("ids", "stamps", "values")

    def __init__(self, ids: np.ndarray, stamps: np.ndarray, values: dict[str, np.ndarray]):
        self.ids = ids
        self.stamps = stamps
        self.values = values


def decode_packets(layout: PacketLayout, payloads: list[bytes], width: int) -> Columns:
    """The valid columns of one scan's packets (a column sent twice: the last copy)."""
    data = b"".join(payloads)
    ids = layout.ids(data).astype(np.int64)
    if len(ids) > 1 and (np.diff(ids) > 0).all():
        chosen = np.arange(len(ids))  # the usual case: each column once, in order
    else:
        order = np.argsort(ids, kind="stable")
        ranked = ids[order]
        last = np.ones(len(ranked), bool)
        last[:-1] = ranked[1:] != ranked[:-1]
        chosen = order[last]
    chosen = chosen[((layout.status(data)[chosen] & 1) != 0) & (ids[chosen] < width)]
    values = {name: layout.field(data, name, chosen) for name in layout.fields}
    return Columns(ids[chosen], layout.stamps(data)[chosen].astype(np.int64), values)


def frame_columns(frame: Any) -> Columns:
    """The same from an ouster-sdk ``LidarFrame`` (staggered fields)."""
    valid = (np.asarray(frame.status) & 1) != 0
    ids = np.flatnonzero(valid)
    values = {
        name: np.ascontiguousarray(np.asarray(frame.field(name))[:, ids].T)
        for name in FIELDS
        if frame.has_field(name)
    }
    return Columns(ids, np.asarray(frame.timestamp, np.int64)[ids], values)
