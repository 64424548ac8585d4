"""Process a fleet of recordings: on a Ray cluster (:func:`run_fleet`) or in a plain loop
(:func:`run_local`), with the same results files either way.

On Ray the job is one Ray Data pipeline::

    read (HfrDatasource: a task per part, replay + sync + stages, CPU)
      -> map_batches(InferenceActor, ActorPoolStrategy)   # BatchWorkers, GPU when present
      -> driver: ResultCollector writes each recording's results when complete

Ray streams it: reads run ahead of inference only as far as Ray Data's
backpressure allows, actors batch what arrives, and the driver writes a
recording's file as soon as its last group is in. Only group info and model
outputs reach the driver; frames go from a read task to an actor through the
object store and no further.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fusion import Stage
from hyperframes.fleet._config import FleetConfig, expand_recordings
from hyperframes.fleet._plan import ResourcePlan, plan_parts, plan_resources
from hyperframes.fleet._results import (
    RecordingOutcome,
    ResultCollector,
    is_done,
    outputs_for,
)
from hyperframes.fleet._tasks import iterate_blocking, part_rows

log = logging.getLogger("hyperframes.fleet")


@dataclass(slots=True)
class FleetReport:
    """The outcome of a fleet run."""

    recordings: list[RecordingOutcome]
    elapsed_s: float
    plan: ResourcePlan | None = None
    """The resource plan on Ray; ``None`` for a local run."""
    parts: int = 0
    """Read tasks (parts) run."""
    extra: dict[str, Any] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for r in self.recordings if r.status == status)

    @property
    def ok(self) -> bool:
        return all(r.status in ("written", "skipped") for r in self.recordings)


def _prepare(
    config: FleetConfig, overwrite: bool | None
) -> tuple[FleetConfig, list[str], ResultCollector, list[RecordingOutcome]]:
    config = config.absolute()
    inputs = expand_recordings(config.fleet.recordings)
    outputs = outputs_for(inputs, config.fleet.output)
    digest = config.digest()
    redo = config.fleet.overwrite if overwrite is None else overwrite
    skipped = []
    todo: dict[str, str] = {}
    for rec, out in outputs.items():
        if not redo and is_done(out, rec, digest):
            skipped.append(RecordingOutcome(rec, out, status="skipped"))
        else:
            todo[rec] = out
    collector = ResultCollector(todo, digest=digest, workers=[w.name for w in config.workers])
    return config, list(todo), collector, skipped


def run_fleet(
    config: FleetConfig,
    *,
    address: str | None = None,
    stages: Sequence[Stage] = (),
    progress: bool = True,
    overwrite: bool | None = None,
    on_done: Callable[[RecordingOutcome], None] | None = None,
    **ray_init: Any,
) -> FleetReport:
    """Process every recording of ``config`` on Ray; results per recording in ``fleet.output``.

    ``address`` is a Ray address (``ray://head:10001``, ``auto``); ``None``
    starts a local Ray, unless one is already initialised in this process.
    ``stages`` are Python stages run after the config's (they are shipped to
    the tasks by Ray). ``on_done`` is called as each recording finishes.
    """
    from hyperframes.fleet._ray import require_ray

    ray = require_ray()
    from hyperframes.fleet._datasource import HfrDatasource, InferenceActor, drop_frames

    started = time.perf_counter()
    config, todo, collector, skipped = _prepare(config, overwrite)
    if not ray.is_initialized():
        ray.init(address=address, **ray_init)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = progress
    resources = ray.cluster_resources()
    fleet = config.fleet
    plan = plan_resources(
        resources.get("CPU", 0.0),
        resources.get("GPU", 0.0),
        actors=fleet.actors,
        device=fleet.device,
        gpus_per_actor=fleet.gpus_per_actor,
        cpus_per_actor=fleet.cpus_per_actor,
        read_cpus=fleet.read_cpus,
    )
    log.info(
        "fleet: %d recording(s) to process, %d done already; %s", len(todo), len(skipped), plan.note
    )
    source = HfrDatasource(todo, config, stages=stages) if todo else None
    if source is not None:
        ds = ray.data.read_datasource(source, num_cpus=plan.read_cpus)
        if config.workers:
            ds = ds.map_batches(
                InferenceActor,
                fn_constructor_kwargs={"config": config, "threads": plan.threads_per_actor},
                compute=ray.data.ActorPoolStrategy(size=plan.actors),
                batch_size=fleet.batch_size,
                batch_format="pyarrow",
                num_cpus=plan.cpus_per_actor,
                num_gpus=plan.gpus_per_actor or None,
            )
        else:
            ds = ds.map_batches(drop_frames, batch_format="pyarrow", batch_size=None)
        for batch in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            for outcome in collector.add(batch.to_pylist()):
                _finished(outcome, on_done)
    for rec in collector.pending():  # only if Ray lost rows it claimed to deliver
        outcome = collector.outcomes[rec]
        outcome.status, outcome.error = "failed", "the run ended before all its groups arrived"
    return FleetReport(
        [*skipped, *collector.outcomes.values()],
        time.perf_counter() - started,
        plan,
        parts=0 if source is None else len(source.parts),
    )


def run_local(
    config: FleetConfig,
    *,
    stages: Sequence[Stage] = (),
    overwrite: bool | None = None,
    on_done: Callable[[RecordingOutcome], None] | None = None,
) -> FleetReport:
    """The plain loop: each recording through the one-machine pipeline, models included.

    Writes the same results files as :func:`run_fleet` (the baseline of the
    benchmark, and the way to debug a run file before sending it to a cluster).
    """
    started = time.perf_counter()
    config, todo, collector, skipped = _prepare(config, overwrite)
    fleet = config.fleet
    parts = plan_parts(
        todo,
        split=None,  # one machine: nothing gained by cutting a recording
        overlap=int(fleet.overlap_s * 1e9),
        policy=config.sync.policy,
    )
    for part in parts:
        blocks = iterate_blocking(
            lambda part=part: part_rows(  # type: ignore[misc]
                config, part, stages=stages, workers=True, rows_per_block=fleet.rows_per_block
            )
        )
        for rows in blocks:
            for outcome in collector.add(rows):
                _finished(outcome, on_done)
    return FleetReport(
        [*skipped, *collector.outcomes.values()], time.perf_counter() - started, parts=len(parts)
    )


def _finished(
    outcome: RecordingOutcome, on_done: Callable[[RecordingOutcome], None] | None
) -> None:
    if outcome.status == "failed":
        log.warning("fleet: %s failed: %s", outcome.path, outcome.error)
    if on_done is not None:
        on_done(outcome)
