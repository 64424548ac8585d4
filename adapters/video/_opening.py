"""Opening a video input for the decoder thread: its options, devices, description.

:func:`open_decoding` tries the hardware devices from :mod:`adapters.video._hwaccel`
in order (each probed, then the input reopened with it; a device the decoder
does not attach is refused with its reason) and falls back to software with the
requested FFmpeg threads. :func:`describe_input` says what the input is
(:class:`~adapters.video._probe.VideoInfo`): a file is also scanned on its own
handle for frame steps and discard flags, without decoding. Kept apart from
:mod:`adapters.video._decoder` so that module holds the per-packet loop only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import av
import av.error
from av.container import InputContainer
from av.video.stream import VideoStream

from adapters.errors import SourceOpenError
from adapters.video import _hwaccel as hw
from adapters.video._convert import PixelFormat
from adapters.video._probe import VideoInfo, describe, open_input, scan, select_stream


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """Everything the decoder thread needs; built and validated by ``VideoSource``."""

    url: str
    stream_index: int = 0
    live: bool = False
    input_format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    pixel_format: PixelFormat = "rgb24"
    size: tuple[int, int] | None = None
    interpolation: str = "bilinear"
    threads: int = 0
    thread_type: str = "AUTO"
    sws_threads: int = 1
    reuse_buffers: bool = False
    hwaccel: str | None = None
    hwaccel_device: str | None = None
    hwaccel_timeout: float = 5.0
    origin_pts: int | None = 0
    """Subtracted from every PTS; ``None``: the stream's start PTS (first frame at 0)."""
    drop_corrupt: bool = True
    open_timeout: float | None = 10.0
    read_timeout: float | None = None
    reconnect: bool = True
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    max_reconnects: int | None = None
    rotate: str = "auto"
    """``"auto"``: turn frames upright by the display matrix; ``"none"``: as stored."""
    jump_threshold: float = 1.0
    """Seconds: timestamps jumping by more than this (against arrival) start a new
    segment; silences longer than this are reported as gaps."""
    keep_packets: bool = False
    """Attach each frame's demuxed packets (``meta["packets"]``) and the stream's
    decoder parameters (``meta["codec"]``), for recording without re-encoding."""
    span: tuple[int | None, int | None] | None = None
    """Decode only the frames presented in ``[start, end)`` (stream PTS; ``None``: open),
    from a seek to ``start``, a key frame (:mod:`~adapters.video._span_cut`)."""

    @property
    def later_span(self) -> bool:
        """A key-frame span after a file's first (:mod:`~adapters.video._spans`): the
        first span says what the input is; the others' description is not read."""
        return self.span is not None and self.span[0] is not None


def open_decoding(
    opts: DecodeOptions,
    report: hw.HWAccelReport,
    devices_for: Callable[[av.Codec], list[str]],
) -> tuple[InputContainer, VideoStream]:
    """Open the input on the first device that decodes, else in software.

    ``devices_for(codec)`` names the devices to try (the decoder thread gives none
    once they were refused, so reasons are given once, not per reconnect);
    ``report`` collects why each was refused and which one is used. The software
    decoder gets ``opts``'s threads.
    """
    timeout = (opts.open_timeout, opts.read_timeout)
    container = open_input(
        opts.url, input_format=opts.input_format, options=opts.options, timeout=timeout
    )
    stream = select_stream(container, opts.url, opts.stream_index)
    for device in devices_for(stream.codec_context.codec):
        reason = hw.probe_device(
            device, stream.codec_context.codec, opts.hwaccel_device, opts.hwaccel_timeout
        )
        if reason is not None:
            report.refuse(device, reason)
            continue
        container.close()
        try:
            container = open_input(
                opts.url,
                input_format=opts.input_format,
                options=opts.options,
                timeout=timeout,
                hwaccel=hw.make(device, opts.hwaccel_device),
            )
        except SourceOpenError as err:
            report.refuse(device, f"the input would not open with it ({err.__cause__ or err})")
        else:
            stream = select_stream(container, opts.url, opts.stream_index)
            if stream.codec_context.is_hwaccel:
                report.used = device
                return container, stream
            report.refuse(device, "the decoder did not attach the device")
            container.close()
        container = open_input(
            opts.url, input_format=opts.input_format, options=opts.options, timeout=timeout
        )
        stream = select_stream(container, opts.url, opts.stream_index)
    ctx = stream.codec_context
    ctx.thread_type = opts.thread_type
    ctx.thread_count = opts.threads
    return container, stream


def describe_input(
    container: InputContainer, stream: VideoStream, opts: DecodeOptions
) -> VideoInfo:
    """:class:`VideoInfo`; a file is also scanned (on its own handle) for frame steps
    and discard flags, a live input described from its headers. The display matrix
    (and a pixel format the header lacks) come from the first frame this decoder
    decodes (``DecoderThread._announce``), not from decoding it a second time in the scan."""
    found = None
    if not opts.live and not opts.later_span:
        try:
            peek = open_input(opts.url, input_format=opts.input_format, options=opts.options)
        except SourceOpenError:
            peek = None
        if peek is not None:
            try:
                stream_peek = select_stream(peek, opts.url, opts.stream_index)
                found = scan(peek, stream_peek, decode=False)
            finally:
                peek.close()
    return describe(
        container, stream, opts.url, opts.live, found=found, rotate=opts.rotate, size=opts.size
    )


def codec_params(stream: VideoStream, pixel_format: str) -> dict[str, Any]:
    """What a decoder of this stream's packets needs (see :mod:`recordings.hfr.video._packets`)."""
    ctx = stream.codec_context
    extradata = ctx.extradata
    return {
        "codec": ctx.codec.name,
        "width": ctx.width,
        "height": ctx.height,
        "pix_fmt": ctx.pix_fmt or "",
        "format": pixel_format if pixel_format in ("rgb24", "bgr24", "gray") else "rgb24",
        "extradata": bytes(extradata) if extradata else None,
    }


def transient(err: SourceOpenError) -> bool:
    """Open failures worth retrying on a live input: timeouts, refused or reset connections."""
    cause = err.__cause__
    return isinstance(cause, (OSError, EOFError, av.error.ExitError)) and not isinstance(
        cause, (av.error.FileNotFoundError, av.error.ProtocolNotFoundError)
    )
