"""Frame details (format 1.6): what ``info`` reports of each frame beyond its stamps.

Theory of operation. ``hyperframes info`` reports per sensor the frames
never seen (gaps in ``seq``), the typical payload, the segments of a
restarted sender, the gaps a source announced, the clock fit of ``t``
against ``t_sensor`` and ``t_arrival``, and for encoded video its packets,
key frames and bytes. The stamp index (:mod:`recordings.hfr._stamp_index`) holds
``seq``, ``t`` and ``t_arrival``; everything else lived only inside the
compressed payloads, so a plain ``info`` of a 3 GB file read 3 GB. The 1.6
writer therefore also writes one DETAILS record right before the INDEX,
whose meta key ``details`` gives its ``[offset, length]``::

    meta    := {"s": [names], "c": [frames per sensor], "chunks": chunk count,
                "z": per sensor, per column, the stored lengths of its zstd frames,
                "x": per sensor, its notes (below)}
    payload := for each sensor, for each column: its frames, back to back
    columns := offset:<i8[c]  flags:u1[c]  size:<i8[c]

A sensor's rows are its frames in recorded order, as in the stamp index.
``offset`` is ``t_sensor - t``, delta-coded (constant offsets pack to
nothing). ``flags`` are the frame meta's conventional keys: :data:`SEGMENT`
(``segment_start``), :data:`REPACED` (``t_read``: an arrival re-paced after
a burst), :data:`GAP` (an int ``gap_ns``), :data:`VIDEO` (an ``hf.video``
packet map) and :data:`KEY` (a key packet), and :data:`BYTES` for a payload
of bytes. ``size`` is what the payload
holds: points of a structured array or bytes of a bytes payload (``>= 0``),
:data:`OTHER` for anything else, or ``-2 - i`` for a plain array of shape
``shapes[i]``. A sensor's notes are a map::

    first  := [kind, fields, dtype, text]  its first payload (see payload_brief)
    shapes := [[dim, ...], ...]           the plain-array shapes ``size`` names
    gaps   := [gap_ns, ...]               of the GAP rows, in order
    conn   := [row, ...]                  rows whose meta "connection" differs from the row before
    params := [[row, map], ...]           key packets whose track params differ from the last
    over   := true when a list reached its bound: the notes do not describe the sensor

Columns are zstd frames as in the stamp index (:mod:`recordings.hfr._framed`),
so the writer's memory is bounded; the notes are bounded by
:data:`MAX_NOTES` and :data:`MAX_SHAPES`. Readers before 1.6 skip the
record (an unknown kind, before the INDEX) and never see the meta key.

:func:`read_details` checks the record before anything is used: it lies
inside the file before the INDEX, both CRCs, the meta's shape and bounds,
and, as each sensor is decoded, that every column holds exactly ``c`` values
with flags and sizes in range. Like the stamp index it does not verify
payloads; ``hyperframes check`` decodes every chunk.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgpack
import numpy as np

from recordings.hfr._format import PRELUDE, SYNC, RecordKind, crc32, pack_prelude
from recordings.hfr._framed import (
    ColumnFrames,
    frame_spans,
    names_and_counts,
    pieces_then_close,
    unframe,
)
from recordings.hfr._limits import ReadLimits, walked_cost

__all__ = [
    "BYTES",
    "GAP",
    "KEY",
    "OTHER",
    "REPACED",
    "SEGMENT",
    "VIDEO",
    "ChunkDetails",
    "DetailsWriter",
    "FrameDetails",
    "SensorNotes",
    "chunk_details",
    "describe_payload",
    "frame_marks",
    "payload_brief",
    "payload_size",
    "put_marks",
    "read_details",
]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
UInt8 = np.ndarray[Any, np.dtype[np.uint8]]

SEGMENT = 1
"""``meta["segment_start"]`` is set: a restarted sender's first frame."""
REPACED = 2
"""``"t_read"`` in the meta: ``t_arrival`` was re-paced, not measured."""
VIDEO = 4
"""``meta["hf.video"]`` is a map: an encoded video packet."""
KEY = 8
"""A video packet that is a key frame."""
GAP = 16
"""``meta["gap_ns"]`` is an int: the source announced a gap before this frame."""
BYTES = 32
"""The payload is bytes: ``size`` counts bytes, not points."""
_FLAGS = SEGMENT | REPACED | VIDEO | KEY | GAP | BYTES

