"""Checking a whole recording: every chunk against its meta, seqs across chunks.

:meth:`Recording.verify <recordings.hfr._reader.Recording.verify>` runs
:func:`verify`; it is kept apart from reading because it decodes every chunk
and compares what it holds with what the metas, the stamp index and the other
chunks say, which plain reading never does. :func:`verify` only reads through
the recording's reading methods and returns what it found; the recording
reports the findings in its :attr:`~recordings.hfr._reader.Recording.damage`
(no call back into it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from recordings.errors import CorruptChunk, RecordingError
from recordings.hfr._details import DetailsChecker
from recordings.hfr._format import crc32
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._stamp_index import StampChecker

if TYPE_CHECKING:
    from recordings.hfr._reader import Recording


def verify(
    rec: Recording, *, decode: bool = True, progress: Callable[[int], None] | None = None
) -> list[RecordingError]:
    """:meth:`Recording.verify <recordings.hfr._reader.Recording.verify>` of ``rec``: every
    problem found, in the order found (the caller reports them)."""
    findings: list[RecordingError] = []
    report = findings.append
    seqs: dict[str, list[Any]] = {}
    table = StampChecker(rec.stamp_index(), len(rec.chunks)) if decode else None
    if table is not None and table.problem:
        report(RecordingError(table.problem, path=str(rec.path)))
    details = _details_checker(rec, report) if decode else None
    _check_table(rec, report)
    summaries = _SummaryCheck(rec) if decode else None
    rows: dict[str, int] = {}  # each sensor's frames in the chunks before this one
    whole = True  # every chunk compared with the frame details
    for ci, chunk in enumerate(rec.chunks):
        if progress is not None:
            progress(1)
        try:
            if decode:
                found, frames = _check_contents(rec, chunk, seqs)
                problem = table.compare(ci, found) if table is not None else None
                if problem:
                    raise CorruptChunk(
                        f"the stamp index does not match {chunk.describe()}: {problem}",
                        **_at(rec, chunk.offset),
                    )
                if summaries is not None:
                    summaries.add(chunk, frames)
                problem = details.compare(chunk.sensors, frames, rows) if details else None
                if problem:
                    raise CorruptChunk(
                        f"the frame details do not match {chunk.describe()}: {problem}",
                        **_at(rec, chunk.offset),
                    )
            else:
                _check_crc(rec, chunk)
        except RecordingError as err:
            whole = False
            report(err)
        for name, n in zip(chunk.sensors, chunk.counts, strict=True):
            rows[name] = rows.get(name, 0) + n
    problem = details.finish() if details is not None and whole else None
    if problem:
        report(RecordingError(problem, path=str(rec.path)))
    problem = summaries.finish() if summaries is not None and whole else None
    if problem:
        report(RecordingError(problem, path=str(rec.path)))
    for name, parts in seqs.items():
        _check_unique(rec, name, parts, report)
    return findings


def _check_table(rec: Recording, report: Callable[[RecordingError], None]) -> None:
    """When the chunk list came from the chunk table (1.7), the footer index's entries
    (what a reader before 1.7 uses) must describe the same chunks; every chunk is then
    compared with what it holds as it is decoded."""
    import dataclasses

    from recordings.hfr._chunk_table import ChunkTable
    from recordings.hfr._parser import parse_index

    at = rec.index_offset
    if not isinstance(rec.chunks, ChunkTable) or at is None:
        return
    head = rec.record_head(at)
    listed = head if isinstance(head, RecordingError) else None
    if listed is None:
        assert not isinstance(head, RecordingError)
        parsed = parse_index(head.meta, index_offset=at, where=str(rec.path))
        if isinstance(parsed, RecordingError):
            listed = parsed
        else:
            for i, (a, b) in enumerate(zip(parsed, rec.chunks, strict=False)):
                if dataclasses.replace(a, stamps=None) != b:
                    listed = CorruptChunk(
                        f"the chunk table does not match the footer index at chunk {i} "
                        f"({b.describe()}; the index: {a.describe()})",
                        **_at(rec, b.offset),
                    )
                    break
            if listed is None and len(parsed) != len(rec.chunks):
                listed = CorruptChunk(
                    f"the chunk table lists {len(rec.chunks)} chunks, the footer index "
                    f"{len(parsed)}",
                    **_at(rec, at),
                )
    if listed is not None:
        report(listed)


class _SummaryCheck:
    """The sensor summaries (1.7) reduced again from the decoded frames, as the writer
    reduced them, and compared with the file's."""

    def __init__(self, rec: Recording) -> None:
        from recordings.hfr._details import DetailsWriter
        from recordings.hfr._sensor_summary import SensorReducer

        self.stored = rec.sensor_summaries()
        self.writer = None
        if self.stored:
            self.writer = DetailsWriter(level=1, spool=True, reducer=SensorReducer)

    def add(self, chunk: ChunkMeta, frames: list[Any]) -> None:
        from recordings.hfr._details import chunk_details

        if self.writer is None:
            return
        index = {name: i for i, name in enumerate(chunk.sensors)}
        sensor = np.fromiter((index[f.sensor] for f in frames), np.int64, len(frames))
        stamps = (
            np.fromiter((f.seq for f in frames), np.int64, len(frames)),
            np.fromiter((f.t for f in frames), np.int64, len(frames)),
            np.fromiter((f.t_arrival or 0 for f in frames), np.int64, len(frames)),
            np.fromiter((f.t_arrival is not None for f in frames), bool, len(frames)),
        )
        self.writer.add(chunk.sensors, sensor, chunk_details(frames, index), stamps)

    def finish(self) -> str | None:
        """Why the file's summaries do not describe its frames, if they do not."""
        if self.writer is None or self.stored is None:
            return None
        found = self.writer.summaries()
        for name in sorted(set(found) | set(self.stored)):
            if found.get(name) != self.stored.get(name):
                return (
                    f"the sensor summary of {name!r} does not match its frames "
                    f"(stored {self.stored.get(name)!r:.200}, frames give "
                    f"{found.get(name)!r:.200})"
                )
        return None


