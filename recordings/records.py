"""Pure encode/decode of ``.hfr`` records: a chunk codes and decodes without a file.

Theory of operation. A chunk is built in memory by :class:`ChunkBuilder`, one
frame at a time, as two regions of one raw buffer::

    raw := records blob
    records := msgpack array of [sensor, seq, t, t_sensor, t_arrival, data, meta]
    blob    := array bytes, each starting at a multiple of BLOB_ALIGN

``sensor`` is an index into the chunk's own sensor list (``meta["s"]``), so
every chunk names its sensors and stays readable when the file header is lost.
``t_sensor`` is ``nil`` when equal to ``t`` and ``meta`` ``nil`` when empty,
which keeps small messages small. An array inside ``data`` or ``meta`` is an
extension value (:data:`~recordings.format.EXT_NDARRAY`) holding
``[blob_offset, dtype, shape]``; its bytes live in the blob, so the reader
returns ``np.frombuffer`` views of the decompressed chunk: zero-copy, read-only
and aligned. Nothing is ever pickled; an object dtype is refused both ways.

Everything read from a file is untrusted: every size is checked against the
buffer it points into and against the caller's limits *before* allocating,
and every failure becomes a :class:`~fusion.errors.CorruptChunk` or
:class:`~fusion.errors.LimitExceeded` naming the chunk.
"""

from __future__ import annotations

import collections
import math
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np
import zstandard

from fusion.errors import CorruptChunk, FrameFormatError, LimitExceeded
from fusion.frames import Frame, SensorSpec
from recordings.columns import (
    COLUMN_MAX_BYTES,
    GENERIC,
    MAX_GROUPS,
    PACK_ARRIVAL,
    PACK_TIMES,
    ColumnChunk,
    ColumnGroup,
    delta_encode,
    pack_metas,
)
from recordings.format import (
    BLOB_ALIGN,
    CHUNK_KINDS,
    EXT_COLUMN,
    EXT_NDARRAY,
    Compression,
    RecordKind,
)

_ARRAY_HEADER = 0xDD  # msgpack "array 32" marker, prefixed at seal time