OTHER = -1
"""``size`` of a payload that is neither an array nor bytes (a map, text, nothing)."""
PLAIN = -2
"""``size`` of a plain array in a chunk's details, before the writer numbers its shape."""

MAX_NOTES = 4096
"""Entries of one sensor's ``gaps``, ``conn`` or ``params`` a writer keeps per part."""
MAX_SHAPES = 4096
"""Distinct plain-array shapes of one sensor a writer keeps per part."""
_DTYPES = ("<i8", "u1", "<i8")  # offset, flags, size
ROW_BYTES = 17
_MAX_META = 32 << 20
MAX_META_COST = 256 << 20
"""Most bytes of Python objects a reader lets a footer record's meta decode to, checked
by walking its msgpack (:func:`recordings.hfr._limits.walked_cost`) before decoding: a
writer's notes are bounded (:data:`MAX_NOTES`), so a meta of millions of empty lists is
forged (30 MB of them would take about 2 GB)."""

_VIDEO_KEY = "hf.video"  # recordings.hfr.video._packets.META_KEY (not imported: a lighter module)
DETAIL_KEYS = frozenset({"segment_start", "t_read", "gap_ns", "connection", _VIDEO_KEY})
"""Frame meta keys the details read; a meta without any of them is skipped at once."""


def frame_marks(meta: Mapping[str, Any]) -> tuple[int, int | None, Any, Any] | None:
    """``(flags, gap_ns, connection, params)`` of a frame meta, ``None`` if it has none
    of :data:`DETAIL_KEYS`."""
    if meta.keys().isdisjoint(DETAIL_KEYS):
        return None
    flags = 0
    if meta.get("segment_start"):
        flags |= SEGMENT
    if "t_read" in meta:
        flags |= REPACED
    gap = meta.get("gap_ns")
    if isinstance(gap, np.generic):  # stored as its Python value
        gap = gap.item()
    if isinstance(gap, int):
        flags |= GAP
        gap = int(gap)
    else:
        gap = None
    params = None
    video = meta.get(_VIDEO_KEY)
    if isinstance(video, dict):
        flags |= VIDEO
        if video.get("key"):
            flags |= KEY
            params = video.get("params")
    return flags, gap, meta.get("connection"), params


def payload_size(data: Any) -> tuple[int, tuple[int, ...] | None, int]:
    """``(size, shape, flag)`` of a payload as a reader gets it back: points of a
    structured array; bytes of a bytes payload, with the flag :data:`BYTES`;
    :data:`PLAIN` and the shape of a plain array; :data:`OTHER` for the rest."""
    if isinstance(data, np.ndarray):
        if data.dtype.names:
            return (len(data) if data.ndim else 1), None, 0
        return PLAIN, data.shape, 0
    if isinstance(data, np.generic):  # stored as its Python value
        data = data.item()
    if isinstance(data, (bytes, bytearray)):
        return len(data), None, BYTES
    if isinstance(data, memoryview):
        return data.nbytes, None, BYTES
    return OTHER, None, 0


def payload_brief(data: Any) -> list[Any]:
    """``[kind, fields, dtype, text]`` of a payload as a reader gets it back: ``kind`` is
    ``struct``, ``array``, ``bytes`` or ``other``; ``text`` is :func:`describe_payload`."""
    if isinstance(data, np.ndarray):
        return list(_array_brief(data.dtype, data.shape))
    if isinstance(data, np.generic):
        data = data.item()
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif isinstance(data, tuple):
        data = list(data)
    kind = "bytes" if isinstance(data, bytes) else "other"
    return [kind, 0, "", describe_payload(data)]


