"""The recorder: frames in, a crash-safe ``.hfr`` file out.

Theory of operation. ``write()`` (or ``await send()``) copies a frame into the
open chunk (:class:`~recordings.hfr._builder.ChunkBuilder`) and returns at once.
When to seal is the :class:`~recordings.hfr._sealing.SealPolicy`'s decision
(sans-I/O, shared with the snapshot recorder): a chunk is sealed when it
reaches ``chunk_bytes``, when its frames span ``chunk_duration`` seconds of
recording time (frame ``t``: one damaged chunk then costs at most about that
much data, however slow the sensors), or when it has been open for
``flush_interval`` seconds of host monotonic time (wall time, not the runtime
clock: the interval bounds what a real crash can lose). Sealed chunks are
compressed by a small thread pool (zstd releases the GIL, so compression uses
every core given to it; a chunk of a few hundred KB or less is compressed by
the writer thread itself, where a pool thread's hand-offs would cost more than
zstd does) and written in order by one writer thread
(:class:`~recordings.hfr._writer_thread.WriterThread`), which also fires the
flush timer, into the recorder's files
(:class:`~recordings.hfr._parts.PartWriter`: parts, footers). Each chunk is
one ``writev`` of a self-verifying record (split at ``IOV_MAX`` pieces,
:mod:`recordings.hfr._writev`), so at any instant the file is a valid
prefix: a crash loses the open chunk and the chunks still in flight, never
more than about one flush interval of data.

Backpressure: at most ``max_pending`` sealed chunks wait for the disk. When
the disk cannot keep up, ``write()`` blocks and ``send()`` waits (in a worker
thread, the event loop stays free) until one is written; memory stays bounded
by ``(max_pending + 1) * chunk_bytes``.

``close()`` seals the last chunk, waits for every chunk to reach the file,
then appends the footer index, the stamp index (1.5) and the trailer. A recorder whose writer
failed (disk full, say) refuses further frames with :class:`RecorderClosed`
saying why, and ``close()`` raises the original error.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.lowlevel

from fusion import Frame, LedgerStatistics, SensorSpec, run_sync
from fusion.errors import ConfigError
from recordings.errors import RecorderClosed, RecordingError
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_flow import ChunkFlow
from recordings.hfr._closing import Closeable
from recordings.hfr._effort import AUTO, AutoEffort, Level, check_level
from recordings.hfr._format import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_CHUNK_DURATION,
    DEFAULT_FLUSH_INTERVAL,
)
from recordings.hfr._ledgers import ledger_entries
from recordings.hfr._parts import PartWriter
from recordings.hfr._sealing import FULL, OPENED, SealPolicy

INDEX_BLOCK_BYTES = 8 << 20
"""Stamp blocks (compressed) a part's footer index repeats at most; a longer part's index
has none (its chunks and its STAMPS record have them): see
:meth:`recordings.hfr._part_index.PartIndex._blocks`. Read when a recorder is made."""


@dataclass(frozen=True, slots=True)
class RecorderStatistics:
    """A snapshot of what a recorder has accepted and written."""

    frames: int
    """Frames accepted by ``write``/``send``."""
    frames_by_sensor: Mapping[str, int]
    """Frames accepted, per sensor."""
    chunks_written: int
    """Chunks that reached the file (over every part)."""
    pending_chunks: int
    """Sealed chunks still being compressed or written."""
    raw_bytes: int
    """Uncompressed bytes of the chunks written."""
    bytes_written: int
    """Bytes written to disk, headers and indexes included."""
    paths: tuple[Path, ...]
    """Every file written so far (several when splitting)."""
    failures: tuple[str, ...] = ()
    """Why writing failed (a full disk), naming the file; empty while all is well."""


def _spec_declarer(
    seen: set[str], specs: dict[str, SensorSpec]
) -> Callable[[str], dict[str, Any] | None]:
    """The builder's ``on_new_sensor``: the spec to store with a sensor's first frame.

    The builder calls it (under the recorder's lock) when a chunk first holds
    a frame of ``sensor``, after that frame was accepted; None after the
    first time in the file. A closure, not a method: the builder must not
    keep the recorder alive.
    """

    def declare(sensor: str) -> dict[str, Any] | None:
        if sensor in seen:
            return None
        seen.add(sensor)
        known = specs.get(sensor)
        if known is None:
            known = specs[sensor] = SensorSpec(sensor)
        return known.to_dict()

    return declare


def _spec_lister(
    specs: dict[str, SensorSpec], lock: threading.Condition
) -> Callable[[], list[dict[str, Any]]]:
    """The specs a header or footer holds, read under the recorder's lock. A closure, not
    a method: the recorder's files must not keep the recorder alive (see ``__del__``)."""

    def listed() -> list[dict[str, Any]]:
        with lock:
            return [s.to_dict() for s in specs.values()]

    return listed


class Recorder(Closeable):
    """Records frames to a ``.hfr`` frame log (contract).

    Sync: ``with Recorder("s.hfr") as rec: rec.write(frame)``.
    Async (as a pipeline sink): ``async with Recorder("s.hfr") as rec: await rec.send(frame)``.

    ``sensors`` declares specs up front (they go in the header); a frame of an
    undeclared sensor declares a default spec in the chunk that first holds it.
    ``split_bytes`` / ``split_seconds`` start a new numbered, self-contained
    file (``s.0000.hfr``, ``s.0001.hfr``...) once a part reaches that size or
    spans that much frame time, checked at chunk boundaries. ``durable=True``
    fsyncs every chunk (survives power loss, not just a process crash).

    ``stamp_blocks=True`` (the default, format 1.4) stores every chunk's stamps
    in its meta as well (``recordings/hfr/FORMAT.md``: stamp block), so that
    ``sync`` and seeking never decompress a payload; ``False`` writes chunks
    as 1.3 did (stamps only inside the payload).

    ``wall_clock=True`` (the default) stores the wall clock against the
    reference clock: a :class:`~fusion._wallclock.WallAnchor` (UTC ns at
    ``time.monotonic_ns``) in the header and one more with every chunk, so a
    reader can date ``t`` and an NTP step shows as a step. Pass ``False``
    when frame times are not on the host's monotonic clock (a virtual clock,
    a replayed or bag recording whose ``t`` keeps its own stamps).
    A chunk closes at ``chunk_bytes`` raw bytes or once its frames span
    ``chunk_duration`` seconds of ``t`` (default 1 s; ``None``: size only).

    ``atomic=True`` (what ``hyperframes record`` uses) writes each file as
    ``NAME.partial`` and renames it to ``NAME`` once its index is written, so
    nothing under the final name is ever half a file and an existing file of
    that name stays as it was until then; a crash or a failed write leaves the
    readable ``NAME.partial`` (``hyperframes check --repair`` salvages it); a
    later recorder that finds it renames it to the first free ``NAME.partial.N``
    (listed in :attr:`stale_partials`) instead of truncating it.
    ``inputs`` are files this recorder must never write (the session's own
    inputs): a path, or a split part's, that is one of them is refused with
    :class:`~recordings.output_files.OutputIsInput` (see :mod:`recordings.output_files`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sensors: Iterable[SensorSpec] = (),
        metadata: Mapping[str, Any] | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        chunk_duration: float | None = DEFAULT_CHUNK_DURATION,
        flush_interval: float | None = DEFAULT_FLUSH_INTERVAL,
        compression_level: Level = AUTO,
        workers: int | None = None,
        max_pending: int = 4,
        split_bytes: int | None = None,
        split_seconds: float | None = None,
        durable: bool = False,
        wall_clock: bool = True,
        atomic: bool = False,
        inputs: Iterable[str | os.PathLike[str]] = (),
        stamp_blocks: bool = True,
    ) -> None:
        if chunk_bytes < 1 or max_pending < 1:
            raise ConfigError("chunk_bytes and max_pending must be >= 1")
        if flush_interval is not None and flush_interval <= 0:
            raise ConfigError(f"flush_interval must be > 0 seconds or None, got {flush_interval}")
        if chunk_duration is not None and not 0 < chunk_duration < 1e9:
            raise ConfigError(f"chunk_duration must be > 0 seconds or None, got {chunk_duration}")
        self.path = Path(path)
        self.chunk_bytes = chunk_bytes
        self.chunk_duration = chunk_duration
        self.flush_interval = flush_interval
        self._policy = SealPolicy(
            chunk_bytes=chunk_bytes,
            chunk_ns=None if chunk_duration is None else max(1, int(chunk_duration * 1e9)),
            flush_interval=flush_interval,
            split_bytes=split_bytes,
            split_ns=None if split_seconds is None else int(split_seconds * 1e9),
        )
        self._specs: dict[str, SensorSpec] = {s.name: s for s in sensors}
        self._seen: set[str] = set()  # sensors with a frame in the file
        self._wall_clock = wall_clock

        self._mutex = threading.Lock()
        self._lock = threading.Condition(self._mutex)
        self._builder = ChunkBuilder(
            capacity=chunk_bytes,
            on_new_sensor=_spec_declarer(self._seen, self._specs),
            stamp_blocks=stamp_blocks,
        )
        self._closing = False
        self._closed = False
        self._files = PartWriter(
            self.path,
            self._policy,
            metadata=dict(metadata or {}),
            specs=_spec_lister(self._specs, self._lock),
            block_budget=INDEX_BLOCK_BYTES,
            atomic=atomic,
            durable=durable,
            wall_clock=wall_clock,
            inputs=[Path(p) for p in inputs],
        )
        self._files.open()  # fail here, in the caller, if the path is not writable
        level = check_level(compression_level)
        self._flow = ChunkFlow(
            self._builder,
            self._policy,
            self._files,
            self._lock,
            level=AutoEffort() if level == AUTO else level,
            wall_clock=wall_clock,
            workers=workers if workers is not None else min(2, os.cpu_count() or 1),
            max_pending=max_pending,
        )
        self._writer = self._flow.writer
        self._thread = self._writer.thread

    @property
    def stale_partials(self) -> list[tuple[Path, Path]]:
        """``(NAME.partial, NAME.partial.N)`` per partial an interrupted run left under a
        name this recorder writes (``atomic``): kept aside under the new name, not
        truncated."""
        return self._files.stale_partials

    @property
    def _fd(self) -> int:
        """The open part's descriptor (tests close it under the writer)."""
        return self._files.fd

    # -- accepting frames -------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Declare (or re-declare before its first frame) a sensor's spec."""
        with self._lock:
            self._check_open()
            self._specs[spec.name] = spec

    def write(self, frame: Frame) -> None:
        """Record ``frame`` (sync). Blocks only when ``max_pending`` chunks wait for the disk.

        The frame's arrays are copied before this returns, so the caller may
        reuse its buffers. Raises :class:`~fusion.errors.FrameFormatError` for
        a payload that cannot be stored (nothing is written for it) and
        :class:`RecorderClosed` after ``close()`` or a writer failure.
        """
        # _add inlined: this is the per-frame cost of every recording.
        with self._mutex:
            if self._closing or self._writer.error is not None:
                self._check_open()
            size, t, policy = self._builder.add(frame), frame.t, self._policy
            if size < policy.chunk_bytes and t < policy.t_due:
                return  # nothing for the policy to decide (SealPolicy.t_due)
            said = policy.add(size, t)
            if said == OPENED:
                self._lock.notify_all()  # the flush timer starts now
        if said >= FULL:
            self._flow.seal(True)

    async def send(self, frame: Frame) -> None:
        """Record ``frame`` (async); always checkpoints, waits off the loop when full."""
        await anyio.lowlevel.checkpoint()
        if self._add(frame) and not self._seal(block=False):
            await run_sync(self._seal, True)

    async def send_many(self, frames: Sequence[Frame]) -> None:
        """Record ``frames`` in order (async): the hub's batches, a burst of a 1 kHz
        sensor. Unlike :meth:`send` it yields only when it waits off the loop for a
        full chunk (the hub's pump yields for each batch anyway)."""
        add = self._add
        for frame in frames:
            if add(frame) and not self._seal(block=False):
                await run_sync(self._seal, True)

    def flush(self) -> None:
        """Seal the open chunk and wait until everything accepted so far is in the file."""
        self._seal(block=True)
        with self._lock:
            while self._writer.queue and self._writer.error is None:
                self._lock.wait(0.1)
        self._raise_if_failed()

    def _add(self, frame: Frame) -> bool:
        """Add ``frame`` to the open chunk; True when the policy says seal it now.
        (The per-frame cost of every recording: kept to one lock and two calls.)"""
        with self._mutex:  # a plain lock: the Condition's Python-level enter costs more
            if self._closing or self._writer.error is not None:
                self._check_open()
            size, t, policy = self._builder.add(frame), frame.t, self._policy
            if size < policy.chunk_bytes and t < policy.t_due:
                return False  # nothing for the policy to decide (SealPolicy.t_due)
            said = policy.add(size, t)
            if said == OPENED:
                self._lock.notify_all()  # the flush timer starts now
            return said >= FULL

    def _seal(self, block: bool) -> bool:
        """Hand the open chunk to the pool. False if ``block`` is false and no room."""
        return self._flow.seal(block)

    def _check_open(self) -> None:
        error = self._writer.error
        if error is not None:
            kept = self._files.kept
            where = "" if kept is None else f" (what it wrote so far is in '{kept}')"
            raise RecorderClosed(
                f"recorder for '{self.path}' failed and accepts no more frames: {error}{where}"
            ) from error
        if self._closing:
            raise RecorderClosed(f"recorder for '{self.path}' is closed")

    def _raise_if_failed(self) -> None:
        error = self._writer.error
        if error is not None:
            raise RecordingError(
                f"writing failed: {error}", path=str(self._files.current)
            ) from error

    def record_ledgers(
        self,
        ledgers: Mapping[str, LedgerStatistics],
        dropped: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """Store each sensor's input ledger (and the pipeline's own drops of its frames)
        in the footer index, so ``hyperframes info`` shows what was lost while recording.

        Call before :meth:`close` (the :class:`~fusion.Pipeline` does); the last
        call wins. A file cut short without its footer has no ledger.
        """
        entries = ledger_entries(ledgers, dropped)
        with self._lock:
            self._files.ledgers = entries

    # -- closing ----------------------------------------------------------

    def close(self) -> None:
        """Write the last chunk, the index and the trailer; safe to call twice."""
        if self._closed:
            return
        with self._lock:
            already = self._closing
            self._closing = True
        if already:
            self._flow.join()
        else:
            self._flow.finish()
        self._closed = True
        self._raise_if_failed()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def paths(self) -> tuple[Path, ...]:
        """Files written so far: one, or the numbered parts when splitting."""
        return tuple(self._files.paths)

    def statistics(self) -> RecorderStatistics:
        files, error = self._files, self._writer.error
        with self._lock:
            return RecorderStatistics(
                frames=self._flow.sealed_frames + self._builder.count,
                frames_by_sensor=dict(self._flow.counts + self._builder.sensor_counts()),
                chunks_written=files.chunks_written,
                pending_chunks=self._flow.pending,
                raw_bytes=files.raw_written,
                bytes_written=files.bytes_written,
                paths=tuple(files.paths),
                failures=() if error is None else (f"writing {files.current} failed: {error}",),
            )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self._writer.error else "open"
        frames = self._flow.sealed_frames + self._builder.count
        return f"Recorder('{self.path}', {state}, frames={frames})"

    def __del__(self) -> None:
        # An abandoned recorder: warn like an unclosed file, then finish the
        # file (last chunk, index, trailer) so nothing accepted is lost.
        if getattr(self, "_closed", True) or not hasattr(self, "_thread"):
            return
        try:
            warnings.warn(
                f"{self!r} was garbage-collected without close(); closing it now",
                ResourceWarning,
                source=self,
                stacklevel=1,
            )
        finally:
            with contextlib.suppress(BaseException):
                if self._flow.own_thread:
                    # A collection in a thread close() would wait for (the writer
                    # thread, perhaps under the lock): ask it to finish; never wait.
                    self._flow.abandon()
                else:
                    self.close()
