"""The ``[[sources]]`` tables: one model per source ``type``, and their union.

Each model holds one source type's keys with their defaults and bounds, and
the checks that need several keys at once (exactly one input, a known
layout); :data:`SourceConfig` is the discriminated union on ``type`` that
:class:`~hyperframes.config.schema.PipelineConfig` validates each table as.
The ``python`` type, which loads a user's class, is in
:mod:`hyperframes.config.python_source`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._source_type import SourceOptions, source_types_of, source_union
from hyperframes.config.base import StrictModel, UdpSender
from hyperframes.config.python_source import PythonSourceConfig
from hyperframes.config.sources.audio import AudioConfig
from hyperframes.config.sources.hesai import HesaiConfig
from hyperframes.config.sources.kitti_raw import KittiRawConfig
from hyperframes.config.sources.ouster import OusterConfig
from hyperframes.config.sources.pointcloud_files import PointCloudFilesConfig
from hyperframes.config.sources.replay import ReplayConfig
from hyperframes.config.sources.synthetic import SyntheticConfig
from hyperframes.config.sources.velodyne import VelodyneConfig
from hyperframes.config.sources.video import VideoConfig

RECORD_GATHER_MS = 50.0
"""A UDP time series' gather in a ``record`` nothing watches live: the frames only go
to disk (in chunks of a second), so waking 20 times a second instead of 100 costs
nothing a user sees and about half the CPU per frame at 1 kHz (BENCHMARKS.md)."""


class TimeSeriesCsvConfig(SourceOptions):
    type: Literal["timeseries_csv"]
    path: str
    time_column: str = "t"
    time_unit: Literal["s", "ms", "us", "ns"] = "s"
    columns: list[str] | None = None
    kind: Literal["timeseries", "imu", "gnss", "can"] = "timeseries"


class TimeSeriesUdpConfig(SourceOptions):
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
    gather_ms: float | None = Field(None, ge=0, le=1000)
    """A fast stream gathers this long in the socket between reads (kernel-stamped):
    one wakeup per gather instead of one per datagram; 0 reads each at once. Unset:
    10 (``from_udp``'s ``DEFAULT_GATHER``), or 50 (:data:`RECORD_GATHER_MS`) in a ``record``
    that nothing watches live (no ``--serve``, no ``--to-ros2``)."""


class NmeaConfig(SourceOptions):
    """A GNSS receiver speaking NMEA 0183 and/or u-blox UBX (:class:`adapters.NmeaSource`,
    ``type = "gnss"``; ``"nmea"`` is its alias): exactly one of ``path`` (a log file),
    ``port`` (a serial device, at ``baud``) or ``url`` (``"udp://HOST:PORT"`` to listen,
    ``"tcp://HOST:PORT"`` to connect)."""

    type: Literal["gnss", "nmea"]
    protocol: Literal["auto", "nmea", "ubx"] | None = None
    """``"nmea"`` (lines of sentences), ``"ubx"`` or ``"auto"`` (UBX and NMEA mixed);
    unset: ``"auto"`` for ``type = "gnss"``, ``"nmea"`` for ``type = "nmea"``."""
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
    max_reconnects: int | None = Field(None, ge=0)
    """``tcp://``: reconnect attempts in a row before giving up (none: until stopped)."""
    backoff_max_s: float = Field(5.0, gt=0)
    """``tcp://``: longest wait between reconnect attempts (they start at 0.1 s and double)."""

    every_sensor: ClassVar[bool] = True

    @property
    def chosen_protocol(self) -> Literal["auto", "nmea", "ubx"]:
        """The protocol read: ``protocol``, or the type's default."""
        if self.protocol is not None:
            return self.protocol
        return "auto" if self.type == "gnss" else "nmea"

    def sensor_names(self) -> list[str]:
        """The NMEA fix sensor and, with UBX, ``<name>.pvt``, ``.hpposllh``, ``.sat``, ``.esf``."""
        if self.chosen_protocol == "nmea":
            return [self.name]
        from adapters.nmea import ubx_sensors

        return [self.name, *(s for s, _, _ in ubx_sensors(self.name))]

    @model_validator(mode="after")
    def _one_input(self) -> NmeaConfig:
        given = [k for k in ("path", "port", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'path' (a file), 'port' (a serial device) or 'url' "
                f"(udp://HOST:PORT or tcp://HOST:PORT), found {given or 'none'}"
            )
        return self


class CanConfig(SourceOptions):
    """A CAN bus (:class:`adapters.CanSource`): exactly one of ``path`` (a log python-can
    reads) or ``interface`` (a python-can interface, with ``channel``), decoded with
    ``database`` (DBC, KCD, ARXML, SYM) when given."""

    type: Literal["can"]
    path: str | None = None
    interface: str | None = None
    channel: str | int | None = None
    bitrate: int | None = Field(None, gt=0)
    fd: bool = False
    bus_options: dict[str, Any] = Field(default_factory=dict)
    """Further ``can.Bus`` keyword arguments of the interface (``{ port = 29536 }``)."""
    database: str | None = None
    ids: list[int] = Field(default_factory=list)
    """Ids that get a sensor of their own (``<name>.0x<ID>``)."""
    unknown: Literal["raw", "count"] = "raw"
    raw: bool = True
    speed: float | None = Field(None, gt=0)
    block: int = Field(1, ge=1)
    """Rows per frame (a frame per CAN frame by default; more: the fast path for long logs)."""

    every_sensor: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_input(self) -> CanConfig:
        if (self.path is None) == (self.interface is None):
            raise ValueError("give exactly one of 'path' (a CAN log) or 'interface' (a live bus)")
        return self

    def sensor_names(self) -> list[str]:
        """The raw sensor, the per-id ones and (with a database) one per message."""
        from adapters.can import CanDecoder

        database = self.database
        return [s for s, _ in CanDecoder(self.name, database=database, ids=self.ids).sensors()]


class UlogConfig(SourceOptions):
    """A PX4 flight log (:class:`adapters.UlogSource`), one sensor per topic
    (``<name>.<topic>``); ``topics`` keeps a subset (a name or ``name.<multi_id>``);
    ``name`` names the source only (default ``"ulog"``)."""

    type: Literal["ulog"]
    name: str = Field("ulog", min_length=1)
    path: str
    topics: list[str] | None = None
    utc: bool = False
    """``t_sensor`` in UTC (the GPS anchor added) instead of the autopilot's boot clock."""
    speed: float | None = Field(None, gt=0)
    max_bytes: int = Field(4 << 30, gt=0)

    every_sensor: ClassVar[bool] = True

    def sensor_names(self) -> list[str]:
        """The chosen topics' sensors, read from the log's header (every topic's if
        none is chosen and the log cannot be read here)."""
        from adapters.ulog import read_ulog, ulog_sensor

        try:
            content = read_ulog(self.path, self.topics, sensor=self.name, max_bytes=self.max_bytes)
        except Exception:  # the source itself says why when it is built
            return []
        return [ulog_sensor(self.name, t) for t in content.topics]


class RadarConfig(SourceOptions):
    """An automotive radar (:class:`adapters.RadarSource`), two sensors ``<name>_detections``
    and ``<name>_objects``. The Continental ARS548 (``model = "ars548"``): exactly one of
    ``pcap``, ``bag`` (nebula's packets, on ``topic``) or ``port`` (live UDP, ``group`` a
    multicast group to join). The Continental ARS408 (``model = "ars408"``, over CAN):
    exactly one of ``log`` (a CAN log python-can reads) or ``interface`` (a python-can
    bus, with ``channel``, ``bitrate``, ``bus_options``)."""

    type: Literal["radar"]
    model: Literal["ars548", "ars408"] = "ars548"
    log: str | None = None
    """ARS408: a CAN log (candump ``-l``, ASC, BLF, TRC ...)."""
    interface: str | None = None
    """ARS408: a python-can interface (``socketcan``, ``udp_multicast`` ...)."""
    channel: str | int | None = None
    bitrate: int | None = Field(None, gt=0)
    bus_options: dict[str, Any] = Field(default_factory=dict)
    pcap: str | None = None
    bag: str | None = None
    topic: str | None = None
    port: int | None = Field(None, ge=0, le=65535)
    host: str = "0.0.0.0"
    group: str | None = None
    data_port: int = Field(42102, ge=1, le=65535)
    speed: float | None = Field(None, gt=0)
    sender: UdpSender = None
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)

    every_sensor: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_input(self) -> RadarConfig:
        if self.model == "ars408":
            given = [k for k in ("log", "interface") if getattr(self, k) is not None]
            stray = [k for k in ("pcap", "bag", "port") if getattr(self, k) is not None]
            if len(given) != 1 or stray:
                raise ValueError(
                    "an ARS408 takes exactly one of 'log' (a CAN log) or 'interface' (a "
                    f"python-can bus), found {given + stray or 'none'}"
                )
            return self
        if self.log is not None or self.interface is not None:
            raise ValueError("'log' and 'interface' are for model = \"ars408\" (CAN)")
        given = [k for k in ("pcap", "bag", "port") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of 'pcap' (a capture), 'bag' (nebula's packets) or 'port' "
                f"(live UDP), found {given or 'none'}"
            )
        return self

    def sensor_names(self) -> list[str]:
        """The detections' and the objects' sensors."""
        return [f"{self.name}_detections", f"{self.name}_objects"]


class BagConfig(SourceOptions):
    """Topics of a ROS 1 or ROS 2 bag (:class:`adapters.BagSource`), one sensor per topic.

    ``topics`` maps topic -> sensor name (``{ "/camera/image_raw" = "cam" }``);
    ``name`` names the source only (default ``"bag"``)."""

    type: Literal["bag"]
    name: str = Field("bag", min_length=1)
    path: str
    topics: dict[str, str] | list[str] | None = None
    speed: float | None = Field(None, gt=0)
    decode_images: bool = True

    every_sensor: ClassVar[bool] = True
    needs_sync: ClassVar[bool] = True
    recorded_stamps: ClassVar[bool] = True

    def sensor_names(self) -> list[str]:
        if isinstance(self.topics, dict):
            return list(self.topics.values())
        if isinstance(self.topics, list):
            from adapters.bags.source import sensor_name

            return [sensor_name(t) for t in self.topics]
        return []

    def open_ended(self) -> bool:
        return self.topics is None  # every readable topic: known once the bag is read


class Ros2QosConfig(StrictModel):
    """A ROS 2 topic's QoS (keys not given keep the sensor-data profile's)."""

    reliability: Literal["best_effort", "reliable"] = "best_effort"
    durability: Literal["volatile", "transient_local"] = "volatile"
    depth: int = Field(5, ge=1)


class Ros2Config(SourceOptions):
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

    every_sensor: ClassVar[bool] = True
    needs_sync: ClassVar[bool] = True

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


SOURCE_TYPES: tuple[type[SourceOptions], ...] = (
    SyntheticConfig,
    VideoConfig,
    VelodyneConfig,
    OusterConfig,
    PointCloudFilesConfig,
    HesaiConfig,
    KittiRawConfig,
    TimeSeriesCsvConfig,
    TimeSeriesUdpConfig,
    NmeaConfig,
    CanConfig,
    AudioConfig,
    UlogConfig,
    RadarConfig,
    BagConfig,
    Ros2Config,
    PythonSourceConfig,
    ReplayConfig,
)
"""Every source type, in the order ``docs/configuration.md`` lists them."""

BY_TYPE = source_types_of(SOURCE_TYPES)
"""``type`` value -> its model."""

if TYPE_CHECKING:
    SourceConfig = SourceOptions
else:
    SourceConfig = source_union(SOURCE_TYPES)
