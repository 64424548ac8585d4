"""The recorder: frames in, a crash-safe ``.hfr`` file out.

Theory of operation. ``write()`` (or ``await send()``) copies a frame into the
open chunk (:class:`~recordings.hfr._builder.ChunkBuilder`) and returns at once. A
chunk is sealed when it reaches ``chunk_bytes``, when its frames span
``chunk_duration`` seconds of recording time (frame ``t``: one damaged chunk
then costs at most about that much data, however slow the sensors), or when
it has been open for ``flush_interval`` seconds of host monotonic time (wall
time, not the runtime clock: the interval bounds what a real crash can lose). Sealed chunks are
compressed by a small thread pool (zstd releases the GIL, so compression uses
every core given to it) and written in order by one writer thread, which
also fires the flush timer. Each chunk is one ``writev`` of a self-verifying
record (split at ``IOV_MAX`` pieces, :mod:`recordings.hfr._writev`), so at any
instant the file is a valid prefix: a crash loses the open
chunk and the chunks still in flight, never more than about one flush
interval of data.

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

import collections
import contextlib
import dataclasses
import itertools
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.lowlevel

from fusion.errors import ConfigError
from fusion.frames import Frame, SensorSpec
from fusion.ledger import LedgerStatistics
from fusion.timing import run_sync
from fusion.wallclock import sample_anchor
from recordings.errors import RecorderClosed, RecordingError
from recordings.hfr import _buffers as buffers
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_encode import pack as _pack
from recordings.hfr._chunk_table import ChunkTableWriter
from recordings.hfr._closing import Closeable
from recordings.hfr._details import DetailsWriter
from recordings.hfr._effort import AUTO, AutoEffort, Level, check_level
from recordings.hfr._format import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_CHUNK_DURATION,
    DEFAULT_FLUSH_INTERVAL,
    RecordKind,
    crc32,
    pack_preamble,
    pack_prelude,
    pack_trailer,
)
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import ledger_entries
from recordings.hfr._sensor_summary import SensorReducer
from recordings.hfr._stamp_block import raw_block
from recordings.hfr._stamp_index import StampIndexWriter
from recordings.hfr._writev import write_all

INDEX_BLOCK_BYTES = 8 << 20
"""Stamp blocks (compressed) a part's footer index repeats at most; a longer part's index
has none (its chunks and its STAMPS record have them): see ``Recorder._index_blocks``."""


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


def _writer_main(
    ref: weakref.ReferenceType[Recorder], cond: threading.Condition, finished: threading.Event
) -> None:
    """The writer thread: writes chunks in order and fires the flush timer.

    It holds its recorder only while working, never while waiting, so a
    recorder nobody references any more is collected (and closed by its
    ``__del__``) instead of being kept alive by its own thread. When this
    thread's own ``del rec`` was the last reference, ``__del__`` has closed the
    recorder here and set ``finished``: the thread ends instead of waiting
    for work that will never come.
    """
    while True:
        with cond:
            rec = ref()
            if rec is None:
                return
            action, arg = rec._poll()
            if action == "wait":
                del rec
                if finished.is_set():
                    return
                cond.wait(arg)
                continue
        if not rec._work(action, arg):
            return
        del rec


def _encode(sealed: Any, level: Any) -> tuple[ChunkMeta, list[Any], int, Any, Any]:
    """:func:`~recordings.hfr._chunk_encode.encode_chunk`, with the chunk's details and the
    builder's buffer passed on (given back to :mod:`recordings.hfr._buffers` once written)."""
    return (*encode_chunk(sealed, level), sealed.details, sealed.buffer)


def _pack_index(chunks: list[Any], rest: dict[str, Any]) -> bytes:
    """The INDEX meta ``{"chunks": chunks, **rest}`` as msgpack; ``chunks`` are entry maps,
    or entries packed already (spliced in as they are)."""
    if not chunks or not isinstance(chunks[0], bytes):
        return _pack({"chunks": chunks, **rest})
    n, k = len(chunks), len(rest) + 1
    head = bytes([0x80 | k]) if k < 16 else b"\xde" + k.to_bytes(2, "big")
    if n < 16:
        array = bytes([0x90 | n])
    elif n < 1 << 16:
        array = b"\xdc" + n.to_bytes(2, "big")
    else:
        array = b"\xdd" + n.to_bytes(4, "big")
    pairs = [_pack(key) + _pack(value) for key, value in rest.items()]
    return b"".join([head, _pack("chunks"), array, *chunks, *pairs])