@dataclass(frozen=True, slots=True)
class ChunkMeta:
    """What a chunk's uncompressed meta says about it: enough to skip or verify it."""

    index: int
    """Position of the chunk in its file, from 0."""
    t_start: int
    """Smallest ``t`` of its frames, ns."""
    t_end: int
    """Largest ``t`` of its frames, ns (inclusive)."""
    count: int
    """Number of frames."""
    raw_size: int
    """Bytes after decompression."""
    records_size: int
    """Bytes of the records region at the start of the raw buffer (the blob follows
    at the next multiple of ``BLOB_ALIGN``)."""
    compression: Compression
    """How the payload is stored."""
    sensors: tuple[str, ...]
    """Sensor names, in the chunk's own index order."""
    counts: tuple[int, ...]
    """Frames per sensor, parallel to ``sensors``."""
    ranges: tuple[tuple[int, int], ...] = ()
    """``(first t, last t)`` per sensor, parallel to ``sensors``."""
    new_specs: tuple[Mapping[str, Any], ...] = ()
    """Specs of sensors first seen in this chunk (``SensorSpec.to_dict``)."""
    offset: int = -1
    """Byte offset of the chunk's record in the file (-1 before it is written)."""
    stored_size: int = -1
    """Bytes of the payload as stored in the file."""
    kind: int = RecordKind.CHUNK
    """Record kind: ``CHUNK`` (msgpack records, 1.0) or ``COLUMNS`` (columnar, 1.1)."""

    def to_msgpack(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "i": self.index,
            "t0": self.t_start,
            "t1": self.t_end,
            "n": self.count,
            "raw": self.raw_size,
            "rec": self.records_size,
            "z": int(self.compression),
            "s": list(self.sensors),
            "c": list(self.counts),
            "r": [list(r) for r in self.ranges],
            "new": [dict(s) for s in self.new_specs],
        }
        if self.kind != RecordKind.CHUNK:
            d["k"] = int(self.kind)
        return d

    @classmethod
    def from_msgpack(
        cls, d: Any, *, offset: int = -1, stored_size: int = -1, kind: int | None = None
    ) -> ChunkMeta:
        """Validate and build; any inconsistency raises ``ValueError``/``TypeError``.

        ``kind`` is the kind of the record the meta came from (scan path); the
        index says it with ``"k"`` (absent: ``CHUNK``).
        """
        if not isinstance(d, dict):
            raise TypeError(f"chunk meta is a {type(d).__name__}, not a map")
        stated = d.get("k", RecordKind.CHUNK)
        if stated not in CHUNK_KINDS or (kind is not None and kind != stated):
            raise ValueError(f"chunk kind {stated!r} is unknown or does not match its record")
        sensors = tuple(d["s"])
        counts = tuple(d["c"])
        ints = (d["i"], d["t0"], d["t1"], d["n"], d["raw"], d["rec"], *counts)
        if not all(type(x) is int for x in ints) or not all(type(s) is str for s in sensors):
            raise TypeError("chunk meta fields have the wrong types")
        if len(sensors) != len(counts) or sum(counts) != d["n"] or min(counts, default=0) < 0:
            raise ValueError("chunk meta sensor counts do not add up")
        if d["rec"] < 0 or blob_offset(d["rec"]) > d["raw"] or d["t0"] > d["t1"]:
            raise ValueError("chunk meta sizes or time range are inconsistent")
        ranges = tuple((r[0], r[1]) for r in d["r"])
        if len(ranges) != len(sensors) or not all(
            type(a) is int and type(b) is int and a <= b for a, b in ranges
        ):
            raise ValueError("chunk meta sensor time ranges are inconsistent")
        new = d.get("new") or []
        if not isinstance(new, list) or not all(isinstance(s, dict) for s in new):
            raise TypeError("chunk meta 'new' is not a list of specs")
        return cls(
            index=d["i"],
            t_start=d["t0"],
            t_end=d["t1"],
            count=d["n"],
            raw_size=d["raw"],
            records_size=d["rec"],
            compression=Compression(d["z"]),
            sensors=sensors,
            counts=counts,
            ranges=ranges,
            new_specs=tuple(new),
            offset=offset,
            stored_size=stored_size,
            kind=stated,
        )

    def count_of(self, sensor: str) -> int:
        try:
            return self.counts[self.sensors.index(sensor)]
        except ValueError:
            return 0

    def describe(self) -> str:
        """``chunk 3 (t 1000..2000 ns, 12 frames)``: for error messages."""
        return f"chunk {self.index} (t {self.t_start}..{self.t_end} ns, {self.count} frames)"


@dataclass(slots=True)
class SealedChunk:
    """A chunk closed by the builder, ready to compress: raw buffer and meta."""

    raw: bytearray
    meta: ChunkMeta


