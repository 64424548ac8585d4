"""Opening a video input: URL kinds, error mapping, and what the stream is.

:func:`open_input` is the one place PyAV's open errors become
:class:`~adapters.errors.SourceOpenError` with a sentence a user can act on
("no such file", "not a video container", "has no video stream 2"), and
:func:`is_live` decides from a URL whether it is a live stream.
:func:`probe_video` answers "what is in this file" without decoding, for
``hyperframes info`` and for tests.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import struct
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import av.error
from av.container import InputContainer
from av.sidedata.sidedata import SideData
from av.sidedata.sidedata import Type as SideDataType
from av.video.stream import VideoStream

from adapters.errors import SourceOpenError
from adapters.video._bitstream import shows_frame
from adapters.video._mp4box import edit_lists
from adapters.video._orientation import UPRIGHT, Orientation, from_matrix

LIVE_SCHEMES: frozenset[str] = frozenset(
    {
        "http",
        "https",
        "rtsp",
        "rtsps",
        "rtmp",
        "rtmps",
        "rtp",
        "srt",
        "udp",
        "tcp",
        "mmsh",
        "mmst",
    }
)
"""URL schemes treated as live: reconnect, ``t_arrival``, drop-oldest when behind.
``http(s)`` is included because cameras and encoders serve streams over it; a
video *file* on a web server is read with ``live=False``."""


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
    profile: str | None = None
    """Codec profile (``"High"``, ``"Main 10"``, ``"Profile 2"``...)."""
    bit_depth: int | None = None
    """Bits per sample of the native pixel format (8, 10, 12)."""
    color_range: str | None = None
    """``"tv"`` (limited), ``"pc"`` (full, e.g. ``yuvj420p``) or None when unstated."""
    color_space: str | None = None
    """The YUV matrix, by ffprobe's name (``"bt709"``, ``"bt2020nc"``...)."""
    color_transfer: str | None = None
    """Transfer function (``"arib-std-b67"`` = HLG, ``"smpte2084"`` = PQ)."""
    color_primaries: str | None = None
    orientation: Orientation = UPRIGHT
    """The display matrix and the turn that undoes it (see :mod:`adapters.video._orientation`)."""
    rotate: str = "auto"
    """What the source does with it: ``"auto"`` turns frames upright, ``"none"`` keeps them."""
    output_width: int = 0
    """Width of the frames the source yields (after rotation and ``size``)."""
    output_height: int = 0
    vfr: bool | None = None
    """Frame steps vary by more than one time-base tick (None: not measured)."""
    start_time_ns: int | None = None
    """The stream's start time (``start_pts``) in ns."""
    edit_list: bool | None = None
    """The MP4/MOV track has an edit list (None: not an MP4/MOV file)."""
    discarded_packets: int | None = None
    """Packets the container marks discard (edit list pre-roll) among those scanned."""
    packets_scanned: int = 0
    """How many packets :func:`scan` looked at for ``vfr`` and ``discarded_packets``."""

    @property
    def rotation(self) -> int | None:
        """Degrees counter-clockwise, as ffprobe prints it; None without a display matrix."""
        return None if self.orientation.matrix is None else self.orientation.rotation

    @property
    def hdr(self) -> bool:
        """PQ or HLG transfer: pixels converted to 8-bit are not tone-mapped."""
        return self.color_transfer in ("smpte2084", "arib-std-b67")

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
            "profile": self.profile,
            "bit_depth": self.bit_depth,
            "color_range": self.color_range,
            "color_space": self.color_space,
            "color_transfer": self.color_transfer,
            "color_primaries": self.color_primaries,
            "hdr": self.hdr,
            "rotation": self.rotation,
            "orientation": self.orientation.as_dict(),
            "rotate": self.rotate,
            "output_width": self.output_width,
            "output_height": self.output_height,
            "vfr": self.vfr,
            "start_time_ns": self.start_time_ns,
            "edit_list": self.edit_list,
            "discarded_packets": self.discarded_packets,
            "packets_scanned": self.packets_scanned,
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
    except av.error.ExitError as err:  # the interrupt callback: open timeout (or a stop)
        limit = timeout[0] if timeout else None
        within = f" within {limit:g} s" if limit is not None else ""
        raise SourceOpenError(f"cannot open {url!r}: no data received{within}") from err
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


@dataclass(frozen=True, slots=True)
class Scan:
    """What reading the start of a file tells beyond its headers (see :func:`scan`)."""

    orientation: Orientation = UPRIGHT
    vfr: bool | None = None
    discarded: int | None = None
    packets: int = 0
    pix_fmt: str | None = None
    """The first decoded frame's pixel format (the header's can be missing)."""


