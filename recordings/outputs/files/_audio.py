"""Audio frames out: a WAV file per sensor, or an audio track beside the video of an MP4/MKV.

Theory of operation. An audio frame (:class:`adapters.AudioSource`, kind
``audio``) holds float32 PCM samples shaped ``(channels, samples)`` and its
sample rate in ``meta["rate"]``; its ``t`` is the time of its first sample.
A file holds one continuous run of samples, so the frames are laid on a
sample timeline (:class:`Timeline`, sans-I/O): frame ``k`` starts at sample
``round((t_k - t_zero) * rate / 1e9)``. A start within one sample of where the
last frame ended is taken as contiguous (the floor in ``t = index * 1e9 //
rate``), so an unbroken stream is written sample for sample. A later start is
a gap (samples the stream lost): it is filled with silence, so every later
sample stays at its own time, and counted in a note. An earlier start (samples
repeated: a sender that restarted) drops the repeated samples, also counted;
a frame wholly repeated is skipped with that reason.

WAV: ``pcm_f32le`` (IEEE float), so the recorded samples come back bit for
bit; ``t_zero`` is the first frame's ``t``. MP4/MKV: :class:`AudioTrack` adds
an audio stream to the video's container (AAC in MP4, ``pcm_f32le`` in MKV,
or ``flac``) whose presentation times are samples from the same ``t_zero``
as the video's (the earliest ``t`` of both), so players keep the two in sync;
the track is muxed as the video goes (:meth:`AudioTrack.mux_until`), a frame
at a time, so memory stays flat. AAC takes fixed 1024-sample frames: the
samples are re-cut for the encoder, times unchanged.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from fusion import Frame

NS = 1_000_000_000

CODECS = {"mp4": "aac", "mov": "aac", "matroska": "pcm_f32le", "wav": "pcm_f32le"}
"""The audio codec each container gets by default (``flac`` may be asked for MKV)."""

_FORMATS = {"aac": "fltp", "pcm_f32le": "flt", "flac": "s32"}


def pcm_of(frame: Frame) -> np.ndarray | str:
    """``frame``'s samples as float32 ``(channels, samples)``, or why it holds none."""
    data = frame.data
    if not isinstance(data, np.ndarray) or data.dtype.names is not None:
        return "not PCM audio (a float array of channels x samples)"
    if data.ndim != 2 or data.dtype.kind != "f" or not 1 <= data.shape[0] <= 64:
        return f"not PCM audio (array {data.dtype} {data.shape}, want float channels x samples)"
    return np.ascontiguousarray(data, np.float32)


def rate_of(frame: Frame) -> int | None:
    """The sample rate a frame carries (``meta["rate"]``), or ``None``."""
    rate = frame.meta.get("rate")
    if isinstance(rate, (int, np.integer)) and not isinstance(rate, bool) and 0 < rate <= 10**7:
        return int(rate)
    return None


def is_audio(frame: Frame, sensor_kind: str) -> bool:
    """Whether ``frame`` is written as audio: an ``audio`` sensor's PCM frame with its rate."""
    return (
        sensor_kind == "audio" and rate_of(frame) is not None and not isinstance(pcm_of(frame), str)
    )


