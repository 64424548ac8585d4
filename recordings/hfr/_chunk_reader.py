"""Reading one chunk, sans-I/O: a record's bytes in, a decoded chunk or a precise reason out.

Theory of operation. Both readers are shells around this module (DESIGN.md
principle 13): :class:`~recordings.hfr._reader.Recording` does its I/O with
``pread`` and :class:`~recordings.hfr._stream.RecordingStream` with a pipe's
``read``; what to read next and what the bytes mean is decided here, and every
limit and budget is asked of :mod:`recordings.hfr._limits`, the one other module
this one calls. Reading one chunk thus walks *reader -> chunk reader (-> limits)*
and back (``tests/recordings/test_read_walk.py`` traces it):

* :func:`parse_record_head`: any record's prelude and meta (``recordings/hfr/FORMAT.md``).
  Nothing in a prelude is trusted until the meta CRC, which covers the prelude's
  first 16 bytes and the meta bytes, checks out. Like h11's ``Connection`` and
  mcap's record parser, it is given the bytes at a record's start and answers
  :class:`NeedMore` (read at least ``NeedMore.size`` bytes from the record's start
  and call again; if the input ends first, the record is truncated), a
  :class:`~recordings.errors.RecordingError` saying why no record starts here, or
  a :class:`RecordHead`: kind, decoded meta and the verified lengths. The scan and
  the footer index (:mod:`recordings.hfr._locate`) and the streaming reader use it
  for every record, chunks or not; :mod:`recordings.hfr._parser` turns a head's
  meta into what the readers keep.
* :class:`HeadRead`: the head of the record at an offset of a file of known size,
  as steps: the shell reads :attr:`HeadRead.want` and feeds what it got.
* :class:`ChunkRead`: one chunk whose meta is known (from the index or a scan): its
  head checked against that meta, its declared sizes admitted by the limits before
  the payload is read, the payload CRC-checked and decompressed within the size
  its meta declares (:func:`decompress_chunk`).
* :func:`decode_chunk`: the raw buffer to a :class:`DecodedChunk`, its decoded cost
  charged against the budget before any object is built. The msgpack records and
  the column groups are decoded by two helpers only this module calls:
  :mod:`recordings.hfr._chunk_records` (loaded with the first decode, so commands
  that only read metas and stamps never import msgspec) and
  :mod:`recordings.hfr._chunk_columns`.

Every failure is a :class:`~recordings.errors.CorruptChunk`,
:class:`~recordings.errors.TruncatedRecording` or (raised by the limits only)
:class:`~recordings.errors.LimitExceeded` naming the chunk or record and its byte
offset.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np
import zstandard

from fusion import Frame
from recordings.errors import CorruptChunk, LimitExceeded, RecordingError, TruncatedRecording
from recordings.hfr._format import BLOB_ALIGN, CHUNK_KINDS, PRELUDE, SYNC, Compression, crc32
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._limits import DEFAULT_LIMITS, ReadLimits

if TYPE_CHECKING:
    from recordings.hfr._chunk_columns import ColumnChunk

__all__ = [
    "ChunkRead",
    "DecodedChunk",
    "HeadRead",
    "NeedMore",
    "RecordHead",
    "decode_chunk",
    "decode_frames",
    "decompress_chunk",
    "may_decode_ahead",
    "parse_record_head",
    "unpack_payload",
    "unread_refusal",
]

HEAD_READ = 1024
"""Bytes read at a record's start in one go: its prelude and, most often, its meta."""

_GC_PAUSE_BYTES = 64 * 1024
"""A meta this large is decoded with the garbage collector paused."""


@dataclass(frozen=True, slots=True)
class NeedMore:
    """The parser needs at least ``size`` bytes, counted from the record's start."""

    size: int


@dataclass(frozen=True, slots=True)
class RecordHead:
    """A record's prelude and meta, verified by the meta CRC."""

    offset: int
    """Byte offset of the record's first prelude byte."""
    kind: int
    """The record kind byte (:class:`~recordings.hfr._format.RecordKind`, or unknown)."""
    meta: Any
    """The decoded msgpack meta."""
    meta_len: int
    payload_len: int
    payload_crc: int

    @property
    def payload_offset(self) -> int:
        return self.offset + PRELUDE.size + self.meta_len

    @property
    def end(self) -> int:
        """Offset just after the record: where the next one starts."""
        return self.payload_offset + self.payload_len


