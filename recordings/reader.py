"""Reading ``.hfr`` files: summary, filtered iteration, seeking, damage reports.

Theory of operation. :func:`open_recording` reads the preamble and header,
then finds the chunks one of two ways:

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
"""

from __future__ import annotations

import bisect
import collections
import itertools
import os
import struct
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from fusion.frames import Frame, SensorSpec
from fusion.wallclock import WallAnchor, WallClock
from recordings.budget import admit, static_cost
from recordings.errors import CorruptChunk, LimitExceeded, RecordingError, TruncatedRecording
from recordings.format import (
    CHUNK_KINDS,
    END_MAGIC,
    PREAMBLE,
    PRELUDE,
    SYNC,
    TRAILER,
    RecordKind,
    crc32,
    unpack_preamble,
)
from recordings.layout import ChunkMeta
from recordings.ledgers import SensorLedger, parse_ledgers
from recordings.limits import DEFAULT_LIMITS, ReadLimits
from recordings.parser import (
    NeedMore,
    RecordHead,
    header_contents,
    parse_chunk_meta,
    parse_index,
    parse_record_head,
    parse_specs,
)
from recordings.stamp_index import StampChecker, StampIndex, read_stamp_index

if TYPE_CHECKING:  # the decoder (msgpack records, columns) loads with the first chunk read
    from recordings.records import DecodedChunk

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
    """Frames recorded (in readable chunks)."""
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
    """Frames in the chunks found."""
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


