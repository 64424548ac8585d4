"""BatchSizer: the batch-size search, fed synthetic measured times (no clock, no model).

Each cost function gives a batch's processing time from its size; a
simulation asks the sizer for its cap, "runs" a batch of that size (or fewer,
when items arrive too slowly to fill it), and records the time, optionally
with noise from a seeded generator. The properties: the sizer settles on the
size with the best throughput (items per second of processing time), or one
within 5 % of it, in a bounded number of batches; it does so again after the
costs change mid-run; it never settles on a size whose batch exceeds the
latency budget.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from math import log2
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from fusion import Frame
from fusion.errors import ConfigError
from fusion.workers import BatchWorker
from fusion.workers._models import scale_model
from fusion.workers._sizing import BatchSizer, remembered_sizes

MS = 1_000_000
Cost = Callable[[int], float]


def linear(overhead_ms: float, per_item_ms: float) -> Cost:
    """A fixed cost per batch plus a cost per item: the largest batch is best."""
    return lambda n: (overhead_ms + per_item_ms * n) * MS


def superlinear(per_item_ms: float, growth: float) -> Cost:
    """Per-item cost grows with the batch (caches spill): one item is best."""
    return lambda n: per_item_ms * n * (1 + growth * (n - 1)) * MS


def convex(per_item_ms: float, best: int, curvature: float) -> Cost:
    """Per-item cost lowest at ``best`` and rising on both sides (on a log2 scale)."""
    return lambda n: per_item_ms * n * (1 + curvature * (log2(n) - log2(best)) ** 2) * MS


def run(
    sizer: BatchSizer,
    cost: Cost,
    batches: int,
    *,
    noise: float = 0.0,
    seed: int = 0,
    most: int | None = None,
) -> list[int]:
    """Feed ``batches`` batches; returns the sizes run. ``most`` caps what can be queued."""
    rng = random.Random(seed)
    sizes = []
    for _ in range(batches):
        size = min(sizer.limit, most or sizer.limit)
        sizes.append(size)
        t = cost(size) * (1 + rng.uniform(-noise, noise))
        sizer.record(size, round(t))
    return sizes


def per_item(cost: Cost, n: int) -> float:
    return cost(n) / n


def best_size(cost: Cost, max_batch: int, budget: float | None = None) -> int:
    fits = [n for n in range(1, max_batch + 1) if budget is None or cost(n) <= budget]
    return min(fits, key=lambda n: per_item(cost, n))


@pytest.fixture(autouse=True)
def _forget_sizes() -> None:
    # Workers of earlier tests in this process keep the sizes they settled on.
    remembered_sizes.clear()


def test_batch_one_is_found_when_it_is_fastest() -> None:
    sizer = BatchSizer(16)
    run(sizer, superlinear(0.5, 0.1), 200)
    assert sizer.limit == 1
    stats = sizer.statistics()
    assert stats.phase == "exploit"
    assert set(stats.per_item_ns) >= {1, 2, 4}
    # Two sizes in a row over 10 % dearer than the best: no batch of 16 was tried.
    assert 16 not in stats.per_item_ns
    assert stats.per_item_ns[1] == pytest.approx(0.5 * MS)
    assert "best of" in stats.reason
    assert stats.reason.split(": ")[1].startswith("1 at 0.5 ms/item")


def test_the_largest_batch_is_found_when_batching_pays() -> None:
    sizer = BatchSizer(16)
    run(sizer, linear(5, 0.5), 200)
    assert sizer.limit == 16
    assert sizer.statistics().items_per_second[16] == pytest.approx(16 / (13 * MS) * 1e9)


def test_an_interior_optimum_is_refined_between_the_powers_of_two() -> None:
    sizer = BatchSizer(16)
    run(sizer, convex(1.0, 6, 0.5), 300)
    assert sizer.limit == 6  # tried 1, 2, 4, 8, 16, then 6 (between 4 and 8), then 5 and 7
    assert {5, 6, 7} <= set(sizer.statistics().per_item_ns)


def test_max_batch_one_never_explores() -> None:
    sizer = BatchSizer(1)
    run(sizer, linear(1, 1), 10)
    assert sizer.limit == 1
    assert sizer.statistics().explorations == 0


def test_a_load_change_mid_run_is_followed_by_a_new_search() -> None:
    sizer = BatchSizer(16)
    run(sizer, linear(5, 0.5), 200)
    assert sizer.limit == 16
    # Another process takes the cores: per-item work now dominates and grows with the batch.
    run(sizer, superlinear(2.0, 0.2), 300)
    stats = sizer.statistics()
    assert stats.last_trigger == "drift"
    assert stats.explorations == 2
    assert sizer.limit == 1


def test_the_search_runs_again_after_its_period_even_without_drift() -> None:
    sizer = BatchSizer(8, period=1_000 * MS)
    run(sizer, superlinear(1.0, 0.05), 400)  # 400 ms+ of processing after settling
    assert sizer.statistics().explorations == 1
    run(sizer, superlinear(1.0, 0.05), 1_000)
    stats = sizer.statistics()
    assert stats.last_trigger == "period"
    assert stats.explorations >= 2
    assert sizer.limit == 1


def test_items_arriving_too_slowly_to_fill_a_batch_do_not_stall_the_search() -> None:
    sizer = BatchSizer(16)
    run(sizer, linear(5, 0.5), 200, most=3)  # never more than 3 items queued
    assert sizer.phase == "exploit"
    assert sizer.limit == 3
    assert set(sizer.statistics().per_item_ns) == {1, 2, 3}


def test_sizes_over_the_latency_budget_are_not_chosen_or_tried_further() -> None:
    sizer = BatchSizer(64, latency_budget=10 * MS)
    run(sizer, linear(2, 1), 300)  # 2 ms + 1 ms per item: 8 items fit, 16 do not
    assert sizer.limit == 8
    assert 64 not in sizer.statistics().per_item_ns  # 32 was over: 64 not tried


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_batch": 0}, "max_batch must be >= 1"),
        ({"max_batch": 4, "latency_budget": 0}, "latency_budget must be > 0"),
        ({"max_batch": 4, "samples": 0}, "need 1 <= samples <= window"),
        ({"max_batch": 4, "samples": 5, "window": 4}, "need 1 <= samples <= window"),
        ({"max_batch": 4, "drift": 0}, "drift must be > 0"),
        ({"max_batch": 4, "period": 0}, "period must be > 0"),
    ],
)
def test_bad_configuration_is_refused_with_the_reason(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BatchSizer(**kwargs)


def test_an_impossible_measurement_is_refused() -> None:
    with pytest.raises(ValueError, match="a batch of 0 items"):
        BatchSizer(4).record(0, 5)


costs = st.one_of(
    st.builds(linear, st.floats(0.0, 20.0), st.floats(0.05, 5.0)),
    st.builds(superlinear, st.floats(0.05, 5.0), st.floats(0.0, 0.5)),
    st.builds(convex, st.floats(0.05, 5.0), st.integers(1, 64), st.floats(0.05, 2.0)),
)


@settings(max_examples=150, deadline=None)
@given(
    cost=costs,
    max_batch=st.integers(1, 64),
    noise=st.sampled_from([0.0, 0.05]),
    seed=st.integers(0, 2**16),
    descending=st.booleans(),
    step_items=st.sampled_from([1, 16]),
)
def test_it_settles_within_five_percent_of_the_best_throughput(
    cost: Cost, max_batch: int, noise: float, seed: int, descending: bool, step_items: int
) -> None:
    # Either order of search (largest first when told batching pays), whatever the truth.
    sizer = BatchSizer(max_batch, period=10**15, descending=descending, step_items=step_items)
    run(sizer, cost, 40 * (max_batch.bit_length() + 3), noise=noise, seed=seed)
    assert sizer.phase == "exploit"
    best = best_size(cost, max_batch)
    # 5 % noise can mislead by its width on each of two sizes; without noise, 2 % tie rule.
    slack = 1.03 if noise == 0 else 1.03 * (1 + noise) / (1 - noise)
    assert per_item(cost, sizer.limit) <= per_item(cost, best) * slack


@settings(max_examples=100, deadline=None)
@given(
    before=costs,
    after=costs,
    max_batch=st.integers(2, 32),
    budget_ms=st.none() | st.floats(1.0, 200.0),
)
# Found by a random seed: refined around 8 (which the 2 % tie preferred over an untried
# 9), the tie stepped to 7, 3.3 % off the best; refining goes around the least now.
@example(before=linear(0.0, 1.0), after=linear(3.5, 3.0), max_batch=16, budget_ms=31.0)
def test_after_a_change_mid_run_it_settles_again_on_the_new_best(
    before: Cost, after: Cost, max_batch: int, budget_ms: float | None
) -> None:
    budget = None if budget_ms is None else round(budget_ms * MS)
    if budget is not None:
        # The premise of stopping at the first size over the budget: a batch of more
        # items never takes less time (true of models; not of every synthetic cost).
        assume(all(after(n) <= after(n + 1) for n in range(1, max_batch)))
    sizer = BatchSizer(max_batch, latency_budget=budget, period=10**15)
    enough = 40 * (max_batch.bit_length() + 3)
    run(sizer, before, enough)
    first = sizer.statistics().explorations
    run(sizer, after, 2 * enough)
    assert sizer.phase == "exploit"
    fits = [n for n in range(1, max_batch + 1) if budget is None or after(n) <= budget]
    if not fits:
        assert sizer.limit == 1  # nothing fits: the smallest batch
        return
    best = best_size(after, max_batch, budget)
    chosen = sizer.limit
    assert budget is None or after(chosen) <= budget  # an overrun starts a new search
    changed = abs(per_item(after, chosen) / per_item(before, chosen) - 1) > sizer.drift
    if changed or sizer.statistics().explorations > first:
        # A new search ran: it found the new best (or a size within 3 %), within the budget.
        assert budget is None or after(chosen) <= budget
        assert per_item(after, chosen) <= per_item(after, best) * 1.03


async def test_a_worker_reports_the_size_it_chose_and_the_estimates_behind_it() -> None:
    frames = [Frame("cam", i, i, np.full(4, i, np.float32)) for i in range(600)]
    worker = BatchWorker(scale_model(), providers="cpu", max_batch=8)
    results = [r async for r in worker.stream(frames)]
    assert [r.item.seq for r in results] == list(range(600))
    assert all(r.value[0] == 2 * r.item.seq for r in results)
    stats = worker.statistics()
    assert stats.batcher is not None
    sizing = stats.batcher.sizing
    assert sizing is not None
    assert sizing.explorations >= 1
    assert sizing.per_item_ns  # measured sizes, each with its cost per item
    assert all(1 <= s <= 8 and ns > 0 for s, ns in sizing.per_item_ns.items())
    assert 1 <= sizing.limit <= 8
    assert sizing.reason
    assert max(stats.batch_sizes) <= 8

    fixed = BatchWorker(scale_model(), providers="cpu", max_batch=8, adaptive=False)
    assert len([r async for r in fixed.stream(frames[:50])]) == 50
    fixed_stats = fixed.statistics().batcher
    assert fixed_stats is not None
    assert fixed_stats.sizing is None
    assert fixed_stats.limit == 8


def test_each_size_pays_its_first_batch_once_not_once_per_search() -> None:
    sizer = BatchSizer(4, period=30 * MS)
    cost = linear(1, 0.5)
    first = run(sizer, cost, 20)
    # The first search leaves out each size's first batch: 4 batches of 1, of 2, ...
    assert first[:8] == [1, 1, 1, 1, 2, 2, 2, 2]
    for _ in range(100):  # until the period starts the next search
        if sizer.statistics().explorations == 2:
            break
        run(sizer, cost, 1)
    assert sizer.statistics().explorations == 2
    assert sizer.statistics().last_trigger == "period"
    # The session ran these sizes before: every batch is measured, 3 end each step.
    assert run(sizer, cost, 6) == [1, 1, 1, 2, 2, 2]


@settings(max_examples=100, deadline=None)
@given(
    cost=costs,
    max_batch=st.integers(2, 64),
    error=st.floats(-0.15, 0.15),
    noise=st.sampled_from([0.0, 0.05]),
    seed=st.integers(0, 2**16),
)
def test_a_recalled_size_whose_check_holds_is_kept_without_a_search(
    cost: Cost, max_batch: int, error: float, noise: float, seed: int
) -> None:
    best = best_size(cost, max_batch)
    sizer = BatchSizer(max_batch, period=10**15)
    sizer.resume(best, per_item(cost, best) * (1 + error))
    assert sizer.limit == best
    assert sizer.statistics().reason.startswith("recalled")
    sizes = run(sizer, cost, 40, noise=noise, seed=seed)
    assert set(sizes) == {best}  # never searched: no other size was run
    stats = sizer.statistics()
    assert stats.explorations == 0
    assert stats.last_trigger == "recalled"
    assert "checked at" in stats.reason


@settings(max_examples=100, deadline=None)
@given(
    cost=costs,
    max_batch=st.integers(2, 64),
    recalled=st.integers(1, 64),
    factor=st.sampled_from([0.3, 0.6, 1.5, 3.0]),
)
def test_a_recalled_size_that_fails_its_check_starts_the_search(
    cost: Cost, max_batch: int, recalled: int, factor: float
) -> None:
    size = min(recalled, max_batch)
    sizer = BatchSizer(max_batch, period=10**15)
    # Found for other inputs: its cost per item is off by 40 % or more.
    sizer.resume(size, per_item(cost, size) * factor)
    run(sizer, cost, 40 * (max_batch.bit_length() + 3))
    stats = sizer.statistics()
    assert stats.explorations == 1
    assert stats.last_trigger == "recalled"
    assert stats.phase == "exploit"
    assert per_item(cost, sizer.limit) <= per_item(cost, best_size(cost, max_batch)) * 1.03


def test_a_recalled_size_is_checked_against_the_budget_and_the_range() -> None:
    with pytest.raises(ConfigError, match=r"a recalled size must lie in \[1, 8\], got 9"):
        BatchSizer(8).resume(9, MS)
    with pytest.raises(ConfigError, match="need per_item_ns > 0"):
        BatchSizer(8).resume(2, 0)
    sizer = BatchSizer(8, latency_budget=10 * MS, period=10**15)
    sizer.resume(8, 1 * MS)  # 8 ms a batch when found
    run(sizer, linear(0, 1), 10)  # checked: as recalled
    assert sizer.statistics().explorations == 0
    run(sizer, linear(0, 2), 30)  # 16 ms a batch now: over the budget, search again
    assert sizer.statistics().explorations >= 1
    assert sizer.limit * 2 * MS <= 10 * MS


async def test_a_second_worker_of_the_same_model_starts_from_the_size_found() -> None:
    items = [Frame("cam", i, i, np.full(4, i, np.float32)) for i in range(400)]
    first = BatchWorker(scale_model(), providers="cpu", max_batch=8)
    found = None
    for _ in range(10):  # until its search has settled (a stream's end keeps the size)
        assert len([r async for r in first.stream(items)]) == 400
        batcher = first.statistics().batcher
        assert batcher is not None
        found = batcher.sizing
        assert found is not None
        if found.phase == "exploit":
            break
    assert found is not None
    assert found.phase == "exploit"
    assert found.explorations >= 1

    second = BatchWorker(scale_model(), providers="cpu", max_batch=8)
    results = [r async for r in second.stream(items[:100])]
    assert [r.value[0] for r in results] == [2 * i for i in range(100)]
    stats = second.statistics().batcher
    assert stats is not None
    assert stats.sizing is not None
    # It began at the size found; either its check held (no search) or the cost had
    # moved by over a quarter (this model's cost is mostly the worker's own, which the
    # machine's load moves) and it searched.
    assert stats.sizing.last_trigger == "recalled"
    assert stats.sizing.explorations <= 1
    if stats.sizing.explorations == 0:
        assert stats.sizing.reason.startswith("recalled")
        assert stats.sizing.limit == found.limit

    # Another max_batch is other work: it searches for itself.
    other = BatchWorker(scale_model(), providers="cpu", max_batch=4)
    assert len([r async for r in other.stream(items[:100])]) == 100
    other_stats = other.statistics().batcher
    assert other_stats is not None
    assert other_stats.sizing is not None
    assert other_stats.sizing.last_trigger == "start"
    assert other_stats.sizing.explorations == 1


def test_a_size_the_search_flattered_gives_way_to_the_runner_up() -> None:
    sizer = BatchSizer(4, period=10**15)
    batches = [0]

    def cost(n: int) -> float:
        batches[0] += 1
        per_item = {1: 3.0, 2: 1.0, 3: 1.2, 4: 1.0}[n]
        if n == 2:  # cheap while searched (a quiet spell), dearer from then on
            per_item = 0.9 if batches[0] < 20 else 1.5
        return per_item * n * MS

    run(sizer, cost, 20)
    assert sizer.phase == "exploit"
    assert sizer.limit == 2  # chosen on the search's 0.9 ms/item
    run(sizer, cost, 8)  # its first window: 1.5 ms/item, over 4's 1.0 by far
    stats = sizer.statistics()
    assert sizer.limit == 4
    assert stats.reason == "2 ran at 1.5 ms/item after the search, over 4's 1 ms/item: 4 instead"
    assert stats.explorations == 1  # no new search
    run(sizer, cost, 30)
    assert sizer.limit == 4  # once per search: 4 stays


def test_told_batching_pays_the_search_starts_large_and_spares_the_small_sizes() -> None:
    sizer = BatchSizer(16, descending=True)
    sizes = run(sizer, linear(5, 0.5), 200)
    assert sizer.limit == 16
    assert sizes[0] == 16
    tried = set(sizer.statistics().per_item_ns)
    assert {1, 2} & tried == set()  # 8 and 4 both over 10 % dearer than 16: stop
    # Ascending, the same costs try every power of two.
    up = BatchSizer(16)
    run(up, linear(5, 0.5), 200)
    assert {1, 2, 4, 8, 16} <= set(up.statistics().per_item_ns)


def test_told_wrongly_that_batching_pays_batch_one_is_still_found() -> None:
    sizer = BatchSizer(16, descending=True)
    run(sizer, superlinear(0.5, 0.1), 300)
    assert sizer.limit == 1


def test_going_down_sizes_over_the_latency_budget_are_passed_over() -> None:
    sizer = BatchSizer(64, latency_budget=10 * MS, descending=True)
    run(sizer, linear(2, 1), 400)  # 8 items fit, 16 and more do not
    assert sizer.limit == 8


def test_a_small_size_is_tried_for_step_items_items_not_a_few_batches() -> None:
    sizer = BatchSizer(8, period=10**15, step_items=16)
    sizes = run(sizer, linear(1, 0.5), 40)
    # Each size's first batch is left out, then at least 16 items or 3 batches each.
    assert sizes[:17] == [1] * 17
    assert sizes[17:26] == [2] * 9
    assert sizes[26:31] == [4] * 5
    assert sizes[31:35] == [8] * 4
    assert sizer.statistics().samples[1] == sizer.window  # the last 8 of 16 batches
    with pytest.raises(ConfigError, match="step_items must be >= 1"):
        BatchSizer(8, step_items=0)


def slow_spell(cost: Cost, batches: int, factor: float) -> Cost:
    """``cost``, ``factor`` times dearer for the first ``batches`` batches (a load at start)."""
    seen = [0]

    def spelled(n: int) -> float:
        seen[0] += 1
        return cost(n) * (factor if seen[0] <= batches else 1.0)

    return spelled


def test_a_load_that_moves_during_the_search_starts_it_again_once() -> None:
    # tiny_cnn at 448 on a VM at start: 1, 2, 4, 8 measured in a slow spell, 12 and 16
    # after it, and 16 chosen where 1 is best. The first size tried again shows it.
    truth = superlinear(1.0, 0.03)
    sizer = BatchSizer(16, period=10**15, step_items=16)
    run(sizer, slow_spell(truth, 30, 2.0), 400)
    stats = sizer.statistics()
    assert stats.phase == "exploit"
    assert sizer.limit == 1
    assert stats.last_trigger == "unsteady"
    assert stats.explorations == 2
    # Without the second look, the same costs settle on a size the spell flattered.
    plain = BatchSizer(16, period=10**15, step_items=16)
    plain._first_before = 0.0  # as if it could not be tried again: nothing to compare with
    run(plain, slow_spell(truth, 30, 2.0), 400)
    assert plain.limit > 1


def test_a_steady_search_tries_its_first_size_again_and_keeps_its_result() -> None:
    sizer = BatchSizer(8, period=10**15)
    sizes = run(sizer, superlinear(0.5, 0.1), 60)
    # 1, 2, 4 and 8 (each's first batch left out, then three), then 1 again: three batches.
    assert sizes[:16] == [1] * 4 + [2] * 4 + [4] * 4 + [8] * 4
    assert sizes[16:19] == [1, 1, 1]
    stats = sizer.statistics()
    assert sizer.limit == 1
    assert stats.explorations == 1
    assert stats.last_trigger == "start"


def test_a_load_that_keeps_moving_restarts_the_search_once_not_forever() -> None:
    # Every other stretch of 12 batches twice as dear: each search sees the load move.
    seen = [0]

    def swinging(n: int) -> float:
        seen[0] += 1
        return superlinear(1.0, 0.03)(n) * (2.0 if (seen[0] // 12) % 2 == 0 else 1.0)

    sizer = BatchSizer(16, period=10**15, drift=10.0)
    run(sizer, swinging, 600)
    stats = sizer.statistics()
    assert stats.phase == "exploit"
    assert stats.explorations == 2


def test_a_first_size_never_filled_is_not_tried_again() -> None:
    # Largest first, items too few to fill it: 16 was never measured, so there is
    # nothing to compare a second look with, and the search settles all the same.
    sizer = BatchSizer(16, period=10**15, descending=True)
    run(sizer, linear(5, 0.5), 300, most=4)
    stats = sizer.statistics()
    assert stats.phase == "exploit"
    assert 16 not in stats.per_item_ns
    assert sizer.limit == 4
    assert stats.explorations == 1


@settings(max_examples=150, deadline=None)
@given(
    cost=costs,
    max_batch=st.integers(2, 64),
    most=st.integers(1, 64),
    descending=st.booleans(),
    step_items=st.sampled_from([1, 16]),
    spell=st.integers(0, 60),
)
def test_items_too_few_to_fill_a_batch_or_a_moving_load_never_stall_the_search(
    cost: Cost, max_batch: int, most: int, descending: bool, step_items: int, spell: int
) -> None:
    # Whatever arrives and however the load moves at the start, the search ends on a
    # size that can be formed, in a bounded number of batches.
    sizer = BatchSizer(max_batch, period=10**15, descending=descending, step_items=step_items)
    run(sizer, slow_spell(cost, spell, 2.0), 80 * (max_batch.bit_length() + 3), most=most)
    assert sizer.phase == "exploit"
    assert 1 <= sizer.limit <= max_batch
    assert sizer.statistics().explorations <= 2
