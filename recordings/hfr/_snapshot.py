"""Snapshot (black-box) recording: keep the last seconds in memory, write them on a trigger.

Theory of operation. Frames go into an open chunk (the recorder's
:class:`~recordings.hfr._builder.ChunkBuilder`), sealed and compressed in the
caller's thread once it reaches ``chunk_bytes`` or spans ``chunk_seconds`` of
frame time, then kept in a ring. Two bounds hold at every return of
``write()``:

* **bytes**: the ring's compressed chunks plus the open chunk's raw bytes
  stay within ``max_bytes`` (the oldest chunks go first);
* **duration**: a chunk goes once its newest frame is more than ``keep``
  seconds older than the newest frame seen, so the ring spans at most
  ``keep + chunk_seconds`` of frame time.

All times are frame time (``t``), never the wall clock, so a replayed or
virtual-clock session snapshots exactly as a live one.

A trigger (:meth:`SnapshotRecorder.trigger`, ``SIGUSR1`` after
:meth:`~SnapshotRecorder.install_signal`, a predicate on groups through
:meth:`~SnapshotRecorder.observe`, or a key in ``hyperframes record
--snapshot``) at ``t`` asks for the frames with ``t - pre <= frame.t <= t +
post``. It takes the ring's chunks that reach into the window at once (so
later evictions cannot take them), then every chunk sealed until a frame at
or after ``t + post + settle`` arrives; then it seals the open chunk and
hands the snapshot to the writer thread. A frame of the window that arrives
after that (a sensor later than ``settle`` behind the newest) is not in it.

The writer thread writes each snapshot to ``NAME.partial``, fsyncs, and
renames it to its numbered name (``black.0000.hfr``, ...). A chunk wholly in
the window is written as it sits in the ring (only its meta is renumbered);
one that straddles an edge is decoded and re-encoded with only the window's
frames. Each snapshot is a complete recording (header with every sensor's
spec and the trigger in its metadata, chunks, footer index, trailer) holding
the window's frames and nothing else. A process killed while writing leaves a
``.partial`` file and every earlier snapshot intact.

Triggers during a snapshot: one whose window overlaps a snapshot not yet
handed to the writer (still waiting for its post-trigger frames, or queued)
is **merged** into it (the window grows to cover both; the request objects
are the same); any other is **queued** and written after the ones before it,
so two snapshots can share frames. Memory beyond ``max_bytes`` is held only
by snapshots waiting to be written: at most their windows' chunks.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import anyio.lowlevel

from fusion.errors import ConfigError
from fusion.frames import Frame, FrameGroup, SensorSpec
from fusion.ledger import LedgerStatistics
from fusion.timing import run_sync
from fusion.wallclock import sample_anchor
from recordings.errors import RecorderClosed, RecordingError
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_encode import pack as _pack
from recordings.hfr._closing import Closeable
from recordings.hfr._effort import AUTO, AutoEffort, Level, check_level
from recordings.hfr._format import RecordKind, crc32, pack_preamble, pack_prelude
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import ledger_entries
from recordings.hfr._limits import DEFAULT_MAX_CHUNK_BYTES, ReadLimits
from recordings.hfr._records import decode_chunk, decompress_chunk
from recordings.hfr._snapshot_file import SnapshotFile, fsync_dir

__all__ = ["SnapshotRecorder", "SnapshotRequest", "SnapshotStatistics"]

log = logging.getLogger(__name__)

S = 1_000_000_000


@dataclass(slots=True)
class _Held:
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
        self._chunks: list[_Held] = []
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


def snapshot_path(base: Path, number: int) -> Path:
    """``black.hfr`` -> ``black.0003.hfr``."""
    return base.with_name(f"{base.stem}.{number:04d}{base.suffix or '.hfr'}")


class SnapshotRecorder(Closeable):
    """Keeps the last ``keep`` seconds of frames in memory; writes them on a trigger.

    Has the :class:`~recordings.Recorder` frame interface (``write``,
    ``await send``, ``close``, ``statistics``), so a
    :class:`~fusion.Pipeline` takes it as its ``recorder``; give it
    :meth:`observe` as a sink to trigger on groups or worker results.
    ``pre`` and ``post`` (seconds, frame time) are the default window around a
    trigger; ``pre`` defaults to ``keep``. ``settle`` is how much further the
    newest frame must be past the window before it is written, for sensors
    that arrive late (a pipeline's ``max_latency``). ``trigger_on(group) ->
    bool`` is the predicate :meth:`observe` applies. ``inputs`` are files a snapshot
    must never replace (:func:`recordings.output_files.refuse_overlap`: that snapshot fails).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        keep: float = 30.0,
        max_bytes: int = 256 << 20,
        pre: float | None = None,
        post: float = 0.0,
        chunk_bytes: int = 1 << 20,
        chunk_seconds: float | None = None,
        sensors: Iterable[SensorSpec] = (),
        metadata: Mapping[str, Any] | None = None,
        compression_level: Level = AUTO,
        trigger_on: Callable[[FrameGroup], bool] | None = None,
        settle: float = 0.0,
        durable: bool = True,
        wall_clock: bool = True,
        inputs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        if keep <= 0 or post < 0 or settle < 0 or (pre is not None and pre < 0):
            raise ConfigError(f"keep must be > 0, pre and post >= 0 (got {keep}, {pre}, {post})")
        if chunk_bytes < 1 or max_bytes < 2 * chunk_bytes:
            raise ConfigError(
                f"max_bytes ({max_bytes}) must hold at least two chunks of {chunk_bytes} bytes"
            )
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"snapshot folder {self.path.parent} does not exist")
        self.keep_ns = round(keep * S)
        self.pre_ns = self.keep_ns if pre is None else round(pre * S)
        self.post_ns = round(post * S)
        self.settle_ns = round(settle * S)
        self.max_bytes = max_bytes
        self.chunk_bytes = chunk_bytes
        self.chunk_ns = round((chunk_seconds if chunk_seconds is not None else keep / 30) * S)
        self.trigger_on = trigger_on
        self._durable = durable
        level = check_level(compression_level)
        self._level: int | AutoEffort = AutoEffort() if level == AUTO else level
        self._specs: dict[str, SensorSpec] = {s.name: s for s in sensors}
        self._metadata = dict(metadata or {})
        self._ledgers: dict[str, dict[str, Any]] = {}
        self._wall_clock = wall_clock  # anchors like every recording (see Recorder)
        self._inputs = [Path(p) for p in inputs]  # never a snapshot over one of these
        self._failures: list[str] = []
        from recordings.output_files import lock_output

        # One snapshot writer per OUT: a second is refused (its OUT.NNNN.hfr would collide).
        self._output_lock = lock_output(self.path)

        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._builder = ChunkBuilder()
        self._open_t0: int | None = None
        self._ring: collections.deque[_Held] = collections.deque()
        self._ring_bytes = 0
        self._newest: int | None = None
        self._frames = 0
        self._evicted_chunks = 0
        self._evicted_frames = 0
        self._waiting: list[SnapshotRequest] = []  # for their post-trigger frames
        self._queue: collections.deque[SnapshotRequest] = collections.deque()  # to write
        self._writing: SnapshotRequest | None = None
        self._number = 0
        self._written: list[Path] = []
        self.stale_partials: list[tuple[Path, Path]] = []
        """``(OUT.NNNN.hfr.partial, ....partial.N)`` per partial an interrupted run left
        under a name a snapshot took: kept aside, as :class:`~recordings.Recorder` does."""
        self._bytes_written = 0
        self._closing = False
        self._closed = False
        self._signals: collections.deque[int] = collections.deque()
        self._old_handlers: dict[int, Any] = {}
        self._was_true = False
        self._thread = threading.Thread(target=self._writer, name="hfr-snapshot", daemon=True)
        self._thread.start()

    # -- frames -------------------------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Declare a sensor's spec (it goes in every later snapshot's header)."""
        with self._lock:
            self._specs[spec.name] = spec

    def write(self, frame: Frame) -> None:
        """Keep ``frame`` (its arrays are copied). Compresses in this thread when a chunk fills."""
        if self._signals:
            self._take_signals()
        with self._lock:
            if self._closing:
                raise RecorderClosed(f"snapshot recorder for '{self.path}' is closed")
            if frame.sensor not in self._specs:
                self._specs[frame.sensor] = SensorSpec(frame.sensor)
            t = frame.t
            if self._open_t0 is not None and (
                abs(t - self._open_t0) >= self.chunk_ns or self._builder.size >= self.chunk_bytes
            ):
                self._seal()
            self._builder.add(frame)
            if self._open_t0 is None:
                self._open_t0 = t
            self._frames += 1
            if self._newest is None or t > self._newest:
                self._newest = t
            self._evict()
            if self._waiting:
                self._release_ready(final=False)

    async def send(self, frame: Frame) -> None:
        """``write`` for a pipeline; checkpoints, compresses off the event loop when sealing."""
        await anyio.lowlevel.checkpoint()
        t0 = self._open_t0
        if self._builder.size >= self.chunk_bytes or (
            t0 is not None and abs(frame.t - t0) >= self.chunk_ns
        ):
            await run_sync(self.write, frame)  # it seals and compresses a chunk
        else:
            self.write(frame)

    # -- triggers -----------------------------------------------------------------

    def trigger(
        self,
        reason: str = "api",
        *,
        t: int | None = None,
        pre: float | None = None,
        post: float | None = None,
    ) -> SnapshotRequest:
        """Ask for a snapshot around ``t`` (default: the newest frame's ``t``).

        ``pre``/``post`` override the recorder's seconds for this trigger.
        Returns the request (``wait()`` gives the path); it may be one already
        pending that this trigger was merged into.
        """
        with self._lock:
            if self._closing:
                raise RecorderClosed(f"snapshot recorder for '{self.path}' is closed")
            at = t if t is not None else (self._newest if self._newest is not None else 0)
            lo = at - (self.pre_ns if pre is None else round(pre * S))
            hi = at + (self.post_ns if post is None else round(post * S))
            for req in (*self._waiting, *self._queue):
                if lo <= req.end and req.start <= hi:
                    req.start, req.end = min(req.start, lo), max(req.end, hi)
                    req.reasons.append(reason)
                    if req in self._queue:
                        # Not started yet: it waits again, for the frames up to its
                        # new end (the open chunk is sealed into it when released).
                        self._queue.remove(req)
                        self._waiting.append(req)
                    req._chunks = self._merge_chunks(req)
                    self._release_ready(final=False)
                    return req
            req = SnapshotRequest(at, lo, hi, reason)
            req._chunks = [c for c in self._ring if c.meta.t_end >= lo and c.meta.t_start <= hi]
            self._waiting.append(req)
            self._release_ready(final=False)
            return req

    def observe(self, group: FrameGroup) -> SnapshotRequest | None:
        """A pipeline sink: trigger at ``group.t`` when ``trigger_on(group)`` becomes true.

        Rising edge only: a predicate that stays true over many groups makes
        one trigger, not one per group.
        """
        if self.trigger_on is None:
            return None
        now = bool(self.trigger_on(group))
        fire = now and not self._was_true
        self._was_true = now
        return self.trigger("predicate", t=group.t) if fire else None

    def install_signal(self, signum: int = signal.SIGUSR1) -> None:
        """Trigger on ``signum`` (main thread only); it takes effect at the next ``write``.

        The handler only notes the signal: taking the recorder's lock inside
        a handler could deadlock with the ``write`` it interrupted.
        """
        self._old_handlers[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals.append(signum)

    def _take_signals(self) -> None:
        while self._signals:
            signum = self._signals.popleft()
            self.trigger(f"signal {signal.Signals(signum).name}")

    # -- ring (under the lock) ----------------------------------------------------

    def _seal(self) -> None:
        if self._builder.count == 0:
            return
        sealed = self._builder.seal()
        if self._wall_clock:
            anchor = sample_anchor()
            sealed.meta = dataclasses.replace(
                sealed.meta, wall=(anchor.reference_ns, anchor.utc_ns)
            )
        meta, parts, _length = encode_chunk(sealed, self._level)
        payload = [bytes(p) for p in parts[2:]]
        nbytes = sum(len(p) for p in payload)
        held = _Held(meta, payload, crc32(*payload), nbytes)
        self._ring.append(held)
        self._ring_bytes += nbytes
        self._open_t0 = None
        for req in self._waiting:
            if meta.t_start <= req.end and meta.t_end >= req.start:
                req._chunks.append(held)

    def _evict(self) -> None:
        ring = self._ring
        newest = self._newest if self._newest is not None else 0
        while ring and (
            self._ring_bytes + self._builder.size > self.max_bytes
            or ring[0].meta.t_end < newest - self.keep_ns
        ):
            gone = ring.popleft()
            self._ring_bytes -= gone.nbytes
            self._evicted_chunks += 1
            self._evicted_frames += gone.meta.count
        if self._builder.count and self._ring_bytes + self._builder.size > self.max_bytes:
            # Only the open chunk is left and it is over the bound: seal it and
            # let it go (its frames are the oldest left).
            self._seal()
            self._evict()

    def _merge_chunks(self, req: SnapshotRequest) -> list[_Held]:
        """``req``'s chunks plus the ring's that reach into its (grown) window."""
        have = {id(c) for c in req._chunks}
        extra = [
            c
            for c in self._ring
            if id(c) not in have and c.meta.t_end >= req.start and c.meta.t_start <= req.end
        ]
        return sorted([*req._chunks, *extra], key=lambda c: c.meta.index)

    def _release_ready(self, *, final: bool) -> None:
        newest = self._newest
        ready = [
            r
            for r in self._waiting
            if final or (newest is not None and newest >= r.end + self.settle_ns)
        ]
        if not ready:
            return
        self._seal()  # frames up to now, the window's included, into sealed chunks
        for req in ready:
            self._waiting.remove(req)
            self._queue.append(req)
        self._wake.notify_all()

    # -- the writer thread --------------------------------------------------------

    def _writer(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not (self._closing and not self._waiting):
                    self._wake.wait()
                if not self._queue:
                    return
                req = self._queue.popleft()
                self._writing = req
                number = self._number
                self._number += 1
                specs = [s.to_dict() for s in self._specs.values()]
            try:
                req.path = self._write_snapshot(req, number, specs)
            except BaseException as err:
                req.error = err
                failure = f"snapshot {snapshot_path(self.path, number)} was not written: {err}"
                log.error("%s", failure)
                with self._lock:
                    self._failures.append(failure)
            finally:
                req._chunks = []
                with self._lock:
                    self._writing = None
                    if req.path is not None:
                        self._written.append(req.path)
                        self._bytes_written += req.path.stat().st_size
                    self._wake.notify_all()
                req._done.set()

    def _write_snapshot(
        self, req: SnapshotRequest, number: int, specs: list[dict[str, Any]]
    ) -> Path:
        final = snapshot_path(self.path, number)
        if self._inputs:
            from recordings.output_files import refuse_overlap

            refuse_overlap(final, self._inputs)
        partial = final.with_name(final.name + ".partial")
        from recordings.output_files import keep_aside

        kept = keep_aside(partial)  # a killed run's partial: never truncated
        if kept is not None:
            self.stale_partials.append((partial, kept))
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        written = False
        try:
            out = SnapshotFile(fd)
            meta = {
                **self._metadata,
                "snapshot": {
                    "number": number,
                    "trigger_t": req.t,
                    "start": req.start,
                    "end": req.end,
                    "reasons": list(req.reasons),
                },
            }
            head: dict[str, Any] = {
                "sensors": specs,
                "metadata": meta,
                "writer": "hyperframes",
                "part": 0,
            }
            if self._wall_clock:
                head["wall"] = sample_anchor().as_list()
            header = _pack(head)
            out.emit(
                [pack_preamble(), pack_prelude(RecordKind.HEADER, header, 0, crc32(b"")), header]
            )
            index = 0
            for held in sorted(req._chunks, key=lambda c: c.meta.index):
                for meta_i, parts in self._window_chunks(held, req.start, req.end, index):
                    self._write_chunk(out, meta_i, parts)
                    req.frames += meta_i.count
                    index += 1
            with self._lock:
                ledgers = self._ledgers
            out.finish(specs, ledgers)
            if self._durable:
                os.fsync(fd)
            written = True
        finally:
            os.close(fd)
            if not written:  # a full disk or a failed write leaves no half file behind
                with contextlib.suppress(OSError):
                    partial.unlink()
        os.replace(partial, final)
        if self._durable:
            fsync_dir(final.parent)
        return final

    def _write_chunk(self, out: SnapshotFile, meta: ChunkMeta, parts: list[bytes]) -> None:
        """A seam for tests that stop a process in the middle of a snapshot."""
        out.chunk(meta, parts)

    def _window_chunks(
        self, held: _Held, lo: int, hi: int, index: int
    ) -> list[tuple[ChunkMeta, list[bytes]]]:
        """``held`` cut to ``[lo, hi]`` as records ready to write (none if nothing is inside)."""
        meta = held.meta
        if meta.t_end < lo or meta.t_start > hi:
            return []
        if lo <= meta.t_start and meta.t_end <= hi:
            renumbered = dataclasses.replace(meta, index=index, new_specs=())
            meta_bytes = _pack(renumbered.to_msgpack())
            prelude = pack_prelude(meta.kind, meta_bytes, held.nbytes, held.crc)
            return [(renumbered, [prelude, meta_bytes, *held.payload])]
        raw = decompress_chunk(
            b"".join(held.payload),
            meta,
            limits=ReadLimits(max_chunk_bytes=max(DEFAULT_MAX_CHUNK_BYTES, meta.raw_size)),
        )
        builder = ChunkBuilder(index=index)
        for frame in decode_chunk(raw, meta).frames(None, lo, hi + 1):
            builder.add(frame)
        if builder.count == 0:
            return []
        sealed = builder.seal()
        sealed.meta = dataclasses.replace(sealed.meta, wall=meta.wall)  # the held chunk's
        cut, parts, _ = encode_chunk(sealed, self._level)
        return [(cut, [bytes(p) for p in parts])]

    # -- lifetime -----------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every snapshot handed to the writer so far is written."""
        with self._lock:
            while self._queue or self._writing is not None:
                if not self._wake.wait(timeout):
                    raise TimeoutError("snapshots still being written")

    def close(self) -> None:
        """Write every pending snapshot with the frames it has, then stop; safe twice."""
        if self._closed:
            return
        if self._signals:
            self._take_signals()
        with self._lock:
            self._closing = True
            self._release_ready(final=True)
            self._wake.notify_all()
        self._thread.join()
        self._output_lock.release()
        for signum, old in self._old_handlers.items():
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signum, old)
        self._old_handlers.clear()
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def paths(self) -> tuple[Path, ...]:
        """Snapshots written so far."""
        with self._lock:
            return tuple(self._written)

    def record_ledgers(
        self,
        ledgers: Mapping[str, LedgerStatistics],
        dropped: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """The session's ledgers so far: stored in every snapshot written after this."""
        entries = ledger_entries(ledgers, dropped)
        with self._lock:
            self._ledgers = entries

    def statistics(self) -> SnapshotStatistics:
        with self._lock:
            oldest = self._ring[0].meta.t_start if self._ring else self._open_t0
            span = 0 if oldest is None or self._newest is None else self._newest - oldest
            return SnapshotStatistics(
                frames=self._frames,
                ring_chunks=len(self._ring),
                ring_bytes=self._ring_bytes + self._builder.size,
                ring_span_ns=max(span, 0),
                evicted_chunks=self._evicted_chunks,
                evicted_frames=self._evicted_frames,
                snapshots_written=len(self._written),
                snapshots_pending=len(self._waiting)
                + len(self._queue)
                + (self._writing is not None),
                bytes_written=self._bytes_written,
                pending_chunks=sum(len(r._chunks) for r in (*self._waiting, *self._queue)),
                paths=tuple(self._written),
                failures=tuple(self._failures),
            )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"SnapshotRecorder('{self.path}', {state}, frames={self._frames})"
