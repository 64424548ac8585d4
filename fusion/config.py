"""Pipelines described in TOML, validated with every error reported at once.

A config file names sources, the sync policy, stages, workers and the recorder.
:func:`load_config` reads and validates it (pydantic), collecting *all*
problems, each with the file, the key path, what was expected and what was
found; :func:`build_pipeline` turns a valid config into a :class:`~fusion.Pipeline`.

Durations in the file are in milliseconds (``*_ms``) or seconds (``*_s``)
because people write them that way; the pipeline gets int nanoseconds.
``examples/configs/`` holds complete, commented examples.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fusion.errors import ConfigError

MS = 1_000_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OnlineClockConfig(_Model):
    model: Literal["online"] = "online"
    window_s: float = Field(20.0, gt=0)
    extra_offset_ms: float = 0.0
    wrap_period_s: float | None = Field(None, gt=0)


class FixedOffsetConfig(_Model):
    model: Literal["fixed"] = "fixed"
    offset_ms: float


ClockConfig = Literal["none", "identity", "online"] | OnlineClockConfig | FixedOffsetConfig


class _SourceBase(_Model):
    name: str = Field(min_length=1)
    clock: ClockConfig = "none"
    optional: bool = False
    capacity: int | None = Field(None, ge=1)
    overflow: Literal["block", "drop_oldest", "drop_newest"] | None = None


class SyntheticConfig(_SourceBase):
    type: Literal["synthetic_camera", "synthetic_lidar", "synthetic_imu"]
    rate_hz: float | None = Field(None, gt=0)
    duration_s: float | None = Field(10.0, gt=0)
    seed: int = 0
    offset_ms: float = 0.0
    skew_ppm: float = 0.0
    delay_ms: float = Field(1.0, ge=0)
    jitter_ms: float = Field(0.0, ge=0)
    drop_prob: float = Field(0.0, ge=0, le=1)
    realtime: bool = True


class VideoConfig(_SourceBase):
    type: Literal["video"]
    url: str
    pixel_format: Literal["rgb24", "bgr24", "gray", "yuv420p"] = "rgb24"
    size: tuple[int, int] | None = None
    hwaccel: str | None = None
    live: bool | None = None


class VelodyneConfig(_SourceBase):
    type: Literal["velodyne"]
    model: str
    pcap: str | None = None
    port: int | None = Field(None, ge=0, le=65535)
    speed: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one_input(self) -> VelodyneConfig:
        if (self.pcap is None) == (self.port is None):
            raise ValueError("give exactly one of 'pcap' (a file) or 'port' (live UDP)")
        return self


class PointCloudFilesConfig(_SourceBase):
    type: Literal["pointcloud_files"]
    paths: str
    rate_hz: float | None = Field(None, gt=0)
    timestamps: str | None = None
    speed: float | None = Field(None, gt=0)


class TimeSeriesCsvConfig(_SourceBase):
    type: Literal["timeseries_csv"]
    path: str
    time_column: str = "t"
    time_unit: Literal["s", "ms", "us", "ns"] = "s"
    columns: list[str] | None = None


class ReplayConfig(_SourceBase):
    type: Literal["replay"]
    path: str
    speed: float | None = Field(None, gt=0)


SourceConfig = Annotated[
    SyntheticConfig
    | VideoConfig
    | VelodyneConfig
    | PointCloudFilesConfig
    | TimeSeriesCsvConfig
    | ReplayConfig,
    Field(discriminator="type"),
]


class SyncConfig(_Model):
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


class StageConfig(_Model):
    type: Literal["voxel_downsample", "range_crop", "box_crop", "remove_outliers"]
    sensor: str
    voxel_size: float | None = Field(None, gt=0)
    min_range: float = Field(0.0, ge=0)
    max_range: float | None = Field(None, gt=0)
    min_bound: tuple[float, float, float] | None = None
    max_bound: tuple[float, float, float] | None = None
    neighbours: int = Field(20, ge=1)
    std_ratio: float = Field(2.0, gt=0)


class WorkerConfig(_Model):
    name: str
    model: str
    """A path to an .onnx file, or ``builtin:NAME`` for a model of :mod:`fusion.workers.models`."""
    input: str
    """The sensor whose frame feeds the model."""
    preprocess: Literal["image", "points", "raw"] = "raw"
    size: tuple[int, int] = (224, 224)
    points: int = Field(2048, ge=1)
    max_batch: int | None = Field(None, ge=1)
    max_delay_ms: float | None = Field(None, ge=0)
    providers: str = "auto"
    replicas: int = Field(1, ge=1)


class RecorderConfig(_Model):
    path: str | None = None
    compression_level: int = Field(3, ge=-7, le=22)
    split_size: str | None = None
    split_duration_s: float | None = Field(None, gt=0)
    flush_interval_s: float = Field(1.0, gt=0)
    metadata: dict[str, str] = {}
    video: dict[str, str] = {}
    """Camera sensors recorded as encoded video: ``{ cam = "h264" }`` (``hevc``, ``ffv1``
    lossless, ``copy`` the source's own packets; options as ``"h264:crf=28,gop=60"``);
    see :mod:`adapters.video.recording`."""


class PipelineSection(_Model):
    max_latency_ms: float | None = Field(200.0, gt=0)
    capacity: int = Field(16, ge=1)


class PipelineConfig(_Model):
    """A whole pipeline, as written in a TOML file."""

    pipeline: PipelineSection = PipelineSection()
    sources: list[SourceConfig] = Field(min_length=1)
    sync: SyncConfig
    stages: list[StageConfig] = []
    workers: list[WorkerConfig] = []
    recorder: RecorderConfig | None = None

    @model_validator(mode="after")
    def _names_are_known(self) -> PipelineConfig:
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"source names must be unique, got {names}")
        known = set(names)
        wanted = set(self.sync.sensors or ()) | set(self.sync.optional) | set(self.sync.windows_ms)
        wanted |= {self.sync.reference} if self.sync.reference else set()
        wanted |= {s.sensor for s in self.stages} | {w.input for w in self.workers}
        wanted |= set(self.recorder.video) if self.recorder else set()
        unknown = sorted(wanted - known)
        if unknown and not any(s.type == "replay" for s in self.sources):
            raise ValueError(
                f"sensors {unknown} are not the name of any source; sources are {sorted(known)}"
            )
        return self


def parse_size(text: str) -> int:
    """``"4GiB"``, ``"500MB"``, ``"1024"`` -> bytes."""
    units = {
        "": 1,
        "b": 1,
        "kb": 10**3,
        "mb": 10**6,
        "gb": 10**9,
        "tb": 10**12,
        "kib": 2**10,
        "mib": 2**20,
        "gib": 2**30,
        "tib": 2**40,
    }
    raw = text.strip().lower().replace(" ", "")
    number = raw.rstrip("kmgtib")
    unit = raw[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in units or value < 0:
        raise ValueError(f"expected a size like '4GiB' or '500MB', found {text!r}")
    return int(value * units[unit])


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> PipelineConfig:
    """Read and validate a TOML pipeline config; every problem in one :class:`ConfigError`."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from err
    if overrides:
        raw = {**raw, **overrides}
    return validate_config(raw, source=str(path))


def validate_config(raw: dict[str, Any], *, source: str = "<config>") -> PipelineConfig:
    """Validate an already-parsed config mapping."""
    try:
        return PipelineConfig.model_validate(raw)
    except ValidationError as err:
        problems = [_describe(source, e) for e in err.errors()]
        error = ConfigError(
            f"{source}: {len(problems)} problem(s) in the config:\n  " + "\n  ".join(problems)
        )
        error.problems = problems  # type: ignore[attr-defined]
        raise error from None


def _describe(source: str, e: Any) -> str:
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
    return f"{source}: {loc}: {expected}; found {found!r}"


# -- building -----------------------------------------------------------------------------------


def build_pipeline(
    config: PipelineConfig,
    *,
    recorder_path: str | Path | None = None,
    sensors: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    extra_sources: Sequence[Any] = (),
    recorder_options: Mapping[str, Any] | None = None,
) -> Any:
    """Instantiate the sources, policy, stages, workers and recorder of ``config``.

    ``sensors``/``exclude`` select sources by name; ``extra_sources`` are added
    as they are (a replayed file, say). Returns a :class:`~fusion.Pipeline`.
    """
    from fusion.frames import SensorSpec
    from fusion.pipeline import Pipeline, SensorStage

    chosen = [
        s
        for s in config.sources
        if (sensors is None or s.name in sensors) and s.name not in exclude
    ]
    copied = {
        name
        for name, codec in (config.recorder.video if config.recorder else {}).items()
        if codec.partition(":")[0].strip().lower() == "copy"
    }
    sources = [_build_source(s, copied) for s in chosen] + list(extra_sources)
    if not sources:
        raise ConfigError("no source left after --sensors/--exclude")
    specs: list[SensorSpec] = []
    by_name = {c.name: c for c in chosen}
    for source in sources:
        for spec in source.specs:
            cfg = by_name.get(spec.name)
            if cfg is None:
                continue
            specs.append(
                dataclasses.replace(
                    spec,
                    clock=_build_clock(cfg.clock, spec),
                    optional=cfg.optional or spec.optional,
                    capacity=cfg.capacity or spec.capacity,
                    overflow=cfg.overflow or spec.overflow,
                )
            )
    names = [spec.name for s in sources for spec in s.specs]
    policy = _build_policy(config.sync, names)
    stages = [SensorStage(st.sensor, _build_stage(st)) for st in config.stages]
    workers = {w.name: _build_worker(w) for w in config.workers}
    recorder = None
    if recorder_path is not None or (config.recorder and config.recorder.path):
        recorder = _build_recorder(
            config.recorder or RecorderConfig(), recorder_path, specs, recorder_options or {}
        )
    p = config.pipeline
    return Pipeline(
        sources,
        policy,
        max_latency=None if p.max_latency_ms is None else int(p.max_latency_ms * MS),
        sensors=specs,
        stages=stages,
        workers=workers,
        recorder=recorder,
        capacity=p.capacity,
    )


def _build_clock(cfg: ClockConfig, spec: Any) -> Any:
    from fusion.clock import FixedOffset, Identity, OnlineClock

    wrap = spec.meta.get("wrap_period_ns") if spec.meta else None
    if cfg == "none":
        return spec.clock
    if cfg == "identity":
        return Identity()
    if cfg == "online":
        return OnlineClock(wrap_period_ns=wrap)
    if isinstance(cfg, FixedOffsetConfig):
        return FixedOffset(int(cfg.offset_ms * MS))
    assert isinstance(cfg, OnlineClockConfig)
    return OnlineClock(
        window_ns=int(cfg.window_s * 1e9),
        extra_offset_ns=int(cfg.extra_offset_ms * MS),
        wrap_period_ns=int(cfg.wrap_period_s * 1e9) if cfg.wrap_period_s else wrap,
    )


def _build_source(cfg: Any, copied: set[str] | None = None) -> Any:
    if isinstance(cfg, SyntheticConfig):
        from adapters.synthetic import SensorTiming, SyntheticCamera, SyntheticImu, SyntheticLidar

        cls = {
            "synthetic_camera": SyntheticCamera,
            "synthetic_lidar": SyntheticLidar,
            "synthetic_imu": SyntheticImu,
        }[cfg.type]
        kwargs: dict[str, Any] = {
            "timing": SensorTiming(
                offset_ns=int(cfg.offset_ms * MS),
                skew_ppm=cfg.skew_ppm,
                delay_ns=int(cfg.delay_ms * MS),
                jitter_mean_ns=int(cfg.jitter_ms * MS),
                drop_prob=cfg.drop_prob,
            ),
            "duration_s": cfg.duration_s,
            "seed": cfg.seed,
            "realtime": cfg.realtime,
            "optional": cfg.optional,
        }
        if cfg.rate_hz is not None:
            kwargs["rate_hz"] = cfg.rate_hz
        return cls(cfg.name, **kwargs)
    if isinstance(cfg, VideoConfig):
        from adapters.video import VideoSource

        return VideoSource(
            cfg.url,
            name=cfg.name,
            pixel_format=cfg.pixel_format,
            size=cfg.size,
            hwaccel=cfg.hwaccel,
            live=cfg.live,
            keep_packets=cfg.name in (copied or ()),
        )
    if isinstance(cfg, VelodyneConfig):
        from adapters.lidar import VelodyneSource

        return VelodyneSource(
            cfg.pcap, model=cfg.model, port=cfg.port, name=cfg.name, speed=cfg.speed
        )
    if isinstance(cfg, PointCloudFilesConfig):
        from adapters.lidar import PointCloudFiles

        return PointCloudFiles(
            cfg.paths,
            rate_hz=cfg.rate_hz,
            timestamps=cfg.timestamps,
            name=cfg.name,
            speed=cfg.speed,
        )
    if isinstance(cfg, TimeSeriesCsvConfig):
        from adapters.timeseries import TimeSeriesSource

        return TimeSeriesSource.from_csv(
            cfg.path,
            time_column=cfg.time_column,
            time_unit=cfg.time_unit,
            columns=cfg.columns,
            name=cfg.name,
        )
    assert isinstance(cfg, ReplayConfig)
    from recordings import Replay

    return Replay(cfg.path, speed=cfg.speed)


def _build_policy(cfg: SyncConfig, names: list[str]) -> Any:
    from fusion.policies import ApproximateTime, ExactTime, Nearest

    present = set(names)
    sensors = [s for s in cfg.sensors if s in present] if cfg.sensors else names
    optional = [s for s in cfg.optional if s in present]  # --exclude may remove some
    windows = {k: v for k, v in cfg.windows_ms.items() if k in present}
    if cfg.policy == "nearest" and cfg.reference not in present:
        raise ConfigError(
            f"the sync reference {cfg.reference!r} is not among the sources {sorted(present)}"
        )
    if cfg.policy == "exact":
        return ExactTime(sensors, queue_size=cfg.queue_size, optional=optional)
    if cfg.policy == "approximate":
        return ApproximateTime(
            sensors,
            queue_size=cfg.queue_size,
            max_interval=None if cfg.max_interval_ms is None else int(cfg.max_interval_ms * MS),
            age_penalty=cfg.age_penalty,
            lower_bounds={k: int(v * MS) for k, v in cfg.lower_bounds_ms.items()},
        )
    tolerance: int | dict[str, int]
    if isinstance(cfg.tolerance_ms, dict):
        tolerance = {k: int(v * MS) for k, v in cfg.tolerance_ms.items() if k in present}
    else:
        tolerance = int(cfg.tolerance_ms * MS)
    assert cfg.reference is not None
    return Nearest(
        cfg.reference,
        sensors,
        tolerance,
        optional=optional,
        windows={k: (int(a * MS), int(b * MS)) for k, (a, b) in windows.items()},
    )


def _build_stage(cfg: StageConfig) -> Any:
    from adapters.lidar.processing import BoxCrop, RangeCrop, RemoveOutliers, VoxelDownsample

    if cfg.type == "voxel_downsample":
        if cfg.voxel_size is None:
            raise ConfigError(f"stage voxel_downsample on {cfg.sensor!r} needs 'voxel_size'")
        return VoxelDownsample(cfg.voxel_size)
    if cfg.type == "range_crop":
        return RangeCrop(cfg.min_range, cfg.max_range if cfg.max_range is not None else 1e9)
    if cfg.type == "box_crop":
        if cfg.min_bound is None or cfg.max_bound is None:
            raise ConfigError(f"stage box_crop on {cfg.sensor!r} needs min_bound and max_bound")
        return BoxCrop(cfg.min_bound, cfg.max_bound)
    return RemoveOutliers(cfg.neighbours, cfg.std_ratio)


def _build_worker(cfg: WorkerConfig) -> Any:
    from fusion.workers import BatchWorker
    from fusion.workers.preprocess import group_input

    model: Any = cfg.model
    if cfg.model.startswith("builtin:"):
        from fusion.workers import models

        builder = getattr(models, cfg.model.removeprefix("builtin:"), None)
        if builder is None or not callable(builder):
            raise ConfigError(f"worker {cfg.name!r}: no builtin model {cfg.model!r}")
        model = builder()
    return BatchWorker(
        model,
        preprocess=group_input(cfg.input, cfg.preprocess, size=cfg.size, points=cfg.points),
        max_batch=cfg.max_batch,
        max_delay=None if cfg.max_delay_ms is None else int(cfg.max_delay_ms * MS),
        providers=cfg.providers,
        replicas=cfg.replicas,
    )


def _build_recorder(
    cfg: RecorderConfig, path: str | Path | None, specs: list[Any], overrides: Mapping[str, Any]
) -> Any:
    from recordings import Recorder

    target = path if path is not None else cfg.path
    assert target is not None
    options: dict[str, Any] = {
        "metadata": dict(cfg.metadata),
        "compression_level": cfg.compression_level,
        "split_bytes": parse_size(cfg.split_size) if cfg.split_size else None,
        "split_seconds": cfg.split_duration_s,
        "flush_interval": cfg.flush_interval_s,
    }
    video = dict(cfg.video)
    for key, value in overrides.items():
        if key == "metadata":
            options["metadata"] = {**options["metadata"], **value}
        elif key == "video":
            video.update(value or {})
        elif value is not None:
            options[key] = value
    if video:
        from adapters.video.recording import VideoRecorder

        return VideoRecorder(target, video=video, sensors=specs, **options)
    return Recorder(target, sensors=specs, **options)
