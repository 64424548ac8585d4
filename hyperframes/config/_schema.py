"""The TOML config schema: every section and key, validated with every error reported at once.

A config file names sources, the sync policy, stages, workers and the recorder.
:func:`load_config` reads and validates it (pydantic), collecting *all*
problems, each with the file, the key path, what was expected and what was
found; :func:`build_pipeline` turns a valid config into a :class:`~fusion.Pipeline`.

Durations in the file are in milliseconds (``*_ms``) or seconds (``*_s``)
because people write them that way; the pipeline gets int nanoseconds.
``examples/configs/`` holds complete, commented examples.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, model_validator

from fusion.errors import ConfigError
from hyperframes.config._base import StrictModel, _refuse_size
from hyperframes.config._toml import read_toml
from hyperframes.config.sources import BY_TYPE, SourceConfig


class SyncConfig(StrictModel):
    policy: Literal["exact", "approximate", "nearest"] = "nearest"
    sensors: list[str] | None = None
    """All sensors of a group (default: every source's sensors)."""
    reference: str | None = None
    tolerance_ms: float | dict[str, float] = 20.0
    optional: list[str] = []
    windows_ms: dict[str, tuple[float, float]] = {}
    queue_size: int = Field(10, ge=1)
    max_interval_ms: float | None = Field(None, ge=0)
    age_penalty: float = Field(0.0, ge=0)
    lower_bounds_ms: dict[str, float] = {}

    @model_validator(mode="after")
    def _reference_for_nearest(self) -> SyncConfig:
        if self.policy == "nearest" and not self.reference:
            raise ValueError(
                "policy 'nearest' needs 'reference', the sensor each group is built on"
            )
        return self


class StageConfig(StrictModel):
    type: Literal["voxel_downsample", "range_crop", "box_crop", "remove_outliers"]
    sensor: str
    voxel_size: float | None = Field(None, gt=0)
    min_range: float = Field(0.0, ge=0)
    max_range: float | None = Field(None, gt=0)
    min_bound: tuple[float, float, float] | None = None
    max_bound: tuple[float, float, float] | None = None
    neighbours: int = Field(20, ge=1)
    std_ratio: float = Field(2.0, gt=0)


class WorkerConfig(StrictModel):
    """A batch worker; images are resized to ``width`` x ``height`` (default 224 x 224)."""

    name: str
    model: str
    """A path to an .onnx file, or ``builtin:NAME`` for a model of :mod:`fusion.workers._models`."""
    input: str
    """The sensor whose frame feeds the model."""
    preprocess: Literal["image", "points", "raw"] = "raw"
    width: int = Field(224, ge=1)
    height: int = Field(224, ge=1)
    points: int = Field(2048, ge=1)
    max_batch: int | None = Field(None, ge=1)
    max_delay_ms: float | None = Field(None, ge=0)
    providers: str = "auto"
    replicas: int = Field(1, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _no_size(cls, raw: Any) -> Any:
        return _refuse_size(raw)


class RecorderConfig(StrictModel):
    path: str | None = None
    compression_level: Literal["auto"] | Annotated[int, Field(ge=-7, le=22)] = "auto"
    """``"auto"``: zstd 3, 1 or none per chunk, whichever pays (``recordings.hfr._effort``)."""
    split_size: str | None = None
    split_duration_s: float | None = Field(None, gt=0)
    flush_interval_s: float = Field(1.0, gt=0)
    chunk_duration_s: float | None = Field(1.0, gt=0, lt=1e9)
    """A chunk closes once its frames span this much recording time (damage costs at most
    about this much); ``None``: at its size bound only."""
    metadata: dict[str, str] = {}
    video: dict[str, str] = {}
    """Camera sensors recorded as encoded video: ``{ cam = "h264" }`` (``hevc``, ``ffv1``
    lossless, ``copy`` the source's own packets; options as ``"h264:crf=28,gop=60"``);
    see :mod:`recordings.hfr.video._recording`."""


class PipelineSection(StrictModel):
    max_latency_ms: float | None = Field(200.0, gt=0)
    capacity: int = Field(16, ge=1)


class PipelineConfig(StrictModel):
    """A whole pipeline, as written in a TOML file."""

    pipeline: PipelineSection = PipelineSection()
    sources: list[SourceConfig] = Field(min_length=1)
    sync: SyncConfig
    stages: list[StageConfig] = []
    workers: list[WorkerConfig] = []
    recorder: RecorderConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_sync(cls, raw: Any) -> Any:
        """One plain source needs no ``[sync]``: its frames are the groups."""
        if not isinstance(raw, dict) or "sync" in raw:
            return raw
        sources = [s for s in raw.get("sources") or () if isinstance(s, dict)]
        names = [s.get("name") for s in sources]
        kind = sources[0].get("type") if len(sources) == 1 else None
        model = BY_TYPE.get(kind) if isinstance(kind, str) else None
        simple = len(names) == 1 and not (model is not None and model.needs_sync)
        if simple and isinstance(names[0], str):
            return {**raw, "sync": {"policy": "nearest", "reference": names[0]}}
        first = names[0] if names and isinstance(names[0], str) else "SENSOR"
        raise ValueError(
            "[sync] is missing: say how the sensors' frames are grouped, for example "
            f'[sync] policy = "nearest", reference = "{first}", tolerance_ms = 20 '
            "(see docs/sync.md)"
        )

    @model_validator(mode="after")
    def _names_are_known(self) -> PipelineConfig:
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"source names must be unique, got {names}")
        known = set(names) | {n for s in self.sources for n in s.sensor_names()}
        wanted = set(self.sync.sensors or ()) | set(self.sync.optional) | set(self.sync.windows_ms)
        wanted |= {self.sync.reference} if self.sync.reference else set()
        wanted |= {s.sensor for s in self.stages} | {w.input for w in self.workers}
        wanted |= set(self.recorder.video) if self.recorder else set()
        unknown = sorted(wanted - known)
        if unknown and not any(s.open_ended() for s in self.sources):
            raise ValueError(
                f"sensors {unknown} are not the name of any source; sources are {sorted(known)}"
            )
        return self


def parse_size(text: str) -> int:
    """``"4GiB"``, ``"500MB"``, ``"1024"`` -> bytes (:func:`hyperframes.cli._units.parse_size`:
    ``inf``, ``nan`` and out-of-range sizes are refused)."""
    from hyperframes.cli import parse_size as strict

    return strict(text)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> PipelineConfig:
    """Read and validate a TOML pipeline config; every problem in one :class:`ConfigError`."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{path}: no such config file")
    raw = read_toml(path)  # a regular file: /dev/zero or a FIFO is refused, not read
    if overrides:
        raw = {**raw, **overrides}
    sources = raw.get("sources")
    if isinstance(sources, list) and any(
        isinstance(s, dict) and s.get("type") == "python" for s in sources
    ):
        # A user's class lives beside the config or in the working directory.
        for folder in (str(Path.cwd()), str(path.resolve().parent)):
            if folder not in sys.path:
                sys.path.insert(0, folder)
    return validate_config(raw, source=str(path))


def validate_config(raw: dict[str, Any], *, source: str = "<config>") -> PipelineConfig:
    """Validate an already-parsed config mapping."""
    return validate_model(PipelineConfig, raw, source=source, what="the config")


Model = TypeVar("Model", bound=BaseModel)


def validate_model(model: type[Model], raw: dict[str, Any], *, source: str, what: str) -> Model:
    """``raw`` validated as ``model``; every problem in one :class:`ConfigError` (its
    ``problems`` lists them, each as :func:`describe_error` words it)."""
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        problems = [describe_error(source, e) for e in err.errors()]
        error = ConfigError(
            f"{source}: {len(problems)} problem(s) in {what}:\n  " + "\n  ".join(problems)
        )
        error.problems = problems  # type: ignore[attr-defined]
        raise error from None


def describe_error(source: str, e: Any) -> str:
    loc = ".".join(
        f"[{p}]" if isinstance(p, int) else str(p) for p in e["loc"] if p not in ("function-after",)
    ).replace(".[", "[")
    found = e.get("input")
    kind = e["type"]
    if kind == "extra_forbidden":
        return f"{source}: {loc}: unknown key (check its spelling), found {found!r}"
    if kind == "missing":
        return f"{source}: {loc}: required key is missing"
    msg = str(e["msg"])
    msg = msg.removeprefix("Value error, ")
    expected = msg[0].lower() + msg[1:] if msg else "a valid value"
    expected = expected.replace("input should be", "expected")
    if not loc:  # a problem of the whole file: the input is the file itself
        return f"{source}: {expected}"
    return f"{source}: {loc}: {expected}; found {found!r}"
