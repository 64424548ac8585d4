"""An Ouster sensor's metadata JSON, read without ouster-sdk.

The sensor writes its metadata (``ouster-cli source HOST save``, or the HTTP API's
``/api/v1/sensor/metadata``) in one of two layouts: the *legacy* one of firmware up
to 2.1 (flat keys: ``prod_line``, ``lidar_mode``, ``data_format``,
``beam_altitude_angles`` ...) and the *current* one of 2.2 and later (sections
``sensor_info``, ``config_params``, ``lidar_data_format``, ``beam_intrinsics``,
``lidar_intrinsics``, ``imu_intrinsics``, ``calibration_status``). ouster-sdk 1.0's
parser (``metadata.cpp``) moves the legacy keys into the current sections and reads
those; :func:`parse_metadata` does the same and keeps only what a decoder needs,
with ouster-sdk's defaults where a key is absent:

* the data format from the lidar mode when the JSON has no ``data_format`` (64
  beams, 16 columns a packet, the mode's width, window and fps, LEGACY profiles);
  ``pixels_per_column`` from the product line (``OS-1-32``: 32) when absent;
  ``pixel_shift_by_row`` padded with zeros (or cut) to one shift per beam;
* ``header_type`` FUSA for the ``FUSA_RNG15_RFL8_NIR8_DUAL`` profile, else STANDARD;
  the lidar profile ``OFF`` when ``udp_port_lidar`` is 0 or ``udp_dest`` empty (the
  sensor sent no lidar data; such metadata decodes no capture);
* ``lidar_origin_to_beam_origin_mm`` by product line (OS-0 27.67, OS-1 15.806,
  OS-2 13.762, else 12.163), ``beam_to_lidar_transform`` the identity moved by it;
  ``lidar_to_sensor_transform`` and ``imu_to_sensor_transform`` the OS-1's.

What it refuses (:class:`NotMetadata`, one phrase): text that is not a JSON object,
a current-layout file missing one of its sections, no lidar mode and no
``columns_per_frame``, missing, empty or per-pixel beam angles, or a count of
them other than the beams', an unknown UDP profile. The numbers of the data
format are checked against what Ouster sensors are by
:mod:`adapters.lidar._ouster_limits` before anything is sized by them
(:class:`OutOfBounds`). ``tests/adapters/test_ouster_meta.py`` reads ouster-sdk's
own metadata corpus (firmware 1.12 to 3.0, both layouts) with this and with
ouster-sdk and compares every field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adapters.lidar._ouster_limits import MODES, stated_bounds_problem, stated_mode_problem

LIDAR_PROFILES = (
    "LEGACY",
    "RNG19_RFL8_SIG16_NIR16_DUAL",
    "RNG19_RFL8_SIG16_NIR16",
    "RNG15_RFL8_NIR8",
    "FIVE_WORD_PIXEL",
    "FUSA_RNG15_RFL8_NIR8_DUAL",
    "RNG15_RFL8_NIR8_DUAL",
    "RNG15_RFL8_NIR8_ZONE16",
    "RNG19_RFL8_SIG16_NIR16_ZONE16",
    "RNG15_RFL8_WIN8",
    "RNG19_RFL8_SIG16_ZONE16_DUAL",
    "RNG19_RFL8_SIG16_NIR16_RGB16",
    "RNG19_RFL8_SIG16_NIR16_RGB16_DUAL",
)
"""The lidar UDP profiles ouster-sdk 1.0 knows (``data_format.cpp``), all decoded here."""
IMU_PROFILES = ("LEGACY", "ACCEL32_GYRO32_NMEA", "OFF")

_SECTIONS = (
    "sensor_info",
    "beam_intrinsics",
    "imu_intrinsics",
    "lidar_intrinsics",
    "config_params",
    "lidar_data_format",
    "calibration_status",
)
_LEGACY_MOVES = {  # legacy key -> (section, key), as ouster-sdk's convert_legacy_to_nonlegacy
    "lidar_to_sensor_transform": ("lidar_intrinsics", "lidar_to_sensor_transform"),
    "imu_to_sensor_transform": ("imu_intrinsics", "imu_to_sensor_transform"),
    "udp_port_imu": ("config_params", "udp_port_imu"),
    "udp_port_lidar": ("config_params", "udp_port_lidar"),
    "lidar_mode": ("config_params", "lidar_mode"),
    **{
        k: ("beam_intrinsics", k)
        for k in (
            "lidar_origin_to_beam_origin_mm",
            "beam_altitude_angles",
            "beam_azimuth_angles",
            "beam_to_lidar_transform",
        )
    },
    **{
        k: ("sensor_info", k)
        for k in ("prod_line", "status", "prod_pn", "prod_sn", "initialization_id", "build_rev")
    },
    **{k: ("sensor_info", k) for k in ("build_date", "image_rev")},
}
_LIDAR_TO_SENSOR = ((-1, 0, 0, 0), (0, -1, 0, 0), (0, 0, 1, 36.18), (0, 0, 0, 1))
_IMU_TO_SENSOR = ((1, 0, 0, 6.253), (0, 1, 0, -11.775), (0, 0, 1, 7.645), (0, 0, 0, 1))
_SHIFTS = {512: (9, 6, 3, 0), 1024: (18, 12, 6, 0), 2048: (36, 24, 12, 0), 4096: (72, 48, 24, 0)}
_BEAMS = re.compile(r"^\w+-(?:\d+|DOME)?(?:-MAX)?-(\d+)")


class NotMetadata(ValueError):
    """The text is not an Ouster sensor's metadata (the phrase says what is missing)."""


