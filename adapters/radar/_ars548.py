"""Continental ARS548 datagrams -> detection and object lists; no I/O.

Theory of operation. The ARS548 sends SOME/IP events over UDP (by default to
224.0.2.2:42102), each datagram one whole list: a **detection list** (method
id 336: up to 800 detections of one scan, 35,336 bytes) or an **object list**
(method id 329: up to 50 tracked objects, 9,401 bytes; 200 objects, 37,452
bytes, on firmware X.40 corner radars), besides the sensor status (380) and
filter status (396) it sends once a cycle. Everything is big-endian and packed,
so each list is read with one :func:`numpy.frombuffer` of a structured wire
dtype below (the layout of tier4/nebula's ``continental_ars548.hpp``, the
decoder its ROS driver uses) and copied into a native-endian frame array:
:data:`DETECTION_DTYPE` and :data:`OBJECT_DTYPE`, whose ``x, y, z`` make them
point clouds wherever a recording is exported.

Each datagram gives a :class:`Scan` or a :class:`Rejected` with its reason:
``bad_length`` (a datagram shorter than its header, or a list whose size or
SOME/IP length field is not one the sensor sends), ``unknown_id`` (a service id
other than 0 or a method id the sensor does not send), ``undecodable`` (a
count beyond the list's capacity), ``bad_time`` (nanoseconds of a stamp of
1 s or more) and ``unused`` (the sensor and filter status: well-formed, no
frame comes from them).

Stamps: ``t_sensor`` is the list's own stamp (seconds and nanoseconds of the
sensor's clock: PTP/gPTP time once ``sync_status`` is 1, time since power-on
while it is 2 "never synchronised"). The E2E profile 7 header (CRC-64, length,
counter, data id) is all zeros in the sensor's output we have seen (nebula's
capture: protection off), so no CRC is checked; its counter and data id are in
the frame's meta when the sensor fills them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

SERVICE_ID = 0
DETECTION_METHOD = 336
OBJECT_METHOD = 329
STATUS_METHOD = 380
FILTER_METHOD = 396
DEFAULT_PORT = 42102
"""The UDP port the ARS548 sends to."""
DEFAULT_GROUP = "224.0.2.2"
"""The multicast group the ARS548 sends to (factory setting)."""
MAX_DETECTIONS = 800
_STATUS_SIZES = {STATUS_METHOD: 84, FILTER_METHOD: 330}
_HEAD = 8  # service id, method id, length: the length counts the bytes after it

_HEADER_FIELDS: list[tuple[str, str]] = [
    ("service_id", ">u2"),
    ("method_id", ">u2"),
    ("length", ">u4"),
    ("client_id", ">u2"),
    ("session_id", ">u2"),
    ("protocol_version", "u1"),
    ("interface_version", "u1"),
    ("message_type", "u1"),
    ("return_code", "u1"),
    ("e2e_crc", ">u8"),
    ("e2e_length", ">u4"),
    ("e2e_counter", ">u4"),
    ("e2e_data_id", ">u4"),
    ("timestamp_ns", ">u4"),
    ("timestamp_s", ">u4"),
    ("sync_status", "u1"),
    ("event_data_qualifier", ">u4"),
    ("extended_qualifier", "u1"),
]

WIRE_DETECTION = np.dtype(
    [
        ("azimuth", ">f4"),
        ("azimuth_std", ">f4"),
        ("invalid_flags", "u1"),
        ("elevation", ">f4"),
        ("elevation_std", ">f4"),
        ("range", ">f4"),
        ("range_std", ">f4"),
        ("range_rate", ">f4"),
        ("range_rate_std", ">f4"),
        ("rcs", "i1"),
        ("measurement_id", ">u2"),
        ("positive_predictive_value", "u1"),
        ("classification", "u1"),
        ("multi_target_probability", "u1"),
        ("object_id", ">u2"),
        ("ambiguity_flag", "u1"),
        ("sort_index", ">u2"),
    ]
)
"""One detection as the sensor sends it (44 bytes)."""

WIRE_DETECTION_LIST = np.dtype(
    [
        *_HEADER_FIELDS,
        ("origin_invalid_flags", ">u2"),
        ("origin_x", ">f4"),
        ("origin_x_std", ">f4"),
        ("origin_y", ">f4"),
        ("origin_y_std", ">f4"),
        ("origin_z", ">f4"),
        ("origin_z_std", ">f4"),
        ("origin_roll", ">f4"),
        ("origin_roll_std", ">f4"),
        ("origin_pitch", ">f4"),
        ("origin_pitch_std", ">f4"),
        ("origin_yaw", ">f4"),
        ("origin_yaw_std", ">f4"),
        ("list_invalid_flags", "u1"),
        ("detections", WIRE_DETECTION, (MAX_DETECTIONS,)),
        ("velocity_min", ">f4"),
        ("velocity_max", ">f4"),
        ("count", ">u4"),
        ("alignment_azimuth", ">f4"),
        ("alignment_elevation", ">f4"),
        ("alignment_status", "u1"),
        ("reserved", "u1", (14,)),
    ]
)
"""A whole detection list datagram (35,336 bytes)."""

_F4 = ">f4"
WIRE_OBJECT = np.dtype(
    [
        ("status_sensor", ">u2"),
        ("id", ">u4"),
        ("age", ">u2"),
        ("status_measurement", "u1"),
        ("status_movement", "u1"),
        ("position_invalid_flags", ">u2"),
        ("position_reference", "u1"),
        ("x", _F4),
        ("x_std", _F4),
        ("y", _F4),
        ("y_std", _F4),
        ("z", _F4),
        ("z_std", _F4),
        ("position_covariance_xy", _F4),
        ("orientation", _F4),
        ("orientation_std", _F4),
        ("existence_invalid_flags", "u1"),
        ("existence_probability", _F4),
        ("existence_ppv", _F4),
        ("class_car", "u1"),
        ("class_truck", "u1"),
        ("class_motorcycle", "u1"),
        ("class_bicycle", "u1"),
        ("class_pedestrian", "u1"),
        ("class_animal", "u1"),
        ("class_hazard", "u1"),
        ("class_unknown", "u1"),
        ("overdrivable", "u1"),
        ("underdrivable", "u1"),
        ("abs_vel_invalid_flags", "u1"),
        ("abs_vel_x", _F4),
        ("abs_vel_x_std", _F4),
        ("abs_vel_y", _F4),
        ("abs_vel_y_std", _F4),
        ("abs_vel_covariance_xy", _F4),
        ("rel_vel_invalid_flags", "u1"),
        ("rel_vel_x", _F4),
        ("rel_vel_x_std", _F4),
        ("rel_vel_y", _F4),
        ("rel_vel_y_std", _F4),
        ("rel_vel_covariance_xy", _F4),
        ("abs_accel_invalid_flags", "u1"),
        ("abs_accel_x", _F4),
        ("abs_accel_x_std", _F4),
        ("abs_accel_y", _F4),
        ("abs_accel_y_std", _F4),
        ("abs_accel_covariance_xy", _F4),
        ("rel_accel_invalid_flags", "u1"),
        ("rel_accel_x", _F4),
        ("rel_accel_x_std", _F4),
        ("rel_accel_y", _F4),
        ("rel_accel_y_std", _F4),
        ("rel_accel_covariance_xy", _F4),
        ("orientation_rate_invalid_flags", "u1"),
        ("orientation_rate", _F4),
        ("orientation_rate_std", _F4),
        ("length_status", ">u4"),
        ("length_invalid_flags", "u1"),
        ("length", _F4),
        ("length_std", _F4),
        ("width_status", ">u4"),
        ("width_invalid_flags", "u1"),
        ("width", _F4),
        ("width_std", _F4),
    ]
)
"""One object as the sensor sends it (187 bytes)."""

WIRE_OBJECT_HEADER = np.dtype([*_HEADER_FIELDS, ("count", "u1")])
"""The object list's header (51 bytes); the objects follow it."""

