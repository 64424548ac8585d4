"""What a frame's payload is, for choosing the message an exporter writes.

Frames carry arrays, dicts of arrays or bytes; sensors have a kind. The rules,
checked in this order, are the same for every exporter:

* ``bytes`` with ``meta["format"]`` JPEG or PNG: ``encoded_image``;
  H.264/H.265/VP9/AV1: ``video`` (one encoded frame);
* a structured array with ``x``, ``y``, ``z`` fields: ``points``;
* an array of a ``camera`` sensor, 2-D or 3-D with at most 4 channels: ``image``;
* a dict with ``accel`` and ``gyro`` (our IMU keys): ``imu``;
* a dict with ``latitude`` and ``longitude``: ``gnss``;
* any other numeric array, dict of arrays or structured array: ``series``
  (plotted field by field);
* anything else is skipped, and the exporter counts it with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

from fusion.frames import Frame

PayloadKind = Literal["image", "encoded_image", "video", "points", "imu", "gnss", "series"]

IMAGE_FORMATS = {"jpeg": "jpeg", "jpg": "jpeg", "png": "png"}
VIDEO_FORMATS = {"h264": "h264", "h265": "h265", "hevc": "h265", "vp9": "vp9", "av1": "av1"}


def classify(frame: Frame, sensor_kind: str) -> PayloadKind | str:
    """The payload kind of ``frame``, or (not a :data:`PayloadKind`) why it cannot be exported."""
    data = frame.data
    if isinstance(data, (bytes, bytearray, memoryview)):
        fmt = str(frame.meta.get("format", "")).lower()
        if any(key in fmt for key in IMAGE_FORMATS):
            return "encoded_image"
        if fmt in VIDEO_FORMATS:
            return "video"
        return f"bytes with unknown meta['format'] {fmt!r}"
    if isinstance(data, np.ndarray):
        names = data.dtype.names
        if names is not None:
            if {"x", "y", "z"} <= set(names):
                return "points"
            return "series"
        if sensor_kind == "camera" and _image_shaped(data):
            return "image"
        if data.dtype.kind in "biuf":
            return "series"
        return f"array of dtype {data.dtype}"
    if isinstance(data, dict):
        if "accel" in data and "gyro" in data:
            return "imu"
        if "latitude" in data and "longitude" in data:
            return "gnss"
        if data and all(_numeric(v) for v in data.values()):
            return "series"
        return "dict with non-numeric values"
    return f"payload of type {type(data).__name__}"


def video_format(frame: Frame) -> str:
    """Normalised codec name of an encoded video frame (``h264``, ``h265``...)."""
    return VIDEO_FORMATS[str(frame.meta.get("format", "")).lower()]


def image_format(frame: Frame) -> str:
    """``jpeg`` or ``png`` for an encoded image frame."""
    fmt = str(frame.meta.get("format", "")).lower()
    return "png" if "png" in fmt else "jpeg"


def _image_shaped(data: np.ndarray) -> bool:
    return data.ndim == 2 or (data.ndim == 3 and data.shape[2] in (1, 2, 3, 4))


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, np.ndarray)) and (
        not isinstance(value, np.ndarray) or value.dtype.kind in "biuf"
    )


def series_values(data: Any) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, float64 values)`` of every numeric field of a series payload, flattened.

    A structured array gives one entry per field, a dict one per key, a plain
    array a single entry named ``"value"``.
    """
    if isinstance(data, dict):
        for key, value in data.items():
            if _numeric(value):
                yield str(key), np.asarray(value, np.float64).reshape(-1)
    elif isinstance(data, np.ndarray) and data.dtype.names is not None:
        for name in data.dtype.names:
            column = data[name]
            if column.dtype.kind in "biuf":
                yield name, np.asarray(column, np.float64).reshape(-1)
    elif isinstance(data, np.ndarray):
        yield "value", np.asarray(data, np.float64).reshape(-1)
