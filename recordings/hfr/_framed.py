"""Columns stored as zstd frames: the building block of the footer's records.

The stamp index (:mod:`recordings.hfr._stamp_index`, format 1.5) and the frame
details (:mod:`recordings.hfr._details`, 1.6) both store, per sensor, a few
columns of fixed-width values. A column is one or more zstd frames (content
size set) whose contents, joined, are exactly its values; the record's meta
lists each frame's stored length, per sensor and column.

Writing: :class:`ColumnFrames` buffers at most :data:`FRAME_BYTES` of a
column before compressing a frame, so a writer's memory is bounded, not the
session's frames. A frame is compressed at level 3 only when that shrinks it
at least 3x, else at zstd's fastest level: jittered deltas hardly compress
and decode several times slower than they copy. A recorder's writers spool
the compressed frames to a temporary file past :data:`SPOOL_BYTES`, so hours
of frames do not grow its memory either.

Reading: :func:`frame_spans` checks the meta's lengths and turns them into
``(start, length)`` spans; :func:`unframe` decompresses one column and
raises ``ValueError`` unless it holds exactly the bytes its reader expects.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

import numpy as np
import zstandard

from recordings.hfr import _buffers as buffers

__all__ = [
    "FRAME_BYTES",
    "SPOOL_BYTES",
    "ColumnFrames",
    "FrameLengths",
    "Frames",
    "declared_size",
    "decompress_frame",
    "frame_lengths",
    "frame_spans",
    "has_checksum",
    "names_and_counts",
    "pieces_then_close",
    "unframe",
    "unframe_pieces",
]

FRAME_BYTES = 256 << 10
"""Raw bytes of one column a writer buffers before compressing a frame."""

SPOOL_BYTES = 4 << 20
"""Compressed frames a spooling writer keeps in memory before it moves them to a file."""

Spans = list[list[list[tuple[int, int]]]]
"""Per sensor, per column: ``(start, length)`` of each zstd frame in the payload."""


class Frames:
    """A finished record's payload: its zstd frames in order, in memory or spooled to a
    temporary file (read back a frame at a time, so writing it costs no memory)."""

    def __init__(self, items: list[bytes | tuple[int, int]], spool: IO[bytes] | None) -> None:
        self._items = items
        self._spool = spool
        self.size = sum(len(x) if isinstance(x, bytes) else x[1] for x in items)
        """Bytes of the payload."""

    def __iter__(self) -> Iterator[bytes]:
        fd = self._spool.fileno() if self._spool is not None else -1
        for item in self._items:
            yield item if isinstance(item, bytes) else os.pread(fd, item[1], item[0])

    def crc(self) -> int:
        """CRC-32 of the payload (one pass over it)."""
        crc = 0
        for frame in self:
            crc = zlib.crc32(frame, crc)
        return crc

    def close(self) -> None:
        """Remove the spool file, if any (the frames cannot be read after)."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None


