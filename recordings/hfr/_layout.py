"""What a chunk is on the wire: its meta, the dtype encoding, where its blob starts.

Shared by the builder (:mod:`recordings.hfr._builder`) and the decoder
(:mod:`recordings.hfr._chunk_reader`); ``recordings/hfr/FORMAT.md`` is the specification.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fusion import SensorSpec
from recordings.hfr._format import BLOB_ALIGN, CHUNK_KINDS, Compression, RecordKind


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
    wall: tuple[int, int] | None = None
    """``(reference ns, UTC ns)`` read together when the chunk was sealed (1.2; see
    :mod:`fusion._wallclock`); ``None`` when the writer recorded no wall clock."""
    stamps: bytes | None = None
    """The chunk's stamp block (1.4, key ``st``): its frames' sensor, ``seq``, ``t``
    and ``t_arrival`` outside the payload, one zstd frame (see
    :mod:`recordings.hfr._stamp_block`); ``None`` in older files."""

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
        if self.wall is not None:
            d["w"] = list(self.wall)
        if self.stamps is not None:
            d["st"] = self.stamps
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
        if not all(isinstance(d.get(k), list) for k in ("s", "c", "r")):
            raise TypeError("chunk meta 's', 'c' or 'r' is not an array")
        sensors = tuple(d["s"])
        counts = tuple(d["c"])
        sizes = (d["i"], d["n"], d["raw"], d["rec"], *counts)
        if not all(type(x) is int and 0 <= x <= MAX_SIZE for x in sizes):
            raise ValueError("chunk meta counts or sizes are not integers in [0, 2**62]")
        if not all(is_int64(x) for x in (d["t0"], d["t1"])):
            raise ValueError("chunk meta time range is not int64 nanoseconds")
        if not all(type(s) is str for s in sensors) or len(set(sensors)) != len(sensors):
            raise TypeError("chunk meta sensor names are not distinct strings")
        if len(sensors) != len(counts) or sum(counts) != d["n"]:
            raise ValueError("chunk meta sensor counts do not add up")
        if blob_offset(d["rec"]) > d["raw"] or d["t0"] > d["t1"]:
            raise ValueError("chunk meta sizes or time range are inconsistent")
        if not all(isinstance(r, list) and len(r) == 2 for r in d["r"]):
            raise TypeError("chunk meta sensor time ranges are not [first, last] pairs")
        ranges = tuple((r[0], r[1]) for r in d["r"])
        t0, t1 = d["t0"], d["t1"]
        if len(ranges) != len(sensors) or not all(
            is_int64(a) and is_int64(b) and t0 <= a <= b <= t1 for a, b in ranges
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
            wall=_wall(d.get("w")),
            stamps=_stamp_block(d.get("st")),
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
    """A chunk closed by the builder, ready to compress: its raw bytes and meta.

    The raw bytes are kept as the ``parts`` the builder made (header, records,
    padding, array blob) so they can be compressed in one pass without first
    being copied into one buffer; :attr:`raw` joins them when one is needed.
    """

    parts: list[bytes | bytearray | memoryview]
    meta: ChunkMeta
    stamps: bytes | None = None
    """The stamp block, uncompressed (1.4): the writer compresses it into ``meta.stamps``."""
    details: Any = None
    """The chunk's :class:`~recordings.hfr._details.ChunkDetails` (1.6), for the writer's
    DETAILS record."""
    buffer: Any = None
    """The builder's buffer that ``parts`` view, handed back once the chunk is written."""

    @property
    def raw(self) -> bytearray:
        """The raw chunk as one buffer (a copy unless the chunk is one part)."""
        if len(self.parts) == 1 and isinstance(self.parts[0], bytearray):
            return self.parts[0]
        return bytearray().join(self.parts)


INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
MAX_SIZE = 1 << 62
"""Largest size or count a reader takes from a file (sums of them still fit in int64)."""


def is_int64(x: Any) -> bool:
    """``x`` is a Python ``int`` (not a bool) that fits in int64."""
    return type(x) is int and INT64_MIN <= x <= INT64_MAX


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


def blob_offset(records_size: int) -> int:
    """Where the blob starts in a raw chunk whose records region has ``records_size`` bytes."""
    return records_size + (-records_size % BLOB_ALIGN)


def spec_from_wire(d: Any) -> SensorSpec:
    """A :class:`SensorSpec` from a stored dict; raises ``ValueError``/``TypeError`` if bad.

    Every field is type-checked, since ``info`` formats them: ``name`` and
    ``kind`` strings, ``rate_hz`` a finite positive number or nil,
    ``optional`` a bool, ``capacity`` a positive int, ``meta`` a map.
    """
    if not isinstance(d, dict):
        raise TypeError("sensor spec is not a map")
    name, kind, rate = d.get("name"), d.get("kind", "generic"), d.get("rate_hz")
    if type(name) is not str or type(kind) is not str:
        raise TypeError("sensor spec name or kind is not a string")
    if rate is not None and (type(rate) not in (int, float) or not 0 < rate < float("inf")):
        raise ValueError(f"sensor spec rate_hz {rate!r} is not a positive number")
    capacity = d.get("capacity", 64)
    if type(capacity) is not int or not 0 < capacity <= MAX_SIZE:
        raise ValueError(f"sensor spec capacity {capacity!r} is not a positive integer")
    if type(d.get("optional", False)) is not bool or not isinstance(d.get("meta") or {}, dict):
        raise TypeError("sensor spec optional or meta has the wrong type")
    return SensorSpec.from_dict(d)


def _wall(value: Any) -> tuple[int, int] | None:
    """A chunk's ``w``: two ints, else ignored (a date is not worth losing the chunk)."""
    if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
        return (value[0], value[1])
    return None


def _stamp_block(v: Any) -> bytes | None:
    """The ``st`` key: bytes or absent (checked in full only when read)."""
    if v is None:
        return None
    if not isinstance(v, bytes):
        raise TypeError(f"chunk meta 'st' is a {type(v).__name__}, not bytes")
    return v
