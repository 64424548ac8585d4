"""``type = "pointcloud_files"``: a folder or glob of point cloud files
(:class:`adapters.lidar.PointCloudFiles`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class PointCloudFilesConfig(SourceOptions):
    type: Literal["pointcloud_files"]
    paths: str
    """a folder or a glob"""
    rate_hz: float | None = Field(None, gt=0)
    """the files' rate, or `timestamps`"""
    timestamps: str | None = None
    """a file of one stamp per point cloud"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    layout: str | list[tuple[str, str]] | None = None
    """none: from the file name, else `kitti`, checked; the records of headerless `.bin` files:
    `"kitti"`, `"nuscenes"`, `"waymo"`, `"xyzi"`, `"xyz"`, or `[["x", "<f4"], ...]` name/type
    pairs"""
    max_coordinate: float = Field(1000.0, gt=0)
    """the largest plausible coordinate in a `.bin`, metres"""

    see: ClassVar[str] = "lidar.md#bin-layouts-declared-never-guessed-in-silence"
    target: ClassVar[str | None] = "adapters.lidar:PointCloudFiles"

    @model_validator(mode="after")
    def _known_layout(self) -> PointCloudFilesConfig:
        if self.layout is not None:
            from adapters.lidar import resolve_layout

            try:
                resolve_layout(self.layout)
            except (TypeError, ValueError) as err:
                raise ValueError(f"layout: {err}") from None
        return self

    def build(self, context: BuildContext) -> Source:
        from adapters.lidar import PointCloudFiles

        return PointCloudFiles(name=self.name, **self.kwargs())
