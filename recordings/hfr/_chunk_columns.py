"""A columnar chunk's groups read back: a helper of the chunk reader only.

The layout (record kind ``COLUMNS``, format 1.1) and the writer's side are in
:mod:`recordings.hfr._columns`. Reading turns columns into Python values in bulk
(``tolist``), filters a time window with one vectorised comparison, and builds
each :class:`~fusion._frames.Frame` only when the iterator reaches it, its
payload a read-only row view of the stacked array (zero-copy, like every array
the reader returns).

Decoding trusts nothing: every column's dtype and length, every sensor index,
the order column's counts and every meta are checked before the first frame is
built (:class:`ColumnChunk`); a mismatch is a ``ValueError`` that the chunk
reader (:mod:`recordings.hfr._chunk_records`) turns into
:class:`~recordings.errors.CorruptChunk`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from fusion import Frame
from recordings.hfr._columns import GENERIC, MAX_GROUPS

__all__ = ["ColumnChunk", "delta_decode"]

_INT64 = np.dtype("<i8")
_ORDER = np.dtype("u1")


class _Group:
    """Reader side of one group: validated, delta-decoded columns; payloads are views."""

    __slots__ = ("data", "metas", "sensor", "seq", "t", "t_arrival", "t_sensor")

    def __init__(self, wire: Any, names: Sequence[str]) -> None:
        if not isinstance(wire, list) or len(wire) != 8:
            raise ValueError("a column group is not an 8-item array")
        sidx, count, seq, t, ts, ta, data, metas = wire
        if type(sidx) is not int or not 0 <= sidx < len(names):
            raise ValueError(f"column group sensor index {sidx!r} is out of range")
        if type(count) is not int or count < 0:
            raise ValueError(f"column group count {count!r} is invalid")
        self.sensor = names[sidx]
        self.seq = _int_column(seq, count, "seq")
        self.t = _int_column(t, count, "t")
        self.t_sensor = None if ts is None else _int_column(ts, count, "t_sensor")
        self.t_arrival = None if ta is None else _int_column(ta, count, "t_arrival")
        if not isinstance(data, np.ndarray) or data.ndim < 2 or data.shape[0] != count:
            raise ValueError(f"column group data is not a stack of {count} arrays")
        self.data = data
        if metas is not None and (
            not isinstance(metas, list)
            or len(metas) != count
            or not all(m is None or isinstance(m, dict) for m in metas)
        ):
            raise ValueError(f"column group metas are not {count} maps or nils")
        self.metas: list[dict[str, Any] | None] | None = metas

    def __len__(self) -> int:
        return len(self.t)

    def frames(self, rows: np.ndarray[Any, np.dtype[np.intp]] | None) -> Iterator[Frame]:
        """Frames of every row, or of ``rows`` (indices), built as the iterator advances."""
        if rows is None:
            seq, t = self.seq.tolist(), self.t.tolist()
            ts = t if self.t_sensor is None else self.t_sensor.tolist()
            ta: Any = repeat(None) if self.t_arrival is None else self.t_arrival.tolist()
            data: Any = iter(self.data)
            metas = self.metas
        else:
            seq, t = self.seq[rows].tolist(), self.t[rows].tolist()
            ts = t if self.t_sensor is None else self.t_sensor[rows].tolist()
            ta = repeat(None) if self.t_arrival is None else self.t_arrival[rows].tolist()
            picked = rows.tolist()
            data = map(self.data.__getitem__, picked)
            metas = None if self.metas is None else [self.metas[i] for i in picked]
        # A fresh {} per frame (meta is mutable), made in C by iter(dict, None).
        meta: Any = iter(dict, None) if metas is None else [m or {} for m in metas]
        return map(Frame, repeat(self.sensor), seq, t, data, ts, ta, meta)


def _int_column(x: Any, count: int, what: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    if not isinstance(x, np.ndarray) or x.dtype != _INT64 or x.shape != (count,):
        raise ValueError(f"column {what} is not {count} little-endian int64 values")
    return delta_decode(x)


def delta_decode(c: np.ndarray[Any, np.dtype[np.int64]]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Inverse of :func:`~recordings.hfr._columns.delta_rows` (a running sum modulo 2**64)."""
    return np.cumsum(c, dtype=np.int64)


