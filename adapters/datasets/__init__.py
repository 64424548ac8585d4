"""Public driving datasets read as sessions: each sensor a source, the dataset's own times."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.datasets._kitti_raw import (
        SENSORS,
        KittiRawDrive,
        KittiRawSource,
        KittiSensorSource,
        kitti_raw_sources,
    )
    from adapters.datasets._oxts import GNSS_FIELDS, IMU_FIELDS, OXTS_FIELDS


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

_HOMES = {
    "GNSS_FIELDS": "adapters.datasets._oxts",
    "IMU_FIELDS": "adapters.datasets._oxts",
    "KittiRawDrive": "adapters.datasets._kitti_raw",
    "KittiRawSource": "adapters.datasets._kitti_raw",
    "KittiSensorSource": "adapters.datasets._kitti_raw",
    "OXTS_FIELDS": "adapters.datasets._oxts",
    "SENSORS": "adapters.datasets._kitti_raw",
    "kitti_raw_sources": "adapters.datasets._kitti_raw",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
