"""Checking a whole recording: every chunk against its meta, seqs across chunks.

:meth:`Recording.verify <recordings.reader.Recording.verify>` runs
:func:`verify`; it is kept apart from reading because it decodes every chunk
and compares what it holds with what the metas, the stamp index and the other
chunks say, which plain reading never does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from recordings.errors import CorruptChunk, RecordingError
from recordings.format import crc32
from recordings.layout import ChunkMeta
from recordings.stamp_index import StampChecker

if TYPE_CHECKING:
    from recordings.reader import Recording


def verify(
    rec: Recording, *, decode: bool = True, progress: Callable[[int], None] | None = None
) -> list[RecordingError]:
    """:meth:`Recording.verify <recordings.reader.Recording.verify>` of ``rec``: every
    problem found is reported in ``rec.damage``, which is returned."""
    seqs: dict[str, list[Any]] = {}
    table = StampChecker(rec.stamp_index(), len(rec.chunks)) if decode else None
    if table is not None and table.problem:
        rec._report(RecordingError(table.problem, path=str(rec.path)))
    for ci, chunk in enumerate(rec.chunks):
        if progress is not None:
            progress(1)
        try:
            if decode:
                found = _check_contents(rec, chunk, seqs)
                problem = table.compare(ci, found) if table is not None else None
                if problem:
                    raise CorruptChunk(
                        f"the stamp index does not match {chunk.describe()}: {problem}",
                        **rec._at(chunk.offset),
                    )
            else:
                _check_crc(rec, chunk)
        except RecordingError as err:
            rec._report(err)
    for name, parts in seqs.items():
        _check_unique(rec, name, parts)
    return list(rec.damage)


def _check_contents(
    rec: Recording, chunk: ChunkMeta, seqs: dict[str, list[Any]]
) -> dict[str, tuple[list[int], list[int]]]:
    """Check ``chunk`` against its meta; its frames' ``(t, seq)`` lists per sensor."""
    found: dict[str, list[int]] = {}
    seen: dict[str, list[int]] = {}
    for f in rec.decode_chunk(chunk).frames():
        found.setdefault(f.sensor, []).append(f.t)
        seen.setdefault(f.sensor, []).append(f.seq)
    for name, n, (a, b) in zip(chunk.sensors, chunk.counts, chunk.ranges, strict=True):
        ts = found.get(name, [])
        if len(ts) != n or (ts and (min(ts), max(ts)) != (a, b)):
            got = f"{len(ts)} frames" + (f", t {min(ts)}..{max(ts)}" if ts else "")
            raise CorruptChunk(
                f"{chunk.describe()} does not hold what its meta says: sensor "
                f"{name!r} has {got}, its meta {n} frames, t {a}..{b}",
                **rec._at(chunk.offset),
            )
    for name, values in seen.items():
        seqs.setdefault(name, []).append(np.asarray(values, np.int64))
    return {name: (ts, seen[name]) for name, ts in found.items()}


def _check_unique(rec: Recording, name: str, parts: list[Any]) -> None:
    s = np.sort(np.concatenate(parts))
    dup = s[1:][s[1:] == s[:-1]]
    if len(dup):
        values = np.unique(dup)
        shown = ", ".join(map(str, values[:3].tolist())) + (", ..." if len(values) > 3 else "")
        rec._report(
            RecordingError(
                f"sensor {name!r} has {len(dup)} frames whose seq was seen before (seq {shown})",
                path=str(rec.path),
            )
        )


def _check_crc(rec: Recording, chunk: ChunkMeta) -> None:
    head = rec._read_record_head(chunk.offset)
    if isinstance(head, RecordingError):
        raise head
    payload = os.pread(rec._fd, head.payload_len, head.payload_offset)
    if crc32(payload) != head.payload_crc:
        raise CorruptChunk(f"{chunk.describe()} fails its CRC", **rec._at(chunk.offset))
