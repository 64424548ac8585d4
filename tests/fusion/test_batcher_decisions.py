"""DynamicBatcher and ReorderBuffer: pure decisions driven by plain integers."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion.errors import UsageError
from fusion.workers import DynamicBatcher, ReorderBuffer

MS = 1_000_000


def test_batch_is_released_when_max_batch_items_are_queued() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(3, 10 * MS)
    for i in range(2):
        b.push(i, 0)
    assert b.poll(0) is None
    b.push(2, 1)
    batch = b.poll(1)
    assert batch is not None
    assert batch.items == [0, 1, 2]
    assert batch.reason == "full"


def test_lone_item_is_released_when_its_delay_runs_out_not_before() -> None:
    b: DynamicBatcher[str] = DynamicBatcher(8, 5 * MS)
    b.push("a", 100)
    assert b.next_wakeup(100) == 100 + 5 * MS
    assert b.poll(100 + 5 * MS - 1) is None
    batch = b.poll(100 + 5 * MS)
    assert batch is not None
    assert (batch.items, batch.reason, batch.oldest_wait) == (["a"], "delay", 5 * MS)


def test_zero_delay_releases_whatever_is_queued_at_once() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(4)
    b.push(0, 0)
    b.push(1, 0)
    batch = b.poll(0)
    assert batch is not None
    assert batch.items == [0, 1]


def test_largest_preferred_size_is_released_without_waiting() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(8, 10 * MS, preferred_sizes=(2, 4))
    for i in range(5):
        b.push(i, 0)
    batch = b.poll(0)
    assert batch is not None
    assert (batch.items, batch.reason) == ([0, 1, 2, 3], "preferred")
    assert b.poll(0) is None  # one item left, no preferred size of 1


def test_close_drains_the_remainder_without_waiting() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(8, 10 * MS)
    b.push(0, 0)
    b.close()
    assert b.next_wakeup(0) == 0
    batch = b.poll(0)
    assert batch is not None
    assert batch.reason == "drain"
    assert b.done


def test_items_past_their_deadline_expire_at_dequeue_and_are_counted() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(8, 10 * MS)
    b.push(0, 0, deadline=2 * MS)
    b.push(1, 1 * MS, deadline=None)
    b.push(2, 1 * MS, deadline=20 * MS)
    assert b.poll(10 * MS) is None  # item 1 has waited 9 ms of its 10
    batch = b.poll(11 * MS)
    assert batch is not None
    assert batch.items == [1, 2]
    assert [q.item for q in b.take_expired()] == [0]
    assert b.take_expired() == []
    assert b.statistics().expired == 1


def test_push_refuses_when_full_after_close_and_when_time_goes_backwards() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(2, capacity=2)
    b.push(0, 5)
    with pytest.raises(ValueError, match="time went backwards"):
        b.push(1, 4)
    b.push(1, 5)
    assert b.full
    with pytest.raises(UsageError, match="queue is full"):
        b.push(2, 6)
    b.close()
    with pytest.raises(UsageError, match="after close"):
        b.push(3, 7)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_batch": 0}, "max_batch must be >= 1"),
        ({"max_batch": 4, "max_delay": -1}, "max_delay must be >= 0"),
        ({"max_batch": 4, "preferred_sizes": (8,)}, r"preferred batch sizes must lie in \[1, "),
        ({"max_batch": 4, "capacity": 2}, r"capacity \(2\) must be >= max_batch"),
        ({"max_batch": 4, "latency_budget": 0}, "latency_budget must be > 0"),
    ],
)
def test_bad_configuration_is_refused_with_the_reason(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DynamicBatcher(**kwargs)


def test_adaptive_mode_caps_batches_at_the_measured_best_size_within_the_budget() -> None:
    # Per batch: 1 ms + 1 ms per item, so bigger is better per item, but the
    # budget of 6 ms fits 5 items at most. (The search itself: test_batch_sizing.py.)
    b: DynamicBatcher[int] = DynamicBatcher(8, latency_budget=6 * MS)
    assert b.sizer is not None
    assert b.limit == 1  # the search starts at one item
    for _ in range(100):
        size = b.limit
        b.record(size, (1 + size) * MS)
    assert b.limit == 5
    sizing = b.statistics().sizing
    assert sizing is not None
    assert sizing.phase == "exploit"
    assert 8 not in sizing.per_item_ns or 8 * sizing.per_item_ns[8] > 6 * MS
    for i in range(12):  # released batches follow the cap
        b.push(i, i)
    batch = b.poll(12)
    assert batch is not None
    assert len(batch) == 5


def test_without_a_sizer_the_limit_is_max_batch_and_record_is_ignored() -> None:
    b: DynamicBatcher[int] = DynamicBatcher(8)
    b.record(8, 50 * MS)
    assert b.limit == 8
    assert b.statistics().sizing is None


def simulate(
    arrivals: list[int], services: list[int], max_batch: int, max_delay: int
) -> list[tuple[int, list[int], int]]:
    """A caller with one runner: polls whenever it is free and something may be due.

    Returns (formed_at, item arrival times, service time) per batch.
    """
    b: DynamicBatcher[int] = DynamicBatcher(
        max_batch, max_delay, capacity=max(len(arrivals), max_batch)
    )
    out: list[tuple[int, list[int], int]] = []
    t, i, free_at, k = 0, 0, 0, 0
    while not b.done:
        while i < len(arrivals) and arrivals[i] <= t:
            b.push(arrivals[i], arrivals[i])
            i += 1
        if i == len(arrivals):
            b.close()
        if t >= free_at:
            batch = b.poll(t)
            if batch is not None:
                service = services[k % len(services)]
                k += 1
                out.append((t, [q.arrived for q in batch.entries], service))
                free_at = t + service
                continue
        events = [e for e in (b.next_wakeup(t), free_at) if e is not None and e > t]
        if i < len(arrivals):
            events.append(arrivals[i])
        t = min(events) if events else t
    return out


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.integers(0, 8 * MS), min_size=1, max_size=60),
    services=st.lists(st.integers(0, 6 * MS), min_size=1, max_size=10),
    max_batch=st.integers(1, 8),
    max_delay=st.integers(0, 5 * MS),
)
def test_batches_never_exceed_max_batch_and_release_everything_in_order(
    gaps: list[int], services: list[int], max_batch: int, max_delay: int
) -> None:
    arrivals = [sum(gaps[: k + 1]) for k in range(len(gaps))]
    batches = simulate(arrivals, services, max_batch, max_delay)
    assert [a for _, items, _ in batches for a in items] == arrivals
    assert all(1 <= len(items) <= max_batch for _, items, _ in batches)


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.integers(3 * MS, 8 * MS), min_size=1, max_size=60),
    services=st.lists(st.integers(0, 3 * MS), min_size=1, max_size=10),
    max_batch=st.integers(1, 8),
    max_delay=st.integers(0, 5 * MS),
)
def test_without_overload_no_item_waits_past_max_delay_plus_one_batch(
    gaps: list[int], services: list[int], max_batch: int, max_delay: int
) -> None:
    # No overload: every batch runs faster than items arrive.
    arrivals = [sum(gaps[: k + 1]) for k in range(len(gaps))]
    batches = simulate(arrivals, services, max_batch, max_delay)
    for formed_at, items, _ in batches:
        # FIFO, so the batch's first item waited longest: at most max_delay for
        # the batch to form plus the one batch running when it became due.
        assert formed_at - items[0] <= max_delay + max(services)


@given(n=st.integers(1, 50), seed=st.integers(0, 2**32 - 1), window=st.integers(1, 10))
def test_reorder_buffer_releases_in_admission_order_whatever_the_completion_order(
    n: int, seed: int, window: int
) -> None:
    rng = random.Random(seed)
    buf: ReorderBuffer[int] = ReorderBuffer(window)
    in_flight: list[int] = []
    released: list[int] = []
    admitted = 0
    while len(released) < n:
        if admitted < n and buf.can_admit and (not in_flight or rng.random() < 0.6):
            in_flight.append(buf.admit())
            admitted += 1
        else:
            seq = in_flight.pop(rng.randrange(len(in_flight)))
            released += buf.complete(seq, seq)
        assert buf.outstanding <= window
    assert released == list(range(n))


def test_reorder_buffer_refuses_beyond_its_window_and_unknown_seqs() -> None:
    buf: ReorderBuffer[str] = ReorderBuffer(2)
    a, b = buf.admit(), buf.admit()
    assert not buf.can_admit
    with pytest.raises(UsageError, match="reorder window full: 2 items outstanding"):
        buf.admit()
    assert buf.complete(b, "b") == []
    with pytest.raises(ValueError, match="seq 1 completed twice"):
        buf.complete(b, "b")
    with pytest.raises(ValueError, match=r"seq 7 is not outstanding \(outstanding: 0..1\)"):
        buf.complete(7, "x")
    assert buf.complete(a, "a") == ["a", "b"]
    assert buf.high_water == 1


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.integers(0, 3 * MS), st.one_of(st.none(), st.integers(0, 6 * MS)), st.booleans()
        ),
        min_size=1,
        max_size=80,
    ),
    max_batch=st.integers(1, 6),
)
def test_every_item_is_either_batched_before_its_deadline_or_expired_once(
    steps: list[tuple[int, int | None, bool]], max_batch: int
) -> None:
    b: DynamicBatcher[int] = DynamicBatcher(max_batch, 2 * MS, capacity=100)
    deadlines: dict[int, int | None] = {}
    batched: list[int] = []
    expired: list[int] = []
    t = 0

    def poll() -> None:
        batch = b.poll(t)
        for q in b.take_expired():
            assert q.deadline is not None
            assert q.deadline < t
            expired.append(q.item)
        if batch is not None:
            for q in batch.entries:
                assert q.deadline is None or q.deadline >= t
            batched.extend(batch.items)

    for i, (gap, budget, polls) in enumerate(steps):
        t += gap
        deadlines[i] = None if budget is None else t + budget
        b.push(i, t, deadlines[i])
        if polls:
            poll()
    b.close()
    while not b.done:
        t += MS
        poll()
    assert sorted(batched + expired) == list(range(len(steps)))
    assert b.statistics().expired == len(expired)


@given(
    runs=st.lists(st.integers(1, 6), min_size=1, max_size=12),
    seed=st.integers(0, 2**32 - 1),
    window=st.integers(6, 40),
)
def test_reorder_runs_admitted_and_completed_whole_leave_as_one_by_one_would(
    runs: list[int], seed: int, window: int
) -> None:
    # complete_run is complete_many with consecutive numbers: the same releases, the
    # same state, whether the run is next in line (released in one step) or not.
    rng = random.Random(seed)
    whole: ReorderBuffer[int] = ReorderBuffer(window)
    single: ReorderBuffer[int] = ReorderBuffer(window)
    admitted: list[tuple[int, int]] = []
    for n in runs:
        if whole.outstanding + n > window:
            with pytest.raises(UsageError, match="reorder window full"):
                whole.admit_many(n)
            break
        first = whole.admit_many(n)
        assert [single.admit() for _ in range(n)] == list(range(first, first + n))
        admitted.append((first, n))
    rng.shuffle(admitted)
    for first, n in admitted:
        values = list(range(first, first + n))
        assert whole.complete_run(first, values) == single.complete_many((v, v) for v in values)
        assert whole.outstanding == single.outstanding
    assert whole.outstanding == 0


def test_push_many_queues_all_or_nothing() -> None:
    batcher: DynamicBatcher[int] = DynamicBatcher(4, capacity=5)
    batcher.push_many([0, 1, 2], 10, deadline=50)
    with pytest.raises(UsageError, match="2 free places"):
        batcher.push_many([3, 4, 5], 11)
    with pytest.raises(ValueError, match="time went backwards"):
        batcher.push_many([3], 9)
    assert len(batcher) == 3
    batcher.push_many([3, 4], 12)
    batch = batcher.poll(12)
    assert batch is not None
    assert [q.item for q in batch.entries] == [0, 1, 2, 3]
    assert [q.deadline for q in batch.entries] == [50, 50, 50, None]
    assert batcher.poll(60) is not None  # 4 queued at 12, no deadline: released, not expired
    assert batcher.take_expired() == []
    batcher.close()
    with pytest.raises(UsageError, match="after close"):
        batcher.push_many([9], 70)
