"""`BatchWorker`: an ONNX model served to a stream of frames or groups.

Theory of operation
-------------------
``worker.stream(items)`` runs five small tasks joined by bounded channels::

    feeder -> [DynamicBatcher] -> dispatcher -> preprocess -> replica 1..R
           -> [ReorderBuffer] -> emitter
    (the dispatcher owns the max_delay timer; preprocess and replicas run in threads)

* the **feeder** numbers each item (:class:`ReorderBuffer`), asks the optional
  :class:`ChangeGate` whether it needs inference, and queues it in the
  :class:`DynamicBatcher`; it waits while the reorder window is full, which is
  the backpressure that keeps memory flat;
* the **dispatcher** waits for a free batch slot (``replicas + 1`` batches in
  flight), then for ``batcher.poll(now)`` to release a batch, sleeping on the
  runtime clock until the batcher's next wake-up or the next item, so the
  ``max_delay`` timer fires even when no further item arrives;
* **preprocess** runs the user's vectorised ``preprocess(items)`` in a thread
  while the replicas run the previous batch (pipelining);
* each **replica** thread owns one onnxruntime session, runs the batch, then
  ``postprocess(items, outputs)``; a failing batch is split in halves and
  retried until the failing items are isolated (a failing item comes out with
  a :class:`~fusion.WorkerError` naming its sensor and seq; the others
  succeed). If the session cannot even run a dummy input it is considered
  dead, rebuilt, counted in ``restarts``, and the batch retried;
* the **emitter** hands results out in input order.

Every wait reads :func:`~fusion.timing.current_clock`, so a test on a
:class:`~fusion.VirtualClock` runs the ``max_delay`` and deadline logic
without sleeping; model work runs through :func:`~fusion.timing.run_sync`,
which stops virtual time while a thread computes.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np

from fusion.channels import open_channel
from fusion.errors import ConfigError, DeadlineExpired, WorkerError
from fusion.frames import Frame, FrameGroup
from fusion.timing import Clock, current_clock, run_sync
from fusion.workers.batcher import Batch, BatcherStatistics, DynamicBatcher
from fusion.workers.gate import ChangeGate
from fusion.workers.reorder import ReorderBuffer
from fusion.workers.sessions import (
    ModelSession,
    ModelSource,
    ProviderFailure,
    default_threads,
    load_model,
)

log = logging.getLogger("fusion.workers")

Preprocess = Callable[[list[Any]], Any]
Postprocess = Callable[[list[Any], list[np.ndarray]], Sequence[Any]]

# Defaults per device. On a CPU batching buys little (the cores are busy
# either way) and waiting only adds latency; on a GPU a batch of 8+ is what
# fills the device, and waiting up to 5 ms (under one frame interval of any
# camera up to 200 Hz) is worth it.
_DEFAULTS = {"cpu": (4, 0), "cuda": (8, 5_000_000)}


@dataclass(slots=True)
class WorkerResult:
    """The outcome for one input item, in input order."""

    item: Any
    """The frame or group this result belongs to."""
    value: Any = None
    """What ``postprocess`` returned for the item (``None`` on error)."""
    error: WorkerError | None = None
    """Why the item has no value: the model failed on it, or it expired."""
    reused: bool = False
    """The change gate skipped inference; ``value`` is the previous result's."""
    index: int = 0
    """Position of the item in the stream, from 0."""
    latency: int = 0
    """ns from entering the worker to leaving it (runtime clock)."""

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class WorkerStatistics:
    """Counters and latencies of a :class:`BatchWorker`, across its streams."""

    items: int
    """Results handed out."""
    failed: int
    """Results with an error (model failures and expired items)."""
    expired: int
    """Items dropped at dequeue because their deadline had passed."""
    reused: int
    """Items the change gate let skip inference."""
    batches: int
    """Batches run on the model (retries of split batches not included)."""
    splits: int
    """Times a failing batch was split to isolate its failing items."""
    restarts: int
    """Sessions rebuilt after they died."""
    providers: list[str]
    """``get_providers()`` of the live session (first replica)."""
    provider_failures: list[ProviderFailure]
    """Providers asked for that did not work, with the reason."""
    max_batch: int
    max_delay: int
    threads: int
    """Intra-op threads per replica."""
    replicas: int
    latency_p50: int
    """Median item latency in ns over the last 4096 items."""
    latency_p99: int
    batcher: BatcherStatistics | None = None
    """The last stream's batcher counters."""
    batch_sizes: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Outcome:
    value: Any = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Done:
    item: Any
    index: int
    arrived: int
    outcome: _Outcome | None  # None: reuse the previous result (gate)
    expired: bool = False


