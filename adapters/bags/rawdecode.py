"""The hot message types decoded straight from their serialised bytes.

Why: ``rosbags`` deserialises a message into Python objects field by field
(a dataclass per nested message, a ``struct`` call per number), and our
decoders then turn those objects into arrays. For the types a drive is made
of (``Image``, ``CompressedImage``, ``PointCloud2``, ``Imu``, ``NavSatFix``)
the layout is fixed, so this module reads the few scalars with ``struct`` and
takes the bulk (pixels, points, the 37 doubles of an IMU sample) as numpy
views of the message bytes, then hands them to the same array code the
deserialised path uses (:func:`~adapters.bags.images.image_from_buffer`,
:func:`~adapters.bags.pointcloud2.cloud_from_buffer`). Same frames, a
fraction of the work.

Two wire formats: ROS 2 CDR (little-endian encapsulation; every primitive
aligned to its size, counted from after the 4-byte encapsulation header;
strings carry their NUL) and ROS 1 (packed, no alignment, no NUL, a ``seq``
in the header). Big-endian CDR is left to rosbags.

A raw decoder is used only when the bag's definition of the type (and of
every type it nests) is the standard one (:func:`standard_layout`); a custom
``sensor_msgs/Imu`` goes through rosbags. Bytes that do not parse
(:class:`Malformed`, ``struct.error``, ``ValueError``...) are handed to
rosbags too, so a broken message gets exactly the error it always got.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from adapters.bags.images import CompressedImageDecoder, image_from_buffer
from adapters.bags.pointcloud2 import PointFields, cloud_from_buffer

RawDecoder = Callable[[Any], tuple[int | None, str, Any, dict[str, Any]]]
"""``raw bytes -> (header stamp ns or None, frame_id, data, meta)``."""

RAW_ERRORS = (struct.error, ValueError, IndexError, UnicodeDecodeError, OverflowError)
"""What a raw decoder raises on bytes it cannot parse (besides :class:`Malformed`)."""

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_ROS1_HEADER = struct.Struct("<IiI")
_I8 = struct.Struct("<b")
_U16 = struct.Struct("<H")
_F64 = np.dtype("<f8")
_U8 = np.dtype("u1")


class Malformed(Exception):
    """The bytes are not the layout this decoder reads; rosbags decides what is wrong."""


class Cursor:
    """Reads one serialised message front to back (CDR or ROS 1)."""

    __slots__ = ("buf", "cdr", "pos")

    def __init__(self, buf: Any, cdr: bool) -> None:
        self.buf = buf
        self.cdr = cdr
        if cdr:
            if len(buf) < 4 or buf[0] != 0 or buf[1] != 1:
                raise Malformed("not little-endian CDR")
            self.pos = 4
        else:
            self.pos = 0

    def align(self, size: int) -> None:
        """Skip CDR padding up to a multiple of ``size`` (nothing in ROS 1)."""
        if self.cdr:
            self.pos += -(self.pos - 4) % size

    def u8(self) -> int:
        value = int(self.buf[self.pos])
        self.pos += 1
        return value

    def u32(self) -> int:
        self.align(4)
        (value,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(value)

    def string(self) -> str:
        size = self.u32()
        start, end = self.pos, self.pos + size
        if end > len(self.buf):
            raise Malformed("string runs past the message")
        self.pos = end
        if self.cdr:
            if size < 1 or self.buf[end - 1] != 0:
                raise Malformed("CDR string without its NUL")
            end -= 1
        return bytes(self.buf[start:end]).decode()

    def header(self) -> tuple[int | None, str]:
        """``std_msgs/Header``: ``(stamp ns or None when zero, frame_id)``."""
        if self.cdr:
            sec, nanosec = _STAMP.unpack_from(self.buf, self.pos)
            self.pos += 8
        else:
            _seq, sec, nanosec = _ROS1_HEADER.unpack_from(self.buf, self.pos)
            self.pos += 12
        stamp = sec * 1_000_000_000 + nanosec
        return stamp or None, self.string()

    def float64s(self, count: int) -> np.ndarray:
        """``count`` doubles as a read-only view of the bytes."""
        self.align(8)
        values = np.frombuffer(self.buf, _F64, count, self.pos)
        self.pos += 8 * count
        return values

    def byte_sequence(self) -> np.ndarray:
        """A ``uint8[]`` as a read-only view of the bytes."""
        size = self.u32()
        values = np.frombuffer(self.buf, _U8, size, self.pos)
        self.pos += size
        return values

    def finish(self) -> None:
        """Refuse trailing bytes, as rosbags does (CDR allows 3 bytes of final padding)."""
        slack = 3 if self.cdr else 0
        if self.pos > len(self.buf) or self.pos + slack < len(self.buf):
            raise Malformed("message size does not match its fields")


def _image(cdr: bool) -> RawDecoder:
    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        c = Cursor(raw, cdr)
        stamp, frame_id = c.header()
        height, width, encoding = c.u32(), c.u32(), c.string()
        bigendian = c.u8()
        step = c.u32()
        data = c.byte_sequence()
        c.finish()
        pixels, meta = image_from_buffer(encoding, height, width, step, bool(bigendian), data)
        return stamp, frame_id, pixels, meta

    return decode


def _compressed_image(cdr: bool, decode_images: bool) -> RawDecoder:
    images = CompressedImageDecoder(decode_images)

    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        c = Cursor(raw, cdr)
        stamp, frame_id = c.header()
        fmt = c.string()
        data = c.byte_sequence()
        c.finish()
        image, meta = images.from_buffer(fmt, data)
        return stamp, frame_id, image, meta

    return decode


class _PointCloud2:
    """PointCloud2 reader that parses a field list once while it repeats byte for byte."""

    def __init__(self, cdr: bool) -> None:
        self.cdr = cdr
        self._last_bytes = b""
        self._last_fields: PointFields = ()

    def _fields(self, c: Cursor) -> PointFields:
        start = c.pos
        known = self._last_bytes
        if known and bytes(c.buf[start : start + len(known)]) == known:
            c.pos += len(known)
            return self._last_fields
        fields = []
        for _ in range(c.u32()):
            name = c.string()
            offset = c.u32()
            datatype = c.u8()
            fields.append((name, offset, datatype, c.u32()))
        self._last_bytes, self._last_fields = bytes(c.buf[start : c.pos]), tuple(fields)
        return self._last_fields

    def __call__(self, raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        c = Cursor(raw, self.cdr)
        stamp, frame_id = c.header()
        height, width = c.u32(), c.u32()
        fields = self._fields(c)
        bigendian = c.u8()
        step, row_step = c.u32(), c.u32()
        data = c.byte_sequence()
        c.u8()  # is_dense
        c.finish()
        points, meta = cloud_from_buffer(
            fields, height, width, step, row_step, bool(bigendian), data
        )
        return stamp, frame_id, points, meta


def _imu(cdr: bool) -> RawDecoder:
    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        c = Cursor(raw, cdr)
        stamp, frame_id = c.header()
        # orientation, its covariance, angular velocity, its covariance, acceleration, its
        # covariance: 37 doubles in a row, copied once so the sample owns its numbers.
        v = c.float64s(37).copy()
        c.finish()
        data = {
            "accel": v[25:28],
            "gyro": v[13:16],
            "orientation": v[0:4],
            "accel_covariance": v[28:37],
            "gyro_covariance": v[16:25],
            "orientation_covariance": v[4:13],
        }
        return stamp, frame_id, data, {}

    return decode


def _navsatfix(cdr: bool) -> RawDecoder:
    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        c = Cursor(raw, cdr)
        stamp, frame_id = c.header()
        (status,) = _I8.unpack_from(raw, c.pos)
        c.pos += 1
        c.align(2)
        (service,) = _U16.unpack_from(raw, c.pos)
        c.pos += 2
        v = c.float64s(12).copy()  # latitude, longitude, altitude, position covariance
        covariance_type = c.u8()
        c.finish()
        data = {
            "latitude": v[0:1].reshape(()),
            "longitude": v[1:2].reshape(()),
            "altitude": v[2:3].reshape(()),
            "position_covariance": v[3:12],
            "covariance_type": np.asarray(covariance_type, np.uint8),
            "status": np.asarray(status, np.int8),
            "service": np.asarray(service, np.uint16),
        }
        return stamp, frame_id, data, {}

    return decode


_MAKERS: dict[str, Callable[[bool, bool], RawDecoder]] = {
    "sensor_msgs/msg/Image": lambda cdr, _images: _image(cdr),
    "sensor_msgs/msg/CompressedImage": _compressed_image,
    "sensor_msgs/msg/PointCloud2": lambda cdr, _images: _PointCloud2(cdr),
    "sensor_msgs/msg/Imu": lambda cdr, _images: _imu(cdr),
    "sensor_msgs/msg/NavSatFix": lambda cdr, _images: _navsatfix(cdr),
}

RAW_TYPES = tuple(_MAKERS)
"""Message types with a raw decoder."""


def raw_decoder(msgtype: str, cdr: bool, decode_images: bool = True) -> RawDecoder | None:
    """A raw decoder for ``msgtype`` (CDR or ROS 1 bytes), ``None`` if it has none.

    The caller must have checked :func:`standard_layout` for the bag's typestore.
    """
    make = _MAKERS.get(msgtype)
    return None if make is None else make(cdr, decode_images)


def standard_layout(typestore: Any, reference: Any, msgtype: str) -> bool:
    """Whether ``typestore`` defines ``msgtype`` exactly as ``reference`` does, nested types too.

    ``reference`` is rosbags' standard store for the bag's ROS version (Humble
    for ROS 2, Noetic for ROS 1): the layouts the raw decoders read.
    """
    try:
        return _flat(typestore.fielddefs, msgtype, 0) == _flat(reference.fielddefs, msgtype, 0)
    except KeyError:
        return False


def _flat(fielddefs: Any, msgtype: str, depth: int) -> list[Any]:
    """A type's fields with every nested message type expanded (names and types)."""
    if depth > 8:
        raise KeyError(msgtype)
    _consts, fields = fielddefs[msgtype]
    out: list[Any] = [msgtype]
    for name, (kind, desc) in fields:
        out.append((name, int(kind), repr(desc)))
        for nested in _nested_names(desc):
            out.append(_flat(fielddefs, nested, depth + 1))
    return out


def _nested_names(desc: Any) -> list[str]:
    """Message type names inside a field description (``NAME``, arrays and sequences of them)."""
    if isinstance(desc, str):
        return [desc] if "/" in desc else []
    if isinstance(desc, tuple):
        return [name for part in desc for name in _nested_names(part)]
    return []