def parse_record_head(
    data: bytes | bytearray | memoryview,
    *,
    offset: int,
    where: str,
    limits: ReadLimits = DEFAULT_LIMITS,
    available: int | None = None,
) -> RecordHead | NeedMore | RecordingError:
    """Parse the record whose bytes start ``data`` (see the module docstring).

    ``offset`` is where ``data`` starts in the input and ``where`` names the
    input in errors; a meta over ``limits.max_meta_bytes`` is refused
    unread. ``available``, when known (a file), is the number of
    bytes from ``offset`` to the end of the input; it lets the parser report a
    record whose payload runs past the end as truncated.
    """
    view = memoryview(data)
    if len(view) < PRELUDE.size:
        return NeedMore(PRELUDE.size)
    sync, kind, meta_len, payload_len, meta_crc, payload_crc = PRELUDE.unpack_from(view)
    if sync != SYNC:
        return CorruptChunk("no record starts here (bad sync bytes)", path=where, offset=offset)
    refusal = limits.meta_refusal(meta_len, where=where, offset=offset)
    if refusal is not None:
        # Lengths are unverified until the CRC is; a flipped bit lands here too.
        if available is not None and PRELUDE.size + meta_len > available:
            return CorruptChunk(
                f"record meta length {meta_len} runs past the end of the file",
                path=where,
                offset=offset,
            )
        return refusal
    if len(view) < PRELUDE.size + meta_len:
        return NeedMore(PRELUDE.size + meta_len)
    meta_bytes = view[PRELUDE.size : PRELUDE.size + meta_len]
    if crc32(view[:16], meta_bytes) != meta_crc:
        return CorruptChunk("record header fails its CRC", path=where, offset=offset)
    try:
        if meta_len > _GC_PAUSE_BYTES and gc.isenabled():
            # A large meta (the footer index) builds many containers at once: in a
            # process holding many objects, the collections they trigger cost more
            # than the decode (measured: 110 ms against 2 ms for 1,000 chunks).
            gc.disable()
            try:
                meta = msgpack.unpackb(meta_bytes, raw=False, strict_map_key=False)
            finally:
                gc.enable()
        else:
            meta = msgpack.unpackb(meta_bytes, raw=False, strict_map_key=False)
    except Exception as err:  # msgpack raises many types on garbage
        return CorruptChunk(f"record meta does not decode ({err})", path=where, offset=offset)
    head = RecordHead(offset, kind, meta, meta_len, payload_len, payload_crc)
    if available is not None and head.end - offset > available:
        what = "a record"
        if kind in CHUNK_KINDS:
            with contextlib.suppress(Exception):  # the generic words do then
                what = ChunkMeta.from_msgpack(meta, offset=offset).describe()
        missing = head.end - offset - available
        return TruncatedRecording(
            f"the file ends inside {what}: {missing} of its bytes are missing",
            path=where,
            offset=offset,
        )
    return head


