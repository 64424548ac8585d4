"""A chunk's msgpack records decoded and checked: a helper of the chunk reader only.

:func:`decode_records` is called by :func:`recordings.hfr._chunk_reader.decode_chunk`
and by nothing else (``tests/recordings/test_read_walk.py`` holds to that); it is
loaded with the first chunk decoded, so commands that read only metas and stamps
never import msgspec.

Theory of operation. A chunk is built by :class:`~recordings.hfr._builder.ChunkBuilder`
(its meta and sealed form are in :mod:`recordings.hfr._layout`) as one raw buffer::

    raw := head pad blob
    head := records (CHUNK, 1.0) | [split, groups, order, records] (COLUMNS, 1.1)
    records := msgpack array of [sensor, seq, t, t_sensor, t_arrival, data, meta]
    blob    := array bytes, each starting at a multiple of BLOB_ALIGN

``sensor`` is an index into the chunk's own sensor list (``meta["s"]``), so
every chunk names its sensors and stays readable when the file header is lost.
An array inside ``data`` or ``meta`` is an extension value
(:data:`~recordings.hfr._format.EXT_NDARRAY`) holding ``[blob_offset, dtype,
shape]``; a column (:mod:`recordings.hfr._columns`) is the same with
:data:`~recordings.hfr._format.EXT_COLUMN`. Their bytes live in the blob, so the
reader returns ``np.frombuffer`` views of the decompressed chunk: zero-copy,
read-only and aligned. Nothing is ever pickled; an object dtype is refused.

Everything read from a file is untrusted: every size is checked against the
buffer it points into *before* allocating (the chunk reader asked the limits
before the chunk got here), and every failure becomes a
:class:`~recordings.errors.CorruptChunk` naming the chunk. A chunk is validated
whole up front; iterating its frames never raises.
"""

from __future__ import annotations

import math
import operator
from typing import Annotated, Any

import msgpack
import msgspec
import numpy as np

from fusion import Frame
from recordings.errors import CorruptChunk
from recordings.hfr._chunk_columns import ColumnChunk
from recordings.hfr._format import EXT_COLUMN, EXT_NDARRAY, RecordKind
from recordings.hfr._layout import (
    INT64_MAX,
    INT64_MIN,
    ChunkMeta,
    _dtype_from_wire,
    blob_offset,
)

__all__ = ["decode_records", "open_columns_head"]


def decode_records(
    raw: np.ndarray[Any, np.dtype[np.uint8]], meta: ChunkMeta, where: str
) -> tuple[list[Frame], ColumnChunk | None]:
    """The frames of a raw chunk's msgpack records, and its column groups (a ``COLUMNS``
    chunk; ``None`` for a ``CHUNK``), every field checked; arrays are read-only views of
    ``raw``. Raises :class:`~recordings.errors.CorruptChunk` naming the first failure.
    The caller (:func:`recordings.hfr._chunk_reader.decode_chunk`) has charged the
    chunk's decoded cost against the budget."""
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
            unpacker, split = open_columns_head(head_bytes, blob_len, ext_hook)
            spans[EXT_COLUMN] = (0, split)
            spans[EXT_NDARRAY] = (split, blob_len)
            head = [unpacker.unpack() for _ in range(3)]
            if unpacker.tell() != len(head_bytes):
                raise ValueError("bytes follow the head")
        else:
            return _typed_record_frames(head_bytes, meta, ext_hook, where), None
    except msgspec.ValidationError as err:
        raise _corrupt(meta, where, f"a record is malformed ({_where_in_rows(err)})") from err
    except CorruptChunk:
        raise
    except Exception as err:  # msgpack raises many types on garbage; all mean "corrupt"
        raise _corrupt(meta, where, f"its records do not decode ({err})") from err
    if not isinstance(head[2], list):
        raise _corrupt(meta, where, "its records are not an array")
    rows = head[2]
    try:
        frames = _record_frames(rows, meta)
    except (TypeError, ValueError, IndexError) as err:
        raise _corrupt(meta, where, f"a record is malformed ({err})") from err
    try:
        columns = ColumnChunk(head, meta.sensors, frames, meta.count)
        _check_column_times(columns, meta)
    except ValueError as err:
        raise _corrupt(meta, where, f"its columns are malformed ({err})") from err
    return frames, columns


