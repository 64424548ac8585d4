"""The chunk table (format 1.7): the footer index's chunk list as columns.

Theory of operation. The INDEX record lists every chunk as a msgpack map; a
reader builds a :class:`~recordings.hfr._layout.ChunkMeta` per entry and checks it
in Python, about 100 us a chunk: 2.9 s for the 28,781 chunks of an 8-hour
drive, before ``info`` prints a line or ``replay`` finds its first frame. The
1.7 writer also writes, right before the INDEX (after the DETAILS record),
one TABLE record with the same facts as columns, and the INDEX's ``table``
key gives its ``[offset, length]``::

    meta    := {s: [sensor names], chunks: m, entries: e, new: [[position, [spec, ...]], ...],
                z: [[stored length of each of its zstd frames], ...] per column}
    payload := the columns, in this order, each one or more zstd frames:
    per chunk (m values)   i t0 t1 n raw rec off len w0 w1:<i8  z k has_w:u1  ns:<u4
    per entry (e values)   sensor:<u4  count start end:<i8

A chunk's entries are its ``ns`` sensors in the chunk's own order (the
``s``, ``c`` and ``r`` of its meta), the chunks' entries back to back;
``sensor`` indexes the table's ``s``; ``w0``/``w1`` are the wall anchor when
``has_w`` is 1. Stamp blocks (``st``) are not in the table: a reader that
wants one reads it from the chunk's own meta (the STAMPS record serves first).

:func:`read_chunk_table` checks every column at once in numpy (what
:func:`~recordings.hfr._parser.parse_index` checks entry by entry: sizes in range,
offsets increasing without overlap and before the INDEX, counts adding up,
ranges inside the chunk's, sensors distinct within a chunk) and gives a
:class:`ChunkTable`, a sequence that builds a ``ChunkMeta`` only when one is
asked for. The reader still checks the INDEX's meta CRC and that it lists as
many chunks as the table (its ``chunks`` array is skipped, not decoded);
``hyperframes check`` compares the table with every INDEX entry.
"""

from __future__ import annotations

import array
import os
from collections.abc import Iterator, Sequence
from typing import Any, overload

import msgpack
import numpy as np

from recordings.hfr._format import (
    BLOB_ALIGN,
    CHUNK_KINDS,
    PREAMBLE,
    PRELUDE,
    SYNC,
    Compression,
    RecordKind,
    crc32,
    pack_prelude,
)
from recordings.hfr._framed import ColumnFrames, frame_spans, pieces_then_close, unframe
from recordings.hfr._layout import MAX_SIZE, ChunkMeta
from recordings.hfr._limits import ReadLimits, walked_cost

__all__ = ["ChunkTable", "ChunkTableWriter", "index_keys", "read_chunk_table"]

CHUNK_COLUMNS = ("i", "t0", "t1", "n", "raw", "rec", "off", "len", "w0", "w1", "z", "k", "has_w")
_DTYPES = (*(["<i8"] * 10), "u1", "u1", "u1", "<u4", "<u4", "<i8", "<i8", "<i8")
"""Per chunk: the 13 above and ``ns``; per entry: sensor, count, start, end."""
_PER_CHUNK = 14
_MAX_META_COST = 64 << 20


