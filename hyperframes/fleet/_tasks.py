"""The work of one read task and of one inference actor, without Ray.

:func:`part_groups` is the one-machine path: a :class:`~recordings.Replay` of
the part's range (as fast as possible) feeding the pipeline that
:func:`~hyperframes.config.build_pipeline` builds from the run file, the same hub,
policy and stages as a local run, keeping the groups whose time is the part's.
:func:`part_rows` turns them into rows (see :mod:`hyperframes.fleet._codec`)
and ends each part with a *summary row* (``index == -1``) that counts the
groups, so the collector knows when a recording is complete.

:class:`InferenceModel` runs the run file's workers, each a
:class:`~fusion.BatchWorker` built from its ``[[workers]]`` entry, over rows,
chained in order as :class:`~fusion.Pipeline` chains them.

Ray's tasks are synchronous; the pipeline is async. :func:`iterate_blocking`
runs an async generator in a thread of its own and hands its items out through
a small bounded queue, so a read task streams blocks with backpressure instead
of holding a whole recording.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar

import anyio
import msgpack

from fusion import FrameGroup, Pipeline, SensorStage, Stage
from fusion.errors import WorkerError
from hyperframes.config import build_policy, build_stage, build_worker
from hyperframes.fleet._codec import decode_group, encode_group, encode_results, group_info
from hyperframes.fleet._config import FleetConfig
from hyperframes.fleet._plan import Part

T = TypeVar("T")
log = logging.getLogger("hyperframes.fleet")
Row = dict[str, Any]

COLUMNS = ("recording", "part", "parts", "index", "t", "info", "group", "results", "summary")


async def part_groups(
    config: FleetConfig,
    part: Part,
    *,
    stages: Sequence[Stage] = (),
    workers: bool = False,
    stats: dict[str, Any] | None = None,
) -> AsyncIterator[FrameGroup]:
    """The groups of ``part``, in emission order; ``stages`` run after the config's.

    ``workers=True`` runs the models in the pipeline too (the local path). Hub
    and replay counters land in ``stats`` when the part ends.
    """
    from recordings import Replay

    replay = Replay(part.path, None, start=part.read_start, end=part.read_end)
    names = [spec.name for spec in replay.specs]
    # What build_pipeline builds from the same config, plus the caller's stages.
    pipeline = Pipeline(
        [replay],
        build_policy(config.sync, names),
        max_latency=None,  # offline: groups are decided by the data, never by timing
        stages=[*(SensorStage(s.sensor, build_stage(s)) for s in config.stages), *stages],
        workers={w.name: build_worker(w) for w in config.workers} if workers else {},
        capacity=config.pipeline.capacity,
    )
    async with pipeline.open() as groups:
        async for group in groups:
            if part.keeps(group.t):
                yield group
    if stats is not None:
        hub = pipeline.statistics().hub
        stats.update(
            frames_in=hub.frames_in,
            groups_dropped=hub.groups_dropped,
            dropped={f"{s}/{r}": n for (s, r), n in hub.dropped.items()},
            replay_errors=dict(replay.errors),
            last_error=replay.last_error,
        )


async def part_rows(
    config: FleetConfig,
    part: Part,
    *,
    stages: Sequence[Stage] = (),
    workers: bool = False,
    rows_per_block: int = 32,
) -> AsyncIterator[list[Row]]:
    """Rows of ``part`` in blocks; the last block ends with the part's summary row.

    A part that fails (an unreadable file, a stage that raises out of the
    pipeline) ends with a summary row carrying the error instead of raising:
    one bad recording must not fail the fleet.
    """
    names = [w.name for w in config.workers] if workers else []
    block: list[Row] = []
    stats: dict[str, Any] = {}
    count = 0
    error: str | None = None
    try:
        async for group in part_groups(config, part, stages=stages, workers=workers, stats=stats):
            row = _row(part, count, group.t)
            row["info"] = group_info(group)
            if workers:
                row["results"] = encode_results(group, names)
            else:
                row["group"] = encode_group(group)
            block.append(row)
            count += 1
            if len(block) >= rows_per_block:
                yield block
                block = []
    except Exception as err:  # reported per recording by the collector
        error = f"{type(err).__name__}: {err}"
    summary = _row(part, -1, 0)
    summary["summary"] = msgpack.packb({"groups": count, "error": error, **stats})
    block.append(summary)
    yield block


def _row(part: Part, index: int, t: int) -> Row:
    return {
        "recording": part.path,
        "part": part.index,
        "parts": part.count,
        "index": index,
        "t": t,
        "info": None,
        "group": None,
        "results": None,
        "summary": None,
    }


class InferenceModel:
    """The run file's workers, built once, applied to rows (what each actor holds)."""

    def __init__(self, config: FleetConfig, *, threads: int | None = None) -> None:
        self.names = [w.name for w in config.workers]
        self.workers = {w.name: build_worker(w) for w in config.workers}
        if threads is not None:
            for worker in self.workers.values():
                worker.threads = threads

    def process(self, rows: list[Row]) -> list[Row]:
        """Fill ``results`` of the group rows and drop their frames; summary rows pass."""
        todo = [r for r in rows if r["group"] is not None]
        if todo:
            groups = [decode_group(r["group"]) for r in todo]
            anyio.run(self._run, groups)
            for row, group in zip(todo, groups, strict=True):
                row["results"] = encode_results(group, self.names)
        for row in rows:
            row["group"] = None
        return rows

    async def _run(self, groups: list[FrameGroup]) -> None:
        for name, worker in self.workers.items():
            try:
                async for result in worker.stream(groups):
                    item: FrameGroup = result.item
                    item.results[name] = result.error if result.error is not None else result.value
            except Exception as err:
                # The stream itself broke (sessions dying past max_restarts, say).
                # In Ray Data an exception here would abort the whole fleet, so the
                # groups of this batch carry the error and the job goes on.
                log.exception("worker %r failed on a batch of %d groups", name, len(groups))
                failure = WorkerError(f"worker {name!r} failed on this batch: {err}")
                for group in groups:
                    group.results.setdefault(name, failure)


def iterate_blocking(make: Callable[[], AsyncIterator[T]], *, maxsize: int = 2) -> Iterator[T]:
    """Items of the async generator ``make()``, run on an event loop in its own thread."""
    items: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize)
    stop = threading.Event()
    item_, done_, error_ = 0, 1, 2

    def put(entry: tuple[int, Any]) -> bool:
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    async def main() -> None:
        # Closed here, in its own task, when the consumer stops early (a segment cut
        # short): left open, its pipeline's tasks were cancelled by asyncio.run's
        # shutdown instead, which printed "unhandled exception during asyncio.run()
        # shutdown" over the consumer's terminal.
        source = make()
        try:
            async for item in source:
                if not await anyio.to_thread.run_sync(put, (item_, item)):
                    return
        except BaseException as err:
            put((error_, err))
            raise
        finally:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()
        put((done_, None))

    def runner() -> None:
        with contextlib.suppress(BaseException):  # handed to the consumer through the queue
            anyio.run(main)

    thread = threading.Thread(target=runner, name="hyperframes-part", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = items.get()
            if kind == done_:
                return
            if kind == error_:
                raise value
            yield value
    finally:
        stop.set()
        thread.join()
