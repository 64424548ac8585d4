"""Re-grouping a recording offline: groups from the stamps, payloads only for the groups.

Theory of operation. :func:`sync_recording` reads each wanted sensor's stamps
(:func:`~recordings.hfr._stamps.read_stamps`: the footer stamp index of a 1.5
file, else each chunk's stamp block, else the chunks decompressed; no
payload built), drops what ``push`` would drop as ``out_of_order``, and computes the
groups of an ``ExactTime`` or ``Nearest`` policy as index columns
(:func:`~fusion.policies._columnar.group_columns`), exactly the groups the
streaming policy forms from the same frames. Nothing else is read until asked:

* :meth:`OfflineGroups.table` and :meth:`~OfflineGroups.to_parquet` use only
  the stamps (a row per group: ``t``, and per sensor ``<sensor>_seq`` and
  ``<sensor>_t``, null where missing; lists for window sensors; when the
  recording is dated, ``t_utc`` and ``<sensor>_t_utc`` as UTC timestamps);
* :meth:`~OfflineGroups.groups` builds :class:`~fusion.FrameGroup` objects
  with payloads, decoding the chunks that hold their frames, each about once;
* :meth:`~OfflineGroups.write_recording` writes those frames, group by group,
  to a new ``.hfr``.

Memory is proportional to the stamps (32 bytes a frame read, plus the index
columns of the groups), not to the payloads; :meth:`groups` holds at most a
few decoded chunks at a time.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from fusion import Frame, FrameGroup
from fusion.policies import ExactTime, GroupColumns, Nearest, SyncPolicy, admitted, group_columns
from recordings._extras import pyarrow_modules
from recordings.hfr import (
    EPOCH_THRESHOLD_NS,
    FrameFetcher,
    Recording,
    SensorStamps,
    open_recording,
    read_stamps,
)

__all__ = ["OfflineGroups", "sync_recording"]

Int64 = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True, slots=True)
class OfflineSyncStatistics:
    """What an offline sync read and decided."""

    frames: Mapping[str, int]
    """Stamps read, per sensor."""
    out_of_order: Mapping[str, int]
    """Stamps dropped because they were not after the sensor's previous one."""
    groups: int
    """Groups formed."""
    groups_dropped: int
    """References (ExactTime: stamps) whose group lacked a required sensor."""
    chunks_read: int
    """Chunks decompressed to read the stamps (those without a 1.4 stamp block)."""
    stamp_index: bool = False
    """The stamps came from the file's footer stamp index (1.5): no chunk meta was parsed."""


