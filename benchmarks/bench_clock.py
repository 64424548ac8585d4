"""Clock alignment: cost of ``observe`` + ``align`` per frame, and accuracy.

All in one run, on synthetic sensors with known clocks (``adapters.synthetic``):

Cost: frames of a 100 Hz sensor (the issue's headline link) fed as the hub
does (``observe`` then ``align``), per frame, for

* ``OnlineClock`` (lower envelope, sliding 20 s window);
* a least-squares line over the same window, kept by running sums (the
  cheapest possible refit: O(1) per frame), the baseline;
* ``FixedOffset``, the floor: two method calls and an addition.

Accuracy: the aligned time minus (true capture time + minimum transport delay)
for the issue's scenarios, envelope vs least squares on the same frames, and
the ``Nearest`` grouping of three independently clocked sensors against the
ground-truth grouping.

    .venv/bin/python benchmarks/bench_clock.py [--seconds 60] [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import deque

import numpy as np
from rich.console import Console
from rich.table import Table

from adapters.synthetic import SensorTiming, SyntheticSensor, synthetic_timeline
from fusion import FixedOffset, Frame, Nearest, OnlineClock
from fusion.clock import ClockModel

MS = 1_000_000
S = 1_000_000_000
HEADLINE = SensorTiming(
    offset_ns=500 * MS,
    skew_ppm=200,
    delay_ns=2 * MS,
    jitter_mean_ns=5 * MS,
    spike_prob=0.01,
    spike_ns=50 * MS,
)


class LeastSquaresClock:
    """Least-squares line through ``t_arrival - t_sensor`` over a sliding window (running sums)."""

    def __init__(self, window_ns: int = 20 * S) -> None:
        self.window_s = window_ns / S
        self._pts: deque[tuple[float, float]] = deque()
        self._x0: int | None = None
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self._a = self._b = 0.0

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        if self._x0 is None:
            self._x0 = t_sensor
        x, y = (t_sensor - self._x0) / S, float(t_arrival - t_sensor)
        self._pts.append((x, y))
        self._sx += x
        self._sy += y
        self._sxx += x * x
        self._sxy += x * y
        while self._pts[0][0] < x - self.window_s:
            ox, oy = self._pts.popleft()
            self._sx -= ox
            self._sy -= oy
            self._sxx -= ox * ox
            self._sxy -= ox * oy
        n = len(self._pts)
        var = self._sxx - self._sx * self._sx / n
        self._b = (self._sxy - self._sx * self._sy / n) / var if n > 1 and var > 1e-12 else 0.0
        self._a = (self._sy - self._b * self._sx) / n

    def align(self, t_sensor: int) -> int:
        assert self._x0 is not None
        return t_sensor + round(self._a + self._b * (t_sensor - self._x0) / S)

    def describe(self) -> dict[str, object]:
        return {"model": "LeastSquares"}


class RefitLeastSquaresClock:
    """Least squares refitted from scratch over the window on every frame (numpy)."""

    def __init__(self, window_ns: int = 20 * S) -> None:
        self.window_ns = window_ns
        self._pts: deque[tuple[int, int]] = deque()
        self._line = (0.0, 0.0, 0)

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        self._pts.append((t_sensor, t_arrival - t_sensor))
        while self._pts[0][0] < t_sensor - self.window_ns:
            self._pts.popleft()
        xy = np.array(self._pts, dtype=np.float64)
        x0 = self._pts[0][0]
        if len(xy) > 1:
            slope, intercept = np.polyfit((xy[:, 0] - x0) / S, xy[:, 1], 1)
        else:
            slope, intercept = 0.0, float(xy[0, 1])
        self._line = (float(intercept), float(slope), x0)

    def align(self, t_sensor: int) -> int:
        intercept, slope, x0 = self._line
        return t_sensor + round(intercept + slope * (t_sensor - x0) / S)

    def describe(self) -> dict[str, object]:
        return {"model": "LeastSquaresRefit"}


def frames_of(
    timing: SensorTiming, seconds: float, seed: int = 0, rate: float = 100
) -> list[Frame]:
    return synthetic_timeline(
        [SyntheticSensor("s", rate, timing=timing, duration_s=seconds, seed=seed)]
    )


def cost_us(make: type[ClockModel] | object, pairs: list[tuple[int, int]], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        model = make()  # type: ignore[operator]
        observe, align = model.observe, model.align
        start = time.perf_counter()
        for ts, ta in pairs:
            observe(ts, ta)
            align(ts)
        best = min(best, time.perf_counter() - start)
    return best / len(pairs) * 1e6


def steady_cost_us(pairs: list[tuple[int, int]], window_s: float) -> tuple[float, float]:
    """(wall, CPU) µs per frame of ``OnlineClock`` over one ``window_s`` of sensor time
    after a first, untimed one: the window is full, so every frame also slides it out."""
    model = OnlineClock(window_ns=int(window_s * S))
    observe, align = model.observe, model.align
    t0 = pairs[0][0]
    warm = next(i for i, (ts, _) in enumerate(pairs) if ts - t0 >= window_s * S)
    end = next((i for i, (ts, _) in enumerate(pairs) if ts - t0 >= 2 * window_s * S), len(pairs))
    for ts, ta in pairs[:warm]:
        observe(ts, ta)
        align(ts)
    timed = pairs[warm:end]
    start, cpu = time.perf_counter(), time.process_time()
    for ts, ta in timed:
        observe(ts, ta)
        align(ts)
    n = len(timed)
    return (time.perf_counter() - start) / n * 1e6, (time.process_time() - cpu) / n * 1e6


def errors(model: ClockModel, frames: list[Frame], min_delay: int) -> np.ndarray:
    out = np.empty(len(frames), np.int64)
    for i, f in enumerate(frames):
        assert f.t_arrival is not None
        model.observe(f.t_sensor, f.t_arrival)
        out[i] = model.align(f.t_sensor) - f.meta["t_true"] - min_delay
    return out


def p99_us(err: np.ndarray) -> float:
    return float(np.percentile(np.abs(err), 99)) / 1e3


def recovery_s(err: np.ndarray, t: np.ndarray, since: int, bound: int = MS // 2) -> float:
    """Sensor-side seconds after ``since`` until every later error is under ``bound``."""
    bad = np.nonzero((t >= since) & (np.abs(err) >= bound))[0]
    return 0.0 if len(bad) == 0 else (t[bad[-1]] - since) / S


def grouping_match(seed: int, seconds: float) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    layout = [("lidar", 10.0, 0), ("cam", 30.0, 4 * MS), ("radar", 20.0, 11 * MS)]
    sensors = [
        SyntheticSensor(
            name,
            rate,
            start_ns=start,
            duration_s=seconds,
            seed=seed,
            timing=SensorTiming(
                offset_ns=int(rng.integers(-(10**12), 10**12)),
                skew_ppm=float(rng.uniform(-300, 300)),
                delay_ns=int(rng.integers(1 * MS, 10 * MS)),
                jitter_mean_ns=int(rng.integers(MS // 2, 5 * MS)),
                spike_prob=0.01,
                spike_ns=50 * MS,
            ),
        )
        for name, rate, start in layout
    ]
    names = [s.name for s in sensors]
    tol = {"cam": 17 * MS, "radar": 25 * MS}
    aligned_pol, truth_pol = Nearest("lidar", names, tol), Nearest("lidar", names, tol)
    models = {s.name: OnlineClock(extra_offset_ns=-s.timing.delay_ns) for s in sensors}
    aligned, truth = [], []
    for f in synthetic_timeline(sensors):
        assert f.t_arrival is not None
        m = models[f.sensor]
        m.observe(f.t_sensor, f.t_arrival)
        aligned += aligned_pol.push(Frame(f.sensor, f.seq, m.align(f.t_sensor)))
        truth += truth_pol.push(Frame(f.sensor, f.seq, f.meta["t_true"]))
    aligned += aligned_pol.drain()
    truth += truth_pol.drain()
    a = {g.frames["lidar"].seq: sorted(g.keys) for g in aligned}  # type: ignore[union-attr]
    b = {g.frames["lidar"].seq: sorted(g.keys) for g in truth}  # type: ignore[union-attr]
    refs = set(a) | set(b)
    return sum(a.get(r) == b.get(r) for r in refs), len(refs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="cost: session length")
    parser.add_argument("--repeat", type=int, default=5, help="cost: best of N runs")
    args = parser.parse_args()
    console = Console(width=120)

    frames = frames_of(HEADLINE, args.seconds)
    pairs = [(f.t_sensor, f.t_arrival) for f in frames if f.t_arrival is not None]
    costs = {
        "FixedOffset (floor)": cost_us(lambda: FixedOffset(0), pairs, args.repeat),
        "least squares, running sums (baseline)": cost_us(LeastSquaresClock, pairs, args.repeat),
        "least squares, numpy refit per frame": cost_us(RefitLeastSquaresClock, pairs, 1),
        "OnlineClock": cost_us(OnlineClock, pairs, args.repeat),
    }
    table = Table(title=f"observe + align per frame ({len(pairs)} frames, best of {args.repeat})")
    table.add_column("model")
    table.add_column("µs / frame", justify="right")
    table.add_column("vs baseline", justify="right")
    base = costs["least squares, running sums (baseline)"]
    for name, us in costs.items():
        table.add_row(name, f"{us:.2f}", f"{us / base:.2f}x")
    console.print(table)
    verdict = "meets" if costs["OnlineClock"] < 5 else "MISSES"
    console.print(f"OnlineClock {verdict} the 5 µs target ({costs['OnlineClock']:.2f} µs).")

    # Cost against the rate: 100 Hz and 1 kHz, rounds interleaved, best of each. Two
    # measures: the whole session (the first 20 s window fills without sliding: at
    # 100 Hz that is a third of a 60 s session's frames, at 1 kHz the 4096-point cap
    # fills in 4 s, so this measure mixes cheap warm-up frames into 100 Hz only), and
    # the steady state: a 20 s window timed after a first 20 s window (the 4096-point
    # cap holds at 1 kHz).
    by_rate = {
        rate: [
            (f.t_sensor, f.t_arrival)
            for f in frames_of(
                dataclasses.replace(
                    HEADLINE, jitter_mean_ns=min(HEADLINE.jitter_mean_ns, S // rate)
                ),
                max(args.seconds, 40.0),
                rate=rate,
            )
        ]
        for rate in (100, 1000)
    }
    rounds: dict[int, list[float]] = {100: [], 1000: []}
    steady: dict[int, list[tuple[float, float]]] = {100: [], 1000: []}
    for _ in range(args.repeat):
        for rate, rate_pairs in by_rate.items():
            rounds[rate].append(cost_us(OnlineClock, rate_pairs, 1))
            steady[rate].append(steady_cost_us(rate_pairs, 20.0))
    ratio = min(rounds[1000]) / min(rounds[100])
    console.print(
        f"OnlineClock per frame, whole session: at 100 Hz {min(rounds[100]):.2f} µs "
        f"({min(rounds[100]):.2f}-{max(rounds[100]):.2f}), at 1 kHz {min(rounds[1000]):.2f} µs "
        f"({min(rounds[1000]):.2f}-{max(rounds[1000]):.2f}): 1 kHz / 100 Hz = {ratio:.2f}"
    )
    wall = {r: min(w for w, _ in v) for r, v in steady.items()}
    cpu = {r: min(c for _, c in v) for r, v in steady.items()}
    ratio_s, ratio_c = wall[1000] / wall[100], cpu[1000] / cpu[100]
    console.print(
        f"OnlineClock per frame, steady state (a 20 s window after a full one): at 100 Hz "
        f"{wall[100]:.2f} µs wall / {cpu[100]:.2f} CPU, at 1 kHz {wall[1000]:.2f} / "
        f"{cpu[1000]:.2f}: 1 kHz / 100 Hz = {ratio_s:.2f} wall, {ratio_c:.2f} CPU "
        f"({'meets' if max(ratio_s, ratio_c) <= 1.3 else 'MISSES'} the 1.3 target)"
    )

    acc = Table(title="alignment error vs true capture + min delay (p99, µs; 3 seeds, worst)")
    for col in ("scenario", "OnlineClock", "least squares", "LS re-centred", "note"):
        acc.add_column(col, justify="left" if col in ("scenario", "note") else "right")
    scenarios = [
        ("headline, 10–20 s", HEADLINE, 20, 10 * S, None),
        ("headline, 2–10 s", HEADLINE, 10, 2 * S, None),
        (
            "no spikes, 1 ms jitter, 10–20 s",
            dataclasses.replace(HEADLINE, jitter_mean_ns=MS, spike_prob=0.0),
            20,
            10 * S,
            None,
        ),
        (
            "reboot at 10 s, 12–20 s",
            dataclasses.replace(HEADLINE, reset_at_ns=10 * S),
            20,
            12 * S,
            10 * S,
        ),
        (
            "1 s wrap-around, 10–20 s",
            dataclasses.replace(HEADLINE, wrap_period_ns=S),
            20,
            10 * S,
            None,
        ),
    ]
    for label, timing, seconds, since, reset in scenarios:
        worst_env = worst_ls = worst_ls_c = 0.0
        recoveries = []
        for seed in range(3):
            fr = frames_of(timing, seconds, seed)
            t = np.array([f.meta["t_true"] for f in fr])
            env = errors(OnlineClock(wrap_period_ns=timing.wrap_period_ns), fr, timing.delay_ns)
            if timing.wrap_period_ns is None:
                ls = errors(LeastSquaresClock(), fr, timing.delay_ns)[t >= since]
                worst_ls = max(worst_ls, p99_us(ls))
                worst_ls_c = max(worst_ls_c, p99_us(ls - np.median(ls)))
            worst_env = max(worst_env, p99_us(env[t >= since]))
            if reset is not None:
                recoveries.append(recovery_s(env, t, reset))
        note = f"back under 0.5 ms {max(recoveries):.2f} s after the reboot" if recoveries else ""
        ls_cells = (f"{worst_ls:.0f}", f"{worst_ls_c:.0f}") if worst_ls else ("n/a", "n/a")
        acc.add_row(label, f"{worst_env:.0f}", *ls_cells, note)
    console.print(acc)

    matched = total = 0
    for seed in range(5):
        m, n = grouping_match(seed, 60)
        matched += m
        total += n
    console.print(
        f"Nearest over 3 sensors (lidar 10 Hz ref, cam 30 Hz, radar 20 Hz; 5 seeds x 60 s): "
        f"{matched}/{total} reference frames grouped as by true time ({matched / total:.4%})."
    )


if __name__ == "__main__":
    main()
