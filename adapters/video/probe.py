"""Opening a video input: URL kinds, error mapping, and what the stream is.

:func:`open_input` is the one place PyAV's open errors become
:class:`~fusion.errors.SourceOpenError` with a sentence a user can act on
("no such file", "not a video container", "has no video stream 2"), and
:func:`is_live` decides from a URL whether it is a live stream.
:func:`probe_video` answers "what is in this file" without decoding, for
``hyperframes info`` and for tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import av.error
from av.container import InputContainer
from av.video.stream import VideoStream

from fusion.errors import SourceOpenError

LIVE_SCHEMES: frozenset[str] = frozenset(
    {"rtsp", "rtsps", "rtmp", "rtmps", "rtp", "srt", "udp", "tcp", "mmsh", "mmst"}
)
"""URL schemes treated as live. ``http(s)`` is not (a web file is a file); pass ``live=True``."""


def is_live(url: str, input_format: str | None = None) -> bool:
    """Whether ``url`` names a live stream: a live scheme, a capture device or format."""
    scheme, sep, _ = url.partition("://")
    if sep and scheme.lower() in LIVE_SCHEMES:
        return True
    if input_format in ("v4l2", "video4linux2", "dshow", "avfoundation", "x11grab", "kmsgrab"):
        return True
    return url.startswith("/dev/video")


def is_url(url: str) -> bool:
    """Whether ``url`` has a scheme (``x://``) rather than naming a local file."""
    return "://" in url


@dataclass(frozen=True, slots=True)
class VideoInfo:
    """What one video stream of an input is, as the container describes it."""

    url: str
    """The input as given."""
    stream_index: int
    """Which video stream (0 = the first video stream, not the container's stream 0)."""
    video_streams: int
    """How many video streams the input has."""
    codec: str
    """Decoder name (``"h264"``, ``"hevc"``, ``"ffv1"``...)."""
    width: int
    height: int
    pix_fmt: str | None
    """The decoder's native pixel format (``"yuv420p"``...)."""
    time_base: Fraction
    """Unit of the stream's PTS."""
    average_rate: Fraction | None
    """Mean frame rate, if known (variable-rate files have one too: it is a mean)."""
    start_pts: int | None
    """PTS of the first frame, in ``time_base``."""
    duration_ns: int | None
    """Stream duration, if the container knows it."""
    frames: int
    """Frame count from the container header (0 when unknown)."""
    bit_rate: int | None
    live: bool

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe form (rationals as ``"num/den"`` strings)."""
        return {
            "url": self.url,
            "stream_index": self.stream_index,
            "video_streams": self.video_streams,
            "codec": self.codec,
            "width": self.width,
            "height": self.height,
            "pix_fmt": self.pix_fmt,
            "time_base": str(self.time_base),
            "average_rate": None if self.average_rate is None else str(self.average_rate),
            "start_pts": self.start_pts,
            "duration_ns": self.duration_ns,
            "frames": self.frames,
            "bit_rate": self.bit_rate,
            "live": self.live,
        }


def check_path(url: str, input_format: str | None) -> None:
    """Fail early, with a clear message, for a local file that does not exist."""
    if is_url(url) or input_format is not None or url.startswith("/dev/"):
        return
    if not os.path.exists(url):
        raise SourceOpenError(f"video file {url!r} does not exist")
    if os.path.isdir(url):
        raise SourceOpenError(f"video file {url!r} is a directory")


def open_input(
    url: str,
    *,
    input_format: str | None = None,
    options: dict[str, str] | None = None,
    timeout: tuple[float | None, float | None] | None = None,
    hwaccel: Any = None,
) -> InputContainer:
    """``av.open`` for reading, with errors mapped to :class:`SourceOpenError`."""
    try:
        return av.open(
            url,
            "r",
            format=input_format,
            options=dict(options or {}),
            timeout=timeout,
            hwaccel=hwaccel,
        )
    except av.error.FileNotFoundError as err:
        raise SourceOpenError(f"video input {url!r} does not exist") from err
    except av.error.InvalidDataError as err:
        raise SourceOpenError(
            f"{url!r} is not a video FFmpeg can read (unrecognised or damaged container)"
        ) from err
    except (av.error.ProtocolNotFoundError, av.error.DemuxerNotFoundError) as err:
        raise SourceOpenError(f"cannot open {url!r}: {err}") from err
    except av.error.FFmpegError as err:
        raise SourceOpenError(f"cannot open {url!r}: {err}") from err


def select_stream(container: InputContainer, url: str, index: int) -> VideoStream:
    """The ``index``-th video stream, or a :class:`SourceOpenError` saying what there is."""
    videos = container.streams.video
    if not videos:
        kinds: list[str] = sorted({str(s.type) for s in container.streams}) or ["none"]
        raise SourceOpenError(f"{url!r} has no video stream (streams: {', '.join(kinds)})")
    if not 0 <= index < len(videos):
        raise SourceOpenError(
            f"{url!r} has {len(videos)} video stream(s); video stream {index} was requested"
        )
    stream = videos[index]
    if stream.codec_context is None:
        raise SourceOpenError(
            f"{url!r}: no decoder for video stream {index} (codec id {stream.codec.name!r})"
        )
    return stream


def describe(container: InputContainer, stream: VideoStream, url: str, live: bool) -> VideoInfo:
    """:class:`VideoInfo` of an opened stream."""
    tb = stream.time_base or Fraction(1, 1_000_000)
    duration_ns = None
    if stream.duration is not None:
        duration_ns = round(stream.duration * tb * 1_000_000_000)
    elif container.duration is not None:
        duration_ns = container.duration * 1000  # AV_TIME_BASE is microseconds
    ctx = stream.codec_context
    return VideoInfo(
        url=url,
        stream_index=list(container.streams.video).index(stream),
        video_streams=len(container.streams.video),
        codec=ctx.name,
        width=ctx.width,
        height=ctx.height,
        pix_fmt=ctx.pix_fmt,
        time_base=Fraction(tb),
        average_rate=None if stream.average_rate is None else Fraction(stream.average_rate),
        start_pts=stream.start_time,
        duration_ns=duration_ns,
        frames=stream.frames or 0,
        bit_rate=stream.bit_rate or ctx.bit_rate or None,
        live=live,
    )


def probe_video(url: str, *, stream: int = 0, input_format: str | None = None) -> VideoInfo:
    """Describe a video input without decoding it (blocking; run it off the event loop)."""
    check_path(url, input_format)
    container = open_input(url, input_format=input_format)
    try:
        return describe(
            container, select_stream(container, url, stream), url, is_live(url, input_format)
        )
    finally:
        container.close()
