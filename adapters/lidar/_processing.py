"""Point-cloud processing stages: frame in, frame out.

Each stage is a small callable object ``stage(frame) -> Frame`` that keeps
``sensor``, ``seq``, the three times and ``meta`` (plus a note of what it
did under ``meta["processing"]``) and replaces ``data``. Crops are numpy masks,
so every field survives; voxel down-sampling and outlier removal use open3d's
tensor point cloud, which carries every field through as an attribute.
Stages are plain functions of their input, so they run in a worker thread
(``await run_sync(stage, frame)``) or a batch worker's preprocess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapters.lidar._points import check_points, xyz
from fusion import Frame
from fusion.errors import ConfigError


def _with_points(frame: Frame, points: np.ndarray, note: str) -> Frame:
    meta = dict(frame.meta)
    meta["processing"] = [*meta.get("processing", []), note]
    return Frame(frame.sensor, frame.seq, frame.t, points, frame.t_sensor, frame.t_arrival, meta)


@dataclass(frozen=True)
class RangeCrop:
    """Keep points whose distance from the origin is in ``[min_range, max_range]`` metres."""

    min_range: float = 0.0
    max_range: float = float("inf")

    def __call__(self, frame: Frame) -> Frame:
        points = check_points(frame.data, sensor=frame.sensor, seq=frame.seq)
        r2 = points["x"] ** 2 + points["y"] ** 2 + points["z"] ** 2
        keep = (r2 >= self.min_range**2) & (r2 <= self.max_range**2)
        return _with_points(frame, points[keep], f"range_crop[{self.min_range},{self.max_range}]")


@dataclass(frozen=True)
class BoxCrop:
    """Keep points inside (or, with ``invert``, outside) an axis-aligned box."""

    min_xyz: Sequence[float]
    max_xyz: Sequence[float]
    invert: bool = False

    def __call__(self, frame: Frame) -> Frame:
        points = check_points(frame.data, sensor=frame.sensor, seq=frame.seq)
        keep = np.ones(len(points), bool)
        for axis, lo, hi in zip("xyz", self.min_xyz, self.max_xyz, strict=True):
            keep &= (points[axis] >= lo) & (points[axis] <= hi)
        if self.invert:
            keep = ~keep
        return _with_points(frame, points[keep], "box_crop")


@dataclass(frozen=True)
class VoxelDownsample:
    """One point per occupied voxel of edge ``voxel_size`` m, every field averaged.

    Integer fields (``ring``, ``t_offset``) are averaged and rounded, which
    is what you want for time and meaningless for ring: drop ring first if
    you need it exact.
    """

    voxel_size: float

    def __post_init__(self) -> None:
        if self.voxel_size <= 0:
            raise ConfigError(f"voxel_size must be > 0, got {self.voxel_size}")
        _load_open3d()

    def __call__(self, frame: Frame) -> Frame:
        points = check_points(frame.data, sensor=frame.sensor, seq=frame.seq)
        if len(points) == 0:
            return _with_points(frame, points, f"voxel[{self.voxel_size}]")
        cloud = _to_open3d(points)
        down = cloud.voxel_down_sample(self.voxel_size)
        return _with_points(frame, _from_open3d(down, points.dtype), f"voxel[{self.voxel_size}]")


@dataclass(frozen=True)
class RemoveOutliers:
    """Statistical outlier removal: drop points whose mean distance to their
    ``neighbors`` nearest neighbours exceeds the cloud's mean by ``std_ratio`` sigmas."""

    neighbors: int = 20
    std_ratio: float = 2.0

    def __post_init__(self) -> None:
        _load_open3d()

    def __call__(self, frame: Frame) -> Frame:
        points = check_points(frame.data, sensor=frame.sensor, seq=frame.seq)
        if len(points) <= self.neighbors:
            return _with_points(frame, points, "outliers[skipped: too few points]")
        _, mask = _to_open3d(points, positions_only=True).remove_statistical_outliers(
            self.neighbors, self.std_ratio
        )
        keep = mask.numpy().astype(bool)
        return _with_points(frame, points[keep], f"outliers[{self.neighbors},{self.std_ratio}]")


def _load_open3d() -> None:
    """Import open3d when a stage is made, not on a live run's first sweep: its import
    holds the GIL for 1-8 s (a cold page cache), which starves a UDP receiver while the
    sensor streams, and the kernel drops what overflows its buffer."""
    import open3d  # noqa: F401


def _to_open3d(points: np.ndarray, *, positions_only: bool = False) -> Any:
    import open3d as o3d

    cloud = o3d.t.geometry.PointCloud()
    cloud.point.positions = o3d.core.Tensor.from_numpy(xyz(points))
    if not positions_only:
        for name in points.dtype.names or ():
            if name not in ("x", "y", "z") and not points.dtype[name].shape:
                column = points[name].astype(np.float64).reshape(-1, 1)
                cloud.point[name] = o3d.core.Tensor.from_numpy(column)
    return cloud


def _from_open3d(cloud: Any, dtype: np.dtype[Any]) -> np.ndarray:
    positions = cloud.point.positions.numpy()
    out = np.zeros(len(positions), dtype)
    out["x"], out["y"], out["z"] = positions[:, 0], positions[:, 1], positions[:, 2]
    for name in dtype.names or ():
        if name in ("x", "y", "z") or name not in cloud.point:
            continue
        column = cloud.point[name].numpy()[:, 0]
        out[name] = np.round(column) if dtype[name].kind in "iu" else column
    return out
