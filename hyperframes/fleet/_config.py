"""RUN.toml: what a fleet run reads, how it syncs and models, and where results go.

A run file is a pipeline config (``[pipeline]``, ``[sync]``, ``[[stages]]``,
``[[workers]]``: the very models of :mod:`hyperframes.config`, so a pipeline that
works on one machine is pasted in unchanged) plus a ``[fleet]`` table naming
the recordings, the output folder and how to spread the work. There are no
``[[sources]]``: every recording is replayed as its own source.

Paths (recordings, output, model files) are relative to the current directory,
as in every other config, and made absolute on the driver so that workers on
other nodes get the same files (which must be on a filesystem they all see).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from fusion.errors import ConfigError
from hyperframes.config import (
    PipelineConfig,
    PipelineSection,
    StageConfig,
    StrictModel,
    SyncConfig,
    WorkerConfig,
    read_toml,
    validate_model,
)
from hyperframes.config.sources import ReplayConfig

RECORDING_SOURCE = "recording"
"""Name of the placeholder replay source in the pipeline config each task builds."""


class FleetSection(StrictModel):
    """The ``[fleet]`` table."""

    recordings: list[str] = Field(min_length=1)
    """Paths or globs of ``.hfr`` files."""
    output: str
    """Folder for the results, one ``<stem>.results.hfr`` per recording."""
    split_duration_s: float | None = Field(None, gt=0)
    """Recordings longer than this are cut into time ranges of this length, one
    task each (found through the footer index, so a task reads only its range)."""
    overlap_s: float = Field(1.0, ge=0)
    """Each time range is replayed this much further on both sides, so groups at
    its edges see the frames they would see in a whole-recording replay."""
    actors: int | None = Field(None, ge=1)
    """Inference actors; default: one per GPU, or enough CPU actors to leave the
    read tasks their cores."""
    device: Literal["auto", "cpu", "gpu"] = "auto"
    gpus_per_actor: float = Field(1.0, gt=0)
    cpus_per_actor: float | None = Field(None, ge=0)
    read_cpus: float = Field(1.0, gt=0)
    """CPUs a read task (replay + sync + stages) asks Ray for."""
    batch_size: int = Field(64, ge=1)
    """Groups per batch handed to an actor (the BatchWorker batches within it)."""
    rows_per_block: int = Field(32, ge=1)
    """Groups per Ray block a read task emits."""
    overwrite: bool = False
    """Redo recordings whose results already exist for this same config."""


class FleetConfig(StrictModel):
    """A whole fleet run, as written in a RUN.toml."""

    fleet: FleetSection
    pipeline: PipelineSection = PipelineSection()
    sync: SyncConfig
    stages: list[StageConfig] = Field(default_factory=list)
    workers: list[WorkerConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> FleetConfig:
        names = [w.name for w in self.workers]
        if len(set(names)) != len(names):
            raise ValueError(f"worker names must be unique, got {names}")
        if "group" in names:
            raise ValueError("'group' is reserved for the group index in the results")
        if self.fleet.split_duration_s is not None:
            reach = policy_reach_ms(self.sync)
            if self.fleet.overlap_s * 1000 < reach:
                raise ValueError(
                    f"fleet.overlap_s = {self.fleet.overlap_s} s is shorter than the sync "
                    f"policy's reach of {reach} ms (tolerance or window); raise it so "
                    "split time ranges give the groups of a whole-recording replay"
                )
        return self

    def pipeline_config(self, path: str, *, workers: bool) -> PipelineConfig:
        """The one-machine pipeline config replaying ``path`` (``max_latency`` off:
        offline, groups are decided by the data alone, never by how fast it ran)."""
        return PipelineConfig(
            pipeline=PipelineSection(max_latency_ms=None, capacity=self.pipeline.capacity),
            sources=[ReplayConfig(type="replay", name=RECORDING_SOURCE, path=path)],
            sync=self.sync,
            stages=self.stages,
            workers=self.workers if workers else [],
        )

    def digest(self) -> str:
        """A hash of everything that shapes the results (not the ``[fleet]`` table),
        stored in each results file so a rerun with another config redoes it."""
        body = self.model_dump(mode="json", exclude={"fleet"})
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def absolute(self) -> FleetConfig:
        """Paths made absolute against the current directory (done on the driver)."""
        fleet = self.fleet.model_copy(
            update={
                "recordings": [_absolute(p) for p in self.fleet.recordings],
                "output": _absolute(self.fleet.output),
            }
        )
        workers = [
            w
            if w.model.startswith("builtin:")
            else w.model_copy(update={"model": _absolute(w.model)})
            for w in self.workers
        ]
        return self.model_copy(update={"fleet": fleet, "workers": workers})


def policy_reach_ms(sync: SyncConfig) -> float:
    """How far (ms) from a group's time the policy may take frames from."""
    if sync.policy == "exact":
        return 0.0
    tolerances = (
        list(sync.tolerance_ms.values())
        if isinstance(sync.tolerance_ms, dict)
        else [sync.tolerance_ms]
    )
    windows = [max(a, b) for a, b in sync.windows_ms.values()]
    return max([0.0, *tolerances, *windows])


def expand_recordings(patterns: list[str]) -> list[str]:
    """Every ``.hfr`` a list of paths/globs names, sorted per pattern, without repeats."""
    out: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise ConfigError(f"fleet.recordings: the pattern {pattern!r} matches no file")
        elif os.path.isfile(pattern):
            matches = [pattern]
        else:
            raise ConfigError(f"fleet.recordings: no such file {pattern!r}")
        for m in matches:
            m = os.path.abspath(m)
            if m not in seen:
                seen.add(m)
                out.append(m)
    return out


def load_fleet_config(path: str | os.PathLike[str], *, recording: str | None = None) -> FleetConfig:
    """Read and validate a RUN.toml; every problem in one :class:`ConfigError`.

    ``recording``: a command that names its one recording itself (``segments``) needs
    no ``[fleet]`` section; without one the run is of that recording alone.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{path}: no such run file")
    raw = read_toml(path, "run")  # a regular file: /dev/zero or a FIFO is refused, not read
    if recording is not None and "fleet" not in raw:
        raw["fleet"] = {"recordings": [recording], "output": "."}
    return validate_fleet_config(raw, source=str(path))


def validate_fleet_config(raw: dict[str, Any], *, source: str = "<run>") -> FleetConfig:
    """Validate an already-parsed run mapping."""
    return validate_model(FleetConfig, raw, source=source, what="the run file")


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))