class Recording:
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
        self._chunks: list[ChunkMeta] = []
        self._indexed = False
        self._use_index = use_index
        self._body = PREAMBLE.size  # where the records after the header start
        self._loaded = False
        self._loading = threading.Lock()
        self._stamp_index: StampIndex | str | None = None
        self._max_end: list[int] = []
        self._min_start_from: list[int] = []
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
            self._max_end = list(itertools.accumulate((c.t_end for c in self._chunks), max))
            mins = list(itertools.accumulate((c.t_start for c in reversed(self._chunks)), min))
            self._min_start_from = mins[::-1]
            self._loaded = True

    @property
    def chunks(self) -> list[ChunkMeta]:
        """Every chunk found, in file order (from the footer index, or by scanning)."""
        self._load()
        return self._chunks

    @property
    def indexed(self) -> bool:
        """The chunks came from a valid footer index (the writer closed the file)."""
        self._load()
        return self._indexed

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
        """The footer stamp index (format 1.5; :mod:`recordings.stamp_index`), read
        without the chunk list; ``None`` when the file has none or it does not check
        out (:attr:`stamp_index_problem` says why)."""
        if self._stamp_index is None:
            if not self._use_index or self._fd < 0:
                self._stamp_index = "the footer is not used"
            else:
                self._stamp_index = read_stamp_index(
                    self._fd, self.size, self.limits.max_chunk_bytes
                )
        return None if isinstance(self._stamp_index, str) else self._stamp_index

    def drop_stamp_index(
        self, why: str = "a sensor's stamp index columns do not check out"
    ) -> None:
        """Stop using the stamp index (:meth:`stamp_index` gives ``None`` from now on)."""
        self._stamp_index = why

    @property
    def stamp_index_problem(self) -> str | None:
        """Why :meth:`stamp_index` gave ``None`` (after it was called)."""
        return self._stamp_index if isinstance(self._stamp_index, str) else None

    # -- opening ----------------------------------------------------------

    def _open(self) -> None:
        head = os.pread(self._fd, PREAMBLE.size, 0)
        self.version = unpack_preamble(head, path=str(self.path))
        offset = PREAMBLE.size
        rec = self._read_record_head(offset)
        if isinstance(rec, RecordingError):
            self._report(rec)
        else:
            if rec.kind == RecordKind.HEADER and isinstance(rec.meta, dict):
                specs, metadata = header_contents(rec.meta)
                for spec in specs:
                    self._specs.setdefault(spec.name, spec)
                self.metadata = metadata or {}
                self._header_wall = WallAnchor.from_wire(rec.meta.get("wall"))
                self._body = rec.end
            else:
                self._report(CorruptChunk("the first record is not a header", **self._at(offset)))

    def _read_index(self) -> bool:
        if self.size < PREAMBLE.size + TRAILER.size:
            return False
        trailer = os.pread(self._fd, TRAILER.size, self.size - TRAILER.size)
        index_offset, crc, magic = TRAILER.unpack(trailer)
        if magic != END_MAGIC or crc32(struct.pack("<Q", index_offset)) != crc:
            return False
        if not PREAMBLE.size <= index_offset <= self.size - TRAILER.size - PRELUDE.size:
            self._report(
                CorruptChunk(
                    f"the trailer points at offset {index_offset}, outside the file; "
                    "scanning the chunks instead",
                    path=str(self.path),
                    offset=self.size - TRAILER.size,
                )
            )
            return False
        rec = self._read_record_head(index_offset)
        if isinstance(rec, RecordingError) or rec.kind != RecordKind.INDEX:
            self._report(
                CorruptChunk(
                    "the footer index is damaged; scanning the chunks instead",
                    **self._at(index_offset),
                )
            )
            return False
        meta = rec.meta
        chunks = parse_index(meta, index_offset=index_offset, where=str(self.path))
        if isinstance(chunks, RecordingError):
            self._report(chunks)
            return False
        self._chunks = chunks
        self._take_specs(meta.get("sensors"))
        if "ledger" in meta:
            try:
                self._ledgers = parse_ledgers(meta["ledger"])
            except ValueError as err:
                self._report(CorruptChunk(f"{err}; ignoring it", **self._at(index_offset)))
        for c in chunks:
            self._take_specs(c.new_specs)
        return True

    def _scan(self, offset: int) -> None:
        while offset < self.size:
            rec = self._read_record_head(offset)
            if isinstance(rec, RecordingError):
                nxt = self._resync(offset + 1)
                if isinstance(rec, TruncatedRecording) and nxt is not None:
                    # Lengths are unverified until the CRC is: a damaged length
                    # points past the end too. A valid record further on says so.
                    rec = CorruptChunk(
                        "record header is damaged (its lengths run past the end of the file)",
                        **self._at(offset),
                    )
                self._report(rec)
                if nxt is None:
                    return
                offset = nxt
                continue
            if rec.kind in CHUNK_KINDS:
                chunk = parse_chunk_meta(rec, where=str(self.path))
                if isinstance(chunk, RecordingError):
                    self._report(chunk)
                else:
                    self._chunks.append(chunk)
                    self._take_specs(chunk.new_specs)
            elif rec.kind == RecordKind.INDEX:
                return  # what follows is the trailer
            offset = rec.end  # headers repeated and unknown kinds are skipped

    def _read_record_head(self, offset: int) -> RecordHead | RecordingError:
        """The verified head of the record at ``offset``, or why there is none."""
        available = self.size - offset
        if not 0 <= offset < self.size:
            return CorruptChunk(f"offset {offset} is outside the file", **self._at(offset))
        # One read usually holds prelude and meta (a chunk's meta is a few hundred bytes).
        data: bytes = os.pread(self._fd, min(available, _HEAD_READ), offset)
        want = PRELUDE.size
        while True:
            if len(data) < want:
                data = os.pread(self._fd, want, offset)
            if len(data) < want:
                what = "a record prelude" if want == PRELUDE.size else "a record"
                return TruncatedRecording(
                    f"the file ends inside {what} ({available} bytes lost)", **self._at(offset)
                )
            head = parse_record_head(
                data,
                offset=offset,
                where=str(self.path),
                limits=self.limits,
                available=available,
            )
            if not isinstance(head, NeedMore):
                break
            want = head.size
        return head

    def _resync(self, start: int) -> int | None:
        """Offset of the next record whose prelude and meta check out, after ``start``.

        Linear in the file size, whatever the file holds: a candidate must have
        a known kind, a meta that starts like a msgpack map and fit in the file
        before its meta is CRC-checked, and all resynchronising together may
        CRC at most :data:`RESYNC_WORK` times the file's size (plus 16 MiB).
        A file that spends that is hostile: it is reported, and from then on
        only candidates with a meta of at most :data:`RESYNC_SMALL_META` bytes
        (every chunk's) are tried, so each candidate costs a bounded amount.
        """
        window = 1 << 20
        pos = start
        limit = RESYNC_WORK * self.size + (16 << 20)
        while pos < self.size:
            buf = os.pread(self._fd, window + PRELUDE.size + 1, pos)
            i = buf.find(SYNC)
            while 0 <= i < window:
                candidate = pos + i
                meta_len = 0
                plausible = True  # at the very end of the file the parser judges
                if i + PRELUDE.size < len(buf):
                    _, kind, meta_len, payload_len, _, _ = PRELUDE.unpack_from(buf, i)
                    plausible = (
                        kind in _KINDS
                        and meta_len <= self.limits.max_meta_bytes
                        and candidate + PRELUDE.size + meta_len + payload_len <= self.size
                        and buf[i + PRELUDE.size] in _MAP_FIRST_BYTES
                    )
                if plausible and self._resync_work + meta_len > limit:
                    # Spent: only candidates with a small meta (a chunk's) are still tried.
                    plausible = meta_len <= RESYNC_SMALL_META
                    if not self._resync_spent:
                        self._resync_spent = True
                        self._report(
                            CorruptChunk(
                                "too many false record starts (a hostile file?): from here "
                                f"on only records with a meta under {RESYNC_SMALL_META} bytes "
                                "are found",
                                **self._at(candidate),
                            )
                        )
                if plausible:
                    self._resync_work += meta_len
                    if not isinstance(self._read_record_head(candidate), RecordingError):
                        return candidate
                i = buf.find(SYNC, i + 1)
            pos += window
        return None

    def _take_specs(self, specs: Any) -> None:
        for spec in parse_specs(specs):
            self._specs.setdefault(spec.name, spec)

    def _at(self, offset: int) -> dict[str, Any]:
        return {"path": str(self.path), "offset": offset}

    def _report(self, err: RecordingError) -> None:
        key: int | str = err.offset if err.offset is not None else str(err)
        if key in self._damaged_offsets:
            return
        self._damaged_offsets.add(key)
        self._damage.append(err)

    # -- reading ----------------------------------------------------------

    def read_chunk(self, chunk: ChunkMeta) -> list[Frame]:
        """Every frame of ``chunk`` (verified); raises :class:`RecordingError` if damaged."""
        return list(self.decode_chunk(chunk).frames())

    def decode_chunk(self, chunk: ChunkMeta) -> DecodedChunk:
        """``chunk`` read, verified, decompressed and decoded; raises if damaged."""
        from recordings.records import decode_chunk

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
        from recordings.records import decompress_chunk

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
            lo = bisect.bisect_left(self._max_end, start)
        if end is not None:
            hi = bisect.bisect_left(self._min_start_from, end)
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
        per chunk.
        """
        seqs: dict[str, list[Any]] = {}
        table = StampChecker(self.stamp_index(), len(self.chunks)) if decode else None
        if table is not None and table.problem:
            self._report(RecordingError(table.problem, path=str(self.path)))
        for ci, chunk in enumerate(self.chunks):
            if progress is not None:
                progress(1)
            try:
                if decode:
                    found = self._check_contents(chunk, seqs)
                    problem = table.compare(ci, found) if table is not None else None
                    if problem:
                        raise CorruptChunk(
                            f"the stamp index does not match {chunk.describe()}: {problem}",
                            **self._at(chunk.offset),
                        )
                else:
                    self._check_crc(chunk)
            except RecordingError as err:
                self._report(err)
        for name, parts in seqs.items():
            self._check_unique(name, parts)
        return list(self.damage)

    def _check_contents(
        self, chunk: ChunkMeta, seqs: dict[str, list[Any]]
    ) -> dict[str, tuple[list[int], list[int]]]:
        """Check ``chunk`` against its meta; its frames' ``(t, seq)`` lists per sensor."""
        found: dict[str, list[int]] = {}
        seen: dict[str, list[int]] = {}
        for f in self.decode_chunk(chunk).frames():
            found.setdefault(f.sensor, []).append(f.t)
            seen.setdefault(f.sensor, []).append(f.seq)
        for name, n, (a, b) in zip(chunk.sensors, chunk.counts, chunk.ranges, strict=True):
            ts = found.get(name, [])
            if len(ts) != n or (ts and (min(ts), max(ts)) != (a, b)):
                got = f"{len(ts)} frames" + (f", t {min(ts)}..{max(ts)}" if ts else "")
                raise CorruptChunk(
                    f"{chunk.describe()} does not hold what its meta says: sensor "
                    f"{name!r} has {got}, its meta {n} frames, t {a}..{b}",
                    **self._at(chunk.offset),
                )
        for name, values in seen.items():
            seqs.setdefault(name, []).append(np.asarray(values, np.int64))
        return {name: (ts, seen[name]) for name, ts in found.items()}

    def _check_unique(self, name: str, parts: list[Any]) -> None:
        s = np.sort(np.concatenate(parts))
        dup = s[1:][s[1:] == s[:-1]]
        if len(dup):
            values = np.unique(dup)
            shown = ", ".join(map(str, values[:3].tolist())) + (", ..." if len(values) > 3 else "")
            self._report(
                RecordingError(
                    f"sensor {name!r} has {len(dup)} frames whose seq was seen before "
                    f"(seq {shown})",
                    path=str(self.path),
                )
            )

    def _check_crc(self, chunk: ChunkMeta) -> None:
        rec = self._read_record_head(chunk.offset)
        if isinstance(rec, RecordingError):
            raise rec
        payload = os.pread(self._fd, rec.payload_len, rec.payload_offset)
        if crc32(payload) != rec.payload_crc:
            raise CorruptChunk(f"{chunk.describe()} fails its CRC", **self._at(chunk.offset))

    def summary(self) -> RecordingSummary:
        """Sensors, counts, time range, sizes: from chunk metas, nothing decompressed."""
        counts: dict[str, int] = {}
        ranges: dict[str, tuple[int, int]] = {}
        for c in self.chunks:
            for name, n, (a, b) in zip(c.sensors, c.counts, c.ranges, strict=True):
                counts[name] = counts.get(name, 0) + n
                lo, hi = ranges.get(name, (a, b))
                ranges[name] = (min(lo, a), max(hi, b))
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
            count=sum(c.count for c in self.chunks),
            chunks=len(self.chunks),
            t_start=min((c.t_start for c in self.chunks), default=None),
            t_end=max((c.t_end for c in self.chunks), default=None),
            file_size=self.size,
            raw_bytes=sum(c.raw_size for c in self.chunks),
            stored_bytes=sum(c.stored_size for c in self.chunks),
            indexed=self.indexed,
            damage=tuple(str(e) for e in self.damage),
            metadata=MappingProxyType(dict(self.metadata)),
            wall_clock=self.wall_clock,
            dated=self.dated,
            ledgers=MappingProxyType(dict(self.ledgers)),
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
        """The recording's wall-clock anchors (:mod:`fusion.wallclock`); ``None`` if it has none.

        ``log.wall_clock.to_utc(frame.t)`` dates a frame (``t`` and ``t_arrival``
        are on the reference clock; ``t_sensor`` is on the sensor's own).
        """
        if self._wall is None:  # built once: the chunk list never changes once read
            anchors = [WallAnchor(*c.wall) for c in self.chunks if c.wall is not None]
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


