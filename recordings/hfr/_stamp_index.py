"""The footer stamp index (format 1.5, packed 1.8): every frame's stamps in one record.

Theory of operation. A 1.4 file carries a stamp block per chunk
(:mod:`recordings.hfr._stamp_block`), so grouping never decompresses a payload,
but it still parses every chunk meta of the footer index in Python and
decompresses one small block per chunk: on a 3 GB file of 1,500 chunks that
per-chunk work is the whole cost. The 1.5 writer also appends, after the
INDEX record and before the trailer, one STAMPS record holding the stamps of
the whole file, sensor by sensor, as columns::

    meta    := {"s": [sensor names], "c": [frames per sensor], "chunks": chunk count,
                "z": per sensor, per column, the stored lengths of its zstd frames}
    payload := for each sensor, for each column: its frames, back to back
    columns := runs:<u4[2r]  seq:<i8[c]  t:<i8[c]  t_arrival:<i8[c]  has_arrival:u1[c]

A sensor's rows are its frames in recorded order. ``runs`` says which chunk
each row is in, as ``r`` pairs ``(chunk, count)``: ``count`` rows (at least
1) in the chunk at that position in the footer index, chunks increasing, the
counts adding up to ``c``. ``seq``, ``t`` and ``t_arrival`` are delta-coded
(``d[0] = v[0]``, ``d[i] = v[i] - v[i-1]``, modulo 2**64), so regular
streams become constants zstd packs to nothing. A column is one or more zstd
frames (content size set) whose contents, joined, are exactly its values.
The writer compresses a frame at level 3 only when that shrinks it at least
3x, else at zstd's fastest level (jittered ``t`` deltas hardly compress and
decode several times slower than they copy).

Sensor-major, so a reader takes a sensor's stamps as whole columns (no
masking), decodes only the sensors it wants, and leaves ``t_arrival`` packed
until asked. The record sits after the INDEX so a reader finds it from the
trailer and the INDEX's 24-byte prelude alone, without decoding the index.
Readers before 1.5 never look there (the indexed path jumps to the INDEX,
scanning and streaming stop at it).

:func:`read_stamp_index` checks what it takes: the trailer, the record ends
exactly there, its CRCs, the meta's shape (lengths adding up to the payload),
and, as each sensor is decoded, that every column holds exactly ``c`` values
(at most the reader's chunk limit in all), chunk positions inside ``chunks``
and never decreasing, ``has_arrival`` 0 or 1. A sensor that fails raises
``ValueError`` (:func:`~recordings.hfr._stamps.read_stamps` then uses the chunks'
own blocks, then the payloads). Like blocks, the index does not verify
payloads: :class:`~recordings.hfr._stamps.FrameFetcher` checks each frame it
fetches against its stamp, and ``hyperframes check`` compares the index with
every decoded chunk.

Since 1.8 the record is written as kind PACKED_STAMPS, with one more meta key,
``p``: per sensor, per column, each frame's packing width. A delta column's
frame of at least 4 values whose deltas span less than ``2**32`` holds
``base:<i8`` (the smallest delta) then each delta minus ``base`` in 1, 2 or 4
bytes (:func:`pack_deltas`): a stamp jittered by tens of microseconds costs 2
bytes that zstd leaves as they are and a reader adds up with numpy, where the
plain deltas cost zstd's entropy decoder 4-10 ns a value. A reader sums each
frame straight into the column (:meth:`StampIndex.t`), and grouping decodes
``t`` alone: ``seq`` and the chunk/rank runs only when a table or a frame is
asked for. Older readers look for kind 5 after the INDEX, find none and use
the blocks.

The writer builds the index chunk by chunk from the blocks it writes,
buffering at most :data:`~recordings.hfr._framed.FRAME_BYTES` per sensor and column before it
compresses them into a frame, so its memory is bounded, not the session's
stamps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgpack
import numpy as np

from recordings.hfr._details import MAX_META_COST
from recordings.hfr._format import (
    END_MAGIC,
    PRELUDE,
    SYNC,
    TRAILER,
    RecordKind,
    crc32,
    pack_prelude,
)
from recordings.hfr._framed import (
    ColumnFrames,
    FrameLengths,
    declared_size,
    decompress_frame,
    frame_lengths,
    has_checksum,
    names_and_counts,
    pieces_then_close,
    unframe,
    unframe_pieces,
)
from recordings.hfr._limits import ReadLimits, walked_cost

__all__ = [
    "StampChecker",
    "StampIndex",
    "StampIndexWriter",
    "pack_deltas",
    "read_stamp_index",
]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_DTYPES = ("<u4", "<i8", "<i8", "<i8", "u1")  # runs, seq, t, t_arrival, has_arrival
ROW_BYTES = 33
"""Most bytes per frame of the decompressed columns (a run of one frame: 8 + 25)."""
_MAX_META = 16 << 20  # names and frame lengths of every sensor: far below this


class StampIndexWriter:
    """Builds a STAMPS record chunk by chunk (what a writer calls as chunks are written)."""

    def __init__(self, level: int = 3, *, spool: bool = False) -> None:
        # per sensor, per column; the delta columns' frames packed (1.8)
        self._cols = ColumnFrames(len(_DTYPES), level, spool=spool, encode=pack_deltas)
        self._last: dict[str, Int64] = {}  # per sensor: last seq, t, t_arrival
        self._count: dict[str, int] = {}
        self.chunks = 0

    def add(
        self,
        sensors: tuple[str, ...],
        sensor: np.ndarray[Any, Any],
        seq: Int64,
        t: Int64,
        arrival: Int64,
        has: np.ndarray[Any, Any],
        chunk_rows: Sequence[int] | None = None,
    ) -> None:
        """The next chunk's stamps, in recorded order (``sensor`` indexes ``sensors``); with
        ``chunk_rows``, the next chunks' (:mod:`recordings.hfr._stamp_batch`), that many
        rows each: each keeps its own run of rows per sensor, as if added one by one."""
        if self.chunks < 0:
            return
        values = np.stack([np.asarray(c, np.int64) for c in (seq, t, arrival)])
        has = np.asarray(has, np.uint8)
        sensor = np.asarray(sensor)
        starts = None if chunk_rows is None else np.cumsum([0, *chunk_rows[:-1]])
        for k, name in enumerate(sensors):
            where = sensor == k if len(sensors) > 1 else slice(None)
            v = values[:, where]
            if not v.shape[1]:
                continue
            if name not in self._last:
                self._last[name] = np.zeros(3, np.int64)
                self._count[name] = 0
            d = np.empty_like(v)
            d[:, 1:] = v[:, 1:] - v[:, :-1]  # int64 wraps: the reader's sum undoes it
            d[:, 0] = v[:, 0] - self._last[name]
            self._last[name] = v[:, -1].copy()
            n = v.shape[1]
            self._count[name] += n
            if chunk_rows is None:
                runs = np.array([self.chunks, n], "<u4")
            else:
                runs = self._batch_runs(where, starts, chunk_rows)
            parts = (runs, d[0], d[1], d[2], has[where])
            for j, (part, dtype) in enumerate(zip(parts, _DTYPES, strict=True)):
                self._cols.add(name, j, np.ascontiguousarray(part, dtype).tobytes())
        self.chunks += 1 if chunk_rows is None else len(chunk_rows)

    def _batch_runs(self, where: Any, starts: Any, chunk_rows: Sequence[int]) -> Any:
        """A sensor's ``[chunk, rows]`` pairs in a batch of chunks of ``chunk_rows`` rows
        starting at rows ``starts``, one per chunk holding any of its rows (``where``)."""
        if isinstance(where, slice):
            counts = np.asarray(chunk_rows)
        else:
            counts = np.add.reduceat(where.astype(np.int64), starts)  # no chunk is empty
        held = np.flatnonzero(counts)
        pairs = np.empty((len(held), 2), "<u4")
        pairs[:, 0] = self.chunks + held
        pairs[:, 1] = counts[held]
        return pairs.reshape(-1)

    def skip_chunk(self) -> None:
        """A chunk without usable stamps: the index cannot describe the file."""
        self.chunks = -1

    def record(self) -> Iterator[bytes] | None:
        """The STAMPS record's pieces (prelude, meta, payload frames read as they are
        taken, the spool file removed after the last); ``None`` when a chunk had no
        stamp block (``Recorder(stamp_blocks=False)``)."""
        if self.chunks < 0:
            return None
        lengths, frames = self._cols.finish()
        meta = msgpack.packb(
            {
                "s": self._cols.keys(),
                "c": list(self._count.values()),
                "chunks": self.chunks,
                "z": lengths,
                "ck": True,  # 1.7: every frame carries its zstd checksum
                # 1.8: each frame's packing width (0: plain), a byte a frame
                "p": [[bytes(col) for col in cols] for cols in self._cols.tags()],
            },
            use_bin_type=True,
        )
        head = pack_prelude(RecordKind.PACKED_STAMPS, meta, frames.size, frames.crc())
        return pieces_then_close(head, meta, frames)


class StampIndex:
    """The checked record; each sensor's columns are decoded when first asked for."""

    def __init__(
        self,
        sensors: tuple[str, ...],
        counts: tuple[int, ...],
        chunks: int,
        payload: memoryview | Callable[[int, int], bytes],
        spans: FrameLengths,
        *,
        checksummed: bool = False,
        packing: list[list[bytes]] | None = None,
    ) -> None:
        self.sensors = sensors
        """Sensor names, in the record's order."""
        self.counts = counts
        """Frames per sensor, parallel to :attr:`sensors`."""
        self.chunks = chunks
        """Chunks the index describes (the footer index's chunk count)."""
        self._payload = payload  # the payload, or read(offset in it, length) (1.7)
        self._spans = spans  # per sensor, per column: the frames' lengths
        self._checksummed = checksummed
        self._packing = packing  # per sensor, per column: each frame's width (1.8)
        self.bytes_read = 0
        """Payload bytes read for the columns decoded so far (when read per column)."""

    def __len__(self) -> int:
        return sum(self.counts)

    def __repr__(self) -> str:
        return (
            f"StampIndex({len(self)} frames of {', '.join(self.sensors)} in {self.chunks} chunks)"
        )

    def _column(self, k: int, j: int) -> np.ndarray[Any, Any]:
        dtype = np.dtype(_DTYPES[j])
        payload, spans = self._region(self._spans.spans(k, j))
        what = f"a stamp index column of {self.sensors[k]!r}"
        if j == 0:  # runs: as many as the frames declare, an even number of u4, checked above
            want = sum(declared_size(payload[a : a + b]) for a, b in spans)
            if want % 8 or want > 8 * self.counts[k]:
                raise ValueError(f"{what} has the wrong size")
        else:
            want = self.counts[k] * dtype.itemsize
        raw = unframe(payload, spans, want, what, checksummed=self._checksummed)
        return np.frombuffer(raw, dtype)

    def _region(self, spans: list[tuple[int, int]]) -> tuple[memoryview, list[tuple[int, int]]]:
        """The bytes holding one column's frames, and the frames' spans in them: the
        payload itself, or (a checksummed record) only that column, read now."""
        if not callable(self._payload):
            return self._payload, spans
        if not spans:
            return memoryview(b""), spans
        lo = spans[0][0]
        hi = spans[-1][0] + spans[-1][1]
        data = self._payload(lo, hi - lo)
        self.bytes_read += len(data)
        if len(data) != hi - lo:
            raise ValueError("the file ends inside its stamp index")
        return memoryview(data), [(a - lo, b) for a, b in spans]

    def _summed(self, k: int, j: int, out: Int64 | None = None) -> Int64:
        """Delta-coded column ``j`` (``seq``, ``t`` or ``t_arrival``) of sensor ``k`` as its
        values: each frame's deltas summed straight into the result, the running total
        carried from frame to frame (no joined copy of the deltas, no second array); into
        ``out`` (``counts[k]`` int64 values) when given."""
        n = self.counts[k]
        payload, spans = self._region(self._spans.spans(k, j))
        what = f"a stamp index column of {self.sensors[k]!r}"
        widths = self._packing[k][j] if self._packing is not None else None
        if out is None:
            out = np.empty(n, np.int64)
        if widths is not None and any(widths):
            return self._unpacked(payload, spans, widths, out, what)
        pieces = unframe_pieces(payload, spans, 8 * n, what, checksummed=self._checksummed)
        if len(pieces) == 1 or any(len(p) % 8 for p in pieces):  # a value across frames
            return np.cumsum(np.frombuffer(b"".join(pieces), "<i8"), dtype=np.int64, out=out)
        at = 0
        for piece in pieces:
            deltas = np.frombuffer(piece, "<i8")
            part = out[at : at + len(deltas)]
            np.cumsum(deltas, out=part)
            if at:  # int64 wraps, as the writer's differences did
                np.add(part, out[at - 1], out=part)
            at += len(deltas)
        return out

    def _unpacked(
        self,
        payload: memoryview,
        spans: list[tuple[int, int]],
        widths: bytes,
        out: Int64,
        what: str,
    ) -> Int64:
        """:meth:`_summed` of a column with packed frames (1.8): a frame of width ``w`` holds
        ``base:<i8`` then ``u{w}`` values, each delta being ``base`` plus its value."""
        n = len(out)
        at = 0
        for (a, b), w in zip(spans, widths, strict=True):
            frame = payload[a : a + b]
            if w == 0:
                raw = decompress_frame(frame, 8 * (n - at), what, self._checksummed)
                if len(raw) % 8:
                    raise ValueError(f"a frame of {what} has the wrong size")
                deltas = np.frombuffer(raw, "<i8")
                part = out[at : at + len(deltas)]
                np.cumsum(deltas, out=part)
            else:
                raw = decompress_frame(frame, 8 + w * (n - at), what, self._checksummed)
                if len(raw) < 8 or (len(raw) - 8) % w:
                    raise ValueError(f"a packed frame of {what} has the wrong size")
                base = int.from_bytes(raw[:8], "little", signed=True)
                packed = np.frombuffer(raw, f"<u{w}", offset=8)
                part = out[at : at + len(packed)]
                np.add(packed, base, out=part, dtype=np.int64)  # wraps as the writer's deltas
                if at and len(part):  # the running total enters with the first delta
                    np.add(part[:1], out[at - 1], out=part[:1])
                np.cumsum(part, out=part)
                at += len(part)
                continue
            if at:  # int64 wraps, as the writer's differences did
                np.add(part, out[at - 1], out=part)
            at += len(part)
        if at != n:
            raise ValueError(f"{what} has the wrong size")
        return out

    def _index(self, name: str) -> int | None:
        return self.sensors.index(name) if name in self.sensors else None

    def t(self, name: str, out: Int64 | None = None) -> Int64:
        """``t`` of sensor ``name``'s frames in recorded order, and nothing else decoded
        (what grouping needs), into ``out`` when given (as many int64 values as the
        sensor has frames); ``ValueError`` when the column does not hold exactly its
        values."""
        k = self._index(name)
        return np.empty(0, np.int64) if k is None else self._summed(k, 2, out)

    def count(self, name: str) -> int:
        """Frames of sensor ``name`` (0 when the index does not have it)."""
        k = self._index(name)
        return 0 if k is None else self.counts[k]

    def seq(self, name: str) -> Int64:
        """``seq`` of sensor ``name``'s frames in recorded order (``ValueError`` as :meth:`t`)."""
        k = self._index(name)
        return np.empty(0, np.int64) if k is None else self._summed(k, 1)

    def _runs(self, k: int) -> tuple[Int64, Int64]:
        """``(chunk, count)`` of sensor ``k``'s runs, checked (``ValueError``)."""
        name = self.sensors[k]
        runs = self._column(k, 0).reshape(-1, 2).astype(np.int64)
        ids, counts = runs[:, 0], runs[:, 1]
        n = self.counts[k]
        if len(runs) and (
            int(ids[-1]) >= self.chunks
            or bool(np.any(ids[1:] <= ids[:-1]))
            or int(counts.min()) < 1
            or int(counts.sum()) != n
        ):
            raise ValueError(f"the stamp index names a chunk {name!r} is not in")
        if not len(runs) and n:
            raise ValueError(f"a stamp index column of {name!r} has the wrong size")
        return ids, counts

    def check_rows(self, name: str) -> None:
        """What can be checked of :meth:`seq` and :meth:`places` without building them:
        the runs, and that the ``seq`` frames declare exactly its values (each frame's
        checksum is checked when :meth:`seq` decompresses it). ``ValueError`` if not."""
        k = self._index(name)
        if k is None:
            return
        self._runs(k)
        payload, spans = self._region(self._spans.spans(k, 1))
        widths = self._packing[k][1] if self._packing is not None else bytes(len(spans))
        values = 0
        for (a, b), w in zip(spans, widths, strict=True):
            size = declared_size(payload[a : a + b]) - (8 if w else 0)  # a packed base
            if size < 0 or size % (w or 8):
                raise ValueError(f"a frame of a stamp index column of {name!r} has the wrong size")
            values += size // (w or 8)
        if values != self.counts[k]:
            raise ValueError(f"a stamp index column of {name!r} has the wrong size")
        if self._checksummed and not all(has_checksum(payload[a : a + b]) for a, b in spans):
            raise ValueError(f"a frame of a stamp index column of {name!r} has no checksum")

    def places(self, name: str) -> tuple[Int64, Int64]:
        """``(chunk, rank)`` of sensor ``name``'s frames in recorded order: the position of
        the frame's chunk in the footer index, and the frame's position among that
        sensor's frames of its chunk. ``ValueError`` when the runs do not check out."""
        k = self._index(name)
        if k is None:
            e = np.empty(0, np.int64)
            return e, e
        n = self.counts[k]
        ids, counts = self._runs(k)
        chunk = np.repeat(ids, counts)
        first = np.cumsum(counts) - counts  # each run's first row
        rank = np.arange(n, dtype=np.int64) - np.repeat(first, counts)
        return chunk, rank

    def of(self, name: str) -> tuple[Int64, Int64, Int64, Int64]:
        """``(t, seq, chunk, rank)`` of sensor ``name``'s frames, in recorded order
        (:meth:`t`, :meth:`seq` and :meth:`places`); ``ValueError`` when that sensor's
        columns do not check out."""
        chunk, rank = self.places(name)
        return self.t(name), self.seq(name), chunk, rank

    def times(self, name: str) -> tuple[Int64, Int64]:
        """``(t, seq)`` of sensor ``name``'s frames in recorded order: :meth:`of` without
        the chunk and rank columns (nor their runs); ``ValueError`` when a column does
        not hold exactly its values."""
        return self.t(name), self.seq(name)

    def arrivals(self, name: str) -> tuple[Int64, np.ndarray[Any, Any]]:
        """``(t_arrival, has_arrival)`` of sensor ``name``'s frames (0 where absent)."""
        if name not in self.sensors:
            return np.empty(0, np.int64), np.empty(0, bool)
        k = self.sensors.index(name)
        has = self._column(k, 4)
        if len(has) and int(has.max()) > 1:
            raise ValueError(f"the stamp index has a has_arrival of {name!r} that is not 0 or 1")
        return self._summed(k, 3), has.astype(bool)


