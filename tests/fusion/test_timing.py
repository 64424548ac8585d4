"""Runtime clocks: the virtual clock advances only when told, or jumps when idle."""

from __future__ import annotations

import time

import anyio
import pytest

from fusion import MonotonicClock, VirtualClock, current_clock, run_sync, use_clock
from fusion._timing import Pacer


class TestVirtualClock:
    async def test_sleepers_wake_in_deadline_order_when_advanced(self) -> None:
        clock = VirtualClock()
        woke: list[tuple[str, int]] = []

        async def sleeper(name: str, deadline: int) -> None:
            await clock.sleep_until(deadline)
            woke.append((name, clock.now()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(sleeper, "late", 300)
            tg.start_soon(sleeper, "early", 100)
            await anyio.wait_all_tasks_blocked()
            clock.advance(50)
            await anyio.wait_all_tasks_blocked()
            assert woke == []
            clock.advance(250)
        assert woke == [("early", 300), ("late", 300)]

    def test_time_never_goes_backwards(self) -> None:
        clock = VirtualClock(start=10)
        with pytest.raises(ValueError, match="cannot go backwards"):
            clock.advance(-1)
        clock.advance_to(5)
        assert clock.now() == 10

    async def test_autojump_runs_an_hour_of_sleeps_without_waiting(self) -> None:
        clock = VirtualClock()
        started = time.monotonic()
        async with clock.autojump():
            for _ in range(3600):
                await clock.sleep_until(clock.now() + 1_000_000_000)
        assert clock.now() == 3600 * 1_000_000_000
        assert time.monotonic() - started < 5  # an hour of virtual time

    async def test_autojump_waits_for_thread_work_marked_busy(self) -> None:
        clock = VirtualClock()
        results: list[int] = []

        def slow() -> int:
            time.sleep(0.05)
            return clock.now()

        async def timer() -> None:
            await clock.sleep_until(1_000)
            results.append(-1)

        with use_clock(clock):
            async with clock.autojump(), anyio.create_task_group() as tg:
                tg.start_soon(timer)
                results.append(await run_sync(slow))
        assert results == [0, -1]  # the thread saw time 0: no jump while it ran


async def test_current_clock_defaults_to_monotonic_and_follows_use_clock() -> None:
    assert isinstance(current_clock(), MonotonicClock)
    clock = VirtualClock()
    with use_clock(clock):
        assert current_clock() is clock

        async def child() -> None:
            assert current_clock() is clock

        async with anyio.create_task_group() as tg:
            tg.start_soon(child)
    assert isinstance(current_clock(), MonotonicClock)


class TestPacer:
    async def test_stamps_are_due_at_their_scaled_offsets_and_never_earlier_than_the_last(
        self,
    ) -> None:
        clock = VirtualClock(start=1_000)
        pacer = Pacer(2.0, clock)
        woke: list[int] = []
        async with clock.autojump():
            for stamp in [50, 250, 150, 650]:  # 150 arrives out of order
                await pacer.wait(stamp)
                woke.append(clock.now())
        assert woke == [1_000, 1_100, 1_100, 1_300]

    async def test_no_speed_does_not_wait(self) -> None:
        clock = VirtualClock()
        pacer = Pacer(None, clock)
        for stamp in [0, 10**12]:
            await pacer.wait(stamp)
        assert clock.now() == 0
