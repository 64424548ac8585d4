"""Vectorised image preprocessing into reused buffers.

:class:`ImagePreprocess` is a ready-made ``preprocess`` for
:class:`BatchWorker`: it takes ``(H, W, 3)`` uint8 frames (what
``VideoSource`` yields), resizes them to the model's input size with the
filter the model was trained with (``interpolation``: ``"area"`` by default,
``"bilinear"`` or ``"nearest"``; OpenCV's ``INTER_AREA``/``INTER_LINEAR``/
``INTER_NEAREST`` within one grey level, see :mod:`fusion.workers._resize`)
and normalises the whole batch in one numpy pass straight into an ``NCHW``
float32 buffer.

Where the resize happens: a frame already at the model's size costs one
``HWC -> CHW`` copy. That is the fast path, and what :func:`fuse_resize`
arranges (and :class:`~fusion.Pipeline` calls it): a source that can resize
while it decodes (``VideoSource`` does it in the same swscale pass as the
colour conversion, with the same filter) is asked to deliver frames at the
model's size, so the full-size RGB image is never made. Frames of another
size are resized here (the compiled kernel of :mod:`fusion.workers._resize`,
under ``cv2.resize``'s cost, GIL released). ``worker.stream(source)`` (a
``Source``, not its frames) asks the source first, as the ``Pipeline`` does.
``"nearest"`` is one ``np.take`` per frame with precomputed flat byte indices
that also reorder ``HWC`` to ``CHW`` (0.08 ms for 1280x720 -> 224x224), but
it aliases: use it only for a model trained that way.

Buffers are reused from a small ring instead of allocated per batch, each
starting on a 64-byte boundary (:mod:`fusion._buffers`); every thread that
calls the preprocess has its own ring (``buffers`` each, default 2). A buffer
is in use from preprocessing until its batch's ``session.run`` returns. A
worker with several replicas prepares each batch on the replica thread that
runs it, so a thread's buffer is free again by its next call; with one
replica a preprocessing thread has at most two batches in flight, finished in
order. (One ring shared by every thread was overwritten while a large batch
still ran, once another replica had come round it with small batches.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fusion._buffers import aligned_empty
from fusion._frames import Frame, FrameGroup
from fusion.errors import FrameFormatError
from fusion.workers._resize import Interpolation, Resampler, check_interpolation, nearest_index
from fusion.workers._resize_plan import ImageInput, apply_resize_plan, image_input_of, plan_resize

if TYPE_CHECKING:
    from fusion._source import Source

_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


class ImagePreprocess:
    """``items -> float32 [N, 3, height, width]``, resized, normalised, in a reused buffer.

    ``size`` is ``(height, width)``; ``interpolation`` the resize filter
    (``"area"``, ``"bilinear"`` or ``"nearest"``, see :mod:`fusion.workers._resize`).
    """

    def __init__(
        self,
        size: tuple[int, int] = (224, 224),
        *,
        interpolation: Interpolation = "area",
        mean: Sequence[float] = _IMAGENET_MEAN,
        std: Sequence[float] = _IMAGENET_STD,
        max_batch: int = 16,
        buffers: int = 2,
    ) -> None:
        self.size = size
        self.interpolation = check_interpolation(interpolation)
        # x / 255 - mean) / std  ==  x * scale + bias, per channel
        std_a = np.asarray(std, np.float32)
        self._scale = (1.0 / (255.0 * std_a)).reshape(1, 3, 1, 1)
        self._bias = (-np.asarray(mean, np.float32) / std_a).reshape(1, 3, 1, 1)
        if buffers < 1:
            raise ValueError(f"buffers must be >= 1, got {buffers}")
        self.max_batch = max_batch
        self.buffers = buffers
        self._local = threading.local()  # this thread's ring: buffers, staging, next slot
        self._resamplers: dict[tuple[int, int], Resampler] = {}
        self._flat_cache: dict[tuple[int, int], np.ndarray] = {}

    @property
    def image_input(self) -> ImageInput:
        """The image this preprocess wants (what :func:`fuse_resize` asks a source for)."""
        return ImageInput(self.size, self.interpolation)

    def __call__(self, items: list[Any]) -> np.ndarray:
        n = len(items)
        if n > self.max_batch:
            raise ValueError(f"batch of {n} exceeds this preprocess's max_batch {self.max_batch}")
        local = self._local
        if not hasattr(local, "ring"):
            self._make_ring()
        slot = local.next
        local.next = (slot + 1) % self.buffers
        buf: np.ndarray = local.ring[slot][:n]
        staging: np.ndarray = local.staging[slot][:n]
        for i, item in enumerate(items):
            image = self._image(item)
            if image.shape[:2] == self.size:
                np.copyto(staging[i], image.transpose(2, 0, 1), casting="unsafe")
            elif (
                self.interpolation == "nearest"
                and image.dtype == np.uint8
                and image.flags.c_contiguous
            ):
                np.take(image.reshape(-1), self._flat_index(image.shape[:2]), out=staging[i])
            else:
                staging[i] = self.resize(item).transpose(2, 0, 1)
        np.multiply(staging, self._scale, out=buf)
        buf += self._bias
        return buf

    def _make_ring(self) -> None:
        shape = (self.max_batch, 3, *self.size)
        self._local.ring = [aligned_empty(shape, np.float32) for _ in range(self.buffers)]
        self._local.staging = [aligned_empty(shape, np.uint8) for _ in range(self.buffers)]
        self._local.next = 0

    @property
    def _ring(self) -> list[np.ndarray]:
        """The calling thread's output buffers."""
        if not hasattr(self._local, "ring"):
            self._make_ring()
        return list(self._local.ring)

    @property
    def _staging(self) -> list[np.ndarray]:
        """The calling thread's uint8 staging buffers."""
        if not hasattr(self._local, "ring"):
            self._make_ring()
        return list(self._local.staging)

    def _image(self, item: Any) -> np.ndarray:
        image = item.data if isinstance(item, Frame) else item
        if not (isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[2] == 3):
            sensor, seq = (item.sensor, item.seq) if isinstance(item, Frame) else (None, None)
            found = getattr(image, "shape", type(image).__name__)
            raise FrameFormatError(
                sensor=sensor, seq=seq, expected="an (H, W, 3) uint8 image", found=f"{found}"
            )
        return image

    def _flat_index(self, key: tuple[int, int]) -> np.ndarray:
        """Byte offsets into a C-contiguous ``(H, W, 3)`` image of each ``CHW`` output pixel."""
        index = self._flat_cache.get(key)
        if index is None:
            h, w = self.size
            rows = nearest_index(key[0], h)[:, None]
            cols = nearest_index(key[1], w)[None, :]
            channels = np.arange(3, dtype=np.intp)[:, None, None]
            index = self._flat_cache[key] = (rows * key[1] + cols) * 3 + channels
        return index

    def resize(self, item: Any) -> np.ndarray:
        """One frame's ``(H, W, 3)`` image resized to ``size`` with ``interpolation``, uint8."""
        image = self._image(item)
        key = image.shape[:2]
        resampler = self._resamplers.get(key)
        if resampler is None:
            resampler = self._resamplers[key] = Resampler(key, self.size, self.interpolation)
        out = np.empty((*self.size, 3), np.uint8)
        if image.dtype != np.uint8:
            image = np.clip(image, 0, 255)
        return resampler(image, out)