SCAN_PACKETS = 300
"""Packets :func:`scan` demuxes (not decodes) to measure frame steps and discard flags."""


def scan(
    container: InputContainer,
    stream: VideoStream,
    packets: int = SCAN_PACKETS,
    *,
    decode: bool = True,
) -> Scan:
    """Demux the first ``packets`` packets of ``stream`` and decode up to its first frame.

    The display matrix is stream side data that PyAV shows only on decoded
    frames, so the first frame is decoded; the rest is demuxed only.
    ``decode=False`` skips that decode (the caller reads the first frame itself
    and completes the description with :func:`with_first_frame`). Leaves
    ``container`` at an unknown position: use a container opened for this.
    """
    pts: list[int] = []
    discarded = 0
    first: av.VideoFrame | None = None
    ctx = stream.codec_context
    ctx.thread_count = 1
    codec = ctx.name
    n = 0
    try:
        for packet in container.demux(stream):
            if packet.size == 0:
                break
            n += 1
            if packet.is_discard:
                discarded += 1
            elif packet.pts is not None and presents(packet, codec):
                pts.append(packet.pts)
            if first is None and decode:
                try:
                    frames = ctx.decode(packet)
                except av.error.FFmpegError:
                    frames = []
                if frames:
                    first = frames[0]
            if n >= packets:
                break
        if first is None and decode:
            try:
                frames = ctx.decode(None)
                first = frames[0] if frames else None
            except av.error.FFmpegError:
                pass
    except (av.error.FFmpegError, OSError):
        pass
    orientation = UPRIGHT
    if first is not None:
        orientation = frame_orientation(first)
    return Scan(
        orientation=orientation,
        vfr=_variable_rate(pts),
        discarded=discarded,
        packets=n,
        pix_fmt=None if first is None else first.format.name,
    )


def presents(packet: av.Packet[Any], codec: str) -> bool:
    """Whether ``packet`` should give a frame: not discard, not a hidden VP8/VP9 frame.

    A container key frame always counts as shown (a hidden frame is never a
    key frame), so a stream of garbage flagged as key frames is all lost.
    """
    if packet.is_discard:
        return False
    if codec in ("vp8", "vp9") and not packet.is_keyframe:
        return shows_frame(codec, memoryview(packet))
    return True


def frame_orientation(frame: av.VideoFrame) -> Orientation:
    """The display matrix a decoded frame carries (FFmpeg attaches the stream's to each
    frame, and an image decoder its EXIF orientation)."""
    try:
        sides: Any = frame.side_data  # a Mapping keyed by Type (the stub says str)
        side = sides.get(SideDataType.DISPLAYMATRIX)
    except ValueError:
        # PyAV cannot name side data newer than itself (FFmpeg 8's EXIF block) and
        # refuses the whole list: fall back to the angle, which it reads directly.
        return _from_angle(round(frame.rotation))
    if isinstance(side, SideData):
        raw = bytes(side)
        if len(raw) == 36:
            return from_matrix(struct.unpack("<9i", raw))
    return UPRIGHT


def _from_angle(degrees: int) -> Orientation:
    """The matrix of a plain counter-clockwise turn (no mirror is known)."""
    if degrees % 360 == 0:
        return UPRIGHT
    rad = math.radians(degrees)
    one = 1 << 16
    cos, sin = round(math.cos(rad) * one), round(math.sin(rad) * one)
    return from_matrix((cos, -sin, 0, sin, cos, 0, 0, 0, 1 << 30))


def _variable_rate(pts: list[int]) -> bool | None:
    """Steps between sorted PTS differ by more than one tick (Matroska's 33/34 ms is not VFR)."""
    ordered = sorted(set(pts))
    if len(ordered) < 3:
        return None
    steps = [b - a for a, b in itertools.pairwise(ordered)]
    return max(steps) - min(steps) > 1


