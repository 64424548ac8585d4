"""The audio decoder thread: open with PyAV, demux one audio stream, decode, resample to
float32 planar, cut into frames (:class:`~adapters.audio._framer.Framer`); reopen a live
network input that went quiet.

Runs in its own thread (blocking FFmpeg calls), stoppable within a poll by
:mod:`adapters.video._interrupt`; hands batches of items to the event loop through a
:class:`~adapters.video._prefetch.Prefetch`.

Reconnecting. A live *network* input (``udp://``, ``rtp://``, ``rtsp://``, an SDP file
...) whose read times out, fails or ends is a sender that stopped: the frame being filled
goes out short (``partial``), a :class:`Silence` says why, and the input is reopened with
bounded exponential backoff (each refused attempt an :class:`OpenFailed`). The reopened
stream is a new connection with its own PTS epoch (a restarted sender counts from
anywhere): framing starts over and a :class:`Reconnected` says where the new timeline
starts against where the old one ended. Files and capture devices end at EOF or at their
first read error as before.
"""

from __future__ import annotations

import math
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
from adapters.errors import DecodeError, SourceOpenError
from adapters.video import _interrupt as interrupt

AUDIO_DEVICES = ("alsa", "pulse", "avfoundation", "dshow", "oss", "jack", "openal", "lavfi")
"""FFmpeg input formats that capture audio from a device (live)."""

SDP_PROTOCOLS = "file,udp,rtp,crypto,data"
"""``protocol_whitelist`` given to an SDP input unless the options name one: FFmpeg refuses
to let a session description open ``udp``/``rtp`` otherwise."""


@dataclass(frozen=True, slots=True)
class Opened:
    """What the input is, known once it is open (again, after a reconnect)."""

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
    connection: int = 0
    """0 for the first open, then one more per reconnect."""


@dataclass(frozen=True, slots=True)
class Loss:
    reason: str
    message: str
    units: int


@dataclass(frozen=True, slots=True)
class Silence:
    """A live network input stopped delivering (``reason``: a read timeout, a read error,
    the end of the stream); it is about to be reopened."""

    reason: str
    connection: int
    last_index: int | None
    """The sample index the stream would have gone on at."""


@dataclass(frozen=True, slots=True)
class OpenFailed:
    """A reopen attempt was refused; the next is ``retry_in_s`` away (None: giving up)."""

    reason: str
    attempt: int
    retry_in_s: float | None


@dataclass(frozen=True, slots=True)
class Reconnected:
    """Connection ``connection`` delivered its first samples: its timeline starts at
    ``found`` where the last one would have gone on at ``expected``."""

    connection: int
    expected: int | None
    found: int
    attempts: int


Item = Cut | Discontinuity | Loss | Opened | Silence | OpenFailed | Reconnected


@dataclass(slots=True)
class Batch:
    """What one read of the decoder thread made."""

    items: list[Item] = field(default_factory=list)
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
    reconnect: bool = False
    backoff_initial: float = 0.1
    backoff_max: float = 2.0
    max_reconnects: int | None = None


def is_sdp(url: str, input_format: str | None) -> bool:
    """Whether the input is an RTP session description (an ``.sdp`` file)."""
    return input_format == "sdp" or (input_format is None and url.lower().endswith(".sdp"))


def is_network(url: str, input_format: str | None) -> bool:
    """Whether the input is a network stream (reconnected when live), not a file or device."""
    if input_format in AUDIO_DEVICES:
        return False
    return ("://" in url and not url.lower().startswith("file:")) or is_sdp(url, input_format)


def _open(opts: AudioOptions) -> Any:
    if (
        "://" not in opts.url
        and opts.input_format not in AUDIO_DEVICES
        and not os.path.exists(opts.url)
    ):
        raise SourceOpenError(f"audio file {opts.url!r} does not exist")
    if opts.input_format is not None and opts.input_format not in av.formats_available:
        have = sorted(f for f in AUDIO_DEVICES if f in av.formats_available)
        raise SourceOpenError(
            f"this FFmpeg (PyAV {av.__version__}) has no {opts.input_format!r} input; its "
            f"capture inputs: {', '.join(have) or 'none'}"
        )
    options = dict(opts.options)
    if is_sdp(opts.url, opts.input_format):
        options.setdefault("protocol_whitelist", SDP_PROTOCOLS)
    if "listen" in options.get("rtsp_flags", "").split("+"):
        # an RTSP server waiting for a sender: FFmpeg's default (-1 s) overflows (ERANGE);
        # the open timeout bounds the wait instead
        wait = math.ceil(opts.open_timeout) if opts.open_timeout else 2**31 // 1000 - 1
        options.setdefault("listen_timeout", str(wait))
    timeout = (opts.open_timeout, opts.read_timeout) if opts.live else None
    try:
        return av.open(opts.url, "r", format=opts.input_format, options=options, timeout=timeout)
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


def _transient(err: SourceOpenError) -> bool:
    """An open failure worth retrying: timeouts, refused or reset connections."""
    cause = err.__cause__
    return isinstance(cause, (OSError, EOFError, av.error.ExitError)) and not isinstance(
        cause,
        (av.error.FileNotFoundError, av.error.ProtocolNotFoundError, av.error.PermissionError),
    )


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


DEVICE_SLACK_S = 0.05
"""A capture device's PTS further than this (or a frame) from the samples counted since
its first is a gap (an overrun lost samples) or an overlap; closer, it is clock jitter."""


