"""Which chunks can hold a time window: two bisections over a recording's chunk list.

Theory of operation. Chunks are in recorded (arrival) order, so their time
ranges may overlap. With ``m[i]`` the running maximum of ``t_end`` and ``n[i]``
the minimum of ``t_start`` over chunks ``i..``, both monotonic, two bisections
bound the chunks that can hold ``[start, end)``: O(log n) in chunks. For a 1.7
chunk table the keys are computed from its columns, no chunk meta built.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from recordings.hfr._chunk_table import ChunkTable
from recordings.hfr._layout import ChunkMeta

__all__ = ["SeekKeys"]


class SeekKeys:
    """The bisection keys of one chunk list (which never changes once read)."""

    __slots__ = ("_max_end", "_min_start_from")

    def __init__(self, chunks: Sequence[ChunkMeta]) -> None:
        self._max_end: Sequence[int] | np.ndarray[Any, Any]
        self._min_start_from: Sequence[int] | np.ndarray[Any, Any]
        if isinstance(chunks, ChunkTable):
            self._max_end = np.maximum.accumulate(chunks.cols["t1"])
            self._min_start_from = np.minimum.accumulate(chunks.cols["t0"][::-1])[::-1]
        else:
            self._max_end = list(itertools.accumulate((c.t_end for c in chunks), max))
            mins = itertools.accumulate((c.t_start for c in reversed(chunks)), min)
            self._min_start_from = list(mins)[::-1]

    def span(self, count: int, start: int | None, end: int | None) -> tuple[int, int]:
        """``lo, hi``: chunks ``lo..hi-1`` of the ``count`` are the only ones that can
        hold a frame with ``start <= t < end`` (each still to be checked)."""
        lo, hi = 0, count
        if start is not None:
            lo = _bisect_left(self._max_end, start)
        if end is not None:
            hi = _bisect_left(self._min_start_from, end)
        return lo, hi


def _bisect_left(keys: Sequence[int] | np.ndarray[Any, Any], x: int) -> int:
    if isinstance(keys, np.ndarray):
        return int(np.searchsorted(keys, x, side="left"))
    return bisect.bisect_left(keys, x)
