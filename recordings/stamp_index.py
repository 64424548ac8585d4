"""The footer stamp index (format 1.5): every frame's stamps in one record.

Theory of operation. A 1.4 file carries a stamp block per chunk
(:mod:`recordings.stamp_block`), so grouping never decompresses a payload,
but it still parses every chunk meta of the footer index in Python and
decompresses one small block per chunk: on a 3 GB file of 1,500 chunks that
per-chunk work is the whole cost. The 1.5 writer also appends, after the
INDEX record and before the trailer, one STAMPS record holding the stamps of
the whole file as columns::

    payload := z(sensor:<u4[n]) z(chunk:<u4[n]) z(seq:<i8[n]) z(t:<i8[n])
               z(t_arrival:<i8[n]) z(has_arrival:u1[n])
    meta    := {"n": rows, "s": [sensor names], "chunks": chunk count,
                "z": [stored length of each of the six zstd frames]}

one zstd frame per column (streamed: content size not declared), rows in file order (chunk by
chunk, recorded order inside a chunk), ``sensor`` an index into ``s``,
``chunk`` the chunk's position in the footer index. ``seq``, ``t`` and
``t_arrival`` are delta-coded *per sensor*: each row stores its value minus
the previous row's of the same sensor (0 before a sensor's first row),
modulo 2**64, so regular streams become constants zstd packs to nothing.

It sits after the INDEX so a reader finds it from the trailer and the
INDEX's 24-byte prelude alone, without decoding the index: one read, six
decompressions and ``numpy.frombuffer``. Readers before 1.5 never look there
(the indexed path jumps to the INDEX, scanning and streaming stop at it).

:func:`read_stamp_index` checks what it takes: the record ends exactly at
the trailer, its CRCs, every column's size (exactly ``n`` rows, at most the
reader's chunk limit), sensor indices inside ``s``, chunk positions inside
``chunks`` and never decreasing, ``has_arrival`` 0 or 1. Anything else
returns ``None`` with the reason, and the caller uses the chunks' own stamp
blocks, then the payloads. Like blocks, the table does not verify payloads:
:class:`~recordings.stamps.FrameFetcher` checks each frame it fetches
against its stamp, and ``hyperframes check`` compares the table with every
decoded chunk.

The writer builds the table when it closes a file from the chunks' blocks,
one chunk at a time through six streaming compressors, so its memory is one
block, not the session's stamps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np
import zstandard

from recordings.format import (
    END_MAGIC,
    PRELUDE,
    SYNC,
    TRAILER,
    RecordKind,
    crc32,
    pack_prelude,
)

__all__ = ["StampChecker", "StampIndex", "StampIndexWriter", "read_stamp_index"]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_DTYPES = ("<u4", "<u4", "<i8", "<i8", "<i8", "u1")
ROW_BYTES = sum(np.dtype(d).itemsize for d in _DTYPES)
"""Bytes per frame of the decompressed table (33)."""
_MAX_META = 1 << 20  # names of every sensor and six lengths: far below this


class StampIndexWriter:
    """Builds a STAMPS record chunk by chunk (what a writer calls as chunks are written)."""

    def __init__(self, level: int = 3) -> None:
        # One compressor per column: streams of one compressor share its context.
        self._cctx = [zstandard.ZstdCompressor(level=level) for _ in _DTYPES]
        self._streams = [c.compressobj() for c in self._cctx]
        self._out: list[list[bytes]] = [[] for _ in _DTYPES]
        self._names: dict[str, int] = {}
        self._last: dict[int, tuple[int, int, int]] = {}  # per sensor: seq, t, t_arrival
        self.rows = 0
        self.chunks = 0

    def add(
        self,
        sensors: tuple[str, ...],
        sensor: np.ndarray[Any, Any],
        seq: Int64,
        t: Int64,
        arrival: Int64,
        has: np.ndarray[Any, Any],
    ) -> None:
        """The next chunk's stamps, in recorded order (``sensor`` indexes ``sensors``)."""
        ids = np.array([self._names.setdefault(s, len(self._names)) for s in sensors], "<u4")
        gid = ids[np.asarray(sensor, np.int64)] if len(sensor) else np.empty(0, "<u4")
        cols = [np.array(c, np.int64) for c in (seq, t, arrival)]
        deltas = [c.copy() for c in cols]
        for g in np.unique(gid).tolist():
            where = np.flatnonzero(gid == g)
            prev = self._last.get(g, (0, 0, 0))
            for k in range(3):
                v = cols[k][where]
                d = deltas[k]
                d[where[1:]] = v[1:] - v[:-1]  # int64 wraps: the reader's sum undoes it
                d[where[:1]] = v[:1] - np.array(prev[k : k + 1], np.int64)  # arrays wrap
            self._last[g] = (
                int(cols[0][where[-1]]),
                int(cols[1][where[-1]]),
                int(cols[2][where[-1]]),
            )
        chunk = np.full(len(gid), self.chunks, "<u4")
        parts = (gid, chunk, *deltas, np.asarray(has, np.uint8))
        for i, (part, dtype) in enumerate(zip(parts, _DTYPES, strict=True)):
            piece = self._streams[i].compress(np.ascontiguousarray(part, dtype).tobytes())
            if piece:
                self._out[i].append(piece)
        self.rows += len(gid)
        self.chunks += 1

    def skip_chunk(self) -> None:
        """A chunk without usable stamps: the table cannot describe the file."""
        self.chunks = -1

    def record(self) -> list[bytes] | None:
        """The STAMPS record (prelude, meta, payload pieces); ``None`` when a chunk had
        no stamp block (``Recorder(stamp_blocks=False)``)."""
        if self.chunks < 0:
            return None
        # Streamed frames cannot declare their content size; the reader bounds them by ``n``.
        frames = [
            b"".join([*out, s.flush()]) for out, s in zip(self._out, self._streams, strict=True)
        ]
        meta = msgpack.packb(
            {
                "n": self.rows,
                "s": list(self._names),
                "chunks": self.chunks,
                "z": [len(f) for f in frames],
            },
            use_bin_type=True,
        )
        return [
            pack_prelude(RecordKind.STAMPS, meta, sum(map(len, frames)), crc32(*frames)),
            meta,
            *frames,
        ]