class OutOfBounds(ValueError):
    """A number of the metadata is outside what an Ouster sensor sends."""


@dataclass
class LidarConfig:
    """``config_params``: what the parser keeps of the sensor's configuration."""

    lidar_mode: str | None = None
    udp_port_lidar: int | None = None
    udp_port_imu: int | None = None
    udp_dest: str | None = None


@dataclass
class DataFormat:
    """``lidar_data_format``: the scan's and the packets' shape."""

    pixels_per_column: int = 64
    columns_per_packet: int = 16
    columns_per_frame: int = 0
    column_window: tuple[int, int] = (0, 0)
    pixel_shift_by_row: list[int] = field(default_factory=list)
    udp_profile_lidar: str = "LEGACY"
    udp_profile_imu: str = "LEGACY"
    header_type: str = "STANDARD"
    fps: int = 0
    imu_measurements_per_packet: int = 0


@dataclass
class OusterInfo:
    """A sensor's metadata, with ouster-sdk's ``SensorInfo`` attribute names (the decoder
    takes either); angles in degrees, transforms ``(4, 4)`` float64 in millimetres."""

    prod_line: str
    sn: int
    init_id: int
    fw_rev: str
    config: LidarConfig
    format: DataFormat
    beam_altitude_angles: np.ndarray
    beam_azimuth_angles: np.ndarray
    lidar_origin_to_beam_origin_mm: float
    beam_to_lidar_transform: np.ndarray
    lidar_to_sensor_transform: np.ndarray
    imu_to_sensor_transform: np.ndarray
    text: str = field(repr=False, default="")
    """The JSON it was read from (ouster-sdk's ``SensorInfo(text)``, for its decoder)."""


def parse_metadata(raw: bytes) -> OusterInfo:
    """The :class:`OusterInfo` of a metadata JSON; :class:`NotMetadata` or
    :class:`OutOfBounds` (one phrase) when it is none an Ouster sensor writes."""
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise NotMetadata("JSON nested too deep") from None
    except ValueError as err:
        raise NotMetadata(f"not JSON ({err})") from None
    if not isinstance(doc, dict):
        raise NotMetadata(f"a JSON {type(doc).__name__}, not an object")
    present = [s for s in _SECTIONS if s in doc]
    if present and len(present) < len(_SECTIONS):
        missing = ", ".join(s for s in _SECTIONS if s not in doc)
        raise NotMetadata(f"current-layout metadata without its sections {missing}")
    if not present:
        doc = _from_legacy(doc)
    problem = stated_mode_problem(doc) or stated_bounds_problem(doc)
    if problem is not None:
        raise OutOfBounds(problem)
    info = _Reader(doc).info()
    info.text = text
    return info


