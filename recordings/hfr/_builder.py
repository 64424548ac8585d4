"""Building a chunk in memory, frame by frame (sans-I/O): the recorder's hot path.

Theory of operation. :class:`ChunkBuilder` keeps two kinds of storage for the
open chunk. A frame whose payload is one small array goes to a column group
(:mod:`recordings.hfr._columns`): its stamps are packed with one ``struct`` call
and its bytes copied once, a few hundred nanoseconds with no per-frame
Python objects kept. Anything else becomes a msgpack record, its arrays
copied into the blob as extension values (``[blob_offset, dtype, shape]``).
An ``order`` byte per frame remembers the recorded order across both.

``seal()`` lays the chunk out: the 1.0 layout (``records pad blob``) when
there is no column row, else the columnar layout (``head pad columns pad
record-arrays``, see ``recordings/hfr/FORMAT.md``), joining the raw buffer once
(the columns and the frame details: :mod:`recordings.hfr._builder_layout`).
Every frame is copied before ``add()`` returns, so callers may reuse their
buffers; a frame that cannot be stored raises
:class:`~fusion.errors.FrameFormatError` and leaves the chunk unchanged.
"""

from __future__ import annotations

import collections
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

from fusion import Frame
from fusion.errors import FrameFormatError
from recordings.hfr import _buffers as buffers
from recordings.hfr._builder_layout import frame_details, seal_columns
from recordings.hfr._chunk_encode import pack
from recordings.hfr._columns import (
    COLUMN_MAX_BYTES,
    GENERIC,
    MAX_GROUPS,
    PACK_ARRIVAL,
    PACK_TIMES,
    ColumnGroup,
)
from recordings.hfr._details import (
    frame_marks,
    payload_brief,
    payload_size,
)
from recordings.hfr._format import BLOB_ALIGN, EXT_NDARRAY, Compression, RecordKind
from recordings.hfr._layout import ChunkMeta, SealedChunk, _dtype_to_wire, _int64
from recordings.hfr._stamp_block import group_stamps, pack_stamps, stamp_columns

_ARRAY_HEADER = 0xDD  # msgpack "array 32" marker, prefixed at seal time


class _Blob:
    """The open chunk's array bytes, in one growable buffer with room kept in front.

    Why not a ``bytearray``: growing one by appending megabyte arrays reallocates
    and copies what it holds again and again (a 4 MiB chunk of 1 MB frames was
    copied about 2.5 times). Here each array is copied once, into place, and at
    seal time the 1.0 layout's records are written into the room in front of
    the arrays (``FRONT`` bytes, enough for thousands of records), so the raw
    chunk is one contiguous buffer, compressed in one shot. One shot rather
    than zstd's streaming API over the parts because it compresses smaller:
    on 174 MB of noisy camera frames and LiDAR sweeps in 2 MiB chunks, 152.2
    against 153.7 MB (the streaming pass was 7 % cheaper in CPU), which is
    what puts the file below mcap's size for the same payloads.
    """

    FRONT = 64 * 1024

    __slots__ = ("_buf", "_len", "largest")

    def __init__(self, capacity: int) -> None:
        self._buf = buffers.take(self.FRONT + max(capacity, 4096))  # maybe a written chunk's
        self._len = 0
        self.largest = 0
        """The most bytes one append took (the builder keeps that much room spare)."""

    def __len__(self) -> int:
        return self._len

    def _reserve(self, n: int) -> np.ndarray:
        start = self.FRONT + self._len
        end = start + n
        if end > len(self._buf):
            grown = buffers.take(max(end, 2 * len(self._buf)))
            grown[:start] = self._buf[:start]
            buffers.give(self._buf)
            self._buf = grown
        self._len += n
        return self._buf[start:end]

    def pad(self, align: int) -> None:
        """Zero bytes up to the next multiple of ``align``."""
        n = -self._len % align
        if n:
            self._reserve(n)[:] = 0

    def append(self, data: np.ndarray) -> None:
        """Copy the bytes of a C-contiguous array."""
        n = data.nbytes
        if n > self.largest:
            self.largest = n
        self._reserve(n)[:] = data.reshape(-1).view(np.uint8)

    def truncate(self, n: int) -> None:
        self._len = n

    @property
    def buffer(self) -> np.ndarray:
        """The whole buffer (what :meth:`ChunkBuilder.recycle` takes back)."""
        return self._buf

    def view(self) -> memoryview:
        """The bytes so far (a view: valid until the next append)."""
        return self._buf.data[self.FRONT : self.FRONT + self._len]

    def with_front(self, front: list[Any]) -> memoryview | None:
        """``front`` (bytes-like pieces) written just before the arrays, and the whole as
        one view; ``None`` when it does not fit in the room kept in front."""
        joined = b"".join(front)  # the small parts in one C call, then one copy into place
        at = self.FRONT - len(joined)
        if at < 0:
            return None
        self._buf.data[at : self.FRONT] = joined
        return self._buf.data[at : self.FRONT + self._len]

    def join(self, parts: list[Any]) -> memoryview:
        """``parts`` (this blob's :meth:`view` among them) one after the other in a buffer
        from :mod:`recordings.hfr._buffers`, which takes the place of this blob's (given
        back): what a seal does when the head and columns do not fit in the room in
        front of the arrays. A ``bytearray`` joined there was a large allocation per
        chunk (the bench's drive: 230 KB each second), freed by the writer thread."""
        views = [memoryview(p).cast("B") for p in parts]
        size = sum(v.nbytes for v in views)
        out = buffers.take(size)
        into = out.data
        at = 0
        for v in views:
            into[at : at + v.nbytes] = v
            at += v.nbytes
        del views
        buffers.give(self._buf)
        self._buf = out
        self._len = 0
        return into[:size]

    def store(self, arr: np.ndarray) -> msgpack.ExtType:
        """Copy ``arr`` in (aligned) for a record; the msgpack value that refers to it."""
        if arr.dtype.hasobject:
            raise TypeError(
                f"cannot store an array of dtype {arr.dtype} (objects are never pickled)"
            )
        shape = list(arr.shape)  # ascontiguousarray turns 0-d into 1-d
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        # Large arrays start on a 64-byte boundary (SIMD); small ones on 16, so a
        # 48-byte IMU sample does not drag 16 bytes of padding along.
        self.pad(BLOB_ALIGN if arr.nbytes >= 4096 else 16)
        offset = len(self)
        if arr.nbytes:
            self.append(arr)
        ref = [offset, _dtype_to_wire(arr.dtype), shape]
        return msgpack.ExtType(EXT_NDARRAY, pack(ref))


