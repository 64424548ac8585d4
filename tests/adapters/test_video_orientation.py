"""Display matrices, EXIF orientation, the filter chain that turns a picture, and the tail."""

from __future__ import annotations

import io
from typing import Any

import av
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image, ImageOps

from adapters.ros._images import CompressedImageDecoder
from adapters.video._convert import PixelConverter
from adapters.video._ledger import PacketLedger
from adapters.video._orientation import UPRIGHT, exif_orientation, from_matrix
from adapters.video._tail import Tail

ONE = 1 << 16
W = 1 << 30


def displayed(matrix: tuple[int, ...], stored: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The upright picture by the matrix's definition: stored pixel (x, y) goes to column
    a*x + c*y and row b*x + d*y, shifted into the picture (independent of Orientation)."""
    a, b, _, c, d = (v // ONE for v in matrix[:5])
    h, w = stored.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w]
    cols, rows = a * xs + c * ys, b * xs + d * ys
    cols -= cols.min()
    rows -= rows.min()
    out = np.zeros((rows.max() + 1, cols.max() + 1, *stored.shape[2:]), stored.dtype)
    out[rows, cols] = stored[ys, xs]
    return out


DIHEDRAL = [
    (a, b, 0, c, d, 0, 0, 0, W)
    for a, b, c, d in [
        (ONE, 0, 0, ONE), (-ONE, 0, 0, ONE), (ONE, 0, 0, -ONE), (-ONE, 0, 0, -ONE),
        (0, ONE, ONE, 0), (0, -ONE, ONE, 0), (0, ONE, -ONE, 0), (0, -ONE, -ONE, 0),
    ]
]  # fmt: skip


class TestOrientation:
    @given(st.sampled_from(DIHEDRAL), st.integers(2, 9), st.integers(2, 9))
    def test_apply_is_the_matrix_definition(self, matrix: tuple[int, ...], h: int, w: int) -> None:
        stored = np.arange(h * w * 3, dtype=np.int32).reshape(h, w, 3)
        turn = from_matrix(matrix)
        assert turn.exact
        np.testing.assert_array_equal(turn.apply(stored), displayed(matrix, stored))
        assert turn.shape(w, h) == turn.apply(stored).shape[1::-1]

    @pytest.mark.parametrize("matrix", DIHEDRAL)
    @pytest.mark.parametrize("pixel_format", ["gray", "rgb24", "yuv420p"])
    def test_the_filter_chain_turns_like_apply(
        self, matrix: tuple[int, ...], pixel_format: Any
    ) -> None:
        rng = np.random.default_rng(1)
        frame = av.VideoFrame.from_ndarray(
            rng.integers(0, 255, (32, 48, 3), dtype=np.uint8), format="rgb24"
        ).reformat(format="yuv420p")
        plain = PixelConverter(pixel_format)
        turned = PixelConverter(pixel_format)
        turned.orientation = turn = from_matrix(matrix)
        a, b = turned.convert(frame), plain.convert(frame)
        if isinstance(a, dict):
            for name in "yuv":
                np.testing.assert_array_equal(a[name], turn.apply(b[name]))
        else:
            np.testing.assert_array_equal(a, turn.apply(b))

    def test_ffprobe_numbers_for_the_real_matrices(self) -> None:
        # The matrices of portrait_4k60 (-90), mv_with_2_top_shots (+90), a half turn.
        assert from_matrix((0, ONE, 0, -ONE, 0, 0, 0, 0, W)).rotation == -90
        assert from_matrix((0, -ONE, 0, ONE, 0, 0, 0, 0, W)).rotation == 90
        assert from_matrix((-ONE, 0, 0, 0, -ONE, 0, 0, 0, W)).rotation == -180
        mirrored = from_matrix((0, ONE, 0, ONE, 0, 0, 0, 0, W))
        assert (mirrored.rotation, mirrored.reflects, mirrored.transpose) == (-90, True, True)
        assert from_matrix(None) is UPRIGHT
        tilted = from_matrix((46341, 46341, 0, -46341, 46341, 0, 0, 0, W))  # 45 degrees
        assert not tilted.exact
        assert tilted.identity  # reported, not applied

    @pytest.mark.parametrize("tag", range(1, 9))
    def test_every_exif_orientation_matches_pillow(self, tag: int) -> None:
        rng = np.random.default_rng(tag)
        image = np.zeros((24, 40, 3), np.uint8)
        image[:6, :10] = 255
        # Grey content: two JPEG decoders upsample chroma differently, not luma.
        image[18:, 30:] = rng.integers(0, 255, dtype=np.uint8)
        exif = Image.Exif()
        exif[0x0112] = tag
        buf = io.BytesIO()
        Image.fromarray(image).save(buf, "JPEG", exif=exif.tobytes(), quality=95)
        jpeg = buf.getvalue()
        reference = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(jpeg))))
        ours, meta = CompressedImageDecoder().from_buffer("jpeg", np.frombuffer(jpeg, np.uint8))
        assert ours.shape == reference.shape
        assert np.abs(ours.astype(int) - reference).max() <= 2  # two JPEG decoders' rounding
        turn = exif_orientation(jpeg)
        assert turn is not None
        assert meta.get("rotation") == (None if tag == 1 else turn.rotation)

    def test_a_jpeg_without_exif_is_left_alone(self) -> None:
        buf = io.BytesIO()
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(buf, "JPEG")
        assert exif_orientation(buf.getvalue()) is None
        assert exif_orientation(b"not a jpeg") is None


class _P:
    def __init__(self, size: int, key: bool) -> None:
        self.size, self.is_keyframe = size, key


class TestTail:
    def test_keeps_from_a_key_frame_far_enough_back(self) -> None:
        tail: Tail[_P] = Tail(reach=4)
        packets = [_P(10, i % 6 == 0) for i in range(20)]
        for p in packets:
            tail.add(p)
        kept = list(tail)
        assert kept[0].is_keyframe
        assert kept == packets[12:]  # key at 18 has only 2 after it: start at 12
        assert len(kept) >= 4

    def test_a_tail_over_its_bounds_waits_for_the_next_key_frame(self) -> None:
        tail: Tail[_P] = Tail(reach=4, max_bytes=50)
        for i in range(8):
            tail.add(_P(10, i == 0))
        assert len(tail) == 0
        tail.add(_P(10, True))
        assert len(tail) == 1


def test_ledger_oldest_is_the_smallest_pending_pts() -> None:
    ledger = PacketLedger()
    for pts in (30, 10, 20):
        ledger.sent(pts)
    assert ledger.oldest() == 10
    ledger.received(10)
    assert ledger.oldest() == 20
