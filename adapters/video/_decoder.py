"""The decoder thread: demux, decode, stamp, convert, hand off; reconnect live inputs.

Theory of operation. One dedicated thread per running ``VideoSource.frames()``
owns the PyAV container from open to close, so no PyAV object ever crosses
threads and the event loop never waits on FFmpeg. FFmpeg's own frame/slice
threads run underneath it (``threads``, ``thread_type``); demuxing, decoding
and swscale all release the GIL, so the loop stays responsive even at full
decode speed. The thread's output is a stream of :mod:`~adapters.video._events`
through a bounded :class:`~adapters.video._prefetch.Prefetch` queue: that
bound is the prefetch depth and the backpressure.

Per packet: note it in the :class:`~adapters.video._ledger.PacketLedger`
unless it gives no frame by design (discarded edit-list pre-roll, hidden
VP9 frames: :func:`~adapters.video._probe.presents`), decode it (a decoder
error skips that packet only), and for each frame out stamp it with the
stream's :class:`~adapters.video._timestamps.Timeline`, convert and turn it
upright (:class:`~adapters.video._convert.PixelConverter`, orientation from
the first frame's display matrix) and queue it. Packets the ledger finds
lost become :class:`~adapters.video._events.Skipped` items carrying their PTS,
in presentation order: a file's frame waits while a packet with an earlier
PTS is pending, so the loss takes the seq of its place (live frames do not
wait: there a loss is numbered when it is known). At the end of a file, if
packets are still unaccounted for (a decode error in the drain strands the
frames held for reordering under frame threading), the stream's tail is
decoded again on one thread (:mod:`~adapters.video._tail`) and what never
came out is delivered: the result is the same at every thread count.

Opening (:mod:`adapters.video._opening`) tries the hardware devices first,
each verified by decoding the first frame on it; any failure before that first
frame closes the input and tries the next device, then software.

A live input that fails to read (timeout, EOF, connection reset) is closed and
reopened with exponential backoff; the time between the last frame before the
drop and the first after it is reported as a gap. Files end at EOF.

Live streams are checked for continuity (:mod:`fusion._continuity`): a frame
whose timestamps jump against its arrival by more than ``jump_threshold``
(a restarted sender, within the read timeout or across a reconnect) opens a
new segment, ``meta["segment_start"]`` tells the hub's clock model to start
over, and a silence longer than the threshold is a gap. The backlog FFmpeg
hands over when a stream opens is re-paced (:class:`~fusion._continuity.OpeningBurst`)
so it does not bias the clock. Stopping interrupts a blocking open or read at
FFmpeg's next poll (:mod:`adapters.video._interrupt`), not at its timeout.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Iterator
from typing import Any

import av
import av.error
from av.container import InputContainer
from av.video.stream import VideoStream

from adapters.errors import DecodeError, SourceOpenError
from adapters.video import _hwaccel as hw
from adapters.video import _interrupt as interrupt
from adapters.video._convert import PixelConverter
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
from adapters.video._ledger import PacketLedger
from adapters.video._opening import (
    DecodeOptions,
    codec_params,
    describe_input,
    open_decoding,
    transient,
)
from adapters.video._orientation import Orientation
from adapters.video._prefetch import Prefetch
from adapters.video._probe import (
    frame_orientation,
    open_input,
    presents,
    select_stream,
    with_first_frame,
)
from adapters.video._span_cut import SpanCut
from adapters.video._tail import Tail
from adapters.video._timestamps import Timeline
from fusion import Clock, Continuity, OpeningBurst

log = logging.getLogger("adapters.video")


def _say_audio_left_out(container: Any, url: str) -> None:
    """Log (once per open) that the input's audio streams are not read here, and how to
    record them."""
    audio = container.streams.audio
    if audio:
        codecs = ", ".join(str(s.codec_context.name) for s in audio)
        log.info(
            "video %s: its %d audio stream(s) (%s) are left out of this video source; record "
            'them with a source of type = "audio" on the same url (adapters.AudioSource)',
            url, len(audio), codecs,
        )  # fmt: skip


_VERIFY_PACKETS = 64
"""Packets a hardware decoder may take to produce its first frame before we give up on it."""


_BURST_BYTES = 256 << 20
"""At most this many bytes of decoded frames are held while an opening burst is re-paced."""


class _HardwareFailed(Exception):
    """The device opened but could not decode the first frame."""


class _ReadFailed(Exception):
    """A live input stopped delivering packets."""


def thread_name(opts: DecodeOptions) -> str:
    """The name a decoder's thread carries (in py-spy, in logs): the input's last part."""
    return f"hyperframes-video-{opts.url.rsplit('/', 1)[-1][:40]}"


class OpenFiles:
    """Files a finished span's decoder left open, for the next span to seek in.

    Opening a file (and its decoder) costs 2-3 ms of CPU, 4 % of decoding a 1 s
    span of 720p H.264 into 224x224 frames; a later span seeks in one that is
    left instead (the seek flushes the decoder). Only software decoders of a
    span that ended cleanly are left; :meth:`close` closes those still here and
    any left after it.
    """

    def __init__(self, most: int) -> None:
        self._most = most
        self._left: list[tuple[InputContainer, VideoStream]] = []
        self._closed = False
        self._lock = threading.Lock()

    def take(self) -> tuple[InputContainer, VideoStream] | None:
        with self._lock:
            return self._left.pop() if self._left else None

    def leave(self, container: InputContainer, stream: VideoStream) -> None:
        with self._lock:
            if not self._closed and len(self._left) < self._most:
                self._left.append((container, stream))
                return
        container.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            left, self._left = self._left, []
        for container, _ in left:
            container.close()


class DecoderThread:
    """Runs one input to its end in a daemon thread, feeding ``prefetch``.

    ``files``: where a later key-frame span takes a file an earlier span's decoder
    left open, and leaves its own (:class:`OpenFiles`); ``None`` opens and closes.
    """

    def __init__(
        self,
        opts: DecodeOptions,
        prefetch: Prefetch[Event],
        clock: Clock,
        files: OpenFiles | None = None,
    ) -> None:
        self.opts = opts
        self.prefetch = prefetch
        self.clock = clock
        self._files = files if opts.span is not None and opts.hwaccel is None else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=thread_name(opts), daemon=True)
        self._converter = PixelConverter(
            opts.pixel_format,
            size=opts.size,
            interpolation=opts.interpolation,
            threads=opts.sws_threads,
            reuse_buffers=opts.reuse_buffers,
        )
        self._last_arrival: int | None = None
        self._pending_gap: Reconnected | None = None
        self._report = hw.HWAccelReport(opts.hwaccel)
        self._software_only = opts.hwaccel is None
        self._kept: list[tuple[bytes, int | None, int | None, bool, bool, bool]] = []
        """(data, pts, dts, key, discard, shows) of the packets since the last frame."""
        self._codec: dict[str, Any] | None = None
        self._turn: Orientation | None = None
        self._last_pts: int | None = None
        self._held: list[tuple[av.VideoFrame, int | None]] = []
        self._timeline: Timeline | None = None
        self._continuity = Continuity(int(opts.jump_threshold * 1e9))
        self._burst: OpeningBurst[Decoded] = OpeningBurst()
        self._opened: Opened | None = None
        """A file's ``Opened``, held until its first frame completes the description."""
        self._first_format: str | None = None

    def start(self) -> None:
        self._thread.start()

    def run_here(self) -> None:
        """Decode on the calling thread (a pool's) instead of starting the decoder's own;
        returns when the input has ended or the decoder stopped."""
        self._run()

    @property
    def high_water(self) -> int:
        """Most frames its queue held."""
        return self.prefetch.high_water

    def close(self) -> None:
        """The consumer went away: refuse further items and stop the thread."""
        self.prefetch.close()
        self.stop()

    def stop(self) -> None:
        """Ask the thread to finish (it notices at the next packet or read timeout)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True if it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def repaced(self) -> int:
        """Frames whose ``t_arrival`` an opening burst lowered."""
        return self._burst.repaced

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() or self.prefetch.closed

    # -- the thread --------------------------------------------------------------

    def _run(self) -> None:
        try:
            with interrupt.stoppable(self._stop):
                self._run_connections()
        except BaseException as err:
            if not self.stopping:
                self._emit(Failed(err))
        finally:
            self._converter.release()  # the idle pool's buffers go back to the allocator
            self.prefetch.finish()

    def _run_connections(self) -> None:
        opts = self.opts
        connection = 0
        attempts = 0
        while not self.stopping:
            try:
                taken = self._files.take() if self._files is not None and opts.later_span else None
                container, stream = taken or open_decoding(opts, self._report, self._devices)
                report = self._report
                kept = False
            except SourceOpenError as err:
                if self.stopping:
                    return
                if not (opts.live and opts.reconnect and transient(err)):
                    raise
                self._emit(OpenFailed(str(err), attempts, _reconnect_delay(opts, attempts)))
                if not _back_off(self, attempts, str(err)):
                    return
                attempts += 1
                continue
            try:
                if connection and self._last_arrival is not None:
                    self._pending_gap = Reconnected(attempts, None)
                self._first_format = None
                if not opts.later_span:  # a later span's input was described by the first
                    info = describe_input(container, stream, opts)
                    if not connection:
                        _say_audio_left_out(container, opts.url)
                    if opts.live:
                        self._emit(Opened(info, report, connection))
                    else:  # said with the first event, once the first frame has been seen
                        self._opened = Opened(info, report, connection)
                self._burst.restart()
                _decode(self, container, stream, report, connection)
                self._announce()
                self._queue(self._burst.flush())
                if self._files is not None and not self.stopping:
                    self._files.leave(container, stream)
                    kept = True  # a later span's now
                return  # end of file (or of a live stream that says it ended)
            except _HardwareFailed as err:
                self._opened = None  # said again by the software open
                report.refuse(report.used or "hardware", str(err))
                report.used = None
                self._software_only = True  # reopen at once, in software
            except _ReadFailed as err:
                self._deliver_held(connection)
                self._queue(self._burst.flush())
                if self.stopping:
                    return
                self._emit(Disconnected(str(err), self._last_arrival))
                if not opts.reconnect or self.stopping:
                    return
                connection += 1
                attempts = 0
                if not _back_off(self, attempts, str(err)):
                    return
                attempts += 1
            finally:
                if not kept:
                    container.close()

    def _devices(self, codec: av.Codec) -> list[str]:
        """The hardware devices to try for ``codec``: none once they were all refused."""
        if self._software_only:
            return []
        devices = hw.candidates(self.opts.hwaccel, codec, self._report)
        self._software_only = not devices  # reasons are given once, not per reconnect
        return devices

    def _take(
        self,
        frame: av.VideoFrame,
        ledger: PacketLedger,
        arrivals: dict[int, int],
        timeline: Timeline,
        arrival: int | None,
        connection: int,
        verifying: bool,
    ) -> int:
        """Account for one decoded frame, then deliver what is due; returns frames delivered.

        A frame of a file waits (in :attr:`_held`) while a packet with an earlier
        PTS is still pending in the ledger, so that when that packet is declared
        lost its :class:`Skipped` comes before the later frames and takes the seq
        number of its place in presentation order. Without losses nothing waits;
        a live frame never waits (its losses are numbered when they are known).
        """
        if self._turn is None:
            turn = frame_orientation(frame)
            self._turn = turn
            self._first_format = frame.format.name
            if self.opts.rotate == "auto" and turn.exact:
                self._converter.orientation = turn
        lost = ledger.received(frame.pts)
        for pts in lost:
            arrivals.pop(pts, None)
        held = self._held
        held.append((frame, arrival))
        if frame.pts is not None and len(held) > 1 and _order(held[-2][0].pts) > frame.pts:
            held.sort(key=lambda item: _order(item[0].pts))  # a frame the decoder gave late
        # Live inputs never wait: latency matters more there than where a loss is numbered.
        floor = None if self.opts.live else ledger.oldest()
        return self._release(lost, floor, timeline, connection, verifying, "")

    def _release(
        self,
        lost: list[int],
        floor: int | None,
        timeline: Timeline,
        connection: int,
        verifying: bool,
        why: str,
    ) -> int:
        """Deliver held frames and report ``lost`` PTS in presentation order, up to ``floor``
        (the oldest PTS still pending; None: everything)."""
        held = self._held
        delivered = 0
        losses = iter(lost)
        nxt = next(losses, None)
        while held or nxt is not None:
            head = held[0][0].pts if held else None
            if nxt is not None and (not held or (head is not None and nxt < head)):
                detail = "no frame came out of it" + (f" {why}" if why else "")
                self._lose("undecodable", nxt, timeline, detail)
                nxt = next(losses, None)
                continue
            if floor is not None and head is not None and head > floor:
                break
            frame, arrival = held.pop(0)
            if frame.pts is not None:
                self._last_pts = frame.pts
            if self._deliver(frame, timeline, arrival, connection, verifying and not delivered):
                delivered += 1
        return delivered

    def _deliver_held(self, connection: int) -> None:
        """A live read failed: the frames waiting on an earlier packet go out as they are."""
        if self._held and self._timeline is not None:
            self._release([], None, self._timeline, connection, False, "")

    def _deliver(
        self,
        frame: av.VideoFrame,
        timeline: Timeline,
        t_arrival: int | None,
        connection: int,
        verifying: bool,
    ) -> bool:
        t_sensor, pts_source = timeline.stamp(frame.pts, frame.dts, frame.duration)
        if frame.is_corrupt and self.opts.drop_corrupt:
            self._emit_lost("corrupt_frame", frame.pts, t_sensor, "the decoder flagged it corrupt")
            return False
        try:
            data = self._converter.convert(frame)
        except Exception as err:
            if verifying:
                raise _HardwareFailed(f"downloading the first frame failed ({err})") from err
            self._emit_lost("convert_error", frame.pts, t_sensor, f"pixel conversion failed: {err}")
            return False
        turn = self._turn
        meta: dict[str, Any] = {
            "pts": frame.pts,
            "pts_source": pts_source,
            "key_frame": frame.key_frame,
            "rotation": None if turn is None or turn.matrix is None else turn.rotation,
            "rotated": not self._converter.orientation.identity,
        }
        if self._codec is not None:
            if turn is not None and turn.matrix is not None:
                self._codec["display_matrix"] = list(turn.matrix)
            meta["packets"], self._kept = self._kept, []
            meta["codec"] = self._codec
        if self.opts.live:
            meta["connection"] = connection
        decoded = Decoded(t_sensor, t_arrival, data, meta, t_read=t_arrival)
        nbytes = getattr(data, "nbytes", 0)
        if nbytes:  # the burst holds decoded frames: bound it in bytes too
            self._burst.max_items = max(8, min(256, _BURST_BYTES // nbytes))
        self._queue(self._burst.push(decoded) if self.opts.live else [decoded])
        return True

    def _queue(self, items: list[Decoded]) -> None:
        """Stamp continuity on frames leaving the opening burst and queue them.

        A released backlog waits for room rather than evicting itself, and a
        frame that starts a segment or ends a gap is never evicted (the hub's
        clock model must see it).
        """
        backlog = len(items) > 1
        if items and self._opened is not None:
            self._announce()
        for item in items:
            if self.stopping:
                return
            meta = item.meta
            t_arrival = item.t_arrival
            if item.t_read is not None and t_arrival != item.t_read:
                meta["t_read"] = item.t_read
            reconnected = False
            if self.opts.live and self._pending_gap is not None:
                gap = self._pending_gap
                if t_arrival is not None and self._last_arrival is not None:
                    gap.gap_ns = t_arrival - self._last_arrival
                meta["gap_ns"] = gap.gap_ns
                self._pending_gap = None
                reconnected = True
                self._emit(gap)
            change = self._continuity.observe(item.t_sensor, t_arrival)
            if change is not None:
                if change.restarted:
                    meta["segment_start"] = True
                if reconnected:  # the reconnect already reported the gap
                    change = dataclasses.replace(change, gap_ns=None)
                if change.restarted or change.gap_ns is not None:
                    if change.gap_ns is not None:
                        meta["gap_ns"] = change.gap_ns
                    self._emit(Discontinued(change, self._continuity.segment))
            if self.opts.live:
                meta["segment"] = self._continuity.segment
            if t_arrival is not None:
                self._last_arrival = t_arrival
            marked = "segment_start" in meta or "gap_ns" in meta
            evicted = self.prefetch.put(item, droppable=not marked, wait=backlog)
            if evicted is None:
                self._stop.set()
                return
            for old in evicted:
                if isinstance(old, Decoded):
                    self._emit_lost(
                        "overflow", old.meta.get("pts"), old.t_sensor, "prefetch queue full"
                    )

    def _lose(self, reason: str, pts: int | None, timeline: Timeline, detail: str) -> None:
        self._emit_lost(reason, pts, None if pts is None else timeline.to_ns(pts), detail)

    def _emit_lost(self, reason: str, pts: int | None, t_sensor: int | None, detail: str) -> None:
        self._emit(Skipped(FrameLost(reason, detail, pts=pts, t_sensor=t_sensor)))

    def _announce(self) -> None:
        """Say a file's held ``Opened``, completed from its first frame if one was seen."""
        opened, self._opened = self._opened, None
        if opened is None:
            return
        if self._turn is not None:
            # A hardware frame's format names the device surface, not the pixels.
            pix_fmt = None if opened.hwaccel.used else self._first_format
            info = with_first_frame(opened.info, self._turn, pix_fmt, self.opts.size)
            opened = Opened(info, opened.hwaccel, opened.connection)
        self._emit(opened)

    def _emit(self, event: Event) -> None:
        if self._opened is not None:
            self._announce()  # nothing is said about an input before that it is open
        if self.prefetch.put(event, droppable=False) is None:
            self._stop.set()