@dataclass(slots=True)
class ChunkBuilder:
    """Accumulates frames into one chunk's raw buffer (sans-I/O).

    ``add()`` copies the frame's arrays (so the caller may reuse its buffers
    at once) and returns the raw size so far; ``seal()`` returns the finished
    chunk and resets the builder for the next one. A frame whose payload is
    one small array goes to a column group (:mod:`recordings.hfr._columns`): a
    handful of C-level appends; anything else becomes a msgpack record. A
    chunk with no column rows is sealed in the 1.0 layout (``CHUNK``), one
    with some in the columnar layout (``COLUMNS``).
    """

    index: int = 0
    on_new_sensor: Callable[[str], Mapping[str, Any] | None] | None = None
    """Called when a chunk first holds a frame of a sensor (after it was accepted),
    unless ``add`` was given ``new_spec``: the spec to declare with it, or None."""
    _records: bytearray = field(default_factory=bytearray)
    capacity: int = 4 * 1024 * 1024
    """Raw bytes a chunk is expected to reach (the recorder's ``chunk_bytes``): the blob's
    first allocation, so that a chunk's arrays are copied once."""
    _blob: _Blob = field(init=False)
    _sensors: dict[str, int] = field(default_factory=dict)
    _counts: list[int] = field(default_factory=list)
    _ranges: list[list[int] | None] = field(default_factory=list)
    _new: list[Mapping[str, Any]] = field(default_factory=list)
    _groups: dict[tuple[Any, ...], ColumnGroup] = field(default_factory=dict)
    _last: dict[str, ColumnGroup] = field(default_factory=dict)
    _order: bytearray = field(default_factory=bytearray)
    _nrecords: int = 0
    stamp_blocks: bool = True
    """Seal each chunk with its stamp block (format 1.4; see :mod:`recordings.hfr._stamp_block`)."""
    _rec_stamps: list[tuple[int, int, int, int | None]] = field(default_factory=list)
    """``(sensor index, seq, t, t_arrival)`` of each msgpack record, in order (1.4)."""
    _rec_details: list[tuple[int, int, tuple[int, ...] | None, int]] = field(default_factory=list)
    """``(t_sensor - t, size, shape, flag)`` of each msgpack record, in order (1.6)."""
    _marks: list[tuple[int, tuple[int, int | None, Any, Any]]] = field(default_factory=list)
    """``(row, frame_marks(meta))`` of each frame whose meta has a detail key (1.6)."""
    _firsts: dict[int, list[Any]] = field(default_factory=dict)
    """Sensor index -> the payload brief of its first frame in the chunk (1.6)."""
    _count: int = 0
    _size: int = BLOB_ALIGN + 5
    _t0: int = 0
    _t1: int = 0
    _packer: Any = None
    _spare: int = 0

    def __post_init__(self) -> None:
        self._blob = _Blob(self.capacity)
        self._packer = msgpack.Packer(default=self._default, use_bin_type=True, autoreset=True)

    @property
    def count(self) -> int:
        return self._count

    @property
    def size(self) -> int:
        """Raw bytes the chunk would have if sealed now (columns: a close upper bound)."""
        return self._size

    def sensor_counts(self) -> collections.Counter[str]:
        """Frames per sensor in the open chunk."""
        out = collections.Counter({name: self._counts[i] for name, i in self._sensors.items()})
        for g in self._groups.values():
            out[g.sensor] += len(g)
        return +out

    def add(self, frame: Frame, new_spec: Mapping[str, Any] | None = None) -> int:
        """Append ``frame``; ``new_spec`` declares its sensor for the file's first time.

        Raises :class:`~fusion.errors.FrameFormatError` (and leaves the chunk
        unchanged) when the payload cannot be stored.
        """
        # The hot path: a small array goes to its column group with one
        # struct pack (which also checks the int64 range) and one copy.
        data = frame.data
        if type(data) is np.ndarray:
            ta = frame.t_arrival
            g = self._last.get(frame.sensor)
            if (
                g is None
                or (g.dtype is not data.dtype and g.dtype != data.dtype)
                or g.shape != data.shape
                or g.no_arrival is not (ta is None)
            ):
                g = self._group(frame.sensor, data, ta is None)
            if g is not None:
                ints = g.ints
                n = len(ints)
                try:
                    if ta is None:
                        ints += PACK_TIMES(frame.seq, frame.t, frame.t_sensor)
                    else:
                        ints += PACK_ARRIVAL(frame.seq, frame.t, frame.t_sensor, ta)
                    if frame.meta:
                        self._add_meta(g, n // (8 * g.width), frame.meta)
                except (struct.error, TypeError, ValueError, OverflowError):
                    # Not int64 times, or an odd meta: the record path accepts
                    # what it can (int() of a float stamp) and words the error.
                    del ints[n:]
                else:
                    g.data += data.tobytes()
                    if new_spec is not None or frame.sensor not in self._sensors:
                        self._register(frame.sensor, new_spec, data)
                    if frame.meta and self.stamp_blocks:
                        self._mark(frame.meta)
                    self._order.append(g.index)
                    self._count += 1
                    self._size += g.row_bytes
                    return self._size
        return self._add_record(frame, new_spec)

    def _add_meta(self, g: ColumnGroup, row: int, meta: Mapping[str, Any]) -> None:
        blob_len = len(self._blob)
        try:
            packed = self._packer.pack(meta)
        except BaseException:
            self._blob.truncate(blob_len)
            raise
        g.metas[row] = packed
        self._size += len(packed) + len(self._blob) - blob_len

    def _group(self, sensor: str, data: np.ndarray, no_arrival: bool) -> ColumnGroup | None:
        """The column group for a payload like ``data``, or None if it goes to a record."""
        dtype = data.dtype
        if dtype.hasobject or data.ndim == 0 or not 0 < data.nbytes < COLUMN_MAX_BYTES:
            return None
        key = (sensor, dtype, data.shape, no_arrival)
        g = self._groups.get(key)
        if g is None:
            if len(self._groups) >= MAX_GROUPS:
                return None
            g = self._groups[key] = ColumnGroup(
                len(self._groups), sensor, dtype, data.shape, no_arrival
            )
        self._last[sensor] = g
        return g

    def _mark(self, meta: Mapping[str, Any]) -> None:
        """Note the detail keys of the meta of the frame about to be added (1.6)."""
        marks = frame_marks(meta)
        if marks is not None:
            self._marks.append((self._count, marks))

    def _register(self, sensor: str, new_spec: Mapping[str, Any] | None, data: Any) -> int:
        sidx = self._sensors.get(sensor)
        if sidx is None:
            sidx = self._sensors[sensor] = len(self._sensors)
            if self.stamp_blocks:
                self._firsts[sidx] = payload_brief(data)
            self._counts.append(0)
            self._ranges.append(None)
            if new_spec is None and self.on_new_sensor is not None:
                new_spec = self.on_new_sensor(sensor)
            if new_spec is not None:
                self._new.append(new_spec)
        return sidx

    def _add_record(self, frame: Frame, new_spec: Mapping[str, Any] | None) -> int:
        sidx = self._sensors.get(frame.sensor)
        blob_len = len(self._blob)
        try:
            t = _int64(frame.t, "t")
            ts = None if frame.t_sensor == frame.t else _int64(frame.t_sensor, "t_sensor")
            ta = None if frame.t_arrival is None else _int64(frame.t_arrival, "t_arrival")
            packed = self._packer.pack(
                [
                    len(self._sensors) if sidx is None else sidx,
                    _int64(frame.seq, "seq"),
                    t,
                    ts,
                    ta,
                    frame.data,
                    frame.meta or None,
                ]
            )
        except (TypeError, ValueError, OverflowError) as err:
            self._blob.truncate(blob_len)
            raise FrameFormatError(
                sensor=frame.sensor,
                seq=frame.seq,
                expected="int64 times and data made of numpy arrays, bytes, str, numbers, "
                "lists and dicts",
                found=str(err),
            ) from err
        sidx = self._register(frame.sensor, new_spec, frame.data)
        self._counts[sidx] += 1
        r = self._ranges[sidx]
        if r is None:
            self._ranges[sidx] = [t, t]
        elif t < r[0]:
            r[0] = t
        elif t > r[1]:
            r[1] = t
        self._records += packed
        if self.stamp_blocks:
            self._rec_stamps.append((sidx, frame.seq, t, ta))
            self._rec_details.append((0 if ts is None else ts - t, *payload_size(frame.data)))
            if frame.meta:
                self._mark(frame.meta)
        if self._nrecords == 0:
            self._t0 = self._t1 = t
        else:
            self._t0 = min(self._t0, t)
            self._t1 = max(self._t1, t)
        self._nrecords += 1
        self._order.append(GENERIC)
        self._count += 1
        self._size += len(packed) + 1 + len(self._blob) - blob_len
        return self._size

    def seal(self, wall: tuple[int, int] | None = None) -> SealedChunk:
        """Finish the chunk (must hold at least one frame) and reset the builder; ``wall``
        is the chunk meta's ``(reference ns, UTC ns)`` anchor, if any."""
        if self._count == 0:
            raise ValueError("cannot seal an empty chunk")
        groups = [g for g in self._groups.values() if len(g)]
        if groups:
            raw, records_size, t0, t1, deltas = seal_columns(self, groups)
            parts: list[bytes | bytearray | memoryview] = [raw]
            kind = RecordKind.COLUMNS
        else:
            head = bytes([_ARRAY_HEADER]) + self._count.to_bytes(4, "big")
            records_size = len(head) + len(self._records)
            front: list[bytes | bytearray] = [head, self._records]
            front.append(bytes(-records_size % BLOB_ALIGN))
            whole = self._blob.with_front(front)
            # One contiguous buffer when the records fit in front of the arrays; else
            # parts, which the writer compresses in one streaming pass without joining.
            parts = [whole] if whole is not None else [*front, self._blob.view()]
            t0, t1 = self._t0, self._t1
            kind = RecordKind.CHUNK
        ranges = self._ranges
        meta = ChunkMeta(
            index=self.index,
            t_start=t0,
            t_end=t1,
            count=self._count,
            raw_size=sum(len(p) for p in parts),
            records_size=records_size,
            compression=Compression.ZSTD,
            sensors=tuple(self._sensors),
            counts=tuple(self._counts),
            ranges=tuple((r[0], r[1]) for r in ranges if r is not None),
            new_specs=tuple(self._new),
            kind=kind,
            wall=wall,
        )
        if len(meta.ranges) != len(meta.sensors):
            raise AssertionError("a registered sensor has no frames")  # pragma: no cover
        stamps = details = None
        if self.stamp_blocks:
            order = np.frombuffer(self._order, np.uint8)
            if len(groups) == 1 and not self._rec_stamps:  # one sensor's small arrays
                g = groups[0]
                columns, stamps = group_stamps(self._sensors[g.sensor], g.table(), deltas[0])
            else:
                columns = stamp_columns(
                    self._count,
                    order,
                    [(g.index, self._sensors[g.sensor], g.ints, g.width) for g in groups],
                    self._rec_stamps,
                )
                stamps = pack_stamps(columns)
            details = frame_details(
                self._count, order, groups, self._rec_details, self._marks, self._firsts
            )
            details.stamps = columns  # the writer's stamp index takes them as they are
        buffer = self._blob.buffer
        self._rec_stamps = []
        self._rec_details = []
        self._marks = []
        self._firsts = {}
        self.index += 1
        self._records = bytearray()
        # The frame that fills a chunk lands past ``capacity``: keep room for the largest
        # frame seen (up to ``capacity`` more), or growing would copy the chunk again
        # (4 MiB chunks of 1 MB frames: 60-80 % of every byte copied twice).
        self._spare = min(max(self._spare, self._blob.largest), self.capacity)
        self._blob = _Blob(self.capacity + self._spare)
        self._sensors = {}
        self._counts = []
        self._ranges = []
        self._new = []
        self._groups = {}
        self._last = {}
        self._order = bytearray()
        self._nrecords = 0
        self._count = 0
        self._size = BLOB_ALIGN + 5
        return SealedChunk(parts, meta, stamps, details, buffer)

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            return self._blob.store(obj)
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, (bytearray, memoryview)):
            return bytes(obj)
        if isinstance(obj, tuple):
            return list(obj)
        raise TypeError(f"cannot store a value of type {type(obj).__name__}")
