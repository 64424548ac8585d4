"""The PNG/JPEG header readers (adapters/_image_header.py) against Pillow's, the oracle:
the same width and height for every image Pillow writes (modes, bit depths, progressive
JPEGs, EXIF thumbnails that hold a frame header of their own), for headers forged to any
size, and for arbitrary bytes (never an exception: a size Pillow agrees with, or None).
Then the limit: a picture over it is a DecodeError naming it, before any decoding."""

from __future__ import annotations

import contextlib
import io
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from adapters._image_header import (
    MAX_PIXELS,
    check_image_size,
    image_size,
    jpeg_size,
    png_size,
)
from adapters.errors import DecodeError
from adapters.ros._images import CompressedImageDecoder

Image.MAX_IMAGE_PIXELS = None  # Pillow reads a forged header's size; it decodes nothing here

PNG_MODES = ("1", "L", "LA", "P", "RGB", "RGBA", "I;16")
JPEG_MODES = ("L", "RGB", "CMYK")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pillow_size(data: bytes) -> tuple[int, int] | None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size if image.format in ("PNG", "JPEG") else None
    except Exception:
        return None


def picture(width: int, height: int, mode: str, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(rgb, "RGB").convert(mode)


def png_bytes(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def jpeg_bytes(image: Image.Image, progressive: bool, thumbnail: bool) -> bytes:
    out = io.BytesIO()
    options: dict[str, object] = {"progressive": progressive, "quality": 80}
    if thumbnail:  # an EXIF block holding a JPEG of its own (a frame header of 8x8)
        thumb = io.BytesIO()
        picture(8, 8, "RGB", 1).save(thumb, "JPEG")
        exif = Image.Exif()
        exif[0x0112] = 6  # orientation, as a phone writes it
        options["exif"] = exif.tobytes() + thumb.getvalue()
    image.save(out, "JPEG", **options)
    return out.getvalue()


sides = st.integers(1, 48)


@SETTINGS
@given(sides, sides, st.sampled_from(PNG_MODES), st.integers(0, 2**16))
def test_png_size_is_pillows(width: int, height: int, mode: str, seed: int) -> None:
    data = png_bytes(picture(width, height, mode, seed))
    size = png_size(data)
    assert size is not None
    assert (size.width, size.height) == pillow_size(data) == (width, height)
    assert image_size(data, "png") == size


@SETTINGS
@given(sides, sides, st.sampled_from(JPEG_MODES), st.booleans(), st.booleans(), st.integers(0, 99))
def test_jpeg_size_is_pillows(
    width: int, height: int, mode: str, progressive: bool, thumbnail: bool, seed: int
) -> None:
    data = jpeg_bytes(picture(width, height, mode, seed), progressive, thumbnail)
    size = jpeg_size(data)
    assert size is not None
    assert (size.width, size.height) == pillow_size(data) == (width, height)
    assert size[2] == len(mode)  # components: L 1, RGB 3, CMYK 4


def forge_png(data: bytes, width: int, height: int) -> bytes:
    ihdr = struct.pack(">II", width, height) + data[24:29]
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return data[:16] + ihdr + crc + data[33:]


BASE_PNG = png_bytes(picture(4, 3, "RGBA", 0))
BASE_JPEG = jpeg_bytes(picture(4, 3, "RGB", 0), False, True)


@SETTINGS
@given(st.integers(1, 2**31 - 1), st.integers(1, 2**31 - 1))
def test_a_forged_png_header_reads_as_pillow_reads_it(width: int, height: int) -> None:
    data = forge_png(BASE_PNG, width, height)
    size = png_size(data)
    assert size is not None
    assert (size.width, size.height) == pillow_size(data) == (width, height)


@SETTINGS
@given(st.integers(1, 65535), st.integers(1, 65535))
def test_a_forged_jpeg_header_reads_as_pillow_reads_it(width: int, height: int) -> None:
    from tests.interop.hostile_bags import forge_jpeg_size

    data = forge_jpeg_size(BASE_JPEG, width, height)
    size = jpeg_size(data)
    assert size is not None
    assert (size.width, size.height) == pillow_size(data) == (width, height)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([BASE_PNG, BASE_JPEG]),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=6),
    st.integers(0, 400),
)
def test_damaged_headers_never_raise_and_agree_when_both_read_them(
    base: bytes, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(base)
    for at, value in flips:
        if at < len(data):
            data[at] = value
    damaged = bytes(data[: len(data) - cut])
    ours = png_size(damaged) or jpeg_size(damaged)  # never raises
    theirs = pillow_size(damaged)
    if ours is not None and theirs is not None:
        assert (ours.width, ours.height) == theirs


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    """Nothing but a DecodeError, whatever the bytes (a size or a refusal)."""
    for codec in ("png", "mjpeg"):
        with contextlib.suppress(DecodeError):
            size = check_image_size(data, codec, "x")
            assert size == image_size(data, codec)
            assert size.width * size.height <= MAX_PIXELS


def test_the_limit_refuses_before_decoding_and_names_the_size() -> None:
    bomb = forge_png(BASE_PNG, 8192, 8192)  # a header the decoder would believe
    with pytest.raises(DecodeError, match=r"^'png' image: a PNG of 8192x8192 pixels \(256 MiB"):
        check_image_size(bomb, "png", "'png' image")
    side = int(MAX_PIXELS**0.5)
    assert check_image_size(forge_png(BASE_PNG, side, side), "png", "x").width == side
    with pytest.raises(DecodeError, match="megapixels"):
        check_image_size(forge_png(BASE_PNG, side + 1, side + 1), "png", "x")
    with pytest.raises(DecodeError, match="no readable IHDR"):
        check_image_size(b"\x89PNG\r\n\x1a\n", "png", "x")
    with pytest.raises(DecodeError, match="no readable frame header"):
        check_image_size(b"\xff\xd8\xff\xda\x00\x02", "mjpeg", "x")


def test_the_decoder_refuses_a_bomb_and_still_decodes_real_images() -> None:
    decoder = CompressedImageDecoder()
    with pytest.raises(DecodeError, match="a PNG of 8192x8192 pixels"):
        decoder.from_buffer("png", np.frombuffer(forge_png(BASE_PNG, 8192, 8192), np.uint8))
    image, meta = decoder.from_buffer("png", np.frombuffer(BASE_PNG, np.uint8))
    assert image.shape == (3, 4, 3)
    assert meta["encoding"] == "rgb8"
    image, _ = decoder.from_buffer("jpeg", np.frombuffer(BASE_JPEG, np.uint8))
    assert image.shape[:2] in ((3, 4), (4, 3))  # EXIF orientation 6 turns it upright
    small = CompressedImageDecoder(max_pixels=11)
    with pytest.raises(DecodeError, match=r"over the limit of 1\.1e-05 megapixels"):
        small.from_buffer("png", np.frombuffer(BASE_PNG, np.uint8))


def test_a_reserved_marker_before_the_frame_header_reads_as_no_size() -> None:
    """A JPGn marker (0xF0) where the Exif APP1 was: libjpeg stops there (unknown
    marker), Pillow reads it without a length and finds the Exif thumbnail's 8x8
    frame header (found by the damaged-header property above)."""
    damaged = bytearray(BASE_JPEG)
    assert damaged[20:22] == b"\xff\xe1"
    damaged[21] = 0xF0
    assert pillow_size(bytes(damaged)) == (8, 8)
    assert jpeg_size(bytes(damaged)) is None
    assert jpeg_size(BASE_JPEG) is not None