@dataclass(slots=True)
class Timeline:
    """Frames in (:meth:`place`), samples at their place on one timeline out (sans-I/O).

    ``zero`` (ns) is the time of sample 0. The first frame fixes the rate and
    the channel count; a frame that differs is refused (``place`` returns why).
    """

    zero: int
    rate: int | None = None
    channels: int | None = None
    end: int | None = None
    """Where the last frame ended (samples), ``None`` before the first."""
    gap_samples: int = 0
    gaps: int = 0
    overlap_samples: int = 0
    overlaps: int = 0

    def place(self, frame: Frame) -> tuple[int, int, np.ndarray] | str:
        """``(start, silence, samples)``: ``silence`` zeros to write first, then ``samples``
        from sample ``start``; or why the frame cannot be written."""
        pcm = pcm_of(frame)
        if isinstance(pcm, str):
            return pcm
        rate = rate_of(frame)
        if rate is None:
            return "no sample rate (meta['rate'])"
        if self.rate is None:
            self.rate, self.channels = rate, pcm.shape[0]
        if rate != self.rate:
            return f"sample rate {rate} Hz differs from the first frame's {self.rate} Hz"
        if pcm.shape[0] != self.channels:
            return f"{pcm.shape[0]} channel(s), the first frame had {self.channels}"
        at = round((frame.t - self.zero) * rate / NS)
        if self.end is None:
            if at < 0:
                return "before the track's start"
            self.end = at
        silence = 0
        if abs(at - self.end) > 1:
            if at > self.end:
                silence = at - self.end
                self.gaps += 1
                self.gap_samples += silence
            else:
                cut = self.end - at
                self.overlaps += 1
                self.overlap_samples += min(cut, pcm.shape[1])
                if cut >= pcm.shape[1]:
                    return "its samples repeat ones already written (its time went back)"
                pcm = pcm[:, cut:]
        start = self.end + silence
        self.end = start + pcm.shape[1]
        return start, silence, pcm

    def notes(self, sensor: str) -> list[str]:
        """Lines for the export's notes: gaps filled and overlaps cut, with their length."""
        out = []
        rate = self.rate or 1
        if self.gaps:
            out.append(
                f"{sensor}: {self.gaps} gap(s) in the audio filled with "
                f"{self.gap_samples} samples of silence ({self.gap_samples / rate * 1000:.3f} ms)"
            )
        if self.overlaps:
            out.append(
                f"{sensor}: {self.overlaps} frame(s) repeated {self.overlap_samples} samples "
                f"already written ({self.overlap_samples / rate * 1000:.3f} ms); left out"
            )
        return out


@dataclass(slots=True)
class AudioResult:
    """What an audio export wrote: frames, frames skipped by reason, notes."""

    written: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


