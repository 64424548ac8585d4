"""A file decoded as key-frame spans by several one-thread decoders, delivered in order.

Theory of operation. One FFmpeg thread decodes a frame for the least CPU;
FFmpeg's frame threads spread one decoder over the cores but cost more per
frame (0.15-0.5 ms a 720p H.264 frame, BENCHMARKS.md "At the machine's limit").
When the decoder is what a pipeline waits for, a file is instead cut at its key
frames into spans (:func:`plan_spans`: the key frames listed by demuxing, no
decoding) and :class:`SpanDecoders` runs ``decoders`` spans at a time, each a
:class:`~adapters.video._decoder.DecoderThread` on one FFmpeg thread that
seeks to its span and delivers exactly the span's frames
(:mod:`~adapters.video._span_cut`). The spans run on ``decoders`` threads
started once (a thread started per span held the event loop 2-3 ms each, waiting
for the new thread to take the GIL from busy ones), and a finished span's decoder
leaves its file open for a later span to seek in
(:class:`~adapters.video._decoder.OpenFiles`): the file is opened once per
decoder, not once per span. The consumer reads the spans' queues one
after another, so frames, losses and their seq numbers come in the order one
decoder gives. One span more than threads is under way (the next free thread
takes it), and when the consumer has read a span to its end another is queued. A
span's queue holds up to a byte budget of frames, so the spans ahead decode
while the consumer reads the current one: memory stays bounded (``decoders + 1``
queues), the decoders never wait on each other.

Only a file whose container seeks by an index (MP4/MOV, Matroska/WebM) with at
least two spans is cut, and an H.264 stream only at IDR pictures (after a
non-IDR I picture, later pictures may still refer to earlier ones); anything
else decodes as one span.
"""

from __future__ import annotations

import bisect
import queue
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import anyio
import av.error

from adapters.errors import SourceOpenError
from adapters.video._bitstream import starts_anew
from adapters.video._decoder import DecoderThread, OpenFiles, thread_name
from adapters.video._events import Event, Opened
from adapters.video._opening import DecodeOptions
from adapters.video._prefetch import Prefetch
from adapters.video._probe import open_input, presents, select_stream
from adapters.video._segments import Range, cuts_apart, ranges_between
from fusion import Clock

Span = Range

_INDEXED = ("mov", "mp4", "matroska", "webm")
"""Container formats whose seeks land on the key frame asked (by their index)."""

MIN_SPAN_S = 1.0
"""Spans are at least this long (a key frame's open and seek is not free)."""

QUEUE_BYTES = 48 << 20
"""Decoded frames a span's queue may hold (a span ahead decodes into it)."""


