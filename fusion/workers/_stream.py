"""One ``BatchWorker.stream()``: items in, batches to the threads, results out in order.

Theory of operation
-------------------
Everything on the event loop is synchronous bookkeeping around two sans-I/O
cores, :class:`DynamicBatcher` (when does a batch go?) and
:class:`ReorderBuffer` (which results may leave?), driven by one function,
:meth:`StreamRun._pump`: "while a batch slot is free and the batcher releases a
batch, hand it to the threads". It runs

* after items are queued: items are numbered, the optional
  :class:`ChangeGate` asked, the others queued in the batcher. A source (an
  async iterable) has a **feeder** task that admits each item as it comes; a
  plain iterable's items are admitted by the generator itself whenever it has
  handed out every result released so far, before it waits, as many as there
  is room for in one step (a batch's worth while a slot is free), so the
  loop's cost per item stays a small share of a cheap model's;
* when batches come back from the threads (slots free up), in the
  ``on_done`` callback the replica thread schedules on the loop: one batch, or
  on offline input (``StreamSettings.hold``) up to ``hold`` a replica finished
  while it had more queued;
* when the oldest item's ``max_delay`` runs out: a **timer** task, started
  only when ``max_delay > 0``, sleeps on the runtime clock until
  ``batcher.next_wakeup``, so a lone item goes when its delay expires, not
  when the next item arrives;
* when the input ends.

The feeder and the timer run beside the generator, not in a task group around
its ``yield`` (:mod:`fusion._side_tasks`): a consumer may ``break`` out of its
``async for`` and leave the closing to Python's finaliser, in another task.

``replicas + 1`` batches may be in flight (one preprocessing while each
replica runs one), ``replicas x hold + 1`` on offline input where the
replicas prepare their own batches. With ``max_delay=0`` this is greedy
batching: a batch goes as soon as a slot is free, holding whatever queued
while the slots were busy, so batches grow by themselves exactly when the
model falls behind.

Results leave from the generator itself, in input order, with no extra task
or channel per item. Backpressure: nothing is admitted while the reorder window
(admitted items not yet handed out) is full, so memory stays flat whatever the
consumer's pace.

Virtual time: from the first batch handed to the threads until the last one
is back, the runtime clock is marked busy (:meth:`~fusion._timing.Clock.busy`),
so a :class:`~fusion.VirtualClock` does not jump past a deadline while a
thread computes; model work takes no virtual time.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import islice
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from fusion._side_tasks import SideTasks, close_input
from fusion._timing import current_clock
from fusion.errors import DeadlineExpired, WorkerError
from fusion.workers._batcher import DynamicBatcher
from fusion.workers._execution import ModelRunner
from fusion.workers._gate import ChangeGate
from fusion.workers._lanes import Finished, Lanes
from fusion.workers._reorder import ReorderBuffer
from fusion.workers._results import Outcome, WorkerCounters, WorkerResult, item_error, item_key
from fusion.workers._sizing import BatchSizer


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """The batching parameters of one stream (resolved per device by the worker)."""

    max_batch: int
    max_delay: int
    preferred_batch_sizes: tuple[int, ...] = ()
    latency_budget: int | None = None
    deadline: int | None = None
    window: int | None = None
    sizer: BatchSizer | None = None
    """Caps batches at the size measured to run fastest (``None``: ``max_batch``); the
    worker keeps one across its streams, so a later stream starts from what it found."""
    hold: int = 1
    """Batches a replica may finish and keep while it has more queued, handed back
    together (:mod:`fusion.workers._lanes`); more than 1 only for offline input."""


def default_window(max_batch: int, slots: int) -> int:
    """Items admitted and not handed out yet, unless told: the items of ``slots``
    batches in flight, twice, and two batches more (at least 16)."""
    return max(2 * max_batch * (slots + 1), 16)


_REUSED = Outcome()
"""In the reorder buffer: the gate let the item skip inference (it gets the last value)."""
_EXPIRED = Outcome(error=TimeoutError("deadline passed"))
"""In the reorder buffer: the item's deadline passed before it was batched."""


class _Signal:
    """A level-triggered wake-up for one waiter: notify() before wait() is not lost.

    A notify while already notified costs one attribute test (results notify the
    feeder once per item handed out; setting the event each time cost more). A
    wait after a notify returns at once; a new event is made with the backend's
    own class (``anyio.Event()`` looks the backend up each time: 1-2 us)."""

    __slots__ = ("_event", "_new_event", "_set")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._new_event = type(self._event)
        self._set = False

    def notify(self) -> None:
        if not self._set:
            self._set = True
            self._event.set()

    async def wait(self) -> None:
        if not self._set:
            await self._event.wait()
        self._event = self._new_event()
        self._set = False