class OfflineGroups:
    """The groups of one recording under one policy; payloads on demand."""

    def __init__(
        self,
        log: Recording,
        policy: ExactTime | Nearest,
        stamps: Mapping[str, SensorStamps],
        columns: GroupColumns,
        stats: OfflineSyncStatistics,
        *,
        owns_log: bool,
    ) -> None:
        self.log = log
        self.policy = policy
        self.stamps = stamps
        """Admitted stamps per sensor; the columns' indices point into these."""
        self.columns = columns
        self.statistics = stats
        self._owns = owns_log

    def __len__(self) -> int:
        return len(self.columns)

    @property
    def windows(self) -> frozenset[str]:
        return frozenset(self.columns.spans)

    # -- stamps only --------------------------------------------------------------

    def table(self) -> dict[str, np.ndarray[Any, Any] | np.ma.MaskedArray[Any, Any]]:
        """Columns of the group table: ``t``, then per single-frame sensor
        ``<s>_seq``/``<s>_t`` as masked int64 arrays (masked where missing) and
        per window sensor ``<s>_offsets`` plus ``<s>_seq``/``<s>_t`` flat values
        (group ``i`` owns values ``offsets[i]:offsets[i + 1]``)."""
        out: dict[str, Any] = {}
        for name, (values, missing) in self._plain_table().items():
            out[name] = values if missing is None else np.ma.MaskedArray(values, mask=missing)
        return out

    def _plain_table(self) -> dict[str, tuple[Int64, np.ndarray[Any, Any] | None]]:
        """:meth:`table` as ``(values, missing or None)`` pairs: no ``numpy.ma`` (whose
        import alone costs ``hyperframes sync`` ~35 ms)."""
        cols = self.columns
        out: dict[str, tuple[Int64, np.ndarray[Any, Any] | None]] = {"t": (cols.t, None)}
        for s in cols.sensors:
            st = self.stamps[s]
            if s in cols.spans:
                lo, hi = cols.spans[s]
                counts = np.maximum(hi - lo, 0)
                offsets = np.zeros(len(counts) + 1, np.int64)
                np.cumsum(counts, out=offsets[1:])
                rows = _ranges(lo, counts)
                out[f"{s}_offsets"] = (offsets, None)
                out[f"{s}_seq"] = (st.seq[rows], None)
                out[f"{s}_t"] = (st.t[rows], None)
            else:
                pick = cols.picks[s]
                miss = pick < 0
                safe = np.where(miss, 0, pick)
                seq = st.seq[safe] if len(st) else np.zeros(len(pick), np.int64)
                t = st.t[safe] if len(st) else np.zeros(len(pick), np.int64)
                out[f"{s}_seq"] = (seq, miss)
                out[f"{s}_t"] = (t, miss)
        return out

    def to_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`table` as Parquet: one row per group; needs ``pyarrow``."""
        pa, pq = pyarrow_modules()
        table = self._plain_table()
        stamp = pa.timestamp("ns", tz="UTC")
        i64 = pa.int64()

        def arrow(values: Int64, typ: Any, missing: np.ndarray[Any, Any] | None = None) -> Any:
            # From buffers: ``pa.array(ndarray)`` imports pandas to check for a Series.
            data = np.ascontiguousarray(values, np.int32 if typ == pa.int32() else np.int64)
            valid = None
            if missing is not None and missing.any():
                valid = pa.py_buffer(np.packbits(~missing, bitorder="little"))
            return pa.Array.from_buffers(typ, len(data), [valid, pa.py_buffer(data)])

        def listed(offsets: Any, values: Any, missing: np.ndarray[Any, Any]) -> Any:
            bits = pa.py_buffer(np.packbits(missing, bitorder="little"))
            mask = pa.Array.from_buffers(pa.bool_(), len(missing), [None, bits])
            return pa.ListArray.from_arrays(offsets, values, mask=mask)

        arrays: dict[str, Any] = {"t": arrow(table["t"][0], i64)}
        group_utc = self._group_utc(table["t"][0])
        if group_utc is not None:
            arrays["t_utc"] = arrow(group_utc, stamp)
        for s in self.columns.sensors:
            if s in self.columns.spans:
                offsets = arrow(table[f"{s}_offsets"][0], pa.int32())
                miss = self.columns.missing(s)
                for what in ("seq", "t"):
                    arrays[f"{s}_{what}"] = listed(
                        offsets, arrow(table[f"{s}_{what}"][0], i64), miss
                    )
                utc = self._utc(s, table[f"{s}_t"][0])
                if utc is not None:
                    arrays[f"{s}_t_utc"] = listed(offsets, arrow(utc, stamp), miss)
            else:
                for what in ("seq", "t"):
                    values, missing = table[f"{s}_{what}"]
                    arrays[f"{s}_{what}"] = arrow(values, i64, missing)
                values, missing = table[f"{s}_t"]
                utc = self._utc(s, values)
                if utc is not None:
                    arrays[f"{s}_t_utc"] = arrow(utc, stamp, missing)
        from recordings.output_files import safe_output

        out = Path(path)
        with safe_output(out, [self.log.path]) as staged:
            pq.write_table(
                pa.Table.from_arrays(
                    list(arrays.values()), names=list(arrays)
                ).replace_schema_metadata(
                    {"hyperframes.sync": _describe(self.policy), "source": str(self.log.path)}
                ),
                staged,
            )
        return out

    def _utc(self, sensor: str, t: Int64) -> Int64 | None:
        """UTC ns of ``sensor``'s times ``t``, or ``None`` if the sensor is not dated.

        The rule of :meth:`RecordingSummary.to_utc`, per sensor: a sensor
        :attr:`Recording.dated` converts with the recorded anchors (the latest
        at or before each ``t``, the first for earlier ones); a sensor whose
        every stamp is already Unix-epoch ns (a converted bag) is kept as it is.
        """
        clock = self.log.wall_clock
        if clock is not None and sensor in self.log.dated:
            anchors = clock.anchors
            keys = np.array([a.reference_ns for a in anchors], np.int64)
            offsets = np.array([a.offset_ns for a in anchors], np.int64)
            which = np.maximum(np.searchsorted(keys, t, "right") - 1, 0)
            utc: Int64 = t + offsets[which]
            return utc
        st = self.stamps.get(sensor)
        if st is not None and len(st) and int(st.t.min()) > EPOCH_THRESHOLD_NS:
            return t
        return None

    def _group_utc(self, t: Int64) -> Int64 | None:
        """UTC of the groups' ``t``: the reference's dates (Nearest), or the dates
        every sensor agrees on (ExactTime: ``t`` is a stamp they share)."""
        if isinstance(self.policy, Nearest):
            return self._utc(self.policy.reference, t)
        dated = [self._utc(s, t) for s in self.columns.sensors]
        if not dated or any(d is None for d in dated):
            return None
        return dated[0]

    # -- with payloads ------------------------------------------------------------

    def groups(self, start: int = 0, stop: int | None = None) -> Iterator[FrameGroup]:
        """Groups ``start..stop-1`` with their frames and payloads, in time order.

        The same :class:`~fusion.FrameGroup` objects the streaming policy
        emits (reference first, window sensors as lists, ``missing`` set).
        """
        cols = self.columns
        fetch = FrameFetcher(self.log, self.stamps)
        stop = len(cols) if stop is None else min(stop, len(cols))
        singles = [s for s in cols.sensors if s not in cols.spans]
        picks = {s: cols.picks[s][start:stop].tolist() for s in singles}
        spans = {
            s: (lo[start:stop].tolist(), hi[start:stop].tolist())
            for s, (lo, hi) in cols.spans.items()
        }
        order = self._member_order()
        for j, t in enumerate(cols.t[start:stop].tolist()):
            frames: dict[str, Frame | list[Frame]] = {}
            missing = []
            for s in order:
                if s in picks:
                    row = picks[s][j]
                    if row < 0:
                        missing.append(s)
                    else:
                        frames[s] = fetch.frame(s, row)
                else:
                    lo, hi = spans[s][0][j], spans[s][1][j]
                    frames[s] = fetch.frames(s, lo, hi) if hi > lo else []
                    if hi <= lo:
                        missing.append(s)
            yield FrameGroup(t, frames, frozenset(missing))

    def write_recording(self, path: str | os.PathLike[str], **recorder_options: Any) -> Path:
        """Write the groups' frames, group by group, to a new ``.hfr``.

        The header's metadata records the policy and the source; each sensor
        keeps its spec. Frames no group used are not written, so replaying
        the file through the same policy gives the same groups.
        """
        from recordings.hfr import Recorder
        from recordings.output_files import safe_output

        meta = dict(recorder_options.pop("metadata", {}) or {})
        meta.update({"sync": _describe(self.policy), "source": str(self.log.path)})
        specs = [self.log.specs[s] for s in self.columns.sensors if s in self.log.specs]
        with (
            safe_output(path, [self.log.path]) as staged,
            Recorder(staged, sensors=specs, metadata=meta, **recorder_options) as rec,
        ):
            for group in self.groups():
                for frame in group.members():
                    rec.write(frame)
        return Path(path)

    def _member_order(self) -> list[str]:
        if isinstance(self.policy, Nearest):
            ref = self.policy.reference
            return [ref, *(s for s in self.columns.sensors if s != ref)]
        return list(self.columns.sensors)

    # -- lifetime -----------------------------------------------------------------

    def close(self) -> None:
        """Close the recording if :func:`sync_recording` opened it."""
        if self._owns:
            self.log.close()

    def __enter__(self) -> OfflineGroups:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def sync_recording(
    source: str | os.PathLike[str] | Recording,
    policy: SyncPolicy,
    *,
    start: int | None = None,
    end: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> OfflineGroups:
    """The groups ``policy`` forms over a recording's frames with ``start <= t < end``.

    ``policy`` (an :class:`~fusion.ExactTime` or :class:`~fusion.Nearest`)
    gives the parameters and is not fed. The groups are exactly those its
    ``push``/``drain`` give on the recording's frames, in recorded order, with
    no buffer overflowing (:mod:`fusion.policies._columnar` says when that
    holds). ``ApproximateTime`` is refused: it stays streaming. A path is
    opened here and closed by :meth:`OfflineGroups.close`. ``progress(1)`` is
    told per chunk read (for a progress bar).
    """
    if not isinstance(policy, (ExactTime, Nearest)):
        group_columns(policy, {})  # raises why this policy has no offline form
        raise AssertionError("unreachable: group_columns refuses every other policy")
    owns = not isinstance(source, Recording)
    log = open_recording(source) if not isinstance(source, Recording) else source
    try:
        decoded: collections.Counter[str] = collections.Counter()
        raw = read_stamps(log, policy.sensors, start, end, progress, decoded)
        from_index = log.stamp_index() is not None
        chunks_before = decoded["chunks"]
        stamps, out_of_order = _admitted(raw)
        try:  # the usual case: every sensor's stamps increase (the kernel checks as it goes)
            columns = group_columns(policy, {s: st.t for s, st in stamps.items()})
        except ValueError:
            if all(_increasing(st.t) for st in raw.values()):
                raise
            stamps, out_of_order = _admitted(raw, check=True)
            columns = group_columns(policy, {s: st.t for s, st in stamps.items()})
    except BaseException:
        if owns:
            log.close()
        raise
    stats = OfflineSyncStatistics(
        frames={s: len(st) for s, st in raw.items()},
        out_of_order=out_of_order,
        groups=len(columns),
        groups_dropped=columns.dropped_groups,
        chunks_read=chunks_before,
        stamp_index=from_index,
    )
    return OfflineGroups(log, policy, stamps, columns, stats, owns_log=owns)


def _admitted(
    raw: Mapping[str, SensorStamps], *, check: bool = False
) -> tuple[dict[str, SensorStamps], dict[str, int]]:
    """Each sensor's stamps as ``push`` admits them, and how many it drops as out of
    order; without ``check`` every stamp is taken as admitted (``group_columns`` refuses
    stamps that do not increase, and is then called again with ``check``)."""
    if not check:
        return dict(raw), dict.fromkeys(raw, 0)
    stamps: dict[str, SensorStamps] = {}
    out_of_order: dict[str, int] = {}
    for s, st in raw.items():
        if _increasing(st.t):
            stamps[s], out_of_order[s] = st, 0
            continue
        keep = admitted(st.t)
        out_of_order[s] = int(len(keep) - keep.sum())
        stamps[s] = st.take(keep)
    return stamps, out_of_order


def _increasing(t: Int64) -> bool:
    """Whether ``t`` is strictly increasing (then :func:`admitted` keeps every stamp)."""
    return len(t) < 2 or bool(np.all(t[1:] > t[:-1]))


def _ranges(lo: np.ndarray[Any, Any], counts: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``concat(arange(lo[i], lo[i] + counts[i]))`` without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    rows: np.ndarray[Any, Any] = np.arange(total, dtype=np.int64) + starts
    return rows


def _describe(policy: ExactTime | Nearest) -> str:
    if isinstance(policy, Nearest):
        return (
            f"nearest reference={policy.reference} sensors={','.join(policy.sensors)} "
            f"tolerance={policy.tolerance} windows={policy.windows} "
            f"optional={sorted(policy.optional)}"
        )
    return f"exact sensors={','.join(policy.sensors)} optional={sorted(policy.optional)}"
