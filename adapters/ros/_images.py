"""``sensor_msgs/Image`` and ``CompressedImage`` to numpy arrays.

A raw image becomes an array of the shape and dtype its ``encoding`` names:
``(height, width)`` for one channel, ``(height, width, channels)`` otherwise,
with row padding (``step`` larger than a row) cut and big-endian samples
turned native. The channel order is left as the encoding says (a ``bgr8``
image stays BGR) and the encoding travels in ``meta["encoding"]``, so nothing
is guessed and a round trip is exact. When the rows are packed and the
samples native, the array is a view of the message's bytes: no copy.

A compressed image (JPEG or PNG) is decoded with PyAV (already a dependency
for video) to ``rgb8`` (``mono8``/``mono16`` for grey images), or kept as
bytes with ``decode=False``. ``compressedDepth`` images (a private header in
front of a PNG) are refused with a clear message. A JPEG with an EXIF
orientation is turned upright (all eight EXIF cases), as
``VideoSource(rotate="auto")`` does for video, and ``meta["rotation"]`` says
by how much (absent when the image says nothing). Before it decodes, the
image's header (PNG ``IHDR``, JPEG ``SOF``) must show at most
:data:`~adapters._image_header.MAX_PIXELS` pixels and 256 MiB decoded: a
decompression bomb is a :class:`DecodeError` (that message's loss), not an
allocation.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from adapters._image_header import MAX_PIXELS, check_image_size
from adapters.errors import DecodeError

_NAMED: dict[str, tuple[str, int]] = {
    "rgb8": ("u1", 3),
    "bgr8": ("u1", 3),
    "rgba8": ("u1", 4),
    "bgra8": ("u1", 4),
    "mono8": ("u1", 1),
    "mono16": ("u2", 1),
    "rgb16": ("u2", 3),
    "bgr16": ("u2", 3),
    "rgba16": ("u2", 4),
    "bgra16": ("u2", 4),
    # Packed 4:2:2, two bytes per pixel: kept as (h, w, 2) for the caller to convert.
    "yuv422": ("u1", 2),
    "uyvy": ("u1", 2),
    "yuyv": ("u1", 2),
    "yuv422_yuy2": ("u1", 2),
}
for _pattern in ("rggb", "bggr", "gbrg", "grbg"):
    _NAMED[f"bayer_{_pattern}8"] = ("u1", 1)
    _NAMED[f"bayer_{_pattern}16"] = ("u2", 1)

_CV_TYPE = re.compile(r"^(8|16|32|64)([USF])C([1-4])$")
_CV_KIND = {"U": "u", "S": "i", "F": "f"}

SUPPORTED_ENCODINGS = (*sorted(_NAMED), "<bits><U|S|F>C<n> (OpenCV types, e.g. 32FC1)")
"""Raw image encodings :func:`image_layout` understands."""


def image_layout(encoding: str) -> tuple[np.dtype[Any], int]:
    """``(sample dtype, channels)`` of a ROS image encoding; ``ValueError`` if unknown."""
    named = _NAMED.get(encoding.lower())
    if named is not None:
        return np.dtype("<" + named[0]), named[1]
    match = _CV_TYPE.match(encoding.upper())
    if match is None:
        raise ValueError(f"unknown image encoding {encoding!r}")
    bits, kind, channels = match.groups()
    if kind == "F" and bits in ("8",):
        raise ValueError(f"unknown image encoding {encoding!r}")
    size = int(bits) // 8
    return np.dtype(f"<{_CV_KIND[kind]}{size}"), int(channels)


def encoding_for(array: np.ndarray) -> str:
    """The ROS encoding that describes ``array`` (uint8 RGB, grey, or an OpenCV type)."""
    channels = 1 if array.ndim == 2 else int(array.shape[2])
    kind = array.dtype.kind
    if array.dtype == np.uint8 and channels in (1, 3, 4):
        return {1: "mono8", 3: "rgb8", 4: "rgba8"}[channels]
    if array.dtype == np.uint16 and channels == 1:
        return "mono16"
    letter = {"u": "U", "i": "S", "f": "F"}.get(kind)
    if letter is None or array.ndim not in (2, 3) or channels > 4:
        raise ValueError(f"no ROS image encoding for {array.dtype} array of shape {array.shape}")
    return f"{array.dtype.itemsize * 8}{letter}C{channels}"


def decode_image(msg: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """A deserialised ``sensor_msgs/Image`` as ``(array, meta)``; ``DecodeError`` if wrong."""
    return image_from_buffer(
        str(msg.encoding),
        int(msg.height),
        int(msg.width),
        int(msg.step),
        bool(msg.is_bigendian),
        np.asarray(msg.data, dtype=np.uint8).reshape(-1),
    )


def image_from_buffer(
    encoding: str, height: int, width: int, step: int, bigendian: bool, buf: np.ndarray
) -> tuple[np.ndarray, dict[str, Any]]:
    """The pixels of an image message's fields, ``buf`` its ``data`` as a flat uint8 array.

    Shared by :func:`decode_image` (a deserialised message) and the raw CDR
    path of :mod:`adapters.ros._rawdecode`, so both give the same array and
    the same errors.
    """
    try:
        sample, channels = image_layout(encoding)
    except ValueError as err:
        raise DecodeError(f"{err}; supported: {', '.join(SUPPORTED_ENCODINGS)}") from None
    if bigendian:
        sample = sample.newbyteorder(">")
    row = width * channels * sample.itemsize
    if step < row or buf.size < step * height:
        raise DecodeError(
            f"image {width}x{height} {encoding} needs {row} bytes a row and {step * height} "
            f"in all (step {step}); the message has {buf.size}"
        )
    shape = (height, width) if channels == 1 else (height, width, channels)
    if step == row and sample.byteorder != ">":  # packed native rows: a view
        return buf[: step * height].view(sample).reshape(shape), {"encoding": encoding}
    rows = buf[: step * height].reshape(height, step)
    if step != row:
        rows = rows[:, :row]
    pixels = (rows if rows.flags.c_contiguous else np.ascontiguousarray(rows)).view(sample)
    if sample.byteorder == ">":
        pixels = pixels.astype(sample.newbyteorder("="))
    return pixels.reshape(shape), {"encoding": encoding}


class CompressedImageDecoder:
    """Decodes ``sensor_msgs/CompressedImage`` with PyAV, keeping one codec per format."""

    def __init__(self, decode: bool = True, *, max_pixels: int = MAX_PIXELS) -> None:
        self.decode = decode
        self.max_pixels = max_pixels
        """Images over this many pixels (or 256 MiB decoded) are refused from their header."""
        self._codecs: dict[str, Any] = {}

    def __call__(self, msg: Any) -> tuple[Any, dict[str, Any]]:
        return self.from_buffer(str(msg.format), np.asarray(msg.data, dtype=np.uint8))

    def from_buffer(self, fmt: str, data: np.ndarray) -> tuple[Any, dict[str, Any]]:
        """Decode one image given its ``format`` and ``data`` (a uint8 array)."""
        raw = data.tobytes()
        if not self.decode:
            return raw, {"format": fmt}
        codec = _codec_name(fmt)
        image, rotation = self._decode(codec, raw, fmt)
        meta: dict[str, Any] = {"format": fmt, "encoding": "rgb8"}
        if rotation is not None:
            meta["rotation"] = rotation
            meta["rotated"] = True
        return image, meta

    def _decode(self, codec: str, raw: bytes, fmt: str) -> tuple[np.ndarray, int | None]:
        """The upright picture and its rotation (None: the image says nothing)."""
        import av

        from adapters.video import exif_orientation

        # The header's size first: a 250 kB PNG can ask the decoder for 256 MiB.
        check_image_size(raw, codec, f"{fmt!r} image", max_pixels=self.max_pixels)
        ctx: Any = self._codecs.get(codec)
        if ctx is None:
            ctx = self._codecs[codec] = av.CodecContext.create(codec, "r")
        try:
            frames = ctx.decode(av.Packet(raw))
        except av.FFmpegError as err:
            self._codecs.pop(codec, None)  # a failed decoder may hold bad state
            raise DecodeError(f"{fmt!r} image does not decode: {err}") from err
        if not frames:
            raise DecodeError(f"{fmt!r} image of {len(raw)} bytes decoded to no picture")
        frame = frames[0]
        name = frame.format.name
        if name in ("gray", "gray8"):
            image = np.asarray(frame.to_ndarray(format="gray"))
        elif name.startswith("gray16"):
            image = np.asarray(frame.to_ndarray(format="gray16le"))
        else:
            image = np.asarray(frame.to_ndarray(format="rgb24"))
        # Turned upright by the EXIF orientation, as VideoSource(rotate="auto") turns
        # video by its display matrix.
        turn = exif_orientation(raw) if codec == "mjpeg" else None
        if turn is None or turn.matrix is None or not turn.exact:
            return image, None
        return np.ascontiguousarray(turn.apply(image)), turn.rotation


def _codec_name(fmt: str) -> str:
    lowered = fmt.lower()
    if "compresseddepth" in lowered:
        raise DecodeError(
            f"CompressedImage format {fmt!r} (compressedDepth) is not supported; "
            "read the topic with decode_images=False to get the bytes"
        )
    if "jpeg" in lowered or "jpg" in lowered:
        return "mjpeg"
    if "png" in lowered:
        return "png"
    raise DecodeError(f"CompressedImage format {fmt!r} is neither JPEG nor PNG")
