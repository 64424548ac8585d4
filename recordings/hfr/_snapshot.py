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

Where each part lives: when to seal is the shared
:class:`~recordings.hfr._sealing.SealPolicy` (``full_before``); the ring, its
bounds and the requests are :mod:`recordings.hfr._snapshot_ring` (no I/O);
the writer thread is the shared :class:`~recordings.hfr._writer_thread.WriterThread`;
one snapshot's file is :mod:`recordings.hfr._snapshot_file`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio.lowlevel

from fusion import Frame, FrameGroup, LedgerStatistics, SensorSpec, run_sync
from fusion.errors import ConfigError
from recordings.errors import RecorderClosed
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_flow import seal_chunk
from recordings.hfr._closing import Closeable
from recordings.hfr._effort import AUTO, AutoEffort, Level, check_level
from recordings.hfr._format import crc32
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import ledger_entries
from recordings.hfr._sealing import SealPolicy
from recordings.hfr._signal_triggers import SignalTriggers
from recordings.hfr._snapshot_file import SnapshotFile, SnapshotWriter, snapshot_path
from recordings.hfr._snapshot_ring import Held, Ring, SnapshotRequest, SnapshotStatistics

__all__ = ["SnapshotRecorder", "SnapshotRequest", "SnapshotStatistics", "snapshot_path"]

S = 1_000_000_000


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
        level = check_level(compression_level)
        self._level: int | AutoEffort = AutoEffort() if level == AUTO else level
        self._specs: dict[str, SensorSpec] = {s.name: s for s in sensors}
        self._wall_clock = wall_clock  # anchors like every recording (see Recorder)
        from recordings.output_files import lock_output

        # One snapshot writer per OUT: a second is refused (its OUT.NNNN.hfr would collide).
        self._output_lock = lock_output(self.path)

        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._builder = ChunkBuilder()
        self._policy = SealPolicy(chunk_bytes=chunk_bytes, chunk_ns=self.chunk_ns)
        self._ring = Ring(self.keep_ns, max_bytes, self.settle_ns)
        self._frames = 0
        self._closing = False
        self._closed = False
        self._signals = SignalTriggers()
        self._was_true = False
        self._out = SnapshotWriter(
            self.path,
            self._wake,
            self._specs,
            self._ring,
            self._write_chunk,
            metadata=dict(metadata or {}),
            level=self._level,
            wall_clock=wall_clock,
            durable=durable,
            inputs=[Path(p) for p in inputs],  # never a snapshot over one of these
        )
        self._writer = self._out.writer
        self._thread = self._writer.thread

    @property
    def stale_partials(self) -> list[tuple[Path, Path]]:
        """``(OUT.NNNN.hfr.partial, ....partial.N)`` per partial an interrupted run left
        under a name a snapshot took: kept aside, as :class:`~recordings.Recorder` does."""
        return self._out.stale_partials

    # -- frames -------------------------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Declare a sensor's spec (it goes in every later snapshot's header)."""
        with self._lock:
            self._specs[spec.name] = spec

    def write(self, frame: Frame) -> None:
        """Keep ``frame`` (its arrays are copied). Compresses in this thread when a chunk fills."""
        if self._signals.pending:
            self._take_signals()
        with self._lock:
            if self._closing:
                raise RecorderClosed(f"snapshot recorder for '{self.path}' is closed")
            if frame.sensor not in self._specs:
                self._specs[frame.sensor] = SensorSpec(frame.sensor)
            t = frame.t
            if self._policy.full_before(self._builder.size, t):
                self._seal()
            self._policy.add(self._builder.add(frame), t)
            self._frames += 1
            self._ring.saw(t)
            self._evict()
            if self._ring.waiting:
                self._release_ready(final=False)

    async def send(self, frame: Frame) -> None:
        """``write`` for a pipeline; checkpoints, compresses off the event loop when sealing."""
        await anyio.lowlevel.checkpoint()
        if self._policy.full_before(self._builder.size, frame.t):
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
            newest = self._ring.newest
            at = t if t is not None else (newest if newest is not None else 0)
            lo = at - (self.pre_ns if pre is None else round(pre * S))
            hi = at + (self.post_ns if post is None else round(post * S))
            req = self._ring.ask(at, lo, hi, reason, self._writer.queue)
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
        self._signals.install(signum)

    def _take_signals(self) -> None:
        for reason in self._signals.take():
            self.trigger(reason)

    # -- ring (under the lock) ----------------------------------------------------

    def _seal(self) -> None:
        if self._builder.count == 0:
            return
        sealed = seal_chunk(self._builder, self._policy, wall_clock=self._wall_clock)
        meta, parts, _length = encode_chunk(sealed, self._level)
        payload = [bytes(p) for p in parts[2:]]
        nbytes = sum(len(p) for p in payload)
        self._ring.hold(Held(meta, payload, crc32(*payload), nbytes))

    def _evict(self) -> None:
        while self._ring.evict(self._builder.size, self._builder.count):
            # Only the open chunk is left and it is over the bound: seal it and
            # let it go (its frames are the oldest left).
            self._seal()

    def _release_ready(self, *, final: bool) -> None:
        ready = self._ring.settled(final=final)
        if not ready:
            return
        self._seal()  # frames up to now, the window's included, into sealed chunks
        for req in ready:
            self._ring.waiting.remove(req)
            self._writer.put(req)

    def _write_chunk(self, out: SnapshotFile, meta: ChunkMeta, parts: list[bytes]) -> None:
        """A seam for tests that stop a process in the middle of a snapshot."""
        out.chunk(meta, parts)

    # -- lifetime -----------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every snapshot handed to the writer so far is written."""
        with self._lock:
            while self._writer.queue or self._out.writing is not None:
                if not self._wake.wait(timeout):
                    raise TimeoutError("snapshots still being written")

    def close(self) -> None:
        """Write every pending snapshot with the frames it has, then stop; safe twice."""
        if self._closed:
            return
        if self._signals.pending:
            self._take_signals()
        with self._lock:
            self._closing = self._out.closing = True
            self._release_ready(final=True)
            self._wake.notify_all()
        self._writer.join()
        self._output_lock.release()
        self._signals.restore()
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def paths(self) -> tuple[Path, ...]:
        """Snapshots written so far."""
        with self._lock:
            return tuple(self._out.written)

    def record_ledgers(
        self,
        ledgers: Mapping[str, LedgerStatistics],
        dropped: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """The session's ledgers so far: stored in every snapshot written after this."""
        entries = ledger_entries(ledgers, dropped)
        with self._lock:
            self._out.ledgers = entries

    def statistics(self) -> SnapshotStatistics:
        with self._lock:
            ring, queued, out = self._ring, self._writer.queue, self._out
            return SnapshotStatistics(
                frames=self._frames,
                ring_chunks=len(ring.chunks),
                ring_bytes=ring.bytes + self._builder.size,
                ring_span_ns=ring.span(self._policy.t0),
                evicted_chunks=ring.evicted_chunks,
                evicted_frames=ring.evicted_frames,
                snapshots_written=len(out.written),
                snapshots_pending=len(ring.waiting) + len(queued) + (out.writing is not None),
                bytes_written=out.bytes_written,
                pending_chunks=sum(len(r._chunks) for r in (*ring.waiting, *queued)),
                paths=tuple(out.written),
                failures=tuple(out.failures),
            )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"SnapshotRecorder('{self.path}', {state}, frames={self._frames})"