class StreamRun:
    """The state of one stream; :meth:`results` is the async generator ``stream()`` returns."""

    def __init__(
        self,
        runner: ModelRunner,
        replicas: int,
        settings: StreamSettings,
        counters: WorkerCounters,
        gate: ChangeGate | None = None,
    ) -> None:
        self.clock = current_clock()
        self.settings = settings
        self.counters = counters
        self.gate = gate
        self.lanes = Lanes(runner, replicas, self.clock)
        # A preprocessing thread would work that far ahead of the replica, past the
        # two buffers a reusing preprocess keeps: runs only where replicas prepare.
        self.hold = max(1, settings.hold) if self.lanes.prepares_own else 1
        # One batch preparing or queued beside each replica's: ``hold`` of them while
        # finished ones are kept for a run's hand-back.
        self.slots = replicas * self.hold + 1
        max_batch = settings.max_batch
        self.window = settings.window or default_window(max_batch, self.slots)
        self.batcher: DynamicBatcher[tuple[int, Any]] = DynamicBatcher(
            max_batch,
            settings.max_delay,
            preferred_sizes=settings.preferred_batch_sizes,
            capacity=max(max_batch, self.window // 2),
            latency_budget=settings.latency_budget,
            sizer=settings.sizer,
        )
        self.reorder: ReorderBuffer[Outcome] = ReorderBuffer(self.window)
        self._pending: deque[Outcome] = deque()  # released, in input order
        # (item, arrival) of each admitted item not yet handed out, in input order:
        # the reorder buffer releases in that order, so the next result's is first.
        self._arrivals: deque[tuple[Any, int]] = deque()
        self._handed_out = 0  # the index of the next result
        self._free = self.slots
        self._busy: AbstractContextManager[None] | None = None
        self._space = _Signal()
        self._ready = _Signal()
        self._timer_wake: _Signal | None = _Signal() if settings.max_delay > 0 else None
        self._feeder_waiting = False
        self._room = 0  # places known free for the feeder (counted again at 0)
        # When the last ``replicas`` hand-backs came, whether every slot was busy right
        # after each (then the interval over them is the pipeline's pace), and how many
        # batches each brought.
        self._finishes: deque[tuple[int, int, bool, int]] = deque(maxlen=replicas)
        # On the CPU the cores are what the batch sizes compete for, and other
        # processes take them too: the pace is read in this process's CPU time, which
        # a busy neighbour does not inflate the way it inflates the wall clock.
        self._cpu_pace = runner.device == "cpu"
        # One intra-op thread per session: a batch's threads' CPU time is all it cost.
        self._exact = self._cpu_pace and all(s.threads == 1 for s in runner.sessions)
        self._loop_cpu = time.thread_time_ns()  # the loop thread's CPU at the last batch back
        # A stream's first batches run on new threads with cold caches (1.5-3x the CPU
        # of later ones, measured): the sizer is not told about them.
        self._cold = 3 * replicas
        self._returned = 0
        self._fed = False
        self._closed = False
        self._failure: BaseException | None = None

    # -- the generator -----------------------------------------------------------

    async def results(
        self, items: AsyncIterable[Any] | Iterable[Any]
    ) -> AsyncGenerator[WorkerResult, None]:
        """Run every item through the model; yield one result each, in input order."""
        self.lanes.start(self._on_done, hold=self.hold)
        pending = self._pending
        last: Any = None
        # A plain iterable needs no task of its own: the generator admits its items
        # itself before it waits (one task woken per batch back, not two).
        inline = None if isinstance(items, AsyncIterable) else iter(items)
        helpers = SideTasks()
        try:
            if isinstance(items, AsyncIterable):
                await helpers.start(self._feed, items)
            if self._timer_wake is not None:
                await helpers.start(self._timer, self._timer_wake)
            while True:
                while pending:
                    result = self._result(pending.popleft(), last)
                    if result.error is None and not result.reused:
                        last = result.value
                    if self._feeder_waiting:
                        self._space.notify()
                    yield result
                if self._failure is not None:
                    raise self._failure
                if inline is not None and not self._fed:
                    self._top_up(inline)
                    if pending or self._failure is not None:
                        continue  # the gate's reused results, a failed iterable
                if self._fed and not self.reorder.outstanding:
                    break
                await self._ready.wait()
        finally:
            self._closed = True
            try:
                await helpers.close()
            finally:
                self.lanes.stop()
                with anyio.CancelScope(shield=True):  # batches in the threads finish first
                    await anyio.to_thread.run_sync(self.lanes.join)
                self._end_busy()

    def _result(self, outcome: Outcome, last: Any) -> WorkerResult:
        item, arrived = self._arrivals.popleft()
        index = self._handed_out
        self._handed_out = index + 1
        latency = self.clock.now() - arrived
        counters = self.counters
        counters.items += 1
        counters.latencies.append(latency)
        if outcome.error is None:
            if outcome is _REUSED:
                counters.reused += 1
                return WorkerResult(item, last, None, True, index, latency)
            return WorkerResult(item, outcome.value, None, False, index, latency)
        counters.failed += 1
        error: WorkerError
        if outcome is _EXPIRED:
            sensor, seq = item_key(item)
            error = DeadlineExpired(
                f"deadline of {self.settings.deadline} ns passed before the item was batched",
                sensor=sensor,
                seq=seq,
            )
        else:
            error = item_error(item, outcome.error)
        return WorkerResult(item, None, error, False, index, latency)

    # -- input -----------------------------------------------------------------

    async def _feed(self, items: AsyncIterable[Any]) -> None:
        """The feeder task of an async iterable (a source): admit each item as it comes.
        Stopped early (the stream closed or failed), it closes the iterable, in its own
        task, as the one that iterated it."""
        iterator = aiter(items)
        try:
            async for item in iterator:
                if self._room <= 0:
                    await self._wait_for_room()
                self._room -= 1
                self._admit([item])
            self._end_of_input()
        except Exception as err:  # the source failed: the stream raises it
            self._failure = err
        finally:
            self._fed = True
            self._ready.notify()
            await close_input(iterator)

    def _top_up(self, items: Iterator[Any]) -> None:
        """Admit a plain iterable's items while there is room, as many as there is room
        for in one step (one clock reading and one push: per item, these cost the loop
        2-3 us of a cheap model's 50); while a batch slot is free, up to the batch size
        allowed, then the batch goes. Its items are all there to be taken: a stream's
        first batches are not of one item each (for ``mlp`` a batch of one cost what
        one of 13 did)."""
        try:
            while (room := self._free_places()) > 0:
                take = min(room, self.batcher.limit) if self._free else room
                chunk = list(islice(items, take))
                if not chunk:
                    self._end_of_input()
                    self._fed = True
                    return
                self._admit(chunk)
        except Exception as err:  # the iterable failed: the stream raises it
            self._failure = err
            self._fed = True

    def _end_of_input(self) -> None:
        self.batcher.close()
        self._pump()

    async def _wait_for_room(self) -> None:
        """Wait until the reorder window and the batcher have a place for an item."""
        while (room := self._free_places()) <= 0:
            self._feeder_waiting = True
            await self._space.wait()
        self._feeder_waiting = False
        self._room = room

    def _free_places(self) -> int:
        """Items that may be admitted before the window or the batcher is full."""
        outstanding = self.reorder.outstanding + len(self._pending)
        return min(self.window - outstanding, self.batcher.capacity - len(self.batcher))

    def _admit(self, items: list[Any]) -> None:
        """Number ``items`` (as many as there are free places), queue those the gate lets
        run, pump."""
        now = self.clock.now()
        first = self.reorder.admit_many(len(items))
        self._arrivals.extend([(item, now) for item in items])
        if self.gate is None:
            run = list(enumerate(items, first))
        else:
            check, run = self.gate.check, []
            for index, item in enumerate(items, first):
                if check(item).run:
                    run.append((index, item))
                else:
                    self._complete(index, _REUSED)
        if run:
            deadline = self.settings.deadline
            self.batcher.push_many(run, now, None if deadline is None else now + deadline)
            if self._free:  # else the next batch back pumps
                self._pump()

    async def _timer(self, wake: _Signal) -> None:
        """Pump when the oldest queued item's ``max_delay`` runs out."""
        batcher, clock = self.batcher, self.clock
        try:
            while True:
                due = batcher.next_wakeup(clock.now()) if self._free and len(batcher) else None
                if due is None:
                    await wake.wait()
                else:
                    await clock.sleep_until(due)
                    self._pump()
        except Exception as err:  # nobody awaits this task: the stream raises it
            self._failure = err
            self._ready.notify()

    # -- batches -----------------------------------------------------------------

    def _pump(self) -> None:
        """Hand every batch the batcher releases now to the threads, while slots are free."""
        batcher, clock = self.batcher, self.clock
        while self._free:
            batch = batcher.poll(clock.now())
            for q in batcher.take_expired():
                self.counters.expired += 1
                self._complete(q.item[0], _EXPIRED)
            if batch is None:
                break
            self._free -= 1
            if self._busy is None:
                self._busy = self.clock.busy()
                self._busy.__enter__()
            self.lanes.submit(batch)
        if self._feeder_waiting:
            self._space.notify()
        if self._timer_wake is not None:
            self._timer_wake.notify()

    def _on_done(self, run: list[Finished]) -> None:
        """Batches are back from the threads (a loop callback, outside any task)."""
        if self._closed:
            return
        try:
            self._finish_run(run)
        except BaseException as err:  # nobody would see it from a loop callback: stop the stream
            self._failure = err
            self._ready.notify()

    def _finish_run(self, run: list[Finished]) -> None:
        now = self.clock.now()
        cpu = time.process_time_ns()
        for done, cost in zip(run, self._costs(run, now, cpu), strict=True):
            self._finish(done, now, cost)
            if done.failure is not None:
                return
        self._pump()
        self._finishes.append((now, cpu, self._free == 0, len(run)))

    def _finish(self, done: Finished, now: int, cost: int | None) -> None:
        self._free += 1
        if self._free == self.slots:
            self._end_busy()
        if done.failure is not None:
            self._failure = done.failure
            self._ready.notify()
            return
        batch, counters = done.batch, self.counters
        size = len(batch)
        counters.batches += 1
        counters.splits += done.splits
        counters.sizes[size] = counters.sizes.get(size, 0) + 1
        counters.service.append(now - batch.formed_at)
        self._returned += 1
        if self._returned > self._cold and cost is not None:
            self.batcher.record(size, cost)
        entries = batch.entries
        first = entries[0].item[0]
        if entries[-1].item[0] - first == size - 1:  # increasing, so consecutive
            released = self.reorder.complete_run(first, done.outcomes)
        else:  # the gate or a deadline took items out between them
            indices = [entry.item[0] for entry in entries]
            released = self.reorder.complete_many(zip(indices, done.outcomes, strict=True))
        if released:
            self._pending.extend(released)
            self._ready.notify()

    def _costs(self, run: list[Finished], now: int, cpu: int) -> list[int | None]:
        """What each batch of ``run`` (handed back together) cost, for the sizer
        (``None``: not measured).

        On the CPU with sessions of one intra-op thread (the default layout): the CPU
        time of the threads that prepared and ran it, plus its share of the event
        loop's CPU since the last hand-back (the loop's per-batch and per-item share).
        Both are exact per batch: other processes do not inflate CPU time, and nothing
        else is mixed in. (The process's CPU time between two batches coming back, used
        before, has the right median but a spread of -50 %..+45 % per batch: the
        batches' turns overlap; sizes 5 % apart could not be told apart from 4 batches.)

        With wider sessions on the CPU (whose pool threads' CPU the calling thread does
        not see) the process's CPU time since the hand-back ``replicas`` hand-backs ago,
        over the batches back since, shared among the run's batches by their calling
        threads' CPU time; idle time costs no CPU, so it need not have been busy
        meanwhile, but the first hand-backs of a stream have no such interval and are
        not measured (their calling thread's CPU alone, about half, made batches of 4
        look 40 % cheaper than they ran). On a GPU, where the device's time is what
        counts, the same interval on the runtime clock when every slot was busy all
        along (the pipeline's pace), else each batch's preprocess and run time (items
        arrive slower than the model runs), shared by the replicas, which run side by
        side."""
        if self._exact:
            loop = time.thread_time_ns()
            share, self._loop_cpu = (loop - self._loop_cpu) // len(run), loop
            return [done.cpu_ns + share for done in run]
        finishes = self._finishes
        replicas = finishes.maxlen or 1
        full = len(finishes) == replicas
        if full and (self._cpu_pace or all(busy for _, _, busy, _ in finishes)):
            then, then_cpu, _, _ = finishes[0]
            since = cpu - then_cpu if self._cpu_pace else now - then
            batches = len(run) + sum(n for *_, n in list(finishes)[1:])
            if since > 0:
                total = since * len(run) // batches  # the run's share of the interval
                weights = [self._alone(done) or 1 for done in run]
                whole = sum(weights)
                return [total * w // whole for w in weights]
        if self._cpu_pace:
            return [None] * len(run)
        return [self._alone(done) // replicas for done in run]

    def _alone(self, done: Finished) -> int:
        """The batch's own threads' CPU time (on the CPU), or its preprocess and run time."""
        return done.cpu_ns if self._cpu_pace else done.prep_ns + done.run_ns

    def _complete(self, index: int, entry: Outcome) -> None:
        released = self.reorder.complete(index, entry)
        if released:
            self._pending.extend(released)
            self._ready.notify()

    def _end_busy(self) -> None:
        if self._busy is not None:
            busy, self._busy = self._busy, None
            busy.__exit__(None, None, None)
