"""``VideoSource``: video files and live streams as a source of timestamped frames.

The async shell around :class:`~adapters.video._decoder.DecoderThread`: it
starts the thread when ``frames()`` is iterated, turns the thread's events into
:class:`~fusion.Frame` objects (numbering ``seq``), counts what was skipped, and
stops the thread when iteration ends, breaks or is cancelled.

``seq`` counts every frame the source knew of, delivered or not: a packet that
did not decode, a frame flagged corrupt or evicted from a full live queue
consumes a number, so a gap in ``seq`` is exactly a frame the source lost. A
frame a live sender never sent (during a disconnect) has no number; the
disconnect shows in :meth:`VideoSource.statistics` and in the first frame's
``meta["gap_ns"]`` after it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from adapters.video import _hwaccel as hw
from adapters.video._convert import PIXEL_FORMATS, PixelFormat
from adapters.video._decoder import DecoderThread
from adapters.video._events import (
    Decoded,
    DecoderError,
    Disconnected,
    Discontinued,
    Event,
    Failed,
    FrameLost,
    Opened,
    OpenFailed,
    Reconnected,
    Skipped,
)
from adapters.video._hwaccel import HWAccelReport
from adapters.video._opening import DecodeOptions
from adapters.video._pacing import Pacing, choose_decoding
from adapters.video._prefetch import Prefetch
from adapters.video._probe import VideoInfo, check_path, is_live
from adapters.video._spans import SpanDecoders
from fusion import Frame, Overflow, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, SourceError

_THREAD_TYPES = ("AUTO", "FRAME", "SLICE", "NONE")
log = logging.getLogger("adapters.video")
_SWS_FILTERS = {"area": "AREA", "bilinear": "BILINEAR", "nearest": "POINT"}


@dataclass(slots=True)
class VideoStatistics:
    """Counters of one video source since construction."""

    delivered: int = 0
    """Frames yielded by ``frames()``."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Frames lost, by reason (see :class:`~adapters.video._events.FrameLost`)."""
    connections: int = 0
    """Times the input was opened (1 for a file; 1 + reconnects for a live stream)."""
    disconnects: int = 0
    """Times a live input stopped delivering."""
    gaps_ns: list[int] = field(default_factory=list)
    """Arrival gap around each reconnect or silence longer than ``jump_threshold``
    (last frame before to first after), newest last."""
    restarts: int = 0
    """Times the stream's timestamps jumped (a restarted sender): segments after the first."""
    repaced: int = 0
    """Frames of opening bursts whose ``t_arrival`` was re-paced (see :mod:`fusion._continuity`)."""
    prefetch_high_water: int = 0
    """Most decoded frames ever waiting in the prefetch queue."""
    decoder_errors: int = 0
    """Errors the decoder raised (each loss they cause is also in ``skipped``)."""
    last_decoder_error: str | None = None
    """The most recent decoder error message, with the PTS being sent."""
    decoder_threads: str | None = None
    """The FFmpeg threads chosen for a consumer that said its cost per frame, and why
    (:meth:`VideoSource.pace_decoder`); ``None`` when none did."""

    @property
    def downtime_ns(self) -> int:
        """Sum of the reconnect gaps."""
        return sum(self.gaps_ns)

    def as_dict(self) -> dict[str, Any]:
        return {
            "delivered": self.delivered,
            "skipped": dict(self.skipped),
            "connections": self.connections,
            "disconnects": self.disconnects,
            "gaps_ns": list(self.gaps_ns),
            "downtime_ns": self.downtime_ns,
            "restarts": self.restarts,
            "repaced": self.repaced,
            "prefetch_high_water": self.prefetch_high_water,
            "decoder_errors": self.decoder_errors,
            "last_decoder_error": self.last_decoder_error,
            "decoder_threads": self.decoder_threads,
        }