OBJECT_LIST_SIZES = {9401: 50, 37452: 200}
"""Object list datagram size -> its capacity in objects (200: firmware X.40 corner radars)."""
DETECTION_LIST_SIZE = WIRE_DETECTION_LIST.itemsize

DETECTION_DTYPE = np.dtype(
    [
        ("x", np.float32),
        ("y", np.float32),
        ("z", np.float32),
        ("range", np.float32),
        ("azimuth", np.float32),
        ("elevation", np.float32),
        ("range_rate", np.float32),
        ("range_std", np.float32),
        ("azimuth_std", np.float32),
        ("elevation_std", np.float32),
        ("range_rate_std", np.float32),
        ("rcs", np.int8),
        ("positive_predictive_value", np.uint8),
        ("classification", np.uint8),
        ("multi_target_probability", np.uint8),
        ("ambiguity_flag", np.uint8),
        ("invalid_flags", np.uint8),
        ("measurement_id", np.uint16),
        ("object_id", np.uint16),
        ("sort_index", np.uint16),
    ]
)
"""One ARS548 detection of a frame: ``x, y, z`` (m, the sensor frame: x forward, y
left, z up, from range and angles), ``range`` (m), ``azimuth`` and ``elevation``
(rad), ``range_rate`` (m/s, negative approaching), their standard deviations,
``rcs`` (dBsm), ``positive_predictive_value``, ``multi_target_probability`` and
``ambiguity_flag`` (percent), ``classification`` (0 none, 1 noise, 2 ground, 3
traversable under, 4 reflection, 255 invalid), ``invalid_flags`` (bit 0 range,
1 its std, 2 azimuth, 3 its std, 4 elevation, 5 its std, 6 range rate, 7 its
std), ``measurement_id``, ``object_id`` (the object it belongs to) and ``sort_index``."""

