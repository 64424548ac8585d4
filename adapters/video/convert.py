"""Decoded picture -> numpy payload: pixel format, optional resize, buffer reuse.

Conversion and scaling both go through one cached swscale context (PyAV's
:class:`~av.video.reformatter.VideoReformatter`), so a resize costs nothing on
top of the colour conversion it already does, and swscale releases the GIL
while it works.

Payloads by ``pixel_format``:

* ``"rgb24"``, ``"bgr24"``: ``uint8`` array ``(height, width, 3)``;
* ``"gray"``: ``uint8`` array ``(height, width)``;
* ``"yuv420p"``: dict of ``uint8`` planes ``{"y": (h, w), "u": (h/2, w/2), "v": (h/2, w/2)}``.

Where the memory comes from, and why steady state does not grow:

* ``yuv420p`` without resize, from a decoder that already outputs it (H.264,
  HEVC 8-bit, VP9...): the planes are zero-copy views of the decoder's frame,
  whose buffers come from libavcodec's own buffer pool. Nothing is allocated
  or copied per frame.
* every other case: swscale writes a new frame that PyAV allocates, and the
  array is a zero-copy view of it (PyAV offers no way to scale into a caller's
  buffer). The allocator recycles these equal-sized blocks, so memory stays
  flat. With ``reuse_buffers=True`` the converted image is instead copied
  into a small pool of numpy arrays that are reused once every consumer has
  dropped them (see :class:`BufferPool`), trading one memcpy for zero
  long-lived allocations.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, cast

import av
import numpy as np
from av.video.reformatter import VideoReformatter

PixelFormat = Literal["rgb24", "bgr24", "gray", "yuv420p"]
PIXEL_FORMATS: tuple[PixelFormat, ...] = ("rgb24", "bgr24", "gray", "yuv420p")
_INTERPOLATIONS = ("FAST_BILINEAR", "BILINEAR", "BICUBIC", "POINT", "AREA", "LANCZOS")

Payload = np.ndarray[Any, Any] | dict[str, np.ndarray[Any, Any]]


class BufferPool:
    """Reusable numpy arrays of one shape, handed out again once nobody holds them.

    A buffer is free when the pool's own references are the only ones left
    (``sys.getrefcount``): a consumer holding the array, or any view of it,
    keeps it busy, so reuse can never overwrite data someone still reads. When
    every buffer is busy and the pool is at ``max_buffers``, a fresh array is
    allocated and not kept (counted in :attr:`misses`).
    """

    __slots__ = ("_buffers", "dtype", "max_buffers", "misses", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: Any = np.uint8, max_buffers: int = 8):
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.max_buffers = max_buffers
        self.misses = 0
        self._buffers: list[np.ndarray[Any, Any]] = []

    def acquire(self) -> np.ndarray[Any, Any]:
        """A buffer of ``shape`` nobody else references (contents undefined)."""
        for buf in self._buffers:
            # References: the list, the loop variable, getrefcount's argument.
            if sys.getrefcount(buf) <= 3:
                return buf
        fresh = np.empty(self.shape, self.dtype)
        if len(self._buffers) < self.max_buffers:
            self._buffers.append(fresh)
        else:
            self.misses += 1
        return fresh

    @property
    def size(self) -> int:
        """Buffers the pool owns."""
        return len(self._buffers)


class PixelConverter:
    """Turns decoded :class:`av.VideoFrame` objects into numpy payloads.

    ``size`` is ``(width, height)`` of the output, or ``None`` for the stream's
    size. ``threads`` is swscale's thread count (0: one per CPU).
    """

    def __init__(
        self,
        pixel_format: PixelFormat = "rgb24",
        *,
        size: tuple[int, int] | None = None,
        interpolation: str = "bilinear",
        threads: int = 1,
        reuse_buffers: bool = False,
        pool_size: int = 8,
    ) -> None:
        if pixel_format not in PIXEL_FORMATS:
            raise ValueError(
                f"pixel_format must be one of {', '.join(PIXEL_FORMATS)}, got {pixel_format!r}"
            )
        if size is not None:
            w, h = size
            if w <= 0 or h <= 0:
                raise ValueError(f"size must be positive (width, height), got {size!r}")
            if pixel_format == "yuv420p" and (w % 2 or h % 2):
                raise ValueError(f"yuv420p needs an even width and height, got {size!r}")
        if interpolation.upper() not in _INTERPOLATIONS:
            raise ValueError(
                f"interpolation must be one of {', '.join(i.lower() for i in _INTERPOLATIONS)}, "
                f"got {interpolation!r}"
            )
        self.pixel_format: PixelFormat = pixel_format
        self.size = size
        self.interpolation = interpolation.upper()
        self.threads = threads
        self.reuse_buffers = reuse_buffers
        self._pool_size = pool_size
        self._reformatter = VideoReformatter()
        self._pools: dict[str, BufferPool] = {}

    def convert(self, frame: av.VideoFrame) -> Payload:
        """The frame's pixels in the requested format and size (GIL released while scaling)."""
        width, height = self.size if self.size is not None else (None, None)
        if frame.format.name == self.pixel_format and (
            width is None or (width, height) == (frame.width, frame.height)
        ):
            out = frame  # already in the requested layout: zero-copy, decoder-pooled memory
        else:
            out = self._reformat(frame, width, height)
        if self.pixel_format == "yuv420p":
            planes = {name: _plane_view(out, i) for i, name in enumerate(("y", "u", "v"))}
            if self.reuse_buffers:
                return {name: self._pooled(name, view) for name, view in planes.items()}
            return planes
        array = cast("np.ndarray[Any, Any]", out.to_ndarray())
        if self.reuse_buffers:
            return self._pooled("image", array)
        return array

    def _reformat(self, frame: av.VideoFrame, width: int | None, height: int | None) -> Any:
        return self._reformatter.reformat(
            frame,
            width=width,
            height=height,
            format=self.pixel_format,
            interpolation=self.interpolation,
            threads=self.threads,
        )

    def _pooled(self, key: str, view: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        pool = self._pools.get(key)
        if pool is None or pool.shape != view.shape:
            pool = self._pools[key] = BufferPool(view.shape, view.dtype, self._pool_size)
        buf = pool.acquire()
        np.copyto(buf, view)
        return buf

    @property
    def pool_misses(self) -> int:
        """Arrays allocated because every pooled buffer was still in use."""
        return sum(p.misses for p in self._pools.values())


def _plane_view(frame: av.VideoFrame, index: int) -> np.ndarray[Any, Any]:
    """Plane ``index`` of an 8-bit planar frame as a ``(height, width)`` view, padding cut."""
    plane = frame.planes[index]
    rows = np.frombuffer(memoryview(plane), np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, : plane.width]