def _reconnect_delay(opts: DecodeOptions, attempt: int) -> float | None:
    """Seconds before retry ``attempt``, or None when there is none."""
    if opts.max_reconnects is not None and attempt >= opts.max_reconnects:
        return None
    return float(min(opts.backoff_max, opts.backoff_initial * (2**attempt)))


def _back_off(thread: DecoderThread, attempt: int, reason: str) -> bool:
    """Wait before reconnect ``attempt``; False when out of attempts or stopping."""
    opts = thread.opts
    delay = _reconnect_delay(opts, attempt)
    if delay is None:
        gave_up = f"{opts.url!r}: gave up after {attempt} reconnects: {reason}"
        thread._emit(Failed(SourceOpenError(gave_up)))
        return False
    log.info("video %s: reconnecting in %.2f s (%s)", opts.url, delay, reason)
    # Real time on purpose: the socket timeouts that got us here are real time too.
    return not thread._stop.wait(delay) and not thread.prefetch.closed


def _order(pts: int | None) -> float:
    """Sort key of a PTS: frames without one sort first (they are delivered as they come)."""
    return -math.inf if pts is None else pts


# long: the decode loop's per-packet ledger, arrival mapping and frame-threaded error
#   attribution share loop state
def _decode(
    thread: DecoderThread,
    container: InputContainer,
    stream: VideoStream,
    report: hw.HWAccelReport,
    connection: int,
) -> None:
    """Decode until EOF; raises _ReadFailed (live read error) or _HardwareFailed."""
    opts = thread.opts
    tb = stream.time_base
    if tb is None:
        raise SourceOpenError(f"{opts.url!r}: video stream has no time base")
    origin = opts.origin_pts if opts.origin_pts is not None else (stream.start_time or 0)
    period = None
    if stream.average_rate:
        period = round(1_000_000_000 / stream.average_rate)
    timeline = Timeline(tb, origin_pts=origin, nominal_period_ns=period)
    thread._timeline = timeline
    ledger = PacketLedger()
    arrivals: dict[int, int] = {}
    ctx = stream.codec_context
    codec = ctx.name
    verifying = report.used is not None
    delivered = 0
    thread._kept = []
    thread._codec = codec_params(stream, opts.pixel_format) if opts.keep_packets else None
    thread._turn = None
    thread._last_pts = None
    thread._held = []
    tail: Tail[av.Packet[Any]] | None = None if opts.live else Tail()
    drained = True
    cut = None if opts.span is None else SpanCut(*opts.span)
    for packet, ours in _span_packets(thread, container, stream, cut):
        if thread.stopping:
            return
        t_arrival = thread.clock.now() if opts.live else None
        pts = packet.pts
        flushing = packet.size == 0
        if not flushing:
            # Discarded (edit list) and hidden (VP9 alt-ref) packets give no frame
            # by design: they are not expected, so never lost and never numbered;
            # nor are a span's references from outside it.
            shows = ours and presents(packet, codec)
            if shows:
                for lost in ledger.sent(pts):
                    thread._lose("undecodable", lost, timeline, "no frame came out of it")
            if t_arrival is not None and pts is not None:
                arrivals[pts] = t_arrival
            if thread._codec is not None:
                thread._kept.append(
                    (
                        bytes(packet),
                        pts,
                        packet.dts,
                        bool(packet.is_keyframe),
                        bool(packet.is_discard),
                        shows,
                    )
                )
            if tail is not None:
                tail.add(packet)
        try:
            frames = ctx.decode(None if flushing else packet)
        except av.error.FFmpegError as err:
            if verifying and delivered == 0:
                raise _HardwareFailed(f"decoding the first frame failed ({err})") from err
            # With frame threading the error may belong to an earlier packet, so
            # it is not attributed to this PTS: the ledger reports what was lost.
            thread._emit(DecoderError(pts, str(err)))
            if flushing:
                drained = False
            continue
        for frame in frames:
            if cut is not None and not cut.keeps(frame.pts):
                continue
            arrival = t_arrival
            if frame.pts is not None:
                arrival = arrivals.pop(frame.pts, t_arrival)
            out = thread._take(frame, ledger, arrivals, timeline, arrival, connection, verifying)
            delivered += out
            verifying = verifying and not out
        if verifying and delivered == 0 and ledger.pending > _VERIFY_PACKETS:
            raise _HardwareFailed(f"no frame after {_VERIFY_PACKETS} packets")
        if len(arrivals) > 4 * ledger.limit:
            arrivals.clear()
    if tail is not None and ledger.pending and len(tail) and not thread.stopping:
        # The drain failed (or a packet is still unaccounted for): decode the tail
        # again on one thread and deliver what never came out.
        newest = max([thread._last_pts, *(f.pts for f, _ in thread._held)], key=_order)
        for frame in _redecode(thread, tail):
            if frame.pts is not None and (newest is None or frame.pts > newest):
                thread._take(frame, ledger, arrivals, timeline, None, connection, False)
    elif not drained:
        log.debug("video %s: the drain failed and nothing was pending", opts.url)
    thread._release(ledger.flush(), None, timeline, connection, False, "(end of stream)")


