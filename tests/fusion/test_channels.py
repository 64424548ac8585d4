"""Bounded channels: overflow policies and counters."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import open_channel


class TestChannel:
    async def test_block_policy_waits_for_room_and_loses_nothing(self) -> None:
        send, receive = open_channel(2, "block", name="edge")
        got: list[int] = []

        async def consume() -> None:
            with receive:
                async for item in receive:
                    got.append(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            async with send:
                for i in range(100):
                    await send.send(i)
        assert got == list(range(100))
        stats = send.statistics()
        assert (stats.sent, stats.received, stats.dropped_total) == (100, 100, 0)
        assert stats.high_water <= 2

    def test_block_policy_send_nowait_raises_would_block_when_full(self) -> None:
        send, receive = open_channel(1, "block")
        assert send.send_nowait(1)
        with pytest.raises(anyio.WouldBlock):
            send.send_nowait(2)
        send.close()
        receive.close()

    def test_drop_oldest_keeps_the_newest_items_and_reports_each_drop(self) -> None:
        dropped: list[tuple[int, str]] = []
        send, receive = open_channel(3, "drop_oldest", on_drop=lambda i, r: dropped.append((i, r)))
        for i in range(10):
            assert send.send_nowait(i)
        assert [receive.receive_nowait() for _ in range(3)] == [7, 8, 9]
        assert [i for i, _ in dropped] == list(range(7))
        stats = receive.statistics()
        assert stats.dropped == {"overflow": 7}
        assert (stats.depth, stats.high_water) == (0, 3)
        send.close()
        receive.close()

    def test_drop_newest_refuses_new_items_when_full(self) -> None:
        send, receive = open_channel(2, "drop_newest")
        results = [send.send_nowait(i) for i in range(5)]
        assert results == [True, True, False, False, False]
        assert [receive.receive_nowait() for _ in range(2)] == [0, 1]
        assert send.statistics().dropped == {"overflow": 3}
        send.close()
        receive.close()

    @pytest.mark.parametrize(
        ("capacity", "overflow", "message"),
        [(0, "block", "capacity must be >= 1"), (2, "spill", "overflow must be one of")],
    )
    def test_bad_arguments_are_refused(self, capacity: int, overflow: str, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            open_channel(capacity, overflow)  # type: ignore[arg-type]


@given(
    capacity=st.integers(1, 8),
    overflow=st.sampled_from(["drop_oldest", "drop_newest"]),
    ops=st.lists(st.booleans(), max_size=200),
)
def test_counters_always_balance(capacity: int, overflow: str, ops: list[bool]) -> None:
    """sent + dropped-newest == offered; depth == sent - received - evicted <= capacity."""
    send, receive = open_channel(capacity, overflow)  # type: ignore[arg-type]
    offered = taken = 0
    for is_send in ops:
        if is_send:
            send.send_nowait(offered)
            offered += 1
        else:
            try:
                receive.receive_nowait()
                taken += 1
            except anyio.WouldBlock:
                pass
        stats = send.statistics()
        assert 0 <= stats.depth <= capacity
        assert stats.high_water <= capacity
        assert stats.received == taken
        assert stats.depth + stats.received + stats.dropped_total == offered
    send.close()
    receive.close()


@given(
    capacity=st.integers(1, 8),
    overflow=st.sampled_from(["drop_oldest", "drop_newest"]),
    batches=st.lists(st.integers(0, 12), max_size=20),
    takes=st.lists(st.integers(1, 10), max_size=20),
)
def test_a_batch_moves_as_its_items_would_one_by_one(
    capacity: int, overflow: str, batches: list[int], takes: list[int]
) -> None:
    """send_many == send item by item (same items kept, same drops, same counters);
    receive_batch takes what is queued, in order, at most its limit."""

    async def run() -> None:
        one, one_rx = open_channel(capacity, overflow)  # type: ignore[arg-type]
        many, many_rx = open_channel(capacity, overflow)  # type: ignore[arg-type]
        n = 0
        for size, limit in zip(batches, [*takes, *[1] * len(batches)], strict=False):
            items = list(range(n, n + size))
            n += size
            accepted = await many.send_many(items)
            assert accepted == sum([await one.send(i) for i in items])
            if overflow == "drop_newest":  # refused items are the batch's tail
                assert many.statistics().dropped.get("overflow", 0) >= size - accepted
            expected: list[int] = []
            for _ in range(limit):
                try:
                    expected.append(one_rx.receive_nowait())
                except anyio.WouldBlock:
                    break
            if expected:
                assert await many_rx.receive_batch(limit) == expected
            else:
                with pytest.raises(anyio.WouldBlock):
                    many_rx.receive_nowait()
            assert many.statistics() == one.statistics()
        for end in (one, one_rx, many, many_rx):
            end.close()

    anyio.run(run)


async def test_send_many_waits_for_room_with_block_and_receive_batch_ends_at_the_end() -> None:
    send, receive = open_channel(3, "block", name="edge")
    got: list[list[int]] = []

    async def consume() -> None:
        with receive:
            while True:
                try:
                    got.append(await receive.receive_batch(4))
                except anyio.EndOfStream:
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        async with send:
            for start in range(0, 100, 10):
                assert await send.send_many(list(range(start, start + 10))) == 10
    assert [i for batch in got for i in batch] == list(range(100))
    assert all(1 <= len(batch) <= 4 for batch in got)
    stats = send.statistics()
    assert (stats.sent, stats.received, stats.dropped_total, stats.high_water) == (100, 100, 0, 3)