_OBJECT_FLOATS = [
    "x",
    "y",
    "z",
    "x_std",
    "y_std",
    "z_std",
    "position_covariance_xy",
    "orientation",
    "orientation_std",
    "existence_probability",
    "existence_ppv",
    "abs_vel_x",
    "abs_vel_y",
    "abs_vel_x_std",
    "abs_vel_y_std",
    "abs_vel_covariance_xy",
    "rel_vel_x",
    "rel_vel_y",
    "rel_vel_x_std",
    "rel_vel_y_std",
    "rel_vel_covariance_xy",
    "abs_accel_x",
    "abs_accel_y",
    "abs_accel_x_std",
    "abs_accel_y_std",
    "abs_accel_covariance_xy",
    "rel_accel_x",
    "rel_accel_y",
    "rel_accel_x_std",
    "rel_accel_y_std",
    "rel_accel_covariance_xy",
    "orientation_rate",
    "orientation_rate_std",
    "length",
    "length_std",
    "width",
    "width_std",
]
CLASSES = ("car", "truck", "motorcycle", "bicycle", "pedestrian", "animal", "hazard", "unknown")
"""The object classes, in the order of the ``class_*`` fields (``classification``'s values)."""
_OBJECT_SMALL = [
    ("id", np.uint32),
    ("length_status", np.uint32),
    ("width_status", np.uint32),
    ("age", np.uint16),
    ("status_sensor", np.uint16),
    ("position_invalid_flags", np.uint16),
    ("status_measurement", np.uint8),
    ("status_movement", np.uint8),
    ("position_reference", np.uint8),
    ("classification", np.uint8),
    *[(f"class_{c}", np.uint8) for c in CLASSES],
    ("overdrivable", np.uint8),
    ("underdrivable", np.uint8),
    ("existence_invalid_flags", np.uint8),
    ("abs_vel_invalid_flags", np.uint8),
    ("rel_vel_invalid_flags", np.uint8),
    ("abs_accel_invalid_flags", np.uint8),
    ("rel_accel_invalid_flags", np.uint8),
    ("orientation_rate_invalid_flags", np.uint8),
    ("length_invalid_flags", np.uint8),
    ("width_invalid_flags", np.uint8),
]
OBJECT_DTYPE = np.dtype([(n, np.float32) for n in _OBJECT_FLOATS] + _OBJECT_SMALL)
"""One ARS548 tracked object of a frame: position ``x, y, z`` (m, of the point
``position_reference`` names: 0 front left corner ... 7 rear right, 5 rear
centre...) with stds and xy covariance, ``orientation`` (rad), ``existence_probability``
(percent), ``class_*`` (percent each) and ``classification`` (the index into
:data:`CLASSES` of the largest), absolute and relative velocity and acceleration
(``abs_vel_x``..., m/s and m/s², the vehicle frame), ``orientation_rate`` (rad/s),
``length`` and ``width`` (m, of the box edges), ``id``, ``age`` (cycles),
``status_measurement`` (0 measured, 1 predicted, 2 new), ``status_movement``
(0 dynamic, 1 static) and the sensor's invalid flags of each group."""