@dataclass(slots=True)
class ChunkBuilder:
    """Accumulates frames into one chunk's raw buffer (sans-I/O).

    ``add()`` copies the frame's arrays (so the caller may reuse its buffers
    at once) and returns the raw size so far; ``seal()`` returns the finished
    chunk and resets the builder for the next one. A frame whose payload is
    one small array goes to a column group (:mod:`recordings.columns`): a
    handful of C-level appends; anything else becomes a msgpack record. A
    chunk with no column rows is sealed in the 1.0 layout (``CHUNK``), one
    with some in the columnar layout (``COLUMNS``).
    """

    index: int = 0
    on_new_sensor: Callable[[str], Mapping[str, Any] | None] | None = None
    """Called when a chunk first holds a frame of a sensor (after it was accepted),
    unless ``add`` was given ``new_spec``: the spec to declare with it, or None."""
    _records: bytearray = field(default_factory=bytearray)
    _blob: bytearray = field(default_factory=bytearray)
    _sensors: dict[str, int] = field(default_factory=dict)
    _counts: list[int] = field(default_factory=list)
    _ranges: list[list[int] | None] = field(default_factory=list)
    _new: list[Mapping[str, Any]] = field(default_factory=list)
    _groups: dict[tuple[Any, ...], ColumnGroup] = field(default_factory=dict)
    _last: dict[str, ColumnGroup] = field(default_factory=dict)
    _order: bytearray = field(default_factory=bytearray)
    _nrecords: int = 0
    _count: int = 0
    _size: int = BLOB_ALIGN + 5
    _t0: int = 0
    _t1: int = 0
    _packer: Any = None

    def __post_init__(self) -> None:
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
                        self._register(frame.sensor, new_spec)
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
            del self._blob[blob_len:]
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

    def _register(self, sensor: str, new_spec: Mapping[str, Any] | None) -> int:
        sidx = self._sensors.get(sensor)
        if sidx is None:
            sidx = self._sensors[sensor] = len(self._sensors)
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
            del self._blob[blob_len:]
            raise FrameFormatError(
                sensor=frame.sensor,
                seq=frame.seq,
                expected="int64 times and data made of numpy arrays, bytes, str, numbers, "
                "lists and dicts",
                found=str(err),
            ) from err
        sidx = self._register(frame.sensor, new_spec)
        self._counts[sidx] += 1
        r = self._ranges[sidx]
        if r is None:
            self._ranges[sidx] = [t, t]
        elif t < r[0]:
            r[0] = t
        elif t > r[1]:
            r[1] = t
        self._records += packed
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

    def seal(self) -> SealedChunk:
        """Finish the chunk (must hold at least one frame) and reset the builder."""
        if self._count == 0:
            raise ValueError("cannot seal an empty chunk")
        groups = [g for g in self._groups.values() if len(g)]
        if groups:
            raw, records_size, t0, t1 = self._seal_columns(groups)
            kind = RecordKind.COLUMNS
        else:
            head = bytes([_ARRAY_HEADER]) + self._count.to_bytes(4, "big")
            records_size = len(head) + len(self._records)
            raw = bytearray(head)
            raw += self._records
            raw += bytes(-records_size % BLOB_ALIGN)
            raw += self._blob
            t0, t1 = self._t0, self._t1
            kind = RecordKind.CHUNK
        ranges = self._ranges
        meta = ChunkMeta(
            index=self.index,
            t_start=t0,
            t_end=t1,
            count=self._count,
            raw_size=len(raw),
            records_size=records_size,
            compression=Compression.ZSTD,
            sensors=tuple(self._sensors),
            counts=tuple(self._counts),
            ranges=tuple((r[0], r[1]) for r in ranges if r is not None),
            new_specs=tuple(self._new),
            kind=kind,
        )
        if len(meta.ranges) != len(meta.sensors):
            raise AssertionError("a registered sensor has no frames")  # pragma: no cover
        self.index += 1
        self._records = bytearray()
        self._blob = bytearray()
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
        return SealedChunk(raw, meta)

    def _seal_columns(self, groups: list[ColumnGroup]) -> tuple[bytearray, int, int, int]:
        """``(raw, records_size, t_start, t_end)`` of a columnar chunk (see FORMAT.md).

        The blob is ``columns pad record-arrays``: the columns sit next to the
        head, where they compress best (after megabytes of noisy images they
        cost zstd three times as much), and the records' arrays keep the
        offsets they got in ``add()``, counted from where they now start.
        The raw buffer is joined once, so payload bytes are copied once here.
        """
        t0, t1 = (self._t0, self._t1) if self._nrecords else (1 << 63, -(1 << 63))
        remap = np.full(256, GENERIC, np.uint8)
        blob: list[Any] = []
        end = 0

        def column(c: np.ndarray, shape: list[int] | None = None) -> Any:
            nonlocal end
            pad = -end % BLOB_ALIGN
            blob.append(bytes(pad))
            blob.append(c.data)
            offset = end + pad
            end = offset + c.nbytes
            ref = [offset, _dtype_to_wire(c.dtype), shape or [len(c)]]
            return msgpack.ExtType(EXT_COLUMN, msgpack.packb(ref, use_bin_type=True))

        packed_groups = []
        for i, g in enumerate(groups):
            remap[g.index] = i
            cols = g.columns()
            seq, t, ts = cols[:3]
            lo, hi = int(t.min()), int(t.max())
            t0, t1 = min(t0, lo), max(t1, hi)
            sidx = self._sensors[g.sensor]
            self._counts[sidx] += len(g)
            r = self._ranges[sidx]
            self._ranges[sidx] = [lo, hi] if r is None else [min(r[0], lo), max(r[1], hi)]
            data = np.frombuffer(g.data, g.dtype)
            refs = [
                sidx,
                len(g),
                column(delta_encode(seq)),
                column(delta_encode(t)),
                None if np.array_equal(ts, t) else column(delta_encode(ts)),
                None if g.no_arrival else column(delta_encode(cols[3])),
                column(data, [len(g), *g.shape]),
            ]
            body = msgpack.packb(refs, use_bin_type=True)
            packed_groups.append(b"\x98" + body[1:] + pack_metas(g))  # fixarray 7 -> 8
        order = np.frombuffer(self._order, np.uint8)
        single = len(groups) == 1 and self._nrecords == 0
        order_ref = None if single else column(remap[order])
        split = end + (-end % BLOB_ALIGN)
        blob.append(bytes(split - end))
        blob.append(self._blob)
        head = [b"\x94", msgpack.packb(split), b"\xdc" + len(groups).to_bytes(2, "big")]
        head += packed_groups
        head.append(msgpack.packb(order_ref, use_bin_type=True))
        head.append(b"\xdd" + self._nrecords.to_bytes(4, "big"))
        head.append(self._records)
        records_size = sum(len(h) for h in head)
        head.append(bytes(-records_size % BLOB_ALIGN))
        return bytearray().join(head + blob), records_size, t0, t1

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            return self._store_array(obj)
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, (bytearray, memoryview)):
            return bytes(obj)
        if isinstance(obj, tuple):
            return list(obj)
        raise TypeError(f"cannot store a value of type {type(obj).__name__}")

    def _store_array(self, arr: np.ndarray) -> msgpack.ExtType:
        if arr.dtype.hasobject:
            raise TypeError(
                f"cannot store an array of dtype {arr.dtype} (objects are never pickled)"
            )
        shape = list(arr.shape)  # ascontiguousarray turns 0-d into 1-d
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        blob = self._blob
        # Large arrays start on a 64-byte boundary (SIMD); small ones on 16, so a
        # 48-byte IMU sample does not drag 16 bytes of padding along.
        blob += bytes(-len(blob) % (BLOB_ALIGN if arr.nbytes >= 4096 else 16))
        offset = len(blob)
        if arr.nbytes:
            blob += arr.reshape(-1).view(np.uint8).data
        ref = [offset, _dtype_to_wire(arr.dtype), shape]
        return msgpack.ExtType(EXT_NDARRAY, msgpack.packb(ref, use_bin_type=True))


