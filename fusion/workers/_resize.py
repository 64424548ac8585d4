"""Image resizing with the filters models are trained with, in numpy.

A model trained on torchvision or OpenCV inputs saw images shrunk with an
area or bilinear filter; nearest-neighbour sampling aliases (thin lines
vanish, edges stair-step), which is input the model never saw. So the
default here is ``"area"`` and ``"nearest"`` is only on request:

* ``"area"``: OpenCV's ``INTER_AREA``. Shrinking both axes, each output
  pixel is the mean of the input pixels its footprint covers (fractional
  overlaps weighted), which is what ``cv2.resize`` does; otherwise (an axis
  grows) OpenCV's area-mode linear interpolation, which it also uses then.
* ``"bilinear"``: antialiased bilinear, as torchvision's ``Resize`` (its
  default ``antialias=True``) and Pillow's ``BILINEAR`` do it: a triangle
  filter whose support widens with the shrink factor, so every input pixel
  counts. Enlarging, this is OpenCV's ``INTER_LINEAR`` (half-pixel centres,
  edge pixels repeated). OpenCV's ``INTER_LINEAR`` does not antialias when
  shrinking (by more than 2 it skips pixels); we do not copy that.
* ``"nearest"``: ``INTER_NEAREST``'s pixel choice (``floor(dst * scale)``,
  with OpenCV's float rounding).

Equality: within 1 grey level of ``cv2.resize`` (``INTER_AREA``, and
``INTER_LINEAR`` when enlarging) and of Pillow's antialiased ``BILINEAR``
when shrinking (both round fixed-point weights; we compute in float32 and
round once), tested for shrinking, enlarging and odd sizes.

How: the filter is separable, so a resize is two passes of a small gather
and weighted sum along one axis each, with the taps (input indices and
weights, at most ``ceil(scale) + 1`` per output pixel) precomputed per
(input size, output size) in a :class:`Resampler`. C-contiguous ``uint8``
images (what decoders give) go through one compiled loop nest
(:mod:`fusion.workers._resize_kernel`, numba): 1280x720 to 224x224 costs less
than ``cv2.resize`` with ``INTER_AREA`` (BENCHMARKS.md), and it releases the
GIL. Other dtypes and strided views take two numpy passes, the one that
shrinks most first (a few ms per 720p frame). When the frames come from a
``VideoSource``, its decoder can do the resize in its swscale pass instead
(see :func:`fusion.workers._preprocess.fuse_resize`).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from fusion.errors import ConfigError

Interpolation = Literal["area", "bilinear", "nearest"]
INTERPOLATIONS: tuple[Interpolation, ...] = ("area", "bilinear", "nearest")

_Taps = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]  # (out, k) indices, (out, k) weights


def check_interpolation(interpolation: str) -> Interpolation:
    """``interpolation`` if it is one of :data:`INTERPOLATIONS`, else ``ValueError``."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"interpolation must be one of {', '.join(INTERPOLATIONS)}, got {interpolation!r}"
        )
    return interpolation


def _area_taps(src: int, dst: int) -> _Taps:
    """Box-filter taps of shrinking ``src`` samples to ``dst`` (OpenCV computeResizeAreaTab)."""
    scale = src / dst
    rows: list[list[tuple[int, float]]] = []
    for d in range(dst):
        f1 = d * scale
        f2 = f1 + scale
        cell = min(scale, src - f1)
        s1 = min(math.ceil(f1), src - 1)
        s2 = min(math.floor(f2), src - 1)
        s1 = min(s1, s2)
        taps: list[tuple[int, float]] = []
        if s1 - f1 > 1e-3:
            taps.append((s1 - 1, (s1 - f1) / cell))
        taps.extend((s, 1.0 / cell) for s in range(s1, s2))
        if f2 - s2 > 1e-3:
            taps.append((s2, min(min(f2 - s2, 1.0), cell) / cell))
        rows.append(taps)
    return _pack(rows)


def _triangle_taps(src: int, dst: int) -> _Taps:
    """Antialiased bilinear taps: Pillow's ImagingResample with its bilinear filter."""
    scale = src / dst
    support = max(scale, 1.0)
    rows: list[list[tuple[int, float]]] = []
    for d in range(dst):
        center = (d + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), src)
        taps = [(s, max(0.0, 1.0 - abs((s - center + 0.5) / support))) for s in range(lo, hi)]
        total = sum(w for _, w in taps)
        rows.append([(s, w / total) for s, w in taps if w > 0] or [(lo, 1.0)])
    return _pack(rows)


def _linear_taps(src: int, dst: int, area_mode: bool) -> _Taps:
    """Two-tap linear interpolation (OpenCV's INTER_LINEAR, or INTER_AREA when enlarging)."""
    inv_scale = dst / src
    scale = 1.0 / inv_scale  # OpenCV's own rounding: floor(d * scale) must match it
    rows: list[list[tuple[int, float]]] = []
    for d in range(dst):
        if area_mode:
            s = math.floor(d * scale)
            # OpenCV rounds this to float32 before taking the fraction: at exact
            # multiples that decides which input pixel gets the weight.
            f = float(np.float32((d + 1) - (s + 1) * inv_scale))
            f = 0.0 if f <= 0 else f - math.floor(f)
        else:
            x = (d + 0.5) * scale - 0.5
            s = math.floor(x)
            f = x - s
        if s < 0:
            s, f = 0, 0.0
        if s >= src - 1:
            s, f = src - 1, 0.0
        rows.append([(s, 1.0 - f), (min(s + 1, src - 1), f)])
    return _pack(rows)