_HEAD_READ = 1024
"""Bytes read at a record's start in one go: its prelude and, most often, its meta."""

RESYNC_WORK = 8
"""Bytes of meta all resynchronising may CRC, as a multiple of the file size."""

RESYNC_SMALL_META = 4096
"""Once that is spent, a candidate is tried only if its meta is at most this long."""

_KINDS = frozenset(int(k) for k in RecordKind)
_MAP_FIRST_BYTES = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])

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

    ``limits`` (:class:`~recordings.limits.ReadLimits`, defaults without it)
    bound what the file may cost, and each ``max_*`` given changes that one
    limit: ``max_chunk_bytes`` caps the memory a single chunk may claim,
    ``max_meta_bytes`` a record's meta, ``max_decoded_bytes`` the memory
    decoded objects of the chunks in flight may take (readahead included) and
    ``max_chunk_frames`` the frames one chunk may declare; a chunk over any is
    reported as :class:`~recordings.errors.LimitExceeded` before anything is built
    (see :mod:`recordings.budget`).
    """
    chosen = (limits or DEFAULT_LIMITS).replace(
        max_chunk_bytes=max_chunk_bytes,
        max_meta_bytes=max_meta_bytes,
        max_decoded_bytes=max_decoded_bytes,
        max_chunk_frames=max_chunk_frames,
    )
    return Recording(path, use_index=use_index, strict=strict, limits=chosen, readahead=readahead)
