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
* every other case: swscale writes into a frame from a buffer pool and the
  array is a zero-copy view of it. The pool belongs to a small libavfilter
  graph (``buffer -> scale -> format -> buffersink``, see :class:`_ScaleGraph`)
  that does the same swscale pass PyAV's reformatter does, pixel for pixel;
  a buffer goes back to the pool when the last view of it is dropped, in any
  thread. Why not PyAV's reformatter: it allocates a fresh output frame every
  time, and a multi-megabyte block that is freed by a consumer and allocated
  again by the decoder is often handed back to the kernel in between, so
  every frame paid 50-350 page faults (0.1-0.5 ms of system time per 720p
  frame in the inference pipeline, on the decoder's critical path). The pool
  holds at most as many buffers as were ever in use at once, and is freed
  with the converter. The graph is used for colour conversion into
  ``rgb24``/``bgr24``/``gray`` at the input's size, where its pixels equal the
  reformatter's; resizing, conversion into ``yuv420p``, interlaced frames and
  formats libavfilter refuses go through the reformatter as before (resized
  outputs are small, so their allocations cost little). Shrunk into RGB or BGR to
  half the pixels or fewer, the reformatter writes planar RGB (``gbrp``) and the
  planes are interleaved into an aligned array: swscale then brings subsampled
  chroma to full resolution before shrinking (into packed RGB it scales the
  chroma on its own grid: colour edges off by tens of levels), and the pass
  costs less (a 720p frame to 224x224 with area: 0.38 ms + 0.05 ms
  interleaving against 0.56 ms; to 640x360 about the same; to 960x540 or
  larger, planar would cost up to three times as much, so packed stays).
  With ``reuse_buffers=True`` the converted image is instead copied into a
  small pool of numpy arrays that are reused once every consumer has dropped
  them (see :class:`BufferPool`), for consumers that want numpy-owned memory.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, cast

import av
import av.error
import av.filter
import numpy as np
from av.video.reformatter import VideoReformatter

from adapters.video._orientation import UPRIGHT, Orientation
from fusion import aligned_empty
from fusion.errors import ConfigError

PixelFormat = Literal["rgb24", "bgr24", "gray", "yuv420p"]
PIXEL_FORMATS: tuple[PixelFormat, ...] = ("rgb24", "bgr24", "gray", "yuv420p")
_INTERPOLATIONS = ("FAST_BILINEAR", "BILINEAR", "BICUBIC", "POINT", "AREA", "LANCZOS")
_SWS_FLAGS = {"POINT": "neighbor"}
"""swscale flag names (``scale`` filter) that differ from the reformatter's interpolation names."""

Payload = np.ndarray[Any, Any] | dict[str, np.ndarray[Any, Any]]
_GBRP_ORDER = {"rgb24": (2, 0, 1), "bgr24": (1, 0, 2)}
"""Planar ``gbrp``'s planes (green, blue, red) in each packed format's channel order."""


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
            # References: the list, the loop variable, getrefcount's argument. The
            # buffer is an aligned view of a larger block (fusion._buffers), and numpy
            # points every view of it at that block: count the block's references too
            # (the buffer's own, getrefcount's argument).
            if sys.getrefcount(buf) <= 3 and sys.getrefcount(buf.base) <= 2:
                return buf
        fresh = aligned_empty(self.shape, self.dtype)
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
            raise ConfigError(
                f"pixel_format must be one of {', '.join(PIXEL_FORMATS)}, got {pixel_format!r}"
            )
        if size is not None:
            w, h = size
            if w <= 0 or h <= 0:
                raise ConfigError(f"size must be positive (width, height), got {size!r}")
            if pixel_format == "yuv420p" and (w % 2 or h % 2):
                raise ConfigError(f"yuv420p needs an even width and height, got {size!r}")
        if interpolation.upper() not in _INTERPOLATIONS:
            raise ConfigError(
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
        self._graph: _ScaleGraph | None = None
        self._no_graph: set[tuple[Any, ...]] = set()  # inputs the graph refused
        self.orientation: Orientation = UPRIGHT
        """How to turn frames upright (the decoder sets it from the first frame's display
        matrix); applied in the same filter pass as the conversion where it can be."""

    def convert(self, frame: av.VideoFrame) -> Payload:
        """The frame's pixels in the requested format, size and orientation (GIL released
        while scaling). ``size`` is the size of the output, after turning it upright."""
        width, height = self.size if self.size is not None else (None, None)
        turn = self.orientation
        if turn.transpose and width is not None:
            width, height = height, width  # scale the stored picture, then turn it
        turned = turn.identity
        if (
            frame.format.name == self.pixel_format
            and (width is None or (width, height) == (frame.width, frame.height))
            and turned
        ):
            out = frame  # already in the requested layout: zero-copy, decoder-pooled memory
        else:
            out, turned = self._reformat(frame, width, height)
        if self.pixel_format == "yuv420p":
            planes = {name: _plane_view(out, i) for i, name in enumerate(("y", "u", "v"))}
            if not turned:
                planes = {n: np.ascontiguousarray(turn.apply(p)) for n, p in planes.items()}
            if self.reuse_buffers:
                return {name: self._pooled(name, view) for name, view in planes.items()}
            return planes
        if out.format.name == "gbrp":
            array = _interleaved(out, _GBRP_ORDER[self.pixel_format])
        else:
            array = cast("np.ndarray[Any, Any]", out.to_ndarray())
        if not turned:
            array = np.ascontiguousarray(turn.apply(array))
        if self.reuse_buffers:
            return self._pooled("image", array)
        return array

    def _reformat(
        self, frame: av.VideoFrame, width: int | None, height: int | None
    ) -> tuple[Any, bool]:
        """The converted frame, and whether it is already turned by :attr:`orientation`."""
        key = (
            frame.width,
            frame.height,
            frame.format.name,
            frame.colorspace,
            frame.color_range,
            frame.interlaced_frame,
            self.orientation,
        )
        graph = self._graph
        if graph is None or graph.key != key:
            graph = self._graph = self._make_graph(key, width, height)
        if graph is not None:
            try:
                return graph.scale(frame), True
            except (av.error.FFmpegError, ValueError):
                # The graph's state is unknown after a failure: reformat this input from now on.
                self._no_graph.add(key)
                self._graph = None
        # Shrunk into packed RGB, swscale scales subsampled chroma on its own grid and
        # misplaces colour edges (tens of levels); into planar RGB it brings chroma to
        # full resolution first, and costs as much or less down to half the pixels (to
        # more pixels, up to three times as much with the interleaving).
        shrinking = (
            width is not None
            and height is not None
            and 2 * width * height <= frame.width * frame.height
        )
        out = self._reformatter.reformat(
            frame,
            width=width,
            height=height,
            format="gbrp" if shrinking and self.pixel_format in _GBRP_ORDER else self.pixel_format,
            interpolation=self.interpolation,
            threads=self.threads,
        )
        return out, self.orientation.identity

    def _make_graph(
        self, key: tuple[Any, ...], width: int | None, height: int | None
    ) -> _ScaleGraph | None:
        """A pooled graph for colour conversion at the input's size into RGB/gray, else None."""
        if key in self._no_graph or key[5]:  # interlaced: the reformatter knows about fields
            return None
        if (width is not None and width != key[0]) or (height is not None and height != key[1]):
            # Resizing: the filter places subsampled chroma differently from the
            # reformatter (off by a few levels), so keep the reformatter's pixels.
            return None
        if self.pixel_format == "yuv420p" and (key[2] != "yuv420p" or key[6].identity):
            # Into YUV the filter picks its own output matrix and range where the
            # reformatter keeps the input's; from yuv420p it only turns the picture.
            return None
        try:
            return _ScaleGraph(
                key,
                self.pixel_format,
                _SWS_FLAGS.get(self.interpolation, self.interpolation.lower()),
                self.threads,
            )
        except (av.error.FFmpegError, ValueError):
            self._no_graph.add(key)
            return None

    def _pooled(self, key: str, view: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        pool = self._pools.get(key)
        if pool is None or pool.shape != view.shape:
            pool = self._pools[key] = BufferPool(view.shape, view.dtype, self._pool_size)
        buf = pool.acquire()
        np.copyto(buf, view)
        return buf

    def release(self) -> None:
        """Free the conversion graph and its pooled buffers (those still held are freed
        when dropped). The converter still works afterwards; it builds a new graph."""
        self._graph = None

    @property
    def pool_misses(self) -> int:
        """Arrays allocated because every pooled buffer was still in use."""
        return sum(p.misses for p in self._pools.values())


class _ScaleGraph:
    """One swscale colour conversion as a libavfilter graph, so output frames come from a pool.

    ``key`` describes the input it was built for (size, pixel format,
    colorspace, range, interlacing); the buffer source is told the input's
    colorspace and range so that libavfilter sees no parameter change and
    scales exactly as the reformatter does. One graph per thread: it is used
    only by the decoder thread that owns the converter.
    """

    __slots__ = ("_graph", "_sink", "_source", "key")

    def __init__(
        self,
        key: tuple[Any, ...],
        pixel_format: str,
        flags: str,
        threads: int,
    ) -> None:
        width, height, in_format, colorspace, color_range = key[:5]
        turn: Orientation = key[6]
        self.key = key
        graph = av.filter.Graph()
        # swscale's own threads (below) do the conversion; a turn is a slice-threaded
        # filter, given the same threads as ffmpeg gives its filters (one per core).
        graph.threads = 0 if turn.filters() else 1
        source = graph.add(
            "buffer",
            f"video_size={width}x{height}:pix_fmt={in_format}:time_base=1/1"
            f":pixel_aspect=1/1:colorspace={int(colorspace)}:range={int(color_range)}",
        )
        # Turn first, then convert, as ffmpeg's autorotate does (and on the smaller YUV).
        chain = [graph.add(name, args or None) for name, args in turn.filters()]
        out_w, out_h = turn.shape(width, height)
        if in_format != pixel_format:
            chain.append(graph.add("scale", f"w={out_w}:h={out_h}:flags={flags}:threads={threads}"))
        elif turn.filters() == [("vflip", "")]:
            # vflip alone only walks the rows backwards (a negative stride): copy it out.
            chain.append(graph.add("copy"))
        chain.append(graph.add("format", pixel_format))
        sink = graph.add("buffersink")
        last = source
        for node in chain:
            last.link_to(node)
            last = node
        last.link_to(sink)
        graph.configure()
        self._graph, self._source, self._sink = graph, source, sink

    def scale(self, frame: av.VideoFrame) -> av.VideoFrame:
        """``frame`` converted, in a pooled buffer (GIL released while scaling)."""
        self._source.push(frame)
        return cast(av.VideoFrame, self._sink.pull())


def _interleaved(frame: av.VideoFrame, order: tuple[int, int, int]) -> np.ndarray[Any, Any]:
    """A planar RGB frame as a ``(height, width, 3)`` array, channels from planes ``order``."""
    out = aligned_empty((frame.height, frame.width, 3), np.uint8)
    for channel, index in enumerate(order):
        out[:, :, channel] = _plane_view(frame, index)
    return out


def _plane_view(frame: av.VideoFrame, index: int) -> np.ndarray[Any, Any]:
    """Plane ``index`` of an 8-bit planar frame as a ``(height, width)`` view, padding cut."""
    plane = frame.planes[index]
    rows = np.frombuffer(memoryview(plane), np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, : plane.width]
