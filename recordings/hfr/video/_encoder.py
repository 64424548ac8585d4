"""Encoding camera frames with PyAV for recording: codec choice, settings, one encoder per sensor.

:func:`parse_codec` reads a per-sensor choice as written in a config:
``"h264"``, ``"hevc"``, ``"ffv1"`` (lossless) or ``"copy"`` (keep the source's
own packets, see :class:`~adapters.video.VideoSource` ``keep_packets``), each
optionally followed by FFmpeg encoder options: ``"h264:crf=28,preset=fast"``.
``gop=N`` sets the key frame interval (default: two seconds of frames; 1 for
FFV1, whose non-key frames carry coder state over from the previous frame,
so that every lossless frame stands alone for seeking and damage costs one
frame; the size difference is about 2 %).

The H.264/HEVC defaults favour recording: ``tune=zerolatency`` (no B-frames,
no lookahead: a packet comes out for every frame at once, so the file keeps
the arrival order and a crash loses no buffered frames), ``preset=veryfast``
and ``crf=23``. FFV1 stores RGB as ``bgr0``, which converts back to the exact
input pixels.

:class:`FrameEncoder` encodes one sensor's arrays. It opens on the first frame
(size and array format come from it) and starts a new stream, beginning with
a key frame, when the size or format changes. It is used from one thread.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import av
import av.error
import numpy as np

from fusion.errors import ConfigError
from recordings.hfr.video._packets import Packet, TrackParams

ENCODERS = {"h264": "libx264", "hevc": "libx265", "ffv1": "ffv1"}
"""Codec names accepted in a config, and the FFmpeg encoder each uses."""

CODECS = (*ENCODERS, "copy")

_DEFAULTS: dict[str, dict[str, str]] = {
    "h264": {"preset": "veryfast", "tune": "zerolatency", "crf": "23"},
    "hevc": {
        "preset": "veryfast",
        "tune": "zerolatency",
        "crf": "28",
        "x265-params": "log-level=error",
    },
    "ffv1": {"slicecrc": "1"},
}


@dataclass(frozen=True, slots=True)
class VideoCodec:
    """A sensor's recording choice: ``name`` (a key of :data:`ENCODERS`, or ``copy``)."""

    name: str
    options: dict[str, str] = field(default_factory=dict)
    gop: int | None = None
    """Key frame interval in frames; None: two seconds at the sensor's rate (FFV1: 1)."""

    def __str__(self) -> str:
        opts = dict(self.options)
        if self.gop is not None:
            opts["gop"] = str(self.gop)
        return self.name + (":" + ",".join(f"{k}={v}" for k, v in opts.items()) if opts else "")


def parse_codec(text: str | VideoCodec, *, sensor: str = "?") -> VideoCodec:
    """``"h264:crf=28,preset=fast"`` -> :class:`VideoCodec`; :class:`ConfigError` if unknown."""
    if isinstance(text, VideoCodec):
        return text
    name, _, rest = str(text).strip().partition(":")
    name = name.lower()
    if name not in CODECS:
        raise ConfigError(
            f"video codec for sensor {sensor!r}: expected one of {', '.join(CODECS)} "
            f"(optionally with ':key=value,...' encoder options), found {text!r}"
        )
    options: dict[str, str] = {}
    gop = None
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(
                f"video codec for sensor {sensor!r}: expected key=value options after "
                f"'{name}:', found {item!r} in {text!r}"
            )
        if key == "gop":
            try:
                gop = int(value)
            except ValueError:
                gop = 0
            if gop < 1:
                raise ConfigError(
                    f"video codec for sensor {sensor!r}: gop must be an integer >= 1, "
                    f"found {value!r}"
                )
        else:
            options[key] = value
    if name == "copy" and (options or gop):
        raise ConfigError(
            f"video codec for sensor {sensor!r}: 'copy' keeps the source's packets and "
            f"takes no encoder options, found {text!r}"
        )
    return VideoCodec(name, options, gop)


def array_format(data: Any) -> str | None:
    """``rgb24`` for ``(H, W, 3)`` uint8, ``gray`` for ``(H, W)`` uint8, else None."""
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
        return None
    if data.ndim == 3 and data.shape[2] == 3:
        return "rgb24"
    if data.ndim == 2:
        return "gray"
    return None


