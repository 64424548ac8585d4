"""The layout probe: build each candidate layout's sessions, time them, keep the winner.

The I/O half of :mod:`fusion.workers._layout`. For each candidate the probe
builds a :class:`~fusion.workers._execution.ModelRunner` of that many
replicas and threads and warms it up; then, in rounds that interleave the
candidates (a neighbour's burst then slows all of them, not one), each
candidate's replicas run the same input side by side, one thread per
replica as the worker's lanes do, batches of 1 and of ``max_batch``: wall
time and CPU time per item, read by the replicas' threads themselves. The
input is the model's own dummy input (zeros of its input shapes) or the
warm-up sample items prepared; each thread runs one batch before the clock
starts (a new thread's first batch runs on cold caches). The
:class:`~fusion.workers._layout.LayoutPolicy` decides; the runner of the
chosen layout is returned, the others dropped.

Bounded: about 5 ms per measurement (2-16 batches per replica), batches of
at most about 8 ms (a smaller power of two than ``max_batch`` when its batch
takes longer: the cost per item is compared, not the size), three rounds
unless two took over 0.3 s.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from fusion.workers._execution import Feeds, ModelRunner
from fusion.workers._layout import Layout, LayoutPolicy
from fusion.workers._sessions import ModelSession

log = logging.getLogger("fusion.workers")

_TARGET_NS = 5_000_000  # one measurement: about this long
_ROUNDS = 3
_ENOUGH_NS = 300_000_000  # after two rounds, stop if they took this long
_LARGEST_NS = 8_000_000  # the largest batch probed takes about this long at most


def probe_layouts(
    policy: LayoutPolicy,
    make_runner: Callable[[Layout], ModelRunner],
    *,
    max_batch: int,
    warmup: bool | list[Any],
    keep: tuple[Layout, ModelRunner] | None = None,
) -> ModelRunner:
    """Measure ``policy``'s candidates, decide, and return the chosen layout's runner.

    ``keep`` is a runner already built for one layout (the one in use), reused
    instead of building it again. When no input can be made (symbolic input
    dimensions and no warm-up samples) or a run fails, nothing is measured and
    the policy's choice stands (the first candidate at first), with the reason.
    """
    policy.begin()
    runners: dict[Layout, ModelRunner] = {}
    for layout in policy.candidates:
        if keep is not None and keep[0] == layout:
            runners[layout] = keep[1]
        else:
            runners[layout] = make_runner(layout)
        runners[layout].warm_up(warmup, max_batch)
    try:
        _measure(policy, runners, max_batch, warmup)
    except Exception as err:  # a probe that cannot run must not stop the worker
        log.info("layout probe failed (%s: %s); keeping the default layout", type(err), err)
        policy.begin()
    return runners[policy.decide()]


def _measure(
    policy: LayoutPolicy, runners: dict[Layout, ModelRunner], max_batch: int, warmup: Any
) -> None:
    first = next(iter(runners.values()))
    session = first.sessions[0]
    inputs: dict[int, Feeds] = {}
    if isinstance(warmup, list) and warmup:
        inputs[len(warmup)] = first.prepare(list(warmup))
    else:
        for size in sorted({1, max_batch}):
            feeds = session.dummy_feeds(size)
            if feeds is not None:
                inputs[size] = feeds
    if not inputs:
        return
    took = {size: _time_one(session, feeds) for size, feeds in inputs.items()}
    largest = max(inputs)
    if largest > 1 and took[largest] > _LARGEST_NS:
        # Batches that long would make the probe last seconds: the largest power of two
        # whose batch takes about _LARGEST_NS (the cost per item is what is compared).
        size = 1 << max(0, int(math.log2(largest * _LARGEST_NS / took[largest])))
        del inputs[largest]
        if size > 1:
            feeds = session.dummy_feeds(size)
            if feeds is not None:
                inputs[size] = feeds
                took[size] = _time_one(session, feeds)
    # Batches per replica thread: about _TARGET_NS per measurement.
    repeats = {s: min(16, max(2, math.ceil(_TARGET_NS / took[s]))) for s in inputs}
    began = time.perf_counter_ns()
    for round_ in range(_ROUNDS):
        for layout, runner in runners.items():
            for size, feeds in inputs.items():
                k = repeats[size]
                wall, cpu = _run_side_by_side(runner, feeds, k)
                items = len(runner.sessions) * k * size
                policy.record(layout, size, wall / items, cpu / items)
        if round_ >= 1 and time.perf_counter_ns() - began > _ENOUGH_NS:
            break


def _time_one(session: ModelSession, feeds: Feeds) -> int:
    """What one run of ``feeds`` costs: the thread's CPU time for a session of one
    intra-op thread (all of its work, and a busy neighbour does not inflate it), else
    wall time."""
    clock = time.thread_time_ns if session.threads == 1 else time.perf_counter_ns
    start = clock()
    session.run(feeds)
    return max(1, clock() - start)


def _run_side_by_side(runner: ModelRunner, feeds: Feeds, repeats: int) -> tuple[int, int]:
    """Wall and CPU ns of every replica running ``feeds`` ``repeats`` times at once, each
    on its own thread (after one unmeasured run on that thread).

    Each thread reads the clocks itself, right before and after its runs: the calling
    thread, woken by the barrier while the replicas hold every core, could be scheduled
    only after they had finished (a 5 ms measurement then read 1.6 us an item). Wall is
    the first start to the last end. CPU is the replicas' own thread time when each
    session runs on its thread alone (exact), else the process's CPU over the same span
    (read in the replicas' threads, so the pool's threads are counted).
    """
    sessions = runner.sessions
    n = len(sessions)
    barrier = threading.Barrier(n + 1)
    errors: list[BaseException] = []
    spans: list[tuple[int, int, int, int, int, int]] = [(0, 0, 0, 0, 0, 0)] * n

    def work(index: int) -> None:
        session = sessions[index]
        try:
            session.run(feeds)
        except BaseException as err:
            errors.append(err)
            barrier.abort()
            return
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return
        wall, own, process = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
        try:
            for _ in range(repeats):
                session.run(feeds)
        except BaseException as err:
            errors.append(err)
        spans[index] = (
            wall,
            time.perf_counter_ns(),
            own,
            time.thread_time_ns(),
            process,
            time.process_time_ns(),
        )

    threads = [
        threading.Thread(target=work, args=(i,), daemon=True, name=f"hyperframes-probe-{i}")
        for i in range(n)
    ]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    wall = max(s[1] for s in spans) - min(s[0] for s in spans)
    if all(session.threads == 1 for session in sessions):
        cpu = sum(s[3] - s[2] for s in spans)
    else:
        cpu = max(s[5] for s in spans) - min(s[4] for s in spans)
    return max(1, wall), max(1, cpu)
