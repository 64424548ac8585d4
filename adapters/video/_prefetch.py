"""The bounded hand-off from the decoder thread to the event loop.

The decoder thread :meth:`~Prefetch.put` s items; the event loop awaits
:meth:`~Prefetch.get`. The loop never blocks: when the queue is empty it waits
on an :class:`anyio.Event` that the thread sets through the loop's token, and
the thread crosses into the loop only when the consumer is actually waiting,
and then without waiting for it (``call_soon_threadsafe`` on asyncio), so the
decoder never stalls on the loop's scheduling.

``wake_after`` batches those crossings: a waiting consumer is woken once that
many frames are queued (a control item, or the producer finishing, wakes it at
once). Each crossing costs the loop a self-pipe read, a selector pass and a task
step, and the decoder a socket write; waking once per ``wake_after`` frames
divides that by ``wake_after`` while the consumer keeps up, at the cost of
handing the first frames over ``wake_after - 1`` frames later. Files use it;
live inputs wake per frame (latency matters more there).

When the queue is full:

* ``drop_oldest=False`` (files): the thread waits for room. This is the
  backpressure that keeps a fast decoder from running ahead of its consumer.
* ``drop_oldest=True`` (live streams): the oldest *droppable* item (a frame,
  never an error report) is evicted and returned to the caller to count,
  because a live demuxer that stops reading loses packets in the socket
  buffer, which is worse than losing a decoded frame.

:meth:`close` (the consumer is gone) wakes a waiting thread; its ``put``
returns ``None`` and it should stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from fusion.errors import ConfigError

T = TypeVar("T")


class Prefetch(Generic[T]):
    """Bounded thread -> event-loop queue with a high-water mark."""

    def __init__(self, capacity: int, *, drop_oldest: bool = False, wake_after: int = 1) -> None:
        if capacity < 1:
            raise ConfigError(f"prefetch capacity must be >= 1, got {capacity}")
        if not 1 <= wake_after <= capacity:
            raise ConfigError(f"wake_after must be in 1..{capacity}, got {wake_after}")
        self.capacity = capacity
        self.wake_after = wake_after
        self.drop_oldest = drop_oldest
        self.high_water = 0
        self._items: deque[tuple[T, bool]] = deque()
        self._frames = 0  # droppable items queued: only they count toward capacity
        self._cond = threading.Condition()
        self._finished = False
        self._closed = False
        self._waiter: anyio.Event | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- producer side (decoder thread) -----------------------------------------

    def put(self, item: T, *, droppable: bool = True, wait: bool = False) -> list[T] | None:
        """Queue ``item``; returns evicted items (possibly none), or ``None`` if closed.

        Only droppable items count toward capacity; control items (error
        reports, end markers) always fit, so accounting is never lost.
        ``wait=True`` waits for room even when the queue drops the oldest
        (a backlog released at once, which dropping would only thin out).
        """
        evicted: list[T] = []
        with self._cond:
            if droppable:
                while self._frames >= self.capacity and not self._closed:
                    if self.drop_oldest and not wait:
                        evicted.append(self._evict_locked())
                    else:
                        self._cond.wait()
            if self._closed:
                return None
            self._items.append((item, droppable))
            if droppable:
                self._frames += 1
                self.high_water = max(self.high_water, self._frames)
            waiter = self._waiter
            if waiter is not None and (not droppable or self._frames >= self.wake_after):
                self._waiter = None  # the room wait above needs capacity >= wake_after
            else:
                waiter = None
        if waiter is not None and not self._wake(waiter):
            return None
        return evicted

    def finish(self) -> None:
        """The producer is done; ``get`` raises ``EndOfStream`` once the queue drains."""
        with self._cond:
            self._finished = True
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._wake(waiter)

    @property
    def closed(self) -> bool:
        """The consumer went away; the producer should stop."""
        return self._closed

    def _evict_locked(self) -> T:
        for i, (item, droppable) in enumerate(self._items):
            if droppable:
                del self._items[i]
                self._frames -= 1
                return item
        raise AssertionError("capacity counts only droppable items")  # pragma: no cover

    def _wake(self, waiter: anyio.Event) -> bool:
        try:
            if self._loop is not None:
                # asyncio: schedule and go on; blocking until the loop runs it would
                # stall the decoder once per frame whenever the consumer keeps up.
                self._loop.call_soon_threadsafe(waiter.set)
            else:
                anyio.from_thread.run_sync(waiter.set, token=self._token)
        except RuntimeError:  # the event loop is gone: nobody will read
            with self._cond:
                self._closed = True
            return False
        return True

    # -- consumer side (event loop) ---------------------------------------------

    def get_nowait(self) -> T:
        """Take an item; ``anyio.WouldBlock`` if none yet, ``anyio.EndOfStream`` at the end."""
        with self._cond:
            if self._items:
                item, droppable = self._items.popleft()
                if droppable:
                    self._frames -= 1
                    self._cond.notify()
                return item
            if self._finished:
                raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def get(self) -> T:
        """Wait for the next item (always checkpoints); ``anyio.EndOfStream`` at the end."""
        await anyio.lowlevel.checkpoint()
        while True:
            try:
                return self.get_nowait()
            except anyio.WouldBlock:
                pass
            with self._cond:
                if self._items or self._finished:
                    continue
                if self._token is None:
                    self._token = anyio.lowlevel.current_token()
                    with contextlib.suppress(RuntimeError):  # not asyncio (trio)
                        self._loop = asyncio.get_running_loop()
                waiter = self._waiter = anyio.Event()
            await waiter.wait()

    def close(self) -> None:
        """The consumer is done: wake a waiting producer and refuse further items."""
        with self._cond:
            self._closed = True
            self._items.clear()
            self._frames = 0
            self._cond.notify_all()

    @property
    def depth(self) -> int:
        """Frames queued now."""
        return self._frames
