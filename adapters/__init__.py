"""Sources of frames: video, LiDAR, time series, synthetic sensors, and the base class."""

from adapters.bags import BagSource
from adapters.base import Source
from adapters.interpolation import interpolate, slerp
from adapters.lidar import PointCloudFiles, VelodyneSource
from adapters.synthetic import (
    SensorTiming,
    SyntheticCamera,
    SyntheticImu,
    SyntheticLidar,
    SyntheticSensor,
    synthetic_session,
    synthetic_timeline,
)
from adapters.timeseries import TimeSeriesSource
from adapters.video import VideoSource
from fusion._exports import rewrite_module

__all__ = [
    "BagSource",
    "PointCloudFiles",
    "SensorTiming",
    "Source",
    "SyntheticCamera",
    "SyntheticImu",
    "SyntheticLidar",
    "SyntheticSensor",
    "TimeSeriesSource",
    "VelodyneSource",
    "VideoSource",
    "interpolate",
    "slerp",
    "synthetic_session",
    "synthetic_timeline",
]

rewrite_module(globals(), __name__)
