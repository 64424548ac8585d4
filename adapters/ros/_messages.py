"""Which decoder turns which ROS message type into a frame payload.

Every decoder is a callable ``msg -> (data, meta)`` working on a message
deserialised by ``rosbags`` (the same classes for ROS 1 and ROS 2: rosbags
names ROS 1 types ``pkg/msg/Type`` too). The standard types get a dedicated
decoder and a sensor kind:

=================================  ==========  ======================================
type                               kind        data
=================================  ==========  ======================================
``sensor_msgs/msg/Image``          camera      array in the encoding's dtype/shape
``sensor_msgs/msg/CompressedImage`` camera     decoded RGB array (or bytes)
``foxglove_msgs/msg/CompressedVideo`` camera   bytes of one encoded frame
``sensor_msgs/msg/PointCloud2``    lidar       structured point array (x, y, z, intensity, ...)
``sensor_msgs/msg/Imu``            imu         ``{"accel", "gyro", "orientation", *_covariance}``
``sensor_msgs/msg/NavSatFix``      gnss        ``{"latitude", "longitude", "altitude", ...}``
anything else                      generic     dict of arrays, nested names joined by "."
=================================  ==========  ======================================

The generic form (:func:`message_to_arrays`, :func:`decode_generic`) holds
fields only, never the type's constants. Its keys are field paths joined by
``.``; every value is a numpy array:

* a number or string is a 0-d array (``"level"``, ``"name"``);
* a sequence of numbers or strings is a 1-d array (JointState's ``"name"``
  is a ``<U`` array, ``"position"`` float64);
* a sequence of messages is stacked field by field, one row per element:
  TFMessage's ``transforms`` gives ``"transforms.child_frame_id"`` (n,),
  ``"transforms.transform.translation.x"`` (n,) and so on, so the i-th
  transform is row i of every ``"transforms.*"`` key; where the elements'
  own sequences differ in length (ragged), the element's index goes in the
  key instead (``"status.0.values.key"``, ``"status.1.values.key"``);
* an empty sequence of messages is an empty float array under its own key.

The original message is not rebuilt from this form: :mod:`adapters.ros._passthrough`
keeps its bytes for that.

The IMU keys follow :class:`adapters.synthetic.SyntheticImu` (``accel``,
``gyro``), so code written against one works on the other. Orientation is
``(x, y, z, w)``, as in the message.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapters.ros._images import CompressedImageDecoder, decode_image
from adapters.ros._pointcloud2 import decode_pointcloud2
from fusion import SensorKind

Decoder = Callable[[Any], tuple[Any, dict[str, Any]]]
"""``msg -> (data, meta)``; raises :class:`~adapters.errors.DecodeError` on a bad message."""

_MAX_DEPTH = 8


def decode_imu(msg: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``sensor_msgs/Imu`` as float64 arrays under our IMU keys."""
    q, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    values = np.array([a.x, a.y, a.z, w.x, w.y, w.z, q.x, q.y, q.z, q.w], np.float64)
    return {
        "accel": values[0:3],
        "gyro": values[3:6],
        "orientation": values[6:10],
        "accel_covariance": np.asarray(msg.linear_acceleration_covariance, np.float64),
        "gyro_covariance": np.asarray(msg.angular_velocity_covariance, np.float64),
        "orientation_covariance": np.asarray(msg.orientation_covariance, np.float64),
    }, {}


