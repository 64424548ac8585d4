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
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from fusion.errors import ConfigError

MS = 1_000_000


_DURATION_LIMITS = {"_ms": 9.2e12, "_s": 9.2e9}  # what still fits int64 nanoseconds


def _check_durations(name: str, value: Any) -> None:
    for suffix, limit in _DURATION_LIMITS.items():
        if not name.endswith(suffix):
            continue
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            for x in v if isinstance(v, tuple | list) else [v]:
                if isinstance(x, int | float) and not abs(x) <= limit:  # nan fails too
                    raise ValueError(
                        f"{name} = {x!r} is not a finite duration of at most {limit:g} "
                        f"{suffix[1:]} (it must fit in int64 nanoseconds)"
                    )


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _durations_fit(self) -> StrictModel:
        """Every ``*_ms`` / ``*_s`` value is finite and fits in int64 ns (1e308 does not)."""
        for name in type(self).model_fields:
            _check_durations(name, getattr(self, name))
        return self


class OnlineClockConfig(StrictModel):
    model: Literal["online"] = "online"
    window_s: float = Field(20.0, gt=0)
    extra_offset_ms: float = 0.0
    wrap_period_s: float | None = Field(None, gt=0)


class FixedOffsetConfig(StrictModel):
    model: Literal["fixed"] = "fixed"
    offset_ms: float


ClockConfig = Literal["none", "identity", "online"] | OnlineClockConfig | FixedOffsetConfig


class _SourceBase(StrictModel):
    name: str = Field(min_length=1)
    clock: ClockConfig = "none"
    optional: bool = False
    capacity: int | None = Field(None, ge=1)
    overflow: Literal["block", "drop_oldest", "drop_newest"] | None = None
    export_type: str | None = None
    """The message type ``hyperframes export`` writes this source's time series as
    (``"sensor_msgs/msg/Imu"``...; :mod:`recordings.export.shapes`), recorded with it."""

    @field_validator("export_type")
    @classmethod
    def _known_export_type(cls, value: str | None) -> str | None:
        if value is not None:
            from recordings.export.shapes import shape_of_type

            shape_of_type(value)  # a ValueError names the types there are
        return value


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


_SIZE_MESSAGE = (
    "'size' is ambiguous (is it [width, height] or [height, width]?); "
    "write width = W and height = H instead"
)


def _refuse_size(raw: Any) -> Any:
    if isinstance(raw, dict) and "size" in raw:
        raise ValueError(_SIZE_MESSAGE)
    return raw


class _Sized(StrictModel):
    """An image size as two keys: the one convention of the TOML config."""

    width: int | None = Field(None, ge=1)
    height: int | None = Field(None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _no_size(cls, raw: Any) -> Any:
        return _refuse_size(raw)

    @model_validator(mode="after")
    def _both_or_neither(self) -> _Sized:
        if (self.width is None) != (self.height is None):
            raise ValueError("give both 'width' and 'height' (pixels), or neither")
        return self


class VideoConfig(_SourceBase, _Sized):
    """A video file, stream URL or capture device (:class:`adapters.VideoSource`)."""

    type: Literal["video"]
    url: str
    pixel_format: Literal["rgb24", "bgr24", "gray", "yuv420p"] = "rgb24"
    hwaccel: str | None = None
    live: bool | None = None
    """``None``: decided from the URL (udp, tcp, rtsp, rtmp, srt, http(s) are live)."""
    read_timeout_s: float | None = Field(
        None, gt=0, validation_alias=AliasChoices("read_timeout_s", "read_timeout")
    )
    open_timeout_s: float | None = Field(
        10.0, gt=0, validation_alias=AliasChoices("open_timeout_s", "open_timeout")
    )
    jump_threshold_s: float = Field(1.0, gt=0)
    options: dict[str, str] = {}
    """FFmpeg input options (``{ fflags = "nobuffer", probesize = "32768" }``)."""
    input_format: str | None = None
    stream: int = Field(0, ge=0)
    max_reconnects: int | None = Field(None, ge=0)
    backoff_max_s: float = Field(5.0, gt=0)
    """Longest wait between reconnect attempts (they start at 0.1 s and double)."""

    @field_validator("options", mode="before")
    @classmethod
    def _options_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):  # TOML numbers and booleans are fine: FFmpeg takes text
            return {
                k: (str(v).lower() if isinstance(v, bool) else str(v))
                if isinstance(v, (int, float, bool))
                else v
                for k, v in value.items()
            }
        return value


