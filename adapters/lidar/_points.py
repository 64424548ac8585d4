"""The point-cloud payload: one numpy structured array per sweep.

Every point cloud a LiDAR source yields is a 1-D structured array whose first
four fields are ``x, y, z, intensity`` (float32, metres and the sensor's own
intensity scale). Sources that know more add fields after them:

* ``ring`` (uint16): laser index in order of increasing elevation (0 = lowest),
  the ROS/PCL convention;
* ``t_offset`` (int32): nanoseconds from the frame's ``t_sensor`` to the
  instant the point was fired, so motion compensation needs no guessing;
* ``return`` (uint8, Velodyne): 1 strongest, 2 last, 3 both.

File readers keep whatever other fields the file has (``rgb``, ``normal_x``...)
after these. A structured array, not a dict of columns, because one sweep then
is one contiguous buffer: it records, replays and crosses threads as a single
zero-copy block.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters.errors import DecodeError
from fusion.errors import FrameFormatError

XYZI_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])
"""The minimum every point cloud carries."""

VELODYNE_DTYPE = np.dtype(
    [
        ("x", "<f4"),
        ("y", "<f4"),
        ("z", "<f4"),
        ("intensity", "<f4"),
        ("ring", "<u2"),
        ("t_offset", "<i4"),
        ("return", "u1"),
    ]
)
"""What :class:`~adapters.VelodyneSource` yields: XYZI plus ring, firing time and which
echo the point is (``return``: 1 strongest, 2 last, 3 both: the only echo of a
dual-return firing)."""

REQUIRED_FIELDS = ("x", "y", "z", "intensity")


def xyz(points: np.ndarray) -> npt.NDArray[np.float32]:
    """An ``(N, 3)`` float32 array of the positions (a copy: fields are interleaved)."""
    out = np.empty((len(points), 3), np.float32)
    out[:, 0] = points["x"]
    out[:, 1] = points["y"]
    out[:, 2] = points["z"]
    return out


def from_xyz(positions: npt.ArrayLike, intensity: npt.ArrayLike | None = None) -> np.ndarray:
    """Build an XYZI point array from an ``(N, 3)`` array (intensity 0 if not given)."""
    pos = np.asarray(positions, dtype=np.float32).reshape(-1, 3)
    out = np.zeros(len(pos), XYZI_DTYPE)
    out["x"], out["y"], out["z"] = pos[:, 0], pos[:, 1], pos[:, 2]
    if intensity is not None:
        out["intensity"] = np.asarray(intensity, np.float32).reshape(-1)
    return out


def normalize(fields: dict[str, np.ndarray], count: int) -> np.ndarray:
    """Pack named columns into a point array: XYZI first (float32), the rest as given.

    A missing ``intensity`` is filled with zeros; missing ``x``/``y``/``z`` is
    an error, since a point cloud without positions is not one.
    """
    missing = [name for name in ("x", "y", "z") if name not in fields]
    if missing:
        raise FrameFormatError(
            sensor=None,
            seq=None,
            expected="point fields x, y, z",
            found=f"fields {sorted(fields)} (missing {', '.join(missing)})",
        )
    descr: list[tuple[Any, ...]] = [(name, "<f4") for name in REQUIRED_FIELDS]
    extra = [name for name in fields if name not in REQUIRED_FIELDS]
    for name in extra:
        column = fields[name]
        descr.append(
            (name, column.dtype.str, column.shape[1:])
            if column.ndim > 1
            else (name, column.dtype.str)
        )
    out = np.zeros(count, np.dtype(descr))
    for name, column in fields.items():
        out[name] = column
    return out


def as_points(array: np.ndarray, where: object, *, drop: Collection[str] = ()) -> np.ndarray:
    """A file's structured records as a point array, without copying when they already are one.

    Records whose first fields are x, y, z, intensity (float32) and that have
    nothing to ``drop`` (padding) are returned as they are: the file's buffer
    is the array. Others are repacked by :func:`normalize`. Records without
    x, y, z are a :class:`DecodeError` naming ``where`` (the file).
    """
    names = array.dtype.names or ()
    missing = [axis for axis in ("x", "y", "z") if axis not in names]
    if missing:
        raise DecodeError(
            f"{where}: expected point fields x, y, z; the file has fields "
            f"{list(names)} (missing {', '.join(missing)})"
        )
    if not drop and _xyzi_first(array.dtype):
        return array
    return normalize({n: array[n] for n in names if n not in drop}, len(array))


_F4 = np.dtype("<f4")


@functools.lru_cache(maxsize=64)
def _xyzi_first(dtype: np.dtype[Any]) -> bool:
    names = dtype.names or ()
    return names[:4] == REQUIRED_FIELDS and all(dtype[n] == _F4 for n in REQUIRED_FIELDS)


def check_points(data: Any, *, sensor: str | None = None, seq: int | None = None) -> np.ndarray:
    """Return ``data`` if it is a point array with XYZI fields, else raise FrameFormatError."""
    names = getattr(getattr(data, "dtype", None), "names", None)
    if not isinstance(data, np.ndarray) or names is None or data.ndim != 1:
        raise FrameFormatError(
            sensor=sensor,
            seq=seq,
            expected="a 1-D structured point array with fields x, y, z, intensity",
            found=f"{type(data).__name__} {getattr(data, 'dtype', '')}".strip(),
        )
    lacking = [f for f in REQUIRED_FIELDS if f not in names]
    if lacking:
        raise FrameFormatError(
            sensor=sensor,
            seq=seq,
            expected="point fields x, y, z, intensity",
            found=f"fields {list(names)} (missing {', '.join(lacking)})",
        )
    return data