_DETECTION_COPY = [n for n in WIRE_DETECTION.names or () if n in DETECTION_DTYPE.names]  # type: ignore[operator]
_OBJECT_COPY = [n for n in WIRE_OBJECT.names or () if n in OBJECT_DTYPE.names]  # type: ignore[operator]
_CLASS_FIELDS = [f"class_{c}" for c in CLASSES]

ListKind = Literal["detections", "objects"]


@dataclass(frozen=True, slots=True)
class Scan:
    """One decoded list: which, its sensor stamp, the rows and the list's own fields."""

    kind: ListKind
    t_sensor: int
    data: np.ndarray
    meta: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    """A datagram that gives no scan: the ledger reason and a one-line message."""

    reason: str
    message: str
    kind: ListKind | None = None
    """The list it claimed to be, when its method id says so."""


def decode(payload: bytes | memoryview) -> Scan | Rejected:
    """One ARS548 UDP payload -> a :class:`Scan` or why not (:class:`Rejected`).

    Never raises on any bytes: sizes and counts are checked before anything is read.
    """
    size = len(payload)
    if size < _HEAD:
        return Rejected("bad_length", f"{size} bytes, shorter than the 8-byte SOME/IP header")
    head = bytes(payload[:_HEAD])
    service, method = int.from_bytes(head[:2], "big"), int.from_bytes(head[2:4], "big")
    length = int.from_bytes(head[4:8], "big")
    if service != SERVICE_ID:
        return Rejected(
            "unknown_id", f"service id {service} (method {method}); the ARS548 sends service 0"
        )
    if method == DETECTION_METHOD:
        if size != DETECTION_LIST_SIZE or length != size - _HEAD:
            return _bad_size("detection list", size, length, [DETECTION_LIST_SIZE], "detections")
        return _detections(payload)
    if method == OBJECT_METHOD:
        capacity = OBJECT_LIST_SIZES.get(size)
        if capacity is None or length != size - _HEAD:
            return _bad_size("object list", size, length, list(OBJECT_LIST_SIZES), "objects")
        return _objects(payload, capacity)
    if method in _STATUS_SIZES:
        what = "sensor status" if method == STATUS_METHOD else "filter status"
        return Rejected("unused", f"a {what} datagram (method {method}): no frame comes from it")
    return Rejected(
        "unknown_id",
        f"method id {method}; the ARS548 sends {DETECTION_METHOD} (detections), "
        f"{OBJECT_METHOD} (objects), {STATUS_METHOD} and {FILTER_METHOD} (status)",
    )


