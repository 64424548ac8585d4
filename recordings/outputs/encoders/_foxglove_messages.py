"""The ``foxglove`` profile's encoders: one pure function per Foxglove schema, frame -> message.

:class:`~recordings.outputs.encoders._foxglove.FoxgloveMcapWriter` is the shell
around them (channels, log times, counts); these only build messages from a
frame (or a row of one) and touch no file, channel or context. :data:`MESSAGES`
maps a payload kind to the encoder of its Foxglove protobuf message
(``foxglove.RawImage``, ``CompressedImage``, ``LocationFix``, ``PointCloud``);
the JSON channels' records (IMU rows, series, CAN signals) and their JSON
schemas are made by :func:`series_record`, :func:`imu_record`,
:func:`signal_record` and :func:`record_schema`; the ROS 2 CDR ones
(``CompressedVideo``, ``Odometry``) by :func:`video_cdr` and :func:`odometry_cdr`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from adapters.ros import encoding_for
from fusion import Frame
from recordings.outputs.encoders._generic import js_safe, json_value
from recordings.outputs.encoders._kinds import image_format, series_values
from recordings.outputs.encoders._ros2 import TYPES, odometry_message
from recordings.outputs.encoders._shapes import ellipsoid_altitude

VIDEO_TYPE = TYPES["video"]
ODOMETRY_TYPE = TYPES["odometry"]

_NUMERIC = {"u1": "Uint8", "i1": "Int8", "u2": "Uint16", "i2": "Int16", "u4": "Uint32"}
_NUMERIC |= {"i4": "Int32", "f4": "Float32", "f8": "Float64"}


def frame_id_of(frame: Frame) -> str:
    """The frame's ``meta['frame_id']``, else its sensor's name."""
    return str(frame.meta.get("frame_id", frame.sensor))


def json_stamp(t: int) -> dict[str, int]:
    """``t`` (ns) as a JSON record's ``timestamp``: ``{"sec", "nsec"}``."""
    return {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000}