@dataclass(frozen=True, slots=True)
class StampIndex:
    """The decoded table: parallel columns in file order."""

    sensors: tuple[str, ...]
    """Sensor names; :attr:`sensor` indexes them."""
    chunks: int
    """Chunks the table describes (the footer index's chunk count)."""
    sensor: np.ndarray[Any, Any]
    chunk: np.ndarray[Any, Any]
    _deltas: tuple[Int64, Int64, Int64]
    has_arrival: np.ndarray[Any, Any]

    def __len__(self) -> int:
        return len(self.sensor)

    def __repr__(self) -> str:
        return (
            f"StampIndex({len(self)} frames of {', '.join(self.sensors)} in {self.chunks} chunks)"
        )

    def of(self, name: str) -> tuple[Int64, Int64, Int64, Int64]:
        """``(t, seq, chunk, rank)`` of sensor ``name``'s frames, in recorded order;
        ``rank`` is a frame's position among that sensor's frames of its chunk."""
        if name not in self.sensors:
            e = np.empty(0, np.int64)
            return e, e, e, e
        if len(self.sensors) == 1:
            seq_d, t_d, chunk = self._deltas[0], self._deltas[1], self.chunk
        else:
            where = self.sensor == self.sensors.index(name)
            seq_d, t_d, chunk = self._deltas[0][where], self._deltas[1][where], self.chunk[where]
        chunk = chunk.astype(np.int64)
        rank = np.arange(len(chunk), dtype=np.int64)
        if len(chunk):
            first = np.flatnonzero(np.diff(chunk, prepend=-1))  # each chunk's first row
            rank -= np.repeat(first, np.diff(np.append(first, len(chunk))))
        return np.cumsum(t_d), np.cumsum(seq_d), chunk, rank

    def arrivals(self, name: str) -> tuple[Int64, np.ndarray[Any, Any]]:
        """``(t_arrival, has_arrival)`` of sensor ``name``'s frames (0 where absent)."""
        where = self.sensor == (self.sensors.index(name) if name in self.sensors else -1)
        return np.cumsum(self._deltas[2][where]), self.has_arrival[where].astype(bool)