def _check_sender(value: str | None) -> str | None:
    """A UDP ``sender`` option is an IPv4 address, optionally with ``:port``."""
    if value is not None:
        from adapters.net.udp import parse_sender

        try:
            parse_sender(value)
        except ConfigError as err:
            raise ValueError(str(err)) from None
    return value


UdpSender = Annotated[str | None, AfterValidator(_check_sender)]


class VelodyneConfig(_SourceBase):
    type: Literal["velodyne"]
    model: str = "auto"
    calibration: str | None = None
    pcap: str | None = None
    port: int | None = Field(None, ge=0, le=65535)
    speed: float | None = Field(None, gt=0)
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)
    """Live: the socket's receive buffer in bytes (the effective size is logged)."""
    sender: UdpSender = None
    """Live: the only sender taken (``"10.0.0.5"`` or ``"10.0.0.5:2368"``)."""

    @model_validator(mode="after")
    def _one_input(self) -> VelodyneConfig:
        if (self.pcap is None) == (self.port is None):
            raise ValueError("give exactly one of 'pcap' (a file) or 'port' (live UDP)")
        return self


class OusterConfig(_SourceBase):
    type: Literal["ouster"]
    metadata: str
    """The sensor's metadata JSON (legacy or current layout)."""
    pcap: str | None = None
    """A capture (pcap or pcapng); without it the source listens live."""
    lidar_port: int = Field(7502, ge=0, le=65535)
    imu_port: int = Field(7503, ge=0, le=65535)
    host: UdpSender = None
    """Live: keep only datagrams from this address (others count as foreign_sender)."""
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)
    """Live: each port's receive buffer in bytes (the effective size is logged)."""
    speed: float | None = Field(None, gt=0)
    partial_scans: bool = True

    def sensor_names(self) -> list[str]:
        """The lidar and its IMU."""
        return [self.name, f"{self.name}_imu"]


class PointCloudFilesConfig(_SourceBase):
    type: Literal["pointcloud_files"]
    paths: str
    rate_hz: float | None = Field(None, gt=0)
    timestamps: str | None = None
    speed: float | None = Field(None, gt=0)
    layout: str | list[tuple[str, str]] | None = None
    """Records of ``.bin`` files: a preset (``"kitti"``, ``"nuscenes"``, ``"waymo"``,
    ``"xyzi"``, ``"xyz"``) or ``[["x", "<f4"], ...]`` (name, numpy type) pairs."""
    max_coordinate: float = Field(1000.0, gt=0)
    """Largest plausible coordinate (m) in a ``.bin`` file."""

    @model_validator(mode="after")
    def _known_layout(self) -> PointCloudFilesConfig:
        if self.layout is not None:
            from adapters.lidar.layouts import resolve_layout

            try:
                resolve_layout(self.layout)
            except (TypeError, ValueError) as err:
                raise ValueError(f"layout: {err}") from None
        return self


KITTI_SENSORS = ("cam0", "cam1", "cam2", "cam3", "velodyne", "imu", "gnss")


