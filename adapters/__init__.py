"""Sources of frames: video, LiDAR, radar, time series, GNSS (NMEA), CAN buses, ROS bags and
live ROS 2 topics, KITTI drives, synthetic.

Every source here is a :class:`~fusion.Source` (re-exported as
``adapters.Source``: the base class lives in the core); the errors they raise,
:class:`DecodeError`, :class:`SourceOpenError` and :class:`SensorTimeout`, are
defined in :mod:`adapters.errors`. Names load on first
use (PEP 562), so ``import adapters`` does not load PyAV, open3d or rosbags
until a source that needs one is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion import Source
from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters._interpolation import interpolate, slerp
    from adapters._side_files import CONFIG_LIMIT, read_small_text
    from adapters._timeseries import TimeSeriesSource
    from adapters.audio import AudioSource
    from adapters.bags import BagSource
    from adapters.can import CanSource
    from adapters.datasets import KittiRawSource
    from adapters.errors import DecodeError, SensorTimeout, SourceOpenError
    from adapters.lidar import HesaiSource, OusterSource, PointCloudFiles, VelodyneSource
    from adapters.nmea import NmeaSource
    from adapters.radar import RadarSource
    from adapters.ros import Ros2Source
    from adapters.synthetic import (
        SensorTiming,
        SyntheticCamera,
        SyntheticImu,
        SyntheticLidar,
        SyntheticSensor,
        synthetic_session,
        synthetic_timeline,
    )
    from adapters.ulog import UlogSource
    from adapters.video import VideoSource

__all__ = [
    "CONFIG_LIMIT",
    "AudioSource",
    "BagSource",
    "CanSource",
    "DecodeError",
    "HesaiSource",
    "KittiRawSource",
    "NmeaSource",
    "OusterSource",
    "PointCloudFiles",
    "RadarSource",
    "Ros2Source",
    "SensorTimeout",
    "SensorTiming",
    "Source",
    "SourceOpenError",
    "SyntheticCamera",
    "SyntheticImu",
    "SyntheticLidar",
    "SyntheticSensor",
    "TimeSeriesSource",
    "UlogSource",
    "VelodyneSource",
    "VideoSource",
    "interpolate",
    "read_small_text",
    "slerp",
    "synthetic_session",
    "synthetic_timeline",
]

_SYNTHETIC = (
    "SensorTiming",
    "SyntheticCamera",
    "SyntheticImu",
    "SyntheticLidar",
    "SyntheticSensor",
    "synthetic_session",
    "synthetic_timeline",
)

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AudioSource": "adapters.audio._source",
        "CONFIG_LIMIT": "adapters._side_files",
        "read_small_text": "adapters._side_files",
        "BagSource": "adapters.bags",
        "CanSource": "adapters.can._source",
        "DecodeError": "adapters.errors",
        "HesaiSource": "adapters.lidar._hesai",
        "KittiRawSource": "adapters.datasets._kitti_raw",
        "NmeaSource": "adapters.nmea._source",
        "OusterSource": "adapters.lidar._ouster",
        "PointCloudFiles": "adapters.lidar._pointcloud_files",
        "RadarSource": "adapters.radar._source",
        "Ros2Source": "adapters.ros",
        "SensorTimeout": "adapters.errors",
        "SourceOpenError": "adapters.errors",
        "TimeSeriesSource": "adapters._timeseries",
        "UlogSource": "adapters.ulog._source",
        "VelodyneSource": "adapters.lidar._velodyne",
        "VideoSource": "adapters.video._source",
        "interpolate": "adapters._interpolation",
        "slerp": "adapters._interpolation",
        **dict.fromkeys(_SYNTHETIC, "adapters.synthetic"),
    },
)