def read_stamp_index(fd: int, size: int, max_bytes: int) -> StampIndex | str:
    """The file's STAMPS record, decoded and checked, or the reason it cannot be used."""
    if size < 16 + TRAILER.size + 2 * PRELUDE.size:
        return "the file is too short for a stamp index"
    trailer = os.pread(fd, TRAILER.size, size - TRAILER.size)
    index_offset, crc, magic = TRAILER.unpack(trailer)
    if magic != END_MAGIC or crc32(trailer[:8]) != crc:
        return "the file has no trailer (its writer did not close it)"
    end = size - TRAILER.size
    if not 16 <= index_offset <= end - 2 * PRELUDE.size:
        return "the trailer points outside the file"
    head = os.pread(fd, PRELUDE.size, index_offset)
    sync, kind, meta_len, payload_len, _, _ = PRELUDE.unpack(head)
    at = index_offset + PRELUDE.size + meta_len + payload_len
    if sync != SYNC or kind != RecordKind.INDEX or not at + PRELUDE.size <= end:
        return "no stamp index follows the footer index"
    sync, kind, meta_len, payload_len, meta_crc, payload_crc = PRELUDE.unpack(
        os.pread(fd, PRELUDE.size, at)
    )
    if sync != SYNC or kind != RecordKind.STAMPS or meta_len > _MAX_META:
        return "the record after the footer index is not a stamp index"
    if at + PRELUDE.size + meta_len + payload_len != end:
        return "the stamp index does not end at the trailer"
    if payload_len > max_bytes + 4096:  # six zstd frames never exceed their data by much
        return f"the stamp index of {payload_len} bytes is over the reader's limit"
    data = os.pread(fd, end - at, at)
    if len(data) != end - at:
        return "the file ends inside its stamp index"
    meta_bytes = data[PRELUDE.size : PRELUDE.size + meta_len]
    payload = memoryview(data)[PRELUDE.size + meta_len :]
    if crc32(data[:16], meta_bytes) != meta_crc or crc32(payload) != payload_crc:
        return "the stamp index fails its CRC"
    try:
        meta = msgpack.unpackb(meta_bytes, raw=False)
        n, names, chunks, lengths = meta["n"], meta["s"], meta["chunks"], meta["z"]
    except Exception as err:  # msgpack raises many types on garbage
        return f"the stamp index meta does not decode ({err})"
    if not (
        type(n) is int
        and type(chunks) is int
        and n >= 0
        and 0 <= chunks < 1 << 32
        and isinstance(names, list)
        and all(type(s) is str for s in names)
        and len(set(names)) == len(names)
        and isinstance(lengths, list)
        and len(lengths) == len(_DTYPES)
        and all(type(x) is int and x >= 0 for x in lengths)
        and sum(lengths) == len(payload)
    ):
        return "the stamp index meta is malformed"
    if n * ROW_BYTES > max_bytes:
        return f"the stamp index of {n} frames is over the reader's limit"
    cols = []
    dctx = zstandard.ZstdDecompressor()
    pos = 0
    for length, dtype in zip(lengths, _DTYPES, strict=True):
        frame = payload[pos : pos + length]
        pos += length
        want = n * np.dtype(dtype).itemsize
        try:
            if zstandard.frame_content_size(frame) not in (want, -1):
                return "a stamp index column declares the wrong size"
            raw = dctx.decompress(frame, max_output_size=want)
        except zstandard.ZstdError as err:
            return f"a stamp index column does not decompress ({err})"
        if len(raw) != want:
            return "a stamp index column has the wrong size"
        cols.append(np.frombuffer(raw, dtype))
    sensor, chunk, seq, t, arrival, has = cols
    if n and (
        int(sensor.max()) >= len(names)
        or int(chunk[-1]) >= chunks
        or int(has.max()) > 1
        or bool(np.any(chunk[1:] < chunk[:-1]))
    ):
        return "the stamp index names a sensor or chunk it does not have"
    return StampIndex(
        tuple(names),
        chunks,
        sensor,
        chunk,
        (seq.view(np.int64), t.view(np.int64), arrival.view(np.int64)),
        has,
    )


class StampChecker:
    """Compares a stamp index with each chunk's decoded frames (``hyperframes check``)."""

    def __init__(self, index: StampIndex | None, chunks: int) -> None:
        self.problem = None
        """Why the index as a whole does not describe the file, if it does not."""
        self._rows: dict[str, tuple[Int64, Int64, Int64]] = {}
        if index is None:
            return
        if index.chunks != chunks:
            self.problem = f"the stamp index describes {index.chunks} chunks; the file has {chunks}"
            return
        for name in index.sensors:
            t, seq, chunk, _ = index.of(name)
            self._rows[name] = (t, seq, chunk)

    def compare(self, ci: int, found: dict[str, tuple[list[int], list[int]]]) -> str | None:
        """What differs between the index's rows of chunk ``ci`` and ``found``
        (``{sensor: (t list, seq list)}`` of its frames); ``None`` when they agree."""
        if self.problem or not self._rows:
            return None
        for name in sorted(set(self._rows) | set(found)):
            t, seq, chunk = self._rows.get(name, (_EMPTY, _EMPTY, _EMPTY))
            lo, hi = np.searchsorted(chunk, [ci, ci + 1])
            want = found.get(name, ([], []))
            rows = list(zip(t[lo:hi].tolist(), seq[lo:hi].tolist(), strict=True))
            held = list(zip(*want, strict=True))
            if rows != held:
                if len(rows) != len(held):
                    return f"sensor {name!r} has {len(held)} frames there, the index {len(rows)}"
                k = next(i for i, (a, b) in enumerate(zip(rows, held, strict=True)) if a != b)
                return f"sensor {name!r} frame {k} has (t, seq) {held[k]}, the index {rows[k]}"
        return None


_EMPTY = np.empty(0, np.int64)