def open_columns_head(
    head_bytes: memoryview, blob_len: int, ext_hook: Any
) -> tuple[msgpack.Unpacker, int]:
    """Start reading a COLUMNS chunk's head ``[split, groups, order, records]``.

    Returns the unpacker positioned at ``groups`` and ``split``, the end of the
    column region in the blob (checked to lie inside it); raises ``ValueError``
    on any other shape.
    """
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
    return unpacker, split


_Int64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
_Record = tuple[
    Annotated[int, msgspec.Meta(ge=0)],  # sensor index
    _Int64,  # seq
    _Int64,  # t
    _Int64 | None,  # t_sensor
    _Int64 | None,  # t_arrival
    Any,  # data
    dict[Any, Any] | None,  # meta
]
"""The typed schema of a record: msgspec checks every field while it decodes, in C."""

_T = operator.itemgetter(2)


def _typed_record_frames(
    head: memoryview, meta: ChunkMeta, ext_hook: Any, where: str
) -> list[Frame]:
    """Frames of a CHUNK's records, decoded and type-checked by msgspec (:data:`_Record`).

    What the schema cannot say is checked after: the record count, that every
    ``t`` lies in the chunk's ``[t0, t1]`` (two C-level passes) and that every
    sensor index names a sensor. Decoding with the schema is faster than
    msgpack without one, so the checks cost the read path nothing.
    """
    rows = msgspec.msgpack.Decoder(list[_Record], ext_hook=ext_hook).decode(head)
    if len(rows) != meta.count:
        raise _corrupt(meta, where, f"it holds {len(rows)} records, its meta says {meta.count}")
    if rows and (min(map(_T, rows)) < meta.t_start or max(map(_T, rows)) > meta.t_end):
        bad = next(i for i, r in enumerate(rows) if not meta.t_start <= r[2] <= meta.t_end)
        raise _corrupt(
            meta,
            where,
            f"a record is malformed (record {bad}: t {rows[bad][2]} is outside the chunk's "
            f"range {meta.t_start}..{meta.t_end})",
        )
    names = meta.sensors
    # A nil t_sensor is passed as None: Frame takes t for it.
    make: Any = Frame
    try:
        return [make(names[i], q, t, d, ts, ta, m or {}) for i, q, t, ts, ta, d, m in rows]
    except IndexError:
        bad = next(i for i, r in enumerate(rows) if r[0] >= len(names))
        raise _corrupt(
            meta,
            where,
            f"a record is malformed (record {bad}: sensor index {rows[bad][0]} is out of "
            f"range 0..{len(names) - 1})",
        ) from None