def fuse_resize(sources: Iterable[Source], preprocess: object) -> dict[str, str]:
    """Ask the sources feeding ``preprocess`` to deliver its image size while decoding.

    ``preprocess`` is an :class:`~fusion.workers._resize_plan.ImageConsumer`
    (:class:`ImagePreprocess`, :func:`group_input` with ``kind="image"``);
    others are left alone. The sources are the one of ``image_input.sensor``,
    or the only source when the sensor is not named
    (:func:`~fusion.workers._resize_plan.plan_resize`). Returns, per sensor
    asked, what happens: where the resize runs, or why the source could not
    take it (the preprocess then resizes, same filter, at numpy's cost). Each
    outcome is also logged.
    """
    wanted = image_input_of(preprocess)
    if wanted is None:
        return {}
    sources = list(sources)
    return apply_resize_plan(plan_resize([wanted], [s.name for s in sources]), sources)


def points_batch(frames: list[Frame], points: int) -> np.ndarray:
    """``float32 [N, points, 3]`` of each frame's x, y, z: evenly subsampled, zero padded."""
    out = np.zeros((len(frames), points, 3), np.float32)
    for i, frame in enumerate(frames):
        data = frame.data
        names = getattr(getattr(data, "dtype", None), "names", None) or ()
        if not {"x", "y", "z"} <= set(names):
            raise FrameFormatError(
                sensor=frame.sensor,
                seq=frame.seq,
                expected="a structured point array with x, y, z",
                found=f"{getattr(data, 'dtype', type(data).__name__)}",
            )
        step = max(1, -(-len(data) // points))
        picked = data[::step][:points]
        out[i, : len(picked), 0] = picked["x"]
        out[i, : len(picked), 1] = picked["y"]
        out[i, : len(picked), 2] = picked["z"]
    return out


class GroupInput:
    """The ``preprocess`` :func:`group_input` builds: one sensor's frame of each item."""

    def __init__(
        self,
        sensor: str,
        kind: str,
        image: ImagePreprocess | None,
        points: int,
    ) -> None:
        self.sensor = sensor
        self.kind = kind
        self._image = image
        self._points = points
        self.image_input: ImageInput | None = (
            None if image is None else ImageInput(image.size, image.interpolation, sensor)
        )
        """The image wanted, naming ``sensor`` (for :func:`fuse_resize`); ``None`` unless
        ``kind="image"``."""

    def _member(self, item: Any) -> Frame:
        frame = item.frames.get(self.sensor) if isinstance(item, FrameGroup) else item
        if not isinstance(frame, Frame):
            key = getattr(item, "t", None)
            raise FrameFormatError(
                sensor=self.sensor,
                seq=None,
                expected=f"one {self.sensor!r} frame in the group at t={key}",
                found=type(frame).__name__,
            )
        return frame

    def __call__(self, items: list[Any]) -> np.ndarray:
        frames = [self._member(item) for item in items]
        if self._image is not None:
            return self._image(frames)
        if self.kind == "points":
            return points_batch(frames, self._points)
        return np.stack([np.asarray(f.data) for f in frames])


def group_input(
    sensor: str,
    kind: str = "raw",
    *,
    size: tuple[int, int] = (224, 224),
    interpolation: Interpolation = "area",
    points: int = 2048,
    max_batch: int = 64,
) -> GroupInput:
    """A ``preprocess`` that feeds one sensor's frame of each item (group or frame).

    ``kind``: ``"image"`` (resize + normalise, :class:`ImagePreprocess`; its
    ``image_input`` names the sensor for :func:`fuse_resize`),
    ``"points"`` (x, y, z as ``[N, points, 3]``) or ``"raw"`` (``data`` stacked).
    """
    image = (
        ImagePreprocess(size, interpolation=interpolation, max_batch=max_batch)
        if kind == "image"
        else None
    )
    return GroupInput(sensor, kind, image, points)