class EncoderUnavailable(Exception):
    """The encoder refused this sensor's frames (size, format); the reason is the message."""


class FrameEncoder:
    """Encodes one sensor's frames into :class:`~recordings.hfr.video._packets.Packet` s."""

    def __init__(self, sensor: str, codec: VideoCodec, rate_hz: float | None) -> None:
        if codec.name not in ENCODERS:
            raise ConfigError(f"FrameEncoder encodes {', '.join(ENCODERS)}, not {codec.name!r}")
        self.sensor = sensor
        self.codec = codec
        self.rate = Fraction(rate_hz or 30.0).limit_denominator(1001)
        self._ctx: Any = None
        self._shape: tuple[int, ...] | None = None
        self._format = ""
        self._params: TrackParams | None = None
        self._keys: dict[int, Hashable] = {}  # encoder pts -> frame key
        self._pts = 0

    @property
    def params(self) -> TrackParams | None:
        return self._params

    def encode(self, data: np.ndarray[Any, Any], key: Hashable) -> list[Packet]:
        """Encode one array; returns the packets that came out (for this or earlier frames).

        Raises :class:`EncoderUnavailable` when the array cannot be encoded.
        """
        fmt = array_format(data)
        if fmt is None:
            raise EncoderUnavailable(
                f"expected (H, W, 3) or (H, W) uint8 pixels, found "
                f"{getattr(data, 'dtype', type(data).__name__)} {getattr(data, 'shape', '')}"
            )
        out: list[Packet] = []
        if self._ctx is None or data.shape != self._shape or fmt != self._format:
            out += self.flush()
            self._open(data.shape, fmt)
        pix = self._params.pix_fmt if self._params else "yuv420p"
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(data), format=fmt)
        if frame.format.name != pix:
            frame = frame.reformat(format=pix)
        frame.pts = self._pts
        self._keys[self._pts] = key
        self._pts += 1
        try:
            out += self._collect(self._ctx.encode(frame))
        except av.error.FFmpegError as err:
            self._keys.pop(frame.pts, None)
            raise EncoderUnavailable(f"the {self.codec.name} encoder failed: {err}") from err
        return out

    def flush(self) -> list[Packet]:
        """Drain the encoder (end of stream, or before a size change)."""
        if self._ctx is None:
            return []
        try:
            packets = self._collect(self._ctx.encode(None))
        finally:
            self._ctx = None
        return packets

    def _collect(self, packets: Any) -> list[Packet]:
        assert self._params is not None
        out = []
        for p in packets:
            key = self._keys.pop(p.pts, None) if p.pts is not None else None
            out.append(Packet(bytes(p), p.pts, p.dts, bool(p.is_keyframe), key, self._params))
        return out

    def _open(self, shape: tuple[int, ...], fmt: str) -> None:
        height, width = shape[0], shape[1]
        name = self.codec.name
        if name == "ffv1":
            pix = "gray" if fmt == "gray" else "bgr0"
        else:
            pix = "yuv420p"
            if width % 2 or height % 2:
                raise EncoderUnavailable(
                    f"{name} with yuv420p needs an even width and height, found {width}x{height}"
                    " (record this sensor with ffv1, or resize it)"
                )
        ctx: Any = av.CodecContext.create(ENCODERS[name], "w")
        ctx.width, ctx.height, ctx.pix_fmt = width, height, pix
        ctx.framerate = self.rate
        ctx.time_base = 1 / self.rate
        default_gop = 1 if name == "ffv1" else max(1, round(2 * float(self.rate)))
        ctx.gop_size = self.codec.gop or default_gop
        ctx.options = {**_DEFAULTS[name], **self.codec.options}
        try:
            ctx.open()
        except av.error.FFmpegError as err:
            raise EncoderUnavailable(
                f"the {ENCODERS[name]} encoder would not open for {width}x{height} {pix} "
                f"with options {ctx.options}: {err}"
            ) from err
        self._ctx = ctx
        self._shape = shape
        self._format = fmt
        decoder = av.codec.Codec(ENCODERS[name], "w").canonical_name
        extradata = ctx.extradata
        self._params = TrackParams(
            codec=decoder,
            width=width,
            height=height,
            pix_fmt=pix,
            format=fmt,
            extradata=bytes(extradata) if extradata else None,
            encoder=str(self.codec),
        )
