"""Dynamic batching decisions, sans-I/O.

Theory of operation
-------------------
Items arrive one at a time (:meth:`DynamicBatcher.push`, with the time they
arrived); the caller asks :meth:`DynamicBatcher.poll` "is there a batch to run
now?" whenever it has capacity to run one, and sleeps until
:meth:`DynamicBatcher.next_wakeup` otherwise. The batcher never reads a clock
and never sleeps: every method takes ``now`` (int ns), so its decisions are
deterministic and are tested with plain integers.

A batch is released by ``poll(now)``, after items whose deadline has passed are
expired (counted, handed out by :meth:`take_expired`), when the first of these
holds, in this order (Triton's dynamic batcher does the same):

1. ``limit`` items are queued (``"full"``), where ``limit`` is ``max_batch``,
   or the adaptive limit when a latency budget is set;
2. a preferred batch size can be formed: the largest preferred size not above
   the queue length is released at once (``"preferred"``);
3. the oldest queued item has waited ``max_delay`` (``"delay"``): whatever is
   queued goes, up to ``limit``;
4. the input has ended (:meth:`close`) and items remain (``"drain"``).

So a batch never exceeds ``max_batch``, and an item waits at most ``max_delay``
for its batch to form, plus however long the caller takes to come back to
``poll`` (one batch's service time when the caller has one runner). The timer
is the caller's job: it sleeps until ``next_wakeup(now)``, which is when the
oldest item's delay runs out, so a lone item is sent when its delay expires,
not when the next item happens to arrive.

Adaptive mode (a ``sizer``, or a ``latency_budget`` which makes one): the
limit is what a :class:`~fusion.workers._sizing.BatchSizer` measured to give
the most items per second of processing time (within the budget), fed by
:meth:`record`; ``BatchWorker`` runs one by default.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, NamedTuple, TypeVar

from fusion.errors import ConfigError, UsageError
from fusion.workers._sizing import BatchSizer, SizerStatistics

T = TypeVar("T")

Reason = Literal["full", "preferred", "delay", "drain"]


class Queued(NamedTuple, Generic[T]):
    """An item waiting in the batcher (a tuple: made once per item, it costs what one does)."""

    item: T
    arrived: int
    """When it was pushed (ns)."""
    deadline: int | None
    """After this instant (ns) the item is expired instead of batched."""


@dataclass(frozen=True, slots=True)
class Batch(Generic[T]):
    """Items released together by :meth:`DynamicBatcher.poll`."""

    entries: tuple[Queued[T], ...]
    formed_at: int
    """``now`` of the poll that released it (ns)."""
    reason: Reason
    """Which rule released it (see the module docstring)."""

    @property
    def items(self) -> list[T]:
        return [e.item for e in self.entries]

    @property
    def oldest_wait(self) -> int:
        """How long the oldest item waited for this batch (ns)."""
        return self.formed_at - self.entries[0].arrived

    def __len__(self) -> int:
        return len(self.entries)


@dataclass(frozen=True, slots=True)
class BatcherStatistics:
    """Counters of a :class:`DynamicBatcher`."""

    batches: int
    """Batches released."""
    items: int
    """Items released in batches."""
    expired: int
    """Items dropped at dequeue because their deadline had passed."""
    queued: int
    """Items waiting now."""
    limit: int
    """The batch-size limit in force now (``max_batch`` unless adaptive)."""
    by_reason: dict[str, int] = field(default_factory=dict)
    """Batches released per rule: full, preferred, delay, drain."""
    sizes: dict[int, int] = field(default_factory=dict)
    """Histogram of batch sizes."""
    sizing: SizerStatistics | None = None
    """Adaptive mode: the size chosen, why, and the measured cost per size."""

    @property
    def mean_batch(self) -> float:
        return self.items / self.batches if self.batches else 0.0


class DynamicBatcher(Generic[T]):
    """Decides when queued items form a batch; plain, synchronous, no I/O.

    ``max_delay`` is in ns (0: never wait for more items). ``capacity`` bounds
    the queue: :meth:`push` refuses an item when :attr:`full` (the caller waits).
    """

    def __init__(
        self,
        max_batch: int,
        max_delay: int = 0,
        *,
        preferred_sizes: Iterable[int] = (),
        capacity: int | None = None,
        latency_budget: int | None = None,
        sizer: BatchSizer | None = None,
    ) -> None:
        if max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
        if max_delay < 0:
            raise ConfigError(f"max_delay must be >= 0 ns, got {max_delay}")
        preferred = sorted(set(preferred_sizes))
        if any(p < 1 or p > max_batch for p in preferred):
            raise ConfigError(
                f"preferred batch sizes must lie in [1, max_batch={max_batch}], got {preferred}"
            )
        if capacity is not None and capacity < max_batch:
            raise ConfigError(f"capacity ({capacity}) must be >= max_batch ({max_batch})")
        if latency_budget is not None and latency_budget <= 0:
            raise ConfigError(f"latency_budget must be > 0 ns, got {latency_budget}")
        self.max_batch = max_batch
        self.max_delay = max_delay
        self.preferred_sizes = tuple(preferred)
        self.capacity = capacity if capacity is not None else 4 * max_batch
        self.latency_budget = latency_budget
        if sizer is None and latency_budget is not None:
            sizer = BatchSizer(max_batch, latency_budget=latency_budget)
        if sizer is not None and sizer.max_batch != max_batch:
            raise ConfigError(f"the sizer's max_batch {sizer.max_batch} is not {max_batch}")
        self.sizer = sizer
        """Adaptive mode's measurements and choice (``None``: the limit is ``max_batch``)."""
        self._queue: deque[Queued[T]] = deque()
        self._expired: list[Queued[T]] = []
        self._with_deadline = 0  # queued items that have a deadline: poll() skips the scan if 0
        self._closed = False
        self._batches = 0
        self._items = 0
        self._expired_count = 0
        self._reasons: Counter[str] = Counter()
        self._sizes: Counter[int] = Counter()

    # -- input ------------------------------------------------------------

    @property
    def full(self) -> bool:
        """True when the queue holds ``capacity`` items; :meth:`push` would refuse."""
        return len(self._queue) >= self.capacity

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def done(self) -> bool:
        """Closed and empty: nothing more will ever be released."""
        return self._closed and not self._queue

    @property
    def limit(self) -> int:
        """Largest batch :meth:`poll` releases now."""
        return self.sizer.limit if self.sizer is not None else self.max_batch

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, item: T, now: int, deadline: int | None = None) -> None:
        """Queue ``item``, which arrived at ``now``; expire it if unbatched by ``deadline``."""
        self.push_many((item,), now, deadline)

    def push_many(self, items: Sequence[T], now: int, deadline: int | None = None) -> None:
        """:meth:`push` each of ``items``, all arrived at ``now`` with the same ``deadline``.

        Raises before queueing any of them: after :meth:`close`, when fewer than
        ``len(items)`` places are free (check :attr:`full`), when ``now`` is before the
        last push."""
        if self._closed:
            raise UsageError("push() after close(): the batcher's input has ended")
        free = self.capacity - len(self._queue)
        if len(items) > free:
            state = "is full" if free == 0 else f"has {free} free places"
            raise UsageError(
                f"batcher queue {state} ({self.capacity} items), {len(items)} pushed; "
                "check .full first"
            )
        if self._queue and now < self._queue[-1].arrived:
            raise ValueError(f"time went backwards: push at {now} after {self._queue[-1].arrived}")
        self._queue.extend([Queued(item, now, deadline) for item in items])
        if deadline is not None:
            self._with_deadline += len(items)

    def close(self) -> None:
        """No more items: the remainder is released without waiting for the delay."""
        self._closed = True

    # -- decisions --------------------------------------------------------

    def poll(self, now: int) -> Batch[T] | None:
        """Release the next batch if one is due at ``now``, else ``None``."""
        self._expire(now)
        n = len(self._queue)
        if n == 0:
            return None
        limit = self.limit
        if n >= limit:
            return self._release(limit, now, "full")
        preferred = [p for p in self.preferred_sizes if p <= n and p <= limit]
        if preferred:
            return self._release(preferred[-1], now, "preferred")
        if now - self._queue[0].arrived >= self.max_delay:
            return self._release(n, now, "delay")
        if self._closed:
            return self._release(n, now, "drain")
        return None

    def next_wakeup(self, now: int) -> int | None:
        """When a batch will be due without a new push, or ``None`` if never/now-unknown.

        The caller sleeps until then (or until the next push) and polls again.
        A value ``<= now`` means "poll now".
        """
        if not self._queue:
            return None
        if self._closed:
            return now
        return self._queue[0].arrived + self.max_delay

    def take_expired(self) -> list[Queued[T]]:
        """Items expired since the last call, oldest first."""
        out, self._expired = self._expired, []
        return out

    def record(self, size: int, latency: int) -> None:
        """Feed back the processing time (ns) of a batch of ``size`` items (adaptive mode)."""
        if self.sizer is not None:
            self.sizer.record(size, latency)

    def statistics(self) -> BatcherStatistics:
        return BatcherStatistics(
            batches=self._batches,
            items=self._items,
            expired=self._expired_count,
            queued=len(self._queue),
            limit=self.limit,
            by_reason=dict(self._reasons),
            sizes=dict(self._sizes),
            sizing=self.sizer.statistics() if self.sizer is not None else None,
        )

    # -- internals ----------------------------------------------------------

    def _expire(self, now: int) -> None:
        if not self._with_deadline or not any(
            q.deadline is not None and q.deadline < now for q in self._queue
        ):
            return
        keep: deque[Queued[T]] = deque()
        for q in self._queue:
            if q.deadline is not None and q.deadline < now:
                self._expired.append(q)
                self._expired_count += 1
                self._with_deadline -= 1
            else:
                keep.append(q)
        self._queue = keep

    def _release(self, n: int, now: int, reason: Reason) -> Batch[T]:
        queue = self._queue
        if n == len(queue):
            entries = tuple(queue)
            queue.clear()
        else:
            take = queue.popleft
            entries = tuple([take() for _ in range(n)])
        if self._with_deadline:
            self._with_deadline -= sum(1 for e in entries if e.deadline is not None)
        self._batches += 1
        self._items += n
        self._reasons[reason] += 1
        self._sizes[n] += 1
        return Batch(entries, now, reason)
