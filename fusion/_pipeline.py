"""Pipeline: sources -> clock-aligned hub -> stages -> batch workers -> sinks.

Theory of operation
-------------------
Everything runs in one task group and every edge is bounded:

* the :class:`~fusion.SyncHub` runs the sources, one bounded channel each, and
  emits groups; a :class:`~recordings.Recorder` given as ``recorder`` taps the
  hub, so it records every frame that arrived (aligned, matched or not) and a
  replay of the file through the same pipeline gives the same groups;
* *stages* are plain callables ``group -> group | None`` run in order in a
  worker thread (open3d filtering is CPU work), ``None`` drops the group and
  is counted; :class:`SensorStage` applies a frame function (a voxel filter, a
  crop) to one sensor's frames in each group;
* *workers* are :class:`~fusion.BatchWorker` s chained one after another, each
  batching on its own; worker ``name``'s result for a group lands in
  ``group.results[name]`` (the :class:`~fusion.WorkerError` when it failed on
  that group, so one bad frame never sinks the others);
* *sinks* are callables (sync or async) given every finished group; a sink
  that is also a :class:`FrameTap` (a live view) gets every aligned frame as
  the recorder does, grouped or not, from a ``publish`` that must not block.

``await pipeline.run()`` drives it to the end and returns the statistics;
``async with pipeline.open() as groups`` or ``async for group in pipeline``
hands finished groups to the caller. ``pipeline.stop()`` (Ctrl-C, SIGTERM) is
graceful: sources stop, frames already in flight drain through the stages and
workers, and the recorder writes its footer.
"""

from __future__ import annotations

import inspect
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio

from fusion._channels import ChannelReceiver, open_channel
from fusion._frames import Frame, FrameGroup, SensorSpec
from fusion._hub import HubStatistics, SyncHub
from fusion._ledger import LedgerStatistics
from fusion._side_tasks import SideTasks
from fusion._timing import Clock, current_clock, run_sync, use_clock
from fusion.errors import ConfigError, UsageError
from fusion.policies import SyncPolicy

if TYPE_CHECKING:
    from fusion._source import Source
    from fusion.workers import BatchWorker, WorkerStatistics

_OUT_BATCH = 64  # most groups the output takes per wakeup
Stage = Callable[[FrameGroup], FrameGroup | None]
Sink = Callable[[FrameGroup], Any]