class _Signal:
    """A level-triggered wake-up for one waiter: notify() before wait() is not lost."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()

    async def wait(self, clock: Clock | None = None, deadline: int | None = None) -> None:
        if deadline is None or clock is None:
            await self._event.wait()
        else:
            async with anyio.create_task_group() as tg:

                async def timer() -> None:
                    await clock.sleep_until(deadline)
                    tg.cancel_scope.cancel()

                tg.start_soon(timer)
                await self._event.wait()
                tg.cancel_scope.cancel()
        if self._event.is_set():
            self._event = anyio.Event()


def item_key(item: Any) -> tuple[str | None, int | None]:
    """``(sensor, seq)`` naming an item in errors: a frame's own, a group's first member's."""
    if isinstance(item, Frame):
        return item.sensor, item.seq
    if isinstance(item, FrameGroup):
        members = item.members()
        if members:
            return members[0].sensor, members[0].seq
    return None, None


def _item_error(item: Any, err: BaseException) -> WorkerError:
    sensor, seq = item_key(item)
    what = f"group {item.keys}" if isinstance(item, FrameGroup) else "item"
    message = f"inference failed on this {what}: {type(err).__name__}: {err}".strip()
    error = WorkerError(message, sensor=sensor, seq=seq)
    error.__cause__ = err
    return error


