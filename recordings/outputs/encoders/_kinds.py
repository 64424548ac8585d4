"""What a frame's payload is, for choosing the message an exporter writes.

Frames carry arrays, dicts of arrays or bytes; sensors have a kind. The rules,
checked in this order, are the same for every exporter (a frame that came
from a bag with its original message is written as that message before any
of these: :mod:`adapters.ros._passthrough`):

* an encoded video packet of a recording (``meta["hf.video"]``,
  :mod:`recordings.hfr.video._packets`): ``video``;
* ``bytes`` with ``meta["format"]`` JPEG or PNG: ``encoded_image``;
  H.264/H.265/VP9/AV1: ``video`` (one encoded frame);
* a structured array whose field names fit a standard message
  (:mod:`recordings.outputs.encoders._shapes`: ``ax..gz``, ``lat/lon``, poses): ``imu``,
  ``gnss``, ``odometry`` or ``pose``, written one message per row (a sensor's
  override forces one, or ``series``);
* a structured array with ``x``, ``y``, ``z`` fields: ``points``;
* a uint8 or uint16 array shaped like an image (``HxW`` or ``HxWxC``, C at
  most 4, both sides at least 2), whatever the sensor's kind; the kind only
  breaks the tie for a ``timeseries``, ``imu``, ``gnss`` or ``can`` sensor,
  whose small integer arrays stay ``series``;
* a dict with ``accel`` and ``gyro`` (our IMU keys): ``imu``;
* a dict with ``latitude`` and ``longitude``: ``gnss``;
* any other dict of arrays, numbers or strings: ``record`` (every field kept,
  with its dtype and shape);
* any other numeric array or structured array: ``series`` (plotted field by field);
* anything else is skipped, and the exporter counts it with the reason.

An ``audio`` sensor's PCM frames (float ``channels x samples`` with ``meta["rate"]``,
:func:`recordings.outputs.files._audio.is_audio`) go to the ROS 2 profile as
``audio_common_msgs`` before these rules; the other exporters take them as ``series``.

Internal bookkeeping sensors (a video sensor's ``<name>#keyframes`` markers)
are never exported nor grouped: :func:`is_internal`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np

from fusion import Frame
from recordings.hfr.video import KEYFRAME_SUFFIX, META_KEY
from recordings.outputs.encoders._shapes import Shape, match

PayloadKind = Literal[
    "image",
    "encoded_image",
    "video",
    "points",
    "imu",
    "gnss",
    "odometry",
    "pose",
    "record",
    "series",
]

IMAGE_FORMATS = {"jpeg": "jpeg", "jpg": "jpeg", "png": "png"}
VIDEO_FORMATS = {"h264": "h264", "h265": "h265", "hevc": "h265", "vp9": "vp9", "av1": "av1"}
VIDEO_FORMATS |= {"ffv1": "ffv1"}
_SERIES_KINDS = ("timeseries", "imu", "gnss", "can")


def is_internal(sensor: str) -> bool:
    """Whether ``sensor`` is bookkeeping of the recording (``cam#keyframes``), not data."""
    return sensor.endswith(KEYFRAME_SUFFIX)


def classify(frame: Frame, sensor_kind: str, forced: str | None = None) -> PayloadKind | str:
    """The payload kind of ``frame``, or (not a :data:`PayloadKind`) why it cannot be exported.

    ``forced`` is the sensor's typed-export override (a shape name, ``series``
    to keep a plain array)."""
    data = frame.data
    if isinstance(data, (bytes, bytearray, memoryview)):
        if isinstance(frame.meta.get(META_KEY), Mapping):
            return "video"
        fmt = str(frame.meta.get("format", "")).lower()
        if any(key in fmt for key in IMAGE_FORMATS):
            return "encoded_image"
        if fmt in VIDEO_FORMATS:
            return "video"
        return f"bytes with unknown meta['format'] {fmt!r}"
    if isinstance(data, np.ndarray):
        names = data.dtype.names
        if names is not None:
            shape = typed_shape(names, sensor_kind, forced)
            if isinstance(shape, Shape):
                return shape.kind
            if isinstance(shape, str):
                return shape
            if forced == "series":
                return "series"
            if {"x", "y", "z"} <= set(names):
                return "points"
            return "series"
        if _image_shaped(data) and (sensor_kind == "camera" or sensor_kind not in _SERIES_KINDS):
            return "image"
        if data.dtype.kind in "biuf":
            return "series"
        return f"array of dtype {data.dtype}"
    if isinstance(data, dict):
        if "accel" in data and "gyro" in data:
            return "imu"
        if "latitude" in data and "longitude" in data:
            return "gnss"
        bad = [str(k) for k, v in data.items() if not _recordable(v)]
        if data and not bad:
            return "record"
        if not data:
            return "empty dict"
        return f"dict with values that are not numbers, strings or arrays ({', '.join(bad[:3])})"
    return f"payload of type {type(data).__name__}"


@functools.lru_cache(maxsize=256)
def typed_shape(names: tuple[str, ...], sensor_kind: str, forced: str | None) -> Shape | str | None:
    """:func:`recordings.outputs.encoders._shapes.match`, once per (fields, kind, override)."""
    return match(names, sensor_kind, forced)


def video_format(frame: Frame) -> str:
    """Normalised codec name of an encoded video frame from its ``meta["format"]``."""
    return codec_format(str(frame.meta.get("format", "")))


def codec_format(codec: str) -> str:
    """``CompressedVideo.format`` for an FFmpeg codec name: ``hevc`` -> ``h265``, ``h264``..."""
    return VIDEO_FORMATS.get(codec.lower(), codec.lower())


def image_format(frame: Frame) -> str:
    """``jpeg`` or ``png`` for an encoded image frame."""
    fmt = str(frame.meta.get("format", "")).lower()
    return "png" if "png" in fmt else "jpeg"


def _image_shaped(data: np.ndarray) -> bool:
    if data.dtype not in (np.uint8, np.uint16) or data.ndim not in (2, 3):
        return False
    if data.shape[0] < 2 or data.shape[1] < 2:
        return False
    return data.ndim == 2 or data.shape[2] in (1, 2, 3, 4)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, np.ndarray)) and (
        not isinstance(value, np.ndarray) or value.dtype.kind in "biuf"
    )


def _recordable(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, np.generic)):
        return not isinstance(value, np.generic) or value.dtype.kind in "biufU"
    if isinstance(value, np.ndarray):
        return value.dtype.names is None and value.dtype.kind in "biufU"
    return False


def series_values(data: Any, *, device_time: bool = True) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, float64 values)`` of every numeric field of a series payload, flattened.

    A structured array gives one entry per field, a dict one per key, a plain
    array a single entry named ``"value"``. ``device_time=False`` leaves out a
    structured array's integer ``t`` field, the sample's own stamp (a plot of
    it is a straight line of nanoseconds, not a value).
    """
    if isinstance(data, dict):
        for key, value in data.items():
            if _numeric(value):
                yield str(key), np.asarray(value, np.float64).reshape(-1)
    elif isinstance(data, np.ndarray) and data.dtype.names is not None:
        for name in data.dtype.names:
            column = data[name]
            if name == "t" and column.dtype.kind in "iu" and not device_time:
                continue
            if column.dtype.kind in "biuf":
                yield name, np.asarray(column, np.float64).reshape(-1)
    elif isinstance(data, np.ndarray):
        yield "value", np.asarray(data, np.float64).reshape(-1)