def _slack(opts: AudioOptions, rate: int, size: int) -> int:
    """Samples a chunk's PTS may differ from where the last ended and still follow it: 1
    (a resampler's rounding) where PTS counts samples; for a capture device, whose
    packets are stamped with the host's clock when read (ALSA, PulseAudio ...), the larger
    of a frame and :data:`DEVICE_SLACK_S`."""
    if opts.input_format in AUDIO_DEVICES and opts.input_format != "lavfi":
        return max(size, round(rate * DEVICE_SLACK_S))
    return 1


def backoff_delay(opts: AudioOptions, attempt: int) -> float | None:
    """Seconds before reopen ``attempt`` (0, 1, ...): doubling from ``backoff_initial`` up to
    ``backoff_max``; None once ``max_reconnects`` attempts were made."""
    if opts.max_reconnects is not None and attempt >= opts.max_reconnects:
        return None
    return float(min(opts.backoff_max, opts.backoff_initial * 2 ** min(attempt, 60)))


class _Lost(Exception):
    """A live network read failed or the stream ended: reopen. ``index``: the sample index
    the stream would have gone on at."""

    def __init__(self, index: int | None) -> None:
        super().__init__(index)
        self.index = index


def decode(
    opts: AudioOptions,
    put: Callable[[Batch], bool],
    stop: threading.Event,
    now: Callable[[], int],
) -> None:
    """The thread's body: open, then a :class:`Batch` per packet read until the end, a
    stop or ``put`` returning False (the consumer is gone). A live network input is
    reopened (see the module docstring) unless ``opts.reconnect`` is off; errors opening
    (the first time, or for good) raise."""
    interrupt.install()
    with interrupt.stoppable(stop):
        connection = 0
        attempts = 0
        last_index: int | None = None
        while not stop.is_set():
            try:
                container = _open(opts)
            except SourceOpenError as err:
                if stop.is_set():
                    return
                if not (opts.reconnect and _transient(err)):
                    raise
                delay = backoff_delay(opts, attempts)
                if not put(Batch([OpenFailed(str(err), attempts, delay)])):
                    return
                if delay is None:
                    raise SourceOpenError(
                        f"{opts.url!r}: gave up after {attempts} attempts: {err}"
                    ) from err
                attempts += 1
                if stop.wait(delay):  # real time: the socket timeouts are real time too
                    return
                continue
            try:
                last_index = _run(container, opts, put, stop, now, connection, attempts, last_index)
                return  # the end of a file, a device, or a stop
            except _Lost as lost:
                if stop.is_set():
                    return
                last_index = lost.index
                connection += 1
                attempts = 0
            finally:
                container.close()


# long: the decode thread's one loop: read, resample, batch and reconnect share the container and
#   stop state (as video's DecoderThread)
def _run(
    container: Any,
    opts: AudioOptions,
    put: Callable[[Batch], bool],
    stop: threading.Event,
    now: Callable[[], int],
    connection: int,
    attempts: int,
    last_index: int | None,
) -> int | None:
    """One connection, to its end; raises :class:`_Lost` when a live network input should be
    reopened (after saying so), returns the index the stream ended at otherwise."""
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
        str(ctx.name), rate, channels, layout, source_rate, source_layout, tb, start, duration,
        connection,
    )  # fmt: skip
    if not put(Batch([opened])):
        return None
    framer = Framer(size, channels, slack=_slack(opts, rate, size))
    reopen = opts.reconnect and is_network(opts.url, opts.input_format)
    seq = 0
    carry = 0  # units of packets that made no samples yet (a decoder's delay): they ride
    # with the next samples
    packets = container.demux(stream)
    announced = connection == 0
    last: int | None = None  # the last packet's arrival: the silence starts there
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            if not reopen or stop.is_set():
                break
            _end_connection(
                framer, resampler, carry, put, "the stream ended", connection, last or now()
            )
            raise _Lost(framer.next_index) from None
        except (av.error.FFmpegError, OSError, EOFError) as err:
            if stop.is_set():
                raise
            timed_out = isinstance(err, (av.error.ExitError, TimeoutError))
            reason = (
                f"no data for {opts.read_timeout:g} s (read_timeout)"
                if timed_out and opts.read_timeout is not None
                else f"read failed: {err}"
            )
            if not reopen:
                if opts.live:
                    raise DecodeError(f"{opts.url!r}: {reason}") from err
                raise
            _end_connection(framer, resampler, carry, put, reason, connection, last or now())
            raise _Lost(framer.next_index) from err
        if stop.is_set():
            return None
        arrival = now() if opts.live else None
        last = arrival
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
                return None
            continue
        chunks = [c for f in decoded for c in resampler.resample(f)]
        if flushing:
            chunks += resampler.resample(None)
        if not announced and chunks:
            first = None if chunks[0].pts is None else int(chunks[0].pts)
            batch.items.append(
                Reconnected(connection, last_index, first if first is not None else 0, attempts)
            )
            announced = True
        carry += 0 if flushing else 1
        carry = _push(framer, chunks, carry, batch.items)
        if batch.items and not put(batch):
            return None
    tail = Batch()
    carry = _push(framer, resampler.resample(None), carry, tail.items)
    tail.items += framer.flush(carry)
    put(tail)
    return framer.next_index


def _end_connection(
    framer: Framer,
    resampler: Any,
    carry: int,
    put: Callable[[Batch], bool],
    reason: str,
    connection: int,
    arrival: int,
) -> None:
    """The frame being filled (and what the resampler holds) goes out short, then a
    :class:`Silence`."""
    tail = Batch(arrival=arrival)
    carry = _push(framer, resampler.resample(None), carry, tail.items)
    tail.items += framer.flush(carry)
    tail.items.append(Silence(reason, connection, framer.next_index))
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
