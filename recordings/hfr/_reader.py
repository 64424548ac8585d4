"""Reading ``.hfr`` files: the shell of the chunk reader, seeking, damage reports.

Theory of operation. :func:`open_recording` reads the preamble and header,
then finds the chunks one of two ways (:mod:`recordings.hfr._locate` holds both):

* **indexed**: the trailer points at the footer index, which lists every
  chunk's meta and offset; nothing else is read at open;
* **scan** (no trailer: the writer crashed, or ``use_index=False``): walk the
  records from the header on, trusting a prelude's lengths only once its
  meta CRC checks out. A record that fails its check is reported and the
  scan resynchronises on the next valid prelude; a record that runs past the
  end of the file ends the scan (the writer died while writing it).

Chunks are read lazily. :class:`Recording` is the shell around the sans-I/O
chunk reader (:mod:`recordings.hfr._chunk_reader`, DESIGN.md principle 13): it
reads what :class:`~recordings.hfr._chunk_reader.ChunkRead` wants with ``pread``
into a per-thread scratch buffer, and decodes ahead in threads within the decode
budget (:class:`_Readahead`); what to check (the record against the index, the
limits, the CRC, the decompressed size, every record) is the chunk reader's, and
every limit is :mod:`recordings.hfr._limits`'. A chunk that fails any step is
reported in :attr:`Recording.damage` (:mod:`recordings.hfr._damage`: which chunk,
which byte offset, which time range) and skipped, and iteration goes on with the
next one. ``strict=True`` raises instead.

Seeking bisects the chunk list (:mod:`recordings.hfr._seek`); what a summary
holds is in :mod:`recordings.hfr._summary`, the footer's optional parts in
:mod:`recordings.hfr._footer`, whole-file checks in :mod:`recordings.hfr._verify`.
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

import numpy as np

from fusion import Frame, SensorSpec, WallAnchor, WallClock
from recordings.errors import RecordingError
from recordings.hfr._chunk_reader import (
    ChunkRead,
    DecodedChunk,
    RecordHead,
    decode_chunk,
    may_decode_ahead,
)
from recordings.hfr._damage import DamageLog
from recordings.hfr._details import FrameDetails
from recordings.hfr._footer import FooterParts
from recordings.hfr._format import PREAMBLE
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import SensorLedger
from recordings.hfr._limits import DEFAULT_LIMITS, ReadLimits
from recordings.hfr._locate import ChunkLocator
from recordings.hfr._seek import SeekKeys
from recordings.hfr._stamp_index import StampIndex
from recordings.hfr._summary import RecordingSummary, dated_sensors, summarize, wall_clock_of


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
        self.strict = strict
        self.metadata: dict[str, Any] = {}
        self._ahead = _Readahead(str(self.path))
        self._damage = DamageLog()
        self._resync_work = 0
        self._resync_spent = False
        self._specs: dict[str, SensorSpec] = {}
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
        self._footer = FooterParts()
        self._details_at = None
        self._keys: SeekKeys | None = None
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
            self._keys = SeekKeys(self._chunks)
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
        return self._damage.errors

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

    # -- the footer's optional parts (:mod:`recordings.hfr._footer`) ----------

    def stamp_index(self) -> StampIndex | None:
        """The footer stamp index (format 1.5; :mod:`recordings.hfr._stamp_index`), read
        without the chunk list; ``None`` when the file has none or it does not check
        out (:attr:`stamp_index_problem` says why)."""
        fd = self._fd if self._use_index else -1
        return self._footer.stamp_index(fd, self.size, self.limits, self.read_at)

    def frame_details(self) -> FrameDetails | None:
        """The frame details (format 1.6; :mod:`recordings.hfr._details`): what ``info``
        reports of every frame beyond its stamps, read without any chunk; ``None`` when
        the file has none or they do not check out (:attr:`frame_details_problem` says
        why)."""
        self._load()
        fd = self._fd if self._use_index else -2
        at, n = self._details_at, len(self._chunks)
        return self._footer.frame_details(fd, at, self.version, n, self.limits)

    def sensor_summaries(self) -> dict[str, dict[str, Any] | str] | None:
        """Each sensor's summary written at close (format 1.7, INDEX key ``summaries``;
        :mod:`recordings.hfr._sensor_summary`): a map, or the writer's reason it has none;
        ``None`` when the file has none or they are malformed. Not checked against the
        frames (``hyperframes check`` does that)."""
        self._load()
        return FooterParts.summaries(self._summaries)

    @property
    def frame_details_problem(self) -> str | None:
        """Why :meth:`frame_details` gave ``None`` (after it was called)."""
        found = self._footer.details
        return found if isinstance(found, str) else None

    def drop_stamp_index(
        self, why: str = "a sensor's stamp index columns do not check out"
    ) -> None:
        """Stop using the stamp index (:meth:`stamp_index` gives ``None`` from now on)."""
        self._footer.stamps = why

    @property
    def stamp_index_problem(self) -> str | None:
        """Why :meth:`stamp_index` gave ``None`` (after it was called)."""
        found = self._footer.stamps
        return found if isinstance(found, str) else None

    # -- reading ----------------------------------------------------------

    def read_at(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer where the file ends); after
        :meth:`close`, the file is opened again for the read, as :attr:`chunks` does."""
        if self._fd >= 0:
            return os.pread(self._fd, length, offset)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

    def record_head(self, offset: int) -> RecordHead | RecordingError:
        """The verified head of the record at ``offset``, or why there is none."""
        return self._read_record_head(offset)

    @property
    def index_offset(self) -> int | None:
        """Where the footer index starts; ``None`` when the chunks were not read from it."""
        self._load()
        return None if self._details_at is None else self._details_at[0]

    def read_chunk(self, chunk: ChunkMeta) -> list[Frame]:
        """Every frame of ``chunk`` (verified); raises :class:`RecordingError` if damaged."""
        return list(self.decode_chunk(chunk).frames())

    def decode_chunk(self, chunk: ChunkMeta) -> DecodedChunk:
        """``chunk`` read, verified, decompressed and decoded; raises if damaged."""
        return decode_chunk(self.raw_chunk(chunk), chunk, where=str(self.path), limits=self.limits)

    def raw_chunk(self, chunk: ChunkMeta) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """``chunk`` read, CRC-checked and decompressed, not decoded; raises if damaged.

        The shell of :class:`~recordings.hfr._chunk_reader.ChunkRead`, which decides
        what to read and checks it: this reads what it wants into the thread's
        scratch buffer."""
        read = ChunkRead(chunk, self.size, limits=self.limits, where=str(self.path))
        while read.want is not None:
            offset, length = read.want
            read.feed(_read_scratch(self._fd, length, offset))
        assert read.raw is not None
        return read.raw

    def select(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[ChunkMeta]:
        """Chunks that may hold frames of ``sensors`` with ``start <= t < end``."""
        chunks = self.chunks  # loads the chunk list and the bisection keys
        assert self._keys is not None
        lo, hi = self._keys.span(len(chunks), start, end)
        wanted = None if sensors is None else set(sensors)
        out = []
        for c in chunks[lo:hi]:
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
        chunks = self.select(wanted, start, end)
        ahead = self._ahead.run(chunks, self._try_decode, self.readahead, self.limits)
        for chunk, decoded in ahead:
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
        per chunk (:mod:`recordings.hfr._verify` holds the checks, and returns
        what it found; they are reported here, in :attr:`damage`).
        """
        from recordings.hfr._verify import verify

        self._load()
        for err in verify(self, decode=decode, progress=progress):
            self._report(err)
        return list(self.damage)

    # -- what the chunk metas say (:mod:`recordings.hfr._summary`) -------------

    def summary(self) -> RecordingSummary:
        """Sensors, counts, time range, sizes: from chunk metas, nothing decompressed."""
        return summarize(
            self.chunks,
            self.specs,
            self.limits,
            path=self.path,
            version=self.version,
            file_size=self.size,
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
        if self._dated is None:  # the chunk list never changes once read
            self._dated = dated_sensors(self.chunks)
        return self._dated

    @property
    def wall_clock(self) -> WallClock | None:
        """The recording's wall-clock anchors (:mod:`fusion._wallclock`); ``None`` if it has none.

        ``log.wall_clock.to_utc(frame.t)`` dates a frame (``t`` and ``t_arrival``
        are on the reference clock; ``t_sensor`` is on the sensor's own).
        """
        if self._wall is None:  # built once: the chunk list never changes once read
            self._wall = (wall_clock_of(self.chunks, self._header_wall),)
        return self._wall[0]

    # -- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """Close the file; frames already returned stay valid (they own their chunk)."""
        self._ahead.close()  # no pread after close
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


class _Readahead:
    """Chunks decoded in order, up to ``ahead`` of them in a thread pool (the shell's
    threads; which chunk may start is
    :func:`~recordings.hfr._chunk_reader.may_decode_ahead`'s decision).

    zstd, the CRC and ``pread`` release the GIL, so the next chunks decompress on
    other cores while the caller works through this one. At most ``ahead + 1``
    decoded chunks exist at once, and they share the decode budget.
    """

    __slots__ = ("_pool", "_where")

    def __init__(self, where: str) -> None:
        self._where = where
        self._pool: ThreadPoolExecutor | None = None

    def run(
        self,
        chunks: list[ChunkMeta],
        decode: Callable[[ChunkMeta], DecodedChunk | RecordingError],
        ahead: int,
        limits: ReadLimits,
    ) -> Generator[tuple[ChunkMeta, DecodedChunk | RecordingError], None, None]:
        """``chunks`` decoded by ``decode`` (or why not), in order."""
        if ahead < 1 or len(chunks) < 2:
            for chunk in chunks:
                yield chunk, decode(chunk)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(ahead, thread_name_prefix="hfr-read")
        pool = self._pool
        todo = collections.deque(chunks)
        pending: collections.deque[tuple[ChunkMeta, Future[DecodedChunk | RecordingError]]]
        pending = collections.deque()
        try:
            while todo or pending:
                flight = [c for c, _ in pending]
                while todo and may_decode_ahead(flight, todo[0], ahead=ahead, limits=limits):
                    c = todo.popleft()
                    pending.append((c, pool.submit(decode, c)))
                    flight.append(c)
                chunk, future = pending.popleft()
                try:
                    decoded = future.result()
                except CancelledError:
                    raise RecordingError(
                        "the recording was closed while it was being read",
                        path=self._where,
                        offset=chunk.offset,
                    ) from None
                yield chunk, decoded
                del decoded
        finally:
            for _, future in pending:
                future.cancel()

    def close(self) -> None:
        """Stop the threads (waiting for the decodes in flight)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


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
    (see :mod:`recordings.hfr._limits`).
    """
    chosen = (limits or DEFAULT_LIMITS).replace(
        max_chunk_bytes=max_chunk_bytes,
        max_meta_bytes=max_meta_bytes,
        max_decoded_bytes=max_decoded_bytes,
        max_chunk_frames=max_chunk_frames,
    )
    return Recording(path, use_index=use_index, strict=strict, limits=chosen, readahead=readahead)
