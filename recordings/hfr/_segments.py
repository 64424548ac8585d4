"""Cutting a recording into time segments at chunk boundaries, from the footer index alone.

Theory of operation. A segment is a half-open range ``[start, end)`` of frame
(group) time; the first starts and the last ends unbounded, so no frame falls
outside every segment. Cuts aim at every ``target`` ns from the first frame;
each is moved to the nearest *chunk boundary* within ``snap`` of the target (a
quarter of it by default) and stays where it is when none is that close.

A chunk boundary is a time ``b`` such that every chunk before some position
in the file ends before ``b`` and every chunk from there on starts at or after
it: chunks are in arrival order and their time ranges may overlap, so only
such points split the file's chunks cleanly in two. A segment cut there reads
only its own chunks (plus what an overlap asks for), so no chunk is
decompressed by two segments. The same cuts feed the local process pool
(:mod:`hyperframes.segments`) and the Ray fleet
(:func:`hyperframes.fleet._plan.plan_parts`), so both run one plan.
:func:`recording_split_point` says where the pool cuts a segment that lags.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from recordings.hfr._layout import ChunkMeta

__all__ = ["chunk_boundaries", "cut_times", "recording_segments", "recording_split_point"]

Range = tuple[int | None, int | None]


def chunk_boundaries(chunks: Sequence[ChunkMeta]) -> list[int]:
    """Times that split ``chunks`` (in file order) into an earlier and a later run, sorted."""
    out: list[int] = []
    if len(chunks) < 2:
        return out
    min_from = [0] * len(chunks)
    low = chunks[-1].t_start
    for i in range(len(chunks) - 1, -1, -1):
        low = min(low, chunks[i].t_start)
        min_from[i] = low
    high = chunks[0].t_end
    for i in range(1, len(chunks)):
        if high < min_from[i] and (not out or min_from[i] > out[-1]):
            out.append(min_from[i])
        high = max(high, chunks[i].t_end)
    return out


def cut_times(
    t_start: int, t_end: int, target: int, boundaries: Sequence[int] = (), snap: float = 0.25
) -> list[int]:
    """Cuts of ``[t_start, t_end]`` every ``target`` ns, each moved to a boundary within
    ``snap * target`` of it when there is one. Strictly increasing, inside the range."""
    if target <= 0:
        raise ValueError(f"the segment target must be > 0 ns, got {target}")
    if t_end - t_start < target:
        return []
    n = math.ceil((t_end - t_start + 1) / target)
    reach = int(snap * target)
    cuts: list[int] = []
    for k in range(1, n):
        want = t_start + k * target
        i = bisect.bisect_left(boundaries, want)
        near = [b for b in boundaries[max(0, i - 1) : i + 1] if abs(b - want) <= reach]
        cut = min(near, key=lambda b: (abs(b - want), b)) if near else want
        if t_start < cut <= t_end and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    return cuts


def ranges_from_cuts(cuts: Sequence[int]) -> list[Range]:
    """``[(None, c0), (c0, c1), ..., (cn, None)]``."""
    starts: list[int | None] = [None, *cuts]
    ends: list[int | None] = [*cuts, None]
    return list(zip(starts, ends, strict=True))


def recording_segments(chunks: Sequence[ChunkMeta], target: int | None) -> list[Range]:
    """Segments of about ``target`` ns of a recording with these chunks (``None``: one)."""
    if target is None or not chunks:
        return [(None, None)]
    t_start = min(c.t_start for c in chunks)
    t_end = max(c.t_end for c in chunks)
    return ranges_from_cuts(cut_times(t_start, t_end, target, chunk_boundaries(chunks)))


def recording_split_point(
    chunks: Sequence[ChunkMeta], progress: int, end: int | None
) -> int | None:
    """Where to cut a running segment ``[.., end)`` that has reached ``progress``: halfway
    to its end, the open last segment ending just after the last frame of ``chunks``;
    ``None`` when no time is left between them."""
    if end is None:
        end = max((c.t_end for c in chunks), default=progress) + 1
    mid = (progress + end) // 2
    return mid if progress < mid < end else None
