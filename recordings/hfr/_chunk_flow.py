"""A recorder's sealed chunks, from its open chunk to its file: seal, compress, write.

:class:`ChunkFlow` is the :class:`~recordings.Recorder`'s back: it seals the
open chunk (:class:`~recordings.hfr._builder.ChunkBuilder`) when the
recorder's caller or the flush timer asks, stamps it with a wall anchor,
hands it to the compression pool, or, when small
(:data:`~recordings.hfr._chunk_encode.SMALL_CHUNK_BYTES`), straight to the
writer thread, which compresses it itself, taking every small chunk queued
at once and writing them with one ``writev`` (at most ``max_pending`` sealed
chunks in flight: the backpressure), and owns the writer thread
(:class:`~recordings.hfr._writer_thread.WriterThread`), whose jobs it answers:
the next compressed chunk into the files
(:class:`~recordings.hfr._parts.PartWriter`), the flush seal when the
:class:`~recordings.hfr._sealing.SealPolicy` says the open chunk is due, the
footer at the end.

It holds no reference to its recorder (the writer thread holds the flow,
never the recorder), so a recorder nobody references any more is collected
and its ``__del__`` finishes the file: through :meth:`ChunkFlow.finish` in
the thread that collected it, or, when that is one of the flow's own threads
(the cyclic collector runs in whichever thread allocates: the writer thread,
perhaps while it holds the lock, or a compression thread whose chunk the
writer thread waits for), through :meth:`ChunkFlow.abandon`, which waits for
nothing: the writer thread finishes the file once back in its loop.
"""

from __future__ import annotations

import collections
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fusion import sample_anchor
from recordings.hfr import _buffers as buffers
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import SMALL_CHUNK_BYTES, encode_chunk
from recordings.hfr._effort import AutoEffort
from recordings.hfr._layout import ChunkMeta, SealedChunk
from recordings.hfr._parts import PartWriter
from recordings.hfr._sealing import SealPolicy
from recordings.hfr._writer_thread import WriterThread

__all__ = ["ChunkFlow"]

_SEAL: Any = object()  # the writer thread's job when the flush interval is up
_FINISH: Any = object()  # ... when close() queued the end
_ABANDONED: Any = object()  # ... when abandon() asked for the end and the queue is written


def _encode(sealed: Any, level: Any) -> tuple[ChunkMeta, list[Any], int, Any, list[Any]]:
    """:func:`~recordings.hfr._chunk_encode.encode_chunk`, with the chunk's details and the
    buffers its parts view passed on (the builder's, the compressed payload's: given back
    to :mod:`recordings.hfr._buffers` once written)."""
    taken = [sealed.buffer]
    return (*encode_chunk(sealed, level, taken), sealed.details, taken)


SMALL_RUN = 32
"""Small sealed chunks the writer thread takes from its queue at once, at most."""


def _small_run(queue: collections.deque[Any]) -> list[SealedChunk]:
    """The small sealed chunks at the head of ``queue`` (at least one), up to :data:`SMALL_RUN`."""
    run: list[SealedChunk] = []
    for job in queue:
        if not isinstance(job, SealedChunk) or len(run) == SMALL_RUN:
            break
        run.append(job)
    return run


def _note_thread(idents: set[int]) -> None:
    """The pool's initializer: each compression thread notes itself."""
    idents.add(threading.get_ident())


def seal_chunk(builder: ChunkBuilder, policy: SealPolicy, *, wall_clock: bool) -> SealedChunk:
    """Seal ``builder``'s chunk, tell ``policy``, and date the chunk with a wall-clock
    anchor when ``wall_clock``: what both recorders do at every seal."""
    anchor = sample_anchor() if wall_clock else None
    sealed = builder.seal(None if anchor is None else (anchor.reference_ns, anchor.utc_ns))
    policy.sealed()
    return sealed


