"""The ``[[sources]]`` types: one module each, and the union the schema validates with.

Each source type is declared once, in its own module here (the ``python`` type in
:mod:`hyperframes.config._python_source`): a
:class:`~hyperframes.config._source_type.SourceOptions` model whose fields are its
TOML keys (defaults, bounds, other spellings, docstrings), whose validators check
what needs several keys, and whose ``build`` makes the source. :data:`SOURCE_TYPES`
lists them; the schema's :data:`SourceConfig` union, the factory's ``build_source``
and the table of ``docs/configuration.md`` are derived from that list.

A new type: a module here with its model, one line in :data:`SOURCE_TYPES`, then
``rewrite_page("docs/configuration.md")`` (:mod:`hyperframes.config._source_docs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperframes.config._python_source import PythonSourceConfig
from hyperframes.config._source_type import SourceOptions, source_types_of, source_union
from hyperframes.config.sources.audio import AudioConfig
from hyperframes.config.sources.bag import BagConfig
from hyperframes.config.sources.can import CanConfig
from hyperframes.config.sources.gnss import NmeaConfig
from hyperframes.config.sources.hesai import HesaiConfig
from hyperframes.config.sources.kitti_raw import KittiRawConfig
from hyperframes.config.sources.ouster import OusterConfig
from hyperframes.config.sources.pointcloud_files import PointCloudFilesConfig
from hyperframes.config.sources.radar import RadarConfig
from hyperframes.config.sources.replay import ReplayConfig
from hyperframes.config.sources.ros2 import Ros2Config, Ros2QosConfig
from hyperframes.config.sources.synthetic import SyntheticConfig
from hyperframes.config.sources.timeseries import (
    RECORD_GATHER_MS,
    TimeSeriesCsvConfig,
    TimeSeriesUdpConfig,
)
from hyperframes.config.sources.ulog import UlogConfig
from hyperframes.config.sources.velodyne import VelodyneConfig
from hyperframes.config.sources.video import VideoConfig

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