def describe(
    container: InputContainer,
    stream: VideoStream,
    url: str,
    live: bool,
    *,
    found: Scan | None = None,
    rotate: str = "auto",
    size: tuple[int, int] | None = None,
) -> VideoInfo:
    """:class:`VideoInfo` of an opened stream (``found``: what :func:`scan` read, if run)."""
    tb = stream.time_base or Fraction(1, 1_000_000)
    duration_ns = None
    if stream.duration is not None:
        duration_ns = round(stream.duration * tb * 1_000_000_000)
    elif container.duration is not None:
        duration_ns = container.duration * 1000  # AV_TIME_BASE is microseconds
    ctx = stream.codec_context
    found = found or Scan()
    pix_fmt = ctx.pix_fmt or found.pix_fmt
    orientation = found.orientation
    width, height = ctx.width, ctx.height
    if size is not None:
        out_w, out_h = size
    elif rotate == "auto":
        out_w, out_h = orientation.shape(width, height)
    else:
        out_w, out_h = width, height
    edit = None
    if "mp4" in container.format.name.split(",") or "mov" in container.format.name.split(","):
        edit = stream.id in edit_lists(url) if os.path.isfile(url) else None
    start_ns = None
    if stream.start_time is not None:
        start_ns = round(stream.start_time * tb * 1_000_000_000)
    return VideoInfo(
        url=url,
        stream_index=list(container.streams.video).index(stream),
        video_streams=len(container.streams.video),
        codec=ctx.name,
        width=width,
        height=height,
        pix_fmt=pix_fmt,
        time_base=Fraction(tb),
        average_rate=None if stream.average_rate is None else Fraction(stream.average_rate),
        start_pts=stream.start_time,
        duration_ns=duration_ns,
        frames=stream.frames or 0,
        bit_rate=stream.bit_rate or ctx.bit_rate or None,
        live=live,
        profile=stream.profile or None,
        bit_depth=_bit_depth(pix_fmt),
        color_range=_RANGES.get(ctx.color_range),
        color_space=_SPACES.get(ctx.colorspace),
        color_transfer=_TRANSFERS.get(ctx.color_trc),
        color_primaries=_PRIMARIES.get(ctx.color_primaries),
        orientation=orientation,
        rotate=rotate,
        output_width=out_w,
        output_height=out_h,
        vfr=found.vfr,
        start_time_ns=start_ns,
        edit_list=edit,
        discarded_packets=found.discarded,
        packets_scanned=found.packets,
    )


def with_first_frame(
    info: VideoInfo,
    orientation: Orientation,
    pix_fmt: str | None,
    size: tuple[int, int] | None = None,
) -> VideoInfo:
    """``info`` completed from the stream's first decoded frame: its display matrix and,
    where the header had none, its pixel format (what :func:`scan` decodes it for)."""
    pix_fmt = info.pix_fmt or pix_fmt
    out_w, out_h = info.output_width, info.output_height
    if size is None and info.rotate == "auto":
        out_w, out_h = orientation.shape(info.width, info.height)
    return dataclasses.replace(
        info,
        orientation=orientation,
        pix_fmt=pix_fmt,
        bit_depth=_bit_depth(pix_fmt),
        output_width=out_w,
        output_height=out_h,
    )


def _bit_depth(pix_fmt: str | None) -> int | None:
    if not pix_fmt:
        return None
    try:
        return max(c.bits for c in av.VideoFormat(pix_fmt).components)
    except (ValueError, av.error.FFmpegError):
        return None


# FFmpeg's AVColorRange/AVColorSpace/AVColorTransferCharacteristic/AVColorPrimaries, by the
# names ffprobe prints (unspecified values are left out: None).
_RANGES = {1: "tv", 2: "pc"}
_SPACES = {
    0: "gbr", 1: "bt709", 4: "fcc", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 8: "ycgco",
    9: "bt2020nc", 10: "bt2020c", 11: "smpte2085", 12: "chroma-derived-nc",
    13: "chroma-derived-c", 14: "ictcp",
}  # fmt: skip
_TRANSFERS = {
    1: "bt709", 4: "gamma22", 5: "gamma28", 6: "smpte170m", 7: "smpte240m", 8: "linear",
    9: "log100", 10: "log316", 11: "iec61966-2-4", 12: "bt1361e", 13: "iec61966-2-1",
    14: "bt2020-10", 15: "bt2020-12", 16: "smpte2084", 17: "smpte428", 18: "arib-std-b67",
}  # fmt: skip
_PRIMARIES = {
    1: "bt709", 4: "bt470m", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 8: "film",
    9: "bt2020", 10: "smpte428", 11: "smpte431", 12: "smpte432", 22: "jedec-p22",
}  # fmt: skip


def probe_video(
    url: str,
    *,
    stream: int = 0,
    input_format: str | None = None,
    rotate: str = "auto",
    size: tuple[int, int] | None = None,
) -> VideoInfo:
    """Describe a video input (blocking; run it off the event loop).

    A file is also scanned (:func:`scan`): its first frame decoded for the
    display matrix, its first packets demuxed for frame steps and discard flags. A
    live input is described from its headers only.
    """
    check_path(url, input_format)
    live = is_live(url, input_format)
    container = open_input(url, input_format=input_format)
    try:
        chosen = select_stream(container, url, stream)
        found = None
        if not live:
            peek = open_input(url, input_format=input_format)
            try:
                found = scan(peek, select_stream(peek, url, stream))
            finally:
                peek.close()
        return describe(container, chosen, url, live, found=found, rotate=rotate, size=size)
    finally:
        container.close()