def read_stamp_index(
    fd: int, size: int, limits: ReadLimits, read: Callable[[int, int], bytes] | None = None
) -> StampIndex | str:
    """The file's STAMPS record, checked, or the reason it cannot be used.

    With ``read(offset, length)`` (a reader that keeps the file open) and a record
    whose frames carry checksums (1.7, meta key ``ck``), only the meta is read now
    and each sensor's columns when that sensor is asked for; otherwise the whole
    record is read and its payload CRC checked."""
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
    stamps = (RecordKind.STAMPS, RecordKind.PACKED_STAMPS)
    if sync != SYNC or kind not in stamps or meta_len > _MAX_META:
        return "the record after the footer index is not a stamp index"
    if at + PRELUDE.size + meta_len + payload_len != end:
        return "the stamp index does not end at the trailer"
    if not limits.footer_fits(payload_len, slack=4096):  # zstd frames: about their data
        return f"the stamp index of {payload_len} bytes is over the reader's limit"
    data = os.pread(fd, PRELUDE.size + meta_len, at)
    if len(data) != PRELUDE.size + meta_len:
        return "the file ends inside its stamp index"
    meta_bytes = data[PRELUDE.size :]
    if crc32(data[:16], meta_bytes) != meta_crc:
        return "the stamp index fails its CRC"
    if walked_cost(meta_bytes, MAX_META_COST) > MAX_META_COST:
        return f"the stamp index meta of {meta_len} bytes would decode to too many objects"
    try:
        meta = msgpack.unpackb(meta_bytes, raw=False)
        names, counts, chunks, lengths = meta["s"], meta["c"], meta["chunks"], meta["z"]
        checksummed = meta.get("ck") is True and read is not None
        packing = meta.get("p") if kind == RecordKind.PACKED_STAMPS else None
    except Exception as err:  # msgpack raises many types on garbage
        return f"the stamp index meta does not decode ({err})"
    shaped = names_and_counts(names, counts, chunks)
    spans = frame_lengths(lengths, len(names), len(_DTYPES), payload_len) if shaped else None
    packed = kind == RecordKind.PACKED_STAMPS
    if spans is None or (packed and not _packing_fits(packing, lengths)):
        return "the stamp index meta is malformed"
    if not limits.footer_fits(max(counts, default=0) * ROW_BYTES):  # a sensor at a time
        return f"the stamp index of {max(counts)} frames of one sensor is over the reader's limit"
    base = at + PRELUDE.size + meta_len
    if checksummed:
        assert read is not None
        return StampIndex(
            tuple(names),
            tuple(counts),
            chunks,
            lambda offset, length: read(base + offset, length),
            spans,
            checksummed=True,
            packing=packing,
        )
    payload = os.pread(fd, payload_len, base)
    if len(payload) != payload_len:
        return "the file ends inside its stamp index"
    if crc32(payload) != payload_crc:
        return "the stamp index fails its CRC"
    return StampIndex(
        tuple(names), tuple(counts), chunks, memoryview(payload), spans, packing=packing
    )