@functools.lru_cache(maxsize=256)
def _array_brief(dtype: np.dtype[Any], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """:func:`payload_brief` of any array of ``dtype`` and ``shape`` (a builder asks once
    per sensor and chunk; ``str(dtype)`` alone costs microseconds)."""
    names = dtype.names
    kind = "struct" if names else "array"
    return kind, len(names or ()), str(dtype), _describe_array(dtype, shape)


def _describe_array(dtype: np.dtype[Any], shape: tuple[int, ...]) -> str:
    names = dtype.names
    if names:
        return f"{len(names)} fields x {shape[0] if shape else 1}"
    return f"{dtype} {shape}"


def describe_payload(data: Any) -> str:
    """Short: ``uint8 (48, 64, 3)``, ``6 fields x 2048``, ``dict of 2``, ``1206 bytes``."""
    if isinstance(data, np.ndarray):
        return _describe_array(data.dtype, data.shape)
    if isinstance(data, dict):
        return f"dict of {len(data)}"
    if isinstance(data, (bytes, bytearray)):
        return f"{len(data)} bytes"
    return type(data).__name__


@dataclasses.dataclass(slots=True)
class ChunkDetails:
    """One chunk's details, rows in recorded order (what the builder seals with it)."""

    offset: Int64
    """``t_sensor - t`` of each frame."""
    flags: UInt8
    size: Int64
    """As the record's column, with :data:`PLAIN` for every plain array."""
    shape: np.ndarray[Any, np.dtype[np.int32]]
    """Index into :attr:`shapes` of each plain array, -1 elsewhere."""
    shapes: list[tuple[int, ...]]
    gaps: list[tuple[int, int]]
    """``(row, gap_ns)``."""
    connections: list[tuple[int, Any]]
    """``(row, connection)`` of the rows whose meta names one."""
    params: list[tuple[int, Any]]
    """``(row, params)`` of the key packets that carry params."""
    firsts: dict[int, list[Any]]
    """Sensor index -> :func:`payload_brief` of its first frame in the chunk."""
    stamps: tuple[Any, Any, Any, Any, Any] | None = None
    """The builder's stamp columns of the chunk (``sensor, seq, t, t_arrival,
    has_arrival``: :func:`recordings.hfr._stamp_block.stamp_columns`), so that the
    writer thread need not decompress the block it was sealed with; None when read back."""


def chunk_details(frames: Any, index: Mapping[str, int]) -> ChunkDetails:
    """The details of a chunk's decoded ``frames`` (``index``: sensor name -> its index in
    the chunk meta); what the builder makes for a chunk it seals, from the frames read back."""
    n = len(frames)
    offset = np.empty(n, np.int64)
    flags = np.zeros(n, np.uint8)
    size = np.empty(n, np.int64)
    shape_of = np.full(n, -1, np.int32)
    shapes: dict[tuple[int, ...], int] = {}
    out = ChunkDetails(offset, flags, size, shape_of, [], [], [], [], {})
    for row, frame in enumerate(frames):
        offset[row] = frame.t_sensor - frame.t
        s, shape, flags[row] = payload_size(frame.data)
        size[row] = s
        if shape is not None:
            shape_of[row] = shapes.setdefault(shape, len(shapes))
        k = index[frame.sensor]
        if k not in out.firsts:
            out.firsts[k] = payload_brief(frame.data)
        if frame.meta:
            add_marks(out, row, frame.meta)
    out.shapes = list(shapes)
    return out


def add_marks(details: ChunkDetails, row: int, meta: Mapping[str, Any]) -> None:
    """Fold frame ``row``'s meta (:func:`frame_marks`) into ``details``."""
    marks = frame_marks(meta)
    if marks is not None:
        put_marks(details, row, marks)


def put_marks(details: ChunkDetails, row: int, marks: tuple[int, int | None, Any, Any]) -> None:
    """Put frame ``row``'s :func:`frame_marks` into ``details``."""
    flags, gap, connection, params = marks
    details.flags[row] |= flags
    if gap is not None:
        details.gaps.append((row, gap))
    if connection is not None:
        details.connections.append((row, connection))
    if params is not None:
        details.params.append((row, params))


class _Notes:
    __slots__ = (
        "conn",
        "count",
        "first",
        "gaps",
        "last",
        "last_conn",
        "last_params",
        "over",
        "params",
        "shapes",
    )

    def __init__(self) -> None:
        self.count = 0
        self.last = 0  # the last offset, for the delta
        self.first: list[Any] | None = None
        self.shapes: dict[tuple[int, ...], int] = {}
        self.gaps: list[int] = []
        self.conn: list[int] = []
        self.last_conn: Any = None
        self.params: list[list[Any]] = []
        self.last_params: Any = None
        self.over = False

    def as_wire(self) -> dict[str, Any]:
        return {
            "first": self.first or payload_brief(None),
            "shapes": [list(s) for s in self.shapes],
            "gaps": self.gaps,
            "conn": self.conn,
            "params": self.params,
            "over": self.over,
        }


def _differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # values without a plain truth (arrays): count them as changed
        return True


class DetailsWriter:
    """Builds a DETAILS record chunk by chunk (the writer thread calls it per chunk)."""

    def __init__(
        self, level: int = 3, *, spool: bool = False, reducer: Callable[[], Any] | None = None
    ) -> None:
        self._cols = ColumnFrames(len(_DTYPES), level, spool=spool)
        self._notes: dict[str, _Notes] = {}
        self._reducer = reducer  # makes a sensor's SensorReducer (1.7 summaries), if any
        self._reducers: dict[str, Any] = {}
        self.chunks = 0

    def skip_chunk(self) -> None:
        """A chunk without details: the record cannot describe the file."""
        self.chunks = -1

    def add(
        self,
        sensors: tuple[str, ...],
        sensor: np.ndarray[Any, Any],
        details: ChunkDetails,
        stamps: tuple[Any, Any, Any, Any] | None = None,
        chunks: int = 1,
    ) -> None:
        """The next chunk's details (``sensor``: each row's index into ``sensors``), or the
        next ``chunks`` chunks' as one (:mod:`recordings.hfr._stamp_batch`); with their
        ``stamps`` (``seq``, ``t``, ``t_arrival``, ``has_arrival`` of each row) each
        sensor's summary (1.7, :mod:`recordings.hfr._sensor_summary`) is reduced too,
        when the writer was given a ``reducer``."""
        if self.chunks < 0:
            return
        sensor = np.asarray(sensor)
        rank = np.empty(len(sensor), np.int64)  # each row's rank among its sensor's rows
        for k, name in enumerate(sensors):
            rows = np.flatnonzero(sensor == k) if len(sensors) > 1 else np.arange(len(sensor))
            if not len(rows):
                continue
            notes = self._notes.get(name)
            if notes is None:
                notes = self._notes[name] = _Notes()
            rank[rows] = notes.count + np.arange(len(rows))
            if notes.first is None:
                notes.first = details.firsts.get(k)
            offset = details.offset[rows]
            delta = np.empty_like(offset)
            delta[1:] = offset[1:] - offset[:-1]
            delta[0] = offset[0] - notes.last
            notes.last = int(offset[-1])
            size = details.size[rows].copy()
            plain = np.flatnonzero(size == PLAIN)
            if len(plain):
                local = details.shape[rows][plain]
                ids = np.zeros(len(details.shapes), np.int64)
                for i in np.unique(local).tolist():  # the shapes this sensor's rows use
                    ids[i] = notes.shapes.setdefault(details.shapes[i], len(notes.shapes))
                size[plain] = -2 - ids[local]
                if len(notes.shapes) > MAX_SHAPES:
                    notes.over = True
                    notes.shapes = {}
            before = len(notes.conn)
            self._conn(notes, details, rows, sensor, k)
            if stamps is not None and self._reducer is not None:
                try:
                    self._reduce(name, notes, stamps, rows, offset, details, notes.conn[before:])
                except Exception as err:  # a summary is never worth the recording
                    if name in self._reducers:
                        self._reducers[name].why = f"the summary could not be reduced ({err!r})"
            notes.count += len(rows)
            self._cols.add(name, 0, delta.astype("<i8").tobytes())
            self._cols.add(name, 1, details.flags[rows].tobytes())
            self._cols.add(name, 2, size.astype("<i8").tobytes())
        for row, gap in details.gaps:
            notes = self._notes[sensors[sensor[row]]]
            if len(notes.gaps) < MAX_NOTES:
                notes.gaps.append(gap)
            else:
                notes.over = True
        for row, params in details.params:
            notes = self._notes[sensors[sensor[row]]]
            if _differs(params, notes.last_params):
                notes.last_params = params
                if len(notes.params) < MAX_NOTES:
                    notes.params.append([int(rank[row]), params])
                else:
                    notes.over = True
        self.chunks += chunks

    def _reduce(
        self,
        name: str,
        notes: _Notes,
        stamps: tuple[Any, Any, Any, Any],
        rows: Any,
        offset: Any,
        details: ChunkDetails,
        conn: list[int],
    ) -> None:
        reducer = self._reducers.get(name)
        if reducer is None:
            assert self._reducer is not None
            reducer = self._reducers[name] = self._reducer()
        every = len(rows) == len(details.flags)  # one sensor: its rows are all, no gathers
        seq, t, arrival, has = (np.asarray(c) if every else np.asarray(c)[rows] for c in stamps)
        t = t.astype(np.int64, copy=False)
        has = has.astype(bool)
        reducer.add(
            seq.astype(np.int64, copy=False),
            t,
            offset,
            np.where(has, arrival.astype(np.int64, copy=False), t),
            has,
            details.flags if every else details.flags[rows],
            details.size if every else details.size[rows],
            details.shapes,
            details.shape if every else details.shape[rows],
            conn,
        )

    def summaries(self) -> dict[str, Any]:
        """Each sensor's summary (its wire form) or why it has none: the INDEX's
        ``summaries`` (1.7); empty unless every chunk came with its stamps."""
        if self.chunks < 0 or not self._reducers or set(self._reducers) != set(self._notes):
            return {}
        out: dict[str, Any] = {}
        for name, reducer in self._reducers.items():
            notes = self._notes[name]
            got = "its details notes are over their bound" if notes.over else None
            if got is None:
                try:
                    got = reducer.finish(notes.gaps)
                except Exception as err:  # a summary is never worth the recording
                    got = f"the summary could not be reduced ({err!r})"
            if isinstance(got, dict):
                got["first"] = notes.first or payload_brief(None)
            out[name] = got
        return out

    @staticmethod
    def _conn(notes: _Notes, details: ChunkDetails, rows: Any, sensor: Any, k: int) -> None:
        """Rows of sensor ``k`` whose connection differs from the row before."""
        named = [(row, c) for row, c in details.connections if sensor[row] == k]
        if not named and notes.last_conn is None:
            return
        values: list[Any] = [None] * len(rows)
        where = {int(row): i for i, row in enumerate(rows)} if named else {}
        for row, c in named:
            values[where[row]] = c
        prev = notes.last_conn
        for i, value in enumerate(values):
            if (notes.count or i) and _differs(value, prev):
                if len(notes.conn) < MAX_NOTES:
                    notes.conn.append(notes.count + i)
                else:
                    notes.over = True
            prev = value
        notes.last_conn = prev

    def record(self) -> tuple[Iterator[bytes], int] | None:
        """``(pieces, length)`` of the DETAILS record (prelude, meta, payload frames read
        as they are taken), or ``None`` when a chunk had no details."""
        if self.chunks < 0:
            return None
        lengths, frames = self._cols.finish()
        names = self._cols.keys()
        meta: bytes = msgpack.packb(
            {
                "s": names,
                "c": [self._notes[n].count for n in names],
                "chunks": self.chunks,
                "z": lengths,
                "x": [self._notes[n].as_wire() for n in names],
            },
            use_bin_type=True,
        )
        head = pack_prelude(RecordKind.DETAILS, meta, frames.size, frames.crc())
        return pieces_then_close(head, meta, frames), PRELUDE.size + len(meta) + frames.size


@dataclasses.dataclass(frozen=True, slots=True)
class SensorNotes:
    """A sensor's notes, checked (see the module docstring)."""

    first: tuple[str, int, str, str]
    shapes: tuple[tuple[int, ...], ...]
    gaps: tuple[int, ...]
    conn: tuple[int, ...]
    params: tuple[tuple[int, Any], ...]
    over: bool


class FrameDetails:
    """The checked DETAILS record; each sensor's columns are decoded when asked for."""

    def __init__(
        self,
        sensors: tuple[str, ...],
        counts: tuple[int, ...],
        chunks: int,
        payload: memoryview,
        spans: Any,
        notes: tuple[SensorNotes, ...],
    ) -> None:
        self.sensors = sensors
        self.counts = counts
        self.chunks = chunks
        """Chunks the record describes (the footer index's chunk count)."""
        self._payload = payload
        self._spans = spans
        self._notes = notes

    def __repr__(self) -> str:
        return f"FrameDetails({sum(self.counts)} frames of {', '.join(self.sensors)})"

    def notes(self, name: str) -> SensorNotes:
        """Sensor ``name``'s notes (``KeyError`` if the record has no such sensor)."""
        return self._notes[self.sensors.index(name)]

    def of(self, name: str) -> tuple[Int64, UInt8, Int64]:
        """``(t_sensor - t, flags, size)`` of sensor ``name``'s frames in recorded order;
        ``ValueError`` when its columns do not check out."""
        k = self.sensors.index(name)
        n = self.counts[k]
        what = f"a frame details column of {name!r}"
        cols = [
            np.frombuffer(unframe(self._payload, spans, n * np.dtype(d).itemsize, what), d)
            for spans, d in zip(self._spans[k], _DTYPES, strict=True)
        ]
        offset = np.cumsum(cols[0].view(np.int64))
        flags, size = cols[1], cols[2].view(np.int64)
        if n and int(flags.max()) > _FLAGS:
            raise ValueError(f"{what} has flags this reader does not know")
        if n and int(size.min()) < -1 - len(self._notes[k].shapes):
            raise ValueError(f"{what} names a shape the record does not have")
        return offset, flags, size


def _notes(wire: Any, count: int) -> SensorNotes | None:
    """Checked notes of a sensor with ``count`` rows, or ``None`` if malformed."""
    if not isinstance(wire, dict):
        return None
    first: Any = wire.get("first")
    shapes: Any = wire.get("shapes")
    gaps: Any = wire.get("gaps")
    conn: Any = wire.get("conn")
    params: Any = wire.get("params")
    over: Any = wire.get("over")
    ok = (
        isinstance(first, list)
        and len(first) == 4
        and first[0] in ("struct", "array", "bytes", "other")
        and type(first[1]) is int
        and all(type(x) is str for x in first[2:])
        and isinstance(shapes, list)
        and all(isinstance(s, list) and all(type(d) is int and d >= 0 for d in s) for s in shapes)
        and isinstance(gaps, list)
        and all(type(g) is int for g in gaps)
        and isinstance(conn, list)
        and all(type(r) is int and 0 < r < count for r in conn)
        and all(a < b for a, b in itertools.pairwise(conn))
        and isinstance(params, list)
        and all(
            isinstance(p, list) and len(p) == 2 and type(p[0]) is int and 0 <= p[0] < count
            for p in params
        )
        and type(over) is bool
    )
    if not ok:
        return None
    return SensorNotes(
        first=(first[0], first[1], first[2], first[3]),
        shapes=tuple(tuple(s) for s in shapes),
        gaps=tuple(gaps),
        conn=tuple(conn),
        params=tuple((p[0], p[1]) for p in params),
        over=over,
    )


def read_details(
    fd: int, index_offset: int, pointer: Any, limits: ReadLimits
) -> FrameDetails | str:
    """The DETAILS record ``pointer`` (the INDEX's ``[offset, length]``) names, checked,
    or the reason it cannot be used."""
    if not (
        isinstance(pointer, list)
        and len(pointer) == 2
        and all(type(x) is int for x in pointer)
        and pointer[0] >= 16
        and PRELUDE.size <= pointer[1]
        and pointer[0] + pointer[1] <= index_offset
    ):
        return "the footer index points at frame details outside the file"
    at, length = pointer
    if not limits.footer_fits(length, slack=_MAX_META):
        return f"the frame details of {length} bytes are over the reader's limit"
    data = os.pread(fd, length, at)
    if len(data) != length:
        return "the file ends inside its frame details"
    sync, kind, meta_len, payload_len, meta_crc, payload_crc = PRELUDE.unpack_from(data)
    if sync != SYNC or kind != RecordKind.DETAILS or meta_len > _MAX_META:
        return "the footer index points at a record that is not frame details"
    if PRELUDE.size + meta_len + payload_len != length:
        return "the frame details record does not have the length the index gives"
    meta_bytes = data[PRELUDE.size : PRELUDE.size + meta_len]
    payload = memoryview(data)[PRELUDE.size + meta_len :]
    if crc32(data[:16], meta_bytes) != meta_crc or crc32(payload) != payload_crc:
        return "the frame details fail their CRC"
    if walked_cost(meta_bytes, MAX_META_COST) > MAX_META_COST:
        return (
            f"the frame details meta of {meta_len} bytes would decode to over "
            f"{MAX_META_COST >> 20} MiB of objects"
        )
    try:
        meta = msgpack.unpackb(meta_bytes, raw=False, strict_map_key=False)
        names, counts, chunks = meta["s"], meta["c"], meta["chunks"]
        lengths, notes_wire = meta["z"], meta["x"]
    except Exception as err:  # msgpack raises many types on garbage
        return f"the frame details meta does not decode ({err})"
    shaped = (
        names_and_counts(names, counts, chunks)
        and isinstance(notes_wire, list)
        and len(notes_wire) == len(names)
    )
    spans = frame_spans(lengths, len(names), len(_DTYPES), len(payload)) if shaped else None
    notes = [_notes(w, c) for w, c in zip(notes_wire, counts, strict=True)] if spans else []
    if spans is None or any(n is None for n in notes):
        return "the frame details meta is malformed"
    if not limits.footer_fits(max(counts, default=0) * ROW_BYTES):  # a sensor at a time
        return (
            f"the frame details of {max(counts)} frames of one sensor are over the reader's limit"
        )
    checked = tuple(n for n in notes if n is not None)
    return FrameDetails(tuple(names), tuple(counts), chunks, payload, spans, checked)


class DetailsChecker:
    """Compares the DETAILS record with the frames it describes (``hyperframes check``,
    and the reader's spot check of a file's first and last chunk).

    The record is not read from the payloads, so a well-formed, CRC-sound record may
    still lie (forged, or written by a faulty tool): :meth:`compare` checks, for each
    chunk's decoded frames, every row's ``t_sensor - t``, flags and payload size (a
    plain array's shape through the notes), and :meth:`finish` the announced gaps;
    the counts per sensor are checked against the chunk metas up front.
    """

    def __init__(
        self,
        details: FrameDetails | None,
        counts: Mapping[str, int],
        columns: Mapping[str, tuple[Int64, UInt8, Int64]] | None = None,
    ) -> None:
        """``counts``: each sensor's frames in the chunk metas; ``columns``: the sensors'
        :meth:`FrameDetails.of`, when the caller decoded them already."""
        self.problem: str | None = None
        """Why the record as a whole does not describe the file, if it does not."""
        self._cols: dict[str, tuple[Int64, UInt8, Int64]] = {}
        self._gaps: dict[str, list[int]] = {}
        self._details = details
        if details is None:
            return
        said = {n: c for n, c in zip(details.sensors, details.counts, strict=True) if c}
        held = {n: c for n, c in counts.items() if c}
        if said != held:
            name = min(set(said) ^ set(held) or {n for n in said if said[n] != held[n]})
            self.problem = (
                f"the frame details count {said.get(name, 0)} frames of {name!r}; "
                f"the chunks hold {held.get(name, 0)}"
            )
            return
        if columns is not None:  # decoded by the caller (maybe only some sensors)
            self._cols = dict(columns)
            self._gaps = {name: [] for name in columns}
            return
        try:
            for name in details.sensors:
                self._cols[name] = details.of(name)
                self._gaps[name] = []
        except ValueError as err:
            self.problem = f"the frame details do not decode: {err}"

    @property
    def active(self) -> bool:
        return self._details is not None and self.problem is None

    def compare(
        self, sensors: tuple[str, ...], frames: Any, first_rows: Mapping[str, int]
    ) -> str | None:
        """What differs between the record's rows from ``first_rows[sensor]`` on and one
        chunk's decoded ``frames`` (in recorded order; ``sensors``: the chunk meta's);
        ``None`` when they agree."""
        if not self.active:
            return None
        assert self._details is not None
        index = {name: i for i, name in enumerate(sensors)}
        found = chunk_details(frames, index)
        which = np.fromiter((index[f.sensor] for f in frames), np.int64, len(frames))
        gap_of = dict(found.gaps)
        for k, name in enumerate(sensors):
            rows = np.flatnonzero(which == k)
            if not len(rows) or name not in self._cols:
                continue
            offset, flags, size = self._cols[name]
            a = first_rows.get(name, 0)
            b = a + len(rows)
            if b > len(offset):
                return f"sensor {name!r} has more frames than the frame details count"
            shapes = self._details.notes(name).shapes
            want_size = size[a:b]
            got_size = found.size[rows]
            plain = got_size == PLAIN
            sized = np.where(plain, -2, got_size)
            bad = (offset[a:b] != found.offset[rows]) | (flags[a:b] != found.flags[rows])
            bad |= np.where(plain, want_size > -2, want_size != sized)
            if not bad.any() and plain.any():
                for j in np.flatnonzero(plain).tolist():
                    i = -2 - int(want_size[j])
                    if i >= len(shapes) or shapes[i] != found.shapes[found.shape[rows[j]]]:
                        bad[j] = True
                        break
            if bad.any():
                j = int(np.argmax(bad))
                frame = frames[int(rows[j])]
                return (
                    f"sensor {name!r} seq {frame.seq}: the frame details give t_sensor - t "
                    f"{int(offset[a + j])} ns, flags {int(flags[a + j])}, size "
                    f"{int(want_size[j])}; the frame {int(found.offset[rows[j]])} ns, flags "
                    f"{int(found.flags[rows[j]])}, size {int(sized[j])}"
                )
            self._gaps[name] += [gap_of[r] for r in rows.tolist() if r in gap_of]
        return None

    def finish(self) -> str | None:
        """After every chunk was compared: the announced gaps the notes list."""
        if not self.active:
            return None
        assert self._details is not None
        for name, gaps in self._gaps.items():
            notes = self._details.notes(name)
            if not notes.over and tuple(gaps) != notes.gaps:
                return f"the frame details list other gaps of {name!r} than its frames announce"
        return None
