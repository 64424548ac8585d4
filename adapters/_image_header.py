"""The size of a PNG or JPEG picture read from its header, before anything decodes it.

A compressed image says how big it is before its pixels: a PNG in its first
chunk (``IHDR``: width, height, bit depth, colour type), a JPEG in its frame
header (``SOF0``..``SOF15``: precision, height, width, components). A decoder
allocates what the header says, so a 250 kB PNG of 8192x8192 RGBA, all zeros,
decodes to 256 MiB (a decompression bomb). :func:`check_image_size` reads the
header (a few dozen bytes; no decompression) and refuses, with a
:class:`~adapters.errors.DecodeError` naming the image and its size, a
picture over :data:`MAX_PIXELS` pixels or :data:`MAX_DECODED_BYTES` decoded
bytes, or one whose header cannot be read. The callers (ROS
``CompressedImage`` messages of bags and live topics, KITTI's PNG files) count
it as that message's loss and go on.

The readers follow the PNG specification (ISO/IEC 15948, section 11.2.2) and
JPEG's (ITU-T T.81, B.1.1 and B.2.2): a JPEG's markers are walked by their
lengths from ``SOI`` to the first frame header, skipping fill bytes and the
markers that have no length (``RSTn``, ``TEM``), so an EXIF thumbnail (inside
``APP1``) is never taken for the picture. ``tests/adapters/test_image_header.py``
checks both against Pillow's header readers.
"""

from __future__ import annotations

import struct

from adapters.errors import DecodeError

__all__ = ["MAX_DECODED_BYTES", "MAX_PIXELS", "ImageSize", "check_image_size", "image_size"]

MAX_PIXELS = 40_000_000
"""The most pixels a compressed image may have (8K UHD, 7680x4320, is 33 million)."""
MAX_DECODED_BYTES = 256 << 20
"""The most bytes its decoded samples may take (40 Mpx of 16-bit RGBA would be 320 MB)."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}  # palette (3) decodes to RGB
# Frame headers: SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_NO_LENGTH = frozenset(range(0xD0, 0xD8)) | {0x01}  # RSTn, TEM
# Reserved markers libjpeg stops at (JERR_UNKNOWN_MARKER): JPG, DHP, EXP, JPGn, RESn.
# Readers disagree on what follows them (Pillow reads JPGn as a marker without a
# length and walks into an Exif thumbnail's frame header): no size is read past one.
_RESERVED = frozenset({0xC8, 0xDE, 0xDF, *range(0xF0, 0xFE), *range(0x02, 0xC0)})


class ImageSize(tuple[int, int, int, int]):
    """``(width, height, channels, bytes per sample)`` a header describes."""

    __slots__ = ()

    @property
    def width(self) -> int:
        return self[0]

    @property
    def height(self) -> int:
        return self[1]

    @property
    def decoded_bytes(self) -> int:
        """The decoded picture's size in bytes, at the header's depth."""
        return self[0] * self[1] * self[2] * self[3]


def _make(width: int, height: int, channels: int, sample: int) -> ImageSize:
    return ImageSize((width, height, channels, sample))


def png_size(data: bytes) -> ImageSize | None:
    """The size in a PNG's ``IHDR``; ``None`` when ``data`` does not start with one."""
    if len(data) < 33 or data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        return None
    width, height, depth, colour = struct.unpack_from(">IIBB", data, 16)
    channels = _PNG_CHANNELS.get(colour)
    if channels is None:
        return None
    return _make(width, height, channels, 2 if depth == 16 else 1)


def jpeg_size(data: bytes) -> ImageSize | None:
    """The size in a JPEG's first frame header; ``None`` when there is none before the
    first scan (or the markers do not lead to one)."""
    if len(data) < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return None
    at, end = 2, len(data)
    while at < end:
        if data[at] != 0xFF:
            return None  # not a marker where one must be
        while at < end and data[at] == 0xFF:  # fill bytes before a marker
            at += 1
        if at >= end:
            return None
        marker = data[at]
        at += 1
        if marker in _NO_LENGTH:
            continue
        if marker in (0xD8, 0xD9, 0xDA, 0x00) or marker in _RESERVED:
            return None  # a second SOI, EOI, a scan or a reserved marker: no frame header
        if at + 2 > end:
            return None
        (length,) = struct.unpack_from(">H", data, at)
        if length < 2:
            return None
        if marker in _SOF:
            if length < 8 or at + 8 > end:
                return None
            precision, height, width, components = struct.unpack_from(">BHHB", data, at + 2)
            return _make(width, height, components, 2 if precision > 8 else 1)
        at += length
    return None


def image_size(data: bytes, codec: str) -> ImageSize | None:
    """The header's size of a ``"png"`` or ``"mjpeg"`` (JPEG) image; ``None`` if unreadable."""
    return png_size(data) if codec == "png" else jpeg_size(data)


def check_image_size(
    data: bytes,
    codec: str,
    what: str,
    *,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int = MAX_DECODED_BYTES,
) -> ImageSize:
    """The size of the ``codec`` (``"png"`` or ``"mjpeg"``) image ``data``, once its header
    shows it within the limits; else :class:`DecodeError` naming ``what`` (the image's
    format or file) and the size. Nothing is decompressed."""
    size = image_size(data, codec)
    kind = "PNG" if codec == "png" else "JPEG"
    if size is None:
        header = "IHDR" if codec == "png" else "frame header (SOF) before the first scan"
        raise DecodeError(f"{what}: a {kind} of {len(data)} bytes with no readable {header}")
    width, height = size.width, size.height
    if width == 0 or height == 0:
        raise DecodeError(f"{what}: a {kind} of {width}x{height} pixels (an empty picture)")
    pixels = width * height
    if pixels > max_pixels or size.decoded_bytes > max_bytes:
        raise DecodeError(
            f"{what}: a {kind} of {width}x{height} pixels ({size.decoded_bytes / 2**20:.0f} MiB "
            f"decoded, from {len(data)} bytes) is over the limit of {max_pixels / 1e6:g} "
            f"megapixels and {max_bytes >> 20} MiB; not decoded"
        )
    return size