def decode_navsatfix(msg: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``sensor_msgs/NavSatFix`` as 0-d arrays (plottable one by one) plus the covariance."""
    return {
        "latitude": np.asarray(msg.latitude, np.float64),
        "longitude": np.asarray(msg.longitude, np.float64),
        "altitude": np.asarray(msg.altitude, np.float64),
        "position_covariance": np.asarray(msg.position_covariance, np.float64),
        "covariance_type": np.asarray(msg.position_covariance_type, np.uint8),
        "status": np.asarray(msg.status.status, np.int8),
        "service": np.asarray(msg.status.service, np.uint16),
    }, {}


def decode_compressed_video(msg: Any) -> tuple[bytes, dict[str, Any]]:
    """``foxglove_msgs/CompressedVideo``: one encoded frame's bytes, its codec in ``meta``."""
    return np.asarray(msg.data, np.uint8).tobytes(), {"format": str(msg.format)}


def message_to_arrays(msg: Any) -> dict[str, np.ndarray]:
    """Any message as a flat dict of arrays: ``{"header.stamp.sec": array(5), ...}``.

    Numbers become 0-d arrays, strings ``<U`` arrays, numeric sequences stay
    the arrays rosbags made, and a sequence of messages is stacked field by
    field (``"points.x"`` of all points), so nothing is a Python object.
    """
    out: dict[str, np.ndarray] = {}
    if hasattr(msg, "__dataclass_fields__"):
        _apply(msg, _plan(msg, skip_header=False), out, skip_header=False)
    else:
        _flatten(msg, "", out, 0)
    return out


_NAMES: dict[type, tuple[str, ...]] = {}

Plan = tuple[tuple[str, Callable[[Any], Any], int], ...]
"""A message class's leaves: ``(key, getter, depth)``, nested messages walked through."""

_PLANS: dict[tuple[type, bool], Plan] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A message class's field names, looked up once per class.

    Only the fields: rosbags declares a type's constants (``DEBUG``,
    ``POWER_SUPPLY_STATUS_FULL``...) and ``__msgtype__`` as ``ClassVar``
    annotations, written as strings, so ``dataclasses`` lists them as fields.
    """
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if not f.name.startswith("__") and not _is_classvar(f.type)
        )
    return names


def _is_classvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _plan(msg: Any, skip_header: bool) -> Plan:
    """The leaves of ``msg``'s class, worked out once per class from its first message.

    Nested messages are always present in ROS (never ``None``), so the walk of
    one message holds for every message of its class; what a leaf holds is
    still looked at per message (:func:`_apply`).
    """
    cached = _PLANS.get((type(msg), skip_header))
    if cached is None:
        steps: list[tuple[str, Callable[[Any], Any], int]] = []
        _walk(msg, "", 0, steps, skip_header)
        cached = _PLANS[(type(msg), skip_header)] = tuple(steps)
    return cached


def _walk(
    value: Any, prefix: str, depth: int, steps: list[tuple[str, Any, int]], skip_header: bool
) -> None:
    if depth + 1 > _MAX_DEPTH:
        return
    for name in _field_names(type(value)):
        child = getattr(value, name)
        if skip_header and name == "header" and hasattr(child, "__dataclass_fields__"):
            continue  # its stamp is the frame's t_sensor, its frame_id in meta
        if not isinstance(child, (np.ndarray, list, bool, int, float, str)) and hasattr(
            child, "__dataclass_fields__"
        ):
            _walk(child, f"{prefix}{name}.", depth + 1, steps, False)
        else:
            steps.append((prefix + name, operator.attrgetter(prefix + name), depth + 1))


def _apply(msg: Any, plan: Plan, out: dict[str, np.ndarray], skip_header: bool) -> None:
    for key, get, depth in plan:
        value = get(msg)
        if isinstance(value, np.ndarray):
            out[key] = value
        elif isinstance(value, (bool, int, float, str)):
            out[key] = np.asarray(value)
        elif not (skip_header and key == "header" and _is_message(value)):
            _flatten(value, key, out, depth)  # sequences of messages, stacked


def _flatten(value: Any, key: str, out: dict[str, np.ndarray], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, np.ndarray):
        out[key] = value
    elif isinstance(value, (bool, int, float, str)):
        out[key] = np.asarray(value)
    elif isinstance(value, list):
        _flatten_list(value, key, out, depth)
    elif hasattr(value, "__dataclass_fields__"):
        prefix = f"{key}." if key else ""
        for name in _field_names(type(value)):
            _flatten(getattr(value, name), prefix + name, out, depth + 1)


def _flatten_list(items: list[Any], key: str, out: dict[str, np.ndarray], depth: int) -> None:
    if not items or not hasattr(items[0], "__dataclass_fields__"):
        out[key] = np.asarray(items) if items else np.empty(0)
        return
    stack_parts([message_to_arrays(item) for item in items], key, out)


def stack_parts(parts: list[dict[str, np.ndarray]], key: str, out: dict[str, np.ndarray]) -> None:
    """A sequence of messages, each already flat (``parts``), stacked field by field into ``out``.

    Keys are the first element's; where the elements' arrays differ in shape
    (ragged nested sequences) the element's index goes in the key instead.
    """
    for name in parts[0]:
        column = [p.get(name) for p in parts]
        first = column[0]
        assert first is not None
        if all(c is not None and c.shape == first.shape for c in column):
            # np.array stacks same-shape arrays of one dtype as np.stack does, 8x cheaper.
            same = all(c.dtype == first.dtype for c in column)  # type: ignore[union-attr]
            out[f"{key}.{name}"] = np.array(column) if same else np.stack(column)  # type: ignore[arg-type]
        else:  # ragged nested sequences: one entry per element
            for i, c in enumerate(column):
                if c is not None:
                    out[f"{key}.{i}.{name}"] = c


def decode_generic(msg: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Fallback for every other type: :func:`message_to_arrays` without the header."""
    data: dict[str, np.ndarray] = {}
    if hasattr(msg, "__dataclass_fields__"):
        _apply(msg, _plan(msg, skip_header=True), data, skip_header=True)
    else:
        _flatten(msg, "", data, 0)
    return data, {}


