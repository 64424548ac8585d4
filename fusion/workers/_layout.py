"""Which CPU layout (session replicas x intra-op threads each) runs fastest; sans-I/O.

Theory of operation
-------------------
On a CPU the same cores can be given to the model as several sessions of few
threads (each replica runs its own batch; one computes while another is
between batches, and a narrow pool wastes less on synchronisation) or as one
session whose pool spans every core (one copy of the weights: a model whose
weights do not fit the caches twice runs faster so). Neither wins for every
model: two 1-thread sessions cost 0.50 of 4 ms of CPU less per frame than one
2-thread session on a 0.3 GMAC CNN, and 94-100 against 76-83 us per item on
an MLP with 16 MB of weights (see BENCHMARKS.md, "Round 5" and "Round 6").
So the worker measures: :mod:`fusion.workers._layout_probe` runs the
candidates on the model at start and feeds the times to a
:class:`LayoutPolicy`, which never reads a clock and is tested with plain
numbers.

**Candidates** (:func:`layout_candidates`): the free cores ``c`` (less those
reserved) as two replicas of ``c // 2`` threads (the old default, first, so
it wins exact ties) and one replica of ``c`` threads; on 3-4 cores also ``c``
replicas of one thread. One core: one replica of one thread, nothing to
measure.

**Decide** (:meth:`LayoutPolicy.decide`): each candidate's cost is the least
time per item of its measurements (a busy neighbour only ever slows a run
down, so the least is the closest to the layout's own cost). The first
candidate (the narrowest sessions) is the one to beat: another wins only when
it costs more than ``margin`` less, the cheapest of those, or when it is faster
at all and costs more than half the margin less CPU per item (process CPU
time, when recorded; two measures agreeing): what the model leaves of the
cores is what a decoder or the worker's own loop gets (``mlp``: one session
across 2 cores 0-15 % faster than two, on 10-19 % less CPU; a CNN's narrow
sessions cost less CPU). Narrow sessions
degrade gracefully when something else takes a core (a video decoder beside
the model, another process): a session whose pool spans every core waits at
each parallel step for its slowest thread. Measured (BENCHMARKS.md, round 9):
behind a video decoder on 2 cores, ``2x1`` beat ``1x2`` in 6 rounds of 6
(``mid_cnn`` 227-236 against 213-225 frames/s, ``heavy_cnn`` 122-131 against
119-122), while the probe, the model alone, had ``mid_cnn``'s two within 1 %,
either way round by round. Once a layout is chosen, another
replaces it only when it costs more than ``margin`` less (hysteresis: two
layouts within noise of each other never flap from one probe to the next).

**Again** (:meth:`LayoutPolicy.observe`): the chosen layout's cost at work
(per stream, in whatever unit the caller uses consistently) is held against
the first one observed after the decision; ``patience`` observations in a
row more than ``drift`` away (the load or the inputs changed) mark the
decision :attr:`~LayoutPolicy.stale`, and the caller probes again
(:meth:`LayoutPolicy.begin` clears the old measurements, not the choice).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from fusion.errors import ConfigError


@dataclass(frozen=True, slots=True, order=True)
class Layout:
    """``replicas`` sessions of ``threads`` intra-op threads each."""

    replicas: int
    threads: int

    def __str__(self) -> str:
        return f"{self.replicas}x{self.threads}"


@dataclass(frozen=True, slots=True)
class LayoutStatistics:
    """Which layout a worker runs and why (``WorkerStatistics.layout``)."""

    replicas: int
    threads: int
    decided_by: str
    """``measured`` (probed at start), ``remembered`` (another worker of the same model
    in this process measured it), ``given`` (``replicas`` or ``threads`` passed), ``one
    core``, ``device`` (not a CPU session) or ``not measured`` (the probe could not run)."""
    reason: str
    """Why, in words, with the figures compared (e.g. ``1x2 at 41 us/item, 2x1 at 52``)."""
    per_item_ns: dict[str, dict[int, float]] = field(default_factory=dict)
    """Per layout (``"2x1"``), per probed batch size: the least wall ns per item."""
    cpu_per_item_ns: dict[str, dict[int, float]] = field(default_factory=dict)
    """The same runs' process CPU ns per item (a layout faster and cheaper in CPU wins,
    see :meth:`LayoutPolicy.decide`)."""
    probes: int = 0
    """Probes run (the first, then one per stale decision)."""
    probe_ns: int = 0
    """Wall time the last probe took (sessions built, warmed and measured)."""


def layout_candidates(cores: int) -> list[Layout]:
    """The layouts worth measuring on ``cores`` free cores (see the module docstring)."""
    if cores < 1:
        raise ConfigError(f"cores must be >= 1, got {cores}")
    if cores == 1:
        return [Layout(1, 1)]
    out = [Layout(2, cores // 2), Layout(1, cores)]
    if 3 <= cores <= 4:
        out.append(Layout(cores, 1))
    return out


class LayoutPolicy:
    """Picks the cheapest measured layout, with hysteresis; flags drift. No clock, no I/O.

    Feed :meth:`record` with each probe measurement (wall ns per item of a run of
    ``size`` items per batch), then :meth:`decide`. Feed :meth:`observe` with the
    chosen layout's cost at work; :attr:`stale` says when to probe again.
    """

    def __init__(
        self,
        candidates: Sequence[Layout],
        *,
        margin: float = 0.1,
        drift: float = 0.3,
        patience: int = 2,
    ) -> None:
        if not candidates:
            raise ConfigError("a layout policy needs at least one candidate")
        if not 0 <= margin < 1 or not drift > 0 or patience < 1:
            raise ConfigError(
                f"need 0 <= margin < 1, drift > 0, patience >= 1; got {margin}, {drift}, {patience}"
            )
        self.candidates = list(dict.fromkeys(candidates))
        self.margin = margin
        self.drift = drift
        self.patience = patience
        self._wall: dict[Layout, dict[int, float]] = {}
        self._cpu: dict[Layout, dict[int, float]] = {}
        self._chosen: Layout | None = None
        self._reason = "not decided yet"
        self._reference = 0.0
        self._strikes = 0
        self._stale = False
        self._probes = 0

    # -- the measurements ---------------------------------------------------------

    def begin(self) -> None:
        """A probe starts: forget the last probe's figures (the choice stays until decided)."""
        self._wall.clear()
        self._cpu.clear()
        self._probes += 1

    def record(self, layout: Layout, size: int, per_item_ns: float, cpu_ns: float = 0.0) -> None:
        """A run of ``layout`` with batches of ``size`` took ``per_item_ns`` wall per item
        and, when given, ``cpu_ns`` process CPU per item."""
        if layout not in self.candidates:
            raise ConfigError(f"layout {layout} is not a candidate ({self._names()})")
        if size < 1 or not per_item_ns > 0:
            raise ValueError(f"a run of batches of {size} cannot take {per_item_ns} ns per item")
        wall = self._wall.setdefault(layout, {})
        wall[size] = min(wall.get(size, per_item_ns), per_item_ns)
        if cpu_ns > 0:
            cpu = self._cpu.setdefault(layout, {})
            cpu[size] = min(cpu.get(size, cpu_ns), cpu_ns)

    def cost(self, layout: Layout) -> float | None:
        """The least wall ns per item measured for ``layout`` in this probe (any size)."""
        wall = self._wall.get(layout)
        return min(wall.values()) if wall else None

    def cpu_cost(self, layout: Layout) -> float | None:
        """The least process CPU ns per item measured for ``layout`` in this probe."""
        cpu = self._cpu.get(layout)
        return min(cpu.values()) if cpu else None

    # -- the answer -----------------------------------------------------------------

    @property
    def chosen(self) -> Layout | None:
        return self._chosen

    @property
    def stale(self) -> bool:
        """The chosen layout's cost at work drifted: probe again (:meth:`begin`)."""
        return self._stale

    def decide(self) -> Layout:
        """The layout to run: the one in use (at first, the first candidate) unless another
        is over ``margin`` cheaper, then the cheapest, or faster and over half the margin
        cheaper in CPU per item; the first candidate when nothing was measured."""
        costs = {c: v for c in self.candidates if (v := self.cost(c)) is not None}
        self._stale = False
        self._strikes = 0
        self._reference = 0.0
        if not costs:
            if self._chosen is None:
                self._chosen = self.candidates[0]
                self._reason = f"not measured: {self._chosen}, the first candidate"
            return self._chosen
        # Ties go to the earlier candidate (min keeps the first of equals).
        best = min(costs, key=costs.__getitem__)
        figures = ", ".join(f"{c} at {costs[c] / 1e3:.3g} us/item" for c in costs)
        # The layout to beat: the one in use, at first the first (narrowest) candidate;
        # another replaces it only when over ``margin`` cheaper.
        in_use = self._chosen is not None and self._chosen in costs
        incumbent = self._chosen if in_use else self.candidates[0]
        assert incumbent is not None
        if incumbent not in costs:
            self._chosen = best
            self._reason = f"least wall time per item: {figures}"
        elif best != incumbent and costs[best] < costs[incumbent] * (1 - self.margin):
            self._chosen = best
            cheaper = (1 - costs[best] / costs[incumbent]) * 100
            self._reason = (
                f"{best} over {cheaper:.0f} % cheaper than {incumbent} in use: {figures}"
                if in_use
                else f"least wall time per item, {cheaper:.0f} % under {incumbent}'s: {figures}"
            )
        elif (frugal := self._frugal(costs, incumbent)) is not None:
            self._chosen, saved = frugal
            self._reason = (
                f"{self._chosen} faster than {incumbent} and {saved:.0f} % less CPU per item "
                f"(the cores' share left to the rest): {figures}"
            )
        elif in_use:
            self._reason = f"kept {incumbent} (nothing over {self.margin:.0%} cheaper): {figures}"
        elif best == incumbent:
            self._chosen = best
            self._reason = f"least wall time per item: {figures}"
        else:
            self._chosen = incumbent
            self._reason = (
                f"{incumbent}: narrow sessions share the cores best, and nothing was over "
                f"{self.margin:.0%} cheaper: {figures}"
            )
        assert self._chosen is not None
        return self._chosen

    def _frugal(self, costs: dict[Layout, float], incumbent: Layout) -> tuple[Layout, float] | None:
        """The fastest layout faster than ``incumbent`` in wall time and over half the
        margin cheaper in CPU time per item, with the CPU it saves in per cent, if any:
        on ``mlp`` (16 MB of weights) one session across 2 cores ran 0-15 % faster than
        two, under the margin, on 10-19 % less CPU."""
        mine = self.cpu_cost(incumbent)
        if mine is None:
            return None
        cpu = {c: v for c in costs if (v := self.cpu_cost(c)) is not None}
        better = [
            c for c in cpu if costs[c] < costs[incumbent] and cpu[c] < mine * (1 - self.margin / 2)
        ]
        if not better:
            return None
        fastest = min(better, key=costs.__getitem__)
        return fastest, (1 - cpu[fastest] / mine) * 100

    def observe(self, per_item_ns: float) -> None:
        """The chosen layout's cost at work (per stream): drift from the first one marks
        the decision stale after ``patience`` in a row."""
        if not per_item_ns > 0 or self._chosen is None or self._stale:
            return
        if self._reference <= 0:
            self._reference = per_item_ns
            return
        out = abs(per_item_ns / self._reference - 1) > self.drift
        self._strikes = self._strikes + 1 if out else 0
        if self._strikes >= self.patience:
            self._stale = True

    def statistics(self, decided_by: str = "measured", probe_ns: int = 0) -> LayoutStatistics:
        chosen = self._chosen or self.candidates[0]
        return LayoutStatistics(
            replicas=chosen.replicas,
            threads=chosen.threads,
            decided_by=decided_by,
            reason=self._reason,
            per_item_ns={str(k): dict(sorted(v.items())) for k, v in self._wall.items()},
            cpu_per_item_ns={str(k): dict(sorted(v.items())) for k, v in self._cpu.items()},
            probes=self._probes,
            probe_ns=probe_ns,
        )

    def _names(self) -> str:
        return ", ".join(str(c) for c in self.candidates)


class LayoutMemory:
    """The layout each model was measured to run fastest in, for the process: a new
    worker of the same model, cores and ``max_batch`` starts in it without a probe."""

    def __init__(self) -> None:
        self._layouts: dict[Hashable, LayoutStatistics] = {}

    def recall(self, key: Hashable) -> LayoutStatistics | None:
        return self._layouts.get(key)

    def keep(self, key: Hashable, stats: LayoutStatistics) -> None:
        if stats.decided_by == "measured":
            self._layouts[key] = stats

    def forget(self, key: Hashable) -> None:
        self._layouts.pop(key, None)

    def clear(self) -> None:
        """Forget every layout (each new worker probes again)."""
        self._layouts.clear()


remembered_layouts = LayoutMemory()
"""The process's :class:`LayoutMemory`, shared by every :class:`~fusion.BatchWorker`."""
