"""Bounded channels: every edge of a pipeline, with an overflow policy and counters.

A thin layer over anyio memory object streams. What it adds:

* ``overflow`` per edge: ``"block"`` waits for room (replay, offline work:
  nothing is lost), ``"drop_oldest"`` evicts the oldest queued item (live
  sensors: the freshest data wins), ``"drop_newest"`` refuses the new item;
* counters shared by both ends: items sent, received, dropped by reason, the
  current depth and its high-water mark, readable at any time through
  :meth:`ChannelSender.statistics`.

``on_drop(item, reason)`` lets the owner attribute a drop (to a sensor, say).

Batches: :meth:`ChannelSender.send_many` and :meth:`ChannelReceiver.receive_batch`
move a burst with one checkpoint instead of one per item (a 1 kHz UDP sensor
drained per wakeup), with the same overflow policy per item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import Any, Generic, Self, TypeVar

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from fusion._frames import Overflow

T = TypeVar("T")

_OVERFLOWS = ("block", "drop_oldest", "drop_newest")


@dataclass(frozen=True, slots=True)
class ChannelStatistics:
    """A snapshot of one channel's counters."""

    name: str
    """The edge's name, as given to :func:`open_channel`."""
    capacity: int
    """Most items the channel holds."""
    overflow: str
    """The overflow policy."""
    depth: int
    """Items queued now."""
    high_water: int
    """Most items ever queued at once."""
    sent: int
    """Items accepted by the channel (dropped-newest items are not counted)."""
    received: int
    """Items taken out by the receiver."""
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Items lost, by reason (``"overflow"`` for policy drops)."""

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


class _State:
    __slots__ = (
        "capacity",
        "dropped",
        "high_water",
        "name",
        "on_drop",
        "overflow",
        "received",
        "sent",
    )

    def __init__(
        self, name: str, capacity: int, overflow: str, on_drop: Callable[[Any, str], None] | None
    ) -> None:
        self.name = name
        self.capacity = capacity
        self.overflow = overflow
        self.on_drop = on_drop
        self.sent = 0
        self.received = 0
        self.high_water = 0
        self.dropped: dict[str, int] = {}

    def drop(self, item: Any, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        if self.on_drop is not None:
            self.on_drop(item, reason)

    def statistics(self) -> ChannelStatistics:
        evicted = self.dropped.get("overflow_evicted", 0)
        return ChannelStatistics(
            name=self.name,
            capacity=self.capacity,
            overflow=self.overflow,
            depth=self.sent - self.received - evicted,
            high_water=self.high_water,
            sent=self.sent,
            received=self.received,
            dropped=MappingProxyType(
                {("overflow" if k == "overflow_evicted" else k): v for k, v in self.dropped.items()}
            ),
        )


class _ChannelEnd:
    """What both ends share: closing (also as a context manager) and the counters."""

    _state: _State

    def _end(self) -> MemoryObjectSendStream[Any] | MemoryObjectReceiveStream[Any]:
        raise NotImplementedError

    def close(self) -> None:
        self._end().close()

    async def aclose(self) -> None:
        self._end().close()
        await anyio.lowlevel.checkpoint()

    def statistics(self) -> ChannelStatistics:
        return self._state.statistics()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ChannelSender(_ChannelEnd, Generic[T]):
    """The sending end. ``send_nowait`` never waits; ``send`` always checkpoints."""

    def __init__(
        self,
        stream: MemoryObjectSendStream[T],
        evict_from: MemoryObjectReceiveStream[T],
        state: _State,
    ) -> None:
        self._stream = stream
        self._evict_from = evict_from
        self._state = state

    def _end(self) -> MemoryObjectSendStream[T]:
        return self._stream

    def send_nowait(self, item: T) -> bool:
        """Queue ``item`` now. Returns False if the policy dropped it (``drop_newest``).

        With ``block`` a full channel raises :class:`anyio.WouldBlock`.
        """
        state = self._state
        try:
            self._stream.send_nowait(item)
        except anyio.WouldBlock:
            if state.overflow == "block":
                raise
            if state.overflow == "drop_newest":
                state.drop(item, "overflow")
                return False
            evicted = self._evict_from.receive_nowait()
            state.drop(evicted, "overflow_evicted")
            self._stream.send_nowait(item)
        state.sent += 1
        depth = state.sent - state.received - state.dropped.get("overflow_evicted", 0)
        if depth > state.high_water:
            state.high_water = depth
        return True

    async def send(self, item: T) -> bool:
        """Queue ``item``, waiting for room if the policy is ``block``."""
        if self._state.overflow != "block":
            await anyio.lowlevel.checkpoint()
            return self.send_nowait(item)
        try:
            return self.send_nowait(item)
        except anyio.WouldBlock:
            pass
        await self._stream.send(item)
        state = self._state
        state.sent += 1
        depth = state.sent - state.received - state.dropped.get("overflow_evicted", 0)
        if depth > state.high_water:
            state.high_water = depth
        return True

    async def send_many(self, items: Sequence[T]) -> int:
        """Queue ``items`` in order, with one checkpoint for the lot; returns how many
        the channel accepted.

        Item by item the same as :meth:`send` (``block`` waits for room for an
        item that does not fit; the drop policies never wait), but the loop is
        entered once per batch, not once per item. With ``drop_newest`` the
        refused items are the batch's tail (nothing is received in between).
        Cancelled while waiting for room: the items before the waiting one are queued.
        """
        accepted = 0
        waited = False
        for item in items:
            try:
                ok = self.send_nowait(item)
            except anyio.WouldBlock:
                ok = await self.send(item)
                waited = True
            accepted += ok
        if not waited:
            await anyio.lowlevel.checkpoint()
        return accepted

    def clone(self) -> ChannelSender[T]:
        """Another sender on the same channel; the receiver ends when all are closed."""
        return ChannelSender(self._stream.clone(), self._evict_from, self._state)


class ChannelReceiver(_ChannelEnd, Generic[T]):
    """The receiving end; iterate it with ``async for`` until every sender closes."""

    def __init__(self, stream: MemoryObjectReceiveStream[T], state: _State) -> None:
        self._stream = stream
        self._state = state

    def _end(self) -> MemoryObjectReceiveStream[T]:
        return self._stream

    def receive_nowait(self) -> T:
        """Take an item now; raises :class:`anyio.WouldBlock` if empty, ``EndOfStream`` at end."""
        item = self._stream.receive_nowait()
        self._state.received += 1
        return item

    async def receive(self) -> T:
        """Wait for the next item; raises :class:`anyio.EndOfStream` once all senders closed."""
        item = await self._stream.receive()
        self._state.received += 1
        return item

    async def receive_batch(self, limit: int) -> list[T]:
        """The next item and every item queued behind it (at most ``limit``), taken with
        one wait: a consumer that keeps up pays one trip through the event loop per
        burst, not per item. Raises :class:`anyio.EndOfStream` once all senders closed
        and nothing is left. Checkpoints only when it has to wait (a consumer that
        always finds items queued yields in its other awaits; nothing else fills
        the channel while it runs)."""
        take = self._stream.receive_nowait
        try:
            items = [take()]
        except anyio.WouldBlock:
            items = [await self._stream.receive()]
        try:
            while len(items) < limit:
                items.append(take())
        except (anyio.WouldBlock, anyio.EndOfStream):
            pass
        self._state.received += len(items)
        return items

    def __aiter__(self) -> ChannelReceiver[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def open_channel(
    capacity: int,
    overflow: Overflow = "block",
    *,
    name: str = "",
    on_drop: Callable[[Any, str], None] | None = None,
) -> tuple[ChannelSender[Any], ChannelReceiver[Any]]:
    """Create a bounded channel of ``capacity`` items with the given overflow policy."""
    if capacity < 1:
        raise ValueError(f"channel {name!r}: capacity must be >= 1, got {capacity}")
    if overflow not in _OVERFLOWS:
        raise ValueError(
            f"channel {name!r}: overflow must be one of {', '.join(_OVERFLOWS)}, got {overflow!r}"
        )
    send, receive = anyio.create_memory_object_stream[Any](max_buffer_size=capacity)
    state = _State(name, capacity, overflow, on_drop)
    return ChannelSender(send, receive, state), ChannelReceiver(receive, state)