class KittiRawConfig(_SourceBase):
    """A KITTI raw drive folder: every sensor in it (or ``sensors``), the dataset's stamps."""

    type: Literal["kitti_raw"]
    path: str
    sensors: list[Literal["cam0", "cam1", "cam2", "cam3", "velodyne", "imu", "gnss"]] | None = None
    prefix: str = ""
    sweep_time: bool = False
    speed: float | None = Field(None, gt=0)

    def sensor_names(self) -> list[str]:
        """The names of the sensors this source can produce (prefix included)."""
        return [self.prefix + s for s in (self.sensors or KITTI_SENSORS)]


class TimeSeriesCsvConfig(_SourceBase):
    type: Literal["timeseries_csv"]
    path: str
    time_column: str = "t"
    time_unit: Literal["s", "ms", "us", "ns"] = "s"
    columns: list[str] | None = None
    kind: Literal["timeseries", "imu", "gnss", "can"] = "timeseries"


class TimeSeriesUdpConfig(_SourceBase):
    """Live samples from UDP datagrams (:meth:`adapters.TimeSeriesSource.from_udp`)."""

    type: Literal["timeseries_udp"]
    port: int = Field(ge=0, le=65535)
    host: str = "127.0.0.1"
    format: Literal["jsonl", "msgpack"] = "jsonl"
    time_field: str | None = "t"
    """The field holding each sample's stamp; ``""`` stamps samples with their arrival."""
    time_unit: Literal["s", "ms", "us", "ns"] = "ns"
    fields: list[str] | None = None
    kind: Literal["timeseries", "imu", "gnss", "can"] = "timeseries"
    rate_hz: float | None = Field(None, gt=0)
    block: int = Field(1, ge=1)
    jump_threshold_s: float = Field(1.0, gt=0)
    sender: UdpSender = None
    """The only sender taken (``"10.0.0.5"`` or ``"10.0.0.5:5000"``); default: the first heard."""
    sender_timeout_s: float | None = Field(0.5, gt=0)
    """Seconds of silence after which another sender is followed (without ``sender``)."""
    recv_buffer: int | None = Field(None, gt=0)
    """The socket's receive buffer in bytes (default: the system's)."""
    gather_ms: float = Field(10.0, ge=0, le=1000)
    """A fast stream gathers this long in the socket between reads (kernel-stamped):
    one wakeup per gather instead of one per datagram; 0 reads each at once."""


