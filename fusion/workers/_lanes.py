"""The worker's threads: one thread per session replica, and a preprocessing thread for one.

Why dedicated threads
---------------------
On a CPU-only machine every stage shares the cores, so whatever the plumbing
costs per batch is taken from the decoder and the model. Running each step
through ``anyio.to_thread.run_sync`` cost two round trips through the event
loop per batch (submit, wake a pool thread, schedule the result back, wake the
waiting task, send it down a channel to the next stage), and most of it under
the GIL. Here a batch crosses whole, once in each direction::

    event loop --submit--> replica thread(s): preprocess, run, postprocess
               <----------- deliver(Finished) ----/

``submit`` is a non-blocking queue put; a replica hands the finished batch
back with one ``call_soon_threadsafe`` that runs ``on_done`` on the loop. The
loop never waits on a thread and a thread never waits on the loop.

Where the preprocess runs: with two or more replicas each replica thread
prepares the batch it runs (another replica computes meanwhile, so nothing
is lost), so a batch's input arrays are made, read by the model and freed on
one thread; so does a single CPU session of several intra-op threads (its
pool already spans the cores; a preprocessing thread beside it only takes
them from the pool). Handing them from a preprocessing thread to a replica cost 80-150
us of CPU per 224x224 float item on 2 cores (measured, ``tiny_cnn``): an
array allocated on one thread and freed on another comes back as fresh pages
every batch (page faults), and the other core's cache misses it. With one
replica of one thread (or on a GPU) a preprocessing thread prepares batch
k+1 while batch k runs::

    event loop --submit--> preprocess thread --queue--> replica thread

A replica that prepares its own batches prepares the next queued one before
it hands the finished one back: the hand-back wakes the event loop, which
holds the GIL for its whole turn, and a preprocess queued behind that turn
left the cores idle (``mlp`` on 1x2: 5 us of a 66 us item).

Hand-backs in runs (``start(on_done, hold=n)``, offline input): a replica
that has another batch queued keeps up to ``n`` finished batches and hands them
back together. Each hand-back wakes the loop, and the loop's turn (its
bookkeeping and the results it yields) holds the GIL while the replica waits to
start its next run with the model idle: on ``mlp`` (1x2, batches of 16, about
0.9 ms each) the replica's gap between runs was 70-150 us, a third of it
waiting for the loop's turn, and one hand-back in four took the worker from
0.88-0.91x to 0.94-0.95x the plain loop (median of 8-12 paired rounds). A
failure, or nothing queued, hands back at once. Only where each replica
prepares its own batches: a preprocessing thread works ahead of the replica by
the batches in flight, and a preprocess reusing a ring of two buffers (the
image preprocess) needs at most two there.

The caller bounds the batches in flight (``replicas x hold + 1``), so the queues,
though unbounded, never hold more than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.from_thread
import anyio.lowlevel

from fusion._timing import Clock
from fusion.workers._batcher import Batch
from fusion.workers._execution import Feeds, ModelRunner
from fusion.workers._results import Outcome

_STOP: Any = object()

_Job = tuple[Batch[tuple[int, Any]], Feeds | None, int, int]
"""A prepared batch: the batch, its inputs (``None``: preprocess failed), ns, CPU ns."""


@dataclass(slots=True)
class Finished:
    """A batch back from the threads."""

    batch: Batch[tuple[int, Any]]
    outcomes: list[Outcome]
    """One per item, in the batch's order (empty when ``failure`` is set)."""
    splits: int
    """Splits it took to isolate failing items."""
    run_ns: int
    """Time on the replica (run + postprocess + retries), runtime clock."""
    failure: BaseException | None = None
    """The worker cannot go on (sessions died too often); the stream re-raises it."""
    prep_ns: int = 0
    """Time in ``preprocess`` on the preprocessing thread, runtime clock."""
    cpu_ns: int = 0
    """CPU time of the two threads on this batch (preprocess, then run): all of it for a
    session of one intra-op thread, the calling thread's share for a wider one."""


