"""SyncHub: the async shell around a sync policy.

Theory of operation
-------------------
Each source runs in its own task and sends frames into its own bounded channel
(capacity and overflow policy from the source's :class:`~fusion.SensorSpec`, so
a flooding sensor is bounded by its own policy and cannot starve the others).
One *pump* per channel takes frames out and, for each frame, on the event loop
with no await in between:

1. applies the sensor's clock model (``observe`` then ``align``; ``t_sensor``
   is untouched, ``t`` becomes the aligned time); a frame marked
   ``meta["segment_start"]`` (its source saw the stream restart) first tells
   the model to start over (``restart()``, where the model has one);
2. calls ``policy.push`` and sends the groups it returns to the output channel.

Pushes from different pumps never interleave inside the policy (the policy is
plain synchronous code), and group sends are serialised by a lock, so groups
leave in the order the policy made them.

``max_latency`` bounds how long a group waits for a silent sensor, in runtime
clock time. The hub remembers when it received frames; once a frame with time
``t`` was received ``max_latency`` ago, ``policy.expire(t + 1)`` resolves every
group up to ``t`` (emitted with ``missing`` when only optional sensors lack,
dropped and counted otherwise), at most ``max_latency / 32`` late: the deadline
task wakes at most once per such tick, so a 1 kHz sensor does not cost a timer
per frame. Because that reads the runtime clock, a
:class:`~fusion.VirtualClock` tests it without sleeping.

Frames move in batches: a source's :meth:`~fusion.Source.frame_batches` (every
datagram of a UDP burst; one frame each by default) goes into its channel with
one checkpoint, and a pump takes every frame queued in its channel at once,
aligns them, taps them as one list (``tap_batch``), pushes them in order and
sends their groups together. Per frame nothing changes (order, seq, clock
alignment, overflow policy); per burst the event loop is entered once, not
once per frame (a 1 kHz sensor). A deadline resolves after a pump's batch, and
a frame taken into a batch guards the deadline until it is pushed.

Files merged by time. With ``merge=True`` (a :class:`~fusion.Pipeline` sets it
when every source reads a file: :attr:`~fusion.Source.from_file`) one task
replaces the pumps: it holds the next frames of every source and hands the
policy the oldest of them, refilling a source's frames whenever they run out,
so the policy sees every sensor's frames in one time order however far one
source's decoding runs ahead of another's (a clip's audio decodes far ahead of
its pictures). A source ahead waits, by its channel's backpressure, for the
others' watermarks; a source that ends is drained and no longer waited for.
There is no ``max_latency`` deadline then (nothing is late in a file): the
groups are those the stamps give, complete and the same at any speed. Equal
times go in the sources' order; a source's own frames keep its order.

When every source has ended, the hub drains the policy and closes its output.
Cancelling the hub cancels the sources, closes them and the output.
"""

from __future__ import annotations

import contextlib
import logging
from bisect import bisect_left
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

from fusion._channels import ChannelReceiver, ChannelSender, ChannelStatistics, open_channel
from fusion._frames import Frame, FrameGroup, SensorSpec
from fusion._timing import Clock, current_clock, use_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, UsageError
from fusion.policies import SyncPolicy

if TYPE_CHECKING:
    from fusion._source import Source

log = logging.getLogger("hyperframes.hub")

_LATENCY_SAMPLES = 8192
_PUMP_BATCH = 64  # most frames a pump takes from its channel per wakeup
_DEADLINE_TICKS = 32  # the deadline task wakes at most every max_latency / this
LATENCY_BUCKETS_NS = (10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000)
"""Upper bounds (ns, inclusive) of the added-latency histogram's buckets; one more
bucket holds everything above the last."""


