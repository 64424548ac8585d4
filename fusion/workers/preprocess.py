"""Vectorised image preprocessing into reused buffers.

:class:`ImagePreprocess` is a ready-made ``preprocess`` for
:class:`BatchWorker`: it takes ``(H, W, 3)`` uint8 frames (what
``VideoSource`` yields), resizes them by nearest-neighbour sampling and
normalises the whole batch in one numpy pass straight into an ``NCHW``
float32 buffer.

The resize is one ``np.take`` per frame with precomputed flat byte indices
(cached per input size) that also reorders ``HWC`` to ``CHW``, into a reused
uint8 staging buffer. It is about five times cheaper than fancy indexing with
row and column index arrays (0.08 against 0.40 ms for a 1280x720 frame to
224x224), and both hold the GIL, which on a CPU-only machine is shared with
the event loop and the decoder's Python side. Frames that are not C-contiguous
uint8 take the fancy-indexing path.

Buffers are reused from a small ring instead of allocated per batch. A buffer
is in use from preprocessing until its batch's ``session.run`` returns, and a
worker has at most ``replicas + 1`` batches in flight, so the ring needs at
least ``replicas + 2`` buffers; the default 4 covers two replicas.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fusion.errors import FrameFormatError
from fusion.frames import Frame, FrameGroup

_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


class ImagePreprocess:
    """``items -> float32 [N, 3, height, width]``, normalised, in a reused buffer."""

    def __init__(
        self,
        size: tuple[int, int] = (224, 224),
        *,
        mean: Sequence[float] = _IMAGENET_MEAN,
        std: Sequence[float] = _IMAGENET_STD,
        max_batch: int = 16,
        buffers: int = 4,
    ) -> None:
        self.size = size
        # x / 255 - mean) / std  ==  x * scale + bias, per channel
        std_a = np.asarray(std, np.float32)
        self._scale = (1.0 / (255.0 * std_a)).reshape(1, 3, 1, 1)
        self._bias = (-np.asarray(mean, np.float32) / std_a).reshape(1, 3, 1, 1)
        self.max_batch = max_batch
        self._ring = [np.empty((max_batch, 3, *size), np.float32) for _ in range(buffers)]
        self._staging = [np.empty((max_batch, 3, *size), np.uint8) for _ in range(buffers)]
        self._next = 0
        self._lock = threading.Lock()
        self._index_cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._flat_cache: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, items: list[Any]) -> np.ndarray:
        n = len(items)
        if n > self.max_batch:
            raise ValueError(f"batch of {n} exceeds this preprocess's max_batch {self.max_batch}")
        with self._lock:
            slot = self._next
            self._next = (slot + 1) % len(self._ring)
        buf = self._ring[slot][:n]
        staging = self._staging[slot][:n]
        for i, item in enumerate(items):
            image = self._image(item)
            if image.dtype == np.uint8 and image.flags.c_contiguous:
                np.take(image.reshape(-1), self._flat_index(image.shape[:2]), out=staging[i])
            else:
                staging[i] = self.resize(item).transpose(2, 0, 1)
        np.multiply(staging, self._scale, out=buf)
        buf += self._bias
        return buf

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
            rows, cols = self._rows_cols(key)
            width = key[1]
            channels = np.arange(3, dtype=np.intp)[:, None, None]
            index = self._flat_cache[key] = (rows * width + cols) * 3 + channels
        return index

    def _rows_cols(self, key: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        rows_cols = self._index_cache.get(key)
        if rows_cols is None:
            h, w = self.size
            rows = (np.arange(h) * key[0] // h).astype(np.intp)
            cols = (np.arange(w) * key[1] // w).astype(np.intp)
            rows_cols = self._index_cache[key] = (rows[:, None], cols[None, :])
        return rows_cols

    def resize(self, item: Any) -> np.ndarray:
        """Nearest-neighbour resize of one frame's ``(H, W, 3)`` uint8 image to ``size``."""
        image = self._image(item)
        rows, cols = self._rows_cols(image.shape[:2])
        resized: np.ndarray = image[rows, cols]
        return resized


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


def group_input(
    sensor: str,
    kind: str = "raw",
    *,
    size: tuple[int, int] = (224, 224),
    points: int = 2048,
    max_batch: int = 64,
) -> Callable[[list[Any]], np.ndarray]:
    """A ``preprocess`` that feeds one sensor's frame of each item (group or frame).

    ``kind``: ``"image"`` (resize + normalise, :class:`ImagePreprocess`),
    ``"points"`` (x, y, z as ``[N, points, 3]``) or ``"raw"`` (``data`` stacked).
    """
    image = ImagePreprocess(size, max_batch=max_batch) if kind == "image" else None

    def member(item: Any) -> Frame:
        frame = item.frames.get(sensor) if isinstance(item, FrameGroup) else item
        if not isinstance(frame, Frame):
            key = getattr(item, "t", None)
            raise FrameFormatError(
                sensor=sensor,
                seq=None,
                expected=f"one {sensor!r} frame in the group at t={key}",
                found=type(frame).__name__,
            )
        return frame

    def preprocess(items: list[Any]) -> np.ndarray:
        frames = [member(item) for item in items]
        if image is not None:
            return image(frames)
        if kind == "points":
            return points_batch(frames, points)
        return np.stack([np.asarray(f.data) for f in frames])

    return preprocess