def nearest_index(src: int, dst: int) -> np.ndarray[Any, np.dtype[np.intp]]:
    """The input sample each of ``dst`` outputs takes: OpenCV's ``floor(d * (1 / (dst / src)))``,
    float rounding included (at exact multiples it picks the pixel before)."""
    index = np.floor(np.arange(dst) * (1.0 / (dst / src))).astype(np.intp)
    clipped: np.ndarray[Any, np.dtype[np.intp]] = np.minimum(index, src - 1)
    return clipped


def _nearest_taps(src: int, dst: int) -> _Taps:
    return nearest_index(src, dst)[:, None], np.ones((dst, 1), np.float32)


def _pack(rows: list[list[tuple[int, float]]]) -> _Taps:
    """Rows of (index, weight) padded with zero-weight taps to one width."""
    k = max(len(r) for r in rows)
    index = np.zeros((len(rows), k), np.intp)
    weight = np.zeros((len(rows), k), np.float32)
    for i, taps in enumerate(rows):
        for j, (s, w) in enumerate(taps):
            index[i, j], weight[i, j] = s, w
        index[i, len(taps) :] = taps[-1][0]
    return index, weight


class Resampler:
    """The precomputed taps resizing ``(H, W, ...)`` images of one size to another.

    ``src`` and ``dst`` are ``(height, width)``.
    """

    __slots__ = ("_cols", "_rows", "dst", "interpolation", "src")

    def __init__(
        self, src: tuple[int, int], dst: tuple[int, int], interpolation: Interpolation = "area"
    ) -> None:
        check_interpolation(interpolation)
        if min(*src, *dst) < 1:
            raise ConfigError(f"sizes must be positive, got {src} -> {dst}")
        self.src, self.dst, self.interpolation = src, dst, interpolation
        (h, w), (oh, ow) = src, dst
        if interpolation == "nearest":
            self._rows, self._cols = _nearest_taps(h, oh), _nearest_taps(w, ow)
        elif interpolation == "area" and h >= oh and w >= ow:
            self._rows, self._cols = _area_taps(h, oh), _area_taps(w, ow)
        elif interpolation == "area":
            self._rows, self._cols = _linear_taps(h, oh, True), _linear_taps(w, ow, True)
        else:
            self._rows, self._cols = _triangle_taps(h, oh), _triangle_taps(w, ow)

    def __call__(
        self, image: np.ndarray[Any, Any], out: np.ndarray[Any, Any] | None = None
    ) -> np.ndarray[Any, Any]:
        """``image`` ``(H, W, ...)`` resized to ``dst``, in ``image``'s dtype (rounded, clipped)."""
        if image.shape[:2] != self.src:
            raise ValueError(f"this resampler takes {self.src} images, got {image.shape[:2]}")
        if out is None:
            out = np.empty((*self.dst, *image.shape[2:]), image.dtype)
        if self.interpolation == "nearest":
            out[...] = image[self._rows[0][:, 0][:, None], self._cols[0][:, 0][None, :]]
            return out
        if (
            image.dtype == np.uint8
            and out.dtype == np.uint8
            and image.ndim == 3
            and image.flags.c_contiguous
            and out.flags.c_contiguous
        ):
            self._compiled(image, out)
            return out
        (h, w), (oh, ow) = self.src, self.dst
        if h / oh >= w / ow:  # shrink the most first: the second pass sees the smaller image
            result = _pass(_pass(image, self._rows, 0), self._cols, 1)
        else:
            result = _pass(_pass(image, self._cols, 1), self._rows, 0)
        if np.issubdtype(out.dtype, np.integer):
            info = np.iinfo(out.dtype)
            np.rint(result, out=result)
            np.clip(result, info.min, info.max, out=result)
        out[...] = result
        return out

    def _compiled(self, image: np.ndarray[Any, Any], out: np.ndarray[Any, Any]) -> None:
        """The compiled kernel (uint8 ``(H, W, C)``): rows, then columns, in one loop nest."""
        from fusion.workers._resize_kernel import separable_u8

        # One scratch row per call (not per resampler): threads may share a resampler.
        tmp = np.empty(self.src[1] * image.shape[2], np.float32)
        separable_u8(image, self._rows, self._cols, tmp, out)


def _pass(image: np.ndarray[Any, Any], taps: _Taps, axis: int) -> np.ndarray[Any, Any]:
    """Weighted sum of gathered slices along ``axis`` (float32)."""
    index, weight = taps
    shape = [1] * image.ndim
    shape[axis] = index.shape[0]
    # uint8 * float32 weights lands in float32 directly: no separate conversion pass.
    acc: np.ndarray[Any, Any] = np.multiply(
        np.take(image, index[:, 0], axis=axis), weight[:, 0].reshape(shape), dtype=np.float32
    )
    if index.shape[1] > 1:
        part = np.empty_like(acc)
        for k in range(1, index.shape[1]):
            np.multiply(
                np.take(image, index[:, k], axis=axis), weight[:, k].reshape(shape), out=part
            )
            acc += part
    return acc


def resize(
    image: np.ndarray[Any, Any], size: tuple[int, int], interpolation: Interpolation = "area"
) -> np.ndarray[Any, Any]:
    """``image`` ``(H, W, ...)`` resized to ``size`` ``(height, width)`` (one-off; see
    :class:`Resampler` to reuse the taps)."""
    return Resampler(image.shape[:2], size, interpolation)(image)
