"""What a recording holds, from its chunk metas alone: :class:`RecordingSummary`.

:meth:`Recording.summary <recordings.hfr._reader.Recording.summary>` builds these
with :func:`summarize`, without decompressing anything (a 1.7 chunk table's columns
are reduced as arrays, no chunk meta built); ``hyperframes info``, the exports and
the offline sync read them. :func:`dated_sensors` and :func:`wall_clock_of` are
:attr:`Recording.dated` and :attr:`Recording.wall_clock`. The dating rule (which
sensors' ``t`` lie on the clock the wall anchors date) and the epoch-stamp
threshold live here, next to the conversions that use them, so every reader of a
summary dates alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from fusion import SensorSpec, WallAnchor, WallClock
from recordings.hfr._chunk_table import ChunkTable
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import SensorLedger
from recordings.hfr._limits import ReadLimits

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


def summarize(
    chunks: Sequence[ChunkMeta],
    specs: Mapping[str, SensorSpec],
    limits: ReadLimits,
    **fields: Any,
) -> RecordingSummary:
    """The summary of ``chunks`` (and ``specs``), its other fields given (``path``,
    ``version``, ``file_size``, ``indexed``, ``damage``, ``metadata``, ``wall_clock``,
    ``dated``, ``ledgers``)."""
    # A meta declaring more frames than a reader decodes is refused as damaged
    # when read; its count is the file's word only, so no total adds it.
    if isinstance(chunks, ChunkTable):
        counts, ranges, totals = _table_totals(chunks, limits)
    else:
        counts, ranges = {}, {}
        for c in chunks:
            for name, n, (a, b) in zip(c.sensors, c.counts, c.ranges, strict=True):
                if limits.counts(c.count):
                    counts[name] = counts.get(name, 0) + n
                lo, hi = ranges.get(name, (a, b))
                ranges[name] = (min(lo, a), max(hi, b))
        totals = {
            "overcounted": tuple(c.index for c in chunks if not limits.counts(c.count)),
            "count": sum(c.count for c in chunks if limits.counts(c.count)),
            "t_start": min((c.t_start for c in chunks), default=None),
            "t_end": max((c.t_end for c in chunks), default=None),
            "raw_bytes": sum(c.raw_size for c in chunks),
            "stored_bytes": sum(c.stored_size for c in chunks),
        }
    names = list(specs) + [n for n in counts if n not in specs]
    sensors = {
        n: SensorSummary(
            spec=specs.get(n) or SensorSpec(n),
            count=counts.get(n, 0),
            t_start=ranges[n][0] if n in ranges else None,
            t_end=ranges[n][1] if n in ranges else None,
        )
        for n in names
    }
    return RecordingSummary(
        sensors=MappingProxyType(sensors), chunks=len(chunks), **totals, **fields
    )


def dated_sensors(chunks: Sequence[ChunkMeta]) -> frozenset[str]:
    """Sensors whose every chunk's ``t`` range lies near that chunk's wall anchor
    (:attr:`Recording.dated <recordings.hfr._reader.Recording.dated>`)."""
    if isinstance(chunks, ChunkTable):
        return _table_dated(chunks)
    fits: dict[str, bool] = {}
    for c in chunks:
        for name, (lo, hi) in zip(c.sensors, c.ranges, strict=True):
            ok = c.wall is not None and (
                c.wall[0] - DATED_BEFORE_NS <= lo and hi <= c.wall[0] + DATED_AFTER_NS
            )
            fits[name] = fits.get(name, True) and ok
    return frozenset(name for name, ok in fits.items() if ok)


def wall_clock_of(chunks: Sequence[ChunkMeta], header: WallAnchor | None) -> WallClock | None:
    """The wall clock of the chunks' anchors and the header's; ``None`` without any."""
    if isinstance(chunks, ChunkTable):
        has = chunks.cols["has_w"] == 1
        w0, w1 = chunks.cols["w0"][has].tolist(), chunks.cols["w1"][has].tolist()
        anchors = [WallAnchor(a, b) for a, b in zip(w0, w1, strict=True)]
    else:
        anchors = [WallAnchor(*c.wall) for c in chunks if c.wall is not None]
    if header is not None:
        anchors.append(header)
    return WallClock(anchors) if anchors else None


def _table_totals(
    table: ChunkTable, limits: ReadLimits
) -> tuple[dict[str, int], dict[str, tuple[int, int]], dict[str, Any]]:
    """``summarize``'s per-sensor counts and ranges and its totals, from the
    chunk table's columns (no chunk built), as the loop over chunk metas gives them."""
    c = table.cols
    n = c["n"]
    ok = limits.counts(n)
    chunk_of = table.entry_chunk()
    sensor = c["sensor"].astype(np.int64)
    k = len(table.names)
    counts_v = np.zeros(k, np.int64)
    np.add.at(counts_v, sensor[ok[chunk_of]], c["count"][ok[chunk_of]])
    lo_v = np.full(k, np.iinfo(np.int64).max, np.int64)
    hi_v = np.full(k, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo_v, sensor, c["start"])
    np.maximum.at(hi_v, sensor, c["end"])
    present = np.bincount(sensor, minlength=k) > 0  # sensor numbers are small: counted
    ranges = {table.names[s]: (int(lo_v[s]), int(hi_v[s])) for s in np.flatnonzero(present)}
    counted = sensor[ok[chunk_of]]
    first = np.full(k, len(counted), np.int64)  # each sensor's first counted entry
    np.minimum.at(first, counted, np.arange(len(counted), dtype=np.int64))
    used = np.flatnonzero(first < len(counted))
    counts = {  # in order of first appearance, as the loop over chunks adds them
        table.names[s]: int(counts_v[s]) for s in used[np.argsort(first[used], kind="stable")]
    }
    totals = {
        "overcounted": tuple(c["i"][~ok].tolist()),
        "count": int(n[ok].sum()),
        "t_start": int(c["t0"].min()) if len(n) else None,
        "t_end": int(c["t1"].max()) if len(n) else None,
        "raw_bytes": int(c["raw"].sum()),
        "stored_bytes": int(c["len"].sum()),
    }
    return counts, ranges, totals


def _table_dated(table: ChunkTable) -> frozenset[str]:
    """:func:`dated_sensors` from the chunk table's columns."""
    c = table.cols
    chunk_of = table.entry_chunk()
    anchor = c["w0"][chunk_of]
    fits = (
        (c["has_w"][chunk_of] == 1)
        & (anchor - DATED_BEFORE_NS <= c["start"])
        & (c["end"] <= anchor + DATED_AFTER_NS)
    )
    sensor = c["sensor"].astype(np.int64)
    bad = np.zeros(len(table.names), bool)
    bad[sensor[~fits]] = True
    present = np.bincount(sensor, minlength=len(table.names)) > 0
    return frozenset(table.names[s] for s in np.flatnonzero(present & ~bad).tolist())
