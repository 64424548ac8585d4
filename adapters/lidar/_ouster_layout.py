"""The byte layout of Ouster lidar and IMU packets, per UDP profile, without ouster-sdk.

Written from Ouster's documentation of the sensor's UDP packets (the firmware
manuals' "Lidar Data Format" chapters) and ouster-sdk 1.0's ``parsing.cpp``, which
decodes the same profiles:

* LEGACY (firmware up to 2.x): no packet header; a column is a 16-byte header
  (timestamp u64, measurement id u16, frame id u16, encoder count u32), the
  pixels (12 bytes: range 20 bits, reflectivity u8 at byte 4, signal u16 at 6,
  near-IR u16 at 8) and a 4-byte status word; the frame id is the first
  column's.
* every other profile: a 32-byte packet header (STANDARD: packet type u16, frame
  id u16, initialization id 24 bits, serial number 40 bits; FUSA: packet type u8,
  initialization id 24 bits, frame id u32, serial number 40 bits at byte 11), a
  12-byte column header (timestamp u64, measurement id u16, status u16), the
  pixels, and a 32-byte packet footer. Pixels by profile: :data:`PROFILES`.

Only the first return's ``RANGE``, ``SIGNAL``, ``REFLECTIVITY`` and ``NEAR_IR``
are read (what :data:`~adapters.lidar._ouster_packets.OUSTER_DTYPE` holds). A
field is a masked word at a byte offset in the pixel, shifted up where the
profile drops low bits (the low-data profiles send range in 8 mm steps, near-IR
in steps of 16). ``tests/adapters/test_ouster_layout.py`` checks every profile
against ouster-sdk's own readers (``packet_field``, ``packet_header``,
``frame_id``, ``init_id``, ``prod_sn``, sizes) on packets of random bytes, and the
real captures of three profiles against its decoded scans.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

FIELDS = ("RANGE", "SIGNAL", "REFLECTIVITY", "NEAR_IR")
_WORD: dict[int, np.dtype[Any]] = {8: np.dtype("u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4")}


class Bits(NamedTuple):
    """A pixel field: ``bits`` bits from bit ``start`` of the pixel, shifted up ``up``."""

    start: int
    bits: int
    up: int = 0


_LEGACY = {"RANGE": Bits(0, 20), "REFLECTIVITY": Bits(32, 8), "SIGNAL": Bits(48, 16),
           "NEAR_IR": Bits(64, 16)}  # fmt: skip
_SINGLE = {"RANGE": Bits(0, 19), "REFLECTIVITY": Bits(32, 8), "SIGNAL": Bits(48, 16),
           "NEAR_IR": Bits(64, 16)}  # fmt: skip
_DUAL = {"RANGE": Bits(0, 19), "REFLECTIVITY": Bits(24, 8), "SIGNAL": Bits(64, 16),
         "NEAR_IR": Bits(96, 16)}  # fmt: skip
_LOW = {"RANGE": Bits(0, 15, 3), "REFLECTIVITY": Bits(16, 8), "NEAR_IR": Bits(24, 8, 4)}
_RGB = {"RANGE": Bits(0, 19), "REFLECTIVITY": Bits(24, 8), "SIGNAL": Bits(32, 16),
        "NEAR_IR": Bits(48, 16)}  # fmt: skip

PROFILES: dict[str, tuple[int, dict[str, Bits]]] = {
    "LEGACY": (12, _LEGACY),
    "RNG19_RFL8_SIG16_NIR16": (12, _SINGLE),
    "RNG19_RFL8_SIG16_NIR16_DUAL": (16, _DUAL),
    "RNG15_RFL8_NIR8": (4, _LOW),
    "RNG15_RFL8_NIR8_DUAL": (8, _LOW),
    "FUSA_RNG15_RFL8_NIR8_DUAL": (8, _LOW),
    "FIVE_WORD_PIXEL": (20, _DUAL),
    "RNG15_RFL8_NIR8_ZONE16": (8, _LOW),
    "RNG19_RFL8_SIG16_NIR16_ZONE16": (12, _SINGLE),
    "RNG15_RFL8_WIN8": (4, {k: v for k, v in _LOW.items() if k != "NEAR_IR"}),
    "RNG19_RFL8_SIG16_ZONE16_DUAL": (16, {k: v for k, v in _DUAL.items() if k != "NEAR_IR"}),
    "RNG19_RFL8_SIG16_NIR16_RGB16": (16, _RGB),
    "RNG19_RFL8_SIG16_NIR16_RGB16_DUAL": (20, _DUAL),
}
"""Each lidar profile's pixel size in bytes and its first return's fields."""

IMU_LEGACY_SIZE = 48
_IMU = struct.Struct("<QQQ6f")  # sys_ts, accel_ts, gyro_ts (ns); accel (g), gyro (deg/s)


def _is_legacy(fmt: Any) -> bool:
    return str(fmt.udp_profile_lidar) == "LEGACY"


def lidar_packet_size(fmt: Any) -> int:
    """The size of a lidar packet of data format ``fmt`` (ouster-sdk's ``PacketFormat``)."""
    pixel = PROFILES[str(fmt.udp_profile_lidar)][0]
    legacy = _is_legacy(fmt)
    column = (16 + 4 if legacy else 12) + int(fmt.pixels_per_column) * pixel
    return (0 if legacy else 64) + int(fmt.columns_per_packet) * column


def imu_packet_size(fmt: Any) -> int:
    """The size of an IMU packet of data format ``fmt`` (0: the IMU stream is off)."""
    profile = str(fmt.udp_profile_imu)
    if profile == "LEGACY":
        return IMU_LEGACY_SIZE
    if profile == "ACCEL32_GYRO32_NMEA":
        around = 0 if _is_legacy(fmt) else 64  # the lidar profile's header and footer
        return around + 100 + int(fmt.imu_measurements_per_packet) * 36
    return 0


class PacketLayout:
    """Where each field of a lidar packet is, for one sensor's data format; reads a
    scan's joined packets with zero-copy strided numpy views."""

    def __init__(self, info: Any) -> None:
        fmt = info.format
        legacy = _is_legacy(fmt)
        fusa = not legacy and str(fmt.header_type) == "FUSA"
        pixel, bits = PROFILES[str(fmt.udp_profile_lidar)]
        self.profile = str(fmt.udp_profile_lidar)
        self.size = lidar_packet_size(fmt)
        self.imu_size = imu_packet_size(fmt)
        self.beams = int(fmt.pixels_per_column)
        self.columns = int(fmt.columns_per_packet)
        self.first_col = 0 if legacy else 32
        header = 16 if legacy else 12
        self.col_size = header + self.beams * pixel + (4 if legacy else 0)
        self.fields: dict[str, tuple[int, int, np.dtype[Any], int]] = {}
        """name -> (offset in a column of pixel 0, pixel stride, word type, value mask)."""
        self.shifts: dict[str, int] = {}
        """name -> how far its masked word is shifted up (the low-data profiles' units)."""
        self.fields_stride: dict[int, int] = {}
        for name, (start, size, up) in bits.items():
            assert start % 8 == 0, name  # every field read here starts on a byte
            word: np.dtype[Any] = _WORD[next(b for b in sorted(_WORD) if b >= size)]
            where = header + start // 8
            self.fields[name] = (where, pixel, word, (1 << size) - 1)
            self.shifts[name] = up
            self.fields_stride[where] = pixel
        self.stamp_at, self.id_at = 0, 8
        """Offsets in a column of its timestamp and measurement id."""
        self.status_at = self.col_size - 4 if legacy else 10
        self.status_word: np.dtype[Any] = np.dtype("<u4" if legacy else "<u2")
        if legacy:
            self.frame_id_at, frame_word = 10, "H"
        else:
            self.frame_id_at, frame_word = (4, "I") if fusa else (2, "H")
        self._frame = struct.Struct("<" + frame_word)
        self._init_at, self._sn_at = (1, 11) if fusa else (4, 7)
        self.has_ids = not legacy
        """Whether packets name their sensor (initialization id and serial number)."""
        self._mid = struct.Struct("<H").unpack_from
        self._first_id = self.first_col + self.id_at
        self._last_id = self._first_id + (self.columns - 1) * self.col_size
        self.usable = True  # every profile ouster-sdk 1.0 knows is read here

    # -- reading: zero-copy strided views of packets' bytes, (packets * columns, ...) ---

    def _view(self, data: bytes, at: int, word: np.dtype[Any], beams: bool) -> np.ndarray:
        view = self.packed(data, at, word, beams)
        return view.reshape(view.shape[0] * self.columns, *view.shape[2:])

    def packed(self, data: bytes, at: int, word: np.dtype[Any], beams: bool) -> np.ndarray:
        """The ``(packets, columns[, beams])`` view of the words at ``at`` in each column
        (a column header word, or with ``beams`` a pixel field's): no copy, unmasked."""
        packets = len(data) // self.size
        shape: tuple[int, ...] = (packets, self.columns)
        strides: tuple[int, ...] = (self.size, self.col_size)
        if beams:
            shape, strides = (*shape, self.beams), (*strides, self.fields_stride[at])
        return np.ndarray(shape, word, buffer=data, offset=self.first_col + at, strides=strides)

    def stamps(self, data: bytes) -> np.ndarray:
        return self._view(data, self.stamp_at, np.dtype("<u8"), False)

    def ids(self, data: bytes) -> np.ndarray:
        return self._view(data, self.id_at, np.dtype("<u2"), False)

    def status(self, data: bytes) -> np.ndarray:
        return self._view(data, self.status_at, self.status_word, False)

    def field(self, data: bytes, name: str, columns: np.ndarray | None = None) -> np.ndarray:
        """``(n_columns, beams)`` values of a pixel field (of ``columns`` only, if given)."""
        where, _stride, word, mask = self.fields[name]
        values = self._view(data, where, word, True)
        if columns is not None:
            values = values[columns]
        if mask != (1 << (8 * word.itemsize)) - 1:
            values = values & word.type(mask)
        up = self.shifts[name]
        return values.astype(np.uint32) << np.uint32(up) if up else values

    def header(self, payload: bytes) -> tuple[int, int, int]:
        """``(first column's id, last column's id, frame id)`` of a packet of the right size."""
        mid = self._mid
        first, last = mid(payload, self._first_id)[0], mid(payload, self._last_id)[0]
        return first, last, self._frame.unpack_from(payload, self.frame_id_at)[0]

    def frame_id(self, payload: bytes) -> int:
        return int(self._frame.unpack_from(payload, self.frame_id_at)[0])

    def sensor_ids(self, payload: bytes) -> tuple[int, int]:
        """``(initialization id, serial number)`` a non-LEGACY packet names."""
        at, sn = self._init_at, self._sn_at
        init_id = int.from_bytes(payload[at : at + 3], "little")
        return init_id, int.from_bytes(payload[sn : sn + 5], "little")


def imu_sample(payload: bytes) -> tuple[int, tuple[float, ...], int]:
    """``(gyro time, (ax, ay, az in g, gx, gy, gz in deg/s), accel time)`` of a LEGACY
    IMU packet (:data:`IMU_LEGACY_SIZE` bytes)."""
    _sys, accel_ts, gyro_ts, *values = _IMU.unpack_from(payload)
    return gyro_ts, tuple(values), accel_ts
