"""The resize filters against independent implementations: OpenCV and Pillow.

Tolerance: 1 grey level per pixel (OpenCV and Pillow round fixed-point
weights; we round float32 once), and a mean difference under 0.3 on the
fixed sizes. Not on the random tiny sizes: there a mean of exactly x.5 (say
44 pixels to 1, or 46 rows to 2 whose one column is then repeated 8 times)
rounds apart from OpenCV by 1 in every copy, which says nothing of a bias.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PIL import Image

from fusion import Frame
from fusion._buffers import is_aligned
from fusion.workers import ImagePreprocess
from fusion.workers._resize import Resampler, resize

_CV2 = {"area": cv2.INTER_AREA, "nearest": cv2.INTER_NEAREST}

SIZES = [
    ((720, 1280), (224, 224)),  # 720p to a model input: shrink 3.2 x 5.7
    ((480, 640), (240, 320)),  # exact halving
    ((101, 77), (33, 50)),  # odd sizes, shrink one axis more than the other
    ((37, 45), (120, 91)),  # odd sizes, enlarging
    ((50, 40), (80, 20)),  # one axis grows, the other shrinks
    ((7, 5), (3, 11)),
    ((1, 9), (4, 3)),
]


def image(h: int, w: int, seed: int = 0) -> np.ndarray:
    """Noise on a gradient: the worst case for a resize (every pixel differs)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1), (xx + yy) % 256], -1)
    return np.clip(base + rng.integers(-60, 60, (h, w, 3)), 0, 255).astype(np.uint8)


def close(ours: np.ndarray, ref: np.ndarray, mean: bool = True) -> None:
    assert ours.shape == ref.shape
    assert ours.dtype == ref.dtype
    diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
    assert diff.max() <= 1, f"max difference {diff.max()}"
    if mean:
        assert diff.mean() < 0.3, f"mean difference {diff.mean():.3f}"


@pytest.mark.parametrize(("src", "dst"), SIZES)
@pytest.mark.parametrize("interpolation", ["area", "nearest"])
def test_area_and_nearest_match_opencv(
    src: tuple[int, int], dst: tuple[int, int], interpolation: str
) -> None:
    img = image(*src)
    ref = cv2.resize(img, dst[::-1], interpolation=_CV2[interpolation])
    close(resize(img, dst, interpolation), ref)  # type: ignore[arg-type]


@pytest.mark.parametrize(("src", "dst"), SIZES)
def test_bilinear_matches_pillow_antialiased_bilinear(
    src: tuple[int, int], dst: tuple[int, int]
) -> None:
    img = image(*src, seed=1)
    ref = np.asarray(Image.fromarray(img).resize(dst[::-1], Image.Resampling.BILINEAR))
    close(resize(img, dst, "bilinear"), ref)


@pytest.mark.parametrize(("src", "dst"), [((37, 45), (120, 91)), ((5, 7), (64, 33))])
def test_bilinear_enlarging_is_opencv_inter_linear(
    src: tuple[int, int], dst: tuple[int, int]
) -> None:
    img = image(*src, seed=2)
    close(resize(img, dst, "bilinear"), cv2.resize(img, dst[::-1], interpolation=cv2.INTER_LINEAR))


@settings(max_examples=30, deadline=None)
@given(
    h=st.integers(1, 64),
    w=st.integers(1, 64),
    oh=st.integers(1, 64),
    ow=st.integers(1, 64),
    seed=st.integers(0, 2**16),
)
@example(h=1, w=44, oh=1, ow=1, seed=859)  # means of exactly x.5 (see the module doc)
@example(h=46, w=1, oh=2, ow=8, seed=70)
def test_area_and_nearest_match_opencv_for_any_sizes(
    h: int, w: int, oh: int, ow: int, seed: int
) -> None:
    img = image(h, w, seed)
    ref = cv2.resize(img, (ow, oh), interpolation=cv2.INTER_AREA)
    close(resize(img, (oh, ow), "area"), ref, mean=False)
    near = cv2.resize(img, (ow, oh), interpolation=cv2.INTER_NEAREST)
    np.testing.assert_array_equal(resize(img, (oh, ow), "nearest"), near)  # the same pixels


def test_area_keeps_a_thin_line_that_nearest_drops() -> None:
    # The aliasing the default avoids: a 1-pixel line between sampled columns.
    img = np.zeros((64, 64, 3), np.uint8)
    img[:, 1] = 255
    assert resize(img, (16, 16), "nearest").max() == 0
    np.testing.assert_array_equal(resize(img, (16, 16), "area")[:, 0], np.full((16, 3), 64))


def test_image_preprocess_resizes_with_area_by_default_into_aligned_buffers() -> None:
    pre = ImagePreprocess((56, 56), mean=(0, 0, 0), std=(1 / 255,) * 3, max_batch=2)
    assert pre.interpolation == "area"
    img = image(180, 320, seed=3)
    out = pre([Frame("cam", 0, 0, img), Frame("cam", 1, 0, cv2.resize(img, (56, 56)))])
    ref = cv2.resize(img, (56, 56), interpolation=cv2.INTER_AREA).transpose(2, 0, 1)
    close(np.rint(out[0]).astype(np.uint8), ref)
    assert is_aligned(out)
    assert all(is_aligned(b) for b in pre._ring + pre._staging)


def test_resampler_refuses_another_input_size() -> None:
    with pytest.raises(ValueError, match=r"takes \(10, 10\) images, got \(10, 11\)"):
        Resampler((10, 10), (5, 5))(np.zeros((10, 11, 3), np.uint8))
    with pytest.raises(ValueError, match="interpolation must be one of area, bilinear, nearest"):
        ImagePreprocess(interpolation="cubic")  # type: ignore[arg-type]


@pytest.mark.parametrize("interpolation", ["area", "bilinear"])
def test_compiled_uint8_kernel_matches_the_numpy_passes(interpolation: str) -> None:
    img = image(97, 131, seed=3)
    resampler = Resampler(img.shape[:2], (40, 29), interpolation)  # type: ignore[arg-type]
    compiled = resampler(img)  # C-contiguous uint8: the compiled kernel
    wide = np.zeros((97, 262, 3), np.uint8)
    wide[:, ::2] = img
    view = wide[:, ::2]  # the same pixels, strided: the numpy passes
    assert not view.flags.c_contiguous
    close(compiled, resampler(view))