def _details_checker(
    rec: Recording, report: Callable[[RecordingError], None]
) -> DetailsChecker | None:
    """A checker of the file's DETAILS record (1.6), reporting a record that does not
    describe the file as a whole; ``None`` when the file has none."""
    found = rec.frame_details()
    if found is None:
        why = rec.frame_details_problem or ""
        benign = ("the file has no", "the footer is not", "the recording is closed")
        if rec.indexed and not why.startswith(benign) and "limit" not in why:
            problem = f"the frame details cannot be used: {why}"
            report(RecordingError(problem, path=str(rec.path)))
        return None
    counts: dict[str, int] = {}
    for c in rec.chunks:
        for name, n in zip(c.sensors, c.counts, strict=True):
            counts[name] = counts.get(name, 0) + n
    checker = DetailsChecker(found, counts)
    if checker.problem:
        report(RecordingError(checker.problem, path=str(rec.path)))
        return None
    return checker


def _check_contents(
    rec: Recording, chunk: ChunkMeta, seqs: dict[str, list[Any]]
) -> tuple[dict[str, tuple[list[int], list[int]]], list[Any]]:
    """Check ``chunk`` against its meta; its frames' ``(t, seq)`` lists per sensor, and
    the frames."""
    found: dict[str, list[int]] = {}
    seen: dict[str, list[int]] = {}
    frames = list(rec.decode_chunk(chunk).frames())
    for f in frames:
        found.setdefault(f.sensor, []).append(f.t)
        seen.setdefault(f.sensor, []).append(f.seq)
    for name, n, (a, b) in zip(chunk.sensors, chunk.counts, chunk.ranges, strict=True):
        ts = found.get(name, [])
        if len(ts) != n or (ts and (min(ts), max(ts)) != (a, b)):
            got = f"{len(ts)} frames" + (f", t {min(ts)}..{max(ts)}" if ts else "")
            raise CorruptChunk(
                f"{chunk.describe()} does not hold what its meta says: sensor "
                f"{name!r} has {got}, its meta {n} frames, t {a}..{b}",
                **_at(rec, chunk.offset),
            )
    for name, values in seen.items():
        seqs.setdefault(name, []).append(np.asarray(values, np.int64))
    return {name: (ts, seen[name]) for name, ts in found.items()}, frames


def _check_unique(
    rec: Recording, name: str, parts: list[Any], report: Callable[[RecordingError], None]
) -> None:
    s = np.sort(np.concatenate(parts))
    dup = s[1:][s[1:] == s[:-1]]
    if len(dup):
        values = np.unique(dup)
        shown = ", ".join(map(str, values[:3].tolist())) + (", ..." if len(values) > 3 else "")
        report(
            RecordingError(
                f"sensor {name!r} has {len(dup)} frames whose seq was seen before (seq {shown})",
                path=str(rec.path),
            )
        )


def _check_crc(rec: Recording, chunk: ChunkMeta) -> None:
    head = rec.record_head(chunk.offset)
    if isinstance(head, RecordingError):
        raise head
    payload = rec.read_at(head.payload_offset, head.payload_len)
    if crc32(payload) != head.payload_crc:
        raise CorruptChunk(f"{chunk.describe()} fails its CRC", **_at(rec, chunk.offset))


def _at(rec: Recording, offset: int) -> dict[str, Any]:
    return {"path": str(rec.path), "offset": offset}
