"""Cutting a video file at key frames, and decoding one time range of it.

Theory of operation. :func:`keyframe_times` demuxes the stream (no decoding)
and lists the presentation times of its key frames, skipping packets the
container marks as discarded (an edit list's pre-roll). :func:`video_segments`
cuts the file into ranges ``[start, end)`` of presentation time of about a
target duration, each starting at a key frame (the first and last
unbounded), so a segment decodes on its own; :func:`video_split_point` cuts
a running one at a key frame the same way.

:func:`decode_range` seeks to the last key frame at or before ``start`` and
decodes in presentation order, keeping the frames with ``start <= t < end``:
a range need not start at a key frame (it then decodes a little more than it
keeps), so the union of any ranges that tile the time axis is exactly the
frames of one whole decode, in the same order. Leading B-frames of an open
GOP (presented before their key frame) belong to the range before it, which
decodes past its end until it has presented them. A packet that does not
decode is skipped and counted, the rest goes on, as in the whole decode.

Times are the stream's PTS in nanoseconds (``pts * time_base``), without the
``origin_pts`` rebasing :class:`~adapters.video.VideoSource` offers.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import numpy as np

from adapters.video._convert import PixelConverter, PixelFormat

__all__ = [
    "DecodeCounts",
    "decode_range",
    "frame_times",
    "keyframe_times",
    "video_segments",
    "video_split_point",
]

Range = tuple[int | None, int | None]


def _ns(pts: int, tb: Fraction) -> int:
    return pts * tb.numerator * 1_000_000_000 // tb.denominator


def _pts(ns: int, tb: Fraction) -> int:
    """The first ``pts`` whose :func:`_ns` is at or after ``ns`` (rounded up, so a key
    frame's own time seeks to that key frame, not the one before it)."""
    return -(-ns * tb.denominator // (tb.numerator * 1_000_000_000))


def keyframe_times(path: str | Path, stream: int = 0) -> list[int]:
    """Presentation times (ns, sorted) of the key frames of video ``stream``."""
    return _packet_times(path, stream, lambda p: bool(p.is_keyframe))


def frame_times(path: str | Path, stream: int = 0) -> list[int]:
    """Presentation times (ns, sorted) of every frame of video ``stream``, from its
    packets (no decoding; discarded packets left out)."""
    return _packet_times(path, stream, lambda p: bool(p.size))


def _packet_times(path: str | Path, stream: int, keep: Callable[[Any], bool]) -> list[int]:
    """Distinct pts (ns, sorted) of the stamped, not discarded packets that ``keep`` accepts."""
    import av

    with av.open(str(path)) as container:
        s = container.streams.video[stream]
        tb = Fraction(s.time_base) if s.time_base is not None else Fraction(1, 1000)
        out = {
            _ns(p.pts, tb)
            for p in container.demux(s)
            if p.pts is not None and not p.is_discard and keep(p)
        }
    return sorted(out)


def video_segments(
    path: str | Path, target: int, stream: int = 0, keyframes: list[int] | None = None
) -> list[Range]:
    """Ranges of about ``target`` ns (at least that, bar the last), cut at key frames."""
    if target <= 0:
        raise ValueError(f"the segment target must be > 0 ns, got {target}")
    keys = keyframe_times(path, stream) if keyframes is None else keyframes
    return ranges_between(cuts_apart(keys, target))


def cuts_apart(keys: Sequence[int], gap: int) -> list[int]:
    """The sorted key frame times ``keys`` (any unit) to cut at: each at least ``gap``
    after the cut before it (the first key frame starts the first range)."""
    cuts: list[int] = []
    last = keys[0] if keys else 0
    for k in keys[1:]:
        if k - last >= gap:
            cuts.append(k)
            last = k
    return cuts


def ranges_between(cuts: Sequence[int]) -> list[Range]:
    """``[start, end)`` ranges that tile the time axis at ``cuts`` (first and last open)."""
    starts: list[int | None] = [None, *cuts]
    ends: list[int | None] = [*cuts, None]
    return list(zip(starts, ends, strict=True))


def video_split_point(keyframes: Sequence[int], progress: int, end: int | None) -> int | None:
    """Where to cut a running segment ``[.., end)`` that has reached ``progress``: the
    key frame after ``progress`` and before ``end`` nearest the middle of what is left,
    so the new segment decodes from its own start; ``None`` when there is none."""
    hi = bisect.bisect_left(keyframes, end) if end is not None else len(keyframes)
    lo = bisect.bisect_right(keyframes, progress)
    if lo >= hi:
        return None
    target = (progress + (end if end is not None else keyframes[hi - 1])) // 2
    return min(keyframes[lo:hi], key=lambda k: abs(k - target))


@dataclass(slots=True)
class DecodeCounts:
    """What one :func:`decode_range` call decoded and skipped."""

    decoded: int = 0
    """Frames the decoder output (kept or not)."""
    kept: int = 0
    bad_packets: int = 0
    """Packets that did not decode (skipped)."""
    errors: list[str] = field(default_factory=list)


def decode_range(
    path: str | Path,
    start: int | None = None,
    end: int | None = None,
    *,
    stream: int = 0,
    pixel_format: str = "rgb24",
    size: tuple[int, int] | None = None,
    threads: int = 0,
    counts: DecodeCounts | None = None,
) -> Iterator[tuple[int, np.ndarray[Any, Any]]]:
    """``(t_ns, image)`` of the frames with ``start <= t < end``, in presentation order.

    ``size`` is ``(width, height)`` to scale to; ``threads`` the decoder's
    threads (0: FFmpeg's choice). A seek that lands after ``start`` (MPEG-TS
    seeks by bisecting bytes) is retried from earlier, back to the beginning.
    """
    counts = counts if counts is not None else DecodeCounts()
    width, height = size if size is not None else (None, None)
    # Resized into RGB or BGR: the pixels VideoSource gives (its converter, the same rule).
    converter = (
        PixelConverter(cast(PixelFormat, pixel_format), size=size)
        if size is not None and pixel_format in ("rgb24", "bgr24")
        else None
    )
    back = 0
    while True:
        seek = None if start is None or back < 0 else start - back
        decoded = _decode_from(path, stream, seek, threads, counts)
        try:
            first = next(decoded, None)
            if seek is not None and (first is None or first[0] > start):  # type: ignore[operator]
                # Landed past start (or at the end): frames before it would be lost.
                back = -1 if back > (1 << 62) else max(1_000_000_000, 2 * back)
                continue
            items = itertools.chain([first], decoded) if first is not None else iter(())
            for t, frame in items:
                if start is not None and t < start:
                    continue
                if end is not None and t >= end:
                    return
                counts.kept += 1
                if converter is not None:
                    yield t, cast("np.ndarray[Any, Any]", converter.convert(frame))
                elif width is not None:
                    frame = frame.reformat(width=width, height=height, format=pixel_format)
                    yield t, frame.to_ndarray()
                else:
                    yield t, frame.to_ndarray(format=pixel_format)
            return
        finally:
            decoded.close()


def _decode_from(
    path: str | Path, stream: int, seek: int | None, threads: int, counts: DecodeCounts
) -> Generator[tuple[int, Any], None, None]:
    """``(t_ns, av.VideoFrame)`` from the key frame at or before ``seek`` (or the start)."""
    import av

    with av.open(str(path)) as container:
        s = container.streams.video[stream]
        s.thread_type = "AUTO"
        s.codec_context.thread_count = threads
        tb = Fraction(s.time_base) if s.time_base is not None else Fraction(1, 1000)
        if seek is not None:
            container.seek(max(0, _pts(seek, tb)), stream=s, backward=True, any_frame=False)
        for packet in container.demux(s):
            try:
                frames = packet.decode()
            except av.FFmpegError as err:
                counts.bad_packets += 1
                if len(counts.errors) < 16:
                    counts.errors.append(f"packet at pts {packet.pts}: {err}")
                continue
            for frame in frames:
                counts.decoded += 1
                if frame.pts is not None:
                    yield _ns(frame.pts, tb), frame
