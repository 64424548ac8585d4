"""One pass over a recording's frames: per sensor drops, payload, segments, gaps, clock.

:func:`sensor_details` is what ``hyperframes info`` adds to the chunk metas
unless ``--quick``: ``seq`` numbers never seen, the typical payload over the
whole recording (:class:`PayloadSizes`), segments (a restarted sender) and
gaps, and the clock fit of :mod:`hyperframes.cli.clockfit`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from hyperframes.cli.clockfit import segmented_clock_fit


def sensor_details(
    log: Any, advance: Callable[[int], None] | None = None
) -> dict[str, dict[str, Any]]:
    """Per sensor: seq gaps, payload description and the clock fit, from one pass
    (``advance(n)`` is told every ``n`` frames read, for a progress bar)."""
    seqs: dict[str, list[int]] = {}
    times: dict[str, list[tuple[int, int, int, bool]]] = {}
    starts: dict[str, list[int]] = {}
    connections: dict[str, list[tuple[Any, int]]] = {}
    gaps: dict[str, list[int]] = {}
    payload: dict[str, PayloadSizes] = {}
    for i, frame in enumerate(log.frames(), 1):
        if advance is not None and i % PROGRESS_EVERY == 0:
            advance(PROGRESS_EVERY)
        seqs.setdefault(frame.sensor, []).append(frame.seq)
        arrival = frame.t_arrival if frame.t_arrival is not None else frame.t
        rows = times.setdefault(frame.sensor, [])
        meta = frame.meta or {}
        if rows and (meta.get("segment_start") or frame.t_sensor < rows[-1][0] - SEGMENT_JUMP_NS):
            starts.setdefault(frame.sensor, []).append(len(rows))
        gap = meta.get("gap_ns")
        if isinstance(gap, int):
            gaps.setdefault(frame.sensor, []).append(gap)
        measured = frame.t_arrival is not None and "t_read" not in meta
        connection = meta.get("connection")
        runs = connections.setdefault(frame.sensor, [])
        if runs and connection != runs[-1][0]:
            runs.append((connection, len(rows)))
        elif not runs:
            runs.append((connection, 0))
        rows.append((frame.t_sensor, frame.t, arrival, measured))
        sizes = payload.get(frame.sensor)
        if sizes is None:
            sizes = payload[frame.sensor] = PayloadSizes()
        sizes.add(frame.data)
    out: dict[str, dict[str, Any]] = {}
    for name, rows in times.items():
        ends = {i for _, i in connections.get(name, [])} | set(starts.get(name, [])) | {len(rows)}
        for end in ends:  # see TAIL_FRAMES
            for i in range(max(0, end - TAIL_FRAMES), end):
                rows[i] = (*rows[i][:3], False)
    for name, seq in seqs.items():
        # Numbers never seen, from 0: packet records of a B-frame video track come in
        # decode order, and a reference-only packet shares the next frame's number.
        s = np.unique(np.asarray(seq, np.int64))
        lost = int(s[-1]) + 1 - len(s) if len(s) else 0
        out[name] = {
            "dropped": lost,
            "payload": payload[name].describe(),
            "segments": 1 + len(starts.get(name, ())),
            "gaps_ns": gaps.get(name, []),
            **segmented_clock_fit(times[name], starts.get(name, [])),
        }
    return out


PROGRESS_EVERY = 256
"""Frames between two progress updates (a bar per frame would cost more than a frame)."""

TAIL_FRAMES = 2
"""Frames at the end of a connection or segment left out of the skew fit: a demuxer
that holds each frame until the next one's data comes (MPEG-TS) hands the last ones
over at once when the stream ends, a frame period earlier than all the others."""

SEGMENT_JUMP_NS = 1_000_000_000
"""``t_sensor`` going back by more than this starts a new segment (a restarted sender)."""


class PayloadSizes:
    """The typical payload of a sensor over a whole recording, not its first frame
    (a partial first sweep holds a few hundred points where sweeps hold thousands)."""

    def __init__(self) -> None:
        self.first: Any = None
        self.counts: list[int] = []  # points of structured arrays, bytes of blobs
        self.shapes: Counter[tuple[int, ...]] = Counter()

    def add(self, data: Any) -> None:
        if self.first is None:
            self.first = data
        shape = getattr(data, "shape", None)
        if shape is not None and getattr(data.dtype, "names", None):
            self.counts.append(len(data))
        elif shape is not None:
            self.shapes[tuple(shape)] += 1
        elif isinstance(data, (bytes, bytearray, memoryview)):
            self.counts.append(len(data))

    def describe(self) -> str:
        """``6 fields x 13,902 (median; 443-14,024)``, ``uint8 (480, 640, 3)``, ..."""
        data = self.first
        if self.counts:
            n = np.asarray(self.counts)
            median = int(np.median(n))
            spread = "" if n.min() == n.max() else f" (median; {n.min():,}-{n.max():,})"
            if getattr(data, "shape", None) is not None:
                return f"{len(data.dtype.names)} fields x {median:,}{spread}"
            return f"{median:,} bytes{spread}"
        if self.shapes:
            (shape, _), *others = self.shapes.most_common()
            varies = f" (and {len(others)} other sizes)" if others else ""
            return f"{data.dtype} {shape}{varies}"
        return describe_payload(data)


def describe_payload(data: Any) -> str:
    """Short: ``uint8 (48, 64, 3)``, ``6 fields x 2048``, ``dict of 2``, ``1206 bytes``."""
    shape = getattr(data, "shape", None)
    if shape is not None:
        names = getattr(data.dtype, "names", None)
        if names:
            return f"{len(names)} fields x {len(data)}"
        return f"{data.dtype} {tuple(shape)}"
    if isinstance(data, dict):
        return f"dict of {len(data)}"
    if isinstance(data, (bytes, bytearray, memoryview)):
        return f"{len(data)} bytes"
    return type(data).__name__
