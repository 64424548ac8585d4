"""Per sensor drops, payload, segments, gaps and clock fit: what ``info`` adds to the indexes.

:func:`sensor_details` is what ``hyperframes info`` prints unless ``--quick``:
``seq`` numbers never seen, the typical payload over the whole recording
(:class:`PayloadSizes`), segments (a restarted sender) and gaps, and the
clock fit of :mod:`hyperframes.cli._clockfit`. Its inputs are a few columns
per sensor (:class:`SensorColumns`). A 1.6 file holds them all in its footer
(the stamp index and the frame details, :mod:`recordings.hfr._details`), so they
are read without a chunk; an older file, or one whose footer does not check
out, gives them in one pass over every frame. Both ways feed the same
:func:`summarize`, so they print the same report.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from hyperframes.cli._clockfit import segmented_clock_fit
from recordings.hfr import (  # the recorder's too
    OTHER,
    REPACED,
    SEGMENT,
    SEGMENT_JUMP_NS,
    TAIL_FRAMES,
    frame_marks,
    payload_brief,
    payload_size,
)

Int64 = np.ndarray[Any, np.dtype[np.int64]]

PROGRESS_EVERY = 256
"""Frames between two progress updates (a bar per frame would cost more than a frame)."""


@dataclasses.dataclass
class SensorColumns:
    """One sensor's frames in recorded order, as the report needs them."""

    seq: Int64
    t: Int64
    t_sensor: Int64
    arrival: Int64
    """``t_arrival``, or ``t`` where the frame has none."""
    has_arrival: np.ndarray[Any, np.dtype[np.bool_]]
    flags: np.ndarray[Any, np.dtype[np.uint8]]
    """:mod:`recordings.hfr._details` flags."""
    size: Int64
    """:mod:`recordings.hfr._details` sizes: ``-2 - i`` names ``shapes[i]``."""
    shapes: tuple[tuple[int, ...], ...]
    first: tuple[Any, ...]
    """:func:`~recordings.hfr._details.payload_brief` of the first frame."""
    gaps: list[int]
    conn: list[int]
    """Rows whose ``connection`` differs from the row before."""


def sensor_details(
    log: Any, advance: Callable[[int], None] | None = None
) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Per sensor: seq gaps, payload description and the clock fit, and why every frame
    was read (``None`` when the footer of a 1.6 file served). ``advance(n)`` is told
    every ``n`` frames read, for a progress bar."""
    report = _report_from_footer(log)
    if not isinstance(report, str):
        return report, None
    columns = columns_from_frames(log, advance)
    return {name: summarize(c) for name, c in columns.items()}, report


def _report_from_footer(log: Any) -> dict[str, dict[str, Any]] | str:
    """:func:`summarize` of each sensor from the footer, one sensor's columns in memory
    at a time (hours of a 1 kHz IMU are GBs of columns), or why the footer cannot serve."""
    found = _footer(log)
    if isinstance(found, str):
        return found
    details, stamps = found
    first = _first_chunk(log)
    out = {}
    try:
        for name in details.sensors:
            columns = _sensor_columns(name, details, stamps)
            if isinstance(columns, str):
                return columns
            problem = _first_chunk_agrees(first, details, {name: columns})
            if problem:
                return problem
            out[name] = summarize(columns)
    except ValueError as err:
        return str(err)
    return out


def _footer(log: Any) -> tuple[Any, Any] | str:
    """The frame details and stamp index, when both count the frames the chunks hold."""
    details = log.frame_details()
    if details is None:
        return str(log.frame_details_problem)
    stamps = log.stamp_index()
    if stamps is None:
        return f"the file's stamp index cannot be used ({log.stamp_index_problem})"
    expected = {name: s.count for name, s in log.summary().sensors.items() if s.count}
    if (
        dict(zip(details.sensors, details.counts, strict=True)) != expected
        or dict(zip(stamps.sensors, stamps.counts, strict=True)) != expected
    ):
        return "the frame details do not count the frames the chunks hold"
    return details, stamps


def _sensor_columns(name: str, details: Any, stamps: Any) -> SensorColumns | str:
    """One sensor's columns from the footer (``ValueError`` when they do not decode)."""
    notes = details.notes(name)
    if notes.over:
        return f"the frame details of {name!r} are incomplete (too many notes)"
    t, seq = stamps.times(name)
    arrival, has = stamps.arrivals(name)
    offset, flags, size = details.of(name)
    return SensorColumns(
        seq=seq,
        t=t,
        t_sensor=t + offset,
        arrival=np.where(has, arrival, t),
        has_arrival=has,
        flags=flags,
        size=size,
        shapes=notes.shapes,
        first=notes.first,
        gaps=list(notes.gaps),
        conn=list(notes.conn),
    )


