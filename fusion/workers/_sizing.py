"""Which batch size runs fastest, found by measuring; sans-I/O.

Theory of operation
-------------------
Whether batching pays depends on the model, the device and the load: on a
GPU a batch of 16 can cost little more than a batch of 1, while a small CNN
on a busy 2-core CPU may run fastest one item at a time (larger batches spill
the caches and gain nothing). :class:`BatchSizer` does not guess: it is told
the size and the measured processing time of every batch
(:meth:`BatchSizer.record`) and answers with the batch-size cap to use now
(:attr:`BatchSizer.limit`). It never reads a clock; every decision follows
from the numbers fed in, so it is tested with synthetic cost functions.

**Estimates.** Per batch size, the time per item (processing ns / size) of its
last ``window`` batches; the estimate is their median, so one batch slowed by
another process does not move it. Each size's first batch ever is left out (a
model's first run of a shape allocates; a later search does not pay it again).

**Explore.** The sizes to try are the powers of two up to ``max_batch`` and
``max_batch`` itself, smallest first, or largest first when told batching
pays (``descending``: the worker's layout probe found ``max_batch`` much
cheaper per item than 1; then the small sizes, dearest per item, are the
ones the stop below spares). Each is tried for ``samples`` batches
of that size, and for at least ``step_items`` items (a small size's few batches
are a few items: the worker asks for 16, as one item's time varies more than a
batch's, and three batches of 1 once put a size 6 % dearer than 4 on a par with
it), a step also ending after three times as many batches of any size (when
items arrive too slowly to fill a batch of that size, it cannot be had
anyway). Trying stops at the first size whose whole batch took longer than
``latency_budget`` (a larger batch only takes longer; going down, the sizes
above it are skipped), and once the last two sizes tried both cost over 10 %
more per item than the best so far (the time per item has passed its
minimum; trying batches of 64 where 2 is best would cost more than the
search saves).

**Refine.** The best size so far (least time per item, among sizes whose batch
fits the latency budget; the tie rule below is not applied here) is compared
with the sizes halfway to its tried neighbours (best 4 of 1, 2, 4, 8, 16: then
3 and 6; if 6 wins, 5 and 7), until no untried size lies between the best and
its neighbours.

**Again, the first.** Before settling, the search tries the size it tried first
once more, if it measured it (the estimate it had is put aside): sizes are tried
one after another, so a load that moves during the search (the first seconds of
a process: other workers starting, a neighbour on the host) makes the early
sizes look dearer or cheaper than the late ones for no fault of theirs
(tiny_cnn at 448: 1, 2, 4 and 8 measured 5.8-6.3 ms/item at the start, 12 and
16 3.4-3.9 a second later, where 1 runs at 2.8). If the first size's two
estimates are more than 25 % apart, the search starts again (``unsteady``),
once; else the fresh estimate stands in the comparison.

**Exploit.** The best size is the cap. With a latency budget, a size within 2 %
of the best per-item time that is smaller wins (the same throughput, less
latency); without one, the least per-item time. Its first
``window`` batches confirm it: if their median per item is over 10 % above the
runner-up's estimate (the search's few batches flattered it, a tie broken by
noise), the runner-up becomes the cap, once per search.

**Recalled.** :meth:`BatchSizer.resume` starts from a size found before (by
another worker of the same model in this process): the cap is that size at
once, and the first ``window`` batches check it. If their median per item is
within ``recall_tolerance`` of the recalled estimate the size is kept and no
search runs; otherwise (other inputs, another load) the search starts.

**Again.** Exploration starts over (the estimates cleared) when the chosen
size's estimate (the median of its last ``window`` batches) stays more than
``drift`` away from its median over its first ``window`` batches after the
search, for ``window`` batches in a row
(the load changed: another process took the cores, the input got larger), and
when its batches no longer fit the latency budget, and after every
``period`` ns of recorded processing time, since a change that leaves the
chosen size's cost alone can still make another size better.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from statistics import median
from typing import Literal

from fusion.errors import ConfigError

Phase = Literal["explore", "refine", "exploit"]

_TIE = 1.02  # with a latency budget, a smaller size within 2 % of the best is preferred
_CONFIRM = 1.1  # the chosen size's first window over the runner-up's estimate by this: swap
_UNSTEADY = 0.25  # the first size's estimates before and after the search this far apart


@dataclass(frozen=True, slots=True)
class SizerStatistics:
    """What a :class:`BatchSizer` chose and why."""

    limit: int
    """The batch-size cap in force now."""
    phase: str
    """``explore`` (trying the powers of two), ``refine`` (sizes between) or ``exploit``."""
    reason: str
    """Why the cap is what it is, in words (e.g. ``best of 6 sizes: 2 at 0.49 ms/item``)."""
    per_item_ns: dict[int, float] = field(default_factory=dict)
    """Per batch size: the median processing time per item (ns) of its recent batches."""
    samples: dict[int, int] = field(default_factory=dict)
    """Per batch size: how many batches the estimate rests on."""
    explorations: int = 0
    """Searches started: the first one, then one per drift, budget overrun, period or
    unsteady search."""
    last_trigger: str = "start"
    """What started the current search: ``start``, ``drift``, ``budget``, ``period``,
    ``unsteady`` (the load moved during the last search) or ``recalled`` (a recalled
    size's check failed); ``recalled`` too while a recalled size is in use without a
    search."""

    @property
    def items_per_second(self) -> dict[int, float]:
        """The estimates as throughput: items per second of processing time, per size."""
        return {s: 1e9 / ns for s, ns in self.per_item_ns.items() if ns > 0}


class BatchSizer:
    """Measures each batch size's processing time per item and caps batches at the best one.

    Plain, synchronous, no clock: feed :meth:`record` after each batch, read
    :attr:`limit` before forming the next one. ``latency_budget`` (ns) excludes
    sizes whose batch takes longer; ``period`` (ns of recorded processing time)
    is how often the search is run again; ``drift`` the relative change of the
    chosen size's estimate that starts it again at once; ``descending`` tries the
    largest sizes first (batching is known to pay); ``samples`` and ``step_items``
    the batches and items each size is tried for.
    """

    def __init__(
        self,
        max_batch: int,
        *,
        latency_budget: int | None = None,
        samples: int = 3,
        step_items: int = 1,
        window: int = 8,
        drift: float = 0.5,
        period: int = 30_000_000_000,
        descending: bool = False,
    ) -> None:
        if max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
        if latency_budget is not None and latency_budget <= 0:
            raise ConfigError(f"latency_budget must be > 0 ns, got {latency_budget}")
        if samples < 1 or window < samples:
            raise ConfigError(
                f"need 1 <= samples <= window, got samples={samples}, window={window}"
            )
        if step_items < 1:
            raise ConfigError(f"step_items must be >= 1, got {step_items}")
        if not drift > 0:
            raise ConfigError(f"drift must be > 0, got {drift}")
        if period <= 0:
            raise ConfigError(f"period must be > 0 ns, got {period}")
        self.max_batch = max_batch
        self.latency_budget = latency_budget
        self.samples = samples
        self.step_items = step_items
        self.window = window
        self.drift = drift
        self.period = period
        self.descending = descending
        self._costs: dict[int, deque[float]] = {}
        self._explorations = 0
        self._trigger = "start"
        self._limit = 1
        self._phase: Phase = "exploit"
        self._reason = "one item per batch: max_batch is 1"
        self._plan: list[int] = []
        self._step_hits = 0  # batches of the size being tried, in this step
        self._step_seen = 0  # batches of any size, in this step
        self._reference = 0.0  # the chosen size's median over its first window, exploiting
        self._since = 0  # processing ns recorded since the search ended
        self._fitted = True  # the chosen size fitted the latency budget when chosen
        self._strikes = 0  # batches in a row whose recent median was out of the drift band
        self._met: set[int] = set()  # sizes whose first batch ever was seen (left out)
        self._recalled = 0.0  # a recalled size's per-item estimate, until its check
        self._tolerance = 0.25
        self._runner_up: tuple[int, float] | None = None  # second best of the last search
        self._tried: list[int] = []  # the sizes this search tried, in order
        # The first size's estimate while it is tried again; None: not tried again yet
        # in this search, 0.0: it could not be (never measured).
        self._first_before: float | None = None
        self._recent: deque[float] = deque(maxlen=window)  # the chosen size, exploiting
        if max_batch > 1:
            self._start("start")

    # -- the answer ---------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The largest batch to form now."""
        return self._limit

    @property
    def phase(self) -> Phase:
        return self._phase

    def estimate(self, size: int) -> float | None:
        """Median processing ns per item of ``size``'s recent batches (None: never seen)."""
        costs = self._costs.get(size)
        return median(costs) if costs else None

    def statistics(self) -> SizerStatistics:
        return SizerStatistics(
            limit=self._limit,
            phase=self._phase,
            reason=self._reason,
            per_item_ns={s: median(c) for s, c in sorted(self._costs.items()) if c},
            samples={s: len(c) for s, c in sorted(self._costs.items()) if c},
            explorations=self._explorations,
            last_trigger=self._trigger,
        )

    def resume(self, size: int, per_item_ns: float, *, tolerance: float = 0.25) -> None:
        """Use ``size``, found before at ``per_item_ns`` per item, without a search.

        The first ``window`` batches of it check the estimate: if their median per
        item is more than ``tolerance`` (relative) away, the search starts. Call it
        before recording anything."""
        if not 1 <= size <= self.max_batch:
            raise ConfigError(f"a recalled size must lie in [1, {self.max_batch}], got {size}")
        if not per_item_ns > 0 or not tolerance > 0:
            raise ConfigError(f"need per_item_ns > 0 and tolerance > 0, got {per_item_ns}")
        if self.max_batch == 1:
            return
        self._settle(size, f"recalled: {size} at {per_item_ns / 1e6:.3g} ms/item, checking")
        budget = self.latency_budget
        self._fitted = budget is None or per_item_ns * size <= budget
        self._trigger = "recalled"
        self._explorations = 0  # the search begun at construction never ran
        self._recalled = per_item_ns
        self._tolerance = tolerance
        self._met.add(size)  # the session ran this size for whoever chose it

    # -- the measurements -----------------------------------------------------------

    def record(self, size: int, ns: int) -> None:
        """A batch of ``size`` items took ``ns`` of processing time; update the cap."""
        if size < 1 or ns < 0:
            raise ValueError(f"a batch of {size} items cannot take {ns} ns")
        if size not in self._met:
            # A size's first batch is not measured: the model's first run of a shape
            # allocates (its sessions keep the shape's plan, so only once).
            self._met.add(size)
            if self._phase != "exploit":
                self._step_seen += 1
            return
        costs = self._costs.get(size)
        if costs is None:
            costs = self._costs[size] = deque(maxlen=self.window)
        costs.append(ns / size)
        if self.max_batch == 1:
            return
        if self._phase == "exploit":
            self._watch(size, ns)
            return
        self._step_seen += 1
        if size == self._limit:
            self._step_hits += 1
            over = self.latency_budget is not None and ns > self.latency_budget
            if over and self._phase == "explore" and not self.descending:
                # A larger batch only takes longer: nothing above this size fits.
                self._plan = [s for s in self._plan if s < size]
        needed = max(self.samples, -(-self.step_items // self._limit))
        if self._step_hits >= needed or self._step_seen >= 3 * needed:
            self._next_step()

    # -- the search -------------------------------------------------------------------

    def _start(self, trigger: str) -> None:
        self._explorations += 1
        self._trigger = trigger
        self._costs.clear()
        self._tried.clear()
        self._recalled = 0.0
        self._since = 0
        self._first_before = None
        sizes = {1 << k for k in range(self.max_batch.bit_length()) if 1 << k <= self.max_batch}
        self._plan = sorted(sizes | {self.max_batch}, reverse=self.descending)
        self._phase = "explore"
        self._try(self._plan.pop(0))

    def _try(self, size: int) -> None:
        self._tried.append(size)
        self._limit = size
        self._step_hits = self._step_seen = 0
        self._reason = f"{self._phase}: trying batches of {size}"

    def _next_step(self) -> None:
        if self._phase == "explore" and self._plan and self._past_best():
            self._plan = []  # the time per item rises past its minimum: further is worse
        if self._plan:
            self._try(self._plan.pop(0))
            return
        best = self._best()
        if best is None:  # nothing measured that fits: the smallest batch is the safest
            self._settle(1, "no size measured within the latency budget")
            return
        # Refined around the least time per item itself, not the smaller size the 2 %
        # tie prefers: else the tie could step away from an untried better size twice
        # (7 within 2 % of 8, 8 within 2 % of 9 untried: 3.3 % off the best).
        between = self._between(self._best(tie=1.0) or best)
        if between:
            self._phase = "refine"
            self._plan = between
            self._try(self._plan.pop(0))
            return
        if self._again_first():
            return
        tried = len([s for s, c in self._costs.items() if c])
        per_item = self.estimate(best) or 0.0
        self._settle(best, f"best of {tried} sizes: {best} at {per_item / 1e6:.3g} ms/item")
        others = {
            s: self.estimate(s) or 0.0
            for s, c in self._costs.items()
            if s != best and len(c) >= min(2, self.samples) and self._fits(s)
        }
        if others:
            runner_up = min(others, key=others.__getitem__)
            self._runner_up = (runner_up, others[runner_up])

    def _again_first(self) -> bool:
        """Try the search's first size again before settling; once tried, start the search
        over if its two estimates differ by more than 25 % (once). True while trying."""
        if len(set(self._tried)) < 2:
            return False
        first = self._tried[0]
        before = self._first_before
        if before is None:
            before = self._first_before = self.estimate(first) or 0.0
            if not before:  # never measured (items too few to fill it): no comparison
                return False
            self._costs[first].clear()
            self._phase = "refine"
            self._try(first)
            self._reason = f"refine: trying batches of {first} again, as at the start"
            return True
        now = self.estimate(first)
        again = self._trigger != "unsteady"  # an unsteady search starts once more, not twice
        if again and before and now and abs(now / before - 1) > _UNSTEADY:
            self._start("unsteady")
            return True
        return False

    def _settle(self, size: int, reason: str) -> None:
        self._phase = "exploit"
        self._fitted = self._fits(size)  # if not, nothing did: no new search for the budget
        self._limit = size
        self._reason = reason
        self._reference = 0.0  # taken from the next window of batches (see _watch)
        self._since = 0
        self._strikes = 0
        self._recent.clear()
        self._runner_up = None

    def _past_best(self) -> bool:
        """The last two sizes tried both cost over 10 % more per item than the best."""
        tried = [s for s in self._tried if self.estimate(s) is not None]
        best = self._best()
        if len(tried) < 3 or best is None or best in tried[-2:]:
            return False
        least = self.estimate(best) or 0.0
        return all((self.estimate(s) or 0.0) > least * 1.1 for s in tried[-2:])

    def _fits(self, size: int) -> bool:
        budget = self.latency_budget
        per_item = self.estimate(size)
        return per_item is not None and (budget is None or per_item * size <= budget)

    def _best(self, tie: float | None = None) -> int | None:
        """The size of least time per item among those that fit; with a latency budget,
        a smaller one within the 2 % tie (less latency for the same throughput).
        Without one throughput is the only aim: estimates about 5 % apart preferred the
        smaller size of two within noise (mlp: 14 instead of 16, 2-14 % slower)."""
        if tie is None:
            tie = _TIE if self.latency_budget is not None else 1.0
        # A size seen once (a batch formed before the cap changed) is no estimate yet.
        enough = min(2, self.samples)
        fits = {
            s: self.estimate(s) or 0.0
            for s, c in self._costs.items()
            if len(c) >= enough and self._fits(s)
        }
        if not fits:
            return None
        least = min(fits.values())
        return min(s for s, v in fits.items() if v <= least * tie)

    def _between(self, best: int) -> list[int]:
        """Untried sizes halfway between ``best`` and its nearest tried neighbours."""
        tried = sorted(s for s, c in self._costs.items() if c)
        below = [s for s in tried if s < best]
        above = [s for s in tried if s > best]
        out = []
        if below and best - below[-1] > 1:
            out.append((below[-1] + best) // 2)
        if above and above[0] - best > 1:
            out.append((best + above[0]) // 2)
        return out

    def _watch(self, size: int, ns: int) -> None:
        """Exploiting: start the search again on drift or when the period is up."""
        self._since += ns
        if size == self._limit:
            self._recent.append(ns / size)
            if len(self._recent) == self._recent.maxlen:
                now = median(self._recent)
                if self._reference <= 0:
                    # The first full window after settling is the reference: the
                    # search's few batches per size are too few to hold drift against.
                    self._reference = now
                    if self._recalled > 0:
                        recalled, self._recalled = self._recalled, 0.0
                        if abs(now / recalled - 1) > self._tolerance:
                            self._start("recalled")
                        else:
                            self._reason = (
                                f"recalled: {size}, checked at {now / 1e6:.3g} ms/item "
                                f"(found at {recalled / 1e6:.3g})"
                            )
                    elif self._runner_up is not None and now > self._runner_up[1] * _CONFIRM:
                        # The search's few batches flattered the chosen size (a tie broken
                        # by noise): the runner-up measured better than it runs now.
                        other, cost = self._runner_up
                        self._settle(
                            other,
                            f"{size} ran at {now / 1e6:.3g} ms/item after the search, "
                            f"over {other}'s {cost / 1e6:.3g} ms/item: {other} instead",
                        )
                    self._runner_up = None
                    return
                # Out of band for a whole window in a row: a burst of noise that moves
                # one median for a batch or two does not start a search.
                out = abs(now / self._reference - 1) > self.drift
                self._strikes = self._strikes + 1 if out else 0
                if self._strikes >= self.window:
                    self._start("drift")
                    return
                budget = self.latency_budget
                if budget is not None and self._fitted and now * size > budget:
                    self._start("budget")
                    return
        if self._since >= self.period:
            self._start("period")


class SizeMemory:
    """The batch size each model settled on, for the process: a new worker of the same
    model and layout starts from it (:meth:`BatchSizer.resume`) instead of searching.

    Keys are whatever identifies the work (the worker uses the model's digest, the
    device, the layout, ``max_batch``, the latency budget and the preprocess). Thread
    safe enough for its use: one dict assignment per stream.
    """

    def __init__(self) -> None:
        self._sizes: dict[Hashable, tuple[int, float]] = {}

    def recall(self, key: Hashable) -> tuple[int, float] | None:
        """``(size, per_item_ns)`` last kept for ``key``, or ``None``."""
        return self._sizes.get(key)

    def keep(self, key: Hashable, sizer: BatchSizer) -> None:
        """Keep what ``sizer`` uses now, if it settled on a measured size."""
        if sizer.phase != "exploit" or sizer.max_batch == 1:
            return
        costs = sizer._costs.get(sizer.limit)
        if costs is not None and len(costs) >= sizer.samples:
            self._sizes[key] = (sizer.limit, median(costs))

    def clear(self) -> None:
        """Forget every size (each new worker searches again)."""
        self._sizes.clear()


remembered_sizes = SizeMemory()
"""The process's :class:`SizeMemory`, shared by every :class:`~fusion.BatchWorker`."""