def _from_legacy(doc: dict[str, Any]) -> dict[str, Any]:
    """The legacy layout's keys moved to the current layout's sections."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in _LEGACY_MOVES:
            section, name = _LEGACY_MOVES[key]
            out.setdefault(section, {})[name] = value
        elif key == "data_format":
            out["lidar_data_format"] = value
        elif key not in out:
            out[key] = value
    return out


class _Reader:
    """One document's sections, read with ouster-sdk's defaults."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def get(self, section: str, key: str, kind: type | tuple[type, ...]) -> Any:
        part = self.doc.get(section)
        value = part.get(key) if isinstance(part, dict) else None
        if isinstance(value, bool) or not isinstance(value, kind):
            return None
        return value

    def integer(self, section: str, key: str) -> int | None:
        value = self.get(section, key, (int, float))
        return int(value) if value is not None and float(value).is_integer() else None

    def info(self) -> OusterInfo:
        prod_line = self.get("sensor_info", "prod_line", str) or ""
        sn_text = self.get("sensor_info", "prod_sn", (str, int))
        digits = re.match(r"\d*", str(sn_text or "")).group(0)  # type: ignore[union-attr]
        mode = self.get("config_params", "lidar_mode", str)
        config = LidarConfig(
            lidar_mode=mode if mode in MODES else None,
            udp_port_lidar=self.integer("config_params", "udp_port_lidar"),
            udp_port_imu=self.integer("config_params", "udp_port_imu"),
            udp_dest=self.get("config_params", "udp_dest", str),
        )
        fmt = self.data_format(config.lidar_mode, prod_line)
        origin = self.get("beam_intrinsics", "lidar_origin_to_beam_origin_mm", (int, float))
        if origin is None:
            origin = _default_origin(prod_line)
        beam_to_lidar = self.transform("beam_intrinsics", "beam_to_lidar_transform", None)
        if beam_to_lidar is None:
            beam_to_lidar = np.eye(4)
            beam_to_lidar[0, 3] = origin
        return OusterInfo(
            prod_line=prod_line,
            sn=int(digits) if digits else 0,
            init_id=self.integer("sensor_info", "initialization_id") or 0,
            fw_rev=self.get("sensor_info", "build_rev", str) or "",
            config=config,
            format=fmt,
            beam_altitude_angles=self.angles("beam_altitude_angles", fmt.pixels_per_column),
            beam_azimuth_angles=self.angles("beam_azimuth_angles", fmt.pixels_per_column),
            lidar_origin_to_beam_origin_mm=float(origin),
            beam_to_lidar_transform=beam_to_lidar,
            lidar_to_sensor_transform=self.transform(
                "lidar_intrinsics", "lidar_to_sensor_transform", _LIDAR_TO_SENSOR
            ),
            imu_to_sensor_transform=self.transform(
                "imu_intrinsics", "imu_to_sensor_transform", _IMU_TO_SENSOR
            ),
        )

    def data_format(self, mode: str | None, prod_line: str) -> DataFormat:
        fmt = DataFormat()
        if mode is not None:
            width, fps = (int(v) for v in mode.split("x"))
            fmt.columns_per_frame, fmt.fps = width, fps
            fmt.column_window = (0, width - 1)
            fmt.pixel_shift_by_row = list(_SHIFTS[width]) * 16
        section = "lidar_data_format"
        stated_width = self.integer(section, "columns_per_frame")
        if stated_width is not None:
            fmt.columns_per_frame = stated_width
        elif mode is None:
            raise NotMetadata("no lidar_mode and no data format columns_per_frame")
        window = self.get(section, "column_window", list)
        if window is not None and len(window) == 2 and all(isinstance(v, int) for v in window):
            fmt.column_window = (int(window[0]), int(window[1]))
        for key in ("columns_per_packet", "fps"):
            value = self.integer(section, key)
            if value is not None:
                setattr(fmt, key, value)
        beams = self.integer(section, "pixels_per_column")
        if beams is None:
            counted = _BEAMS.match(prod_line)
            beams = int(counted.group(1)) if counted else fmt.pixels_per_column
        fmt.pixels_per_column = beams
        shifts = self.get(section, "pixel_shift_by_row", list)
        if shifts is not None and all(isinstance(s, int) for s in shifts):
            fmt.pixel_shift_by_row = [int(s) for s in shifts]
        fmt.pixel_shift_by_row = (fmt.pixel_shift_by_row + [0] * beams)[:beams]
        for key, known in (
            ("udp_profile_lidar", LIDAR_PROFILES),
            ("udp_profile_imu", IMU_PROFILES),
        ):
            value = self.get(section, key, str)
            if value is not None and value not in known:
                raise NotMetadata(f"unknown {key} {value[:40]!r} (known: {', '.join(known)})")
            if value is not None:
                setattr(fmt, key, value)
        header = self.get(section, "header_type", str)
        if header in ("STANDARD", "FUSA"):
            fmt.header_type = header
        elif fmt.udp_profile_lidar == "FUSA_RNG15_RFL8_NIR8_DUAL":
            fmt.header_type = "FUSA"
        per_packet = self.integer("imu_data_format", "imu_measurements_per_packet")
        fmt.imu_measurements_per_packet = per_packet or 0
        lidar_port = self.integer("config_params", "udp_port_lidar")
        if lidar_port == 0 or self.get("config_params", "udp_dest", str) == "":
            fmt.udp_profile_lidar = "OFF"  # the sensor was sending no lidar data (ouster-sdk)
        return fmt

    def angles(self, key: str, beams: int) -> np.ndarray:
        value = self.get("beam_intrinsics", key, list)
        if not value:
            raise NotMetadata(f"no {key} (the beam intrinsics)")
        if any(isinstance(v, list) for v in value):
            raise NotMetadata(f"{key} given per pixel; per-beam angles are supported")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise NotMetadata(f"{key} holds something other than numbers")
        if len(value) != beams:
            raise NotMetadata(f"{len(value)} {key} for {beams} beams (pixels_per_column)")
        return np.asarray(value, np.float64)

    def transform(self, section: str, key: str, default: Any) -> Any:
        value = self.get(section, key, list)
        numbers = (int, float)
        if value is None or len(value) != 16 or not all(isinstance(v, numbers) for v in value):
            return None if default is None else np.asarray(default, np.float64)
        return np.asarray(value, np.float64).reshape(4, 4)


def _default_origin(prod_line: str) -> float:
    """ouster-sdk's ``default_lidar_origin_to_beam_origin``."""
    for prefix, mm in (("OS-0-", 27.67), ("OS-1-", 15.806), ("OS-2-", 13.762)):
        if prod_line.startswith(prefix):
            return mm
    return 12.163