SUMMARIES_FROM_FRAMES = 1_000_000
"""Frames from which ``info`` takes a 1.7 file's per-sensor summaries written at close
(:mod:`recordings.hfr._sensor_summary`) instead of computing the report from the footer's
columns: the summaries' delay percentiles may be read from buckets of a few ns, so a
smaller file keeps the exact computation, which takes well under a second there."""


def report_from_summaries(log: Any) -> dict[str, dict[str, Any]] | str:
    """:func:`summarize` of each sensor from the summaries the recorder wrote at close
    (format 1.7; nothing but the footer index read), or why they are not used."""
    summary = log.summary()
    if summary.count < SUMMARIES_FROM_FRAMES:
        return f"under {SUMMARIES_FROM_FRAMES:,} frames: computed from the columns"
    found = log.sensor_summaries()
    if found is None:
        return "the file has no sensor summaries"
    expected = {name: s.count for name, s in summary.sensors.items() if s.count}
    out = {}
    for name, count in expected.items():
        wire = found.get(name)
        if not isinstance(wire, dict):
            return f"{name!r} has no summary ({wire or 'none written'})"
        try:
            out[name] = _report_of(wire, count)
        except (KeyError, TypeError, ValueError) as err:
            return f"the summary of {name!r} is malformed ({err})"
    return out


def _report_of(w: dict[str, Any], count: int) -> dict[str, Any]:
    """The report of one sensor from its summary's wire form (types checked)."""
    ints = (w["n"], w["dropped"], w["segments"], w["offset"])
    if not all(type(x) is int for x in ints) or w["n"] != count:
        raise ValueError("counts are not the chunks'")
    gaps, payload, fit, first = w["gaps"], w["payload"], w["fit"], w["first"]
    if not (isinstance(gaps, list) and all(type(g) is int for g in gaps)):
        raise TypeError("gaps")
    if not (isinstance(first, list) and len(first) == 4 and isinstance(fit, dict)):
        raise TypeError("first or fit")
    shapes: Counter[tuple[int, ...]] = Counter()
    for shape, n in payload["shapes"]:
        shapes[tuple(int(d) for d in shape)] = int(n)
    sizes = (payload["median"], payload["min"], payload["max"]) if "median" in payload else None
    if sizes is not None and not all(type(x) is int for x in sizes):
        raise TypeError("payload sizes")
    report: dict[str, Any] = {
        "dropped": w["dropped"],
        "payload": describe_payload(tuple(first), sizes, shapes),
        "segments": w["segments"],
        "gaps_ns": gaps,
        "offset_ns": w["offset"],
    }
    for key in ("skew_ppm", "delay_ms_p50", "delay_ms_p99"):
        if key in fit:
            if type(fit[key]) is not float:
                raise TypeError(key)
            report[key] = fit[key]
    if "skew_segment" in w:
        report["skew_segment"] = int(w["skew_segment"])
    return report