def _redecode(thread: DecoderThread, tail: Tail[av.Packet[Any]]) -> Iterator[av.VideoFrame]:
    """The tail's frames from a fresh single-threaded decoder of the same stream."""
    opts = thread.opts
    try:
        fresh = open_input(opts.url, input_format=opts.input_format, options=opts.options)
    except SourceOpenError as err:
        log.warning("video %s: could not reopen to recover the last frames: %s", opts.url, err)
        return
    try:
        ctx = select_stream(fresh, opts.url, opts.stream_index).codec_context
        ctx.thread_count = 1
        ctx.thread_type = "NONE"
        for packet in [*tail, None]:
            if thread.stopping:
                return
            try:
                frames = ctx.decode(packet)
            except av.error.FFmpegError:
                continue  # the same packet fails again; the ledger counts it
            yield from frames
    finally:
        fresh.close()


def _span_packets(
    thread: DecoderThread, container: InputContainer, stream: VideoStream, cut: SpanCut | None
) -> Iterator[tuple[av.Packet[Any], bool]]:
    """``(packet, ours)`` to decode, in decode order: every packet of the stream, or
    those of ``cut``'s span (:mod:`~adapters.video._span_cut`) after a seek to its key
    frame, then an empty packet (flush) once the span is complete. ``ours``: the
    packet is the span's (the ledger expects a frame from it)."""
    if cut is None:
        for packet in _packets(thread, container, stream):
            yield packet, True
        return
    if cut.start is not None:
        container.seek(cut.start, stream=stream, backward=True, any_frame=False)
    rewound = False
    while True:
        for packet in _packets(thread, container, stream):
            if packet.size == 0:
                yield packet, True  # the end of the file
                return
            actions = cut.packet(packet.pts, bool(packet.is_keyframe), packet)
            if any(action == "rewind" for action, _ in actions):
                break
            for action, what in actions:
                if action == "stop":
                    yield av.Packet(), True  # flush: the span is complete
                    return
                if action != "skip":
                    yield what, action == "keep"  # type: ignore[misc]
        else:
            return
        if rewound:
            raise DecodeError(f"{thread.opts.url!r}: no key frame at PTS {cut.start} to start at")
        rewound = True
        container.seek(stream.start_time or 0, stream=stream, backward=True)


def _packets(
    thread: DecoderThread, container: InputContainer, stream: VideoStream
) -> Iterator[av.Packet[Any]]:
    """Demux ``stream``; a live read error becomes _ReadFailed, a file read error ends it."""
    demux = container.demux(stream)
    while True:
        try:
            packet = next(demux)
        except StopIteration:
            if thread.opts.live and not thread.stopping:
                raise _ReadFailed("the stream ended") from None
            return
        except av.error.ExitError as err:  # the interrupt callback: timeout or stop
            if thread.stopping:
                return
            if thread.opts.live:
                raise _ReadFailed(f"no data for {thread.opts.read_timeout:g} s") from err
            raise DecodeError(f"{thread.opts.url!r}: reading the file timed out") from err
        except (av.error.FFmpegError, OSError) as err:
            if thread.opts.live:
                raise _ReadFailed(f"reading failed: {err}") from err
            raise DecodeError(f"{thread.opts.url!r}: reading the file failed: {err}") from err
        yield packet