@dataclass(frozen=True, slots=True)
class SensorStatistics:
    """What the hub has seen of one sensor."""

    frames_in: int
    """Frames received from the sensor's channel."""
    dropped: Mapping[str, int]
    """Frames lost, by reason (channel overflow and policy decisions)."""
    last_t: int | None
    """Aligned time of the newest frame."""
    last_received: int | None
    """Runtime-clock time the newest frame was received."""
    lag_ns: int | None
    """Receive time minus aligned time of the newest frame: the transport and
    buffering delay, meaningful when ``t`` is on the host's clock."""
    clock: Mapping[str, Any]
    """The sensor's clock model estimate (``describe()``), empty without a model."""
    segments: int = 0
    """Frames that started a new segment (the source saw its stream restart)."""


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Added latency of the hub: group sent minus the frame that made it certain
    being received, over the last few thousand groups (ns)."""

    count: int
    p50: int
    p90: int
    p99: int
    max: int
    histogram: tuple[tuple[int | None, int], ...] = ()
    """``(upper bound ns, groups)`` per bucket of :data:`LATENCY_BUCKETS_NS` (bound
    ``None``: above the last), counted over every group since the hub started."""


@dataclass(frozen=True, slots=True)
class HubStatistics:
    """A snapshot of a hub's counters (see :meth:`SyncHub.statistics`)."""

    frames_in: int
    """Frames received from all sources."""
    groups_emitted: int
    """Groups sent downstream, complete or partial."""
    groups_complete: int
    """Emitted groups with every sensor present."""
    groups_partial: int
    """Emitted groups with optional sensors missing."""
    groups_dropped: int
    """Groups abandoned because a required sensor had nothing."""
    groups_expired: int
    """Groups resolved by the ``max_latency`` deadline rather than by data."""
    peak_buffer_used: int
    """Most frames the policy held at once."""
    dropped: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """Frames lost, by ``(sensor, reason)``."""
    sensors: Mapping[str, SensorStatistics] = field(default_factory=dict)
    """Per-sensor view."""
    channels: Mapping[str, ChannelStatistics] = field(default_factory=dict)
    """Each source channel and the output channel."""
    latency: LatencySummary | None = None
    """Added-latency percentiles; ``None`` before the first group."""
    sources_failed: Mapping[str, str] = field(default_factory=dict)
    """Sources that raised, by source name: why, in words. Each ended only its own
    sensors (the hub treats them as silent from then on)."""


class _SensorState:
    __slots__ = ("dropped", "frames_in", "last_received", "last_t", "model", "segments")

    def __init__(self, model: ClockModel | None) -> None:
        self.model = model
        self.frames_in = 0
        self.last_t: int | None = None
        self.last_received: int | None = None
        self.dropped: dict[str, int] = {}
        self.segments = 0