class HeadRead:
    """The verified head of the record at ``offset`` of a file of ``size`` bytes, as steps.

    While :attr:`want` is ``(offset, length)``, the shell reads up to ``length``
    bytes at ``offset`` and calls :meth:`feed` with them; once :attr:`want` is
    ``None``, :attr:`result` is the head or why there is none. The first read
    (:data:`HEAD_READ` bytes) usually holds the prelude and the meta.
    """

    __slots__ = ("_need", "limits", "offset", "result", "size", "want", "where")

    def __init__(self, offset: int, size: int, *, limits: ReadLimits, where: str) -> None:
        self.offset = offset
        self.size = size
        self.limits = limits
        self.where = where
        self._need = PRELUDE.size
        self.result: RecordHead | RecordingError | None = None
        self.want: tuple[int, int] | None = None
        if 0 <= offset < size:
            self.want = (offset, min(size - offset, HEAD_READ))
        else:
            self.result = CorruptChunk(
                f"offset {offset} is outside the file", path=where, offset=offset
            )

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Take the bytes read for :attr:`want` (fewer only where the file ends)."""
        available = self.size - self.offset
        if len(data) < self._need:
            what = "a record prelude" if self._need == PRELUDE.size else "a record"
            self.result = TruncatedRecording(
                f"the file ends inside {what} ({available} bytes lost)",
                path=self.where,
                offset=self.offset,
            )
            self.want = None
            return
        head = parse_record_head(
            data, offset=self.offset, where=self.where, limits=self.limits, available=available
        )
        if isinstance(head, NeedMore):
            self._need = head.size
            self.want = (self.offset, head.size)
        else:
            self.result = head
            self.want = None


class ChunkRead:
    """Reading one chunk whose meta is known, as steps: its head, then its payload.

    While :attr:`want` is ``(offset, length)`` the shell reads those bytes and
    calls :meth:`feed`; once it is ``None``, :attr:`raw` is the chunk's raw buffer
    (CRC-checked, decompressed, not decoded). Before the payload is wanted, the
    record's kind and stored size are checked against ``chunk`` and its sizes are
    admitted by the limits (:meth:`~recordings.hfr._limits.ReadLimits.admit_chunk`).
    A damaged chunk raises :class:`~recordings.errors.CorruptChunk`, one over a
    limit :class:`~recordings.errors.LimitExceeded`, from the constructor or
    :meth:`feed`.
    """

    __slots__ = ("_crc", "_head", "chunk", "limits", "raw", "want", "where")

    def __init__(self, chunk: ChunkMeta, size: int, *, limits: ReadLimits, where: str) -> None:
        self.chunk = chunk
        self.limits = limits
        self.where = where
        self.raw: np.ndarray[Any, np.dtype[np.uint8]] | None = None
        self._crc = -1
        self._head: HeadRead | None = HeadRead(chunk.offset, size, limits=limits, where=where)
        self.want = self._head.want
        self._after_head()

    def feed(self, data: bytes | memoryview) -> None:
        """Take the bytes read for :attr:`want`."""
        if self._head is not None:
            self._head.feed(data)
            self._after_head()
            return
        self.raw = unpack_payload(data, self._crc, self.chunk, limits=self.limits, where=self.where)
        self.want = None

    def _after_head(self) -> None:
        head = self._head
        assert head is not None
        rec = head.result
        if rec is None:
            self.want = head.want
            return
        chunk = self.chunk
        if isinstance(rec, RecordingError):
            raise CorruptChunk(
                f"{chunk.describe()} is damaged: {rec}", path=self.where, offset=chunk.offset
            )
        if rec.kind != chunk.kind or rec.payload_len != chunk.stored_size:
            raise CorruptChunk(
                f"{chunk.describe()} is damaged: its record does not match the index",
                path=self.where,
                offset=chunk.offset,
            )
        self.limits.admit_chunk(chunk, rec.payload_len, where=self.where)
        self._head = None
        self._crc = rec.payload_crc
        self.want = (rec.payload_offset, rec.payload_len)


def unread_refusal(
    chunk: ChunkMeta, stored: int, *, limits: ReadLimits, where: str
) -> LimitExceeded | None:
    """Why the streaming reader skips ``chunk`` (``stored`` payload bytes) unread: its
    declared sizes over the limits
    (:meth:`~recordings.hfr._limits.ReadLimits.stream_refusal`); ``None`` to read it."""
    return limits.stream_refusal(chunk, stored, where=where)


def unpack_payload(
    payload: bytes | memoryview, crc: int, chunk: ChunkMeta, *, limits: ReadLimits, where: str
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """A chunk's stored bytes CRC-checked against ``crc`` (its prelude's) and
    decompressed (:func:`decompress_chunk`); raises
    :class:`~recordings.errors.CorruptChunk` when they changed."""
    if crc32(payload) != crc:
        raise CorruptChunk(
            f"{chunk.describe()} fails its CRC: its stored bytes changed",
            path=where,
            offset=chunk.offset,
        )
    return decompress_chunk(payload, chunk, limits=limits, where=where)


def decompress_chunk(
    payload: bytes | memoryview,
    meta: ChunkMeta,
    *,
    limits: ReadLimits = DEFAULT_LIMITS,
    where: str = "",
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """The raw buffer of a chunk: read-only, 64-byte aligned, exactly ``meta.raw_size``.

    Never allocates more than the declared size: raises :class:`LimitExceeded`
    if that is over ``limits.max_chunk_bytes``, and :class:`CorruptChunk` if the
    payload does not decompress to exactly that many bytes.
    """
    limits.check_chunk_size(meta, where=where)
    n = meta.raw_size
    buf = np.empty(n + BLOB_ALIGN, np.uint8)
    start = -buf.ctypes.data % BLOB_ALIGN
    raw = buf[start : start + n]
    if meta.compression == Compression.NONE:
        if len(payload) != n:
            raise _corrupt(meta, where, f"it stores {len(payload)} bytes, its meta says {n}")
        raw[:] = np.frombuffer(payload, np.uint8)
    else:
        try:
            declared = zstandard.frame_content_size(payload)
        except zstandard.ZstdError as err:
            raise _corrupt(meta, where, f"its zstd frame header is invalid ({err})") from err
        if declared not in (-1, n):
            raise _corrupt(meta, where, f"its zstd frame claims {declared} bytes, its meta {n}")
        got = 0
        try:
            with _decompressor().stream_reader(payload) as reader:
                out = raw.data
                while got < n:
                    k = reader.readinto(out[got:])
                    if k == 0:
                        break
                    got += k
                extra = len(reader.read(1)) if got == n else 0
        except zstandard.ZstdError as err:
            raise _corrupt(meta, where, f"it does not decompress ({err})") from err
        if got != n or extra:
            raise _corrupt(
                meta,
                where,
                f"it decompresses to {'more than ' if extra else ''}{got} bytes, not {n}",
            )
    raw.flags.writeable = False
    return raw


_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor (making one per chunk costs more than a 10 KB chunk)."""
    dctx: zstandard.ZstdDecompressor | None = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    return dctx


