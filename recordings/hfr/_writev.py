"""Writing many pieces to a file descriptor: ``writev`` split at the system's ``IOV_MAX``.

A record leaves the writers as a list of pieces (a prelude, a meta, payload
parts that are views of a compressor's output) so that nothing is copied
into one buffer. ``os.writev`` takes at most ``IOV_MAX`` pieces per call
(1024 on Linux) and fails with ``EINVAL`` beyond it, and the footer of a long
or wide recording has more: every zstd frame of every column of every sensor
of the stamp index and the frame details is one piece. :func:`write_all`
therefore hands the pieces over in batches of at most :data:`IOV_MAX`, and
resumes a short write (a signal, a full pipe) where it stopped, inside a
piece if need be. Every writer of ``.hfr`` files goes through it (the
recorder, the snapshot writer; ``check --repair`` through the recorder).

:data:`IOV_MAX` is read at each call, so a test may lower it
(``monkeypatch.setattr(recordings.hfr._writev, "IOV_MAX", 3)``) to exercise the
split with a small file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = ["BATCH_BYTES", "IOV_MAX", "system_iov_max", "write_all"]


def system_iov_max() -> int:
    """``sysconf(SC_IOV_MAX)``, or 1024 (POSIX's usual value) where it is not known."""
    try:
        value = os.sysconf("SC_IOV_MAX")
    except (ValueError, OSError, AttributeError):
        return 1024
    return value if value > 0 else 1024


IOV_MAX = system_iov_max()
"""Most pieces one ``writev`` call is given (read at each call: tests lower it)."""


BATCH_BYTES = 16 << 20
"""Bytes a batch stops growing at: ``parts`` may be read lazily (a spooled footer record),
so a batch of 1,024 of them stays a bounded amount of memory."""


def write_all(fd: int, parts: Iterable[Any]) -> int:
    """Write ``parts`` (bytes-like, taken lazily) to ``fd`` back to back; returns the
    bytes written.

    At most :data:`IOV_MAX` pieces (and about :data:`BATCH_BYTES`) go to one
    ``os.writev``; a short write is resumed at the first byte not written.
    Empty pieces are skipped. An ``OSError`` propagates (what was written
    before it stays written).
    """
    limit = max(1, IOV_MAX)
    total = 0
    batch: list[memoryview] = []
    held = 0
    for part in parts:
        view = memoryview(part).cast("B")
        if not view.nbytes:
            continue
        batch.append(view)
        held += view.nbytes
        if len(batch) >= limit or held >= BATCH_BYTES:
            total += _write_batch(fd, batch)
            batch, held = [], 0
    if batch:
        total += _write_batch(fd, batch)
    return total


def _write_batch(fd: int, views: list[memoryview]) -> int:
    """Write ``views`` (at most ``IOV_MAX``) wholly, resuming short writes."""
    total = 0
    i = 0  # the first piece not wholly written
    while i < len(views):
        n = os.writev(fd, views[i:])
        total += n
        while i < len(views) and n >= views[i].nbytes:
            n -= views[i].nbytes
            i += 1
        if n:  # the rest of this piece goes first next time
            views[i] = views[i][n:]
    return total