class ChunkTableWriter:
    """Collects each written chunk's facts; :meth:`record` gives the TABLE record."""

    def __init__(self) -> None:
        # array.array, not lists: 8 hours are a million values (36 MB as Python ints);
        # one row-major array of the per-chunk values (one C call a chunk), one of the
        # entries' four
        self._chunks = array.array("q")
        self._entries = array.array("q")
        self._names: dict[str, int] = {}
        self._new: list[list[Any]] = []

    def add(self, meta: ChunkMeta, offset: int, length: int) -> None:
        """Chunk ``meta`` written at ``offset`` with a payload of ``length`` bytes."""
        wall = meta.wall or (0, 0)
        self._chunks.extend(
            (
                meta.index,
                meta.t_start,
                meta.t_end,
                meta.count,
                meta.raw_size,
                meta.records_size,
                offset,
                length,
                wall[0],
                wall[1],
                int(meta.compression),
                int(meta.kind),
                meta.wall is not None,
                len(meta.sensors),
            )
        )
        if meta.new_specs:
            self._new.append([self.chunks - 1, [dict(s) for s in meta.new_specs]])
        names = self._names
        for name, n, (a, b) in zip(meta.sensors, meta.counts, meta.ranges, strict=True):
            self._entries.extend((names.setdefault(name, len(names)), n, a, b))

    @property
    def chunks(self) -> int:
        """Chunks added so far."""
        return len(self._chunks) // _PER_CHUNK

    def record(self) -> tuple[list[bytes], int]:
        """The record's pieces and its length."""
        frames = ColumnFrames(len(_DTYPES))
        chunks = np.array(self._chunks, np.int64).reshape(-1, _PER_CHUNK)  # copies: adds go on
        entries = np.array(self._entries, np.int64).reshape(-1, len(_DTYPES) - _PER_CHUNK)
        columns = [*chunks.T, *entries.T]
        for j, (col, dtype) in enumerate(zip(columns, _DTYPES, strict=True)):
            if len(col):
                frames.add("t", j, col.astype(dtype).tobytes())
        lengths, payload = frames.finish()
        meta = msgpack.packb(
            {
                "s": list(self._names),
                "chunks": len(chunks),
                "entries": len(entries),
                "new": self._new,
                "z": lengths[0] if lengths else [[] for _ in _DTYPES],
            },
            use_bin_type=True,
        )
        head = pack_prelude(RecordKind.TABLE, meta, payload.size, payload.crc())
        pieces = list(pieces_then_close(head, meta, payload))
        return pieces, sum(len(p) for p in pieces)