def columns_from_footer(log: Any) -> dict[str, SensorColumns] | str:
    """Every sensor's columns from the stamp index and the frame details (no chunk read),
    or the reason they cannot be used."""
    found = _footer(log)
    if isinstance(found, str):
        return found
    details, stamps = found
    out = {}
    try:
        for name in details.sensors:
            columns = _sensor_columns(name, details, stamps)
            if isinstance(columns, str):
                return columns
            out[name] = columns
    except ValueError as err:
        return str(err)
    return _first_chunk_agrees(_first_chunk(log), details, out) or out


def _first_chunk(log: Any) -> tuple[Any, list[Any]] | None:
    """The first chunk's meta and frames (``None`` without one, or when it is damaged:
    that is reported when it is read)."""
    from recordings.errors import RecordingError

    if not log.chunks:
        return None
    chunk = log.chunks[0]
    try:
        return chunk, list(log.decode_chunk(chunk).frames())
    except RecordingError:
        return None


def _first_chunk_agrees(
    first: tuple[Any, list[Any]] | None, details: Any, out: dict[str, SensorColumns]
) -> str | None:
    """Why the footer's columns cannot be trusted, if the first chunk's frames say
    otherwise (a forged or faulty DETAILS record passes its CRCs: one chunk decoded
    catches a record that lies about every frame; ``hyperframes check`` compares all)."""
    from recordings.hfr import DetailsChecker

    if first is None:
        return None
    chunk, frames = first
    counts = dict(zip(details.sensors, details.counts, strict=True))
    cols = {n: (c.t_sensor - c.t, c.flags, c.size) for n, c in out.items()}
    problem = DetailsChecker(details, counts, cols).compare(chunk.sensors, frames, {})
    if problem is None:
        return None
    return f"the frame details do not match the first chunk ({problem}); run hyperframes check"


def columns_from_frames(
    log: Any, advance: Callable[[int], None] | None = None
) -> dict[str, SensorColumns]:
    """Every sensor's columns from one pass over the frames (any file)."""
    rows: dict[str, list[tuple[int, int, int, int, bool, int, int]]] = {}
    shapes: dict[str, dict[tuple[int, ...], int]] = {}
    firsts: dict[str, list[Any]] = {}
    gaps: dict[str, list[int]] = {}
    conns: dict[str, list[Any]] = {}
    for i, frame in enumerate(log.frames(), 1):
        if advance is not None and i % PROGRESS_EVERY == 0:
            advance(PROGRESS_EVERY)
        name = frame.sensor
        if name not in rows:
            rows[name], shapes[name], gaps[name], conns[name] = [], {}, [], []
            firsts[name] = payload_brief(frame.data)
        size, shape, flags = payload_size(frame.data)
        if shape is not None:
            table = shapes[name]
            size = -2 - table.setdefault(shape, len(table))
        marks = frame_marks(frame.meta) if frame.meta else None
        connection = None
        if marks is not None:
            marked, gap, connection, _ = marks
            flags |= marked
            if gap is not None:
                gaps[name].append(gap)
        has = frame.t_arrival is not None
        arrival = frame.t_arrival if has else frame.t
        rows[name].append((frame.seq, frame.t, frame.t_sensor, arrival, has, flags, size))
        conns[name].append(connection)
    out = {}
    for name, r in rows.items():
        a = np.asarray(r, np.int64).reshape(-1, 7)
        conn = [i for i, (x, y) in enumerate(itertools.pairwise(conns[name]), 1) if x != y]
        out[name] = SensorColumns(
            seq=a[:, 0],
            t=a[:, 1],
            t_sensor=a[:, 2],
            arrival=a[:, 3],
            has_arrival=a[:, 4].astype(bool),
            flags=a[:, 5].astype(np.uint8),
            size=a[:, 6].copy(),
            shapes=tuple(shapes[name]),
            first=tuple(firsts[name]),
            gaps=gaps[name],
            conn=conn,
        )
    return out