class _Pending:
    """A column's bytes not framed yet, in a buffer kept from frame to frame: a
    ``bytearray`` cleared after each frame grew again, reallocation by reallocation, to
    :data:`FRAME_BYTES` (the bench's drive: 1.3 reallocations over 128 KiB a chunk in
    the writer thread)."""

    __slots__ = ("buf", "n")

    def __init__(self) -> None:
        self.buf = np.empty(4096, np.uint8)
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, raw: bytes) -> None:
        end = self.n + len(raw)
        if end > len(self.buf):
            grown = np.empty(max(end, min(2 * len(self.buf), FRAME_BYTES * 9 // 8)), np.uint8)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf.data[self.n : end] = raw
        self.n = end

    def take(self) -> memoryview:
        """The bytes so far (a view, valid until the next :meth:`add`); the column is
        empty after."""
        view = self.buf.data[: self.n]
        self.n = 0
        return view


class ColumnFrames:
    """One record's columns being written: per key (a sensor), ``width`` columns.

    With ``spool=True`` (the recorder's), once the compressed frames pass
    :data:`SPOOL_BYTES` they go to an unnamed temporary file instead of memory,
    so a writer's memory stays flat over hours of frames (8 hours of a 1 kHz
    IMU's stamps are hundreds of MB even compressed)."""

    def __init__(
        self,
        width: int,
        level: int = 3,
        *,
        spool: bool = False,
        encode: Callable[[int, Any], tuple[int, Any]] | None = None,
    ) -> None:
        self.width = width
        # encode(column, raw) -> (tag, content): what a frame holds in place of its raw
        # bytes (the stamp index's packed deltas, 1.8); the tags are kept per frame.
        self._encode = encode
        self._tags: dict[str, list[list[int]]] = {}
        # Every frame carries zstd's content checksum (1.7): a reader that takes one
        # sensor's columns checks them without reading the whole payload for its CRC.
        self._cctx = zstandard.ZstdCompressor(
            level=level, write_content_size=True, write_checksum=True
        )
        self._fast = zstandard.ZstdCompressor(
            level=-100, write_content_size=True, write_checksum=True
        )
        self._bufs: dict[str, list[_Pending]] = {}
        self._frames: dict[str, list[list[bytes | tuple[int, int]]]] = {}
        self._spool_ok = spool
        self._spool: IO[bytes] | None = None
        self._held = 0  # bytes of frames in memory
        self._end = 0  # bytes in the spool file

    def __contains__(self, key: str) -> bool:
        return key in self._bufs

    def keys(self) -> list[str]:
        """The keys in the order they were first added."""
        return list(self._bufs)

    def add(self, key: str, column: int, raw: bytes) -> None:
        """Append ``raw`` to ``key``'s column ``column``."""
        bufs = self._bufs.get(key)
        if bufs is None:
            bufs = self._bufs[key] = [_Pending() for _ in range(self.width)]
            self._frames[key] = [[] for _ in range(self.width)]
            self._tags[key] = [[] for _ in range(self.width)]
        buf = bufs[column]
        buf.add(raw)
        if len(buf) >= FRAME_BYTES:
            self._keep(self._frames[key][column], self._frame(key, column, buf.take()))

    def tags(self) -> list[list[list[int]]]:
        """Per key, per column, each frame's ``encode`` tag (0 without ``encode``), in the
        order of :meth:`finish`'s lengths; complete once :meth:`finish` was called."""
        return [self._tags[key] for key in self._bufs]

    def _frame(self, key: str, column: int, buf: memoryview) -> bytes:
        tag, content = 0, cast(Any, buf)
        if self._encode is not None:
            tag, content = self._encode(column, content)
        self._tags[key][column].append(tag)
        return self._compress(content)

    def finish(self) -> tuple[list[list[list[int]]], Frames]:
        """``(lengths, frames)``: per key, per column, each frame's stored length, and every
        frame in that order (the record's payload)."""
        lengths: list[list[list[int]]] = []
        frames: list[bytes | tuple[int, int]] = []
        for key, bufs in self._bufs.items():
            per_key = []
            for column, (buf, done) in enumerate(zip(bufs, self._frames[key], strict=True)):
                if buf:
                    self._keep(done, self._frame(key, column, buf.take()))
                per_key.append([len(f) if isinstance(f, bytes) else f[1] for f in done])
                frames += done
            lengths.append(per_key)
        return lengths, Frames(frames, self._spool)

    def _keep(self, column: list[bytes | tuple[int, int]], frame: bytes) -> None:
        if self._spool is None and self._spool_ok and self._held + len(frame) > SPOOL_BYTES:
            # Closed by Frames.close() once the record is written, or by __del__.
            self._spool = tempfile.TemporaryFile()  # noqa: SIM115
            for cols in self._frames.values():
                for col in cols:
                    col[:] = [self._put(f) if isinstance(f, bytes) else f for f in col]
            self._held = 0
        if self._spool is not None:
            column.append(self._put(frame))
        else:
            column.append(frame)
            self._held += len(frame)

    def __del__(self) -> None:
        spool = getattr(self, "_spool", None)
        if spool is not None:  # a writer that failed before its record was written
            spool.close()

    def _put(self, frame: bytes) -> tuple[int, int]:
        assert self._spool is not None
        at = self._end
        done = 0
        while done < len(frame):
            done += os.pwrite(self._spool.fileno(), memoryview(frame)[done:], at + done)
        self._end += len(frame)
        return at, len(frame)

    def _compress(self, raw: Any) -> bytes:
        # Into a kept buffer, then copied out at its size: zstandard's own result is an
        # allocation of the raw size however little it holds (a 26-byte frame held 263 KB).
        into = buffers.compress_into(self._cctx, raw, len(raw))
        if 3 * into.at > len(raw):  # hardly compresses: decode speed matters more
            buffers.give(into.buf)
            into = buffers.compress_into(self._fast, raw, len(raw))
        try:
            return bytes(into.written)
        finally:
            buffers.give(into.buf)


def pieces_then_close(head: bytes, meta: bytes, frames: Frames) -> Iterator[bytes]:
    """A record's pieces: ``head`` (its prelude), ``meta``, then the payload's frames;
    the spool file is removed once the last is taken."""
    try:
        yield head
        yield meta
        yield from frames
    finally:
        frames.close()


def frame_spans(lengths: Any, keys: int, width: int, payload: int) -> Spans | None:
    """The spans of a record's frames from its meta's ``lengths``, or ``None`` unless they
    are ``keys`` lists of ``width`` lists of positive ints adding up to ``payload``."""
    shaped = (
        isinstance(lengths, list)
        and len(lengths) == keys
        and all(isinstance(cols, list) and len(cols) == width for cols in lengths)
        and all(
            isinstance(col, list) and all(type(x) is int and x > 0 for x in col)
            for cols in lengths
            for col in cols
        )
    )
    if not shaped or sum(x for cols in lengths for col in cols for x in col) != payload:
        return None
    spans: Spans = []
    pos = 0
    for cols in lengths:
        per_key = []
        for col in cols:
            frames = []
            for x in col:
                frames.append((pos, x))
                pos += x
            per_key.append(frames)
        spans.append(per_key)
    return spans


class FrameLengths:
    """A record's frame lengths, checked (:func:`frame_lengths`); one column's spans are
    built when that column is read, so a reader of three sensors does not walk the
    lengths of an 8-hour IMU's frames in Python."""

    __slots__ = ("_lengths", "_starts")

    def __init__(self, lengths: list[list[list[int]]], starts: list[list[int]]) -> None:
        self._lengths = lengths
        self._starts = starts

    def spans(self, key: int, column: int) -> list[tuple[int, int]]:
        """``(start, length)`` of each frame of ``key``'s column ``column``."""
        out = []
        pos = self._starts[key][column]
        for x in self._lengths[key][column]:
            out.append((pos, x))
            pos += x
        return out


def frame_lengths(lengths: Any, keys: int, width: int, payload: int) -> FrameLengths | None:
    """:func:`frame_spans`' checks (``keys`` lists of ``width`` lists of positive ints
    adding up to ``payload``), done in C loops (``map``, ``min``, ``sum``), with the
    spans left to :meth:`FrameLengths.spans`; ``None`` when they do not hold."""
    if not isinstance(lengths, list) or len(lengths) != keys:
        return None
    starts: list[list[int]] = []
    pos = 0
    for cols in lengths:
        if not isinstance(cols, list) or len(cols) != width:
            return None
        per_key = []
        for col in cols:
            if not isinstance(col, list) or (
                col and (set(map(type, col)) != {int} or min(col) < 1)
            ):
                return None
            per_key.append(pos)
            pos += sum(col)
        starts.append(per_key)
    return FrameLengths(lengths, starts) if pos == payload else None


def names_and_counts(names: Any, counts: Any, chunks: Any) -> bool:
    """Whether a record's meta names distinct sensors, a count of at least 0 for each and
    a chunk count under 2**32 (the head both footer records share)."""
    return (
        isinstance(names, list)
        and all(type(s) is str for s in names)
        and len(set(names)) == len(names)
        and isinstance(counts, list)
        and len(counts) == len(names)
        and all(type(c) is int and c >= 0 for c in counts)
        and type(chunks) is int
        and 0 <= chunks < 1 << 32
    )


def declared_size(frame: memoryview) -> int:
    """The content size a zstd frame declares (0 when it declares none or is not one)."""
    try:
        return max(0, zstandard.frame_content_size(frame))
    except zstandard.ZstdError:
        return 0


def has_checksum(frame: memoryview | bytes) -> bool:
    """Whether ``frame`` starts a zstd frame whose header sets the content checksum flag
    (libzstd then verifies the checksum as it decompresses)."""
    return len(frame) > 4 and bytes(frame[:4]) == _ZSTD_MAGIC and bool(frame[4] & 0x04)


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def unframe(
    payload: memoryview,
    spans: list[tuple[int, int]],
    want: int,
    what: str,
    *,
    checksummed: bool = False,
) -> bytes:
    """The column made of ``spans`` of ``payload``: exactly ``want`` bytes, else
    ``ValueError`` naming ``what`` (a frame that declares more, does not decompress, or
    frames that add up to another size). ``checksummed``: every frame must carry its
    content checksum (the payload's CRC was not checked)."""
    parts = unframe_pieces(payload, spans, want, what, checksummed=checksummed)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def unframe_pieces(
    payload: memoryview,
    spans: list[tuple[int, int]],
    want: int,
    what: str,
    *,
    checksummed: bool = False,
) -> list[bytes]:
    """:func:`unframe`'s frames, decompressed and checked the same way, not joined (a
    reader that sums a delta-coded column sums them in place, without the copy)."""
    parts: list[bytes] = []
    got = 0
    for start, length in spans:
        raw = decompress_frame(payload[start : start + length], want - got, what, checksummed)
        got += len(raw)
        parts.append(raw)
    if got != want:
        raise ValueError(f"{what} has the wrong size")
    return parts or [b""]


def decompress_frame(frame: memoryview, most: int, what: str, checksummed: bool) -> bytes:
    """One zstd frame of a column, decompressed: it must declare its content size, at most
    ``most`` bytes (and carry its checksum when ``checksummed``); ``ValueError`` naming
    ``what`` otherwise, or when it does not decompress (a checksum that fails included)."""
    if checksummed and not has_checksum(frame):
        raise ValueError(f"a frame of {what} has no checksum")
    try:
        size = zstandard.frame_content_size(frame)
        if not 0 <= size <= most:
            raise ValueError(f"a frame of {what} has the wrong size")
        raw: bytes = _dctx().decompress(frame, max_output_size=size)
    except zstandard.ZstdError as err:
        raise ValueError(f"a frame of {what}: {err}") from err
    if len(raw) != size:
        raise ValueError(f"a frame of {what} has the wrong size")
    return raw


_decompressors: list[zstandard.ZstdDecompressor] = []


def _dctx() -> zstandard.ZstdDecompressor:
    if not _decompressors:
        _decompressors.append(zstandard.ZstdDecompressor())
    return _decompressors[0]