class DecodedChunk:
    """A decompressed, validated chunk: its frames on demand, in recorded order.

    Everything is checked when it is built (:func:`decode_chunk`), so iterating
    never raises; frames of a columnar chunk are built as the iterator reaches
    them, and a filter selects rows before any frame exists.
    """

    __slots__ = ("_columns", "_frames", "meta")

    def __init__(
        self, meta: ChunkMeta, frames: list[Frame], columns: ColumnChunk | None = None
    ) -> None:
        self.meta = meta
        self._frames = frames
        self._columns = columns

    @property
    def columns(self) -> ColumnChunk | None:
        """The column groups and their order (a ``COLUMNS`` chunk), or None."""
        return self._columns

    @property
    def records(self) -> list[Frame]:
        """Frames decoded from msgpack records: all of a ``CHUNK``, the rest of a ``COLUMNS``."""
        return self._frames

    def frames(
        self,
        wanted: frozenset[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Iterator[Frame]:
        """Frames of ``wanted`` sensors (all if None) with ``start <= t < end``."""
        if self._columns is not None:
            return self._columns.frames(wanted, start, end)
        if wanted is None and start is None and end is None:
            return iter(self._frames)
        lo = -(1 << 63) if start is None else start
        hi = 1 << 63 if end is None else end
        return (
            f for f in self._frames if lo <= f.t < hi and (wanted is None or f.sensor in wanted)
        )


def may_decode_ahead(
    in_flight: Sequence[ChunkMeta], nxt: ChunkMeta, *, ahead: int, limits: ReadLimits
) -> bool:
    """Whether the reader may start decoding ``nxt`` while ``in_flight`` chunks are
    decoding or held (the one being read included): the first always; then at most
    ``ahead + 1`` at once, and only while they fit the decode budget together, so
    readahead never multiplies it."""
    if not in_flight:
        return True
    return len(in_flight) <= ahead and limits.fit_together([*in_flight, nxt])


def decode_chunk(
    raw: np.ndarray[Any, np.dtype[np.uint8]],
    meta: ChunkMeta,
    *,
    where: str = "",
    limits: ReadLimits = DEFAULT_LIMITS,
) -> DecodedChunk:
    """Decode and validate a raw chunk of either kind; arrays are read-only views of ``raw``.

    The chunk's decoded cost is charged against ``limits.max_decoded_bytes`` first
    (:meth:`~recordings.hfr._limits.ReadLimits.charge`): a chunk over it raises
    :class:`LimitExceeded` before any object is built. Every record's fields are
    type- and range-checked (``t`` inside the meta's time range, ``seq``,
    ``t_sensor`` and ``t_arrival`` int64, ``meta`` a map or nil); raises
    :class:`~recordings.errors.CorruptChunk` naming the first that fails.
    """
    limits.charge(raw.data[: meta.records_size], meta, where=where)
    frames, columns = (_records or _load_records())(raw, meta, where)
    return DecodedChunk(meta, frames, columns)


_records: Callable[[Any, ChunkMeta, str], tuple[list[Frame], ColumnChunk | None]] | None = None
""":func:`recordings.hfr._chunk_records.decode_records`, once the first chunk is decoded."""


def _load_records() -> Callable[[Any, ChunkMeta, str], tuple[list[Frame], ColumnChunk | None]]:
    """Import the records helper (msgspec with it) when the first chunk is decoded, so
    commands that only read metas and stamps never load it; an import statement per
    chunk would cost a microsecond."""
    global _records
    from recordings.hfr._chunk_records import decode_records

    _records = decode_records
    return decode_records


def decode_frames(
    raw: np.ndarray[Any, np.dtype[np.uint8]], meta: ChunkMeta, *, where: str = ""
) -> list[Frame]:
    """Every frame of a chunk, in recorded order; arrays are read-only views of ``raw``."""
    return list(decode_chunk(raw, meta, where=where).frames())


def _corrupt(meta: ChunkMeta, where: str, reason: str) -> CorruptChunk:
    return CorruptChunk(
        f"{meta.describe()} is damaged: {reason}", path=where or None, offset=meta.offset
    )