class ChunkFlow:
    """Seals, compresses and writes a recorder's chunks (see the module docstring).

    ``lock`` is the recorder's: the builder, the policy, the counts and the
    writer's queue are read and changed under it.
    """

    def __init__(
        self,
        builder: ChunkBuilder,
        policy: SealPolicy,
        files: PartWriter,
        lock: threading.Condition,
        *,
        level: int | AutoEffort,
        wall_clock: bool,
        workers: int,
        max_pending: int,
    ) -> None:
        self._builder = builder
        self._policy = policy
        self._files = files
        self._lock = lock
        self._level = level
        self._wall_clock = wall_clock
        self._room = threading.Semaphore(max_pending)
        self.counts: collections.Counter[str] = collections.Counter()
        """Frames per sensor in the chunks sealed."""
        self.sealed_frames = 0
        self._abandoned = False  # set by abandon() (no lock), read by _next_job (under it)
        self._compressing: set[int] = set()  # the pool's threads (see abandon)
        self._pool = ThreadPoolExecutor(
            max(1, workers),
            thread_name_prefix="hfr-compress",
            initializer=_note_thread,
            initargs=(self._compressing,),
        )
        self.writer = WriterThread(self, lock, "hfr-writer")
        self.writer.start()

    @property
    def pending(self) -> int:
        """Sealed chunks still being compressed or written."""
        return sum(1 for job in self.writer.queue if job is not None)

    def seal(self, block: bool) -> bool:
        """Hand the open chunk to the pool. False if ``block`` is false and no room."""
        if not self._room.acquire(blocking=block):
            return False
        with self._lock:
            if self._builder.count == 0 or self.writer.error is not None:
                self._room.release()
                return True
            sealed = seal_chunk(self._builder, self._policy, wall_clock=self._wall_clock)
            self.sealed_frames += sealed.meta.count
            for sensor, count in zip(sealed.meta.sensors, sealed.meta.counts, strict=True):
                self.counts[sensor] += count
            if sealed.meta.raw_size <= SMALL_CHUNK_BYTES:
                self.writer.put(sealed)  # the writer thread compresses it
            else:
                self.writer.put(self._pool.submit(_encode, sealed, self._level))
        return True

    def finish(self) -> None:
        """Seal the last chunk, tell the writer to write the footer, wait for it."""
        self.seal(block=True)
        with self._lock:
            self.writer.put(None)
        self.join()

    @property
    def own_thread(self) -> bool:
        """Whether the caller is the writer thread or a compression thread: one that
        :meth:`finish` would wait for (the recorder's ``__del__`` then calls :meth:`abandon`)."""
        return self.writer.current or threading.get_ident() in self._compressing

    def abandon(self) -> None:
        """:meth:`finish` for one of :attr:`own_thread` (the recorder's ``__del__`` run by
        a collection there): waits for nothing, and takes no lock in the writer thread
        (it may hold it already; a compression thread never does). The writer thread
        seals the last chunk and writes the footer once the queue is written, then ends."""
        self._abandoned = True
        if not self.writer.current:
            with self._lock:
                self._lock.notify_all()  # the writer thread may wait for work

    def join(self) -> None:
        """Wait for the writer thread and the pool to end."""
        self.writer.join()
        self._pool.shutdown(wait=True)

    # -- the writer thread's jobs (recordings.hfr._writer_thread.Owner) ------

    def _next_job(self) -> tuple[Any, float | None]:
        """Under the lock: the first queued chunk (with the small ones queued behind a
        small one), the end, the flush seal, or a wait."""
        queue = self.writer.queue
        if queue:
            job = queue[0]
            if isinstance(job, SealedChunk):
                return _small_run(queue), None
            return (_FINISH if job is None else job), None
        if self._abandoned:
            return _ABANDONED, None
        due = self._policy.flush_in()
        if due is None:
            return None, None
        return (_SEAL, None) if due <= 0 else (None, due)

    def _run_job(self, job: Any) -> bool:
        """Write a chunk or a run of small ones, finish the file, or seal for the flush timer."""
        if job is _SEAL:
            # Never block here: a caller holding the last slot is about to
            # queue a chunk that only this thread can write.
            if not self.seal(block=False):
                with self._lock:
                    self._lock.wait(0.001)
            return True
        if job is _ABANDONED:
            # The queue is written, so every slot is free: the last chunk, then the end.
            sealed = self.seal(block=False)
            with self._lock:
                if sealed:
                    self._abandoned = False
                    self.writer.put(None)
                    self._pool.shutdown(wait=False)  # nobody will join it; its work goes on
                else:
                    self._lock.wait(0.001)
            return True
        if job is _FINISH:
            self._files.finish()
            self._files.release()
            return False
        if isinstance(job, list):
            self._write_small(job)
            return True
        meta, parts, _length, details, taken = job.result()
        records = [(meta, parts, details)]
        del parts  # views of the buffers, which the next chunks reuse
        self._write_records(records, taken)
        return True

    def _write_small(self, run: list[SealedChunk]) -> None:
        """Compress a run of small sealed chunks here and write them with one ``writev``.

        Each GIL turn costs the writer thread and the caller a hand-off (zstd and the
        write release it): a 200 Hz IMU's 10 KB chunks spent as much CPU in those as
        in the work. A chunk that fails to encode fails the recorder after the ones
        before it are written, as one at a time."""
        records: list[tuple[ChunkMeta, list[Any], Any]] = []
        taken: list[Any] = []
        try:
            for sealed in run:
                meta, parts, _length, details, given = _encode(sealed, self._level)
                records.append((meta, parts, details))
                taken += given
                del parts  # the records hold them until written
        finally:
            if records:
                self._write_records(records, taken)

    def _write_records(
        self, records: list[tuple[ChunkMeta, list[Any], Any]], taken: list[Any]
    ) -> None:
        """Write encoded chunks, give their buffers back, take them off the queue."""
        self._files.chunks(records)
        count = len(records)
        records.clear()  # views of the buffers, which the next chunks reuse
        for buffer in taken:
            buffers.give(buffer)
        self.writer.done(count)
        self._room.release(count)

    def _failed(self, err: BaseException) -> None:
        self._room.release()  # wake a writer blocked on backpressure
        self._files.abandon()
        self._files.release()