class Lanes:
    """Start with :meth:`start` on the event loop, :meth:`submit` batches, :meth:`stop`, join."""

    def __init__(self, runner: ModelRunner, replicas: int, clock: Clock) -> None:
        self._runner = runner
        self._clock = clock
        self._replicas = replicas
        # Each replica prepares its own batches with two or more replicas, and with one
        # CPU session whose pool spans several cores (the measured 1xN layout): a
        # preprocessing thread beside it only competes with the pool's threads (mlp,
        # 1x2, cap 16, load 12: 8,357 -> 9,960 items/s, 108 -> 105 us CPU per item).
        self._inline = replicas > 1 or (
            runner.device == "cpu" and all(s.threads > 1 for s in runner.sessions)
        )
        self._prep_queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._run_queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(
                target=self._replica_loop,
                args=(i,),
                daemon=True,
                name=f"hyperframes-worker-run-{i}",
            )
            for i in range(replicas)
        ]
        if not self._inline:
            self._threads.append(
                threading.Thread(target=self._prep_loop, daemon=True, name="hyperframes-worker-pre")
            )
        self._on_done: Callable[[list[Finished]], None] | None = None
        self._hold = 1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._token: Any = None
        self._stopped = False

    @property
    def prepares_own(self) -> bool:
        """Whether each replica prepares the batches it runs (no preprocessing thread)."""
        return self._inline

    def start(self, on_done: Callable[[list[Finished]], None], *, hold: int = 1) -> None:
        """Start the threads; ``on_done(run)`` will run on this event loop with the batches
        back, in the order they finished: one at a time, or up to ``hold`` while the
        replica that ran them had more queued (see the module docstring)."""
        self._on_done = on_done
        self._hold = max(1, hold)
        self._token = anyio.lowlevel.current_token()
        with contextlib.suppress(RuntimeError):  # not asyncio: go through anyio's token
            self._loop = asyncio.get_running_loop()
        for thread in self._threads:
            thread.start()

    def submit(self, batch: Batch[tuple[int, Any]]) -> None:
        """Queue a batch for preprocessing and a replica; never blocks."""
        (self._run_queue if self._inline else self._prep_queue).put(batch)

    def stop(self) -> None:
        """No more batches: the threads finish those queued, then exit."""
        if not self._stopped:
            self._stopped = True
            if self._inline:
                for _ in range(self._replicas):
                    self._run_queue.put(_STOP)
            else:
                self._prep_queue.put(_STOP)

    def join(self) -> None:
        """Wait (blocking) until every thread has exited; call after :meth:`stop`."""
        for thread in self._threads:
            if thread.ident is not None:
                thread.join()

    # -- thread side -------------------------------------------------------------

    def _prepare(self, batch: Batch[tuple[int, Any]], replica: int | None) -> _Job:
        """``batch`` with its model inputs (``None``: preprocess failed, isolated per item
        by the replica), the preprocess time and its thread's CPU time."""
        feeds: Feeds | None
        start, cpu = self._clock.now(), time.thread_time_ns()
        try:
            feeds = self._runner.prepare([entry.item[1] for entry in batch.entries], replica)
        except Exception:
            feeds = None
        return batch, feeds, self._clock.now() - start, time.thread_time_ns() - cpu

    def _prep_loop(self) -> None:
        while (batch := self._prep_queue.get()) is not _STOP:
            self._run_queue.put(self._prepare(batch, None))
            del batch  # hold no frame while waiting for the next batch
        for _ in range(self._replicas):
            self._run_queue.put(_STOP)

    def _replica_loop(self, replica: int) -> None:
        held: list[Finished] = []
        ready = self._prepared(self._run_queue.get(), replica)
        while ready is not _STOP:
            held.append(self._run(replica, ready))
            del ready  # hold no frame while waiting for the next job
            # The queued batch is prepared before the finished ones are handed back
            # (see the module docstring: the loop's turn would hold the GIL over it).
            ready = self._queued(replica)
            last_failed = held[-1].failure is not None
            if ready is None or ready is _STOP or len(held) >= self._hold or last_failed:
                self._deliver(held)
                held = []
            if ready is None:
                ready = self._prepared(self._run_queue.get(), replica)

    def _queued(self, replica: int) -> _Job | Any | None:
        """The next queued job, prepared where this replica prepares its own batches;
        ``None`` if nothing is queued."""
        try:
            job = self._run_queue.get_nowait()
        except queue.Empty:  # another replica may have taken it since
            return None
        return self._prepared(job, replica)

    def _prepared(self, job: Any, replica: int) -> _Job | Any:
        """``job`` prepared where this replica prepares its own batches, else as queued."""
        return self._prepare(job, replica) if self._inline and job is not _STOP else job

    def _run(self, replica: int, job: _Job) -> Finished:
        batch, feeds, prep_ns, cpu_ns = job
        items = [entry.item[1] for entry in batch.entries]
        now = self._clock.now
        start, cpu = now(), time.thread_time_ns()
        try:
            outcomes, splits = self._runner.run_batch(replica, items, feeds)
            done = Finished(batch, outcomes, splits, now() - start, prep_ns=prep_ns)
        except BaseException as err:  # handed to the loop, which re-raises it
            done = Finished(batch, [], 0, now() - start, failure=err, prep_ns=prep_ns)
        done.cpu_ns = cpu_ns + time.thread_time_ns() - cpu
        return done

    def _deliver(self, run: list[Finished]) -> None:
        on_done = self._on_done
        assert on_done is not None
        try:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(on_done, run)
            else:
                anyio.from_thread.run_sync(on_done, run, token=self._token)
        except RuntimeError:  # the event loop is gone: nobody is waiting for it
            pass
