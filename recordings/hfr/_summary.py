"""What a recording holds, from its chunk metas alone: :class:`RecordingSummary`.

:meth:`Recording.summary <recordings.hfr._reader.Recording.summary>` builds these
without decompressing anything; ``hyperframes info``, the exports and the
offline sync read them. The dating rule (which sensors' ``t`` lie on the clock
the wall anchors date) and the epoch-stamp threshold live here, next to the
conversions that use them, so every reader of a summary dates alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusion import SensorSpec, WallClock
from recordings.hfr._ledgers import SensorLedger

DATED_BEFORE_NS = 120 * 10**9
DATED_AFTER_NS = 30 * 10**9
"""A chunk's frames count as on the reference clock when their ``t`` lies between
2 minutes before and 30 s after the anchor taken as the chunk was sealed."""

EPOCH_THRESHOLD_NS = 10**17
"""Times above this (1973 as Unix-epoch ns; 3 years of uptime as monotonic ns) are
taken as epoch stamps in a recording without wall-clock anchors."""


@dataclass(frozen=True, slots=True)
class SensorSummary:
    """One sensor's share of a recording."""

    spec: SensorSpec
    count: int
    """Frames recorded (in chunks whose metas declare no more than a reader decodes)."""
    t_start: int | None
    """First ``t``, ns; ``None`` without frames."""
    t_end: int | None
    """Last ``t``, ns; ``None`` without frames."""


@dataclass(frozen=True, slots=True)
class RecordingSummary:
    """What :meth:`Recording.summary` knows without decompressing anything."""

    path: Path
    version: tuple[int, int]
    sensors: Mapping[str, SensorSummary]
    count: int
    """Frames in the chunks found, less those of :attr:`overcounted` chunks."""
    chunks: int
    t_start: int | None
    t_end: int | None
    file_size: int
    raw_bytes: int
    """Uncompressed size of the chunks."""
    stored_bytes: int
    """Size of the chunk payloads on disk."""
    indexed: bool
    """The footer index was present and valid (the writer closed the file)."""
    damage: tuple[str, ...]
    """A sentence per problem found so far."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    wall_clock: WallClock | None = None
    """Wall clock against the reference clock (header and chunk anchors), if recorded."""
    dated: frozenset[str] = frozenset()
    """Sensors whose ``t`` is on the reference clock the anchors date (see
    :attr:`Recording.dated`)."""
    ledgers: Mapping[str, SensorLedger] = field(default_factory=dict)
    """What each sensor's source received and lost while recording (format 1.3;
    empty for older files and files without a footer)."""
    overcounted: tuple[int, ...] = ()
    """Indexes of chunks whose metas declare more frames than the reader decodes
    (``max_chunk_frames``): their counts are damaged, so neither :attr:`count` nor a
    sensor's count adds them (a forged ``2**62`` would otherwise be printed as a total)."""

    @property
    def lost(self) -> dict[str, dict[str, int]]:
        """Sensors that lost anything while recording: their losses by reason."""
        return {n: s.losses() for n, s in self.ledgers.items() if s.lost_total}

    def to_utc(self, t_ns: int | None) -> int | None:
        """UTC ns of reference time ``t_ns``: converted with the recorded anchors, or as it
        is when the recording has none and its times are already Unix-epoch stamps (a
        bag); ``None`` when neither holds (monotonic times without anchors)."""
        if t_ns is None:
            return None
        if self.wall_clock is not None and self.dated:
            return self.wall_clock.to_utc(t_ns)
        return t_ns if t_ns > EPOCH_THRESHOLD_NS else None

    def _dated_range(self) -> tuple[int | None, int | None]:
        names = self.dated if self.wall_clock is not None and self.dated else self.sensors
        starts = [self.sensors[n].t_start for n in names if n in self.sensors]
        ends = [self.sensors[n].t_end for n in names if n in self.sensors]
        return (
            min((t for t in starts if t is not None), default=None),
            max((t for t in ends if t is not None), default=None),
        )

    @property
    def utc_start(self) -> int | None:
        """The first dated frame's ``t`` as UTC ns (see :meth:`to_utc`)."""
        return self.to_utc(self._dated_range()[0])

    @property
    def utc_end(self) -> int | None:
        """The last dated frame's ``t`` as UTC ns (see :meth:`to_utc`)."""
        return self.to_utc(self._dated_range()[1])

    @property
    def duration_ns(self) -> int:
        """``t_end - t_start`` (0 for an empty recording)."""
        if self.t_start is None or self.t_end is None:
            return 0
        return self.t_end - self.t_start

    @property
    def compression_ratio(self) -> float:
        """Uncompressed over stored chunk bytes (1.0 when empty)."""
        return self.raw_bytes / self.stored_bytes if self.stored_bytes else 1.0