class BatchWorker:
    """An ONNX Runtime model served to frames or groups with dynamic batching (contract).

    ``model`` is a path or the model's bytes. ``preprocess(items)`` turns a list
    of items into the model inputs (one array, a sequence in input order, or a
    dict by input name), batch on axis 0; by default the items' ``data`` arrays
    are stacked. ``postprocess(items, outputs)`` returns one value per item; by
    default item ``i`` gets row ``i`` of the first output.

    ``max_batch`` and ``max_delay`` (ns) default per device: 4 and 0 on CPU, 8
    and 5 ms on CUDA. ``deadline`` (ns) expires items that waited longer for
    their batch; ``latency_budget`` (ns) turns on adaptive batch sizing.
    ``providers`` is ``"auto"`` (CUDA, then CPU), ``"cpu"``, ``"cuda"``,
    ``"tensorrt"`` or a list of provider names. ``threads`` is the intra-op
    thread count per replica; by default the free cores minus
    ``reserve_threads`` (the decode/convert threads elsewhere), split among
    the replicas. ``warmup`` is True (zeros of the model's input shapes at
    batch 1 and ``max_batch``), False, or sample items to preprocess and run.
    """

    def __init__(
        self,
        model: ModelSource,
        *,
        preprocess: Preprocess | None = None,
        postprocess: Postprocess | None = None,
        max_batch: int | None = None,
        max_delay: int | None = None,
        providers: str | Sequence[str] = "auto",
        replicas: int = 1,
        threads: int | None = None,
        reserve_threads: int = 1,
        preferred_batch_sizes: Iterable[int] = (),
        latency_budget: int | None = None,
        deadline: int | None = None,
        window: int | None = None,
        warmup: bool | Sequence[Any] = True,
        max_restarts: int = 3,
        provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if replicas < 1:
            raise ConfigError(f"replicas must be >= 1, got {replicas}")
        if max_batch is not None and max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
        if max_delay is not None and max_delay < 0:
            raise ConfigError(f"max_delay must be >= 0 ns, got {max_delay}")
        if deadline is not None and deadline < 0:
            raise ConfigError(f"deadline must be >= 0 ns, got {deadline}")
        self._model_source = model
        self._preprocess = preprocess
        self._postprocess = postprocess
        self._max_batch_arg = max_batch
        self._max_delay_arg = max_delay
        self._providers_arg = providers
        self.replicas = replicas
        self.threads = (
            threads if threads is not None else default_threads(replicas, reserve_threads)
        )
        self.preferred_batch_sizes = tuple(preferred_batch_sizes)
        self.latency_budget = latency_budget
        self.deadline = deadline
        self._window_arg = window
        self._warmup = warmup
        self.max_restarts = max_restarts
        self._provider_options = provider_options
        self.max_batch = max_batch or 1
        self.max_delay = max_delay or 0
        self._model: bytes | None = None
        self._sessions: list[ModelSession] = []
        self._providers: list[str] = []
        self._provider_failures: list[ProviderFailure] = []
        self._probe: dict[str, np.ndarray] | None = None
        self._restart_lock = threading.Lock()
        self._started = False
        # counters
        self._items = self._failed = self._expired = self._reused = 0
        self._batches = self._splits = self._restarts = 0
        self._latencies: deque[int] = deque(maxlen=4096)
        self._sizes: dict[int, int] = {}
        self._batcher: DynamicBatcher[Any] | None = None

    # -- lifecycle ----------------------------------------------------------

    async def start(self) -> None:
        """Load the model on every replica and warm it up (done by ``stream`` if needed)."""
        if self._started:
            return
        await run_sync(self._start_sync)
        self._started = True

    def _start_sync(self) -> None:
        self._model = load_model(self._model_source)
        self._sessions = [self._new_session() for _ in range(self.replicas)]
        self._providers = list(self._sessions[0].providers)
        self._provider_failures = list(self._sessions[0].failures)
        device = self._sessions[0].device
        default_batch, default_delay = _DEFAULTS.get(device, _DEFAULTS["cpu"])
        self.max_batch = self._max_batch_arg or default_batch
        self.max_delay = self._max_delay_arg if self._max_delay_arg is not None else default_delay
        if any(p > self.max_batch for p in self.preferred_batch_sizes):
            sizes = self.preferred_batch_sizes
            raise ConfigError(f"preferred batch sizes {sizes} exceed max_batch {self.max_batch}")
        self._warm_up()

    def _new_session(self) -> ModelSession:
        assert self._model is not None
        return ModelSession(
            self._model,
            self._providers_arg,
            threads=self.threads,
            provider_options=self._provider_options,
        )

    def _warm_up(self) -> None:
        session = self._sessions[0]
        self._probe = session.dummy_feeds(1)
        if self._warmup is False:
            return
        if self._warmup is True:
            if self._probe is None:
                log.info(
                    "warm-up skipped: the model's inputs have symbolic dimensions other than "
                    "the batch; pass warmup=[sample items] to warm up with real shapes"
                )
                return
            batches = [session.dummy_feeds(n) for n in sorted({1, self.max_batch})]
            feeds_list = [f for f in batches if f is not None]
        else:
            samples = list(self._warmup)
            feeds_list = [session.feeds(self._prepare(samples))]
            self._probe = {k: np.ascontiguousarray(v[:1]) for k, v in feeds_list[0].items()}
        for replica in self._sessions:
            for feeds in feeds_list:
                replica.run(feeds)

    async def aclose(self) -> None:
        """Release the sessions. The worker can be started again."""
        self._sessions = []
        self._started = False

    async def __aenter__(self) -> BatchWorker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def providers(self) -> list[str]:
        """``get_providers()`` of the (last) live session; empty before :meth:`start`."""
        return list(self._providers)

    @property
    def provider_failures(self) -> list[ProviderFailure]:
        """Providers asked for that did not work, with the reason."""
        return list(self._provider_failures)

    def statistics(self) -> WorkerStatistics:
        lat = np.fromiter(self._latencies, np.int64) if self._latencies else None
        return WorkerStatistics(
            items=self._items,
            failed=self._failed,
            expired=self._expired,
            reused=self._reused,
            batches=self._batches,
            splits=self._splits,
            restarts=self._restarts,
            providers=self.providers,
            provider_failures=self.provider_failures,
            max_batch=self.max_batch,
            max_delay=self.max_delay,
            threads=self.threads,
            replicas=self.replicas,
            latency_p50=int(np.percentile(lat, 50)) if lat is not None else 0,
            latency_p99=int(np.percentile(lat, 99)) if lat is not None else 0,
            batcher=self._batcher.statistics() if self._batcher is not None else None,
            batch_sizes=dict(sorted(self._sizes.items())),
        )

    # -- the stream -----------------------------------------------------------

    async def stream(
        self, items: AsyncIterable[Any] | Iterable[Any], *, gate: ChangeGate | None = None
    ) -> AsyncIterator[WorkerResult]:
        """Run every item through the model; yield one :class:`WorkerResult` each, in order.

        Close the generator (``contextlib.aclosing``) if you stop iterating early.
        """
        await self.start()
        clock = current_clock()
        slots_total = self.replicas + 1
        window = self._window_arg or max(2 * self.max_batch * (slots_total + 1), 16)
        batcher: DynamicBatcher[tuple[int, Any]] = DynamicBatcher(
            self.max_batch,
            self.max_delay,
            preferred_sizes=self.preferred_batch_sizes,
            capacity=max(self.max_batch, window // 2),
            latency_budget=self.latency_budget,
        )
        self._batcher = batcher
        reorder: ReorderBuffer[_Done] = ReorderBuffer(window)
        pending: deque[_Done] = deque()
        arrivals: dict[int, tuple[Any, int]] = {}
        space, work, ready = _Signal(), _Signal(), _Signal()
        slots = anyio.Semaphore(slots_total)
        batch_send, batch_recv = open_channel(1, name="worker.batches")
        prep_send, prep_recv = open_channel(1, name="worker.prepared")
        out_send, out_recv = open_channel(window, name="worker.results")
        done = {"producers": False}

        def complete(index: int, entry: _Done) -> None:
            released = reorder.complete(index, entry)
            if released:
                pending.extend(released)
                ready.notify()

        def admissible() -> bool:
            return reorder.outstanding + len(pending) < window and not batcher.full

        async def feeder() -> None:
            if isinstance(items, AsyncIterable):
                source: AsyncIterator[Any] = aiter(items)
            else:
                source = _aiter_sync(items)
            async for item in source:
                while not admissible():
                    await space.wait()
                now = clock.now()
                index = reorder.admit()
                arrivals[index] = (item, now)
                if gate is not None and not gate.check(item).run:
                    complete(index, _Done(item, index, now, None))
                    continue
                deadline = None if self.deadline is None else now + self.deadline
                batcher.push((index, item), now, deadline)
                work.notify()
            batcher.close()
            work.notify()

        async def dispatcher() -> None:
            async with batch_send:
                while True:
                    await slots.acquire()
                    while True:
                        now = clock.now()
                        batch = batcher.poll(now)
                        for q in batcher.take_expired():
                            index, item = q.item
                            self._expired += 1
                            complete(index, _Done(item, index, q.arrived, None, expired=True))
                        if batch is not None or batcher.done:
                            break
                        await work.wait(clock, batcher.next_wakeup(now))
                    space.notify()
                    if batch is None:
                        slots.release()
                        return
                    await batch_send.send(batch)

        async def preprocessor() -> None:
            async with prep_send:
                async for batch in batch_recv:
                    feeds: dict[str, np.ndarray] | None
                    try:
                        feeds = await run_sync(self._prepare_feeds, [it for _, it in batch.items])
                    except Exception:  # isolated per item by the replica
                        feeds = None
                    await prep_send.send((batch, feeds))

        async def replica(index: int) -> None:
            async for batch, feeds in prep_recv:
                start = clock.now()
                outcomes, splits = await run_sync(self._run_batch, index, batch, feeds)
                batcher.record(len(batch), clock.now() - start)
                self._batches += 1
                self._splits += splits
                self._sizes[len(batch)] = self._sizes.get(len(batch), 0) + 1
                for (i, item), outcome in zip(batch.items, outcomes, strict=True):
                    complete(i, _Done(item, i, 0, outcome))
                slots.release()

        async def producers() -> None:
            try:
                async with anyio.create_task_group() as inner:
                    inner.start_soon(feeder)
                    inner.start_soon(dispatcher)
                    inner.start_soon(preprocessor)
                    for i in range(self.replicas):
                        inner.start_soon(replica, i)
            finally:
                prep_recv.close()
                done["producers"] = True
                ready.notify()

        async def emitter() -> None:
            last: Any = None
            async with out_send:
                while True:
                    while pending:
                        entry = pending.popleft()
                        item, arrived = arrivals.pop(entry.index)
                        result = self._result(entry, item, last, clock.now() - arrived)
                        if result.ok and not result.reused:
                            last = result.value
                        space.notify()
                        await out_send.send(result)
                    if done["producers"]:
                        return
                    await ready.wait()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(producers)
                tg.start_soon(emitter)
                async for result in out_recv:
                    yield result
        finally:
            for end in (batch_send, batch_recv, prep_send, prep_recv, out_send, out_recv):
                end.close()

    def _result(self, entry: _Done, item: Any, last: Any, latency: int) -> WorkerResult:
        self._items += 1
        self._latencies.append(latency)
        result = WorkerResult(item, index=entry.index, latency=latency)
        if entry.expired:
            sensor, seq = item_key(item)
            result.error = DeadlineExpired(
                f"deadline of {self.deadline} ns passed before the item was batched",
                sensor=sensor,
                seq=seq,
            )
        elif entry.outcome is None:
            result.value, result.reused = last, True
            self._reused += 1
        elif entry.outcome.error is not None:
            result.error = _item_error(item, entry.outcome.error)
        else:
            result.value = entry.outcome.value
        if result.error is not None:
            self._failed += 1
        return result

    # -- model work (worker threads) ---------------------------------------------

    def _prepare(self, items: list[Any]) -> Any:
        if self._preprocess is not None:
            return self._preprocess(items)
        return np.stack([np.asarray(_data(it)) for it in items])

    def _prepare_feeds(self, items: list[Any]) -> dict[str, np.ndarray]:
        return self._sessions[0].feeds(self._prepare(items))

    def _finish(self, items: list[Any], outputs: list[np.ndarray]) -> Sequence[Any]:
        if self._postprocess is not None:
            values = self._postprocess(items, outputs)
        else:
            values = list(outputs[0])
        if len(values) != len(items):
            raise WorkerError(
                f"postprocess returned {len(values)} values for a batch of {len(items)} items"
            )
        return values

    def _attempt(
        self, replica: int, items: list[Any], feeds: dict[str, np.ndarray] | None
    ) -> list[_Outcome]:
        if feeds is None:
            feeds = self._prepare_feeds(items)
        outputs = self._sessions[replica].run(feeds)
        return [_Outcome(value=v) for v in self._finish(items, outputs)]

    def _run_batch(
        self, replica: int, batch: Batch[tuple[int, Any]], feeds: dict[str, np.ndarray] | None
    ) -> tuple[list[_Outcome], int]:
        items = [it for _, it in batch.items]
        try:
            return self._attempt(replica, items, feeds), 0
        except Exception as err:
            first = err
        if not self._session_alive(replica):
            self._restart(replica, first)
            try:
                return self._attempt(replica, items, feeds), 0
            except Exception as err:
                first = err
        splits = [0]
        return self._isolate(replica, items, feeds, first, splits), splits[0]

    def _isolate(
        self,
        replica: int,
        items: list[Any],
        feeds: dict[str, np.ndarray] | None,
        err: BaseException,
        splits: list[int],
    ) -> list[_Outcome]:
        """Split a failing batch in halves until each failure is pinned to single items."""
        if len(items) == 1:
            return [_Outcome(error=err)]
        splits[0] += 1
        mid = len(items) // 2
        out: list[_Outcome] = []
        for lo, hi in ((0, mid), (mid, len(items))):
            part = items[lo:hi]
            part_feeds = _slice_feeds(feeds, lo, hi, len(items))
            try:
                out.extend(self._attempt(replica, part, part_feeds))
            except Exception as sub:
                out.extend(self._isolate(replica, part, part_feeds, sub, splits))
        return out

    def _session_alive(self, replica: int) -> bool:
        if self._probe is None:
            return True  # nothing known to be runnable: assume the data is at fault
        try:
            self._sessions[replica].run(self._probe)
        except Exception:
            return False
        return True

    def _restart(self, replica: int, cause: BaseException) -> None:
        with self._restart_lock:
            self._restarts += 1
            if self._restarts > self.max_restarts:
                raise WorkerError(
                    f"the model session died {self._restarts} times (limit {self.max_restarts}); "
                    f"last error: {cause}"
                ) from cause
            log.warning("session of replica %d died (%s); restarting it", replica, cause)
            self._sessions[replica] = self._new_session()


def _slice_feeds(
    feeds: dict[str, np.ndarray] | None, lo: int, hi: int, n: int
) -> dict[str, np.ndarray] | None:
    """Rows ``lo:hi`` of each input, or ``None`` (preprocess again) if axis 0 is not the batch."""
    if feeds is None or any(a.ndim == 0 or a.shape[0] != n for a in feeds.values()):
        return None
    return {k: v[lo:hi] for k, v in feeds.items()}


def _data(item: Any) -> Any:
    if isinstance(item, Frame):
        return item.data
    raise ConfigError(
        f"no preprocess given and {type(item).__name__} is not a Frame: pass preprocess="
    )


async def _aiter_sync(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item
        await anyio.lowlevel.checkpoint()
