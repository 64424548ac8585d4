"""When to seal a chunk, flush it and split a part: the writers' decisions (sans-I/O).

Both writers of ``.hfr`` files ask one :class:`SealPolicy`: the
:class:`~recordings.Recorder` (chunks sealed with the frame that fills them,
flushed after ``flush_interval`` of host time, parts split by size or frame
time) and the :class:`~recordings.SnapshotRecorder` (chunks sealed before
the frame that would overflow them, so its ring's bound holds at every
return). The policy is told each frame's raw size so far and ``t``, each
seal and each chunk written; it reads nothing but the clock it is given
(only when a chunk opens, and when asked how long the flush timer has left),
holds no frame and does no I/O, so its bounds are checked by properties
(``tests/recordings/test_sealing.py``) with a fake clock.

Bounds (every chunk, every part):

* a chunk holds at least one frame (nothing seals an empty chunk);
* a chunk less its last frame is under ``chunk_bytes`` raw bytes and spans
  under ``chunk_ns`` of frame time (``t - first t``); a frame of its own
  larger than ``chunk_bytes`` makes a chunk of one frame;
* a chunk is open at most ``flush_interval`` seconds of the clock before
  :meth:`SealPolicy.flush_in` says it is due (the writer's thread seals it);
* a part less its last chunk is under ``split_bytes`` and spans under
  ``split_ns`` (checked at chunk boundaries).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fusion.errors import ConfigError

__all__ = ["FULL", "OPENED", "SealPolicy"]

OPENED = 1
"""Bit of :meth:`SealPolicy.add`: this frame opened the chunk (start the flush timer)."""
FULL = 2
"""Bit of :meth:`SealPolicy.add`: seal the chunk now, this frame in it."""

_NEVER = 1 << 62
_CLOSED = -(1 << 64)  # below every int64 t: the next frame opens a chunk


class SealPolicy:
    """Decides when the open chunk is sealed and when a part is split (no I/O).

    ``chunk_bytes``: raw bytes a chunk reaches before it is sealed. ``chunk_ns``:
    frame time a chunk spans at most (None: size only). ``flush_interval``:
    seconds of ``clock`` a chunk stays open at most (None: no timer).
    ``split_bytes`` / ``split_ns``: a part's bytes and frame-time span that
    start the next part (None: no split).
    """

    __slots__ = (
        "_clock",
        "_opened_at",
        "_part_t0",
        "chunk_bytes",
        "chunk_ns",
        "flush_interval",
        "split_bytes",
        "split_ns",
        "t0",
        "t_due",
    )

    def __init__(
        self,
        *,
        chunk_bytes: int,
        chunk_ns: int | None = None,
        flush_interval: float | None = None,
        split_bytes: int | None = None,
        split_ns: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if chunk_bytes < 1 or (chunk_ns is not None and chunk_ns < 0):
            raise ConfigError(f"chunk_bytes must be >= 1, chunk_ns >= 0: {chunk_bytes}, {chunk_ns}")
        self.chunk_bytes = chunk_bytes
        self.chunk_ns = _NEVER if chunk_ns is None else chunk_ns
        self.flush_interval = flush_interval
        self.split_bytes = split_bytes
        self.split_ns = split_ns
        self._clock = clock
        self.t0: int | None = None
        """``t`` of the open chunk's first frame; None while no chunk is open."""
        self.t_due = _CLOSED
        """A frame at ``t >= t_due`` (or making the chunk ``chunk_bytes`` or more) is one
        :meth:`add` has something to say about; below both it would return 0, so a hot
        path may skip the call. While no chunk is open every frame is (it opens one)."""
        self._opened_at = 0.0
        self._part_t0: int | None = None

    # -- chunks ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """A chunk holds a frame and is not sealed yet."""
        return self.t0 is not None

    def add(self, size: int, t: int) -> int:
        """A frame at ``t`` went into the chunk, now ``size`` raw bytes: :data:`OPENED`
        (it is the chunk's first) and/or :data:`FULL` (seal now), or 0."""
        if self.t0 is None:
            self.t0 = t
            self.t_due = t + self.chunk_ns
            self._opened_at = self._clock()
            return OPENED | FULL if size >= self.chunk_bytes else OPENED
        return FULL if size >= self.chunk_bytes or t >= self.t_due else 0

    def full_before(self, size: int, t: int) -> bool:
        """Whether a frame at ``t`` must go into a new chunk: the open one holds
        ``size`` raw bytes already, or ``t`` is ``chunk_ns`` or more from its first
        frame's, either way (the snapshot ring's bound holds before the frame is in)."""
        t0 = self.t0
        return t0 is not None and (size >= self.chunk_bytes or abs(t - t0) >= self.chunk_ns)

    def sealed(self) -> None:
        """The open chunk was sealed (or there was none): the next frame opens one."""
        self.t0 = None
        self.t_due = _CLOSED

    def flush_in(self) -> float | None:
        """Seconds until the open chunk's flush is due (<= 0: seal it now); None when no
        chunk is open or there is no flush interval (nothing to time)."""
        if self.flush_interval is None or self.t0 is None:
            return None
        return self._opened_at + self.flush_interval - self._clock()

    # -- parts ----------------------------------------------------------------------

    @property
    def splits(self) -> bool:
        """Whether parts are split at all."""
        return self.split_bytes is not None or self.split_ns is not None

    def part_opened(self) -> None:
        """A new part was started: its span counts from its first chunk."""
        self._part_t0 = None

    def written(self, part_bytes: int, t_start: int, t_end: int) -> bool:
        """A chunk spanning ``[t_start, t_end]`` was written; the part is ``part_bytes``
        long now. True: finish this part and start the next before the next chunk."""
        if self._part_t0 is None:
            self._part_t0 = t_start
        return (self.split_bytes is not None and part_bytes >= self.split_bytes) or (
            self.split_ns is not None and t_end - self._part_t0 >= self.split_ns
        )
