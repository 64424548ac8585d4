"""A recording's stamps as numpy columns, read without building any frame or payload.

Theory of operation. The chunk meta in the footer index says which sensors a
chunk holds, how many frames of each and their time range, but not the
stamps themselves: those live inside the compressed payload. So
:func:`read_stamps` reads, for every chunk that holds a wanted sensor (the
others are skipped on their meta alone):

* the payload, CRC-checked and decompressed (:meth:`Recording.raw_chunk`);
* of a columnar chunk (``COLUMNS``, 1.1): the msgpack head, with its column
  references resolved only for the ``seq``, ``t`` and ``order`` columns (one
  ``np.frombuffer`` view and a running sum each); the stacked payload column
  is never touched;
* of a record chunk (``CHUNK``, 1.0) and the records of a columnar one: each
  record's ``[sensor, seq, t, ...]`` list as msgpack decodes it. Array
  payloads stay unresolved references (no array is made); a ``bytes`` payload
  or a meta map is decoded by msgpack as a small Python object and dropped.

A frame is then named by ``(chunk, k)``: the chunk's position in
:attr:`Recording.chunks` and the frame's rank among that sensor's frames in
the chunk, in recorded order, which is what :class:`FrameFetcher` needs to
find it again. Memory is 32 bytes per frame, whatever the payloads weigh.

A chunk whose stamps do not decode is reported in :attr:`Recording.damage`
and skipped, as reading its frames would (raised with ``strict``).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from fusion.frames import Frame
from recordings.errors import CorruptChunk, RecordingError
from recordings.format import EXT_COLUMN, EXT_NDARRAY, RecordKind
from recordings.layout import ChunkMeta, blob_offset
from recordings.reader import Recording
from recordings.records import open_columns_head

__all__ = ["FrameFetcher", "SensorStamps", "read_stamps"]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_I8 = np.dtype("<i8")
_GENERIC = 255


@dataclass(frozen=True, slots=True)
class SensorStamps:
    """One sensor's frames in recorded order: parallel int64 columns."""

    sensor: str
    t: Int64
    """Aligned time ``t`` of each frame, ns."""
    seq: Int64
    chunk: Int64
    """Position of the frame's chunk in :attr:`Recording.chunks`."""
    rank: Int64
    """Rank of the frame among this sensor's frames of its chunk (recorded order)."""

    def __len__(self) -> int:
        return len(self.t)

    def take(self, keep: np.ndarray[Any, Any]) -> SensorStamps:
        """The rows selected by ``keep`` (a boolean mask or indices)."""
        return SensorStamps(
            self.sensor, self.t[keep], self.seq[keep], self.chunk[keep], self.rank[keep]
        )


def read_stamps(
    log: Recording,
    sensors: Iterable[str],
    start: int | None = None,
    end: int | None = None,
) -> dict[str, SensorStamps]:
    """Stamps of ``sensors`` with ``start <= t < end``, in recorded order, per sensor."""
    names = list(dict.fromkeys(sensors))
    parts: dict[str, list[tuple[Int64, Int64, Int64, Int64]]] = {s: [] for s in names}
    position = {id(c): i for i, c in enumerate(log.chunks)}
    for chunk in log.select(names, start, end):
        try:
            raw = log.raw_chunk(chunk)
            table = _chunk_stamps(raw, chunk, str(log.path))
        except RecordingError as err:
            log._report(err)
            if log.strict:
                raise
            continue
        ci = position[id(chunk)]
        for sensor, (t, seq) in table.items():
            if sensor not in parts:
                continue
            rank = np.arange(len(t), dtype=np.int64)
            keep = None
            if start is not None or end is not None:
                lo = -(1 << 63) if start is None else start
                hi = (1 << 63) - 1 if end is None else end
                keep = (t >= lo) & (t < hi)
            col = np.full(len(t), ci, np.int64)
            if keep is not None:
                t, seq, col, rank = t[keep], seq[keep], col[keep], rank[keep]
            parts[sensor].append((t, seq, col, rank))
    out = {}
    for sensor in names:
        cols = parts[sensor]
        if cols:
            t, seq, col, rank = (np.concatenate(c) for c in zip(*cols, strict=True))
        else:
            t = seq = col = rank = np.empty(0, np.int64)
        out[sensor] = SensorStamps(sensor, t, seq, col, rank)
    return out


