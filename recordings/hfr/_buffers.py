"""Chunk-sized byte buffers, reused across chunks and recorders of one process.

Why. A recorder fills a fresh chunk buffer every few megabytes. Fresh blocks of
that size come from the system: every 4 KiB page is faulted in and zeroed on
first touch, and glibc hands such blocks back when they are freed from another
thread (the recorder's writer). A buffer given back here once its chunk is in
the file keeps its pages mapped for the next chunk: on 4 MiB chunks of camera
frames the recording thread's page faults went from 1,500-5,500 to 200-1,000 per
GB written (after a process's first recording, which maps them once).
(zstd's output objects fault too; writing them into reused buffers through its
streaming API cost more CPU than the faults it saved, so they are left.)

:func:`take` returns a buffer of at least ``n`` bytes (the smallest kept one
that fits without wasting more than it holds, else a new one); :func:`give`
keeps it for the next caller, at most :data:`KEEP` buffers and
:data:`KEEP_BYTES` in all. A buffer given back must no longer be read or
written by its old owner. Thread-safe.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["KEEP", "KEEP_BYTES", "give", "take"]

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
