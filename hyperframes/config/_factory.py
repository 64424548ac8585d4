"""The factory: a validated :class:`~hyperframes.config._schema.PipelineConfig` -> a pipeline.

Every source, clock, policy, stage, worker and recorder a config names is
built here, importing its module only when the config asks for it (a config
without video never loads PyAV).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from fusion.errors import ConfigError
from fusion.policies import SyncPolicy
from hyperframes.config._base import MS, ClockConfig, FixedOffsetConfig, OnlineClockConfig
from hyperframes.config._schema import (
    PipelineConfig,
    RecorderConfig,
    StageConfig,
    SyncConfig,
    WorkerConfig,
    parse_size,
)
from hyperframes.config._source_type import BuildContext
from hyperframes.config.sources import SourceConfig


def build_pipeline(
    config: PipelineConfig,
    *,
    recorder_path: str | Path | None = None,
    sensors: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    extra_sources: Sequence[Any] = (),
    recorder_options: Mapping[str, Any] | None = None,
    gather_ms: float | None = None,
) -> Any:
    """Instantiate the sources, policy, stages, workers and recorder of ``config``.

    ``sensors``/``exclude`` select sources by name; ``extra_sources`` are added
    as they are (a replayed file, say); ``gather_ms`` is the UDP time series'
    gather where their config leaves it unset (default: ``from_udp``'s,
    :data:`adapters._timeseries.DEFAULT_GATHER`). Returns a :class:`~fusion.Pipeline`.
    """
    from fusion import Pipeline, SensorSpec, SensorStage

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
    sync = config.sync
    asked = {*(sync.sensors or ()), *sync.windows_ms, sync.reference}
    chosen = [s.for_sync(asked) for s in chosen]  # an Ouster's IMU [sync] names: required
    built = [(s, build_source(s, copied, gather_ms=gather_ms)) for s in chosen]
    sources = [source for _, source in built] + list(extra_sources)
    if not sources:
        raise ConfigError("no source left after --sensors/--exclude")
    specs: list[SensorSpec] = []
    for cfg, source in built:
        for spec in source.specs:
            # a KITTI drive's, a bag's or an Ouster's (lidar + imu) clock/capacity keys
            # apply to each of its sensors
            if spec.name != cfg.name and not cfg.every_sensor:
                continue
            meta = spec.meta
            if cfg.export_type is not None:
                meta = {**spec.meta, "export_type": cfg.export_type}
            specs.append(
                dataclasses.replace(
                    spec,
                    meta=meta,
                    clock=build_clock(cfg.clock, spec),
                    optional=cfg.optional or spec.optional,
                    capacity=cfg.capacity or spec.capacity,
                    overflow=cfg.overflow or spec.overflow,
                )
            )
    names = [spec.name for s in sources for spec in s.specs]
    quiet = [spec.name for s in sources for spec in s.specs if spec.optional]
    policy = build_policy(config.sync, names, quiet)
    stages = [SensorStage(st.sensor, build_stage(st)) for st in config.stages]
    workers = {w.name: build_worker(w) for w in config.workers}
    recorder = None
    if recorder_path is not None or (config.recorder and config.recorder.path):
        options = dict(recorder_options or {})
        if any(s.recorded_stamps for s in chosen) or extra_sources:
            options.setdefault("wall_clock", False)  # frames keep their recorded times
        recorder = build_recorder(
            config.recorder or RecorderConfig(), recorder_path, specs, options
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


def build_clock(cfg: ClockConfig, spec: Any) -> Any:
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


def build_source(
    cfg: SourceConfig, copied: Collection[str] | None = None, *, gather_ms: float | None = None
) -> Any:
    """The source a validated ``[[sources]]`` table describes: its type's own
    :meth:`~hyperframes.config._source_type.SourceOptions.build`. ``copied``: sensors
    recorded as the source's own packets; ``gather_ms``: a UDP time series' gather
    where its table leaves it unset."""
    return cfg.build(BuildContext(copied=frozenset(copied or ()), gather_ms=gather_ms))


def build_policy(cfg: SyncConfig, names: list[str], quiet: Collection[str] = ()) -> SyncPolicy:
    """The sync policy of ``cfg`` over the sensors ``names``; ``quiet`` are sensors a
    source offers as optional (an Ouster's IMU): optional in the groups too unless
    ``cfg.sensors`` names the group's sensors itself."""
    from fusion.policies import ApproximateTime, ExactTime, Nearest

    present = set(names)
    sensors = [s for s in cfg.sensors if s in present] if cfg.sensors else names
    optional = [s for s in cfg.optional if s in present]  # --exclude may remove some
    if not cfg.sensors:
        optional += [s for s in quiet if s in present and s != cfg.reference and s not in optional]
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


def build_stage(cfg: StageConfig) -> Any:
    from adapters.lidar import BoxCrop, RangeCrop, RemoveOutliers, VoxelDownsample

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


def build_worker(cfg: WorkerConfig) -> Any:
    from fusion.workers import BatchWorker, group_input

    model: Any = cfg.model
    if cfg.model.startswith("builtin:"):
        from fusion.workers import _models as models

        builder = getattr(models, cfg.model.removeprefix("builtin:"), None)
        if builder is None or not callable(builder):
            raise ConfigError(f"worker {cfg.name!r}: no builtin model {cfg.model!r}")
        model = builder()
    return BatchWorker(
        model,
        preprocess=group_input(
            cfg.input, cfg.preprocess, size=(cfg.height, cfg.width), points=cfg.points
        ),
        max_batch=cfg.max_batch,
        max_delay=None if cfg.max_delay_ms is None else int(cfg.max_delay_ms * MS),
        providers=cfg.providers,
        replicas=cfg.replicas,
    )


def build_recorder(
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
        "chunk_duration": cfg.chunk_duration_s,
        "atomic": True,  # NAME.partial, renamed once whole (recordings.output_files)
    }
    video = dict(cfg.video)
    snapshot = overrides.get("snapshot")
    if snapshot is not None:
        # Black-box mode: a ring in memory, files only on a trigger.
        from recordings.hfr import SnapshotRecorder

        if video or overrides.get("split_bytes") or overrides.get("split_seconds"):
            raise ConfigError("snapshot recording does not encode video nor split files")
        return SnapshotRecorder(
            target,
            sensors=specs,
            metadata={**cfg.metadata, **overrides.get("metadata", {})},
            compression_level=overrides.get("compression_level") or cfg.compression_level,
            wall_clock=overrides.get("wall_clock") is not False,
            inputs=overrides.get("inputs") or (),
            **snapshot,
        )
    for key, value in overrides.items():
        if key == "metadata":
            options["metadata"] = {**options["metadata"], **value}
        elif key == "video":
            video.update(value or {})
        elif value is not None:
            options[key] = value
    if video:
        from recordings.hfr.video import VideoRecorder

        return VideoRecorder(target, video=video, sensors=specs, **options)
    return Recorder(target, sensors=specs, **options)
