"""The runtime clock: what "now" means to everything time-driven.

Deadlines (the hub's ``max_latency``, the batcher's ``max_delay``, replay pacing)
read time from a :class:`Clock` instead of calling ``time`` or ``anyio.sleep``
directly, so tests can swap in a :class:`VirtualClock` and run a 60 s session
in milliseconds, deterministically, without sleeping.

The clock in effect is a context variable: :func:`current_clock` returns it and
``with use_clock(clock):`` sets it for the block and every task started inside.

Blocking work (decoders, file reads) goes through :func:`run_sync`, which runs
it in a worker thread and tells the clock that real work is in flight, so an
auto-jumping virtual clock does not leap past a deadline while a thread is
still producing the data that would have met it.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Protocol, TypeVar, runtime_checkable

import anyio
import anyio.lowlevel
import anyio.to_thread

T = TypeVar("T")


@runtime_checkable
class Clock(Protocol):
    """Source of "now" (int ns) and of waits until a given instant."""

    def now(self) -> int:
        """Current time in ns. Monotonic: never goes backwards."""
        ...

    async def sleep_until(self, deadline: int) -> None:
        """Return once ``now() >= deadline``; always checkpoints."""
        ...

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Mark real work (a thread) in flight for the duration of the block."""
        ...


class MonotonicClock:
    """The host's monotonic clock (``time.monotonic_ns``)."""

    def now(self) -> int:
        return time.monotonic_ns()

    async def sleep_until(self, deadline: int) -> None:
        await anyio.sleep(max(0.0, (deadline - time.monotonic_ns()) / 1e9))

    @contextmanager
    def busy(self) -> Iterator[None]:
        yield

    def __repr__(self) -> str:
        return "MonotonicClock()"


class VirtualClock:
    """A clock whose time moves only when told to.

    ``advance(ns)`` moves it by hand and wakes every sleeper whose deadline has
    passed, in deadline order. Inside ``async with clock.autojump():`` it also
    moves by itself, after trio's ``MockClock``: whenever every task is waiting
    and no thread work is in flight (see :meth:`busy`), time jumps straight to
    the earliest deadline. Autojump needs the asyncio backend.
    """

    def __init__(self, start: int = 0) -> None:
        self._now = start
        self._sleepers: list[tuple[int, int, anyio.Event]] = []
        self._order = itertools.count()
        self._busy = 0
        self._changed: anyio.Event | None = None

    def now(self) -> int:
        return self._now

    async def sleep_until(self, deadline: int) -> None:
        if deadline <= self._now:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        heapq.heappush(self._sleepers, (deadline, next(self._order), event))
        self._notify()
        await event.wait()

    def advance(self, ns: int) -> None:
        """Move time forward by ``ns`` (>= 0) and wake the sleepers that are due."""
        if ns < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {ns} ns)")
        self.advance_to(self._now + ns)

    def advance_to(self, t: int) -> None:
        """Move time forward to ``t`` (no-op if already past) and wake those due."""
        if t > self._now:
            self._now = t
        while self._sleepers and self._sleepers[0][0] <= self._now:
            heapq.heappop(self._sleepers)[2].set()

    @property
    def next_deadline(self) -> int | None:
        """Earliest deadline anyone is sleeping until, or ``None``."""
        return self._sleepers[0][0] if self._sleepers else None

    @contextmanager
    def busy(self) -> Iterator[None]:
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    @asynccontextmanager
    async def autojump(self) -> AsyncIterator[VirtualClock]:
        """Jump to the next deadline whenever the event loop goes idle."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._drive_autojump)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    async def _drive_autojump(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._sleepers or self._busy:
                self._changed = anyio.Event()
                await self._changed.wait()
                self._changed = None
                continue
            # Let every runnable task run; jump only when nothing else is ready.
            await asyncio.sleep(0)
            while _has_ready_callbacks(loop):  # noqa: ASYNC110 - polling the loop is the point
                await asyncio.sleep(0)
            if self._sleepers and not self._busy:
                self.advance_to(self._sleepers[0][0])

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now})"


def _has_ready_callbacks(loop: asyncio.AbstractEventLoop) -> bool:
    ready = getattr(loop, "_ready", None)
    if ready is None:  # not the stock asyncio loop: be conservative
        return False
    return len(ready) > 0


_current: contextvars.ContextVar[Clock] = contextvars.ContextVar("hyperframes_clock")
_MONOTONIC = MonotonicClock()


def current_clock() -> Clock:
    """The clock in effect for the running task (monotonic unless overridden)."""
    return _current.get(_MONOTONIC)


@contextmanager
def use_clock(clock: Clock) -> Iterator[Clock]:
    """Make ``clock`` the current clock for this block and tasks started in it."""
    token = _current.set(clock)
    try:
        yield clock
    finally:
        _current.reset(token)


class Pacer:
    """Spaces recorded timestamps out on a clock, ``speed`` times faster than recorded.

    The ``i``-th :meth:`wait` returns at ``start + (p_i - p_0) / speed`` on the
    clock, where ``p_i`` is the timestamp passed and ``start`` is the clock's
    time at the first call. Due times never go backwards, so out-of-order
    stamps do not reorder what is paced. ``speed=None`` does not wait (one
    checkpoint per call): as fast as the consumer takes. What replays of a
    recording (``Replay``, ``VideoReplay``) pace their frames with.
    """

    def __init__(self, speed: float | None, clock: Clock | None = None) -> None:
        self.speed = speed
        self._clock = clock if clock is not None else current_clock()
        self._started = False
        self._base_clock = self._base_pace = self._last_due = 0

    async def wait(self, pace: int) -> None:
        """Return when the item recorded at ``pace`` (int ns) is due."""
        if self.speed is None:
            await anyio.lowlevel.checkpoint()
            return
        if not self._started:
            self._base_clock, self._base_pace, self._started = self._clock.now(), pace, True
        due = max(self._last_due, self._base_clock + int((pace - self._base_pace) / self.speed))
        self._last_due = due
        await self._clock.sleep_until(due)


async def run_sync(func: Callable[..., T], *args: object, clock: Clock | None = None) -> T:
    """Run blocking ``func(*args)`` in a worker thread, keeping the event loop free.

    While it runs, the clock is marked busy so virtual time does not jump ahead.
    Cancellation waits for the thread to finish (threads cannot be interrupted),
    which keeps resources such as decoders consistent.
    """
    clk = clock if clock is not None else current_clock()
    with clk.busy():
        return await anyio.to_thread.run_sync(func, *args)