class ChunkTable(Sequence[ChunkMeta]):
    """Checked chunk columns; ``table[i]`` builds chunk ``i``'s :class:`ChunkMeta` once."""

    def __init__(self, names: tuple[str, ...], cols: dict[str, np.ndarray[Any, Any]], new: Any):
        self.names = names
        """Sensor names the entries' ``sensor`` indexes."""
        self.cols = cols
        """Per chunk: :data:`CHUNK_COLUMNS` and ``ns``; per entry: ``sensor``,
        ``count``, ``start``, ``end``; ``first`` is each chunk's first entry."""
        self.new: dict[int, tuple[dict[str, Any], ...]] = {p: tuple(s) for p, s in new}
        self._built: list[ChunkMeta | None] = [None] * len(cols["i"])

    def __len__(self) -> int:
        return len(self._built)

    @overload
    def __getitem__(self, i: int) -> ChunkMeta: ...

    @overload
    def __getitem__(self, i: slice) -> list[ChunkMeta]: ...

    def __getitem__(self, i: int | slice) -> ChunkMeta | list[ChunkMeta]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("chunk position out of range")
        got = self._built[i]
        if got is None:
            got = self._built[i] = self._build(i)
        return got

    def __iter__(self) -> Iterator[ChunkMeta]:
        for i in range(len(self)):
            yield self[i]

    def _build(self, i: int) -> ChunkMeta:
        c = self.cols
        v = [int(c[k][i]) for k in (*CHUNK_COLUMNS, "first", "ns")]  # Python ints
        (index, t0, t1, n, raw, rec, off, length, w0, w1, z, k, has_w, a, ns) = v
        b = a + ns
        names = self.names
        return ChunkMeta(
            index=index,
            t_start=t0,
            t_end=t1,
            count=n,
            raw_size=raw,
            records_size=rec,
            compression=Compression(z),
            sensors=tuple(names[s] for s in c["sensor"][a:b].tolist()),
            counts=tuple(c["count"][a:b].tolist()),
            ranges=tuple(zip(c["start"][a:b].tolist(), c["end"][a:b].tolist(), strict=True)),
            new_specs=self.new.get(i, ()),
            offset=off,
            stored_size=length,
            kind=k,
            wall=(w0, w1) if has_w else None,
        )

    def entry_chunk(self) -> np.ndarray[Any, Any]:
        """The chunk position of each entry."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.cols["ns"].astype(np.int64))


def index_keys(data: bytes, index_offset: int, size: int) -> tuple[dict[str, Any], int] | str:
    """The INDEX record's meta keys but ``chunks``, and how many chunks it lists,
    from the record's prelude and meta ``data`` (its meta CRC checked; the ``chunks``
    entries skipped by msgpack, not decoded), or why not."""
    if len(data) < PRELUDE.size:
        return "the footer index is cut short"
    sync, kind, meta_len, _, meta_crc, _ = PRELUDE.unpack_from(data)
    if sync != SYNC or kind != RecordKind.INDEX or len(data) != PRELUDE.size + meta_len:
        return "the footer index is not where the trailer points"
    meta = memoryview(data)[PRELUDE.size :]
    if crc32(memoryview(data)[:16], meta) != meta_crc:
        return "the footer index fails its CRC"
    try:
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(data))
        unpacker.feed(meta)
        keys: dict[str, Any] = {}
        chunks = -1
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key == "chunks":
                chunks = unpacker.read_array_header()
                for _ in range(chunks):
                    unpacker.skip()
            else:
                keys[key] = unpacker.unpack()  # sensors, ledger, details, table: small
    except Exception as err:  # msgpack raises many types on garbage
        return f"the footer index meta does not decode ({err})"
    return keys, chunks


def read_chunk_table(
    fd: int, pointer: Any, index_offset: int, chunks: int, limits: ReadLimits
) -> ChunkTable | str:
    """The TABLE record the INDEX's ``table`` key points at, checked, or why not."""
    if not (
        isinstance(pointer, list)
        and len(pointer) == 2
        and all(type(x) is int for x in pointer)
        and PREAMBLE.size <= pointer[0]
        and pointer[0] + pointer[1] <= index_offset
        and pointer[1] >= PRELUDE.size
    ):
        return "the footer index's table pointer is malformed"
    at, length = pointer
    if not limits.footer_fits(length, slack=_MAX_META_COST):
        return f"the chunk table of {length} bytes is over the reader's limit"
    data = os.pread(fd, length, at)
    if len(data) != length:
        return "the file ends inside its chunk table"
    sync, kind, meta_len, payload_len, meta_crc, payload_crc = PRELUDE.unpack_from(data)
    if sync != SYNC or kind != RecordKind.TABLE or PRELUDE.size + meta_len + payload_len != length:
        return "the table pointer does not point at a chunk table"
    meta_bytes = memoryview(data)[PRELUDE.size : PRELUDE.size + meta_len]
    payload = memoryview(data)[PRELUDE.size + meta_len :]
    if crc32(memoryview(data)[:16], meta_bytes) != meta_crc or crc32(payload) != payload_crc:
        return "the chunk table fails its CRC"
    if walked_cost(meta_bytes, _MAX_META_COST) > _MAX_META_COST:
        return "the chunk table meta would decode to too many objects"
    try:
        meta = msgpack.unpackb(meta_bytes, raw=False, strict_map_key=False)
        names, m, e, new, lengths = (meta[k] for k in ("s", "chunks", "entries", "new", "z"))
    except Exception as err:  # msgpack raises many types on garbage
        return f"the chunk table meta does not decode ({err})"
    if not (
        isinstance(names, list)
        and all(type(s) is str for s in names)
        and len(set(names)) == len(names)
        and type(m) is int
        and type(e) is int
        and 0 <= m <= MAX_SIZE
        and 0 <= e <= MAX_SIZE
        and isinstance(new, list)
    ):
        return "the chunk table meta is malformed"
    if m != chunks:
        return f"the chunk table lists {m} chunks; the footer index {chunks}"
    spans = frame_spans([lengths], 1, len(_DTYPES), len(payload))
    if spans is None:
        return "the chunk table meta is malformed"
    cols: dict[str, np.ndarray[Any, Any]] = {}
    keys = (*CHUNK_COLUMNS, "ns", "sensor", "count", "start", "end")
    try:
        for j, (key, dtype) in enumerate(zip(keys, _DTYPES, strict=True)):
            n = m if j < _PER_CHUNK else e
            want = n * np.dtype(dtype).itemsize
            if not limits.footer_fits(want):
                return "the chunk table is over the reader's limit"
            raw = unframe(payload, spans[0][j], want, f"chunk table column {key}")
            cols[key] = np.frombuffer(raw, dtype)
    except ValueError as err:
        return str(err)
    problem = _check(cols, len(names), index_offset)
    if problem:
        return f"the chunk table {problem}"
    specs = _new_specs(new, m)
    if specs is None:
        return "the chunk table's new specs are malformed"
    return ChunkTable(tuple(names), cols, specs)