_WIDTHS = (1, 2, 4)
"""Bytes per value of a packed frame (1.8)."""
_MIN_PACKED = 4  # values: a packed frame is then always smaller than the plain one


_scratch = threading.local()


def _scratch_buffer(n: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """The calling thread's scratch buffer for :func:`pack_deltas`, at least ``n`` bytes."""
    buf: np.ndarray[Any, np.dtype[np.uint8]] | None = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < n:
        buf = _scratch.buf = np.empty(max(n, 2 * len(buf) if buf is not None else n), np.uint8)
    return buf


def pack_deltas(column: int, raw: Any) -> tuple[int, Any]:
    """``(width, content)`` of one frame of column ``column`` (1.8): a delta column's
    frame of at least 4 values whose deltas span less than ``2**32`` is stored as
    ``base:<i8`` (the smallest delta) then each delta minus ``base`` in the fewest of 1, 2
    or 4 bytes (jittered stamps: 2 bytes a frame, which zstd leaves as they are and a
    reader adds up without a decoder); any other frame as it is, width 0.

    A packed ``content`` is a view of the calling thread's scratch buffer, valid until
    its next call (the writer compresses it at once): the differences and the packed
    values were a large allocation or two for each frame of 32,768 values."""
    if column not in (1, 2, 3) or len(raw) % 8 or len(raw) < 8 * _MIN_PACKED:
        return 0, raw
    deltas = np.frombuffer(raw, "<i8")
    low = int(deltas.min())
    span = int(deltas.max()) - low
    for width in _WIDTHS:
        if span < 1 << (8 * width):
            n = len(deltas)
            size = 8 + width * n
            buf = _scratch_buffer(size + 8 * n + 8)
            buf[:8] = np.frombuffer(low.to_bytes(8, "little", signed=True), np.uint8)
            at = size + (-size % 8)  # the differences, after the packed values
            diff = buf[at : at + 8 * n].view("<i8")
            np.subtract(deltas, np.int64(low), out=diff)  # in [0, span]: exact
            np.copyto(buf[8:size].view(f"<u{width}"), diff, casting="unsafe")
            return width, buf.data[:size]
    return 0, raw


def _packing_fits(packing: Any, lengths: list[list[list[int]]]) -> bool:
    """Whether the meta's ``p`` (1.8) has a width byte per frame of ``lengths``: 0, 1, 2
    or 4, and 0 for every frame of the runs and ``has_arrival`` columns."""
    return (
        isinstance(packing, list)
        and len(packing) == len(lengths)
        and all(
            isinstance(cols, list)
            and len(cols) == len(_DTYPES)
            and all(
                isinstance(col, bytes)
                and len(col) == len(frames)
                and set(col) <= ({0} if j in (0, 4) else {0, *_WIDTHS})
                for j, (col, frames) in enumerate(zip(cols, per_key, strict=True))
            )
            for cols, per_key in zip(packing, lengths, strict=True)
        )
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
        try:
            for name in index.sensors:
                t, seq, chunk, _ = index.of(name)
                self._rows[name] = (t, seq, chunk)
        except ValueError as err:
            self.problem = str(err)

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