def _int64(value: Any, what: str) -> int:
    v = int(value)
    if not -(1 << 63) <= v < (1 << 63):
        raise OverflowError(f"{what}={v} does not fit in int64")
    return v


def _dtype_to_wire(dtype: np.dtype[Any]) -> Any:
    if dtype.fields is None and dtype.subdtype is None:
        return dtype.str
    return [list(item) if isinstance(item, tuple) else item for item in _descr(dtype)]


def _descr(dtype: np.dtype[Any]) -> list[Any]:
    out: list[Any] = []
    for item in dtype.descr:
        name, typ, *shape = item
        wire_typ = _descr(np.dtype(typ)) if isinstance(typ, list) else typ
        out.append([name, wire_typ, *([list(shape[0])] if shape else [])])
    return out


def _dtype_from_wire(wire: Any) -> np.dtype[Any]:
    if isinstance(wire, str):
        dtype = np.dtype(wire)
    elif isinstance(wire, list):
        dtype = np.dtype([_field_from_wire(f) for f in wire])
    else:
        raise TypeError(f"dtype is a {type(wire).__name__}")
    if dtype.hasobject:
        raise TypeError(f"refusing object dtype {dtype}")
    return dtype


def _field_from_wire(f: Any) -> tuple[Any, ...]:
    if not isinstance(f, list) or len(f) not in (2, 3) or not isinstance(f[0], str):
        raise TypeError("malformed structured dtype field")
    typ = f[1] if isinstance(f[1], str) else _dtype_from_wire(f[1])
    return (f[0], typ, tuple(f[2])) if len(f) == 3 else (f[0], typ)


