"""Typed exports: structured-array frames whose field names fit a standard message.

A time series (an IMU over UDP, a CSV of poses, a GNSS receiver) records a
structured array of rows (``t`` first, the sample's own stamp). When its
fields fit one of these shapes, the exporters write it as the standard
message, one per row, instead of a plain ``Float64MultiArray``:

===========  ==================================  =====================================
shape        fields (one of each group)          ROS 2 type
===========  ==================================  =====================================
``imu``      accel ``ax ay az`` + gyro           ``sensor_msgs/msg/Imu``
             ``gx gy gz`` (orientation
             ``qx qy qz qw`` optional)
``gnss``     ``lat`` + ``lon`` (``alt``          ``sensor_msgs/msg/NavSatFix``
             optional)
``odometry`` position ``x y z`` + orientation    ``nav_msgs/msg/Odometry``
             + velocity ``vx vy vz`` (angular
             velocity ``gx gy gz`` optional)
``pose``     position + orientation              ``geometry_msgs/msg/PoseStamped``
===========  ==================================  =====================================

Names are matched after lowercasing and dropping a unit suffix (``"a_RS_S_x
[m s^-2]"`` is ``a_rs_s_x``): a vector is a prefix and the axis letter
(``ax``, ``accel_x``, ``a_rs_s_x``); the prefix's first word names what it is
(:data:`ROLES`: ``a``/``acc``/``accel`` acceleration, ``g``/``w``/``gyro``/``omega``
angular velocity, ``q``/``quat``/``orientation`` a quaternion (``w`` too), ``p``/
``pos``/none a position, ``v``/``vel`` a velocity). GNSS fields are ``lat``/``latitude``,
``lon``/``lng``/``longitude``, ``alt``/``altitude``/``height``; NMEA's ``quality`` gives
the fix status and ``geoid_sep`` turns its mean-sea-level altitude into the height above
the ellipsoid that NavSatFix carries.

Which shape: a sensor of kind ``imu`` or ``gnss`` takes its own shape when its
fields fit; any time-series or generic sensor takes the first that fits, in
the table's order; a ``lidar``, ``radar`` or ``camera`` sensor none (its ``x, y, z``
arrays are point clouds). A per-sensor override (``--type imu=sensor_msgs/msg/Imu``
on ``export``, ``export_type`` in a TOML source, :func:`parse_types`) forces a
type: fields that do not fit it skip the frame with the reason, and
``std_msgs/msg/Float64MultiArray`` keeps a sensor a plain series.

Each message's ``header.stamp`` is the frame's ``t`` plus the row's offset
from the frame's first row (``t`` rows of a block), ``frame_id`` the sensor name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

TYPES = {
    "imu": "sensor_msgs/msg/Imu",
    "gnss": "sensor_msgs/msg/NavSatFix",
    "odometry": "nav_msgs/msg/Odometry",
    "pose": "geometry_msgs/msg/PoseStamped",
    "series": "std_msgs/msg/Float64MultiArray",
}
"""The ROS 2 type of each shape (``series``: no shape, the plain array)."""

ROLES: Mapping[str, frozenset[str]] = {
    "accel": frozenset({"a", "acc", "accel", "accelerometer", "acceleration", "lin_acc"}),
    "gyro": frozenset({"g", "w", "gyr", "gyro", "gyroscope", "omega", "ang_vel"}),
    "orientation": frozenset({"q", "quat", "quaternion", "orientation", "rot"}),
    "position": frozenset({"", "p", "pos", "position", "trans", "translation"}),
    "velocity": frozenset({"v", "vel", "velocity", "lin_vel"}),
}
"""Vector prefixes (their first word, or the whole prefix) and what they hold."""

_WHOLE = {"linear_acceleration": "accel", "angular_velocity": "gyro", "linear_velocity": "velocity"}
GNSS_NAMES = {
    "lat": ("lat", "latitude"),
    "lon": ("lon", "lng", "long", "longitude"),
    "alt": ("alt", "altitude", "height"),
}
_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # required, optional roles
    "imu": (("accel", "gyro"), ("orientation",)),
    "gnss": (("lat", "lon"), ("alt",)),
    "odometry": (("position", "orientation", "velocity"), ("gyro",)),
    "pose": (("position", "orientation"), ()),
}
_NOT_SERIES = ("lidar", "camera", "radar")
_UNIT = re.compile(r"\s*[\[(].*$")
_AXIS = re.compile(r"^(?P<prefix>.*?)_?(?P<axis>[xyzw])$")
_QUALITY_STATUS = {0: -1, 2: 1, 4: 2, 5: 2}
"""NMEA GGA fix quality -> NavSatStatus.status (no fix, SBAS/DGPS, GBAS/RTK); others FIX."""


def parse_types(items: Sequence[str]) -> dict[str, str]:
    """``["imu=sensor_msgs/msg/Imu"]`` -> ``{"imu": "imu"}`` (sensor -> shape).

    The type may be written ``sensor_msgs/msg/Imu``, ``sensor_msgs/Imu`` or by
    its shape name (``imu``, ``gnss``, ``odometry``, ``pose``, ``series``).
    """
    out: dict[str, str] = {}
    for item in items:
        sensor, sep, name = item.partition("=")
        if not sep or not sensor.strip():
            raise ValueError(f"--type takes SENSOR=TYPE (imu=sensor_msgs/msg/Imu), got {item!r}")
        out[sensor.strip()] = shape_of_type(name.strip())
    return out


def shape_of_type(name: str) -> str:
    """The shape a ROS 2 type name (or a shape name) stands for; ``ValueError`` if none."""
    if name in TYPES:
        return name
    for shape, msgtype in TYPES.items():
        if name in (msgtype, msgtype.replace("/msg/", "/")):
            return shape
    known = ", ".join(TYPES.values())
    raise ValueError(f"no typed export for {name!r}; the types are {known}")


@dataclass(frozen=True, slots=True)
class Shape:
    """Which fields of a structured array make which part of a message."""

    kind: str
    """``imu``, ``gnss``, ``odometry`` or ``pose``."""
    fields: Mapping[str, tuple[str, ...]]
    """Role -> field names (``accel`` -> ``("ax", "ay", "az")``; ``lat`` -> ``("lat",)``)."""

    def rows(self, data: np.ndarray, t: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(stamp, values)`` of each row: ``t`` moved by the row's own ``t`` offset."""
        names = data.dtype.names or ()
        stamps = data["t"].astype(np.int64) if "t" in names else None
        for i in range(len(data)):
            row = data[i]
            offset = 0 if stamps is None else int(stamps[i] - stamps[0])
            values: dict[str, Any] = {
                role: np.array([row[n] for n in fields], np.float64)
                for role, fields in self.fields.items()
            }
            for extra in ("quality", "geoid_sep", "hdop"):
                if self.kind == "gnss" and extra in names:
                    values[extra] = float(row[extra])
            yield t + offset, values