def _is_message(value: Any) -> bool:
    """A message, or a non-empty list of them (what flattens to ``"name.*"`` keys)."""
    if isinstance(value, list):
        return bool(value) and hasattr(value[0], "__dataclass_fields__")
    return hasattr(value, "__dataclass_fields__")


@dataclass(frozen=True, slots=True)
class DecoderInfo:
    """How one message type becomes frames."""

    kind: SensorKind
    name: str
    """Short decoder name shown in topic listings (``"image"``, ``"generic"``)."""
    make: Callable[[bool], Decoder]
    """Builds a decoder; the flag says whether compressed images are decoded."""


def _plain(decoder: Decoder) -> Callable[[bool], Decoder]:
    return lambda _decode_images: decoder


DECODERS: dict[str, DecoderInfo] = {
    "sensor_msgs/msg/Image": DecoderInfo("camera", "image", _plain(decode_image)),
    "sensor_msgs/msg/CompressedImage": DecoderInfo(
        "camera", "compressed-image", CompressedImageDecoder
    ),
    "foxglove_msgs/msg/CompressedVideo": DecoderInfo(
        "camera", "compressed-video", _plain(decode_compressed_video)
    ),
    "sensor_msgs/msg/PointCloud2": DecoderInfo("lidar", "pointcloud2", _plain(decode_pointcloud2)),
    "sensor_msgs/msg/Imu": DecoderInfo("imu", "imu", _plain(decode_imu)),
    "sensor_msgs/msg/NavSatFix": DecoderInfo("gnss", "navsatfix", _plain(decode_navsatfix)),
}
"""Dedicated decoders by message type; :data:`GENERIC` serves every other type."""

GENERIC = DecoderInfo("generic", "generic", _plain(decode_generic))


def decoder_info(msgtype: str) -> DecoderInfo:
    """The decoder for ``msgtype`` (``pkg/msg/Type``), the generic one if none is dedicated."""
    return DECODERS.get(msgtype, GENERIC)


def header_stamp(msg: Any) -> int | None:
    """The message's ``header.stamp`` in ns, or ``None`` when it has none (or it is zero)."""
    header = getattr(msg, "header", None)
    stamp = getattr(header, "stamp", None)
    if stamp is None:
        return None
    ns = int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
    return ns or None