@runtime_checkable
class RecorderLike(Protocol):
    """What a pipeline needs of its ``recorder``: a :class:`~recordings.Recorder`, or a
    wrapper such as :class:`~recordings.hfr.video._recording.VideoRecorder` that encodes video."""

    async def send(self, frame: Frame) -> None: ...

    async def aclose(self) -> None: ...

    def statistics(self) -> Any: ...

    def record_ledgers(
        self,
        ledgers: Mapping[str, LedgerStatistics],
        dropped: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """Keep each sensor's input ledger with the recording (called before ``aclose``)."""


@runtime_checkable
class FrameTap(Protocol):
    """A sink that also takes every frame after alignment (what the recorder records):
    :class:`~recordings.outputs.FoxgloveServer`. ``publish`` is called on the event
    loop for each frame, so it must return at once (queue, or drop and count)."""

    def publish(self, frame: Frame) -> None: ...


class SensorStage:
    """Apply ``fn(frame) -> frame`` to ``sensor``'s frame (or window list) in every group."""

    def __init__(self, sensor: str, fn: Callable[[Frame], Frame], name: str | None = None) -> None:
        self.sensor = sensor
        self.fn = fn
        self.name = name or f"{type(fn).__name__}[{sensor}]"

    def __call__(self, group: FrameGroup) -> FrameGroup:
        item = group.frames.get(self.sensor)
        if isinstance(item, list):
            group.frames[self.sensor] = [self.fn(f) for f in item]
        elif item is not None:
            group.frames[self.sensor] = self.fn(item)
        return group

    def __repr__(self) -> str:
        return f"SensorStage({self.sensor!r}, {self.fn!r})"


@dataclass(frozen=True, slots=True)
class StageStatistics:
    """Counters of one stage."""

    name: str
    groups_in: int
    dropped: int
    """Groups the stage returned ``None`` for."""
    failed: int
    """Groups on which the stage raised (dropped, with the message logged)."""
    busy_ns: int
    """Time spent inside the stage."""


@dataclass(frozen=True, slots=True)
class PipelineStatistics:
    """A snapshot of the whole pipeline: a live view while it runs, totals after."""

    hub: HubStatistics
    stages: tuple[StageStatistics, ...]
    workers: Mapping[str, WorkerStatistics]
    recorder: Any
    """The recorder's statistics (:class:`~recordings.RecorderStatistics`), or ``None``."""
    groups_out: int
    """Groups handed to sinks or the caller."""
    elapsed_s: float
    """Wall time since ``run``/``open`` started."""
    errors: Mapping[str, int] = field(default_factory=dict)
    """Failed items by worker name."""
    ledgers: Mapping[str, LedgerStatistics] = field(default_factory=dict)
    """Each sensor's input ledger: units its source received, emitted and lost by reason
    (the hub's own drops of its frames are in ``hub.sensors[name].dropped``)."""

    def silent_sensors(self) -> dict[str, LedgerStatistics]:
        """Sensors whose source received input but made no frame from it."""
        return {n: s for n, s in self.ledgers.items() if s.received and not s.frames}


class _StageState:
    __slots__ = ("busy_ns", "dropped", "failed", "groups_in", "last_error", "name", "stage")

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.name = str(getattr(stage, "name", None) or getattr(stage, "__name__", repr(stage)))
        self.groups_in = self.dropped = self.failed = self.busy_ns = 0
        self.last_error: str | None = None


class Pipeline:
    """Sources -> hub -> stages -> workers -> sinks, bounded, in one task group (contract).

    ``merge`` (default: when every source reads a file, :attr:`Source.from_file`)
    hands the policy the sources' frames merged by time, with no ``max_latency``
    deadline: the groups the stamps give, at any speed (:mod:`fusion._hub`).

    A camera read by exactly one image model (``ImagePreprocess`` /
    ``group_input(..., "image")``) is asked to resize in its decoder when
    nothing else sees its pixels first (see :attr:`resize_plan`;
    ``resize_in_decoder=False`` keeps full frames for the sinks).
    """

    def __init__(
        self,
        sources: Sequence[Source],
        policy: SyncPolicy,
        *,
        max_latency: int | None = None,
        sensors: Iterable[SensorSpec] = (),
        stages: Sequence[Stage] = (),
        workers: Mapping[str, BatchWorker] | Sequence[BatchWorker] = (),
        sinks: Sequence[Sink] = (),
        recorder: RecorderLike | None = None,
        clock: Clock | None = None,
        capacity: int = 16,
        resize_in_decoder: bool = True,
        merge: bool | None = None,
    ) -> None:
        if not sources:
            raise ConfigError("a Pipeline needs at least one source")
        self.sources = list(sources)
        if merge is None:  # files are merged by time: nothing in them is late
            merge = all(source.from_file for source in self.sources)
        self.recorder = recorder
        self._frame_taps: list[Callable[[Frame], None]] = []
        for sink in sinks:
            if isinstance(sink, FrameTap):
                self._frame_taps.append(sink.publish)
        self.hub = SyncHub(
            policy,
            sensors,
            max_latency=max_latency,
            clock=clock,
            output_capacity=capacity,
            tap_batch=self._tap_batch,
            merge=merge,
        )
        self.recording_paused = False
        """While True the recorder skips frames (counted in ``frames_not_recorded``)."""
        self.frames_not_recorded = 0
        self._stages = [_StageState(s) for s in stages]
        if isinstance(workers, Mapping):
            self.workers: dict[str, BatchWorker] = dict(workers)
        else:
            self.workers = {f"worker{i}": w for i, w in enumerate(workers)}
        self.resize_plan: dict[str, str] = {}
        """Per camera sensor fed to a worker's image preprocess: where its resize runs (in
        the source's decoder, or in the preprocess and why)."""
        if self.workers:
            self._plan_resize(resize_in_decoder, recorder is not None, bool(stages))
        self.sinks = list(sinks)
        self._clock = clock
        self.capacity = capacity
        self._groups_out = 0
        self._errors: dict[str, int] = {}
        self._started_at: float | None = None
        self._used = False

    def _plan_resize(self, allowed: bool, recording: bool, staged: bool) -> None:
        """Let a camera's decoder resize for the one image model that reads it.

        Only when nothing else sees that camera's pixels before the model:
        the recorder would record the small frames and a stage would get them.
        Sinks see the frames of the groups after the workers: with the resize
        in the decoder those are the model-size frames (``resize_in_decoder=False``
        keeps the full frames)."""
        from fusion.workers import apply_resize_plan, image_input_of, plan_resize

        wanted = [image_input_of(worker.preprocess) for worker in self.workers.values()]
        plan = plan_resize(
            [w for w in wanted if w is not None],
            [s.name for s in self.sources],
            allowed=allowed,
            recording=recording,
            staged=staged,
        )
        self.resize_plan.update(apply_resize_plan(plan, self.sources))

    # -- running ---------------------------------------------------------------------

    async def run(self) -> PipelineStatistics:
        """Run until every source ends (or :meth:`stop`); feed the sinks; return totals."""
        async with self.open() as groups:
            async for group in groups:
                for sink in self.sinks:
                    result = sink(group)
                    if inspect.isawaitable(result):
                        await result
        return self.statistics()

    async def _tap(self, frame: Frame) -> None:
        await self._tap_batch([frame])

    async def _tap_batch(self, frames: list[Frame]) -> None:
        """The hub's aligned frames, a batch at a time: live views, then the recorder
        (its ``send_many`` when it has one: one checkpoint per batch)."""
        for publish in self._frame_taps:
            for frame in frames:
                publish(frame)
        if self.recorder is None:
            return
        if self.recording_paused:
            self.frames_not_recorded += len(frames)
            return
        send_many = getattr(self.recorder, "send_many", None)
        if send_many is not None:
            await send_many(frames)
        else:
            for frame in frames:
                await self.recorder.send(frame)

    def add_sink(self, sink: Sink) -> None:
        """Add ``sink`` before the run (a :class:`FrameTap` also gets every frame)."""
        if self._used:
            raise UsageError("add sinks before the pipeline runs")
        self.sinks.append(sink)
        if isinstance(sink, FrameTap):
            self._frame_taps.append(sink.publish)

    def stop(self) -> None:
        """Stop gracefully: sources end, in-flight frames drain, the recorder closes."""
        self.hub.stop()

    @asynccontextmanager
    async def open(self) -> AsyncIterator[AsyncIterator[FrameGroup]]:
        """Run in the background for the block; yields finished groups in order."""
        if self._used:
            raise UsageError("a Pipeline runs once; build a new one to run again")
        self._used = True
        self._started_at = time.perf_counter()
        clock = self._clock or current_clock()
        with use_clock(clock), self.hub.groups:
            async with anyio.create_task_group() as tg:
                await tg.start(self.hub.run, self.sources)
                # Each stage and worker runs in its own task between two bounded
                # channels, so every generator is opened and closed in one task.
                upstream: ChannelReceiver[FrameGroup] = self.hub.groups
                receivers: list[ChannelReceiver[FrameGroup]] = []
                if self._stages:
                    send, upstream = open_channel(self.capacity, name="stages->workers")
                    receivers.append(upstream)
                    tg.start_soon(self._run_stages, self.hub.groups, send)
                for name, worker in self.workers.items():
                    send, downstream = open_channel(self.capacity, name=f"{name}->out")
                    receivers.append(downstream)
                    tg.start_soon(self._run_worker, name, worker, upstream, send)
                    upstream = downstream
                try:
                    yield _Counted(self, upstream)
                finally:
                    tg.cancel_scope.cancel()
                    for receiver in receivers:
                        receiver.close()
                    with anyio.CancelScope(shield=True):
                        await self._close_resources()

    def __aiter__(self) -> AsyncIterator[FrameGroup]:
        """``async for group in pipeline``: the simple path. Leaving early with ``break``
        is safe on asyncio (Python's finaliser closes the iterator, which stops the
        pipeline); ``contextlib.aclosing`` stops it at once."""
        return _iterate(self)

    async def _run_stages(self, groups: ChannelReceiver[FrameGroup], send: Any) -> None:
        async with send:
            async for group in groups:
                out = await run_sync(self._apply_stages, group)
                if out is not None:
                    try:
                        await send.send(out)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return  # the consumer left early

    def _apply_stages(self, group: FrameGroup) -> FrameGroup | None:
        current: FrameGroup | None = group
        for state in self._stages:
            if current is None:
                return None
            state.groups_in += 1
            started = time.perf_counter_ns()
            try:
                current = state.stage(current)
            except Exception as err:  # one bad group must not stop the pipeline
                state.failed += 1
                state.last_error = f"stage {state.name} failed on group t={group.t}: {err}"
                current = None
            state.busy_ns += time.perf_counter_ns() - started
            if current is None:
                state.dropped += 1
        return current

    async def _run_worker(
        self, name: str, worker: BatchWorker, groups: ChannelReceiver[FrameGroup], send: Any
    ) -> None:
        async with send, aclosing(worker.stream(groups)) as results:  # type: ignore[type-var]
            async for result in results:
                group: FrameGroup = result.item
                if result.error is not None:
                    group.results[name] = result.error
                    self._errors[name] = self._errors.get(name, 0) + 1
                else:
                    group.results[name] = result.value
                try:
                    await send.send(group)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the consumer left early

    async def _close_resources(self) -> None:
        for worker in self.workers.values():
            await worker.aclose()
        if self.recorder is not None:
            self.recorder.record_ledgers(self.ledgers(), self.channel_drops())
            await self.recorder.aclose()

    def channel_drops(self) -> dict[str, dict[str, int]]:
        """Per sensor, the frames a full channel dropped after the source made them.

        Only these are lost to the recording: the recorder taps the hub before the
        policy, whose own drops are recorded frames that joined no group.
        """
        return {
            name: {"overflow": s.dropped["overflow"]}
            for name, s in self.hub.statistics().sensors.items()
            if s.dropped.get("overflow")
        }

    def ledgers(self) -> dict[str, LedgerStatistics]:
        """Every source's ledgers, by sensor."""
        out: dict[str, LedgerStatistics] = {}
        for source in self.sources:
            out.update(source.ledgers())
        return out

    # -- observing ---------------------------------------------------------------------

    def statistics(self) -> PipelineStatistics:
        """Live metrics: per edge, per sensor, per stage and per worker."""
        return PipelineStatistics(
            hub=self.hub.statistics(),
            stages=tuple(
                StageStatistics(s.name, s.groups_in, s.dropped, s.failed, s.busy_ns)
                for s in self._stages
            ),
            workers={name: w.statistics() for name, w in self.workers.items()},
            recorder=self.recorder.statistics() if self.recorder is not None else None,
            groups_out=self._groups_out,
            elapsed_s=0.0 if self._started_at is None else time.perf_counter() - self._started_at,
            errors=dict(self._errors),
            ledgers=self.ledgers(),
        )


class _Counted:
    """The pipeline's output: the last channel, counting groups as they leave.

    It takes every group queued at once (one wait per burst) and hands them out
    one by one without waiting in between.
    """

    def __init__(self, pipeline: Pipeline, receiver: ChannelReceiver[FrameGroup]) -> None:
        self._pipeline = pipeline
        self._receiver = receiver
        self._ready: deque[FrameGroup] = deque()

    def __aiter__(self) -> _Counted:
        return self

    async def __anext__(self) -> FrameGroup:
        if not self._ready:
            try:
                self._ready.extend(await self._receiver.receive_batch(_OUT_BATCH))
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
        self._pipeline._groups_out += 1
        return self._ready.popleft()


async def _iterate(pipeline: Pipeline) -> AsyncIterator[FrameGroup]:
    """The groups of ``pipeline.open()``, held open by a task beside this generator
    (:mod:`fusion._side_tasks`), not around its ``yield``: a consumer that breaks out of
    ``async for`` leaves the closing to Python's finaliser, in another task, which
    could not leave the pipeline's task group (it cancelled the consumer instead). The
    groups come straight from the pipeline's last channel, with no hop between."""
    opened: list[AsyncIterator[FrameGroup]] = []
    failure: list[Exception] = []
    ready, leave, done = anyio.Event(), anyio.Event(), anyio.Event()

    async def hold_open() -> None:
        try:
            async with pipeline.open() as groups:
                opened.append(groups)
                ready.set()
                await leave.wait()
        except Exception as err:  # the pipeline failed: the generator raises it
            failure.append(err)
        finally:
            ready.set()
            done.set()

    holder = SideTasks()
    try:
        await holder.start(hold_open)
        await ready.wait()
        if opened:
            try:
                async for group in opened[0]:
                    yield group
            except anyio.ClosedResourceError:
                pass  # the pipeline stopped on a failure: raised below
        leave.set()
        await done.wait()
        if failure:
            raise failure[0]
    finally:
        leave.set()
        await holder.close()
