"""Reading ``.hfr`` files: summary, filtered iteration, seeking, damage reports.

Theory of operation. :func:`open_recording` reads the preamble and header,
then finds the chunks one of two ways (:mod:`recordings.hfr._locate` holds both):

* **indexed**: the trailer points at the footer index, which lists every
  chunk's meta and offset; nothing else is read at open;
* **scan** (no trailer: the writer crashed, or ``use_index=False``): walk the
  records from the header on, trusting a prelude's lengths only once its
  meta CRC checks out. A record that fails its check is reported and the
  scan resynchronises on the next valid prelude; a record that runs past the
  end of the file ends the scan (the writer died while writing it).

Chunks are read lazily. Reading one checks its payload CRC, then decompresses
it within the sizes its meta declares and ``max_chunk_bytes``; a chunk that
fails any step is reported in :attr:`Recording.damage` (which chunk, which
byte offset, which time range) and skipped, and iteration goes on with the
next one. ``strict=True`` raises instead.

Seeking: chunks are in recorded (arrival) order, so their time ranges may
overlap. With ``m[i]`` the running maximum of ``t_end`` and ``n[i]`` the
minimum of ``t_start`` over chunks ``i..``, both monotonic, two bisections
bound the chunks that can hold ``[start, end)``: O(log n) in chunks.

This module holds :class:`Recording`'s reading, seeking and lifetime; what a
summary holds is in :mod:`recordings.hfr._summary`, whole-file checks in
:mod:`recordings.hfr._verify`.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import os
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from fusion import Frame, SensorSpec, WallAnchor, WallClock
from recordings.errors import CorruptChunk, LimitExceeded, RecordingError
from recordings.hfr._budget import admit, static_cost
from recordings.hfr._chunk_table import ChunkTable
from recordings.hfr._details import FrameDetails, read_details
from recordings.hfr._format import PREAMBLE, crc32
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import SensorLedger
from recordings.hfr._limits import DEFAULT_LIMITS, ReadLimits
from recordings.hfr._locate import ChunkLocator
from recordings.hfr._stamp_index import StampIndex, read_stamp_index
from recordings.hfr._summary import DATED_AFTER_NS, DATED_BEFORE_NS, RecordingSummary, SensorSummary

if TYPE_CHECKING:  # the decoder (msgpack records, columns) loads with the first chunk read
    from recordings.hfr._records import DecodedChunk


class Recording(ChunkLocator):
    """An open ``.hfr`` file. Use :func:`open_recording` to get one."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        use_index: bool = True,
        strict: bool = False,
        limits: ReadLimits = DEFAULT_LIMITS,
        readahead: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.limits = limits
        """What one record or chunk may cost; ``max_decoded_bytes`` counts every chunk
        being decoded (readahead included) together."""
        self.readahead = min(2, os.cpu_count() or 1) if readahead is None else readahead
        """Chunks decoded ahead of the one being read, in a thread pool (0: none)."""
        self._pool: ThreadPoolExecutor | None = None
        self.strict = strict
        self._damage: list[RecordingError] = []
        self._damaged_offsets: set[int | str] = set()
        self._resync_work = 0
        self._resync_spent = False
        self._specs: dict[str, SensorSpec] = {}
        self.metadata: dict[str, Any] = {}
        self._ledgers: dict[str, SensorLedger] = {}
        self._header_wall: WallAnchor | None = None
        self._dated: frozenset[str] | None = None
        self._wall: tuple[WallClock | None] | None = None
        self._chunks: Sequence[ChunkMeta] = []
        self._indexed = False
        self._use_index = use_index
        self._body = PREAMBLE.size  # where the records after the header start
        self._loaded = False
        self._loading = threading.Lock()
        self._stamp_index: StampIndex | str | None = None
        self._details_at = None
        self._frame_details: FrameDetails | str | None = None
        self._max_end: Sequence[int] | np.ndarray[Any, Any] = []
        self._min_start_from: Sequence[int] | np.ndarray[Any, Any] = []
        self._fd = os.open(self.path, os.O_RDONLY)
        try:
            self.size = os.fstat(self._fd).st_size
            self._open()
        except BaseException:
            os.close(self._fd)
            raise

    # -- the chunk list, found on first use --------------------------------
    #
    # Opening reads the preamble and the header only; the footer index (or the
    # scan) is read the first time anything needs the chunks, so a reader that
    # only wants the stamps (:meth:`stamp_index`) never decodes the index.

    def _load(self) -> None:
        if self._loaded:
            return
        with self._loading:
            if self._loaded:
                return
            closed = self._fd < 0
            if closed:  # closed before anything asked: read the chunk list now
                self._fd = os.open(self.path, os.O_RDONLY)
            try:
                if self._use_index and self._read_index():
                    self._indexed = True
                else:
                    self._scan(self._body)
            finally:
                if closed:
                    os.close(self._fd)
                    self._fd = -1
            table = self._chunks if isinstance(self._chunks, ChunkTable) else None
            if table is not None:  # 1.7: the bisection keys from the columns, no chunk built
                self._max_end = np.maximum.accumulate(table.cols["t1"])
                self._min_start_from = np.minimum.accumulate(table.cols["t0"][::-1])[::-1]
            else:
                self._max_end = list(itertools.accumulate((c.t_end for c in self._chunks), max))
                mins = itertools.accumulate((c.t_start for c in reversed(self._chunks)), min)
                self._min_start_from = list(mins)[::-1]
            self._loaded = True

    @property
    def chunks(self) -> Sequence[ChunkMeta]:
        """Every chunk found, in file order (from the footer index, or by scanning): a
        list, or for a 1.7 file a :class:`~recordings.hfr._chunk_table.ChunkTable`, which
        builds each :class:`ChunkMeta` when it is first asked for."""
        self._load()
        return self._chunks

    @property
    def indexed(self) -> bool:
        """The chunks came from a valid footer index (the writer closed the file)."""
        self._load()
        return self._indexed

    @property
    def chunk_table_problem(self) -> str | None:
        """Why the chunk list did not come from the chunk table (format 1.7,
        :mod:`recordings.hfr._chunk_table`); ``None`` when it did."""
        self._load()
        return self._chunk_table_problem

    @property
    def damage(self) -> list[RecordingError]:
        """Every problem found: at open, and in chunks as they are read."""
        self._load()
        return self._damage

    @property
    def specs(self) -> dict[str, SensorSpec]:
        """Sensor specs: the header's, the footer's and those chunks declared."""
        self._load()
        return self._specs

    @property
    def ledgers(self) -> dict[str, SensorLedger]:
        """Each sensor's input ledger as recorded (format 1.3; empty without a footer)."""
        self._load()
        return self._ledgers

    def stamp_index(self) -> StampIndex | None:
        """The footer stamp index (format 1.5; :mod:`recordings.hfr._stamp_index`), read
        without the chunk list; ``None`` when the file has none or it does not check
        out (:attr:`stamp_index_problem` says why)."""
        if self._stamp_index is None:
            if not self._use_index or self._fd < 0:
                self._stamp_index = "the footer is not used"
            else:
                self._stamp_index = read_stamp_index(
                    self._fd, self.size, self.limits.max_chunk_bytes, self._pread
                )
        return None if isinstance(self._stamp_index, str) else self._stamp_index

    def frame_details(self) -> FrameDetails | None:
        """The frame details (format 1.6; :mod:`recordings.hfr._details`): what ``info``
        reports of every frame beyond its stamps, read without any chunk; ``None`` when
        the file has none or they do not check out (:attr:`frame_details_problem` says
        why)."""
        if self._frame_details is None:
            self._load()
            if not self._use_index:
                self._frame_details = "the footer is not used"
            elif self._details_at is None:
                self._frame_details = "the file has no footer index"
            elif self._details_at[1] is None:
                self._frame_details = (
                    f"the file has no frame details (format {self.version[0]}."
                    f"{self.version[1]}; they came in 1.6)"
                )
            elif self._fd < 0:
                self._frame_details = "the recording is closed"
            else:
                at, pointer = self._details_at
                found = read_details(self._fd, at, pointer, self.limits.max_chunk_bytes)
                if not isinstance(found, str) and found.chunks != len(self._chunks):
                    found = (
                        f"the frame details describe {found.chunks} chunks; "
                        f"the file has {len(self._chunks)}"
                    )
                self._frame_details = found
        return None if isinstance(self._frame_details, str) else self._frame_details

    def sensor_summaries(self) -> dict[str, dict[str, Any] | str] | None:
        """Each sensor's summary written at close (format 1.7, INDEX key ``summaries``;
        :mod:`recordings.hfr._sensor_summary`): a map, or the writer's reason it has none;
        ``None`` when the file has none or they are malformed. Not checked against the
        frames (``hyperframes check`` does that)."""
        self._load()
        found = self._summaries
        if not isinstance(found, dict) or not all(
            type(k) is str and isinstance(v, dict | str) for k, v in found.items()
        ):
            return None
        return found

    def _pread(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of the open file (footer columns read as they
        are wanted); after :meth:`close`, the file is opened again for the read, as
        :attr:`chunks` does (every column is checked by its frames' checksums)."""
        if self._fd >= 0:
            return os.pread(self._fd, length, offset)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

    @property
    def frame_details_problem(self) -> str | None:
        """Why :meth:`frame_details` gave ``None`` (after it was called)."""
        return self._frame_details if isinstance(self._frame_details, str) else None

    def drop_stamp_index(
        self, why: str = "a sensor's stamp index columns do not check out"
    ) -> None:
        """Stop using the stamp index (:meth:`stamp_index` gives ``None`` from now on)."""
        self._stamp_index = why

    @property
    def stamp_index_problem(self) -> str | None:
        """Why :meth:`stamp_index` gave ``None`` (after it was called)."""
        return self._stamp_index if isinstance(self._stamp_index, str) else None

    # -- reading ----------------------------------------------------------

    def read_chunk(self, chunk: ChunkMeta) -> list[Frame]:
        """Every frame of ``chunk`` (verified); raises :class:`RecordingError` if damaged."""
        return list(self.decode_chunk(chunk).frames())

    def decode_chunk(self, chunk: ChunkMeta) -> DecodedChunk:
        """``chunk`` read, verified, decompressed and decoded; raises if damaged."""
        from recordings.hfr._records import decode_chunk

        return decode_chunk(
            self.raw_chunk(chunk),
            chunk,
            where=str(self.path),
            limits=self.limits,
        )

    def raw_chunk(self, chunk: ChunkMeta) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """``chunk`` read, CRC-checked and decompressed, not decoded; raises if damaged."""
        where = str(self.path)
        rec = self._read_record_head(chunk.offset)
        if isinstance(rec, RecordingError):
            raise CorruptChunk(f"{chunk.describe()} is damaged: {rec}", **self._at(chunk.offset))
        plen = rec.payload_len
        if rec.kind != chunk.kind or plen != chunk.stored_size:
            raise CorruptChunk(
                f"{chunk.describe()} is damaged: its record does not match the index",
                **self._at(chunk.offset),
            )
        if plen > self.limits.max_chunk_bytes:
            raise LimitExceeded(
                f"{chunk.describe()} stores {plen} bytes, over the limit of "
                f"{self.limits.max_chunk_bytes}; refusing to read it",
                **self._at(chunk.offset),
            )
        self.limits.check_chunk_size(chunk, where=where)  # before reading anything big
        admit(chunk, self.limits, where=where)
        payload = _read_scratch(self._fd, plen, rec.payload_offset)
        if crc32(payload) != rec.payload_crc:
            raise CorruptChunk(
                f"{chunk.describe()} fails its CRC: its stored bytes changed",
                **self._at(chunk.offset),
            )
        from recordings.hfr._records import decompress_chunk

        return decompress_chunk(payload, chunk, limits=self.limits, where=where)

    def select(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[ChunkMeta]:
        """Chunks that may hold frames of ``sensors`` with ``start <= t < end``."""
        lo, hi = 0, len(self.chunks)  # loads the chunk list and the bisection keys
        if start is not None:
            lo = _bisect_left(self._max_end, start)
        if end is not None:
            hi = _bisect_left(self._min_start_from, end)
        wanted = None if sensors is None else set(sensors)
        out = []
        for c in self.chunks[lo:hi]:
            if start is not None and c.t_end < start:
                continue
            if end is not None and c.t_start >= end:
                continue
            if wanted is not None and not wanted.intersection(c.sensors):
                continue
            out.append(c)
        return out

    def chunk_frames(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Generator[Iterator[Frame], None, None]:
        """Per selected chunk, an iterator of its matching frames (built as it advances).

        A damaged chunk is reported and skipped (raised if ``strict``) before
        its iterator would be yielded, so the iterators themselves never raise.
        """
        wanted = None if sensors is None else frozenset(sensors)
        for chunk, decoded in self._decoded(self.select(wanted, start, end)):
            if isinstance(decoded, RecordingError):
                self._report(decoded)
                if self.strict:
                    raise decoded
                continue
            # Every frame's sensor is a name of the chunk's own list, so a chunk
            # whose sensors are all wanted needs no sensor filter. Times are
            # always checked (a hostile index may misstate a chunk's range);
            # a columnar chunk wholly inside the window costs one comparison.
            picked = None if wanted is None or wanted.issuperset(chunk.sensors) else wanted
            yield decoded.frames(picked, start, end)

    def _decoded(
        self, chunks: list[ChunkMeta]
    ) -> Generator[tuple[ChunkMeta, DecodedChunk | RecordingError], None, None]:
        """``chunks`` decoded, in order; ``readahead`` of them decode ahead in threads.

        zstd, the CRC and ``pread`` release the GIL, so the next chunks
        decompress on other cores while the caller works through this one.
        At most ``readahead + 1`` decoded chunks exist at once.
        """
        if self.readahead < 1 or len(chunks) < 2:
            for chunk in chunks:
                yield chunk, self._try_decode(chunk)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.readahead, thread_name_prefix="hfr-read")
        pool = self._pool
        todo = collections.deque(chunks)
        pending: collections.deque[tuple[ChunkMeta, Future[DecodedChunk | RecordingError]]]
        pending = collections.deque()
        # Readahead shares the decode budget: a chunk is decoded ahead only while
        # the chunks in flight (the one being read included) fit in it together.
        try:
            while todo or pending:
                held = sum(static_cost(c) for c, _ in pending)
                while todo and len(pending) <= self.readahead:
                    cost = static_cost(todo[0])
                    if pending and held + cost > self.limits.max_decoded_bytes:
                        break
                    c = todo.popleft()
                    pending.append((c, pool.submit(self._try_decode, c)))
                    held += cost
                chunk, future = pending.popleft()
                try:
                    decoded = future.result()
                except CancelledError:
                    raise RecordingError(
                        "the recording was closed while it was being read", **self._at(chunk.offset)
                    ) from None
                yield chunk, decoded
                del decoded
        finally:
            for _, future in pending:
                future.cancel()

    def _try_decode(self, chunk: ChunkMeta) -> DecodedChunk | RecordingError:
        try:
            return self.decode_chunk(chunk)
        except RecordingError as err:
            return err

    def batches(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Generator[list[Frame], None, None]:
        """Frames chunk by chunk (what :class:`~recordings.Replay` reads in a thread)."""
        for frames in self.chunk_frames(sensors, start, end):
            batch = list(frames)
            if batch:
                yield batch

    def frames(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Iterator[Frame]:
        """Frames in recorded order, of ``sensors`` (all if None), with ``start <= t < end``.

        Arrays are read-only views of the decompressed chunk. Damaged chunks
        are skipped and appended to :attr:`damage` (raised if ``strict``).
        """
        for frames in self.chunk_frames(sensors, start, end):
            yield from frames

    def verify(
        self, *, decode: bool = True, progress: Callable[[int], None] | None = None
    ) -> list[RecordingError]:
        """Check every chunk (CRC, decode, contents) and the whole; the damage found.

        With ``decode`` (the default) a chunk is decoded, every record's fields
        checked, and what its meta claims compared with what it holds (frames
        and first/last ``t`` per sensor, which ``summary()`` and ``info`` show),
        so a chunk that passes is one every command reads as its meta says.
        Across chunks, a ``(sensor, seq)`` pair met twice is reported, and the
        stamp index (1.5), when present, is compared with every chunk's frames.
        Without ``decode`` only the CRCs are checked. ``progress(1)`` is called
        per chunk (:mod:`recordings.hfr._verify` holds the checks).
        """
        from recordings.hfr._verify import verify

        return verify(self, decode=decode, progress=progress)

    def summary(self) -> RecordingSummary:
        """Sensors, counts, time range, sizes: from chunk metas, nothing decompressed."""
        # A meta declaring more frames than a reader decodes is refused as damaged
        # when read; its count is the file's word only, so no total adds it.
        limit = self.limits.max_chunk_frames
        chunks = self.chunks
        if isinstance(chunks, ChunkTable):
            counts, ranges, totals = _table_totals(chunks, limit)
        else:
            counts, ranges = {}, {}
            for c in chunks:
                for name, n, (a, b) in zip(c.sensors, c.counts, c.ranges, strict=True):
                    if c.count <= limit:
                        counts[name] = counts.get(name, 0) + n
                    lo, hi = ranges.get(name, (a, b))
                    ranges[name] = (min(lo, a), max(hi, b))
            totals = {
                "overcounted": tuple(c.index for c in chunks if c.count > limit),
                "count": sum(c.count for c in chunks if c.count <= limit),
                "t_start": min((c.t_start for c in chunks), default=None),
                "t_end": max((c.t_end for c in chunks), default=None),
                "raw_bytes": sum(c.raw_size for c in chunks),
                "stored_bytes": sum(c.stored_size for c in chunks),
            }
        names = list(self.specs) + [n for n in counts if n not in self.specs]
        sensors = {
            n: SensorSummary(
                spec=self.specs.get(n) or SensorSpec(n),
                count=counts.get(n, 0),
                t_start=ranges[n][0] if n in ranges else None,
                t_end=ranges[n][1] if n in ranges else None,
            )
            for n in names
        }
        return RecordingSummary(
            path=self.path,
            version=self.version,
            sensors=MappingProxyType(sensors),
            count=totals["count"],
            chunks=len(chunks),
            t_start=totals["t_start"],
            t_end=totals["t_end"],
            file_size=self.size,
            raw_bytes=totals["raw_bytes"],
            stored_bytes=totals["stored_bytes"],
            indexed=self.indexed,
            damage=tuple(str(e) for e in self.damage),
            metadata=MappingProxyType(dict(self.metadata)),
            wall_clock=self.wall_clock,
            dated=self.dated,
            ledgers=MappingProxyType(dict(self.ledgers)),
            overcounted=totals["overcounted"],
        )

    @property
    def dated(self) -> frozenset[str]:
        """Sensors whose every chunk's ``t`` range lies near that chunk's wall anchor.

        A live pipeline aligns ``t`` to the host's monotonic clock, so a chunk's
        frames fall shortly before the anchor taken when it was sealed. A
        sensor without a clock model keeps its own stamps (a stream's PTS), and
        frames written with made-up times (tests, a virtual clock) do not fit
        either: those are not dated, and exports leave their stamps alone.
        """
        if self._dated is not None:  # the chunk list never changes once read
            return self._dated
        if isinstance(self.chunks, ChunkTable):
            self._dated = _table_dated(self.chunks)
            return self._dated
        fits: dict[str, bool] = {}
        for c in self.chunks:
            for name, (lo, hi) in zip(c.sensors, c.ranges, strict=True):
                ok = c.wall is not None and (
                    c.wall[0] - DATED_BEFORE_NS <= lo and hi <= c.wall[0] + DATED_AFTER_NS
                )
                fits[name] = fits.get(name, True) and ok
        self._dated = frozenset(name for name, ok in fits.items() if ok)
        return self._dated

    @property
    def wall_clock(self) -> WallClock | None:
        """The recording's wall-clock anchors (:mod:`fusion._wallclock`); ``None`` if it has none.

        ``log.wall_clock.to_utc(frame.t)`` dates a frame (``t`` and ``t_arrival``
        are on the reference clock; ``t_sensor`` is on the sensor's own).
        """
        if self._wall is None:  # built once: the chunk list never changes once read
            chunks = self.chunks
            if isinstance(chunks, ChunkTable):
                has = chunks.cols["has_w"] == 1
                w0, w1 = chunks.cols["w0"][has].tolist(), chunks.cols["w1"][has].tolist()
                anchors = [WallAnchor(a, b) for a, b in zip(w0, w1, strict=True)]
            else:
                anchors = [WallAnchor(*c.wall) for c in chunks if c.wall is not None]
            if self._header_wall is not None:
                anchors.append(self._header_wall)
            self._wall = (WallClock(anchors) if anchors else None,)
        return self._wall[0]

    # -- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """Close the file; frames already returned stay valid (they own their chunk)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)  # no pread after close
            self._pool = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __enter__(self) -> Recording:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Recording('{self.path}', chunks={len(self.chunks)}, damage={len(self.damage)})"


def _table_totals(
    table: ChunkTable, limit: int
) -> tuple[dict[str, int], dict[str, tuple[int, int]], dict[str, Any]]:
    """:meth:`Recording.summary`'s per-sensor counts and ranges and its totals, from the
    chunk table's columns (no chunk built), as the loop over chunk metas gives them."""
    c = table.cols
    n = c["n"]
    ok = n <= limit
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
    """:attr:`Recording.dated` from the chunk table's columns."""
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


def _bisect_left(keys: Sequence[int] | np.ndarray[Any, Any], x: int) -> int:
    if isinstance(keys, np.ndarray):
        return int(np.searchsorted(keys, x, side="left"))
    return bisect.bisect_left(keys, x)


_scratch = threading.local()
_SCRATCH_MAX = 64 << 20


def _read_scratch(fd: int, n: int, offset: int) -> memoryview:
    """Up to ``n`` bytes at ``offset``, read into this thread's reusable buffer.

    A chunk's stored bytes are only checked and decompressed, never kept, so
    reusing one buffer spares an allocation and its page faults per chunk.
    The view is valid until this thread's next call.
    """
    buf: bytearray | None = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < n:
        buf = bytearray(n)
        if n <= _SCRATCH_MAX:
            _scratch.buf = buf
    view = memoryview(buf)[:n]
    got = os.preadv(fd, [view], offset)
    return view[:got]


def open_recording(
    path: str | os.PathLike[str],
    *,
    use_index: bool = True,
    strict: bool = False,
    limits: ReadLimits | None = None,
    readahead: int | None = None,
    max_chunk_bytes: int | None = None,
    max_meta_bytes: int | None = None,
    max_decoded_bytes: int | None = None,
    max_chunk_frames: int | None = None,
) -> Recording:
    """Open a ``.hfr`` file for reading (contract).

    Raises :class:`~recordings.errors.RecordingError` only when the file is not a
    recording at all, or :class:`~recordings.errors.UnsupportedVersion`; damage
    anywhere else is reported in :attr:`Recording.damage` and skipped.
    ``use_index=False`` ignores the footer and scans the chunks (what a file
    cut short by a crash gets anyway). ``readahead`` chunks are decompressed
    ahead in worker threads while frames are read (default: 2, or 1 on one
    core; 0 reads everything in the calling thread).

    ``limits`` (:class:`~recordings.hfr._limits.ReadLimits`, defaults without it)
    bound what the file may cost, and each ``max_*`` given changes that one
    limit: ``max_chunk_bytes`` caps the memory a single chunk may claim,
    ``max_meta_bytes`` a record's meta, ``max_decoded_bytes`` the memory
    decoded objects of the chunks in flight may take (readahead included) and
    ``max_chunk_frames`` the frames one chunk may declare; a chunk over any is
    reported as :class:`~recordings.errors.LimitExceeded` before anything is built
    (see :mod:`recordings.hfr._budget`).
    """
    chosen = (limits or DEFAULT_LIMITS).replace(
        max_chunk_bytes=max_chunk_bytes,
        max_meta_bytes=max_meta_bytes,
        max_decoded_bytes=max_decoded_bytes,
        max_chunk_frames=max_chunk_frames,
    )
    return Recording(path, use_index=use_index, strict=strict, limits=chosen, readahead=readahead)
