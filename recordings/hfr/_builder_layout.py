"""Laying out a sealed chunk's columns and frame details (a builder's seal, per chunk).

:meth:`~recordings.hfr._builder.ChunkBuilder.seal` calls these once per chunk:
:func:`seal_columns` lays a columnar chunk out (``head pad columns pad
record-arrays``, ``recordings/hfr/FORMAT.md``), :func:`frame_details` gathers its
frame details (1.6). Nothing here runs per frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np

from recordings.hfr._chunk_encode import pack
from recordings.hfr._columns import GENERIC, ColumnGroup, Int64Table, delta_rows, pack_metas
from recordings.hfr._details import PLAIN, ChunkDetails, put_marks
from recordings.hfr._format import BLOB_ALIGN, EXT_COLUMN
from recordings.hfr._layout import _dtype_to_wire

if TYPE_CHECKING:
    from recordings.hfr._builder import ChunkBuilder

__all__ = ["frame_details", "seal_columns"]

_INT64_WIRE = _dtype_to_wire(np.dtype("<i8"))


def seal_columns(
    b: ChunkBuilder, groups: list[ColumnGroup]
) -> tuple[memoryview, int, int, int, list[Int64Table]]:
    """``(raw, records_size, t_start, t_end, deltas)`` of builder ``b``'s columnar chunk
    (see FORMAT.md), with each group's delta-coded ``seq, t, t_sensor(, t_arrival)``
    rows (:func:`~recordings.hfr._columns.delta_rows`, which the stamp block reuses);
    adds the column rows to ``b``'s per-sensor counts and time ranges.

    The blob is ``columns pad record-arrays``: the columns sit next to the
    head, where they compress best (after megabytes of noisy images they
    cost zstd three times as much), and the records' arrays keep the
    offsets they got in ``add()``, counted from where they now start.
    The head and columns are written just before the record arrays (the room
    the builder's blob keeps in front), so the arrays are not copied again; only a
    head over that room (tens of thousands of column rows) joins the whole once.
    """
    t0, t1 = (b._t0, b._t1) if b._nrecords else (1 << 63, -(1 << 63))
    blob: list[Any] = []
    end = 0

    def column(c: np.ndarray, wire: Any, shape: list[int]) -> Any:
        nonlocal end
        pad = -end % BLOB_ALIGN
        blob.append(bytes(pad))
        blob.append(c.data)
        offset = end + pad
        end = offset + c.nbytes
        return msgpack.ExtType(EXT_COLUMN, pack([offset, wire, shape]))

    packed_groups = []
    all_deltas = []
    for g in groups:
        table = g.table()
        deltas = delta_rows(table)  # seq, t, t_sensor(, t_arrival): one row each
        all_deltas.append(deltas)
        n = len(table)
        t = table[:, 1]
        lo, hi = int(t.min()), int(t.max())
        t0, t1 = min(t0, lo), max(t1, hi)
        sidx = b._sensors[g.sensor]
        b._counts[sidx] += n
        r = b._ranges[sidx]
        b._ranges[sidx] = [lo, hi] if r is None else [min(r[0], lo), max(r[1], hi)]
        data = np.frombuffer(g.data, g.dtype)
        rows = [n]
        refs = [
            sidx,
            n,
            column(deltas[0], _INT64_WIRE, rows),
            column(deltas[1], _INT64_WIRE, rows),
            # equal deltas, equal columns: delta coding is one-to-one
            None
            if deltas[2].tobytes() == deltas[1].tobytes()
            else column(deltas[2], _INT64_WIRE, rows),
            None if g.no_arrival else column(deltas[3], _INT64_WIRE, rows),
            column(data, _dtype_to_wire(g.dtype), [n, *g.shape]),
        ]
        body = pack(refs)
        packed_groups.append(b"\x98" + body[1:] + pack_metas(g))  # fixarray 7 -> 8
    if len(groups) == 1 and b._nrecords == 0:
        order_ref = None
    else:
        remap = np.full(256, GENERIC, np.uint8)
        for i, g in enumerate(groups):
            remap[g.index] = i
        order = remap[np.frombuffer(b._order, np.uint8)]
        order_ref = column(order, _dtype_to_wire(order.dtype), [len(order)])
    split = end + (-end % BLOB_ALIGN)
    blob.append(bytes(split - end))
    blob.append(b._blob.view())
    head: list[Any] = [b"\x94", pack(split), b"\xdc" + len(groups).to_bytes(2, "big")]
    head += packed_groups
    head.append(pack(order_ref))
    head.append(b"\xdd" + b._nrecords.to_bytes(4, "big"))
    head.append(b._records)
    records_size = sum(len(h) for h in head)
    head.append(bytes(-records_size % BLOB_ALIGN))
    # The head and columns go into the room kept in front of the record arrays, so
    # the arrays are not copied again (a column chunk of camera frames and IMU rows
    # was joined into a new buffer: a second copy of every payload byte).
    front = head + blob[:-1]
    whole = b._blob.with_front(front)
    if whole is None:
        whole = b._blob.join(head + blob)
    return whole, records_size, t0, t1, all_deltas


def frame_details(
    n: int,
    order: np.ndarray[Any, Any],
    groups: list[ColumnGroup],
    rec_details: list[tuple[int, int, tuple[int, ...] | None, int]],
    marks: list[tuple[int, tuple[int, int | None, Any, Any]]],
    firsts: dict[int, list[Any]],
) -> ChunkDetails:
    """A chunk's frame details (1.6; :mod:`recordings.hfr._details`) from its ``n`` frames'
    ``order``, its column ``groups``, its records' ``(t_sensor - t, size, shape, flag)``,
    its frames' detail marks ``(row, marks)`` and each sensor's first payload brief."""
    flags = np.zeros(n, np.uint8)
    shapes: dict[tuple[int, ...], int] = {}
    if len(groups) == 1 and not rec_details:  # every row is the group's: no gathers
        g = groups[0]
        rows = g.table()
        offset = rows[:, 2] - rows[:, 1]
        size = np.full(n, g.shape[0] if g.dtype.names else PLAIN, np.int64)
        shape_of = np.full(n, -1 if g.dtype.names else shapes.setdefault(g.shape, 0), np.int32)
    else:
        offset, size, shape_of = _gathered(n, order, groups, rec_details, flags, shapes)
    out = ChunkDetails(offset, flags, size, shape_of, list(shapes), [], [], [], firsts)
    for row, mark in marks:
        put_marks(out, row, mark)
    return out


def _gathered(
    n: int,
    order: np.ndarray[Any, Any],
    groups: list[ColumnGroup],
    rec_details: list[tuple[int, int, tuple[int, ...] | None, int]],
    flags: np.ndarray[Any, Any],
    shapes: dict[tuple[int, ...], int],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``(offset, size, shape)`` of a chunk of several groups or records, each row taken
    from where ``order`` says it is (records' flags into ``flags``, shapes numbered into
    ``shapes``)."""
    offset = np.empty(n, np.int64)
    size = np.empty(n, np.int64)
    shape_of = np.full(n, -1, np.int32)
    for g in groups:
        rows = g.table()
        where = order == g.index
        offset[where] = rows[:, 2] - rows[:, 1]
        if g.dtype.names:
            size[where] = g.shape[0]
        else:
            size[where] = PLAIN
            shape_of[where] = shapes.setdefault(g.shape, len(shapes))
    if rec_details:
        where = order == GENERIC
        offset[where] = [r[0] for r in rec_details]
        size[where] = [r[1] for r in rec_details]
        shape_of[where] = [
            -1 if r[2] is None else shapes.setdefault(r[2], len(shapes)) for r in rec_details
        ]
        flags[where] = [r[3] for r in rec_details]
    return offset, size, shape_of