def decompress_chunk(
    payload: bytes | memoryview, meta: ChunkMeta, *, max_chunk_bytes: int, where: str = ""
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """The raw buffer of a chunk: read-only, 64-byte aligned, exactly ``meta.raw_size``.

    Never allocates more than the declared size: raises :class:`LimitExceeded`
    if that is over ``max_chunk_bytes``, and :class:`CorruptChunk` if the
    payload does not decompress to exactly that many bytes.
    """
    if meta.raw_size > max_chunk_bytes:
        raise LimitExceeded(
            f"{meta.describe()} declares {meta.raw_size} decompressed bytes, over the "
            f"limit of {max_chunk_bytes}; refusing to decompress it",
            path=where or None,
            offset=meta.offset,
        )
    n = meta.raw_size
    buf = np.empty(n + BLOB_ALIGN, np.uint8)
    start = -buf.ctypes.data % BLOB_ALIGN
    raw = buf[start : start + n]
    if meta.compression == Compression.NONE:
        if len(payload) != n:
            raise _corrupt(meta, where, f"it stores {len(payload)} bytes, its meta says {n}")
        raw[:] = np.frombuffer(payload, np.uint8)
    else:
        try:
            declared = zstandard.frame_content_size(payload)
        except zstandard.ZstdError as err:
            raise _corrupt(meta, where, f"its zstd frame header is invalid ({err})") from err
        if declared not in (-1, n):
            raise _corrupt(meta, where, f"its zstd frame claims {declared} bytes, its meta {n}")
        got = 0
        try:
            with zstandard.ZstdDecompressor().stream_reader(payload) as reader:
                out = raw.data
                while got < n:
                    k = reader.readinto(out[got:])
                    if k == 0:
                        break
                    got += k
                extra = len(reader.read(1)) if got == n else 0
        except zstandard.ZstdError as err:
            raise _corrupt(meta, where, f"it does not decompress ({err})") from err
        if got != n or extra:
            raise _corrupt(
                meta,
                where,
                f"it decompresses to {'more than ' if extra else ''}{got} bytes, not {n}",
            )
    raw.flags.writeable = False
    return raw


class DecodedChunk:
    """A decompressed, validated chunk: its frames on demand, in recorded order.

    Everything is checked when it is built (:func:`decode_chunk`), so iterating
    never raises; frames of a columnar chunk are built as the iterator reaches
    them, and a filter selects rows before any frame exists.
    """

    __slots__ = ("_columns", "_frames", "meta")

    def __init__(
        self, meta: ChunkMeta, frames: list[Frame], columns: ColumnChunk | None = None
    ) -> None:
        self.meta = meta
        self._frames = frames
        self._columns = columns

    def frames(
        self,
        wanted: frozenset[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Iterator[Frame]:
        """Frames of ``wanted`` sensors (all if None) with ``start <= t < end``."""
        if self._columns is not None:
            return self._columns.frames(wanted, start, end)
        if wanted is None and start is None and end is None:
            return iter(self._frames)
        lo = -(1 << 63) if start is None else start
        hi = 1 << 63 if end is None else end
        return (
            f for f in self._frames if lo <= f.t < hi and (wanted is None or f.sensor in wanted)
        )


def decode_chunk(
    raw: np.ndarray[Any, np.dtype[np.uint8]], meta: ChunkMeta, *, where: str = ""
) -> DecodedChunk:
    """Decode and validate a raw chunk of either kind; arrays are read-only views of ``raw``."""
    blob_start = blob_offset(meta.records_size)
    blob_len = len(raw) - blob_start
    # Where each extension's offsets count from, and where its region ends.
    spans = {EXT_NDARRAY: (0, blob_len)}

    def ext_hook(code: int, body: bytes) -> Any:
        span = spans.get(code)
        if span is None:
            return msgpack.ExtType(code, body)  # a newer minor version's type: pass through
        base, limit = span
        offset, wire_dtype, shape = msgpack.unpackb(body, raw=False)
        dtype = _dtype_from_wire(wire_dtype)
        if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
            raise ValueError(f"bad array shape {shape!r}")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if type(offset) is not int or offset < 0 or base + offset + nbytes > limit:
            raise ValueError(f"array of {nbytes} bytes at blob offset {offset} overruns the chunk")
        if count == 0:
            arr = np.empty(shape, dtype)
            arr.flags.writeable = False
            return arr
        return np.frombuffer(raw, dtype, count, blob_start + base + offset).reshape(shape)

    columnar = meta.kind == RecordKind.COLUMNS
    head_bytes = raw.data[: meta.records_size]
    try:
        if columnar:
            unpacker = msgpack.Unpacker(
                ext_hook=ext_hook,
                raw=False,
                strict_map_key=False,
                max_buffer_size=max(1, len(head_bytes)),
            )
            unpacker.feed(head_bytes)
            if unpacker.read_array_header() != 4:
                raise ValueError("the head is not [split, groups, order, records]")
            split = unpacker.unpack()
            if type(split) is not int or not 0 <= split <= blob_len:
                raise ValueError(f"the column region end {split!r} is outside the blob")
            spans[EXT_COLUMN] = (0, split)
            spans[EXT_NDARRAY] = (split, blob_len)
            head = [unpacker.unpack() for _ in range(3)]
            if unpacker.tell() != len(head_bytes):
                raise ValueError("bytes follow the head")
        else:
            head = msgpack.unpackb(head_bytes, ext_hook=ext_hook, raw=False, strict_map_key=False)
    except Exception as err:  # msgpack raises many types on garbage; all mean "corrupt"
        raise _corrupt(meta, where, f"its records do not decode ({err})") from err
    if columnar:
        if not isinstance(head[2], list):
            raise _corrupt(meta, where, "its records are not an array")
        rows = head[2]
    else:
        rows = head
        if not isinstance(rows, list) or len(rows) != meta.count:
            raise _corrupt(
                meta, where, f"it holds {_len(rows)} records, its meta says {meta.count}"
            )
    names = meta.sensors
    frames: list[Frame] = []
    append = frames.append
    try:
        for sidx, seq, t, ts, ta, data, fmeta in rows:
            if type(sidx) is not int or sidx < 0:
                raise IndexError(f"sensor index {sidx!r}")
            append(Frame(names[sidx], seq, t, data, t if ts is None else ts, ta, fmeta or {}))
    except (TypeError, ValueError, IndexError) as err:
        raise _corrupt(meta, where, f"record {len(frames)} is malformed ({err})") from err
    if not columnar:
        return DecodedChunk(meta, frames)
    try:
        columns = ColumnChunk(head, names, frames, meta.count)
    except ValueError as err:
        raise _corrupt(meta, where, f"its columns are malformed ({err})") from err
    return DecodedChunk(meta, frames, columns)


def decode_frames(
    raw: np.ndarray[Any, np.dtype[np.uint8]], meta: ChunkMeta, *, where: str = ""
) -> list[Frame]:
    """Every frame of a chunk, in recorded order; arrays are read-only views of ``raw``."""
    return list(decode_chunk(raw, meta, where=where).frames())


def blob_offset(records_size: int) -> int:
    """Where the blob starts in a raw chunk whose records region has ``records_size`` bytes."""
    return records_size + (-records_size % BLOB_ALIGN)


def _len(x: Any) -> int:
    return len(x) if isinstance(x, list) else -1


def _corrupt(meta: ChunkMeta, where: str, reason: str) -> CorruptChunk:
    return CorruptChunk(
        f"{meta.describe()} is damaged: {reason}", path=where or None, offset=meta.offset
    )


def spec_from_wire(d: Any) -> SensorSpec:
    """A :class:`SensorSpec` from a stored dict; raises ``ValueError``/``TypeError`` if bad."""
    if not isinstance(d, dict):
        raise TypeError("sensor spec is not a map")
    return SensorSpec.from_dict(d)