def _stamp(t: int) -> Any:
    from foxglove import messages as m

    return m.Timestamp(t // 1_000_000_000, t % 1_000_000_000)


def raw_image(frame: Frame) -> Any:
    """An image array as ``foxglove.RawImage`` (its encoding from ``meta`` or its dtype)."""
    from foxglove import messages as m

    image = np.ascontiguousarray(frame.data)
    return m.RawImage(
        timestamp=_stamp(frame.t),
        frame_id=frame_id_of(frame),
        width=image.shape[1],
        height=image.shape[0],
        encoding=str(frame.meta.get("encoding") or encoding_for(image)),
        step=image.strides[0],
        data=image.tobytes(),
    )


def compressed_image(frame: Frame) -> Any:
    """Encoded image bytes as ``foxglove.CompressedImage``."""
    from foxglove import messages as m

    return m.CompressedImage(
        timestamp=_stamp(frame.t),
        frame_id=frame_id_of(frame),
        data=bytes(frame.data),
        format=image_format(frame),
    )


def location_fix(frame: Frame) -> Any:
    """A GNSS dict (``latitude``, ``longitude``, ``altitude``) as ``foxglove.LocationFix``."""
    from foxglove import messages as m

    data = frame.data
    return m.LocationFix(
        timestamp=_stamp(frame.t),
        frame_id=frame_id_of(frame),
        latitude=float(data["latitude"]),
        longitude=float(data["longitude"]),
        altitude=float(data.get("altitude", 0.0)),
    )


def point_cloud(frame: Frame) -> Any:
    """A structured point array as ``foxglove.PointCloud``, one field per numeric
    little-endian column; ``None`` when it has none."""
    from foxglove import messages as m

    points = np.ascontiguousarray(frame.data)
    fields = []
    for name in points.dtype.names or ():
        sub, offset = points.dtype.fields[name][:2]  # type: ignore[index]
        numeric = _NUMERIC.get(sub.str[1:]) if sub.subdtype is None else None
        if numeric is not None and sub.byteorder != ">":
            numeric_type = getattr(m.PackedElementFieldNumericType, numeric)
            fields.append(m.PackedElementField(name=name, offset=int(offset), type=numeric_type))
    if not fields:
        return None
    return m.PointCloud(
        timestamp=_stamp(frame.t),
        frame_id=frame_id_of(frame),
        pose=m.Pose(
            position=m.Vector3(x=0.0, y=0.0, z=0.0),
            orientation=m.Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
        ),
        point_stride=points.dtype.itemsize,
        fields=fields,
        data=points.tobytes(),
    )


MESSAGES: Mapping[str, Callable[[Frame], Any]] = {
    "image": raw_image,
    "encoded_image": compressed_image,
    "gnss": location_fix,
    "points": point_cloud,
}
"""A payload kind's Foxglove protobuf message, made from a whole frame (``None``: none fits)."""


def row_message(kind: str, t: int, frame_id: str, values: Mapping[str, Any]) -> Any:
    """One row of a typed time series (:mod:`._shapes`) as ``foxglove.LocationFix``
    (``kind`` ``gnss``) or ``foxglove.PoseInFrame`` (``pose``)."""
    from foxglove import messages as m

    if kind == "gnss":
        return m.LocationFix(
            timestamp=_stamp(t),
            frame_id=frame_id,
            latitude=float(values["lat"][0]),
            longitude=float(values["lon"][0]),
            altitude=ellipsoid_altitude(values),
        )
    p, q = values["position"], values["orientation"]
    return m.PoseInFrame(
        timestamp=_stamp(t),
        frame_id=frame_id,
        pose=m.Pose(
            position=m.Vector3(x=p[0], y=p[1], z=p[2]),
            orientation=m.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
        ),
    )


def imu_record(t: int, values: Mapping[str, Any]) -> dict[str, Any]:
    """One IMU row as a JSON record: ``timestamp`` and ``accel``/``gyro``/``orientation``."""
    record: dict[str, Any] = {"timestamp": json_stamp(t)}
    for key in ("accel", "gyro", "orientation"):
        if key in values:
            record[key] = values[key].tolist()
    return record


def series_record(frame: Frame) -> dict[str, Any]:
    """A series frame as one JSON record: a number per one-value field, else an array."""
    record: dict[str, Any] = {"timestamp": json_stamp(frame.t)}
    for name, values in series_values(frame.data):
        record[name] = float(values[0]) if values.size == 1 else json_value(values)
    return record


def signal_record(t: int, values: Mapping[str, Any]) -> dict[str, Any]:
    """One row of decoded CAN signals as a JSON record (a NaN signal: ``null``, absent)."""
    record: dict[str, Any] = {"timestamp": json_stamp(t)}
    for name, value in values.items():
        number = value.item()
        record[name] = None if number != number else js_safe(number)
    return record


def record_schema(title: str, record: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema for a record (numbers and arrays of numbers, plus ``timestamp``)."""
    props: dict[str, Any] = {
        "timestamp": {
            "type": "object",
            "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
        }
    }
    for key, value in record.items():
        if key != "timestamp":
            props[key] = (
                {"type": "array", "items": {"type": "number"}}
                if isinstance(value, list)
                else {"type": "number"}
            )
    return {"title": title, "type": "object", "properties": props}


def video_cdr(store: Any, frame: Frame, payload: bytes, fmt: str) -> bytes:
    """A video packet as ``foxglove_msgs/msg/CompressedVideo`` CDR (``store``: a ROS 2
    typestore), as in the ros2 profile."""
    T, t = store.types, frame.t
    msg = T[VIDEO_TYPE](
        timestamp=T["builtin_interfaces/msg/Time"](
            sec=t // 1_000_000_000, nanosec=t % 1_000_000_000
        ),
        frame_id=frame_id_of(frame),
        data=np.frombuffer(payload, np.uint8),
        format=fmt,
    )
    return bytes(store.serialize_cdr(msg, VIDEO_TYPE))


def odometry_cdr(store: Any, t: int, frame_id: str, values: dict[str, Any]) -> bytes:
    """One odometry row as ``nav_msgs/msg/Odometry`` CDR (Foxglove has no odometry schema)."""
    T = store.types
    header = T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=t // 1_000_000_000, nanosec=t % 1_000_000_000),
        frame_id=frame_id,
    )
    return bytes(store.serialize_cdr(odometry_message(T, header, values), ODOMETRY_TYPE))