def _check(c: dict[str, np.ndarray[Any, Any]], n_names: int, index_offset: int) -> str | None:
    """What :func:`~recordings.hfr._parser.parse_index` refuses, checked for every chunk at once."""
    ns = c["ns"].astype(np.int64)
    if int(ns.sum()) != len(c["sensor"]):
        return "counts more sensor entries than it holds"
    for key in ("i", "n", "raw", "rec", "len", "count"):
        v = c[key]
        if len(v) and (int(v.min()) < 0 or int(v.max()) > MAX_SIZE):
            return f"has a {key} outside [0, 2**62]"
    if len(c["z"]) and int(c["z"].max()) > 1:
        return "has an unknown compression"
    kinds = [int(k) for k in CHUNK_KINDS]
    if not np.isin(c["k"], kinds).all() or int(c["has_w"].max(initial=0)) > 1:
        return "has an unknown chunk kind or wall flag"
    off, length = c["off"], c["len"]
    end = off + PRELUDE.size + length
    if len(off) and (
        int(off[0]) < PREAMBLE.size
        or bool(np.any(off[1:] < end[:-1]))
        or int(end[-1]) > index_offset
        or bool(np.any(end < off))
    ):
        return "places chunks outside the chunk region or overlapping"
    blob = c["rec"] + (-c["rec"] % BLOB_ALIGN)
    if bool(np.any(c["t0"] > c["t1"])) or bool(np.any(blob > c["raw"])):
        return "has inconsistent sizes or time ranges"
    first = np.cumsum(ns) - ns
    c["first"] = first
    sensor = c["sensor"].astype(np.int64)
    if len(sensor) and int(sensor.max()) >= n_names:
        return "names a sensor it does not list"
    chunk_of = np.repeat(np.arange(len(ns), dtype=np.int64), ns)
    sums = np.zeros(len(ns), np.int64)
    np.add.at(sums, chunk_of, c["count"])
    if bool(np.any(sums != c["n"])):
        return "has sensor counts that do not add up"
    lo, hi = c["start"], c["end"]
    if bool(np.any(lo > hi) or np.any(lo < c["t0"][chunk_of]) or np.any(hi > c["t1"][chunk_of])):
        return "has sensor time ranges outside their chunk's"
    keys = chunk_of * max(1, n_names) + sensor
    if len(ns) * max(1, n_names) <= 1 << 24:  # counted, not sorted (8-hour drive: 1 ms)
        twice = bool(np.any(np.bincount(keys, minlength=1) > 1)) if len(keys) else False
    else:
        twice = len(np.unique(keys)) != len(keys)
    if twice:
        return "names a sensor twice in one chunk"
    return None


def _new_specs(new: Any, m: int) -> list[tuple[int, list[dict[str, Any]]]] | None:
    out = []
    for item in new:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and type(item[0]) is int
            and 0 <= item[0] < m
            and isinstance(item[1], list)
            and all(isinstance(s, dict) for s in item[1])
        ):
            return None
        out.append((item[0], item[1]))
    return out
