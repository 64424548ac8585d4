"""Columns stored as zstd frames: the building block of the footer's records.

The stamp index (:mod:`recordings.stamp_index`, format 1.5) and the frame
details (:mod:`recordings.details`, 1.6) both store, per sensor, a few
columns of fixed-width values. A column is one or more zstd frames (content
size set) whose contents, joined, are exactly its values; the record's meta
lists each frame's stored length, per sensor and column.

Writing: :class:`ColumnFrames` buffers at most :data:`FRAME_BYTES` of a
column before compressing a frame, so a writer's memory is bounded, not the
session's frames. A frame is compressed at level 3 only when that shrinks it
at least 3x, else at zstd's fastest level: jittered deltas hardly compress
and decode several times slower than they copy.

Reading: :func:`frame_spans` checks the meta's lengths and turns them into
``(start, length)`` spans; :func:`unframe` decompresses one column and
raises ``ValueError`` unless it holds exactly the bytes its reader expects.
"""

from __future__ import annotations

from typing import Any

import zstandard

__all__ = [
    "FRAME_BYTES",
    "ColumnFrames",
    "declared_size",
    "frame_spans",
    "names_and_counts",
    "unframe",
]

FRAME_BYTES = 256 << 10
"""Raw bytes of one column a writer buffers before compressing a frame."""

Spans = list[list[list[tuple[int, int]]]]
"""Per sensor, per column: ``(start, length)`` of each zstd frame in the payload."""


class ColumnFrames:
    """One record's columns being written: per key (a sensor), ``width`` columns."""

    def __init__(self, width: int, level: int = 3) -> None:
        self.width = width
        self._cctx = zstandard.ZstdCompressor(level=level, write_content_size=True)
        self._fast = zstandard.ZstdCompressor(level=-100, write_content_size=True)
        self._bufs: dict[str, list[bytearray]] = {}
        self._frames: dict[str, list[list[bytes]]] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._bufs

    def keys(self) -> list[str]:
        """The keys in the order they were first added."""
        return list(self._bufs)

    def add(self, key: str, column: int, raw: bytes) -> None:
        """Append ``raw`` to ``key``'s column ``column``."""
        bufs = self._bufs.get(key)
        if bufs is None:
            bufs = self._bufs[key] = [bytearray() for _ in range(self.width)]
            self._frames[key] = [[] for _ in range(self.width)]
        buf = bufs[column]
        buf += raw
        if len(buf) >= FRAME_BYTES:
            self._frames[key][column].append(self._compress(buf))
            buf.clear()

    def finish(self) -> tuple[list[list[list[int]]], list[bytes]]:
        """``(lengths, frames)``: per key, per column, each frame's stored length, and every
        frame in that order (the record's payload)."""
        lengths: list[list[list[int]]] = []
        frames: list[bytes] = []
        for key, bufs in self._bufs.items():
            per_key = []
            for buf, done in zip(bufs, self._frames[key], strict=True):
                if buf:
                    done.append(self._compress(buf))
                    buf.clear()
                per_key.append([len(f) for f in done])
                frames += done
            lengths.append(per_key)
        return lengths, frames

    def _compress(self, raw: bytearray) -> bytes:
        packed: bytes = self._cctx.compress(bytes(raw))
        if 3 * len(packed) > len(raw):  # hardly compresses: decode speed matters more
            packed = self._fast.compress(bytes(raw))
        return packed


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


def unframe(payload: memoryview, spans: list[tuple[int, int]], want: int, what: str) -> bytes:
    """The column made of ``spans`` of ``payload``: exactly ``want`` bytes, else
    ``ValueError`` naming ``what`` (a frame that declares more, does not decompress, or
    frames that add up to another size)."""
    parts = []
    got = 0
    for start, length in spans:
        frame = payload[start : start + length]
        try:
            size = zstandard.frame_content_size(frame)
            if not 0 <= size <= want - got:
                raise ValueError(f"a frame of {what} has the wrong size")
            raw = _dctx().decompress(frame, max_output_size=size)
        except zstandard.ZstdError as err:
            raise ValueError(f"a frame of {what}: {err}") from err
        got += len(raw)
        parts.append(raw)
    if got != want:
        raise ValueError(f"{what} has the wrong size")
    return parts[0] if len(parts) == 1 else b"".join(parts)


_decompressors: list[zstandard.ZstdDecompressor] = []


def _dctx() -> zstandard.ZstdDecompressor:
    if not _decompressors:
        _decompressors.append(zstandard.ZstdDecompressor())
    return _decompressors[0]
