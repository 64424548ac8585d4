"""``sensor_msgs/PointCloud2`` to our structured point arrays, and back.

A PointCloud2 describes its points by named fields (``name``, byte
``offset``, ``datatype``, ``count``) inside a ``point_step``-byte record.
That is exactly a numpy structured dtype with explicit offsets, so the whole
cloud is read with one ``np.frombuffer`` and each field taken by name: no
per-point Python. The result has the layout every LiDAR source yields
(:func:`adapters.lidar._points.normalize`: ``x, y, z, intensity`` as float32
first, packed, then the message's other fields: ``ring``, ``time``, ``rgb``...).
When the message's records already are that layout (a cloud we exported, or
any driver that packs XYZI float32 first), the array is a read-only view of
the message bytes: no copy. The layout is worked out once per field list.
Organised clouds (``height > 1``) are flattened row by row; ``meta`` keeps
``height`` and ``width`` to restore the grid.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapters.errors import DecodeError
from adapters.lidar import REQUIRED_FIELDS

DATATYPES: dict[int, str] = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
"""PointField datatype constants to numpy type codes."""

_CODES = {code: datatype for datatype, code in DATATYPES.items()}


PointFields = tuple[tuple[str, int, int, int], ...]
"""A PointCloud2's ``fields`` as ``((name, offset, datatype, count), ...)``."""


def point_fields(fields: Any) -> PointFields:
    """Deserialised ``PointField`` messages as plain tuples (hashable, a cache key)."""
    return tuple((str(f.name), int(f.offset), int(f.datatype), int(f.count)) for f in fields)


@dataclass(frozen=True, slots=True)
class CloudLayout:
    """How the records of one PointCloud2 field list become our point array.

    Worked out once per distinct ``(fields, point_step, is_bigendian)`` and
    cached: a LiDAR topic sends the same field list in every message.
    """

    record: np.dtype[Any]
    """The message's record: named fields at their offsets, ``point_step`` bytes."""
    points: np.dtype[Any] | None
    """Our packed layout (XYZI float32 first, then the rest, native byte order);
    ``None`` when the cloud lacks x, y or z (``error`` says why)."""
    view: bool
    """Whether ``record`` already is ``points``: the array is then a view, no copy."""
    error: str = ""


@functools.lru_cache(maxsize=256)
def cloud_layout(fields: PointFields, step: int, bigendian: bool) -> CloudLayout:
    """The (cached) :class:`CloudLayout` of a field list; ``DecodeError`` if it is invalid."""
    order = ">" if bigendian else "<"
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for name, offset, datatype, count in fields:
        if not name or name in names:  # PCL's padding fields have no name
            continue
        code = DATATYPES.get(datatype)
        if code is None:
            raise DecodeError(f"PointCloud2 field {name!r} has unknown datatype {datatype}")
        count = max(1, count)
        if count > 1 and name in REQUIRED_FIELDS:
            raise DecodeError(f"PointCloud2 field {name!r} has count {count}; it must be 1")
        formats.append((order + code, (count,)) if count > 1 else order + code)
        names.append(name)
        offsets.append(offset)
    try:
        record = np.dtype(
            {"names": names, "formats": formats, "offsets": offsets, "itemsize": step}
        )
    except ValueError as err:
        raise DecodeError(f"PointCloud2 fields do not fit point_step {step}: {err}") from None
    missing = [name for name in ("x", "y", "z") if name not in names]
    if missing:
        error = (
            "PointCloud2 is not a point cloud: frame: expected point fields x, y, z, found fields "
            f"{sorted(names)} (missing {', '.join(missing)})"
        )
        return CloudLayout(record, None, False, error)
    # The layout normalize() builds: XYZI as float32 first, other fields as they are.
    descr: list[tuple[Any, ...]] = [(name, "<f4") for name in REQUIRED_FIELDS]
    for name in names:
        if name not in REQUIRED_FIELDS:
            sub = record.fields[name][0]  # type: ignore[index]
            base = (sub.base if sub.subdtype is not None else sub).newbyteorder("=")
            descr.append((name, base.str, sub.shape) if sub.shape else (name, base.str))
    points = np.dtype(descr)
    return CloudLayout(record, points, record == points)


def decode_pointcloud2(msg: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """A deserialised PointCloud2 as ``(points, meta)``; ``DecodeError`` if inconsistent."""
    return cloud_from_buffer(
        point_fields(msg.fields),
        int(msg.height),
        int(msg.width),
        int(msg.point_step),
        int(msg.row_step),
        bool(msg.is_bigendian),
        np.asarray(msg.data, dtype=np.uint8).reshape(-1),
    )


def cloud_from_buffer(
    fields: PointFields,
    height: int,
    width: int,
    step: int,
    row_step: int,
    bigendian: bool,
    buf: np.ndarray,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Our point array from a PointCloud2's fields, ``buf`` its ``data`` (flat uint8).

    Shared by :func:`decode_pointcloud2` and the raw CDR path of
    :mod:`adapters.ros._rawdecode`. When the message's records already have
    our layout (packed, XYZI float32 first, little-endian) the result is a
    read-only view of ``buf``; otherwise the fields are copied by name into a
    fresh array of that layout (what :func:`adapters.lidar._points.normalize` does).
    """
    layout = cloud_layout(fields, step, bigendian)
    count = height * width
    if row_step < width * step or buf.size < row_step * height:
        raise DecodeError(
            f"PointCloud2 {width}x{height} with point_step {step} and row_step {row_step} "
            f"needs {row_step * height} bytes; the message has {buf.size}"
        )
    if layout.points is None:
        raise DecodeError(layout.error)
    meta: dict[str, Any] = {"height": height, "width": width} if height > 1 else {}
    packed = row_step == width * step
    if layout.view and packed:
        return np.frombuffer(buf, layout.points, count), meta
    if packed:
        records = np.frombuffer(buf, layout.record, count)
    else:
        rows = buf[: row_step * height].reshape(height, row_step)[:, : width * step]
        records = np.frombuffer(np.ascontiguousarray(rows), layout.record, count)
    names = layout.record.names or ()
    points = np.empty(count, layout.points)
    if "intensity" not in names:
        points["intensity"] = 0
    with np.errstate(over="ignore", invalid="ignore"):  # a float64 beyond float32: inf
        for name in names:
            points[name] = records[name]
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
