"""``type = "kitti_raw"``: a KITTI raw drive folder (:class:`adapters.datasets.KittiRawSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source

KITTI_SENSORS = ("cam0", "cam1", "cam2", "cam3", "velodyne", "imu", "gnss")


class KittiRawConfig(SourceOptions):
    """A KITTI raw drive folder: every sensor in it (or ``sensors``), the dataset's stamps."""

    type: Literal["kitti_raw"]
    path: str
    """a drive folder such as `2011_09_26/2011_09_26_drive_0001_sync`"""
    sensors: list[Literal["cam0", "cam1", "cam2", "cam3", "velodyne", "imu", "gnss"]] | None = None
    """none: every one present; a list of `"cam0"`, `"cam1"`, `"cam2"`, `"cam3"`, `"velodyne"`,
    `"imu"`, `"gnss"`"""
    prefix: str = ""
    """put before each sensor name"""
    sweep_time: bool = False
    """a per-point `t_offset` for motion compensation"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""

    see: ClassVar[str] = "lidar.md#kitti-raw-drives-kittirawsource"
    target: ClassVar[str | None] = "adapters.datasets:KittiRawSource"
    every_sensor: ClassVar[bool] = True
    needs_sync: ClassVar[bool] = True

    def sensor_names(self) -> list[str]:
        """The names of the sensors this source can produce (prefix included)."""
        return [self.prefix + s for s in (self.sensors or KITTI_SENSORS)]

    def build(self, context: BuildContext) -> Source:
        from adapters.datasets import KittiRawSource

        return KittiRawSource(**self.kwargs())
