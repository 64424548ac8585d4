"""The audio decoder thread: open with PyAV, demux one audio stream, decode, resample to
float32 planar, cut into frames (:class:`~adapters.audio._framer.Framer`).

Runs in its own thread (blocking FFmpeg calls), stoppable within a poll by
:mod:`adapters.video.interrupt`; hands batches of :class:`Item` s to the event
loop through a :class:`~adapters.video.prefetch.Prefetch`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import av
import av.error
import numpy as np

from adapters.audio._framer import Cut, Discontinuity, Framer
from adapters.errors import SourceOpenError
from adapters.video import interrupt

AUDIO_DEVICES = ("alsa", "pulse", "avfoundation", "dshow", "oss", "jack", "openal", "lavfi")
"""FFmpeg input formats that capture audio from a device (live)."""


@dataclass(frozen=True, slots=True)
class Opened:
    """What the input is, known once it is open."""

    codec: str
    rate: int
    channels: int
    layout: str
    source_rate: int
    source_layout: str
    time_base: Fraction
    start_index: int | None
    """The stream's first sample index at the output rate (its start PTS), if known."""
    duration_samples: int | None


@dataclass(frozen=True, slots=True)
class Loss:
    reason: str
    message: str
    units: int


@dataclass(slots=True)
class Batch:
    """What one read of the decoder thread made."""

    items: list[Cut | Discontinuity | Loss | Opened] = field(default_factory=list)
    arrival: int | None = None


@dataclass(frozen=True, slots=True)
class AudioOptions:
    url: str
    stream: int
    frame_samples: int | None
    frame_ms: float
    rate: int | None
    layout: str | None
    input_format: str | None
    options: dict[str, str]
    live: bool
    open_timeout: float | None
    read_timeout: float | None


def _open(opts: AudioOptions) -> Any:
    if "://" not in opts.url and opts.input_format is None and not os.path.exists(opts.url):
        raise SourceOpenError(f"audio file {opts.url!r} does not exist")
    timeout = (opts.open_timeout, opts.read_timeout) if opts.live else None
    try:
        return av.open(
            opts.url, "r", format=opts.input_format, options=dict(opts.options), timeout=timeout
        )
    except av.error.InvalidDataError as err:
        raise SourceOpenError(
            f"{opts.url!r} is not a container FFmpeg can read (unrecognised or damaged)"
        ) from err
    except av.error.ExitError as err:
        raise SourceOpenError(
            f"cannot open {opts.url!r}: no data received within {opts.open_timeout:g} s"
        ) from err
    except (av.error.FFmpegError, OSError) as err:
        raise SourceOpenError(f"cannot open {opts.url!r}: {err}") from err


def _stream(container: Any, opts: AudioOptions) -> Any:
    audio = container.streams.audio
    if not audio:
        kinds = sorted({str(s.type) for s in container.streams}) or ["none"]
        raise SourceOpenError(f"{opts.url!r} has no audio stream (streams: {', '.join(kinds)})")
    if not 0 <= opts.stream < len(audio):
        raise SourceOpenError(
            f"{opts.url!r} has {len(audio)} audio stream(s); audio stream {opts.stream} was "
            "requested"
        )
    return audio[opts.stream]


def decode(
    opts: AudioOptions,
    put: Callable[[Batch], bool],
    stop: threading.Event,
    now: Callable[[], int],
) -> None:
    """The thread's body: open, then a :class:`Batch` per packet read until the end, a
    stop or ``put`` returning False (the consumer is gone). Errors opening raise."""
    interrupt.install()
    with interrupt.stoppable(stop):
        container = _open(opts)
        try:
            _run(container, opts, put, stop, now)
        finally:
            container.close()


def _run(
    container: Any,
    opts: AudioOptions,
    put: Callable[[Batch], bool],
    stop: threading.Event,
    now: Callable[[], int],
) -> None:
    stream = _stream(container, opts)
    ctx = stream.codec_context
    source_rate = int(ctx.sample_rate or stream.rate or 0)
    if source_rate <= 0:
        raise SourceOpenError(f"{opts.url!r}: audio stream {opts.stream} states no sample rate")
    rate = opts.rate or source_rate
    source_layout = str(ctx.layout.name) if ctx.layout is not None else "mono"
    layout = opts.layout or source_layout
    resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
    channels = len(av.AudioLayout(layout).channels)
    size = opts.frame_samples or max(1, round(rate * opts.frame_ms / 1000))
    tb = stream.time_base or Fraction(1, source_rate)
    start = None if stream.start_time is None else round(stream.start_time * tb * rate)
    duration = None if stream.duration is None else round(stream.duration * tb * rate)
    opened = Opened(
        str(ctx.name), rate, channels, layout, source_rate, source_layout, tb, start, duration
    )
    if not put(Batch([opened])):
        return
    framer = Framer(size, channels)
    seq = 0
    carry = 0  # units of packets that made no samples yet (a decoder's delay): they ride
    # with the next samples
    for packet in container.demux(stream):
        if stop.is_set():
            return
        arrival = now() if opts.live else None
        batch = Batch(arrival=arrival)
        flushing = packet.size == 0
        if not flushing:
            seq += 1
        try:
            decoded = packet.decode()
        except av.error.FFmpegError as err:
            batch.items.append(
                Loss("undecodable", f"{opts.url}: audio packet {seq} (pts {packet.pts}): {err}", 1)
            )
            if not put(batch):
                return
            continue
        chunks = [c for f in decoded for c in resampler.resample(f)]
        if flushing:
            chunks += resampler.resample(None)
        carry += 0 if flushing else 1
        carry = _push(framer, chunks, carry, batch.items)
        if batch.items and not put(batch):
            return
    tail = Batch()
    carry = _push(framer, resampler.resample(None), carry, tail.items)
    tail.items += framer.flush(carry)
    put(tail)


def _push(framer: Framer, chunks: list[Any], units: int, out: list[Any]) -> int:
    """Each chunk into ``framer`` (the last carrying ``units``); the units still carried."""
    for i, chunk in enumerate(chunks):
        samples = chunk.to_ndarray()
        if samples.dtype != np.float32:
            samples = samples.astype(np.float32)
        index = None if chunk.pts is None else int(chunk.pts)
        out += framer.push(samples, index, units if i == len(chunks) - 1 else 0)
    return units if not chunks else 0


def monotonic_ns() -> int:
    return time.monotonic_ns()