def part_path(path: Path, part: int) -> Path:
    """Name of split part ``part``: ``s.hfr`` -> ``s.0003.hfr``."""
    return path.with_name(f"{path.stem}.{part:04d}{path.suffix}")


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
    reference clock: a :class:`~fusion.wallclock.WallAnchor` (UTC ns at
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
        self.chunk_duration = chunk_duration
        self._chunk_ns = 1 << 62 if chunk_duration is None else max(1, int(chunk_duration * 1e9))
        self._chunk_t_end: Any = None  # the open chunk closes at a frame with t >= this
        self.path = Path(path)
        self.chunk_bytes = chunk_bytes
        self.flush_interval = flush_interval
        self._specs: dict[str, SensorSpec] = {s.name: s for s in sensors}
        self._seen: set[str] = set()  # sensors with a frame in the file
        self._metadata = dict(metadata or {})
        level = check_level(compression_level)
        self._level: int | AutoEffort = AutoEffort() if level == AUTO else level
        self._split = split_bytes is not None or split_seconds is not None
        self._split_bytes = split_bytes
        self._split_ns = None if split_seconds is None else int(split_seconds * 1e9)
        self._durable = durable
        self._wall_clock = wall_clock
        self._atomic = atomic
        self._inputs = [Path(p) for p in inputs]
        self._final: Path | None = None  # the name the open part gets once finished
        self.stale_partials: list[tuple[Path, Path]] = []
        """``(NAME.partial, NAME.partial.N)`` per partial an interrupted run left under a
        name this recorder writes (``atomic``): kept aside under the new name, not
        truncated."""
        self._ledgers: dict[str, dict[str, Any]] = {}  # the footer's "ledger" (1.3)

        self._mutex = threading.Lock()
        self._lock = threading.Condition(self._mutex)
        self._room = threading.Semaphore(max_pending)
        self._builder = ChunkBuilder(
            capacity=chunk_bytes,
            on_new_sensor=_spec_declarer(self._seen, self._specs),
            stamp_blocks=stamp_blocks,
        )
        self._opened_at = 0.0  # monotonic time of the open chunk's first frame
        self._jobs: collections.deque[Future[tuple[ChunkMeta, list[Any], int, Any, Any]] | None] = (
            collections.deque()
        )
        self._counts: collections.Counter[str] = collections.Counter()  # in sealed chunks
        self._chunk_open = False
        self._sealed_frames = 0
        self._closing = False
        self._closed = False
        self._error: BaseException | None = None

        # Writer-thread state.
        self._part = 0
        self._paths: list[Path] = []
        self._locks: list[Any] = []  # an OutputLock per file written (recordings.output_files)
        self._fd = -1
        self._index: list[Any] = []  # entry maps, or packed entries (_index_blocks)
        self._index_block_bytes = 0
        self._part_bytes = 0
        self._part_t0: int | None = None
        self._chunks_written = 0
        self._raw_written = 0
        self._bytes_written = 0

        self._open_part()  # fail here, in the caller, if the path is not writable
        nworkers = workers if workers is not None else min(2, os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max(1, nworkers), thread_name_prefix="hfr-compress")
        self._finished = threading.Event()
        # The thread gets a weak reference: an abandoned recorder is collected,
        # and __del__ closes it (with a ResourceWarning).
        self._thread = threading.Thread(
            target=_writer_main,
            args=(weakref.ref(self), self._lock, self._finished),
            name="hfr-writer",
            daemon=True,
        )
        self._thread.start()

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
            if self._closing or self._error is not None:
                self._check_open()
            if not self._chunk_open:
                self._open_chunk()
            size = self._builder.add(frame)
            end = self._chunk_t_end
            if end is None:
                end = self._chunk_t_end = frame.t + self._chunk_ns
            full = size >= self.chunk_bytes or frame.t >= end
        if full:
            self._seal(block=True)

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
            while self._jobs and self._error is None:
                self._lock.wait(0.1)
        self._raise_if_failed()

    def _add(self, frame: Frame) -> bool:
        """Add ``frame`` to the open chunk; True when the chunk is full."""
        with self._mutex:  # a plain lock: the Condition's Python-level enter costs more
            if self._closing or self._error is not None:
                self._check_open()
            if not self._chunk_open:
                self._open_chunk()
            size = self._builder.add(frame)
            end = self._chunk_t_end
            if end is None:
                end = self._chunk_t_end = frame.t + self._chunk_ns
            return size >= self.chunk_bytes or frame.t >= end

    def _open_chunk(self) -> None:
        self._chunk_open = True
        self._chunk_t_end = None
        self._opened_at = time.monotonic()
        self._lock.notify_all()  # the flush timer starts now

    def _seal(self, block: bool) -> bool:
        """Hand the open chunk to the pool. False if ``block`` is false and no room."""
        if not self._room.acquire(blocking=block):
            return False
        with self._lock:
            if self._builder.count == 0 or self._error is not None:
                self._room.release()
                return True
            sealed = self._builder.seal()
            if self._wall_clock:
                anchor = sample_anchor()
                sealed.meta = dataclasses.replace(
                    sealed.meta, wall=(anchor.reference_ns, anchor.utc_ns)
                )
            self._chunk_open = False
            self._sealed_frames += sealed.meta.count
            self._counts.update(dict(zip(sealed.meta.sensors, sealed.meta.counts, strict=True)))
            self._jobs.append(self._pool.submit(_encode, sealed, self._level))
            self._lock.notify_all()
        return True

    def _check_open(self) -> None:
        if self._error is not None:
            kept = ""
            if self._atomic and self._paths and self._paths[-1] != self._final:
                kept = f" (what it wrote so far is in '{self._paths[-1]}')"
            raise RecorderClosed(
                f"recorder for '{self.path}' failed and accepts no more frames: {self._error}{kept}"
            ) from self._error
        if self._closing:
            raise RecorderClosed(f"recorder for '{self.path}' is closed")

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise RecordingError(
                f"writing failed: {self._error}", path=str(self._current_path())
            ) from self._error

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
            self._ledgers = entries

    # -- closing ----------------------------------------------------------

    def close(self) -> None:
        """Write the last chunk, the index and the trailer; safe to call twice."""
        if self._closed:
            return
        with self._lock:
            already = self._closing
            self._closing = True
        if not already:
            self._seal(block=True)
            with self._lock:
                self._jobs.append(None)  # tells the writer to finish
                self._lock.notify_all()
        self._thread.join()
        self._pool.shutdown(wait=True)
        self._closed = True
        self._raise_if_failed()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def paths(self) -> tuple[Path, ...]:
        """Files written so far: one, or the numbered parts when splitting."""
        return tuple(self._paths)

    def statistics(self) -> RecorderStatistics:
        with self._lock:
            return RecorderStatistics(
                frames=self._sealed_frames + self._builder.count,
                frames_by_sensor=dict(self._counts + self._builder.sensor_counts()),
                chunks_written=self._chunks_written,
                pending_chunks=sum(1 for j in self._jobs if j is not None),
                raw_bytes=self._raw_written,
                bytes_written=self._bytes_written,
                paths=tuple(self._paths),
                failures=()
                if self._error is None
                else (f"writing {self._current_path()} failed: {self._error}",),
            )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self._error else "open"
        frames = self._sealed_frames + self._builder.count
        return f"Recorder('{self.path}', {state}, frames={frames})"

    # -- the writer thread ------------------------------------------------

    def _poll(self) -> tuple[str, Any]:
        """What the writer thread does next (called under the lock).

        ``("write", future)``, ``("finish", None)``, ``("seal", None)`` when the
        open chunk's flush interval is up, or ``("wait", timeout)``.
        """
        if self._jobs:
            job = self._jobs[0]
            return ("finish", None) if job is None else ("write", job)
        if self.flush_interval is not None and self._builder.count:
            timeout = self._opened_at + self.flush_interval - time.monotonic()
            return ("seal", None) if timeout <= 0 else ("wait", timeout)
        return ("wait", None)

    def _work(self, action: str, job: Any) -> bool:
        """Do one writer-thread action; False when the thread is done (finished or failed)."""
        try:
            if action == "seal":
                # Never block here: a caller holding the last slot is about to
                # queue a chunk that only this thread can write.
                if not self._seal(block=False):
                    with self._lock:
                        self._lock.wait(0.001)
                return True
            if action == "finish":
                self._finish_part()
                self._release_outputs()
                return False
            meta, parts, length, details, buffer = job.result()
            self._write_chunk(meta, parts, length, details)
            del parts  # views of the buffer, which the next chunks reuse
            buffers.give(buffer)
            with self._lock:
                self._jobs.popleft()
                self._lock.notify_all()
            self._room.release()
            return True
        except BaseException as err:
            with self._lock:
                self._error = err
                self._jobs.clear()
                self._lock.notify_all()
            self._room.release()  # wake a writer blocked on backpressure
            if self._fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = -1
            self._release_outputs()
            return False

    def _release_outputs(self) -> None:
        """Published or abandoned: the next writer of these files may come."""
        for lock in self._locks:
            lock.release()

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
                if threading.current_thread() is self._thread:
                    self._close_from_writer()
                else:
                    self.close()

    def _close_from_writer(self) -> None:
        """``close()`` when the writer thread itself dropped the last reference."""
        with self._lock:
            self._closing = True
        while True:
            with self._lock:
                job = self._jobs[0] if self._jobs else None
            if job is None:
                if self._builder.count and self._error is None and self._seal(block=False):
                    continue  # every slot is free once the queue is written
                break
            if not self._work("write", job):
                break
        if self._error is None:
            self._work("finish", None)
        self._pool.shutdown(wait=False)
        self._closed = True
        self._finished.set()

    def _open_part(self) -> None:
        path = part_path(self.path, self._part) if self._split else self.path
        if self._inputs:
            from recordings.output_files import refuse_overlap

            refuse_overlap(path, self._inputs)
        self._final = path
        from recordings.output_files import lock_output

        self._locks.append(lock_output(path))  # one writer per file: a second is refused
        if self._atomic:
            path = path.with_name(path.name + ".partial")
            from recordings.output_files import keep_aside

            kept = keep_aside(path)  # an interrupted run's partial: never truncated
            if kept is not None:
                self.stale_partials.append((path, kept))
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._paths.append(path)
        with self._lock:
            specs = [s.to_dict() for s in self._specs.values()]
        head: dict[str, Any] = {
            "sensors": specs,
            "metadata": self._metadata,
            "writer": "hyperframes",
            "part": self._part,
        }
        if self._wall_clock:
            head["wall"] = sample_anchor().as_list()
        header = _pack(head)
        self._index = []
        self._index_block_bytes = 0  # -1 once the part's blocks are left out of its index
        self._stamp_index = StampIndexWriter(spool=True)  # small: the default level
        self._details = DetailsWriter(spool=True, reducer=SensorReducer)  # spooled: flat memory
        self._table = ChunkTableWriter()  # 1.7: the chunk list as columns
        self._part_bytes = 0
        self._part_t0 = None
        self._emit(
            [pack_preamble(), pack_prelude(RecordKind.HEADER, header, 0, crc32(b"")), header]
        )

    def _write_chunk(
        self, meta: ChunkMeta, parts: list[Any], length: int, details: Any = None
    ) -> None:
        entry = meta.to_msgpack()
        self._index_blocks(entry)
        entry["off"] = self._part_bytes
        entry["len"] = sum(len(p) for p in parts[2:])  # the payload, possibly in pieces
        self._table.add(meta, entry["off"], entry["len"])
        self._emit(parts)
        if self._durable:
            os.fsync(self._fd)
        # Packed once the blocks are out: a dict per chunk grew the writer by 7 MB an hour.
        self._index.append(entry if self._index_block_bytes >= 0 else _pack(entry))
        self._add_stamps(meta, details)
        with self._lock:
            self._chunks_written += 1
            self._raw_written += meta.raw_size
        if self._part_t0 is None:
            self._part_t0 = meta.t_start
        if (self._split_bytes is not None and self._part_bytes >= self._split_bytes) or (
            self._split_ns is not None and meta.t_end - self._part_t0 >= self._split_ns
        ):
            self._finish_part()
            self._part += 1
            self._open_part()

    def _index_blocks(self, entry: dict[str, Any]) -> None:
        """Keep the chunk's stamp block in its index entry while the part's blocks add up
        to at most :data:`INDEX_BLOCK_BYTES`; past that, none (the ones held are dropped).

        The block stays in the chunk's own meta, and the STAMPS record holds every
        frame's stamps: blocks in the index only spare a reader that cannot use that
        record a read per chunk. Hours of them would make the INDEX hundreds of MB
        (refused by readers as over their meta limit) and the writer's memory grow.
        An INDEX without blocks also gets the chunk table (1.7,
        :mod:`recordings.hfr._chunk_table`), which has none: a reader of a file whose INDEX
        holds its blocks (a short one) parses the INDEX, in milliseconds at that size.
        """
        block = entry.get("st")
        if block is None:
            return
        if self._index_block_bytes >= 0:
            self._index_block_bytes += len(block)
            if self._index_block_bytes <= INDEX_BLOCK_BYTES:
                return
            self._index_block_bytes = -1
            for held in self._index:
                held.pop("st", None)
            self._index[:] = [_pack(held) for held in self._index]
        del entry["st"]

    def _add_stamps(self, meta: ChunkMeta, details: Any) -> None:
        """The chunk's block and details, into the part's stamp index (1.5) and frame
        details (1.6)."""
        table = self._stamp_index
        if meta.stamps is None or table.chunks < 0:
            table.skip_chunk()
            self._details.skip_chunk()
            return
        sensor, seq, t, arrival, has = raw_block(meta)
        table.add(meta.sensors, sensor, seq, t, arrival, has)
        if details is None:
            self._details.skip_chunk()
        else:
            self._details.add(meta.sensors, sensor, details, (seq, t, arrival, has))

    def _finish_part(self) -> None:
        index_offset = self._part_bytes
        with self._lock:
            specs = [s.to_dict() for s in self._specs.values()]
            ledgers = self._ledgers
        index_meta: dict[str, Any] = {"sensors": specs}
        if ledgers:
            index_meta["ledger"] = ledgers
        details = self._details.record()  # right before the INDEX, which points at it
        pieces: Iterable[bytes] = ()
        if details is not None:
            pieces, length = details
            index_meta["details"] = [index_offset, length]
            index_offset += length
            summaries = self._details.summaries()  # 1.7: what info reports, per sensor
            if summaries:
                index_meta["summaries"] = summaries
        if self._index_block_bytes <= 0:  # 1.7, right before the INDEX: see _index_blocks
            table, length = self._table.record()
            index_meta["table"] = [index_offset, length]
            index_offset += length
            pieces = itertools.chain(pieces, table)
        index = _pack_index(self._index, index_meta)
        stamps = self._stamp_index.record() or ()  # between the INDEX and the trailer
        self._emit(
            itertools.chain(
                pieces,
                (pack_prelude(RecordKind.INDEX, index, 0, crc32(b"")), index),
                stamps,
                (pack_trailer(index_offset),),
            )
        )
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        if self._atomic and self._final is not None:
            from recordings.output_files import fsync_dir, publish

            publish(self._paths[-1], self._final)
            self._paths[-1] = self._final
            if self._durable:
                fsync_dir(self._final.parent)

    def _emit(self, parts: Iterable[Any]) -> None:
        """Write ``parts`` back to back (:func:`recordings.hfr._writev.write_all`: split at
        ``IOV_MAX``, partial writes resumed)."""
        n = write_all(self._fd, parts)
        self._part_bytes += n
        self._bytes_written += n

    def _current_path(self) -> Path:
        return self._paths[-1] if self._paths else self.path
