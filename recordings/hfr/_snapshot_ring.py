"""The snapshot recorder's memory: sealed chunks of the last seconds, and the snapshots
asked of them (no I/O, no lock of its own: the recorder's lock guards it).

:class:`Ring` keeps the compressed chunks (:class:`Held`) and the two bounds of
:class:`~recordings.SnapshotRecorder` (its module docstring): bytes (the ring
plus the open chunk within ``max_bytes``, oldest first out) and duration (a
chunk goes once its newest frame is more than ``keep_ns`` older than the
newest frame seen). It also keeps the :class:`SnapshotRequest` objects still
waiting for their post-trigger frames: each holds the chunks of its window
from the moment it is asked (later evictions cannot take them), and a
trigger whose window overlaps a request not yet written is merged into it.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from pathlib import Path

from recordings.errors import RecordingError
from recordings.hfr._layout import ChunkMeta

__all__ = ["Held", "Ring", "SnapshotRequest", "SnapshotStatistics"]


@dataclass(slots=True)
class Held:
    """A sealed, compressed chunk in the ring."""

    meta: ChunkMeta
    payload: list[bytes]
    crc: int
    nbytes: int


class SnapshotRequest:
    """One snapshot asked for: its window, then the file written (or why not)."""

    def __init__(self, t: int, lo: int, hi: int, reason: str) -> None:
        self.t = t
        """Frame time of the (first) trigger, ns."""
        self.start = lo
        """First ``t`` of the window (inclusive), ns."""
        self.end = hi
        """Last ``t`` of the window (inclusive), ns."""
        self.reasons = [reason]
        """Why: one entry per trigger merged into this snapshot."""
        self.path: Path | None = None
        """The file, once written."""
        self.frames = 0
        """Frames written."""
        self.error: BaseException | None = None
        self._chunks: list[Held] = []
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> Path:
        """Block until written; the path. Raises the write's error, or ``TimeoutError``."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"snapshot at t={self.t} not written within {timeout} s")
        if self.error is not None:
            raise RecordingError(f"snapshot at t={self.t} failed: {self.error}") from self.error
        assert self.path is not None
        return self.path

    def __repr__(self) -> str:
        state = str(self.path) if self.path else "failed" if self.error else "pending"
        return f"SnapshotRequest(t={self.t}, window=[{self.start}, {self.end}], {state})"


@dataclass(frozen=True, slots=True)
class SnapshotStatistics:
    """What a snapshot recorder holds and has written."""

    frames: int
    """Frames accepted."""
    ring_chunks: int
    ring_bytes: int
    """Compressed bytes in the ring plus the open chunk's raw bytes (<= ``max_bytes``)."""
    ring_span_ns: int
    """Newest frame ``t`` minus the oldest ``t`` the ring still holds (0 if empty)."""
    evicted_chunks: int
    evicted_frames: int
    snapshots_written: int
    snapshots_pending: int
    bytes_written: int = 0
    """Bytes of the snapshot files written (as ``RecorderStatistics``, for metrics)."""
    pending_chunks: int = 0
    """Chunks held by snapshots not yet written (as ``RecorderStatistics``)."""
    paths: tuple[Path, ...] = field(default_factory=tuple)
    failures: tuple[str, ...] = ()
    """One line per snapshot that could not be written (a full disk), naming the file."""


class Ring:
    """Sealed chunks within the recorder's bounds, and the snapshots waiting for frames."""

    def __init__(self, keep_ns: int, max_bytes: int, settle_ns: int) -> None:
        self.keep_ns = keep_ns
        self.max_bytes = max_bytes
        self.settle_ns = settle_ns
        self.chunks: collections.deque[Held] = collections.deque()
        self.bytes = 0
        """Compressed bytes of :attr:`chunks`."""
        self.newest: int | None = None
        """The newest frame ``t`` seen."""
        self.evicted_chunks = 0
        self.evicted_frames = 0
        self.waiting: list[SnapshotRequest] = []
        """Requests waiting for their post-trigger frames, in the order asked."""

    def saw(self, t: int) -> None:
        """A frame at ``t`` was accepted."""
        if self.newest is None or t > self.newest:
            self.newest = t

    def hold(self, held: Held) -> None:
        """A chunk was sealed: kept, and given to every waiting request it reaches into."""
        self.chunks.append(held)
        self.bytes += held.nbytes
        meta = held.meta
        for req in self.waiting:
            if meta.t_start <= req.end and meta.t_end >= req.start:
                req._chunks.append(held)

    def evict(self, open_bytes: int, open_frames: int) -> bool:
        """Let the oldest chunks go until both bounds hold with an open chunk of
        ``open_bytes``; True when that chunk alone is over ``max_bytes`` (the caller
        seals it, its frames the oldest left, and asks again)."""
        chunks = self.chunks
        newest = self.newest if self.newest is not None else 0
        while chunks and (
            self.bytes + open_bytes > self.max_bytes or chunks[0].meta.t_end < newest - self.keep_ns
        ):
            gone = chunks.popleft()
            self.bytes -= gone.nbytes
            self.evicted_chunks += 1
            self.evicted_frames += gone.meta.count
        return bool(open_frames) and self.bytes + open_bytes > self.max_bytes

    def ask(
        self,
        at: int,
        lo: int,
        hi: int,
        reason: str,
        queued: collections.deque[SnapshotRequest],
    ) -> SnapshotRequest:
        """A trigger at ``at`` for ``[lo, hi]``: merged into a request waiting or
        ``queued`` (not started) whose window it overlaps, else a new waiting one."""
        for req in (*self.waiting, *queued):
            if lo <= req.end and req.start <= hi:
                req.start, req.end = min(req.start, lo), max(req.end, hi)
                req.reasons.append(reason)
                if req in queued:
                    # Not started yet: it waits again, for the frames up to its
                    # new end (the open chunk is sealed into it when released).
                    queued.remove(req)
                    self.waiting.append(req)
                req._chunks = self._merge_chunks(req)
                return req
        req = SnapshotRequest(at, lo, hi, reason)
        req._chunks = [c for c in self.chunks if c.meta.t_end >= lo and c.meta.t_start <= hi]
        self.waiting.append(req)
        return req

    def _merge_chunks(self, req: SnapshotRequest) -> list[Held]:
        """``req``'s chunks plus the ring's that reach into its (grown) window."""
        have = {id(c) for c in req._chunks}
        extra = [
            c
            for c in self.chunks
            if id(c) not in have and c.meta.t_end >= req.start and c.meta.t_start <= req.end
        ]
        return sorted([*req._chunks, *extra], key=lambda c: c.meta.index)

    def settled(self, *, final: bool) -> list[SnapshotRequest]:
        """The waiting requests whose window is over (the newest frame is ``settle_ns``
        past its end), or all of them when ``final``; still in :attr:`waiting`."""
        newest = self.newest
        return [
            r
            for r in self.waiting
            if final or (newest is not None and newest >= r.end + self.settle_ns)
        ]

    def span(self, open_t0: int | None) -> int:
        """Newest frame ``t`` minus the oldest ``t`` held (the open chunk's when the ring
        is empty); 0 when nothing is held."""
        oldest = self.chunks[0].meta.t_start if self.chunks else open_t0
        span = 0 if oldest is None or self.newest is None else self.newest - oldest
        return max(span, 0)
