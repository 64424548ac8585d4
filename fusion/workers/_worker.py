"""`BatchWorker`: an ONNX model served to a stream of frames or groups.

The worker is configuration and lifecycle; the work is done by three modules
with one job each:

* :mod:`fusion.workers._execution` (:class:`ModelRunner`): the session replicas
  and what happens to one batch in a thread: preprocess, run, postprocess,
  isolation of failing items by halving, restart of a dead session;
* :mod:`fusion.workers._lanes`: the threads (one preprocessing, one per
  replica) and the whole-batch hand-offs between them and the event loop;
* :mod:`fusion.workers._stream` (:class:`StreamRun`): one ``stream()`` on the
  event loop: feeding the :class:`DynamicBatcher`, the ``max_delay`` timer on
  the runtime clock, deadlines, the change gate, and results in input order
  through the :class:`ReorderBuffer`.

Every wait reads :func:`~fusion._timing.current_clock`, so a test on a
:class:`~fusion.VirtualClock` runs the ``max_delay`` and deadline logic
without sleeping; model work marks the clock busy, so it takes no virtual time.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import numpy as np

from fusion._source import Source
from fusion._timing import run_sync
from fusion.errors import ConfigError
from fusion.workers._batcher import DynamicBatcher
from fusion.workers._execution import ModelRunner, Postprocess, Preprocess
from fusion.workers._gate import ChangeGate
from fusion.workers._layout import (
    Layout,
    LayoutPolicy,
    LayoutStatistics,
    layout_candidates,
    remembered_layouts,
)
from fusion.workers._layout_probe import probe_layouts
from fusion.workers._pacing import pace_source
from fusion.workers._preprocess import fuse_resize
from fusion.workers._results import WorkerCounters, WorkerResult, WorkerStatistics
from fusion.workers._sessions import (
    ModelSession,
    ModelSource,
    ProviderFailure,
    cpu_cores,
    default_threads,
    load_model,
    runs_on_cpu,
)
from fusion.workers._sizing import BatchSizer, remembered_sizes
from fusion.workers._stream import StreamRun, StreamSettings, default_window

_SIZER_STEP_ITEMS = 16
"""Items each batch size is tried for at least, in a search (see :class:`BatchSizer`)."""

# Defaults per device. On a CPU batching buys little (the cores are busy
# either way; onnxruntime's cost per item was measured flat in the batch size
# for the project's small CNN, see "Batch inference" in BENCHMARKS.md) and
# waiting only adds latency, so a batch goes as soon as a slot is free, holding
# whatever queued meanwhile; on a GPU a batch of 8+ is what fills the device,
# and waiting up to 5 ms (under one frame interval of any camera up to 200 Hz)
# is worth it.
_DEFAULTS = {"cpu": (4, 0), "cuda": (8, 5_000_000)}
_OFFLINE_HOLD = 4
"""Batches a replica may keep and hand back together on offline input (``_lanes``)."""


class BatchWorker:
    """An ONNX Runtime model served to frames or groups with dynamic batching (contract).

    ``model`` is a path or the model's bytes. ``preprocess(items)`` turns a list
    of items into the model inputs (one array, a sequence in input order, or a
    dict by input name), batch on axis 0; by default the items' ``data`` arrays
    are stacked. ``postprocess(items, outputs)`` returns one value per item; by
    default item ``i`` gets row ``i`` of the first output.

    ``max_batch`` and ``max_delay`` (ns) default per device: 4 and 0 on CPU, 8
    and 5 ms on CUDA. ``deadline`` (ns) expires items that waited longer for
    their batch. ``adaptive`` (default) measures which batch size gives the
    most items per second of processing time and caps batches at it, trying
    the sizes again when the cost drifts (:class:`~fusion.workers._sizing.BatchSizer`;
    ``statistics().batcher.sizing`` says what it chose and why); a later worker
    of the same model, layout and preprocess in the process starts from the
    size found, checked by its first batches, instead of searching again
    (:data:`~fusion.workers._sizing.remembered_sizes`);
    ``latency_budget`` (ns) excludes sizes whose batch takes longer.
    ``adaptive=False`` batches up to ``max_batch`` whenever items are queued.
    ``providers`` is ``"auto"`` (CUDA, then CPU), ``"cpu"``, ``"cuda"``,
    ``"tensorrt"`` or a list of provider names. ``threads`` is the intra-op
    thread count per replica; by default the free cores minus
    ``reserve_threads`` (cores to leave to other busy threads), split among
    the replicas. Threads never spin, so a light decode thread shares a core
    with them cheaply: reserving a whole core for it left one of two idle.
    ``replicas`` defaults to 1, except on the CPU with neither ``replicas`` nor
    ``threads`` given and two or more free cores: then :meth:`start` measures
    the candidate layouts on the model (two replicas splitting the cores, one
    session across all of them; :mod:`fusion.workers._layout`) and keeps the
    one with the least time per item, again when its cost at work drifts; a
    later worker of the same model in the process starts in it without
    measuring. :attr:`replicas` and :attr:`threads` hold the layout once
    started, ``statistics().layout`` the figures compared.
    ``warmup`` is True (zeros of the model's input shapes at batch 1 and
    ``max_batch``), False, or sample items to preprocess and run.
    """

    def __init__(
        self,
        model: ModelSource,
        *,
        preprocess: Preprocess | None = None,
        postprocess: Postprocess | None = None,
        max_batch: int | None = None,
        max_delay: int | None = None,
        providers: str | Sequence[str] = "auto",
        replicas: int | None = None,
        threads: int | None = None,
        reserve_threads: int = 0,
        preferred_batch_sizes: Iterable[int] = (),
        latency_budget: int | None = None,
        adaptive: bool = True,
        deadline: int | None = None,
        window: int | None = None,
        warmup: bool | Sequence[Any] = True,
        max_restarts: int = 3,
        provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if replicas is not None and replicas < 1:
            raise ConfigError(f"replicas must be >= 1, got {replicas}")
        if max_batch is not None and max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
        if max_delay is not None and max_delay < 0:
            raise ConfigError(f"max_delay must be >= 0 ns, got {max_delay}")
        if deadline is not None and deadline < 0:
            raise ConfigError(f"deadline must be >= 0 ns, got {deadline}")
        self._model_source = model
        self._preprocess = preprocess
        self.resize_outcome: dict[str, str] = {}
        """Per sensor, where the resize runs, when :meth:`stream` was given a Source."""
        self.decoder_outcome: str | None = None
        """When :meth:`stream` was given a Source (or its unstarted ``frames()``): ``None``
        if the source was told the model's CPU per frame to choose its decoder's threads
        (:mod:`fusion.workers._pacing`; the video source says what it chose in its
        statistics), else why not."""
        self._postprocess = postprocess
        self._max_batch_arg = max_batch
        self._max_delay_arg = max_delay
        self._providers_arg = providers
        self._replicas_arg = replicas
        self._threads_arg = threads
        self._reserve_threads = reserve_threads
        self.replicas = replicas or 1
        self.threads = (
            threads if threads is not None else default_threads(self.replicas, reserve_threads)
        )
        self.preferred_batch_sizes = tuple(preferred_batch_sizes)
        self.latency_budget = latency_budget
        self.adaptive = adaptive
        self.deadline = deadline
        self._window_arg = window
        self._warmup = warmup
        self.max_restarts = max_restarts
        self._provider_options = provider_options
        self.max_batch = max_batch or 1
        self.max_delay = max_delay or 0
        self._runner: ModelRunner | None = None
        self._providers: list[str] = []
        self._provider_failures: list[ProviderFailure] = []
        self._restarts_before = 0  # restarts counted by runners since released
        self._counters = WorkerCounters()
        self._batcher: DynamicBatcher[Any] | None = None
        self._sizer: BatchSizer | None = None  # made at start, kept across streams
        self._size_key: tuple[Any, ...] = ()  # what the size it settles on is kept under
        self._sizer_key: tuple[Any, ...] = ()  # the key of the sizer's layout and model
        self._layout_policy: LayoutPolicy | None = None  # made when the layout is measured
        self._layout: LayoutStatistics | None = None  # the layout in use and why
        self._layout_key: tuple[Any, ...] = ()  # what the measured layout is kept under

    # -- lifecycle ----------------------------------------------------------

    async def start(self) -> None:
        """Load the model on every replica and warm it up (done by ``stream`` if needed);
        on the CPU with neither ``replicas`` nor ``threads`` given, measure the layout
        first, and again when its cost at work drifted (:mod:`fusion.workers._layout`)."""
        policy = self._layout_policy
        if self._runner is None or (policy is not None and policy.stale):
            await run_sync(self._start_sync)

    def _start_sync(self) -> None:
        runner, warm = self._load_runner()
        if self._runner is not None and runner is not self._runner:  # a new layout
            self._restarts_before += self._runner.restarts
        self._providers = runner.providers
        self._provider_failures = runner.provider_failures
        default_batch, default_delay = _DEFAULTS.get(runner.device, _DEFAULTS["cpu"])
        self.max_batch = self._max_batch_arg or default_batch
        self.max_delay = self._max_delay_arg if self._max_delay_arg is not None else default_delay
        if any(p > self.max_batch for p in self.preferred_batch_sizes):
            sizes = self.preferred_batch_sizes
            raise ConfigError(f"preferred batch sizes {sizes} exceed max_batch {self.max_batch}")
        if not warm:
            runner.warm_up(self._warmup, self.max_batch)
        sizing = self.adaptive and (self.max_batch > 1 or self.latency_budget is not None)
        self._size_key = (
            runner.digest,
            tuple(runner.providers),
            self.replicas,
            self.threads,
            self.max_batch,
            self.latency_budget,
            type(self._preprocess).__qualname__,
            getattr(self._preprocess, "size", None),
        )
        if sizing and (self._sizer is None or self._sizer_key != self._size_key):
            self._sizer = BatchSizer(
                self.max_batch,
                latency_budget=self.latency_budget,
                step_items=_SIZER_STEP_ITEMS,
                descending=self._batching_pays(),
            )
            self._sizer_key = self._size_key
            recalled = remembered_sizes.recall(self._size_key)
            if recalled is not None:
                self._sizer.resume(*recalled)
        self._runner = runner

    def _load_runner(self) -> tuple[ModelRunner, bool]:
        """The sessions in the layout given, or measured (see :meth:`start`); whether
        they are warm already (the probe warms them)."""
        make = functools.partial(
            ModelRunner,
            providers=self._providers_arg,
            preprocess=self._preprocess,
            postprocess=self._postprocess,
            max_restarts=self.max_restarts,
            provider_options=self._provider_options,
        )
        given = self._replicas_arg is not None or self._threads_arg is not None
        cores = cpu_cores(self._reserve_threads)
        if given or cores == 1 or not runs_on_cpu(self._providers_arg):
            why = "given" if given else "one core" if cores == 1 else "device"
            if not given:
                self.replicas, self.threads = 1, default_threads(1, self._reserve_threads)
            self._layout = LayoutStatistics(self.replicas, self.threads, why, reason=why)
            model = load_model(self._model_source)
            return make(model, replicas=self.replicas, threads=self.threads), False
        model = load_model(self._model_source)
        max_batch = self._max_batch_arg or _DEFAULTS["cpu"][0]
        preprocess = (type(self._preprocess).__qualname__, getattr(self._preprocess, "size", None))
        digest = hashlib.blake2b(model, digest_size=16).hexdigest()
        key = (digest, cores, max_batch, preprocess)
        policy = self._layout_policy
        remembered = remembered_layouts.recall(key)
        if remembered is not None and (policy is None or not policy.stale):
            self.replicas, self.threads = remembered.replicas, remembered.threads
            self._layout = dataclasses.replace(remembered, decided_by="remembered")
            return make(model, replicas=self.replicas, threads=self.threads), False
        if policy is None:
            policy = self._layout_policy = LayoutPolicy(layout_candidates(cores))
        keep = None
        if self._runner is not None:
            keep = (Layout(self.replicas, self.threads), self._runner)
        began = time.perf_counter_ns()
        warmup = self._warmup if isinstance(self._warmup, bool) else list(self._warmup)
        runner = probe_layouts(
            policy,
            lambda lay: make(model, replicas=lay.replicas, threads=lay.threads),
            max_batch=max_batch,
            warmup=warmup,
            keep=keep,
        )
        chosen = policy.chosen
        assert chosen is not None
        self.replicas, self.threads = chosen.replicas, chosen.threads
        how = "measured" if policy.cost(chosen) is not None else "not measured"
        self._layout = policy.statistics(how, time.perf_counter_ns() - began)
        remembered_layouts.keep(key, self._layout)
        self._layout_key = key
        return runner, True

    def _batching_pays(self) -> bool:
        """The layout probe found its largest batch under 0.8 of batch 1's wall time per
        item in the chosen layout: the batch-size search starts from the largest size."""
        layout = self._layout
        if layout is None:
            return False
        sizes = layout.per_item_ns.get(f"{layout.replicas}x{layout.threads}", {})
        if 1 not in sizes or len(sizes) < 2:
            return False
        return sizes[max(sizes)] < 0.8 * sizes[1]

    def _observe_layout(self) -> None:
        """Tell the layout policy what the chosen size costs now (per stream): a drift
        marks the layout stale, probed again at the next stream's start."""
        policy, sizer = self._layout_policy, self._sizer
        if policy is None or sizer is None or sizer.phase != "exploit":
            return
        estimate = sizer.estimate(sizer.limit)
        if estimate is not None:
            policy.observe(estimate)
            if policy.stale:
                remembered_layouts.forget(self._layout_key)

    async def aclose(self) -> None:
        """Release the sessions. The worker can be started again."""
        if self._runner is not None:
            self._restarts_before += self._runner.restarts
            self._runner = None

    async def __aenter__(self) -> BatchWorker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def _sessions(self) -> list[ModelSession]:
        """The live session replicas (empty before :meth:`start`)."""
        return self._runner.sessions if self._runner is not None else []

    @property
    def preprocess(self) -> Preprocess | None:
        """The ``preprocess`` given (``None``: the items' data stacked)."""
        return self._preprocess

    @property
    def providers(self) -> list[str]:
        """``get_providers()`` of the (last) live session; empty before :meth:`start`."""
        return list(self._providers)

    @property
    def provider_failures(self) -> list[ProviderFailure]:
        """Providers asked for that did not work, with the reason."""
        return list(self._provider_failures)

    def statistics(self) -> WorkerStatistics:
        c = self._counters
        lat = np.fromiter(c.latencies, np.int64) if c.latencies else None
        service = np.fromiter(c.service, np.int64) if c.service else None
        restarts = self._restarts_before + (self._runner.restarts if self._runner else 0)
        return WorkerStatistics(
            items=c.items,
            failed=c.failed,
            expired=c.expired,
            reused=c.reused,
            batches=c.batches,
            splits=c.splits,
            restarts=restarts,
            providers=self.providers,
            provider_failures=self.provider_failures,
            max_batch=self.max_batch,
            max_delay=self.max_delay,
            threads=self.threads,
            replicas=self.replicas,
            latency_p50=int(np.percentile(lat, 50)) if lat is not None else 0,
            latency_p99=int(np.percentile(lat, 99)) if lat is not None else 0,
            batcher=self._batcher.statistics() if self._batcher is not None else None,
            batch_sizes=dict(sorted(c.sizes.items())),
            service_p50=int(np.percentile(service, 50)) if service is not None else 0,
            service_p99=int(np.percentile(service, 99)) if service is not None else 0,
            host_buffers=self._sessions[0].host_buffers if self._sessions else "-",
            layout=self._layout,
        )

    # -- the stream -----------------------------------------------------------

    def _holds(self, items: object, from_file: bool) -> bool:
        """Whether the replicas hand batches back in runs: offline input (a plain
        iterable, or a source reading a file: all there to be taken, throughput is the
        point) and no latency asked for (``max_delay``, ``latency_budget``)."""
        offline = from_file or not isinstance(items, AsyncIterable)
        return offline and self.max_delay == 0 and self.latency_budget is None

    async def stream(
        self,
        items: AsyncIterable[Any] | Iterable[Any] | Source,
        *,
        gate: ChangeGate | None = None,
        resize_in_decoder: bool = True,
    ) -> AsyncIterator[WorkerResult]:
        """Run every item through the model; yield one :class:`WorkerResult` each, in order.

        ``items`` may be a :class:`~fusion.Source` itself, or the not yet started
        ``frames()`` of one: then the worker asks the source to resize while
        decoding for its preprocess (:func:`~fusion.workers._preprocess.fuse_resize`;
        the outcome is in :attr:`resize_outcome`), so the frames the results carry
        are at the model's size. ``resize_in_decoder=False`` keeps the source's
        full frames (the preprocess resizes them). On the CPU the worker also tells
        such a source what a frame costs the model, so a video decoder runs one
        FFmpeg thread when it keeps up on one core (:attr:`decoder_outcome`). A ``break`` out of
        the loop is safe on asyncio (the finaliser closes the stream: its threads end, its
        input is closed); ``contextlib.aclosing`` closes it at once. See
        :mod:`fusion.workers._stream` for how items flow.
        """
        wired = _source_of(items)
        if wired is not None and resize_in_decoder:
            self.resize_outcome = fuse_resize([wired], self._preprocess)
        if isinstance(items, Source):
            items = items.frames()
        await self.start()
        assert self._runner is not None
        if wired is not None:
            runner, reserve = self._runner, self._reserve_threads
            self.decoder_outcome = await run_sync(pace_source, wired, runner, reserve)
        from_file = wired is not None and wired.from_file
        held = self._holds(items, from_file)
        window = self._window_arg
        if window is None and held and from_file:
            # The frames a source decodes ahead of the consumer (25 MB each at 4K) stay
            # as many as without runs.
            window = default_window(self.max_batch, self.replicas + 1)
        settings = StreamSettings(
            max_batch=self.max_batch,
            max_delay=self.max_delay,
            preferred_batch_sizes=self.preferred_batch_sizes,
            latency_budget=self.latency_budget,
            sizer=self._sizer,
            deadline=self.deadline,
            window=window,
            hold=_OFFLINE_HOLD if held else 1,
        )
        run = StreamRun(self._runner, self.replicas, settings, self._counters, gate)
        self._batcher = run.batcher
        try:
            async with aclosing(run.results(items)) as results:
                async for result in results:
                    yield result
        finally:
            if self._sizer is not None:
                remembered_sizes.keep(self._size_key, self._sizer)
            self._observe_layout()


def _source_of(items: object) -> Source | None:
    """The source of ``items``: a :class:`~fusion.Source` itself, or the source whose
    ``frames()`` generator ``items`` is while it has not started; else ``None``.
    (A source that is already decoding refuses the resize itself.)"""
    if isinstance(items, Source):
        return items
    if not inspect.isasyncgen(items) or items.ag_running or items.ag_frame is None:
        return None
    if items.ag_code.co_name != "frames":
        return None
    owner = items.ag_frame.f_locals.get("self")
    return owner if isinstance(owner, Source) else None
