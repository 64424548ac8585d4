"""KITTI OXTS packets (GPS/IMU, an OXTS RT3003): one text line of 30 numbers per packet.

The field names are the dataset's own (``oxts/dataformat.txt``); a drive that
ships that file is read with the names it gives. Frames split a packet in two:

* **imu** (:data:`IMU_FIELDS`): attitude ``roll``, ``pitch``, ``yaw`` (rad; yaw 0 =
  east, counter-clockwise positive), velocities ``vn``, ``ve`` (north, east) and
  ``vf``, ``vl``, ``vu`` (forward, left, up; m/s), accelerations ``ax``, ``ay``,
  ``az`` (vehicle x front, y left, z up) and ``af``, ``al``, ``au`` (m/s²),
  angular rates ``wx``, ``wy``, ``wz`` and ``wf``, ``wl``, ``wu`` (rad/s); plus
  ``accel`` = (ax, ay, az) and ``gyro`` = (wx, wy, wz) as 3-vectors, the keys
  every other IMU source here uses;
* **gnss** (:data:`GNSS_FIELDS`): ``lat``, ``lon`` (deg), ``alt`` (m),
  ``pos_accuracy`` (m), ``vel_accuracy`` (m/s), ``navstat``, ``numsats``,
  ``posmode``, ``velmode``, ``orimode`` (status codes of the receiver).

Each value is a 0-d float64 array (status codes int32), so a frame plots and
records field by field.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from adapters._side_files import CALIBRATION_LIMIT, read_small_text
from adapters.errors import DecodeError, SourceOpenError

OXTS_FIELDS: tuple[str, ...] = (
    "lat", "lon", "alt", "roll", "pitch", "yaw",
    "vn", "ve", "vf", "vl", "vu",
    "ax", "ay", "az", "af", "al", "au",
    "wx", "wy", "wz", "wf", "wl", "wu",
    "pos_accuracy", "vel_accuracy", "navstat", "numsats", "posmode", "velmode", "orimode",
)  # fmt: skip
"""The 30 values of a packet, in file order (KITTI's dataformat.txt)."""

GNSS_FIELDS = ("lat", "lon", "alt", "pos_accuracy", "vel_accuracy", *OXTS_FIELDS[25:])
IMU_FIELDS = tuple(f for f in OXTS_FIELDS if f not in GNSS_FIELDS)
_CODES = frozenset(OXTS_FIELDS[25:])
PACKET_LIMIT = 64 << 10  # one line of 30 numbers: about 250 bytes


def field_names(folder: Path) -> tuple[str, ...]:
    """The 30 names from ``dataformat.txt`` in ``folder`` when it is there and sane."""
    spec = folder / "dataformat.txt"
    if not spec.is_file():
        return OXTS_FIELDS
    names = tuple(
        line.split(":", 1)[0].strip()
        for line in read_small_text(
            spec, "OXTS data format", CALIBRATION_LIMIT, error=SourceOpenError
        ).splitlines()
        if ":" in line
    )
    return names if len(names) == len(OXTS_FIELDS) else OXTS_FIELDS


class OxtsError(DecodeError):
    """An OXTS packet file that is not one line of finite numbers; ``reason`` is its
    ledger reason (``bad_length``: not 30 numbers; ``bad_row``: not numbers, or not
    finite where a frame needs them)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _too_long(message: str) -> OxtsError:
    return OxtsError(message, "bad_length")


def read_packet(path: Path, names: tuple[str, ...] = OXTS_FIELDS) -> dict[str, float]:
    """The numbers of one packet file by name; :class:`OxtsError` if it is not 30 numbers."""
    body = read_small_text(  # one line of 30 numbers: /dev/zero or a FIFO is refused
        path, "OXTS packet", PACKET_LIMIT, encoding="ascii", error=_too_long
    )
    lines = body.splitlines()
    where = f"{path}: line 1" if len(lines) <= 1 else f"{path}: {len(lines)} lines"
    text = " ".join(lines).split()
    try:
        values = [float(v) for v in text]
    except ValueError as err:
        raise OxtsError(f"{where}: expected {len(names)} numbers, {err}", "bad_row") from None
    if len(values) != len(names):
        raise OxtsError(
            f"{where}: expected {len(names)} numbers (an OXTS packet), found {len(values)}",
            "bad_length",
        )
    return dict(zip(names, values, strict=True))


def finite_half(packet: dict[str, float], fields: tuple[str, ...], path: Path) -> None:
    """Refuse a packet whose ``fields`` (one frame's half) hold NaN or infinity."""
    bad = [k for k in fields if k in packet and not math.isfinite(packet[k])]
    if bad:
        raise OxtsError(
            f"{path}: line 1: {', '.join(f'{k}={packet[k]}' for k in bad)} not finite",
            "bad_row",
        )


def imu_frame(packet: dict[str, float]) -> dict[str, np.ndarray]:
    """The IMU half of a packet (see the module docstring for the keys)."""
    out: dict[str, Any] = {
        k: np.asarray(v, np.float64) for k, v in packet.items() if k not in GNSS_FIELDS
    }
    out["accel"] = np.array([packet.get(k, np.nan) for k in ("ax", "ay", "az")], np.float64)
    out["gyro"] = np.array([packet.get(k, np.nan) for k in ("wx", "wy", "wz")], np.float64)
    return out


def gnss_frame(packet: dict[str, float]) -> dict[str, np.ndarray]:
    """The GNSS half of a packet (see the module docstring for the keys)."""
    return {
        k: np.asarray(v, np.int32 if k in _CODES else np.float64)
        for k, v in packet.items()
        if k in GNSS_FIELDS
    }