def match(names: Sequence[str], sensor_kind: str, forced: str | None = None) -> Shape | str | None:
    """The shape ``names`` fit, ``None`` for none, or (``forced`` shape that does not fit) why."""
    if forced == "series":
        return None
    roles = _roles(names)
    if forced is not None:
        shape = _fit(forced, roles)
        if shape is None:
            required = ", ".join(_SHAPES[forced][0])
            return f"its fields do not fit {TYPES[forced]} (it needs {required}: see shapes.py)"
        return shape
    if sensor_kind in _NOT_SERIES:
        return None
    if sensor_kind in _SHAPES:
        own = _fit(sensor_kind, roles)
        if own is not None:
            return own
    for kind in _SHAPES:
        shape = _fit(kind, roles)
        if shape is not None:
            return shape
    return None


def _fit(kind: str, roles: Mapping[str, tuple[str, ...]]) -> Shape | None:
    required, optional = _SHAPES[kind]
    if not all(r in roles for r in required):
        return None
    return Shape(kind, {r: roles[r] for r in (*required, *optional) if r in roles})


def _roles(names: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Role -> the fields holding it, first complete prefix in field order."""
    vectors: dict[str, dict[str, dict[str, str]]] = {}  # role -> prefix -> axis -> name
    found: dict[str, tuple[str, ...]] = {}
    for name in names:
        norm = _norm(name)
        for gnss, aliases in GNSS_NAMES.items():
            if norm in aliases and gnss not in found:
                found[gnss] = (name,)
        m = _AXIS.match(norm)
        if m is None:
            continue
        prefix, axis = m["prefix"].rstrip("_"), m["axis"]
        what = _WHOLE.get(prefix) or next(
            (r for r, aliases in ROLES.items() if prefix in aliases or _head(prefix) in aliases),
            None,
        )
        if what is None or (axis == "w" and what != "orientation"):
            continue
        vectors.setdefault(what, {}).setdefault(prefix, {}).setdefault(axis, name)
    for role, prefixes in vectors.items():
        axes = "xyzw" if role == "orientation" else "xyz"
        for group in prefixes.values():
            if all(a in group for a in axes):
                found[role] = tuple(group[a] for a in axes)
                break
    return found


def _norm(name: str) -> str:
    text = _UNIT.sub("", name.strip().lstrip("#")).strip().lower()
    return re.sub(r"[\s.\-]+", "_", text)


def _head(prefix: str) -> str:
    return prefix.split("_", 1)[0] if prefix else ""


def navsat_status(values: Mapping[str, Any]) -> int:
    """NavSatStatus.status for a GNSS row: no fix without a position, else from ``quality``."""
    lat = float(values["lat"][0])
    if not math.isfinite(lat):
        return -1
    quality = values.get("quality")
    if quality is None or quality < 0:
        return 0
    return _QUALITY_STATUS.get(int(quality), 0)


def ellipsoid_altitude(values: Mapping[str, Any]) -> float:
    """NavSatFix's altitude (above the WGS 84 ellipsoid): ``alt`` + ``geoid_sep`` when known."""
    alt = float(values["alt"][0]) if "alt" in values else math.nan
    sep = values.get("geoid_sep")
    return alt + sep if sep is not None and math.isfinite(sep) else alt