class VideoSource(Source):
    """Frames of one video stream of a file, URL or capture device (contract).

    ``async for frame in VideoSource("clip.mp4").frames(): ...`` yields
    :class:`~fusion.Frame` objects whose ``data`` is a numpy array in
    ``pixel_format`` (see :mod:`adapters.video._convert`), ``t_sensor`` the
    frame's PTS in ns (see :mod:`adapters.video._timestamps`) and, for live
    inputs, ``t_arrival`` the host clock when its packet was read.
    ``meta`` holds ``pts``, ``pts_source``, ``key_frame``, ``rotation``
    (degrees counter-clockwise from the display matrix, as ffprobe prints
    it; None without one) and ``rotated`` (whether ``data`` was turned
    upright); live inputs add ``connection``, ``segment`` (0, then one more
    per restart of the sender), ``segment_start`` on a segment's first frame,
    ``gap_ns`` after a silence or reconnect and ``t_read`` where an opening
    burst was re-paced.

    Main options:

    * ``live``: ``None`` detects it from the URL (``udp://``, ``tcp://``,
      ``rtsp://``, ``http://``, ``/dev/video0``...; see
      :data:`~adapters.video._probe.LIVE_SCHEMES`). Live inputs reconnect with
      exponential backoff (``backoff`` = (initial, max) seconds,
      ``max_reconnects``), use slice threading (frame threading adds a frame
      of latency per thread) and drop the oldest decoded frame when the
      consumer falls behind, counted as ``"overflow"``.
    * ``stream``: which video stream of a file with several.
    * ``rotate``: ``"auto"`` (default) turns frames upright by the stream's
      display matrix, as ffmpeg does, in the same filter pass as the pixel
      conversion; ``"none"`` keeps the stored orientation and still reports
      it. :attr:`info` says the output size (``output_width``/``output_height``).
    * ``width`` and ``height`` (or ``size=(width, height)``): resize to, in
      the same swscale pass (the size of the output, after turning it
      upright); frames are then ``(height, width, 3)`` arrays.
    * ``threads``/``thread_type``: FFmpeg decoder threading (0 = automatic: one per
      core, or one thread when a CPU worker that keeps the cores busy says one
      decoding core keeps up; see :meth:`pace_decoder`).
    * ``prefetch``: decoded frames buffered ahead of the consumer.
    * ``hwaccel``: ``None``, ``"auto"`` or a device type; falls back to
      software with the reason in :attr:`hwaccel_report` (see
      :mod:`adapters.video._hwaccel`).
    * ``origin_pts``: PTS that maps to ``t_sensor == 0``; default 0 keeps the
      stream's own times, ``None`` starts the first frame at 0.
    * ``read_timeout``: seconds without data before a live input counts as
      dropped (default 5 for live inputs); ``open_timeout`` bounds one attempt
      to open it. Stopping or cancelling ends either wait within about 0.1 s.
    * ``jump_threshold``: seconds; timestamps jumping by more than this against
      arrival start a new segment (logged, counted in ``restarts``, and the
      clock model starts over); silences longer than this are gaps.
    * ``keep_packets``: also attach each frame's demuxed packets
      (``meta["packets"]``, decode order) and the stream's decoder parameters
      (``meta["codec"]``), so a :class:`~recordings.hfr.video._recording.VideoRecorder`
      with ``"copy"`` records the stream's own packets without re-encoding.
    """

    # long: 29 documented keyword options (input, decode, hardware, reconnect, pacing, live
    #   socket), each checked and kept
    def __init__(
        self,
        url: str | Path,
        *,
        name: str = "camera",
        live: bool | None = None,
        stream: int = 0,
        pixel_format: PixelFormat = "rgb24",
        size: tuple[int, int] | None = None,
        width: int | None = None,
        height: int | None = None,
        interpolation: str = "bilinear",
        threads: int = 0,
        thread_type: str | None = None,
        prefetch: int = 8,
        reuse_buffers: bool = False,
        hwaccel: str | None = None,
        hwaccel_device: str | None = None,
        input_format: str | None = None,
        options: Mapping[str, str] | None = None,
        origin_pts: int | None = 0,
        drop_corrupt: bool = True,
        open_timeout: float | None = 10.0,
        read_timeout: float | None = None,
        reconnect: bool = True,
        backoff: tuple[float, float] = (0.1, 5.0),
        max_reconnects: int | None = None,
        clock: ClockModel | None = None,
        overflow: Overflow | None = None,
        capacity: int = 64,
        keep_packets: bool = False,
        rotate: str = "auto",
        jump_threshold: float = 1.0,
    ) -> None:
        url = str(url)
        if rotate not in ("auto", "none"):
            raise ConfigError(f"rotate must be 'auto' or 'none', got {rotate!r}")
        live = is_live(url, input_format) if live is None else live
        if pixel_format not in PIXEL_FORMATS:
            raise ConfigError(
                f"pixel_format must be one of {', '.join(PIXEL_FORMATS)}, got {pixel_format!r}"
            )
        thread_type = thread_type or ("SLICE" if live else "AUTO")
        if thread_type.upper() not in _THREAD_TYPES:
            raise ConfigError(
                f"thread_type must be one of {', '.join(_THREAD_TYPES)}, got {thread_type!r}"
            )
        if width is not None or height is not None:
            if width is None or height is None or size is not None:
                raise ConfigError(
                    "give width and height together (or size=(width, height)), "
                    f"got width={width!r}, height={height!r}, size={size!r}"
                )
            size = (width, height)
        if prefetch < 1:
            raise ConfigError(f"prefetch must be >= 1, got {prefetch}")
        if threads < 0:
            raise ConfigError(f"threads must be >= 0 (0 = automatic), got {threads}")
        if not jump_threshold > 0:
            raise ConfigError(f"jump_threshold must be > 0 seconds, got {jump_threshold!r}")
        if backoff[0] <= 0 or backoff[1] < backoff[0]:
            raise ConfigError(f"backoff must be (initial > 0, max >= initial), got {backoff!r}")
        check_path(url, input_format)
        meta = {"url": url, "pixel_format": pixel_format, "live": live}
        super().__init__(
            SensorSpec(
                name,
                kind="camera",
                clock=clock,
                capacity=capacity,
                overflow=overflow or ("drop_oldest" if live else "block"),
                meta=meta,
            )
        )
        self.url = url
        self.live = live
        self.options = DecodeOptions(
            url=url,
            stream_index=stream,
            live=live,
            input_format=input_format,
            options=dict(options or {}),
            pixel_format=pixel_format,
            size=size,
            interpolation=interpolation,
            threads=threads,
            thread_type=thread_type.upper(),
            reuse_buffers=reuse_buffers,
            hwaccel=hw.validate(hwaccel),
            hwaccel_device=hwaccel_device,
            origin_pts=origin_pts,
            drop_corrupt=drop_corrupt,
            open_timeout=open_timeout,
            read_timeout=read_timeout if read_timeout is not None else (5.0 if live else None),
            reconnect=reconnect,
            backoff_initial=backoff[0],
            backoff_max=backoff[1],
            max_reconnects=max_reconnects,
            keep_packets=keep_packets,
            rotate=rotate,
            jump_threshold=jump_threshold,
        )
        self.prefetch = prefetch
        self.info: VideoInfo | None = None
        """What the stream is; set once ``frames()`` has opened it."""
        self.hwaccel_report: HWAccelReport | None = None
        """Which decoder runs and why hardware was refused; set once opened."""
        self.video_stats = VideoStatistics()
        self.recent_errors: deque[FrameLost] = deque(maxlen=64)
        """The latest skipped frames, each naming sensor, seq, PTS and reason."""
        self._decoder: DecoderThread | SpanDecoders | None = None
        self._pacing: Pacing | None = None

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return not self.live

    async def frames(self) -> AsyncIterator[Frame]:
        """Decode the input, yielding frames in presentation order, until it ends."""
        # A file's consumer is woken once per half queue, a live one per frame.
        wake_after = 1 if self.live else max(1, self.prefetch // 2)
        queue: Prefetch[Event] = Prefetch(
            self.prefetch, drop_oldest=self.live, wake_after=wake_after
        )
        decoding = None
        if self._pacing is not None:  # a consumer said its cost: threads or spans
            decoding = await self.run_blocking(choose_decoding, self.options, self._pacing)
            self._pacing = None
            self.options = replace(self.options, threads=decoding.threads)
            self.video_stats.decoder_threads = decoding.why
            log.info("sensor %r: decoder threads %s", self.name, decoding.why)
        decoder: DecoderThread | SpanDecoders
        if decoding is not None and decoding.plan is not None:
            plan = decoding.plan
            decoder = SpanDecoders(
                self.options, plan.spans, decoding.decoders, current_clock(),
                max(self.prefetch, plan.capacity), wake_after,
            )  # fmt: skip
            get = decoder.get
        else:
            decoder = DecoderThread(self.options, queue, current_clock())
            get = queue.get
        self._decoder = decoder
        decoder.start()
        try:
            while True:
                try:
                    event = await get()
                except anyio.EndOfStream:
                    return
                if isinstance(event, Decoded):
                    self.video_stats.delivered += 1
                    yield self.make_frame(
                        event.t_sensor, event.data, t_arrival=event.t_arrival, meta=event.meta
                    )
                else:
                    self._handle(event)
        finally:
            self.video_stats.prefetch_high_water = max(
                self.video_stats.prefetch_high_water, decoder.high_water
            )
            queue.close()
            decoder.close()
            with anyio.CancelScope(shield=True):
                await self._join(decoder)

    def resize_in_decoder(self, size: tuple[int, int], interpolation: str) -> str | None:
        """Resize in the decoder's swscale pass (see :meth:`fusion.Source.resize_in_decoder`):
        the colour conversion and the resize are one pass into a small image, so the
        full-size RGB frame is never made. ``"area"``, ``"bilinear"`` and ``"nearest"`` map
        to swscale's ``AREA``, ``BILINEAR`` and ``POINT`` filters."""
        opts = self.options
        flags = _SWS_FILTERS.get(interpolation)
        if flags is None:
            return f"no swscale filter for interpolation {interpolation!r}"
        if self._decoder is not None:
            return "the source is already decoding"
        if opts.pixel_format not in ("rgb24", "bgr24"):
            return f"pixel_format {opts.pixel_format!r} is not a 3-channel image"
        if opts.size is not None and (opts.size != size or opts.interpolation.upper() != flags):
            return f"the source already resizes to {opts.size} ({opts.interpolation})"
        self.options = replace(opts, size=size, interpolation=flags)
        return None

    def pace_decoder(self, consumer_cpu_s: float, cores: int) -> str | None:
        """Decode a file on one FFmpeg thread when one core decoding keeps up with a
        consumer spending ``consumer_cpu_s`` per frame on the other ``cores - 1``,
        else with FFmpeg's automatic threads (:mod:`adapters.video._pacing`; the
        decode cost is measured on the file's first frames when ``frames()`` starts;
        the choice is in ``video_stats.decoder_threads``). Refused when ``threads``
        was given, for a live input (it keeps its slice threads), with hardware
        decode asked, or once decoding."""
        opts = self.options
        if self._decoder is not None:
            return "the source is already decoding"
        if opts.threads:
            return f"threads={opts.threads} was given"
        if opts.live:
            return "a live input keeps its slice threads"
        if opts.hwaccel is not None:
            return f"hardware decode ({opts.hwaccel}) was asked"
        if cores < 1 or not consumer_cpu_s >= 0:
            return f"no cost to weigh (consumer {consumer_cpu_s!r} s per frame, {cores} cores)"
        self._pacing = Pacing(consumer_cpu_s, cores)
        return None

    def _handle(self, event: Event) -> None:
        stats = self.video_stats
        if isinstance(event, Skipped):
            err = event.error
            seq = self._next_seq.get(self.name, 0)
            self._next_seq[self.name] = seq + 1  # the lost frame keeps its number
            err.sensor, err.seq = self.name, seq
            stats.skipped[err.reason] = stats.skipped.get(err.reason, 0) + 1
            self.recent_errors.append(err)
            self.count_error(err.reason, str(err))
        elif isinstance(event, DecoderError):
            stats.decoder_errors += 1
            stats.last_decoder_error = f"while sending PTS {event.pts}: {event.message}"
        elif isinstance(event, Opened):
            self.info = event.info
            self.hwaccel_report = event.hwaccel
            stats.connections += 1
        elif isinstance(event, OpenFailed):
            # Nothing was lost (nothing arrived): units=0; the reason is kept for the
            # end-of-run report, and said once per run of failures, not per retry.
            self.count_error("open_failed", event.reason, units=0)
            if event.attempt == 0:
                retry = "giving up" if event.retry_in_s is None else "retrying until it answers"
                log.warning("%s: %s (%s)", self.name, event.reason, retry)
        elif isinstance(event, Disconnected):
            stats.disconnects += 1
            self.count_error("disconnect", f"sensor {self.name!r}: {event.reason}", units=0)
            log.warning("%s: %s; reconnecting to %s", self.name, event.reason, self.url)
        elif isinstance(event, Reconnected):
            if event.gap_ns is not None:
                stats.gaps_ns.append(event.gap_ns)
                del stats.gaps_ns[:-256]
                log.warning("%s: reconnected, no data for %.2f s", self.name, event.gap_ns / 1e9)
        elif isinstance(event, Discontinued):
            change = event.change
            if change.restarted:
                stats.restarts += 1
            if change.gap_ns is not None:
                stats.gaps_ns.append(change.gap_ns)
                del stats.gaps_ns[:-256]
            log.warning("%s: %s", self.name, change.describe())
        elif isinstance(event, Failed):
            failure = event.error
            if isinstance(failure, SourceError) and failure.sensor is None:
                failure.sensor = self.name
            raise failure

    @staticmethod
    async def _join(decoder: DecoderThread | SpanDecoders) -> None:
        # The thread notices the stop at its next packet; a live read can take up to
        # read_timeout. Wait off the event loop, bounded so shutdown cannot hang.
        opts = decoder.opts
        # Normally the interrupt hook (adapters.video._interrupt) ends it within a poll.
        bound = 2.0 + (opts.read_timeout or 0.0) + (opts.open_timeout or 0.0)
        await anyio.to_thread.run_sync(decoder.join, bound)

    def silence_timeout_s(self) -> float:
        """The read timeout of a live input; otherwise the base rule."""
        timeout = self.options.read_timeout
        return float(timeout) if timeout else super().silence_timeout_s()

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the video counters and the hardware decode report."""
        out = dict(super().statistics())
        if self._decoder is not None:
            self.video_stats.prefetch_high_water = max(
                self.video_stats.prefetch_high_water, self._decoder.high_water
            )
        if self._decoder is not None:
            self.video_stats.repaced = self._decoder.repaced
        out["video"] = self.video_stats.as_dict()
        out["hwaccel"] = None if self.hwaccel_report is None else self.hwaccel_report.as_dict()
        return out

    async def aclose(self) -> None:
        if self._decoder is not None:
            self._decoder.close()
        await super().aclose()

    def __repr__(self) -> str:
        return f"VideoSource({self.url!r}, name={self.name!r})"