class ColumnChunk:
    """A decoded columnar chunk: groups, msgpack records and the order between them."""

    __slots__ = ("groups", "order", "records")

    def __init__(self, head: Any, names: Sequence[str], records: list[Frame], count: int) -> None:
        groups_wire, order = head[0], head[1]
        if not isinstance(groups_wire, list) or len(groups_wire) > MAX_GROUPS:
            raise ValueError("the column groups are not an array of at most 255")
        self.groups = [_Group(g, names) for g in groups_wire]
        self.records = records
        sizes = [len(g) for g in self.groups]
        if sum(sizes) + len(records) != count:
            raise ValueError(f"it holds {sum(sizes) + len(records)} frames, its meta says {count}")
        if order is None:
            if len(self.groups) + (1 if records else 0) > 1:
                raise ValueError("several groups but no order column")
        else:
            if (
                not isinstance(order, np.ndarray)
                or order.dtype != _ORDER
                or order.shape != (count,)
            ):
                raise ValueError(f"the order column is not {count} uint8 values")
            expected = np.zeros(256, np.int64)
            expected[: len(sizes)] = sizes
            expected[GENERIC] = len(records)
            if not np.array_equal(np.bincount(order, minlength=256), expected):
                raise ValueError("the order column does not match the group sizes")
        self.order: np.ndarray[Any, np.dtype[np.uint8]] | None = order

    def frames(
        self, wanted: frozenset[str] | None = None, lo: int | None = None, hi: int | None = None
    ) -> Iterator[Frame]:
        """Frames in recorded order, of ``wanted`` sensors (all if None), ``lo <= t < hi``."""
        masks: list[np.ndarray[Any, np.dtype[np.bool_]] | None] = []
        for g in self.groups:
            if wanted is not None and g.sensor not in wanted:
                masks.append(np.zeros(len(g), bool))
            elif lo is None and hi is None:
                masks.append(None)
            else:
                m = np.ones(len(g), bool)
                if lo is not None:
                    m &= g.t >= lo
                if hi is not None:
                    m &= g.t < hi
                masks.append(None if m.all() else m)
        rec_mask = None
        if self.records and (wanted is not None or lo is not None or hi is not None):
            a = -(1 << 63) if lo is None else lo
            b = 1 << 63 if hi is None else hi
            rec_mask = np.fromiter(
                (a <= f.t < b and (wanted is None or f.sensor in wanted) for f in self.records),
                bool,
                len(self.records),
            )
        sources = [
            g.frames(None if m is None else np.flatnonzero(m))
            for g, m in zip(self.groups, masks, strict=True)
        ]
        records: Iterator[Frame] = iter(self.records)
        if rec_mask is not None:
            records = (f for f, keep in zip(self.records, rec_mask.tolist(), strict=True) if keep)
        if self.order is None:
            return sources[0] if sources else records
        order = self.order
        if rec_mask is not None or any(m is not None for m in masks):
            keep = np.ones(len(order), bool)
            for i, mask in enumerate(masks):
                if mask is not None:
                    keep[order == i] = mask
            if rec_mask is not None:
                keep[order == GENERIC] = rec_mask
            order = order[keep]
        nexts: list[Any] = [None] * 256
        for i, src in enumerate(sources):
            nexts[i] = src.__next__
        nexts[GENERIC] = records.__next__
        return _merge(nexts, order.tolist())


def _merge(nexts: list[Any], order: list[int]) -> Iterator[Frame]:
    for k in order:
        yield nexts[k]()
