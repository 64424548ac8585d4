"""The writers' thread: takes sealed pieces from a queue, in order, and writes them.

Both :class:`~recordings.Recorder` and :class:`~recordings.SnapshotRecorder`
hand their sealed work (compressed chunks; snapshots) to one
:class:`WriterThread`. The thread asks its owner, under the owner's lock,
what to do next (:meth:`Owner._next_job`: a job, a wait with a timeout for
the flush timer, or :data:`STOP`), runs the job outside the lock
(:meth:`Owner._run_job`, which writes through
:class:`~recordings.hfr._out_file.OutFile`), and goes on until a job says it
was the last. An error a job raises (a full disk) ends the thread: it is
kept in :attr:`WriterThread.error` (the owner raises it on its next call and
on close), the queue is emptied, every waiter woken, and the owner told once
(:meth:`Owner._failed`) so that it lets go of its files.

The thread holds its owner strongly until it ends, so the owner must not
hold what should be collectable (the recorder: see
:class:`~recordings.hfr._chunk_flow.ChunkFlow`). A weak reference would not
do: the cyclic collector clears weak references to everything it found
unreachable *before* it runs any ``__del__``, so a recorder collected from a
cycle would find its thread gone, its last chunks and footer never written.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Protocol

__all__ = ["STOP", "Owner", "WriterThread"]

STOP: Any = object()
"""What :meth:`Owner._next_job` returns to end the thread with no more work."""


class Owner(Protocol):
    """What a :class:`WriterThread` asks of the writer that owns it."""

    def _next_job(self) -> tuple[Any, float | None]:
        """Under the lock: ``(job, _)`` to run, ``(None, timeout)`` to wait (None: until
        woken), ``(STOP, _)`` to end."""

    def _run_job(self, job: Any) -> bool:
        """Outside the lock: do ``job``; False when it was the last."""

    def _failed(self, err: BaseException) -> None:
        """A job raised ``err``: the thread ends (let go of files; wake waiters)."""


class WriterThread:
    """A daemon thread that runs its owner's jobs in order (see the module docstring)."""

    def __init__(self, owner: Owner, cond: threading.Condition, name: str) -> None:
        self.cond = cond
        """The owner's lock: the queue is read and changed under it."""
        self.queue: collections.deque[Any] = collections.deque()
        """Work handed to the thread, in order (the owner's ``_next_job`` reads it)."""
        self.error: BaseException | None = None
        """What ended the thread early, if anything."""
        self.thread = threading.Thread(target=self._main, args=(owner,), name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def put(self, item: Any) -> None:
        """Queue ``item`` and wake the thread (the caller holds :attr:`cond`)."""
        self.queue.append(item)
        self.cond.notify_all()

    def done(self, count: int = 1) -> None:
        """The first ``count`` queued items are written: take them off, wake who waits."""
        with self.cond:
            for _ in range(count):
                self.queue.popleft()
            self.cond.notify_all()

    @property
    def current(self) -> bool:
        """Whether the caller runs in this thread."""
        return threading.current_thread() is self.thread

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def run(self, owner: Owner, job: Any) -> bool:
        """Run one job; False when the thread is done (the last job, or a failure)."""
        try:
            return owner._run_job(job)
        except BaseException as err:
            with self.cond:
                self.error = err
                self.queue.clear()
                self.cond.notify_all()
            owner._failed(err)
            return False

    def _main(self, owner: Owner) -> None:
        cond = self.cond
        while True:
            with cond:
                job, timeout = owner._next_job()
                if job is STOP:
                    return
                if job is None:
                    cond.wait(timeout)
                    continue
            if not self.run(owner, job):
                return
