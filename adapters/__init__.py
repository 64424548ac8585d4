"""Sources of frames: video, LiDAR, time series, synthetic sensors, and the base class."""

from adapters.base import Source
from fusion._exports import rewrite_module

__all__ = [
    "Source",
]

rewrite_module(globals(), __name__)
