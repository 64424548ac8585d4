"""The ``[[sources]]`` tables: one model per source ``type``, and their union.

Each model holds one source type's keys with their defaults and bounds, and
the checks that need several keys at once (exactly one input, a known
layout); :data:`SourceConfig` is the discriminated union on ``type`` that
:class:`~hyperframes.config.schema.PipelineConfig` validates each table as.
The ``python`` type, which loads a user's class, is in
:mod:`hyperframes.config.python_source`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._source_type import SourceOptions, source_types_of, source_union
from hyperframes.config.base import StrictModel
from hyperframes.config.python_source import PythonSourceConfig
from hyperframes.config.sources.audio import AudioConfig
from hyperframes.config.sources.can import CanConfig
from hyperframes.config.sources.gnss import NmeaConfig
from hyperframes.config.sources.hesai import HesaiConfig
from hyperframes.config.sources.kitti_raw import KittiRawConfig
from hyperframes.config.sources.ouster import OusterConfig
from hyperframes.config.sources.pointcloud_files import PointCloudFilesConfig
from hyperframes.config.sources.radar import RadarConfig
from hyperframes.config.sources.replay import ReplayConfig
from hyperframes.config.sources.synthetic import SyntheticConfig
from hyperframes.config.sources.timeseries import (
    RECORD_GATHER_MS,
    TimeSeriesCsvConfig,
    TimeSeriesUdpConfig,
)
from hyperframes.config.sources.ulog import UlogConfig
from hyperframes.config.sources.velodyne import VelodyneConfig
from hyperframes.config.sources.video import VideoConfig


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

__all__ = [
    "BY_TYPE",
    "RECORD_GATHER_MS",
    "SOURCE_TYPES",
    "AudioConfig",
    "BagConfig",
    "CanConfig",
    "HesaiConfig",
    "KittiRawConfig",
    "NmeaConfig",
    "OusterConfig",
    "PointCloudFilesConfig",
    "PythonSourceConfig",
    "RadarConfig",
    "ReplayConfig",
    "Ros2Config",
    "Ros2QosConfig",
    "SourceConfig",
    "SourceOptions",
    "SyntheticConfig",
    "TimeSeriesCsvConfig",
    "TimeSeriesUdpConfig",
    "UlogConfig",
    "VelodyneConfig",
    "VideoConfig",
]
