"""``sensor_msgs/PointCloud2`` to our structured point arrays, and back.

A PointCloud2 describes its points by named fields (``name``, byte
``offset``, ``datatype``, ``count``) inside a ``point_step``-byte record.
That is exactly a numpy structured dtype with explicit offsets, so the whole
cloud is read with one ``np.frombuffer`` and each field taken by name: no
per-point Python. The result goes through :func:`adapters.lidar.points.normalize`
so it has the layout every LiDAR source yields (``x, y, z, intensity`` as
float32 first, then the message's other fields: ``ring``, ``time``, ``rgb``...).
Organised clouds (``height > 1``) are flattened row by row; ``meta`` keeps
``height`` and ``width`` to restore the grid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapters.lidar.points import normalize
from fusion.errors import DecodeError, FrameFormatError

DATATYPES: dict[int, str] = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
"""PointField datatype constants to numpy type codes."""

_CODES = {code: datatype for datatype, code in DATATYPES.items()}


def cloud_dtype(msg: Any) -> np.dtype[Any]:
    """The structured dtype of one point record, named fields at their offsets."""
    order = ">" if msg.is_bigendian else "<"
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for field in msg.fields:
        name = str(field.name)
        if not name or name in names:  # PCL's padding fields have no name
            continue
        code = DATATYPES.get(int(field.datatype))
        if code is None:
            raise DecodeError(f"PointCloud2 field {name!r} has unknown datatype {field.datatype}")
        count = max(1, int(field.count))
        formats.append((order + code, (count,)) if count > 1 else order + code)
        names.append(name)
        offsets.append(int(field.offset))
    step = int(msg.point_step)
    try:
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": step})
    except ValueError as err:
        raise DecodeError(f"PointCloud2 fields do not fit point_step {step}: {err}") from None


def decode_pointcloud2(msg: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """A deserialised PointCloud2 as ``(points, meta)``; ``DecodeError`` if inconsistent."""
    dtype = cloud_dtype(msg)
    height, width = int(msg.height), int(msg.width)
    step, row_step = int(msg.point_step), int(msg.row_step)
    count = height * width
    buf = np.asarray(msg.data, dtype=np.uint8).reshape(-1)
    if row_step < width * step or buf.size < row_step * height:
        raise DecodeError(
            f"PointCloud2 {width}x{height} with point_step {step} and row_step {row_step} "
            f"needs {row_step * height} bytes; the message has {buf.size}"
        )
    if row_step == width * step:
        records = np.frombuffer(buf[: count * step], dtype, count)
    else:
        rows = buf[: row_step * height].reshape(height, row_step)[:, : width * step]
        records = np.frombuffer(np.ascontiguousarray(rows), dtype, count)
    columns = {}
    for name in dtype.names or ():
        column = records[name]
        if column.dtype.byteorder == ">":
            column = column.astype(column.dtype.newbyteorder("="))
        columns[name] = column
    try:
        points = normalize(columns, count)
    except FrameFormatError as err:
        raise DecodeError(f"PointCloud2 is not a point cloud: {err}") from None
    meta: dict[str, Any] = {}
    if height > 1:
        meta = {"height": height, "width": width}
    return points, meta


def pointcloud2_fields(points: np.ndarray) -> tuple[list[tuple[str, int, int, int]], int]:
    """``([(name, offset, datatype, count)], point_step)`` describing a structured array.

    Fields whose type has no PointField code (int64, bool...) are left out;
    the record stays as it is in memory, so its bytes are the message data.
    """
    fields: list[tuple[str, int, int, int]] = []
    for name in points.dtype.names or ():
        sub, offset = points.dtype.fields[name][:2]  # type: ignore[index]
        base = sub.base if sub.subdtype is not None else sub
        count = int(np.prod(sub.shape)) if sub.subdtype is not None else 1
        code = _CODES.get(base.str[1:])
        if code is None or base.byteorder == ">":
            continue
        fields.append((name, int(offset), code, count))
    return fields, int(points.dtype.itemsize)