@dataclass(frozen=True, slots=True)
class SpanPlan:
    """Where a file is cut, and what each span's queue holds."""

    spans: list[Span]
    frames: list[int]
    """Frames each span presents (its packets that give one)."""
    frame_bytes: int
    """Bytes of one delivered frame."""

    @property
    def capacity(self) -> int:
        """Frames a span's queue holds: :data:`QUEUE_BYTES` of them."""
        return max(1, min(4096, QUEUE_BYTES // max(1, self.frame_bytes)))

    def pays(self, decoders: int) -> bool:
        """Whether ``decoders`` side by side would decode the file at least 0.75 x
        ``decoders`` times as fast as one: the longest span is what the last decoder
        still works on when the others are done (a file of two key frames 250 frames
        apart and one 50 after gains 1.2x on two), and a span's queue must hold at
        least half a span, else the spans ahead soon wait for the consumer."""
        total = sum(self.frames)
        if len(self.spans) < 2 or total == 0 or decoders < 2:
            return False
        longest = max(self.frames)
        balanced = total / max(longest, total / decoders) >= 0.75 * decoders
        return balanced and 2 * self.capacity * len(self.spans) >= total


def _nal_length_size(ctx: Any) -> int | None:
    """Bytes of an H.264 stream's NAL lengths (its ``avcC`` record), ``None`` for Annex B."""
    extradata = ctx.extradata
    if ctx.name != "h264" or not extradata or extradata[0] != 1 or len(extradata) < 5:
        return None
    return int(extradata[4] & 0x03) + 1


def plan_spans(opts: DecodeOptions, min_span_s: float = MIN_SPAN_S) -> SpanPlan:
    """The file cut at key frames at least ``min_span_s`` apart into spans ``[start, end)``
    of stream PTS (demuxed, not decoded); one open span when it cannot be cut (not an
    indexed container, unreadable, or no two such key frames)."""
    whole = SpanPlan([(None, None)], [0], 0)
    try:
        container = open_input(opts.url, input_format=opts.input_format, options=opts.options)
    except SourceOpenError:
        return whole
    try:
        if not set(container.format.name.split(",")) & set(_INDEXED):
            return whole
        stream = select_stream(container, opts.url, opts.stream_index)
        ctx, tb = stream.codec_context, stream.time_base
        if tb is None:
            return whole
        keys: set[int] = set()
        shown: list[int] = []  # the PTS of every packet that gives a frame
        length_size = _nal_length_size(ctx)
        for p in container.demux(stream):
            if p.size and p.pts is not None and presents(p, ctx.name):
                shown.append(int(p.pts))
                if p.is_keyframe and starts_anew(ctx.name, memoryview(p), length_size):
                    keys.add(int(p.pts))
        w, h = opts.size if opts.size is not None else (ctx.width, ctx.height)
    except (av.error.FFmpegError, OSError, ValueError, SourceOpenError):
        return whole
    finally:
        container.close()
    cuts = cuts_apart(sorted(keys), max(1, round(min_span_s / tb)))
    frames = [0] * (len(cuts) + 1)
    for pts in shown:
        frames[bisect.bisect_right(cuts, pts)] += 1
    per_pixel = {"rgb24": 3.0, "bgr24": 3.0, "gray": 1.0, "yuv420p": 1.5}[opts.pixel_format]
    return SpanPlan(ranges_between(cuts), frames, int(w * h * per_pixel))


class _SpanThreads:
    """``count`` threads that run the span decoders given them, one after another."""

    def __init__(self, count: int, name: str) -> None:
        self._jobs: queue.SimpleQueue[DecoderThread | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=name, daemon=True) for _ in range(count)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def run(self, decoder: DecoderThread) -> None:
        """Queue ``decoder``: the next free thread runs it (no wait here)."""
        self._jobs.put(decoder)

    def _work(self) -> None:
        while (decoder := self._jobs.get()) is not None:
            decoder.run_here()

    def close(self) -> None:
        """Each thread ends after the decoders queued before this."""
        for _ in self._threads:
            self._jobs.put(None)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every thread (``timeout`` each); True if all ended."""
        for thread in self._threads:
            if thread.ident is not None:  # started
                thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)


class SpanDecoders:
    """``spans`` of one file, ``decoders`` at a time; :meth:`get` gives their events in
    span order (one ``Opened``, the first span's)."""

    def __init__(
        self,
        opts: DecodeOptions,
        spans: list[Span],
        decoders: int,
        clock: Clock,
        capacity: int,
        wake_after: int,
    ) -> None:
        self.opts = opts
        self._spans = deque(spans)
        self._decoders = max(1, decoders)
        self._clock = clock
        self._capacity = capacity
        self._wake_after = max(1, min(wake_after, capacity))
        self._running: deque[DecoderThread] = deque()
        self._opened = False
        self._stopped = False
        self._lock = threading.Lock()
        self._files = OpenFiles(self._decoders)
        self._threads = _SpanThreads(min(self._decoders, len(spans)), thread_name(opts))
        self.high_water = 0
        """Most frames any span's queue held."""

    def start(self) -> None:
        self._threads.start()
        self._top_up()

    def _top_up(self) -> None:
        """One span more than threads is under way: a thread that finishes its span while
        the consumer still reads an earlier one starts the next at once (6 % of the
        decoders' time went idle waiting for the consumer to pass the other's span)."""
        while len(self._running) <= self._decoders and self._spans and not self._stopped:
            self._start_next()

    def _start_next(self) -> None:
        span = self._spans.popleft()
        one = replace(self.opts, span=span, threads=1, thread_type="NONE")
        queue: Prefetch[Event] = Prefetch(self._capacity, wake_after=self._wake_after)
        decoder = DecoderThread(one, queue, self._clock, self._files)
        with self._lock:
            if self._stopped:
                return
            self._running.append(decoder)
        self._threads.run(decoder)

    async def get(self) -> Event:
        """The next event in span order; ``anyio.EndOfStream`` after the last span."""
        while self._running:
            head = self._running[0]
            try:
                event = await head.prefetch.get()
            except anyio.EndOfStream:
                self.high_water = max(self.high_water, head.prefetch.high_water)
                with self._lock:
                    self._running.popleft()
                self._top_up()
                continue
            if isinstance(event, Opened):
                if self._opened:
                    continue  # every span opens the file: it was said once
                self._opened = True
            return event
        self.close()  # every span read: the files left open and the threads go
        raise anyio.EndOfStream

    @property
    def repaced(self) -> int:
        return 0  # a file's frames are not re-paced

    @property
    def spans_left(self) -> int:
        return len(self._spans) + len(self._running)

    def close(self) -> None:
        """The consumer is done: every running decoder stops."""
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for decoder in running:
            self.high_water = max(self.high_water, decoder.prefetch.high_water)
            decoder.prefetch.close()
            decoder.stop()
        self._files.close()
        self._threads.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every decoder thread (``timeout`` each); True if all ended."""
        return self._threads.join(timeout)
