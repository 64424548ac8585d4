"""One FFmpeg thread or FFmpeg's own: what a file's decoder runs, paced by its consumer.

A consumer that keeps every core busy (a CPU :class:`~fusion.workers.BatchWorker`
in its default layout) tells the source its CPU per frame ``m``
(:meth:`fusion.Source.pace_decoder`). With one FFmpeg thread the decoder
delivers ``1 / d`` frames a second on one core (``d``: its CPU per frame,
decoding and converting); the ``cores - 1`` others run the consumer, so one
thread keeps up when ``m >= (cores - 1) * d``, and then it is the cheaper
choice: FFmpeg's automatic frame threads on top of busy cores cost 0.15-0.4 ms
more per 720p H.264 frame (measured, BENCHMARKS.md "At the machine's limit").
Otherwise the decoder is the bottleneck: a file that can be cut at its key
frames (:mod:`~adapters.video._spans`) is decoded as spans by ``cores``
one-thread decoders side by side (each frame at one thread's cost, on every
core); anything else keeps FFmpeg's threads.

``d`` is measured before ``frames()`` starts: the first frames of the file
decoded and converted as the source will (one thread, this thread's CPU time,
which a busy neighbour does not inflate), the first frame left out (it opens
the decoder). The first frames are an intra frame's GOP start, dearer than the
rest: the choice leans to FFmpeg's threads, the safe side. A local file's cost
is kept for the process (by path, size, modification time and conversion): a
file streamed again is not probed again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import av.error

from adapters.errors import SourceOpenError
from adapters.video._convert import PixelConverter
from adapters.video._opening import DecodeOptions
from adapters.video._probe import open_input, select_stream
from adapters.video._spans import SpanPlan, plan_spans

PROBE_FRAMES = 8
"""Frames timed after the first."""


@dataclass(frozen=True, slots=True)
class Pacing:
    """What the consumer said: its CPU seconds per frame, on how many cores."""

    consumer_cpu_s: float
    cores: int


_measured: dict[tuple[object, ...], float] = {}
"""Decode costs by file (path, size, modification time) and conversion: measured once
a process, so a file streamed again (a benchmark's rounds) is not probed again."""


def decode_cpu_per_frame(opts: DecodeOptions, frames: int = PROBE_FRAMES) -> float | None:
    """This thread's CPU seconds per frame decoding the file's first frames on one
    FFmpeg thread and converting them as ``opts`` asks; ``None`` when the file has
    fewer than two frames or will not open (``frames()`` then says why)."""
    key: tuple[object, ...] | None = None
    try:
        stat = os.stat(opts.url)
    except OSError:
        pass  # not a local file: measured each time
    else:
        key = (opts.url, stat.st_size, stat.st_mtime_ns, opts.stream_index, opts.pixel_format)
        key += (opts.size, opts.interpolation, opts.sws_threads, frames)
        if key in _measured:
            return _measured[key]
    cost = _probe(opts, frames)
    if cost is not None and key is not None:
        _measured[key] = cost
    return cost


def _probe(opts: DecodeOptions, frames: int) -> float | None:
    try:
        container = open_input(opts.url, input_format=opts.input_format, options=opts.options)
    except SourceOpenError:
        return None
    try:
        stream = select_stream(container, opts.url, opts.stream_index)
        stream.codec_context.thread_count = 1
        stream.codec_context.thread_type = "NONE"
        converter = PixelConverter(
            opts.pixel_format,
            size=opts.size,
            interpolation=opts.interpolation,
            threads=opts.sws_threads,
        )
        n, start = -1, 0.0
        for frame in container.decode(stream):
            converter.convert(frame)
            n += 1
            if n == 0:
                start = time.thread_time()
            elif n == frames:
                break
        return (time.thread_time() - start) / n if n > 0 else None
    except (av.error.FFmpegError, OSError, ValueError, SourceOpenError):
        # a probe only: frames() opens the input again and reports what is wrong
        return None
    finally:
        container.close()


@dataclass(frozen=True, slots=True)
class Decoding:
    """How a file is decoded: FFmpeg threads, or spans on one-thread decoders."""

    threads: int
    why: str
    plan: SpanPlan | None = None
    """Set when the file is decoded as key-frame spans, ``decoders`` at a time."""
    decoders: int = 1


def choose_decoding(opts: DecodeOptions, pacing: Pacing) -> Decoding:
    """:func:`choose_threads`, then, where the decoder is the bottleneck on two cores or
    more, key-frame spans on ``cores`` one-thread decoders when the file can be cut
    where that pays (:meth:`~adapters.video._spans.SpanPlan.pays`)."""
    threads, why = choose_threads(opts, pacing)
    if threads == 1 or pacing.cores < 2 or opts.keep_packets or opts.threads:
        return Decoding(threads, why)
    plan = plan_spans(opts)
    if not plan.pays(pacing.cores):
        return Decoding(threads, why)
    figures = why.split(" (", 1)[-1]
    return Decoding(
        1,
        f"spans: {len(plan.spans)} key-frame spans, {pacing.cores} at a time on one thread "
        f"each: the decoder is the bottleneck ({figures}",
        plan,
        pacing.cores,
    )


def choose_threads(opts: DecodeOptions, pacing: Pacing) -> tuple[int, str]:
    """``(FFmpeg threads, why)`` for the file ``opts`` names: its decode cost measured
    (:func:`decode_cpu_per_frame`), then :func:`threads_for`."""
    return threads_for(decode_cpu_per_frame(opts), pacing, opts.threads)


def threads_for(d: float | None, pacing: Pacing, threads: int = 0) -> tuple[int, str]:
    """``(FFmpeg threads, why)``: 1 when one core decoding at ``d`` CPU seconds per frame
    keeps up with the consumer on the other cores, else ``threads`` (0: FFmpeg's
    automatic threads)."""
    m = pacing.consumer_cpu_s
    if d is None:
        return threads, "automatic: the decode cost could not be measured"
    figures = f"decode {d * 1e3:.2f} ms, consumer {m * 1e3:.2f} ms per frame, {pacing.cores} cores"
    if m >= (pacing.cores - 1) * d:
        return 1, f"1 thread: one core decoding keeps up ({figures})"
    return threads, f"automatic: the decoder is the bottleneck ({figures})"
