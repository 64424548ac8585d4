"""Chunk-sized byte buffers, reused across chunks and recorders of one process.

Why. A recorder fills a fresh chunk buffer every few megabytes. Fresh blocks of
that size come from the system: every 4 KiB page is faulted in and zeroed on
first touch, and glibc hands such blocks back when they are freed from another
thread (the recorder's writer). A buffer given back here once its chunk is in
the file keeps its pages mapped for the next chunk: on 4 MiB chunks of camera
frames the recording thread's page faults went from 1,500-5,500 to 200-1,000 per
GB written (after a process's first recording, which maps them once).

zstd's one-shot ``compress`` allocates its bound (about the input's size) for every
result, so a recorder's compression threads and its writer thread (the footer's
column frames) made a large allocation for each chunk and frame. :func:`compress_into`
writes the same frame, through zstd's streaming API with the input's size given, into
a buffer taken here (on the bench's drive: 163 against 159 us a chunk, the bytes
identical at levels 1 and 3).

:func:`take` returns a buffer of at least ``n`` bytes (the smallest kept one
that fits without wasting more than it holds, else a new one); :func:`give`
keeps it for the next caller, at most :data:`KEEP` buffers and
:data:`KEEP_BYTES` in all. A buffer given back must no longer be read or
written by its old owner. Thread-safe.
"""

from __future__ import annotations

import threading
from typing import IO, Any, cast

import numpy as np
import zstandard

__all__ = ["KEEP", "KEEP_BYTES", "Into", "compress_into", "give", "take"]

KEEP = 16
"""Buffers kept at most (a recorder has ``max_pending + 1`` chunks in flight)."""
KEEP_BYTES = 128 << 20
"""Bytes kept at most, in all."""

Buffer = np.ndarray[Any, np.dtype[np.uint8]]
_lock = threading.Lock()
_kept: list[Buffer] = []


def take(n: int) -> Buffer:
    """A uint8 buffer of at least ``n`` bytes (its contents are garbage)."""
    with _lock:
        best = -1
        for i, buf in enumerate(_kept):
            if n <= len(buf) <= 2 * n + (1 << 20) and (best < 0 or len(buf) < len(_kept[best])):
                best = i
        if best >= 0:
            return _kept.pop(best)
    return np.empty(n, np.uint8)


def give(buf: Any) -> None:
    """Keep ``buf`` (from :func:`take`) for the next :func:`take`, if there is room."""
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or buf.base is not None:
        return  # a view: its owner may still use the rest
    with _lock:
        if len(_kept) < KEEP and sum(len(b) for b in _kept) + len(buf) <= KEEP_BYTES:
            _kept.append(buf)


class Into:
    """A zstd stream writer's sink: what it writes, copied into a buffer from :func:`take`
    (a larger one if it fills up). :attr:`buf` goes back with :func:`give` once
    :attr:`written` is no longer read."""

    __slots__ = ("at", "buf", "view")

    def __init__(self, n: int) -> None:
        self.buf = take(n)
        self.view = self.buf.data
        self.at = 0

    @property
    def written(self) -> memoryview:
        """The bytes written so far (a view of :attr:`buf`)."""
        return self.view[: self.at]

    def write(self, data: Any) -> int:
        n = len(data)
        end = self.at + n
        if end > len(self.buf):
            grown = take(max(end, 2 * len(self.buf)))
            grown[: self.at] = self.buf[: self.at]
            give(self.buf)
            self.buf, self.view = grown, grown.data
        self.view[self.at : end] = data
        self.at = end
        return n


WRITE_SIZE = 64 << 10
"""Bytes of a stream writer's own output buffer (under glibc's 128 KiB mmap threshold)."""


def compress_into(cctx: zstandard.ZstdCompressor, data: Any, size: int) -> Into:
    """The frame ``cctx.compress(data)`` makes (``data``: ``size`` bytes, given to zstd
    up front), in a buffer from :func:`take`."""
    bound = size + (size >> 8) + 4096  # zstd's bound, and some
    into = Into(-(-bound // (64 << 10)) << 16)  # in steps of 64 KiB: fewer sizes kept
    sink = cast(IO[bytes], into)  # it has write(), all a stream writer calls
    with cctx.stream_writer(sink, size=size, write_size=WRITE_SIZE, closefd=False) as writer:
        writer.write(data)
    return into