class SyncHub:
    """Clock-aligned grouping of frames from many sources (contract).

    ``sensors`` gives specs for sensors whose source does not carry one (or
    overrides it). ``max_latency`` (ns of runtime clock) bounds how long a group
    waits for a silent sensor; ``None`` waits for data (offline replay).
    ``tap`` is awaited with every frame after alignment, before the policy sees
    it (a recorder's ``send``): it records what arrived, matched or not.
    ``tap_batch`` instead takes each batch of aligned frames as one list (a
    recorder's ``send_many``), before the policy sees any of them. ``merge=True``
    merges the sources' frames by time before the policy (sources that read files:
    see the module doc); ``max_latency`` is then not used.
    """

    def __init__(
        self,
        policy: SyncPolicy,
        sensors: Iterable[SensorSpec] = (),
        *,
        max_latency: int | None = None,
        clock: Clock | None = None,
        output_capacity: int = 64,
        tap: Callable[[Frame], Awaitable[None]] | None = None,
        tap_batch: Callable[[list[Frame]], Awaitable[None]] | None = None,
        merge: bool = False,
    ) -> None:
        if max_latency is not None and max_latency <= 0:
            raise ConfigError(f"max_latency must be > 0 ns or None, got {max_latency}")
        self.policy = policy
        self.max_latency = max_latency
        self._clock = clock
        self._specs: dict[str, SensorSpec] = {s.name: s for s in sensors}
        self._sensors: dict[str, _SensorState] = {}
        send_groups, groups = open_channel(output_capacity, name="hub->out")
        self._send_groups: ChannelSender[FrameGroup] = send_groups
        self.groups: ChannelReceiver[FrameGroup] = groups
        """Groups in emission order; ends when the hub has drained."""
        self._channels: dict[str, ChannelSender[Frame]] = {}
        self._emit_lock = anyio.Lock(fast_acquire=True)  # no checkpoint when free
        self._received: deque[tuple[int, int]] = deque()  # (receive time, t), t increasing
        self._received_changed = anyio.Event()
        self._queues: list[deque[Frame]] = []
        self._failed: dict[str, str] = {}
        self._deadline_target = -(2**63)  # expire() everything before this ...
        self._deadline_applied = -(2**63)  # ... and this much has been expired
        self._latencies: deque[int] = deque(maxlen=_LATENCY_SAMPLES)
        self._latency_counts = [0] * (len(LATENCY_BUCKETS_NS) + 1)
        self._frames_in = 0
        self._expired_groups = 0
        self._started = False
        self._tap = tap
        self._tap_batch = tap_batch
        self._sources_scope: anyio.CancelScope | None = None
        self._stopping = False
        self.merge = merge
        """Frames merged by time across sources, no deadline (files; see the module doc)."""

    # -- running ---------------------------------------------------------------------

    async def run(
        self,
        sources: Sequence[Source],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``sources`` through the policy until all end; then drain and close ``groups``."""
        if self._started:
            raise UsageError("a SyncHub runs once; create a new one")
        self._started = True
        clock = self._clock or current_clock()
        self._clock = clock
        try:
            with use_clock(clock):  # sources pace on the hub's clock
                await self._run_tasks(sources, clock, task_status)
        finally:
            self._send_groups.close()

    async def _run_tasks(
        self, sources: Sequence[Source], clock: Clock, task_status: TaskStatus[None]
    ) -> None:
        async with anyio.create_task_group() as outer:
            if self.max_latency is not None and not self.merge:
                outer.start_soon(self._run_deadlines, clock, self.max_latency)
            async with anyio.create_task_group() as tg, anyio.create_task_group() as producers:
                self._sources_scope = producers.cancel_scope
                if self._stopping:
                    producers.cancel_scope.cancel()
                inputs: list[tuple[ChannelReceiver[Frame], deque[Frame]]] = []
                for source in sources:
                    send, receive, queued = self._open_source_channel(source)
                    producers.start_soon(self._produce, source, send, queued)
                    if self.merge:
                        inputs.append((receive, queued))
                    else:
                        tg.start_soon(self._pump, receive, clock, queued)
                if self.merge:
                    tg.start_soon(self._merge, inputs, clock)
                task_status.started()
            async with self._emit_lock:
                await self._send_all(self.policy.drain(), None, clock)
            outer.cancel_scope.cancel()

    def stop(self) -> None:
        """Stop the sources gracefully: frames already received still drain through
        the policy, and ``groups`` ends normally. Safe to call from a signal handler
        task or before ``run`` starts."""
        self._stopping = True
        if self._sources_scope is not None:
            self._sources_scope.cancel()

    @asynccontextmanager
    async def open(self, sources: Sequence[Source]) -> AsyncIterator[ChannelReceiver[FrameGroup]]:
        """Run the hub in the background for the block; yields the group channel.

        ``async with hub.open(sources) as groups: async for g in groups: ...``
        Leaving the block early cancels the sources.
        """
        with self.groups:
            async with anyio.create_task_group() as tg:
                await tg.start(self.run, sources)
                try:
                    yield self.groups
                finally:
                    tg.cancel_scope.cancel()

    def _open_source_channel(
        self, source: Source
    ) -> tuple[ChannelSender[Frame], ChannelReceiver[Frame], deque[Frame]]:
        for spec in source.specs:
            spec = self._specs.setdefault(spec.name, spec)
            if spec.name not in self._sensors:
                self._sensors[spec.name] = _SensorState(spec.clock)
        spec = self._specs[source.specs[0].name]
        # Frames handed to the hub but not yet pushed: the deadline never passes them.
        queued: deque[Frame] = deque()
        self._queues.append(queued)

        def on_drop(frame: Frame, reason: str) -> None:
            if reason == "overflow_evicted" and queued:
                queued.popleft()
            state = self._sensors.get(frame.sensor)
            if state is not None:
                state.dropped["overflow"] = state.dropped.get("overflow", 0) + 1

        send, receive = open_channel(
            spec.capacity, spec.overflow, name=f"{source.name}->hub", on_drop=on_drop
        )
        self._channels[f"{source.name}->hub"] = send
        return send, receive, queued

    async def _produce(
        self, source: Source, send: ChannelSender[Frame], queued: deque[Frame]
    ) -> None:
        """Feed ``source``'s frames to its channel until it ends.

        A source that raises ends only its own sensors: the error is logged and
        kept in :attr:`HubStatistics.sources_failed`, its channel closes as if it
        had ended, and the other sources go on (isolation at the boundary).
        """
        try:
            batches = getattr(source, "frame_batches", None)
            stream = batches() if batches is not None else _singles(source.frames())
            async with send, aclosing(stream) as frames:  # type: ignore[type-var]
                async for batch in frames:
                    await _hand_over(batch, send, queued)
        except Exception as err:
            why = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            self._failed[source.name] = why
            log.error(
                "source %r failed and ends its sensor(s) %s; the others go on (%s)",
                source.name,
                ", ".join(s.name for s in source.specs),
                why,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
        finally:
            with anyio.CancelScope(shield=True):
                await source.aclose()

    async def _pump(
        self, receive: ChannelReceiver[Frame], clock: Clock, queued: deque[Frame]
    ) -> None:
        policy = self.policy
        received = self._received
        track = self.max_latency is not None
        with receive:
            while True:
                try:
                    batch = await receive.receive_batch(_PUMP_BATCH)
                except anyio.EndOfStream:
                    return
                now = clock.now()
                self._align(batch, now)
                await self._take(batch)
                groups: list[FrameGroup] = []
                for frame in batch:
                    if queued:  # pushed now: no longer guards the deadline
                        queued.popleft()
                    if track and (not received or frame.t > received[-1][1]):
                        received.append((now, frame.t))
                        if len(received) == 1:
                            self._received_changed.set()
                    made = policy.push(frame)
                    if made:
                        groups += made
                if groups:
                    async with self._emit_lock:
                        await self._send_all(groups, now, clock)
                if self._deadline_target > self._deadline_applied:
                    await self._apply_deadline(clock)

    def _align(self, batch: list[Frame], now: int) -> None:
        """Each frame's clock model (``observe``, ``align``) and its sensor's counters."""
        sensors = self._sensors
        for frame in batch:
            state = sensors.get(frame.sensor)
            if state is None:
                state = sensors[frame.sensor] = _SensorState(None)
            state.frames_in += 1
            model = state.model
            if frame.meta and frame.meta.get("segment_start"):
                state.segments += 1
                restart = getattr(model, "restart", None)
                if restart is not None:
                    restart()
            if model is not None:
                if frame.t_arrival is not None:
                    model.observe(frame.t_sensor, frame.t_arrival)
                frame.t = model.align(frame.t_sensor)
            state.last_t = frame.t
            state.last_received = now

    async def _take(self, batch: list[Frame]) -> None:
        """An aligned batch taken for the policy: counted, then handed to the taps."""
        self._frames_in += len(batch)
        if self._tap_batch is not None:
            await self._tap_batch(batch)
        elif self._tap is not None:
            for frame in batch:
                await self._tap(frame)

    async def _merge(
        self, inputs: list[tuple[ChannelReceiver[Frame], deque[Frame]]], clock: Clock
    ) -> None:
        """The sources' frames to the policy in one time order (``merge=True``).

        Every source still running must have a frame waiting before the oldest
        waiting frame goes on: a source with none is waited for (the others' channels
        fill and hold their sources back), a source that ended is no longer waited for.
        """
        heads: list[deque[Frame]] = [deque() for _ in inputs]
        running = list(range(len(inputs)))
        with contextlib.ExitStack() as stack:
            for receive, _ in inputs:
                stack.enter_context(receive)
            while True:
                for i in list(running):
                    if heads[i]:
                        continue
                    try:
                        batch = await inputs[i][0].receive_batch(_PUMP_BATCH)
                    except anyio.EndOfStream:
                        running.remove(i)
                        continue
                    self._align(batch, clock.now())
                    heads[i].extend(batch)
                out: list[Frame] = []
                # the oldest waiting frame, while every running source has one waiting
                while True:
                    waiting = [i for i, head in enumerate(heads) if head]
                    if not waiting or any(not heads[i] for i in running):
                        break
                    first = min(waiting, key=lambda i: heads[i][0].t)  # ties: source order
                    out.append(heads[first].popleft())
                    queued = inputs[first][1]
                    if queued:  # taken for the policy: no longer in its channel
                        queued.popleft()
                if out:
                    await self._push_merged(out, clock)
                elif not running:
                    return

    async def _push_merged(self, batch: list[Frame], clock: Clock) -> None:
        """A merged batch: the taps, then the policy, its groups sent in order."""
        await self._take(batch)
        now = clock.now()
        groups: list[FrameGroup] = []
        push = self.policy.push
        for frame in batch:
            made = push(frame)
            if made:
                groups += made
        if groups:
            async with self._emit_lock:
                await self._send_all(groups, now, clock)
        else:
            await anyio.lowlevel.checkpoint()

    async def _run_deadlines(self, clock: Clock, max_latency: int) -> None:
        received = self._received
        # Wake at most once per tick: a 1 kHz sensor's deadlines are resolved a few
        # at a time (each at most a tick late), not with a timer per frame.
        tick = max_latency // _DEADLINE_TICKS
        woke = -(2**63)
        while True:
            if not received:
                self._received_changed = anyio.Event()
                await self._received_changed.wait()
                continue
            await clock.sleep_until(max(received[0][0] + max_latency, woke + tick))
            now = woke = clock.now()
            while received and received[0][0] + max_latency <= now:
                self._deadline_target = max(self._deadline_target, received.popleft()[1] + 1)
            await self._apply_deadline(clock)

    async def _apply_deadline(self, clock: Clock) -> None:
        """Expire up to the target, but never past a frame still queued for the hub:
        a frame held back by backpressure is not late."""
        deadline = self._deadline_target
        for queued in self._queues:
            if queued:
                frame = queued[0]
                state = self._sensors.get(frame.sensor)
                model = state.model if state is not None else None
                t = model.align(frame.t_sensor) if model is not None else frame.t
                deadline = min(deadline, t)
        if deadline <= self._deadline_applied:
            return
        self._deadline_applied = deadline
        async with self._emit_lock:
            groups = self.policy.expire(deadline)
            self._expired_groups += len(groups)
            await self._send_all(groups, None, clock)

    async def _send_all(self, groups: list[FrameGroup], since: int | None, clock: Clock) -> None:
        out = self._send_groups
        for group in groups:  # the pump yields per batch: no checkpoint while there is room
            try:
                out.send_nowait(group)
            except anyio.WouldBlock:
                await out.send(group)
        if since is not None:
            latency = clock.now() - since
            bucket = bisect_left(LATENCY_BUCKETS_NS, latency)
            self._latencies.extend([latency] * len(groups))
            self._latency_counts[bucket] += len(groups)

    # -- observing -------------------------------------------------------------------

    def statistics(self) -> HubStatistics:
        """Counters now: per sensor, per channel, groups, drops and added latency."""
        return _statistics(self)


def _statistics(hub: SyncHub) -> HubStatistics:
    """The hub's counters as one :class:`HubStatistics` (its ``statistics()``)."""
    pstats = hub.policy.stats
    dropped: dict[tuple[str, str], int] = dict(pstats.dropped)
    per_sensor: dict[str, dict[str, int]] = {}
    for (sensor, reason), n in pstats.dropped.items():
        per_sensor.setdefault(sensor, {})[reason] = n
    for name, state in hub._sensors.items():
        for reason, n in state.dropped.items():
            dropped[(name, reason)] = dropped.get((name, reason), 0) + n
            per_sensor.setdefault(name, {})[reason] = n
    sensors = {
        name: SensorStatistics(
            frames_in=state.frames_in,
            dropped=MappingProxyType(per_sensor.get(name, {})),
            last_t=state.last_t,
            last_received=state.last_received,
            lag_ns=None
            if state.last_t is None or state.last_received is None
            else state.last_received - state.last_t,
            clock=MappingProxyType(state.model.describe() if state.model else {}),
            segments=state.segments,
        )
        for name, state in hub._sensors.items()
    }
    channels = {name: send.statistics() for name, send in hub._channels.items()}
    channels["hub->out"] = hub._send_groups.statistics()
    return HubStatistics(
        frames_in=hub._frames_in,
        groups_emitted=pstats.groups_emitted,
        groups_complete=pstats.groups_emitted - pstats.groups_partial,
        groups_partial=pstats.groups_partial,
        groups_dropped=pstats.groups_dropped,
        groups_expired=hub._expired_groups,
        peak_buffer_used=pstats.peak_buffered,
        dropped=MappingProxyType(dropped),
        sensors=MappingProxyType(sensors),
        channels=MappingProxyType(channels),
        latency=_summarise(hub._latencies, hub._latency_counts),
        sources_failed=MappingProxyType(dict(hub._failed)),
    )


async def _hand_over(batch: list[Frame], send: ChannelSender[Frame], queued: deque[Frame]) -> None:
    """Queue ``batch`` in the source's channel in order, one checkpoint for the lot.

    The drop policies never wait (a ``drop_newest`` refusal leaves ``queued``
    again); ``block`` waits for room for each frame that does not fit. The
    checkpoint comes after the frames are queued, so cancelling there loses none.
    """
    waited = False
    for frame in batch:
        queued.append(frame)
        try:
            accepted = send.send_nowait(frame)
        except anyio.WouldBlock:
            waited = True
            try:
                accepted = await send.send(frame)
            except BaseException:
                queued.pop()
                raise
        if not accepted:
            queued.pop()
    if not waited:
        await anyio.lowlevel.checkpoint()


async def _singles(frames: AsyncIterator[Frame]) -> AsyncIterator[list[Frame]]:
    """A batch of one per frame, for a source without ``frame_batches``."""
    async with aclosing(frames):  # type: ignore[type-var]
        async for frame in frames:
            yield [frame]


def _summarise(samples: deque[int], counts: list[int]) -> LatencySummary | None:
    if not samples:
        return None
    ordered = sorted(samples)
    n = len(ordered)

    def pct(p: float) -> int:
        return ordered[min(n - 1, int(p * n))]

    bounds: tuple[int | None, ...] = (*LATENCY_BUCKETS_NS, None)
    return LatencySummary(
        count=n,
        p50=pct(0.5),
        p90=pct(0.9),
        p99=pct(0.99),
        max=ordered[-1],
        histogram=tuple(zip(bounds, counts, strict=True)),
    )
