"""What a frame costs the model, told to the source that decodes for it.

A CPU worker's default layout keeps every core busy with its replicas. A video
decoder's automatic frame threads then only add threads to those cores: they pay
(FFmpeg's thread hand-offs, 0.15-0.4 ms per 720p frame measured) only when the
decoder is the bottleneck, when one core decoding is slower than the other cores
running the model. The worker measures the model's CPU per frame (one batch of
dummy input on its first replica, in that thread's CPU time, which a busy
neighbour does not inflate) and tells the source, which weighs it against its
own decode cost (:meth:`fusion.Source.pace_decoder`).
"""

from __future__ import annotations

import time

from fusion._source import Source
from fusion.workers._execution import ModelRunner
from fusion.workers._sessions import free_cores

_measured: dict[tuple[object, ...], float] = {}
"""CPU seconds per item, by model digest, providers and layout: measured once a process."""


def model_cpu_per_item(runner: ModelRunner) -> float | None:
    """CPU seconds per item of a batch of one on the first replica (warm: the worker's
    warm-up ran that size), measured once per model and layout in a process; ``None``
    off the CPU or when the model's inputs have no dummy form. One intra-op thread:
    that thread's CPU time, exact; more: the process's, which counts any other busy
    thread of the process too."""
    if runner.device != "cpu":
        return None
    session = runner.sessions[0]
    key = (runner.digest, tuple(runner.providers), len(runner.sessions), session.threads)
    if key in _measured:
        return _measured[key]
    feeds = session.dummy_feeds(1)
    if feeds is None:
        return None
    clock = time.thread_time if session.threads == 1 else time.process_time
    session.run(feeds)
    start = clock()
    session.run(feeds)
    _measured[key] = cost = clock() - start
    return cost


def pace_source(source: Source, runner: ModelRunner, reserve: int = 0) -> str | None:
    """Tell ``source`` what a frame costs the model on the free cores (``reserve`` of
    them left to other busy threads, as the worker's layout leaves them).

    Returns what the source said (``None``: it takes the figure into account), or
    why nothing was said."""
    cost = model_cpu_per_item(runner)
    if cost is None:
        return "the model's CPU per frame is not measured (not on the CPU, or no dummy input)"
    return source.pace_decoder(cost, max(1, free_cores() - reserve))
