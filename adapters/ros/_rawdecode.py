"""The hot message types decoded straight from their serialised bytes.

Why: ``rosbags`` deserialises a message into Python objects field by field
(a dataclass per nested message, a ``struct`` call per number), and our
decoders then turn those objects into arrays. For the types a drive is made
of (``Image``, ``CompressedImage``, ``PointCloud2``, ``Imu``, ``NavSatFix``)
the layout is fixed, so this module reads the few scalars with ``struct`` and
takes the bulk (pixels, points, the 37 doubles of an IMU sample) as numpy
views of the message bytes, then hands them to the same array code the
deserialised path uses (:func:`~adapters.ros._images.image_from_buffer`,
:func:`~adapters.ros._pointcloud2.cloud_from_buffer`). Same frames, a
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

from adapters.ros._images import CompressedImageDecoder, image_from_buffer
from adapters.ros._pointcloud2 import PointFields, cloud_from_buffer

RawDecoder = Callable[[Any], tuple[int | None, str, Any, dict[str, Any]]]
"""``raw bytes -> (header stamp ns or None, frame_id, data, meta)``."""

RAW_ERRORS = (struct.error, ValueError, IndexError, UnicodeDecodeError, OverflowError)
"""What a raw decoder raises on bytes it cannot parse (besides :class:`Malformed`)."""

# Both headers put frame_id's characters at byte 16:
#   CDR:   encapsulation (4) | sec int32 | nanosec uint32 | frame_id size | chars NUL
#   ROS 1: seq uint32 | sec int32 | nsec uint32 | frame_id size | chars
_CDR_HEADER = struct.Struct("<BB2xiII")
_ROS1_HEADER = struct.Struct("<4xiII")
_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")
_U32X3 = struct.Struct("<III")
_U16 = struct.Struct("<H")
_I8 = struct.Struct("<b")
_F64 = np.dtype("<f8")
_U8 = np.dtype("u1")


class Malformed(Exception):
    """The bytes are not the layout this decoder reads; rosbags decides what is wrong."""


def _header(raw: Any, cdr: bool) -> tuple[int | None, str, int]:
    """``std_msgs/Header``: ``(stamp ns or None when zero, frame_id, position after it)``."""
    if cdr:
        kind, little, sec, nanosec, size = _CDR_HEADER.unpack_from(raw)
        if kind != 0 or little != 1:
            raise Malformed("not little-endian CDR")
    else:
        sec, nanosec, size = _ROS1_HEADER.unpack_from(raw)
    frame_id, pos = _text(raw, 16, size, cdr)
    return sec * 1_000_000_000 + nanosec or None, frame_id, pos


def _text(raw: Any, pos: int, size: int, cdr: bool) -> tuple[str, int]:
    """The ``size`` bytes of a string at ``pos`` (CDR: its NUL included), and the end."""
    end = pos + size
    if end > len(raw):
        raise Malformed("string runs past the message")
    if cdr:
        if size < 1 or raw[end - 1] != 0:
            raise Malformed("CDR string without its NUL")
        return bytes(raw[pos : end - 1]).decode(), end
    return bytes(raw[pos:end]).decode(), end


def _string(raw: Any, pos: int, cdr: bool) -> tuple[str, int]:
    """A length-prefixed string at ``pos`` (the length aligned to 4 in CDR)."""
    if cdr:
        pos += -pos % 4
    (size,) = _U32.unpack_from(raw, pos)
    return _text(raw, pos + 4, size, cdr)


def _finish(raw: Any, pos: int, cdr: bool) -> None:
    """Refuse trailing bytes, as rosbags does (CDR allows 3 bytes of final padding)."""
    if pos > len(raw) or pos + (3 if cdr else 0) < len(raw):
        raise Malformed("message size does not match its fields")


# CDR aligns each primitive to its size counted from byte 4 (after the encapsulation):
# for 4 bytes that is ``-pos % 4``, for 8 bytes ``-(pos - 4) % 8``. ROS 1 packs.


def _image(cdr: bool) -> RawDecoder:
    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        stamp, frame_id, pos = _header(raw, cdr)
        if cdr:
            pos += -pos % 4
        height, width, size = _U32X3.unpack_from(raw, pos)  # + the encoding's length
        encoding, pos = _text(raw, pos + 12, size, cdr)
        bigendian = raw[pos]
        pos += 1
        if cdr:
            pos += -pos % 4
        step, size = _U32X2.unpack_from(raw, pos)  # + the data's length
        data = np.frombuffer(raw, _U8, size, pos + 8)
        _finish(raw, pos + 8 + size, cdr)
        pixels, meta = image_from_buffer(encoding, height, width, step, bool(bigendian), data)
        return stamp, frame_id, pixels, meta

    return decode


def _compressed_image(cdr: bool, decode_images: bool) -> RawDecoder:
    images = CompressedImageDecoder(decode_images)

    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        stamp, frame_id, pos = _header(raw, cdr)
        fmt, pos = _string(raw, pos, cdr)
        if cdr:
            pos += -pos % 4
        (size,) = _U32.unpack_from(raw, pos)
        data = np.frombuffer(raw, _U8, size, pos + 4)
        _finish(raw, pos + 4 + size, cdr)
        image, meta = images.from_buffer(fmt, data)
        return stamp, frame_id, image, meta

    return decode


class _PointCloud2:
    """PointCloud2 reader that parses a field list once while it repeats byte for byte."""

    def __init__(self, cdr: bool) -> None:
        self.cdr = cdr
        self._last_bytes = b""
        self._last_fields: PointFields = ()

    def _fields(self, raw: Any, pos: int, count: int) -> tuple[PointFields, int]:
        """The ``count`` PointFields at ``pos`` and the position after them."""
        known = self._last_bytes
        if (
            count == len(self._last_fields)
            and known
            and bytes(raw[pos : pos + len(known)]) == known
        ):
            return self._last_fields, pos + len(known)
        cdr, start, fields = self.cdr, pos, []
        for _ in range(count):
            name, pos = _string(raw, pos, cdr)
            if cdr:
                pos += -pos % 4
            (offset,) = _U32.unpack_from(raw, pos)
            datatype = raw[pos + 4]
            pos += 5
            if cdr:
                pos += -pos % 4
            (n,) = _U32.unpack_from(raw, pos)
            pos += 4
            fields.append((name, offset, datatype, n))
        self._last_bytes, self._last_fields = bytes(raw[start:pos]), tuple(fields)
        return self._last_fields, pos

    def __call__(self, raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        cdr = self.cdr
        stamp, frame_id, pos = _header(raw, cdr)
        if cdr:
            pos += -pos % 4
        height, width, count = _U32X3.unpack_from(raw, pos)  # + the number of fields
        fields, pos = self._fields(raw, pos + 12, count)
        bigendian = raw[pos]
        pos += 1
        if cdr:
            pos += -pos % 4
        step, row_step, size = _U32X3.unpack_from(raw, pos)  # + the data's length
        data = np.frombuffer(raw, _U8, size, pos + 12)
        pos += 12 + size
        # then is_dense (1 byte, not used): _finish checks it is there
        _finish(raw, pos + 1, cdr)
        points, meta = cloud_from_buffer(
            fields, height, width, step, row_step, bool(bigendian), data
        )
        return stamp, frame_id, points, meta


def _imu(cdr: bool) -> RawDecoder:
    def decode(raw: Any) -> tuple[int | None, str, Any, dict[str, Any]]:
        stamp, frame_id, pos = _header(raw, cdr)
        if cdr:
            pos += -(pos - 4) % 8
        # orientation, its covariance, angular velocity, its covariance, acceleration, its
        # covariance: 37 doubles in a row, copied once so the sample owns its numbers.
        v = np.frombuffer(raw, _F64, 37, pos).copy()
        _finish(raw, pos + 296, cdr)
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
        stamp, frame_id, pos = _header(raw, cdr)
        (status,) = _I8.unpack_from(raw, pos)
        pos += 1
        if cdr:
            pos += pos % 2
        (service,) = _U16.unpack_from(raw, pos)
        pos += 2
        if cdr:
            pos += -(pos - 4) % 8
        v = np.frombuffer(raw, _F64, 12, pos).copy()  # lat, lon, alt, position covariance
        covariance_type = raw[pos + 96]
        _finish(raw, pos + 97, cdr)
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
