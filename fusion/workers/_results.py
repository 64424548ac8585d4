"""What a :class:`~fusion.BatchWorker` hands out: per-item results and its statistics.

A :class:`WorkerResult` is one input item's outcome, in input order: a value, an
error naming the item's sensor and seq, or a value reused by the change gate.
:class:`WorkerStatistics` is the worker's counters and latencies across its
streams. :class:`Outcome` is the thread side's per-item answer before it is
put in order.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from fusion._frames import Frame, FrameGroup
from fusion.errors import WorkerError
from fusion.workers._batcher import BatcherStatistics
from fusion.workers._layout import LayoutStatistics
from fusion.workers._sessions import ProviderFailure


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
    service_p50: int = 0
    """Median batch service time in ns (hand-off to the threads until the results
    are back: preprocess + run + postprocess), over the last 1024 batches."""
    service_p99: int = 0
    host_buffers: str = "-"
    """Where CUDA IO binding copies inputs from: "pinned", "pageable (why)", "-" on CPU."""
    layout: LayoutStatistics | None = None
    """The replicas x threads in use and why: measured (with the figures compared),
    remembered, given, one core or device (``None`` before the first start)."""


@dataclass(slots=True)
class WorkerCounters:
    """What a worker's streams count, read by ``BatchWorker.statistics()`` (event loop only)."""

    items: int = 0
    failed: int = 0
    expired: int = 0
    reused: int = 0
    batches: int = 0
    splits: int = 0
    latencies: deque[int] = field(default_factory=lambda: deque(maxlen=4096))
    """Item latencies (ns), newest last."""
    service: deque[int] = field(default_factory=lambda: deque(maxlen=1024))
    """Batch service times (ns), newest last."""
    sizes: dict[int, int] = field(default_factory=dict)
    """Batches run per batch size."""


@dataclass(slots=True)
class Outcome:
    """One item's answer from the model threads: a value or the error that stopped it."""

    value: Any = None
    error: BaseException | None = None


def item_key(item: Any) -> tuple[str | None, int | None]:
    """``(sensor, seq)`` naming an item in errors: a frame's own, a group's first member's."""
    if isinstance(item, Frame):
        return item.sensor, item.seq
    if isinstance(item, FrameGroup):
        members = item.members()
        if members:
            return members[0].sensor, members[0].seq
    return None, None


def item_error(item: Any, err: BaseException) -> WorkerError:
    """The :class:`~fusion.WorkerError` a failed item comes out with, caused by ``err``."""
    sensor, seq = item_key(item)
    what = f"group {item.keys}" if isinstance(item, FrameGroup) else "item"
    message = f"inference failed on this {what}: {type(err).__name__}: {err}".strip()
    error = WorkerError(message, sensor=sensor, seq=seq)
    error.__cause__ = err
    return error