def _where_in_rows(err: msgspec.ValidationError) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$[3][2]``` in our words."""
    text = str(err)
    message, _, path = text.partition(" - at `$[")
    index, _, rest = path.partition("]")
    fields = ("sensor index", "seq", "t", "t_sensor", "t_arrival", "data", "meta")
    if index.isdigit() and rest.startswith("[") and rest[1:2].isdigit():
        field = fields[int(rest[1])] if int(rest[1]) < len(fields) else "a field"
        return f"record {index}: {field}: {message}"
    return text


def _check_column_times(columns: ColumnChunk, meta: ChunkMeta) -> None:
    """Every group's ``t`` lies inside the chunk's ``[t0, t1]`` (one vectorised pass)."""
    for g in columns.groups:
        if len(g) and (int(g.t.min()) < meta.t_start or int(g.t.max()) > meta.t_end):
            raise ValueError(f"a t of {g.sensor} lies outside the chunk's time range")


def _record_frames(rows: list[Any], meta: ChunkMeta) -> list[Frame]:
    """Frames of msgpack records, each field checked (the record head's typed schema).

    ``[sensor, seq, t, t_sensor, t_arrival, data, meta]``: ``sensor`` an index
    into the chunk's names, ``t`` an int inside the chunk's ``[t0, t1]`` (so
    int64), ``seq``/``t_sensor``/``t_arrival`` int64 (the last two may be nil),
    ``meta`` a map or nil. Hand-written and chained so a valid record costs a
    few C-level comparisons (about 50 ns, a sixth of building its frame;
    msgspec or pydantic-core would cost a call per record more); a record that
    fails is worded by :func:`_first_bad_record`.
    """
    names = meta.sensors
    n = len(names)
    t0, t1 = meta.t_start, meta.t_end
    hi = INT64_MAX  # msgpack has no integer below -2**63: int64 needs the upper bound only
    frames: list[Frame] = []
    append = frames.append
    try:
        for sidx, seq, t, ts, ta, data, fmeta in rows:
            if not (
                type(sidx) is type(t) is type(seq) is int
                and 0 <= sidx < n
                and t0 <= t <= t1
                and seq <= hi
            ):
                break
            if ts is not None and (type(ts) is not int or ts > hi):
                break
            if ta is not None and (type(ta) is not int or ta > hi):
                break
            if fmeta is None:
                fmeta = {}
            elif type(fmeta) is not dict:
                break
            append(Frame(names[sidx], seq, t, data, ts, ta, fmeta))  # type: ignore[arg-type]  # nil t_sensor: Frame takes t
        else:
            return frames
    except (TypeError, ValueError):  # a record that is not a 7-item array
        pass
    _first_bad_record(rows, meta)
    raise AssertionError("unreachable")  # pragma: no cover


def _first_bad_record(rows: list[Any], meta: ChunkMeta) -> None:
    """Raise ``ValueError`` naming the first record that fails a check, and why."""
    nsensors, t0, t1 = len(meta.sensors), meta.t_start, meta.t_end
    for i, row in enumerate(rows):
        if type(row) not in (list, tuple) or len(row) != 7:
            raise ValueError(f"record {i} is not a 7-item array")
        sidx, seq, t, ts, ta, _, fmeta = row
        if (
            type(sidx) is not int
            or type(t) is not int
            or type(seq) is not int
            or not (0 <= sidx < nsensors and t0 <= t <= t1 and INT64_MIN <= seq <= INT64_MAX)
        ):
            raise ValueError(_bad_head(i, sidx, seq, t, nsensors, t0, t1))
        for name, v in (("t_sensor", ts), ("t_arrival", ta)):
            if v is not None and (type(v) is not int or not INT64_MIN <= v <= INT64_MAX):
                raise ValueError(f"record {i}: {name} {v!r:.40} is not an int64")
        if fmeta is not None and type(fmeta) is not dict:
            raise ValueError(f"record {i}: meta is a {type(fmeta).__name__}, not a map")
    raise ValueError("a record is malformed")


def _bad_head(i: int, sidx: Any, seq: Any, t: Any, n: int, t0: int, t1: int) -> str:
    """Which of a record's ``sensor``, ``t`` and ``seq`` is wrong, in words."""
    if type(sidx) is not int or not 0 <= sidx < n:
        return f"record {i}: sensor index {sidx!r:.40} is out of range (0..{n - 1})"
    if type(t) is not int or not t0 <= t <= t1:
        return f"record {i}: t {t!r:.40} is not an integer in the chunk's range {t0}..{t1}"
    return f"record {i}: seq {seq!r:.40} is not an int64"


def _len(x: Any) -> int:
    return len(x) if isinstance(x, list) else -1


def _corrupt(meta: ChunkMeta, where: str, reason: str) -> CorruptChunk:
    return CorruptChunk(
        f"{meta.describe()} is damaged: {reason}", path=where or None, offset=meta.offset
    )