def _chunk_stamps(
    raw: np.ndarray[Any, Any], meta: ChunkMeta, where: str
) -> dict[str, tuple[Int64, Int64]]:
    """``{sensor: (t, seq)}`` of one decompressed chunk, each in recorded order."""
    try:
        return _decode_stamps(raw, meta)
    except Exception as err:  # msgpack raises many types on garbage; all mean "corrupt"
        raise CorruptChunk(
            f"{meta.describe()} is damaged: its stamps do not decode ({err})",
            path=where,
            offset=meta.offset,
        ) from err


def _decode_stamps(raw: np.ndarray[Any, Any], meta: ChunkMeta) -> dict[str, tuple[Int64, Int64]]:
    names = meta.sensors
    head_bytes = raw.data[: meta.records_size]
    blob_start = blob_offset(meta.records_size)
    blob_len = len(raw) - blob_start

    def ext_hook(code: int, body: bytes) -> Any:
        # Only a column reference is kept, as its (offset, dtype, shape); an
        # array payload is never made.
        if code == EXT_COLUMN:
            return tuple(msgpack.unpackb(body, raw=False))
        if code == EXT_NDARRAY:
            return None
        return msgpack.ExtType(code, body)

    if meta.kind == RecordKind.COLUMNS:
        unpacker, split = open_columns_head(head_bytes, blob_len, ext_hook)
        groups, order_ref, rows = (unpacker.unpack() for _ in range(3))

        def column(ref: Any, count: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
            if not isinstance(ref, tuple) or len(ref) != 3:
                raise ValueError("a column reference is malformed")
            offset, wire_dtype, shape = ref
            if wire_dtype != dtype.str or shape != [count]:
                raise ValueError(f"a column is not {count} values of {dtype.str}")
            if type(offset) is not int or offset < 0 or offset + count * dtype.itemsize > split:
                raise ValueError(f"a column at blob offset {offset} overruns its region")
            return np.frombuffer(raw, dtype, count, blob_start + offset)

        if not isinstance(groups, list) or not isinstance(rows, list):
            raise ValueError("the groups or records are not arrays")
        sources: list[tuple[int, Int64, Int64]] = []
        for g in groups:
            if not isinstance(g, list) or len(g) != 8:
                raise ValueError("a column group is not an 8-item array")
            sidx, count = g[0], g[1]
            if type(sidx) is not int or not 0 <= sidx < len(names):
                raise ValueError(f"column group sensor index {sidx!r} is out of range")
            if type(count) is not int or count < 0:
                raise ValueError(f"column group count {count!r} is invalid")
            seq = np.cumsum(column(g[2], count, _I8), dtype=np.int64)
            t = np.cumsum(column(g[3], count, _I8), dtype=np.int64)
            sources.append((sidx, t, seq))
        rec_sidx, rec_t, rec_seq = _record_columns(rows, len(names))
        total = sum(len(t) for _, t, _ in sources) + len(rec_t)
        if total != meta.count:
            raise ValueError(f"it holds {total} frames, its meta says {meta.count}")
        if order_ref is None:
            if len(sources) + (1 if len(rec_t) else 0) > 1:
                raise ValueError("several groups but no order column")
            order = np.full(total, 0 if sources else _GENERIC, np.uint8)
        else:
            order = column(order_ref, total, np.dtype("u1"))
        # Every frame's sensor, t and seq in recorded order, from the order column.
        sidx_all = np.empty(total, np.int64)
        t_all = np.empty(total, np.int64)
        seq_all = np.empty(total, np.int64)
        for i, (sidx, t, seq) in enumerate(sources):
            where = order == i
            if int(where.sum()) != len(t):
                raise ValueError("the order column does not match the group sizes")
            sidx_all[where] = sidx
            t_all[where] = t
            seq_all[where] = seq
        where = order == _GENERIC
        if int(where.sum()) != len(rec_t):
            raise ValueError("the order column does not match the records")
        sidx_all[where] = rec_sidx
        t_all[where] = rec_t
        seq_all[where] = rec_seq
    else:
        rows = msgpack.unpackb(head_bytes, ext_hook=ext_hook, raw=False, strict_map_key=False)
        if not isinstance(rows, list) or len(rows) != meta.count:
            raise ValueError(f"it holds a different number of records than its meta's {meta.count}")
        sidx_all, t_all, seq_all = _record_columns(rows, len(names))
    out = {}
    for i, name in enumerate(names):
        mask = sidx_all == i
        out[name] = (t_all[mask], seq_all[mask])
    return out


def _record_columns(rows: list[Any], n_sensors: int) -> tuple[Int64, Int64, Int64]:
    """``(sensor index, t, seq)`` of msgpack records ``[sensor, seq, t, ...]``."""
    sidx = np.empty(len(rows), np.int64)
    t = np.empty(len(rows), np.int64)
    seq = np.empty(len(rows), np.int64)
    for k, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 7:
            raise ValueError(f"record {k} is not a 7-item array")
        s, q, tt = row[0], row[1], row[2]
        if (
            type(s) is not int
            or not 0 <= s < n_sensors
            or type(q) is not int
            or type(tt) is not int
        ):
            raise ValueError(f"record {k} has a bad sensor index, seq or t")
        sidx[k], seq[k], t[k] = s, q, tt
    return sidx, t, seq


class FrameFetcher:
    """Frames named by their stamp rows, with payloads, decoding each chunk once.

    The last ``cache`` decoded chunks are kept (their frames of the wanted
    sensors, built once), so asking for frames in time order, as groups do,
    decodes every chunk about once while memory stays at ``cache`` chunks.
    """

    def __init__(self, log: Recording, stamps: Mapping[str, SensorStamps], cache: int = 4) -> None:
        self.log = log
        self.stamps = stamps
        self.cache = max(1, cache)
        self.chunks_decoded = 0
        self._wanted = frozenset(stamps)
        self._lru: collections.OrderedDict[int, dict[str, list[Frame]]] = collections.OrderedDict()

    def frame(self, sensor: str, row: int) -> Frame:
        """The frame at ``row`` of ``stamps[sensor]``."""
        st = self.stamps[sensor]
        return self._chunk(int(st.chunk[row]))[sensor][int(st.rank[row])]

    def frames(self, sensor: str, lo: int, hi: int) -> list[Frame]:
        """The frames at rows ``lo..hi-1`` of ``stamps[sensor]``, in order."""
        st = self.stamps[sensor]
        chunks, ranks = st.chunk[lo:hi].tolist(), st.rank[lo:hi].tolist()
        return [self._chunk(c)[sensor][k] for c, k in zip(chunks, ranks, strict=True)]

    def _chunk(self, ci: int) -> dict[str, list[Frame]]:
        got = self._lru.get(ci)
        if got is not None:
            self._lru.move_to_end(ci)
            return got
        chunk = self.log.chunks[ci]
        by_sensor: dict[str, list[Frame]] = {}
        for frame in self.log.decode_chunk(chunk).frames(self._wanted):
            lst = by_sensor.get(frame.sensor)
            if lst is None:
                lst = by_sensor[frame.sensor] = []
            lst.append(frame)
        self.chunks_decoded += 1
        self._lru[ci] = by_sensor
        if len(self._lru) > self.cache:
            self._lru.popitem(last=False)
        return by_sensor