def summarize(c: SensorColumns) -> dict[str, Any]:
    """The report of one sensor: drops, payload, segments, gaps and the clock fit."""
    n = len(c.t)
    jump = np.flatnonzero(c.t_sensor[1:] < c.t_sensor[:-1] - SEGMENT_JUMP_NS) + 1
    marked = np.flatnonzero(c.flags[1:] & SEGMENT) + 1
    starts = sorted(set(jump.tolist()) | set(marked.tolist()))
    measured = c.has_arrival & ((c.flags & REPACED) == 0)
    for end in {0, *c.conn} | set(starts) | {n}:  # see TAIL_FRAMES
        measured[max(0, end - TAIL_FRAMES) : end] = False
    # Numbers never seen, from 0: packet records of a B-frame video track come in
    # decode order, and a reference-only packet shares the next frame's number.
    lost = numbers_never_seen(c.seq)
    return {
        "dropped": lost,
        "payload": PayloadSizes.of(c).describe(),
        "segments": 1 + len(starts),
        "gaps_ns": list(c.gaps),
        **segmented_clock_fit(c.t_sensor, c.t, c.arrival, measured, starts),
    }


def numbers_never_seen(seq: Int64) -> int:
    """How many of ``0..max(seq)`` are not in ``seq``. Sorted columns (nearly every
    sensor's) are counted in one pass; numpy's hashed ``unique`` took 10 s on the 29 M
    frames of an 8-hour 1 kHz IMU."""
    if not len(seq):
        return 0
    s = seq if bool(np.all(seq[1:] >= seq[:-1])) else np.sort(seq)
    distinct = 1 + int(np.count_nonzero(s[1:] != s[:-1]))
    return int(s[-1]) + 1 - distinct


class PayloadSizes:
    """The typical payload of a sensor over a whole recording, not its first frame
    (a partial first sweep holds a few hundred points where sweeps hold thousands)."""

    def __init__(
        self, first: tuple[Any, ...], counts: Int64, shapes: Counter[tuple[int, ...]]
    ) -> None:
        self.first = first
        self.counts = counts  # points of structured arrays, bytes of blobs
        self.shapes = shapes  # plain arrays, in the order each shape first appears

    @classmethod
    def of(cls, c: SensorColumns) -> PayloadSizes:
        counts = c.size[c.size >= 0]
        plain = c.size[c.size < OTHER]
        shapes: Counter[tuple[int, ...]] = Counter()
        if len(plain):
            ids = -2 - plain  # shape numbers: small ints, so counted, not sorted
            n = np.bincount(ids)
            used = np.flatnonzero(n)
            if len(used) <= 16:
                first = np.array([int(np.argmax(ids == i)) for i in used.tolist()])
            else:
                used, first = np.unique(ids, return_index=True)
            for k in np.argsort(first, kind="stable").tolist():
                shapes[c.shapes[int(used[k])]] = int(n[used[k]])
        return cls(c.first, counts, shapes)

    def describe(self) -> str:
        """``6 fields x 13,902 (median; 443-14,024)``, ``uint8 (480, 640, 3)``, ..."""
        n = self.counts
        sizes = (int(np.median(n)), int(n.min()), int(n.max())) if len(n) else None
        return describe_payload(self.first, sizes, self.shapes)


def describe_payload(
    first: tuple[Any, ...],
    sizes: tuple[int, int, int] | None,
    shapes: Counter[tuple[int, ...]],
) -> str:
    """:meth:`PayloadSizes.describe` from the first payload's brief, ``(median, min, max)``
    of the counted sizes (``None``: none) and the plain shapes' counts (first seen first)."""
    kind, fields, dtype, text = first
    if sizes is not None:
        median, lo, hi = sizes
        spread = "" if lo == hi else f" (median; {lo:,}-{hi:,})"
        if kind == "struct":
            return f"{fields} fields x {median:,}{spread}"
        return f"{median:,} bytes{spread}"
    if shapes:
        (shape, _), *others = shapes.most_common()
        varies = f" (and {len(others)} other sizes)" if others else ""
        return f"{dtype or 'array'} {shape}{varies}"
    return str(text)
