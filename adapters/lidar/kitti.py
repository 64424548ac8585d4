"""Read KITTI-style ``.bin`` scans: little-endian float32 rows of x, y, z, reflectance."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from adapters.lidar.points import XYZI_DTYPE
from fusion.errors import DecodeError


def read_kitti_bin(path: str | Path) -> np.ndarray:
    """The scan as an XYZI array (the file's bytes are the array: no copy, no parse)."""
    path = Path(path)
    raw = path.read_bytes()
    if len(raw) % XYZI_DTYPE.itemsize:
        raise DecodeError(
            f"{path}: byte {len(raw) - len(raw) % XYZI_DTYPE.itemsize}: size {len(raw)} is not "
            f"a multiple of {XYZI_DTYPE.itemsize} (4 float32 per point); the file is cut short"
        )
    return np.frombuffer(raw, XYZI_DTYPE)


def write_kitti_bin(path: str | Path, points: np.ndarray) -> None:
    """Write x, y, z, intensity of ``points`` as a KITTI ``.bin``."""
    out = np.empty(len(points), XYZI_DTYPE)
    for name in ("x", "y", "z", "intensity"):
        out[name] = points[name]
    Path(path).write_bytes(out.tobytes())
