"""A recording's stamps as numpy columns, read with the frame reader's own validation.

Theory of operation. Since format 1.5 a closed file ends with a stamp index
(:mod:`recordings.hfr._stamp_index`): every frame's stamps as columns, read with
one read and no chunk meta parsed; :func:`read_stamps` takes them from there
when the file has a usable one. Since format 1.4 a chunk's meta carries a stamp block
(:mod:`recordings.hfr._stamp_block`): its frames' sensor, ``seq``, ``t`` and
``t_arrival`` outside the payload, checked against the meta's counts and
ranges, and read from the footer index without touching the payload. The
payload's CRC and records are then checked only when a group's frames are
read (``hyperframes check`` verifies every chunk). Older files, and a block
that does not agree with its meta, take the path below.

Without a block, the chunk meta says which sensors a chunk holds, how many
frames of each and their time range, but not the stamps themselves: those
live inside the compressed payload. So :func:`read_stamps` decodes every
chunk that holds a wanted sensor (the others are skipped on their meta
alone) with :meth:`Recording.decode_chunk`,
the same call the frame reader makes: CRC, limits, decode budget, and every
record's and column's checks (``t`` inside the chunk's range, int64 fields,
meta maps, counts, the order column). One code path, so such a chunk yields
stamps exactly when it yields frames: a chunk the reader rejects is reported
in :attr:`Recording.damage` with the reader's words (those ``check``
prints) and skipped (raised with ``strict``), and no group ever names a
frame that cannot be read. Then:

* of a columnar chunk (``COLUMNS``, 1.1): the ``seq`` and ``t`` columns are
  taken as the int64 arrays the decoder made; the stacked payload column is
  a view and is never copied;
* of a record chunk (``CHUNK``, 1.0) and the records of a columnar one: the
  decoded frames' ``t`` and ``seq`` (array payloads are views into the
  chunk), dropped with the chunk.

A frame is then named by ``(chunk, k)``: the chunk's position in
:attr:`Recording.chunks` and the frame's rank among that sensor's frames in
the chunk, in recorded order, which is what :class:`FrameFetcher` needs to
find it again. Memory is 32 bytes per frame kept, plus one decoded chunk.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from fusion import Frame
from recordings.errors import CorruptChunk, RecordingError
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._reader import Recording
from recordings.hfr._stamp_block import decode_block
from recordings.hfr._stamp_index import StampIndex

if TYPE_CHECKING:
    from recordings.hfr._chunk_reader import DecodedChunk

__all__ = ["FrameFetcher", "SensorStamps", "read_stamps"]

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_GENERIC = 255  # the order column's value for a frame from the msgpack records


Rows = tuple[Int64, Int64, Int64]  # seq, chunk, rank


class SensorStamps:
    """One sensor's frames in recorded order: parallel int64 columns.

    ``t`` is always held. ``seq``, ``chunk`` and ``rank`` may come from ``rows``,
    called the first time one of them is asked for (grouping needs only ``t``;
    a group's table needs ``seq``, its frames ``chunk`` and ``rank``): it gives
    them for every frame the stamps were read from, and :meth:`take` records
    which of those rows these stamps hold.
    """

    __slots__ = ("_keep", "_rows", "_values", "sensor", "t")

    def __init__(
        self,
        sensor: str,
        t: Int64,
        seq: Int64 | None = None,
        chunk: Int64 | None = None,
        rank: Int64 | None = None,
        *,
        rows: Callable[[], Rows] | None = None,
    ) -> None:
        self.sensor = sensor
        self.t = t
        """Aligned time ``t`` of each frame, ns."""
        if seq is not None and chunk is not None and rank is not None:
            self._values: Rows | None = (seq, chunk, rank)
        elif rows is not None:
            self._values = None
        else:
            raise TypeError("SensorStamps needs seq, chunk and rank, or rows")
        self._rows = rows
        self._keep: np.ndarray[Any, Any] | None = None  # rows of rows() held, None: all

    def __len__(self) -> int:
        return len(self.t)

    def _held(self) -> Rows:
        if self._values is None:
            assert self._rows is not None
            got = self._rows()
            keep = self._keep
            self._values = got if keep is None else (got[0][keep], got[1][keep], got[2][keep])
            self._rows = None
        return self._values

    @property
    def seq(self) -> Int64:
        """Each frame's ``seq``."""
        return self._held()[0]

    @property
    def chunk(self) -> Int64:
        """Position of the frame's chunk in :attr:`Recording.chunks`."""
        return self._held()[1]

    @property
    def rank(self) -> Int64:
        """Rank of the frame among this sensor's frames of its chunk (recorded order)."""
        return self._held()[2]

    def take(self, keep: np.ndarray[Any, Any]) -> SensorStamps:
        """The rows selected by ``keep`` (a boolean mask or indices)."""
        if self._values is not None:
            seq, chunk, rank = self._values
            return SensorStamps(self.sensor, self.t[keep], seq[keep], chunk[keep], rank[keep])
        out = SensorStamps(self.sensor, self.t[keep], rows=self._rows)
        held = np.arange(len(self.t)) if self._keep is None else self._keep
        out._keep = held[keep]
        return out


def read_stamps(
    log: Recording,
    sensors: Iterable[str],
    start: int | None = None,
    end: int | None = None,
    progress: Callable[[int], None] | None = None,
    decoded: collections.Counter[str] | None = None,
) -> dict[str, SensorStamps]:
    """Stamps of ``sensors`` with ``start <= t < end``, in recorded order, per sensor
    (``progress(1)`` per chunk read; ``decoded["chunks"]`` counts the chunks whose
    payload had to be decoded for them).

    From the footer stamp index only ``t`` is decoded here; ``seq``, ``chunk`` and
    ``rank`` when first asked for. A sensor whose ``t`` column does not check out
    drops the index (the chunks' blocks serve every sensor); one whose other columns
    do not is read from the blocks then, and its ``t`` compared with the index's."""
    names = list(dict.fromkeys(sensors))
    index = log.stamp_index()
    if index is not None:
        try:
            found = {}
            # One allocation for every sensor's t: one mapping (huge pages where the
            # allocator can), not a 4 KiB page fault at a time per sensor.
            block = np.empty(sum(index.count(s) for s in names), np.int64)
            at = 0
            for s in names:
                index.check_rows(s)  # the runs and seq's size now; a bad frame later
                t = index.t(s, block[at : at + index.count(s)])
                at += len(t)
                found[s] = SensorStamps(s, t, rows=_rows(log, index, s))
            return {s: _window(st, start, end) for s, st in found.items()}
        except ValueError:  # a sensor's columns do not check out: the blocks instead
            log.drop_stamp_index()
    return _from_chunks(log, names, start, end, progress, decoded)


def _rows(log: Recording, index: StampIndex, sensor: str) -> Callable[[], Rows]:
    """``seq``, ``chunk`` and ``rank`` of every frame of ``sensor``: from the index, or,
    when its columns do not check out, from the chunks (whose ``t`` must be the
    index's, else the recording is reported as damaged)."""

    def rows() -> Rows:
        try:
            chunk, rank = index.places(sensor)
            return index.seq(sensor), chunk, rank
        except ValueError as err:
            problem = str(err)
        st = _from_chunks(log, [sensor], None, None, None, None)[sensor]
        if not np.array_equal(st.t, index.t(sensor)):
            raise CorruptChunk(
                f"the stamp index of {sensor!r} does not check out ({problem}) and its t "
                "column does not match the chunks' stamps",
                path=str(log.path),
            )
        return st.seq, st.chunk, st.rank

    return rows


def _from_chunks(
    log: Recording,
    names: list[str],
    start: int | None,
    end: int | None,
    progress: Callable[[int], None] | None,
    decoded: collections.Counter[str] | None,
) -> dict[str, SensorStamps]:
    """:func:`read_stamps` from each chunk's stamp block, else its payload."""
    parts: dict[str, list[tuple[Int64, Int64, Int64, Int64]]] = {s: [] for s in names}
    position = {id(c): i for i, c in enumerate(log.chunks)}
    for chunk in log.select(names, start, end):
        if progress is not None:
            progress(1)
        try:
            table = _block_stamps(chunk, log)
            if table is None:
                table = _chunk_stamps(log.decode_chunk(chunk))
                if decoded is not None:
                    decoded["chunks"] += 1
        except RecordingError as err:
            log._report(err)
            if log.strict:
                raise
            continue
        ci = position[id(chunk)]
        for sensor, (t, seq) in table.items():
            if sensor not in parts:
                continue
            rank = np.arange(len(t), dtype=np.int64)
            keep = None
            if start is not None or end is not None:
                keep = np.ones(len(t), bool)
                if start is not None:
                    keep &= t >= start
                if end is not None:
                    keep &= t < end
            col = np.full(len(t), ci, np.int64)
            if keep is not None:
                t, seq, col, rank = t[keep], seq[keep], col[keep], rank[keep]
            parts[sensor].append((t, seq, col, rank))
    out = {}
    for sensor in names:
        cols = parts[sensor]
        if cols:
            t, seq, col, rank = (np.concatenate(c) for c in zip(*cols, strict=True))
        else:
            t = seq = col = rank = np.empty(0, np.int64)
        out[sensor] = SensorStamps(sensor, t, seq, col, rank)
    return out


def _window(st: SensorStamps, start: int | None, end: int | None) -> SensorStamps:
    if start is None and end is None:
        return st
    keep = np.ones(len(st), bool)
    if start is not None:
        keep &= st.t >= start
    if end is not None:
        keep &= st.t < end
    return st.take(keep)


def _block_stamps(chunk: ChunkMeta, log: Recording) -> dict[str, tuple[Int64, Int64]] | None:
    """``{sensor: (t, seq)}`` from the chunk's stamp block (1.4), or ``None`` to read
    the payload instead: no block, or one that does not agree with the meta."""
    if chunk.stamps is None:
        chunk = _own_meta(chunk, log)
        if chunk.stamps is None:
            return None
    try:
        block = decode_block(chunk, log.limits.max_chunk_bytes)
    except ValueError:
        return None
    return {name: block.of(k) for k, name in enumerate(chunk.sensors)}


def _own_meta(chunk: ChunkMeta, log: Recording) -> ChunkMeta:
    """``chunk`` with the stamp block of its own record's meta: a footer index entry has
    none (the file's STAMPS record holds every stamp), so when that record cannot be
    used the block is read from the chunk, not the payload. ``chunk`` itself when the
    record's meta has no block or does not describe the same frames."""
    from recordings.hfr._parser import parse_chunk_meta

    head = log._read_record_head(chunk.offset)
    if isinstance(head, RecordingError) or head.kind != chunk.kind:
        return chunk
    own = parse_chunk_meta(head, where=str(log.path))
    if isinstance(own, RecordingError) or own.stamps is None:
        return chunk
    same = (own.sensors, own.counts, own.ranges, own.count) == (
        chunk.sensors,
        chunk.counts,
        chunk.ranges,
        chunk.count,
    )
    return dataclasses.replace(chunk, stamps=own.stamps) if same else chunk


def _chunk_stamps(decoded: DecodedChunk) -> dict[str, tuple[Int64, Int64]]:
    """``{sensor: (t, seq)}`` of a decoded chunk, each in recorded order.

    ``decoded`` went through :func:`recordings.hfr._chunk_reader.decode_chunk`, the
    frame reader's own validation, so a chunk whose frames the reader rejects
    never gives a stamp. Columns are read as the arrays they already are; of
    a chunk of records, only the frames' ``t`` and ``seq`` are kept.
    """
    meta = decoded.meta
    index = {name: i for i, name in enumerate(meta.sensors)}
    columns = decoded.columns
    records = decoded.records
    rec_sidx = np.fromiter((index[f.sensor] for f in records), np.int64, len(records))
    rec_t = np.fromiter((f.t for f in records), np.int64, len(records))
    rec_seq = np.fromiter((f.seq for f in records), np.int64, len(records))
    if columns is None:
        sidx_all, t_all, seq_all = rec_sidx, rec_t, rec_seq
    else:
        total = sum(len(g) for g in columns.groups) + len(records)
        order = columns.order
        if order is None:  # one source only (the decoder checked it)
            order = np.full(total, 0 if columns.groups else _GENERIC, np.uint8)
        sidx_all = np.empty(total, np.int64)
        t_all = np.empty(total, np.int64)
        seq_all = np.empty(total, np.int64)
        for i, g in enumerate(columns.groups):
            where = order == i
            sidx_all[where] = index[g.sensor]
            t_all[where] = g.t
            seq_all[where] = g.seq
        where = order == _GENERIC
        sidx_all[where] = rec_sidx
        t_all[where] = rec_t
        seq_all[where] = rec_seq
    out = {}
    for i, name in enumerate(meta.sensors):
        mask = sidx_all == i
        out[name] = (t_all[mask], seq_all[mask])
    return out


class FrameFetcher:
    """Frames named by their stamp rows, with payloads, decoding each chunk once.

    The last ``cache`` decoded chunks are kept (their frames of the wanted
    sensors, built once), so asking for frames in time order, as groups do,
    decodes every chunk about once while memory stays at ``cache`` chunks.
    """

    def __init__(self, log: Recording, stamps: Mapping[str, SensorStamps], cache: int = 4) -> None:
        self.log = log
        self.stamps = stamps
        self.cache = max(1, cache)
        self.chunks_decoded = 0
        self._wanted = frozenset(stamps)
        self._lru: collections.OrderedDict[int, dict[str, list[Frame]]] = collections.OrderedDict()

    def frame(self, sensor: str, row: int) -> Frame:
        """The frame at ``row`` of ``stamps[sensor]``."""
        st = self.stamps[sensor]
        return self._take(sensor, int(st.chunk[row]), int(st.rank[row]), row)

    def frames(self, sensor: str, lo: int, hi: int) -> list[Frame]:
        """The frames at rows ``lo..hi-1`` of ``stamps[sensor]``, in order."""
        st = self.stamps[sensor]
        chunks, ranks = st.chunk[lo:hi].tolist(), st.rank[lo:hi].tolist()
        return [
            self._take(sensor, c, k, lo + j)
            for j, (c, k) in enumerate(zip(chunks, ranks, strict=True))
        ]

    def _take(self, sensor: str, ci: int, rank: int, row: int) -> Frame:
        """The frame a stamp row names, checked against the stamp: stamps read from
        blocks or the stamp index were not read from the payload, so a file whose
        stamps and payload disagree fails here, naming the chunk, not later."""
        st = self.stamps[sensor]
        chunks = self.log.chunks
        got = self._chunk(ci)[sensor] if 0 <= ci < len(chunks) else []
        if rank < len(got):
            frame = got[rank]
            if frame.t == int(st.t[row]) and frame.seq == int(st.seq[row]):
                return frame
        where = chunks[ci].describe() if 0 <= ci < len(chunks) else f"chunk {ci}"
        raise CorruptChunk(
            f"the stamps of {sensor!r} seq {int(st.seq[row])} (t {int(st.t[row])} ns) do not "
            f"match frame {rank} of that sensor in {where}",
            path=str(self.log.path),
            offset=chunks[ci].offset if 0 <= ci < len(chunks) else None,
        )

    def _chunk(self, ci: int) -> dict[str, list[Frame]]:
        got = self._lru.get(ci)
        if got is not None:
            self._lru.move_to_end(ci)
            return got
        chunk = self.log.chunks[ci]
        by_sensor: dict[str, list[Frame]] = {sensor: [] for sensor in self._wanted}
        for frame in self.log.decode_chunk(chunk).frames(self._wanted):
            lst = by_sensor.get(frame.sensor)
            if lst is None:
                lst = by_sensor[frame.sensor] = []
            lst.append(frame)
        self.chunks_decoded += 1
        self._lru[ci] = by_sensor
        if len(self._lru) > self.cache:
            self._lru.popitem(last=False)
        return by_sensor