def _bad_size(what: str, size: int, length: int, sizes: list[int], kind: ListKind) -> Rejected:
    want = " or ".join(f"{s:,}" for s in sizes)
    return Rejected(
        "bad_length",
        f"{what} of {size:,} bytes (SOME/IP length {length:,}); expected {want} bytes",
        kind,
    )


def _stamp(head: np.void, kind: ListKind) -> int | Rejected:
    ns, s = int(head["timestamp_ns"]), int(head["timestamp_s"])
    if ns >= 1_000_000_000:
        return Rejected("bad_time", f"{kind} stamp of {s} s {ns} ns: nanoseconds over 1 s", kind)
    return s * 1_000_000_000 + ns


def _list_meta(head: np.void) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "sync_status": int(head["sync_status"]),
        "session_id": int(head["session_id"]),
        "event_data_qualifier": int(head["event_data_qualifier"]),
        "extended_qualifier": int(head["extended_qualifier"]),
    }
    if int(head["e2e_counter"]) or int(head["e2e_data_id"]) or int(head["e2e_crc"]):
        meta["e2e_counter"] = int(head["e2e_counter"])
        meta["e2e_data_id"] = int(head["e2e_data_id"])
    return meta


def _detections(payload: bytes | memoryview) -> Scan | Rejected:
    wire = np.frombuffer(payload, WIRE_DETECTION_LIST, 1)[0]
    count = int(wire["count"])
    if count > MAX_DETECTIONS:
        return Rejected(
            "undecodable",
            f"detection list says {count:,} detections; it holds at most {MAX_DETECTIONS}",
            "detections",
        )
    t = _stamp(wire, "detections")
    if isinstance(t, Rejected):
        return t
    rows = wire["detections"][:count]
    out = np.empty(count, DETECTION_DTYPE)
    for name in _DETECTION_COPY:
        out[name] = rows[name]
    # A damaged float may be a signalling NaN, which the widening cast itself flags
    # (numpy's "invalid value encountered in cast"): the point is NaN, no warning.
    with np.errstate(invalid="ignore", over="ignore"):
        r = rows["range"].astype(np.float64)
        az = rows["azimuth"].astype(np.float64)
        el = rows["elevation"].astype(np.float64)
        flat = r * np.cos(el)
        out["x"] = flat * np.cos(az)
        out["y"] = flat * np.sin(az)
        out["z"] = r * np.sin(el)
    meta = _list_meta(wire)
    for key in (
        "origin_x",
        "origin_y",
        "origin_z",
        "origin_roll",
        "origin_pitch",
        "origin_pitch_std",
        "origin_yaw",
        "origin_yaw_std",
        "velocity_min",
        "velocity_max",
        "alignment_azimuth",
        "alignment_elevation",
    ):
        meta[key] = float(wire[key])
    meta["origin_invalid_flags"] = int(wire["origin_invalid_flags"])
    meta["list_invalid_flags"] = int(wire["list_invalid_flags"])
    meta["alignment_status"] = int(wire["alignment_status"])
    return Scan("detections", t, out, meta)


def _objects(payload: bytes | memoryview, capacity: int) -> Scan | Rejected:
    head = np.frombuffer(payload, WIRE_OBJECT_HEADER, 1)[0]
    count = int(head["count"])
    if count > capacity:
        return Rejected(
            "undecodable",
            f"object list says {count} objects; a {len(payload):,}-byte list holds at most "
            f"{capacity}",
            "objects",
        )
    t = _stamp(head, "objects")
    if isinstance(t, Rejected):
        return t
    rows = np.frombuffer(payload, WIRE_OBJECT, count, WIRE_OBJECT_HEADER.itemsize)
    out = np.empty(count, OBJECT_DTYPE)
    for name in _OBJECT_COPY:
        out[name] = rows[name]
    if count:
        classes = np.stack([rows[c] for c in _CLASS_FIELDS], axis=1)
        out["classification"] = classes.argmax(axis=1)
    meta = _list_meta(head)
    meta["capacity"] = capacity
    return Scan("objects", t, out, meta)
