"""Public driving datasets read as sessions: each sensor a source, the dataset's own times."""

from adapters.datasets.kitti_raw import (
    SENSORS,
    KittiRawDrive,
    KittiRawSource,
    KittiSensorSource,
    kitti_raw_sources,
)
from adapters.datasets.oxts import GNSS_FIELDS, IMU_FIELDS, OXTS_FIELDS
from fusion._exports import rewrite_module

__all__ = [
    "GNSS_FIELDS",
    "IMU_FIELDS",
    "OXTS_FIELDS",
    "SENSORS",
    "KittiRawDrive",
    "KittiRawSource",
    "KittiSensorSource",
    "kitti_raw_sources",
]

rewrite_module(globals(), __name__)