class NmeaConfig(_SourceBase):
    """A GNSS receiver speaking NMEA 0183 (:class:`adapters.NmeaSource`): exactly one of
    ``path`` (a log file), ``port`` (a serial device, at ``baud``) or ``url``
    (``"udp://HOST:PORT"`` to listen, ``"tcp://HOST:PORT"`` to connect)."""

    type: Literal["nmea"]
    path: str | None = None
    port: str | None = None
    baud: int = Field(4800, ge=1)
    url: str | None = Field(None, pattern=r"^(udp|tcp)://[^/:]+:\d+$")
    date: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    """Dates fixes no RMC or ZDA sentence dates (``"2024-05-01"``)."""
    speed: float | None = Field(None, gt=0)
    sender: UdpSender = None
    """``udp://``: the only sender taken (``"10.0.0.5"`` or ``"10.0.0.5:10110"``)."""
    recv_buffer: int | None = Field(None, gt=0)
    """``udp://``: the socket's receive buffer in bytes (default: the system's)."""

    @model_validator(mode="after")
    def _one_input(self) -> NmeaConfig:
        given = [k for k in ("path", "port", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'path' (a file), 'port' (a serial device) or 'url' "
                f"(udp://HOST:PORT or tcp://HOST:PORT), found {given or 'none'}"
            )
        return self


class BagConfig(_SourceBase):
    """Topics of a ROS 1 or ROS 2 bag (:class:`adapters.BagSource`), one sensor per topic.

    ``topics`` maps topic -> sensor name (``{ "/camera/image_raw" = "cam" }``);
    ``name`` names the source only (default ``"bag"``)."""

    type: Literal["bag"]
    name: str = Field("bag", min_length=1)
    path: str
    topics: dict[str, str] | list[str] | None = None
    speed: float | None = Field(None, gt=0)
    decode_images: bool = True

    def sensor_names(self) -> list[str]:
        if isinstance(self.topics, dict):
            return list(self.topics.values())
        if isinstance(self.topics, list):
            from adapters.bags.source import sensor_name

            return [sensor_name(t) for t in self.topics]
        return []


class Ros2QosConfig(StrictModel):
    """A ROS 2 topic's QoS (keys not given keep the sensor-data profile's)."""

    reliability: Literal["best_effort", "reliable"] = "best_effort"
    durability: Literal["volatile", "transient_local"] = "volatile"
    depth: int = Field(5, ge=1)


class Ros2Config(_SourceBase):
    """Live ROS 2 topics over DDS (:class:`adapters.Ros2Source`), one sensor per topic.

    ``topics`` maps topic -> sensor name (``{ "/imu/data" = "imu" }``);
    ``types`` gives a topic's ROS 2 type when no publisher may announce it at
    start; ``qos`` a topic's QoS table; ``config`` a Cyclone DDS XML config
    (or ``file://`` URI; default ``CYCLONEDDS_URI``); ``loopback = true``
    keeps DDS on 127.0.0.1 (multicast off, unicast discovery).
    ``name`` names the source only (default ``"ros2"``)."""

    type: Literal["ros2"]
    name: str = Field("ros2", min_length=1)
    topics: dict[str, str] | list[str] = Field(min_length=1)
    domain_id: int = Field(0, ge=0, le=232)
    types: dict[str, str] = Field(default_factory=dict)
    qos: dict[str, Ros2QosConfig] = Field(default_factory=dict)
    config: str | None = None
    loopback: bool = False
    ros_distro: str | None = None
    discover_s: float = Field(5.0, ge=0)
    decode_images: bool = True
    gap_s: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _one_config(self) -> Ros2Config:
        if self.loopback and self.config is not None:
            raise ValueError("give 'config' or 'loopback = true', not both")
        return self

    def sensor_names(self) -> list[str]:
        if isinstance(self.topics, dict):
            return list(self.topics.values())
        from adapters.bags.source import sensor_name

        return [sensor_name(t) for t in self.topics]


class PythonSourceConfig(_SourceBase):
    """A user's own :class:`fusion.Source` subclass, built as ``Class(**options)``.

    ``class = "package.module:ClassName"``; ``options`` are its keyword
    arguments, checked against its signature when the config is loaded;
    ``name`` is passed too when the class takes a ``name`` argument."""

    type: Literal["python"]
    class_: str = Field(alias="class", pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    options: dict[str, Any] = {}

    @model_validator(mode="after")
    def _class_takes_the_options(self) -> PythonSourceConfig:
        cls = load_class(self.class_)
        import inspect

        from fusion.source import Source

        if not (isinstance(cls, type) and issubclass(cls, Source)):
            raise ValueError(f"{self.class_} is not a subclass of fusion.Source")
        kwargs = python_source_kwargs(cls, self.name, self.options)
        try:
            inspect.signature(cls).bind(**kwargs)
        except TypeError as err:
            raise ValueError(f"{self.class_}({', '.join(kwargs)}): {err}") from None
        problems = option_type_problems(cls, self.options)
        if problems:
            raise ValueError(f"source {self.name!r} ({self.class_}): {'; '.join(problems)}")
        return self


def option_type_problems(cls: Any, options: dict[str, Any]) -> list[str]:
    """Each option whose value does not fit the annotation of ``cls.__init__``'s parameter,
    as ``option 'count' expects int, found 'many' (str)``.

    Checked with pydantic in strict mode (TOML values are typed: ``"5"`` is not an
    ``int``; an ``int`` is a ``float``). A parameter without an annotation, or with
    one pydantic cannot check (a class of the user's, a forward reference that does
    not resolve) is left to the class.
    """
    import inspect
    import typing

    from pydantic import TypeAdapter
    from pydantic import ValidationError as PydanticError

    try:
        hints = typing.get_type_hints(cls.__init__)
        params = inspect.signature(cls).parameters
    except Exception:  # an annotation that does not resolve: the class checks its own
        return []
    problems: list[str] = []
    for key, value in options.items():
        hint = hints.get(key)
        param = params.get(key)
        if hint is None or param is None or param.kind is param.VAR_KEYWORD:
            continue
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(hint)
        except Exception:
            continue
        try:
            adapter.validate_python(value, strict=True)
        except PydanticError:
            wanted = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
            problems.append(
                f"option {key!r} expects {wanted}, found {value!r} ({type(value).__name__})"
            )
    return problems


def load_class(spec: str) -> Any:
    """``"package.module:ClassName"`` -> the class (a ``ValueError`` saying what failed)."""
    import importlib

    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"cannot import module {module_name!r}: {err}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no {attr!r}") from None
    return obj


def python_source_kwargs(cls: Any, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options``, plus ``name`` when the class takes one and options do not set it."""
    import inspect

    kwargs = dict(options)
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return kwargs
    if "name" in params and "name" not in kwargs:
        kwargs["name"] = name
    return kwargs


class ReplayConfig(_SourceBase):
    type: Literal["replay"]
    path: str
    speed: float | None = Field(None, gt=0)


SourceConfig = Annotated[
    SyntheticConfig
    | VideoConfig
    | VelodyneConfig
    | OusterConfig
    | PointCloudFilesConfig
    | TimeSeriesCsvConfig
    | TimeSeriesUdpConfig
    | NmeaConfig
    | BagConfig
    | Ros2Config
    | PythonSourceConfig
    | ReplayConfig
    | KittiRawConfig,
    Field(discriminator="type"),
]


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
    """A path to an .onnx file, or ``builtin:NAME`` for a model of :mod:`fusion.workers.models`."""
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
    """``"auto"``: zstd 3, 1 or none per chunk, whichever pays (``recordings.effort``)."""
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
    see :mod:`recordings.video.recording`."""


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
        multi = ("bag", "ros2", "kitti_raw", "python")  # sources of several sensors
        simple = len(names) == 1 and sources[0].get("type") not in multi
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
        known = set(names)
        known |= {
            n for s in self.sources if isinstance(s, KittiRawConfig) for n in s.sensor_names()
        }
        for s in self.sources:
            if isinstance(s, (BagConfig, OusterConfig, Ros2Config)):
                known |= set(s.sensor_names())
        wanted = set(self.sync.sensors or ()) | set(self.sync.optional) | set(self.sync.windows_ms)
        wanted |= {self.sync.reference} if self.sync.reference else set()
        wanted |= {s.sensor for s in self.stages} | {w.input for w in self.workers}
        wanted |= set(self.recorder.video) if self.recorder else set()
        unknown = sorted(wanted - known)
        open_ended = ("replay", "python") + (
            ("bag",)
            if any(isinstance(s, BagConfig) and s.topics is None for s in self.sources)
            else ()
        )
        if unknown and not any(s.type in open_ended for s in self.sources):
            raise ValueError(
                f"sensors {unknown} are not the name of any source; sources are {sorted(known)}"
            )
        return self


def parse_size(text: str) -> int:
    """``"4GiB"``, ``"500MB"``, ``"1024"`` -> bytes (:func:`hyperframes.cli.units.parse_size`:
    ``inf``, ``nan`` and out-of-range sizes are refused)."""
    from hyperframes.cli.units import parse_size as strict

    return strict(text)


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
    try:
        return PipelineConfig.model_validate(raw)
    except ValidationError as err:
        problems = [describe_error(source, e) for e in err.errors()]
        error = ConfigError(
            f"{source}: {len(problems)} problem(s) in the config:\n  " + "\n  ".join(problems)
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
