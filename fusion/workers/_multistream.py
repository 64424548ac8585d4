"""Many camera streams, one model: frames of N sources batched together, results routed back.

DeepStream's ``nvstreammux`` does this on the GPU: one inference engine serves
every camera, and a batch holds frames of several of them, so the device sees
batches of N at the combined rate instead of N engines each seeing batches of
one. :class:`StreamMux` is the same over a :class:`~fusion.BatchWorker`.

Theory of operation
-------------------
Each source runs in its own feeder task, sending its frames into one bounded
channel in the order it yields them; the worker consumes that channel as one
stream. The channel interleaves the sources in arrival order and never
reorders one source's frames, and the worker returns results in input order,
so **each source's results come back in that source's order**. Batches form
by themselves from whatever arrived while the model was busy (the worker's
greedy batching), which with N cameras means frames of several cameras.

Failures stay with their source:

* a frame the model or the preprocess fails on is that frame's result error
  (the worker isolates it by halving the batch; the other cameras' frames in
  the batch get their results);
* a source whose iterator raises stops feeding; the error is kept in
  :attr:`StreamMux.failures` (and counted), the other sources go on, and
  nothing already queued from it is lost.

Scaling: like ``nvstreammux``, which scales every input to the batch's
resolution, ``resize=(height, width)`` resizes each source's frames (with
``interpolation``, :mod:`fusion.workers._resize`) in that source's feeder, in
a worker thread, before they are queued. On a CPU the resize is the costly
part of preprocessing; done per source it runs on every core, where the
worker's one preprocessing thread would do all of them in turn.

Backpressure: while the channel is full, feeders wait, so memory stays
bounded whatever the sources' rates (a live source that must not wait picks
its own overflow policy upstream, as with the hub).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread
import numpy as np

from fusion._frames import Frame
from fusion._side_tasks import SideTasks, close_input
from fusion.errors import ConfigError
from fusion.workers._resize import Interpolation, Resampler, check_interpolation

if TYPE_CHECKING:
    from fusion.workers._results import WorkerResult
    from fusion.workers._worker import BatchWorker

log = logging.getLogger("fusion.workers")


@dataclass(slots=True)
class MuxStatistics:
    """Per-source counters of one :meth:`StreamMux.results` run."""

    results: dict[str, int] = field(default_factory=dict)
    """Results handed out, by source."""
    errors: dict[str, int] = field(default_factory=dict)
    """Results that carry an error, by source."""
    latency_p99_ns: dict[str, int] = field(default_factory=dict)
    """99th percentile of feed-to-result latency (host clock), by source."""


class StreamMux:
    """Frames of several sources through one :class:`~fusion.BatchWorker`, results per source.

    ``sources`` maps a name to an async iterable of items (``Frame`` objects,
    typically ``source.frames()`` of each camera). ``capacity`` bounds the
    frames queued between the sources and the worker.

    ``async for name, result in mux.results(): ...`` yields every result with
    the name of the source its item came from, each source's in its order.
    """

    def __init__(
        self,
        worker: BatchWorker,
        sources: Mapping[str, AsyncIterable[Any]],
        *,
        capacity: int = 64,
        resize: tuple[int, int] | None = None,
        interpolation: Interpolation = "area",
    ) -> None:
        if not sources:
            raise ConfigError("StreamMux needs at least one source")
        if capacity < 1:
            raise ConfigError(f"capacity must be >= 1, got {capacity}")
        self.worker = worker
        self.sources = dict(sources)
        self.capacity = capacity
        self.resize = resize
        self.interpolation = check_interpolation(interpolation)
        self.failures: dict[str, BaseException] = {}
        """Sources whose iterator raised, with the error; the others went on."""
        self._stats = MuxStatistics()
        self._latencies: dict[str, list[int]] = {}

    async def results(self) -> AsyncIterator[tuple[str, WorkerResult]]:
        """Run every source through the worker; yield ``(source name, result)``."""
        send, receive = anyio.create_memory_object_stream[tuple[str, int, Any]](self.capacity)
        pending = len(self.sources)
        stats = self._stats

        async def feed(name: str, items: AsyncIterable[Any]) -> None:
            nonlocal pending
            scale = _Scaler(self.resize, self.interpolation) if self.resize else None
            iterator = aiter(items)
            try:
                async for item in iterator:
                    fed = time.perf_counter_ns()
                    if scale is not None:
                        item = await anyio.to_thread.run_sync(scale, item)
                    await send.send((name, fed, item))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the worker's stream ended (the consumer stopped): not this camera
            except Exception as err:  # a failing camera must not stop the others
                self.failures[name] = err
                log.warning("source %r failed and stops feeding: %s", name, err)
            finally:
                pending -= 1
                if pending == 0:
                    await send.aclose()
                await close_input(iterator)

        # The worker yields one result per item, in input order, so the names of the
        # items handed to it, in that order, say whose each result is.
        origin: deque[tuple[str, int]] = deque()

        async def merged() -> AsyncIterator[Any]:
            async with receive:
                async for name, fed_ns, item in receive:
                    origin.append((name, fed_ns))
                    yield item

        feeders = SideTasks()  # not a task group around the yield: a consumer may break
        try:
            for name, items in self.sources.items():
                await feeders.start(feed, name, items)
            results = cast("AsyncGenerator[WorkerResult, None]", self.worker.stream(merged()))
            async with aclosing(results) as out:
                async for result in out:
                    name, fed_ns = origin.popleft()
                    stats.results[name] = stats.results.get(name, 0) + 1
                    if result.error is not None:
                        stats.errors[name] = stats.errors.get(name, 0) + 1
                    lat = self._latencies.setdefault(name, [])
                    lat.append(time.perf_counter_ns() - fed_ns)
                    if len(lat) > 8192:
                        del lat[:-4096]
                    yield name, result
        finally:
            await feeders.close()

    def statistics(self) -> MuxStatistics:
        """Counters so far; latency percentiles over each source's last 4096 results."""
        stats = self._stats
        stats.latency_p99_ns = {
            name: int(np.percentile(np.asarray(lat), 99)) for name, lat in self._latencies.items()
        }
        return stats


class _Scaler:
    """Resizes a frame's ``(H, W, C)`` image to ``size``; other items pass unchanged."""

    def __init__(self, size: tuple[int, int], interpolation: Interpolation) -> None:
        self.size, self.interpolation = size, interpolation
        self._resamplers: dict[tuple[int, int], Resampler] = {}

    def __call__(self, item: Any) -> Any:
        data = getattr(item, "data", None)
        if not (isinstance(item, Frame) and isinstance(data, np.ndarray) and data.ndim == 3):
            return item
        key = (data.shape[0], data.shape[1])
        if key == self.size:
            return item
        resampler = self._resamplers.get(key)
        if resampler is None:
            resampler = self._resamplers[key] = Resampler(key, self.size, self.interpolation)
        return dataclasses.replace(item, data=resampler(data))