class AudioTrack:
    """One audio sensor's frames as a stream of an open PyAV output container.

    ``frames`` are read lazily; ``zero`` is the ``t`` of the container's time 0.
    Call :meth:`open` before the container writes its header, :meth:`mux_until`
    as the video goes, :meth:`close` before the container closes.
    """

    def __init__(
        self, sensor: str, frames: Iterable[Frame], zero: int, codec: str | None = None
    ) -> None:
        self.sensor = sensor
        self.codec = codec
        self.timeline = Timeline(zero)
        self.result = AudioResult()
        self._frames = iter(frames)
        self._next: Frame | None = None
        self._stream: Any = None
        self._container: Any = None
        self._pending: list[np.ndarray] = []  # samples not yet handed to the encoder
        self._pending_n = 0
        self._pts: int | None = None  # sample index of the first pending sample
        self._done = False

    @staticmethod
    def first_t(frames: Iterable[Frame]) -> int | None:
        """The ``t`` of the first frame of ``frames`` (which it reads one of), or ``None``."""
        return next((f.t for f in frames), None)

    def open(self, av: Any, container: Any, fmt: str) -> bool:
        """Add the stream (from the first writable frame); ``False`` if there is none."""
        while True:
            frame = next(self._frames, None)
            if frame is None:
                self._done = True
                return False
            if is_audio(frame, "audio") and frame.t >= self.timeline.zero:
                break
            why = pcm_of(frame)
            reason = why if isinstance(why, str) else "no sample rate (meta['rate'])"
            if not isinstance(why, str) and rate_of(frame) is not None:
                reason = "before the track's start"
            self.result.skipped[reason] += 1
        self._next = frame
        rate = rate_of(frame)
        channels = frame.data.shape[0]
        codec = self.codec or CODECS.get(fmt, "aac")
        self.codec = codec
        stream = container.add_stream(codec, rate=rate)
        stream.layout = _layout(av, frame.meta.get("layout"), channels)
        stream.format = _FORMATS.get(codec, "fltp")
        stream.time_base = Fraction(1, rate)
        stream.codec_context.time_base = Fraction(1, rate)
        self._stream, self._container = stream, container
        self._av = av
        return True

    def mux_until(self, t: int | None) -> None:
        """Encode and mux every frame with ``t`` at or before ``t`` (all when ``None``)."""
        if self._stream is None:
            return
        while True:
            frame = self._next if self._next is not None else next(self._frames, None)
            self._next = None
            if frame is None:
                self._done = True
                return
            if t is not None and frame.t > t:
                self._next = frame
                return
            placed = self.timeline.place(frame)
            if isinstance(placed, str):
                self.result.skipped[placed] += 1
                continue
            start, silence, pcm = placed
            if self._pts is None:
                self._pts = start - silence
            if silence:
                self._push(np.zeros((pcm.shape[0], silence), np.float32))
            self._push(pcm)
            self.result.written += 1

    def _push(self, pcm: np.ndarray) -> None:
        self._pending.append(pcm)
        self._pending_n += pcm.shape[1]
        size = self._stream.codec_context.frame_size or 0
        if size == 0:  # PCM and FLAC take any length
            self._encode(self._take(self._pending_n))
            return
        while self._pending_n >= size:
            self._encode(self._take(size))

    def _take(self, n: int) -> np.ndarray:
        joined = (
            np.concatenate(self._pending, axis=1) if len(self._pending) > 1 else self._pending[0]
        )
        out, rest = joined[:, :n], joined[:, n:]
        self._pending = [rest] if rest.shape[1] else []
        self._pending_n = rest.shape[1]
        return out

    def _encode(self, pcm: np.ndarray | None) -> None:
        av, stream = self._av, self._stream
        if pcm is None:
            self._container.mux(stream.encode(None))
            return
        if pcm.shape[1] == 0:
            return
        fmt = stream.format.name
        layout = stream.layout.name
        if fmt == "flt":  # packed: samples interleaved, one plane
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(pcm.T).reshape(1, -1), format="flt", layout=layout
            )
        elif fmt == "s32":
            ints = np.clip(np.rint(pcm.T * 2**31), -(2**31), 2**31 - 1).astype(np.int32)
            frame = av.AudioFrame.from_ndarray(ints.reshape(1, -1), format="s32", layout=layout)
        else:
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(pcm), format="fltp", layout=layout
            )
        frame.sample_rate = self.timeline.rate
        assert self._pts is not None
        frame.pts = self._pts
        frame.time_base = stream.time_base
        self._pts += pcm.shape[1]
        self._container.mux(stream.encode(frame))

    def close(self) -> AudioResult:
        """Mux what is left, flush the encoder; the result with the timeline's notes."""
        if self._stream is not None:
            self.mux_until(None)
            if self._pending_n:
                self._encode(self._take(self._pending_n))
            self._encode(None)
            self._stream = None
        self.result.notes.extend(self.timeline.notes(self.sensor))
        return self.result


def export_wav(
    frames: Iterable[Frame], path: str | os.PathLike[str], sensor: str = "audio"
) -> AudioResult:
    """Write one audio sensor's frames to a float WAV at ``path`` (samples bit for bit;
    gaps filled with silence, see the module's docstring). Nothing is written (and
    ``written`` is 0) when no frame holds PCM audio with its rate."""
    import av

    it: Iterator[Frame] = iter(frames)
    first = None
    result = AudioResult()
    for frame in it:
        if is_audio(frame, "audio"):
            first = frame
            break
        why = pcm_of(frame)
        result.skipped[why if isinstance(why, str) else "no sample rate (meta['rate'])"] += 1
    if first is None:
        return result
    container = av.open(os.fspath(path), "w", format="wav")
    try:
        track = AudioTrack(sensor, _chain(first, it), first.t, codec="pcm_f32le")
        track.open(av, container, "wav")
        track.mux_until(None)
        got = track.close()
    finally:
        container.close()
    got.skipped.update(result.skipped)
    return got


def _layout(av: Any, name: object, channels: int) -> Any:
    """The frame's own layout (``meta["layout"]``) when it has ``channels``; else FFmpeg's
    default for that many channels."""
    if isinstance(name, str):
        try:
            layout = av.AudioLayout(name)
        except (ValueError, av.error.FFmpegError):
            layout = None
        if layout is not None and layout.nb_channels == channels:
            return layout
    return av.AudioLayout({1: "mono", 2: "stereo"}.get(channels, f"{channels}c"))


def _chain(first: Frame, rest: Iterator[Frame]) -> Iterator[Frame]:
    yield first
    yield from rest
