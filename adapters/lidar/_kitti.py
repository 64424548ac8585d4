"""KITTI-style ``.bin`` scans: little-endian float32 rows of x, y, z, reflectance (0..1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from adapters.lidar._layouts import read_bin
from adapters.lidar._points import XYZI_DTYPE


def read_kitti_bin(path: str | Path) -> np.ndarray:
    """The scan as an XYZI array (the file's bytes are the array: no copy, no parse).

    Checked like every ``.bin`` read (:func:`~adapters.lidar._layouts.read_bin`):
    a nuScenes or Waymo file raises :class:`~adapters.errors.DecodeError` instead of
    turning into wrong points.
    """
    return read_bin(path, "kitti")


def write_kitti_bin(path: str | Path, points: np.ndarray) -> None:
    """Write x, y, z, intensity of ``points`` as a KITTI ``.bin``."""
    out = np.empty(len(points), XYZI_DTYPE)
    for name in ("x", "y", "z", "intensity"):
        out[name] = points[name]
    Path(path).write_bytes(out.tobytes())
