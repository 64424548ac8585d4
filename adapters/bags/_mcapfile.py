"""Any MCAP file, whatever its profile: schemas, channels, messages, attachments, metadata.

Why a reader of our own: ``rosbags`` reads the ``ros2`` profile only, and the
``mcap`` package's indexed reader trusts the summary section to repeat every
channel (a chunk whose channels are not repeated raises) and to index every
attachment. The MCAP specification makes all of the summary optional, so a
file is read here the way the specification allows it to be written:

* **Indexed.** The summary section has chunk indexes, statistics and every
  channel and schema the data refers to: the summary is the table of contents
  and messages are read chunk by chunk through the chunk index.
* **Scanned.** Anything less (no summary section at all, a summary without
  Statistics, without chunk indexes while the file holds messages, without
  the channels its chunks use, fewer attachment or metadata indexes than the
  statistics count, or no footer: a file cut short): the data section is
  read record by record once when the file opens, which finds every schema,
  channel, attachment and metadata record, counts the messages per channel
  from the data and notes where each chunk (or unchunked message) lies.
  :attr:`McapFile.how` says which, and why.

:meth:`McapFile.messages` yields messages in log-time order (equal log times
in file order), merging overlapping chunks with a heap as the reference
readers do; one chunk is decompressed at a time. Record lengths are checked
against the file before anything is read or allocated; records longer than
their fields (the specification allows padding) have the rest skipped. A
chunk that does not decompress or fails its CRC raises
:class:`~adapters.bags._mcapchunks.DamagedChunk` when its messages are read;
while scanning, it is listed in :attr:`McapFile.damage` and the scan goes on.
"""

from __future__ import annotations

import heapq
import itertools
import os
import struct
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from adapters.bags._mcapchunks import DamagedChunk, decompress_chunk

MAGIC = b"\x89MCAP0\r\n"
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK = 1, 2, 3, 4, 5, 6
OP_CHUNK_INDEX, OP_ATTACHMENT, OP_ATTACHMENT_INDEX, OP_STATISTICS = 8, 9, 10, 11
OP_METADATA, OP_METADATA_INDEX, OP_DATA_END = 12, 13, 15

_HEAD = struct.Struct("<BQ")
_MSG = struct.Struct("<HIQQ")
_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
_FOOTER_SIZE = 9 + 8 + 8 + 4


class McapFormatError(ValueError):
    """The bytes break the MCAP specification (the message says where and how)."""


@dataclass(frozen=True, slots=True)
class Schema:
    id: int
    name: str
    encoding: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Channel:
    id: int
    schema_id: int
    topic: str
    message_encoding: str
    metadata: dict[str, str]


@dataclass(frozen=True, slots=True)
class Message:
    channel_id: int
    sequence: int
    log_time: int
    publish_time: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Attachment:
    log_time: int
    create_time: int
    name: str
    media_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Metadata:
    name: str
    metadata: dict[str, str]


@dataclass(frozen=True, slots=True)
class Statistics:
    message_count: int
    schema_count: int
    channel_count: int
    attachment_count: int
    metadata_count: int
    chunk_count: int
    message_start_time: int
    message_end_time: int
    channel_message_counts: dict[int, int]


@dataclass(slots=True)
class Segment:
    """Where messages lie: one chunk, or one message outside any chunk."""

    start: int
    end: int
    offset: int
    """File offset of the Chunk (or Message) record."""
    chunk: bool
    counts: dict[int, int] = field(default_factory=dict)
    """Messages per channel id, when known (from the scan or the chunk index's message indexes)."""


class _Body:
    """A cursor over one record's body; every length checked against what is left."""

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: bytes | memoryview, what: str) -> None:
        self.buf, self.pos, self.what = buf, 0, what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise McapFormatError(
                f"{self.what}: a field of {n} bytes runs past the record's end "
                f"({len(self.buf) - self.pos} left)"
            )
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def u16(self) -> int:
        return int(_U16.unpack(self.take(2))[0])

    def u32(self) -> int:
        return int(_U32.unpack(self.take(4))[0])

    def u64(self) -> int:
        return int(_U64.unpack(self.take(8))[0])

    def string(self) -> str:
        raw = self.take(self.u32())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise McapFormatError(f"{self.what}: a string is not UTF-8 ({err})") from err

    def blob32(self) -> bytes:
        return self.take(self.u32())

    def blob64(self) -> bytes:
        return self.take(self.u64())

    def string_map(self) -> dict[str, str]:
        size = self.u32()
        end = self.pos + size
        if end > len(self.buf):
            raise McapFormatError(f"{self.what}: a map of {size} bytes runs past the record's end")
        out: dict[str, str] = {}
        while self.pos < end:
            key = self.string()
            out[key] = self.string()
        if self.pos != end:
            raise McapFormatError(f"{self.what}: a map's entries overrun its length")
        return out

    def u16_u64_map(self) -> dict[int, int]:
        size = self.u32()
        if size % 10:
            raise McapFormatError(f"{self.what}: a map of {size} bytes is not whole entries")
        out: dict[int, int] = {}
        for _ in range(size // 10):
            key = self.u16()
            out[key] = self.u64()
        return out


def _schema(body: _Body) -> Schema:
    return Schema(body.u16(), body.string(), body.string(), body.blob32())


def _channel(body: _Body) -> Channel:
    return Channel(body.u16(), body.u16(), body.string(), body.string(), body.string_map())


def _statistics(body: _Body) -> Statistics:
    count = body.u64()
    s, c, a, m, k = body.u16(), body.u32(), body.u32(), body.u32(), body.u32()
    return Statistics(count, s, c, a, m, k, body.u64(), body.u64(), body.u16_u64_map())


def _attachment(body: _Body) -> Attachment:
    log_time, create_time = body.u64(), body.u64()
    name, media_type = body.string(), body.string()
    return Attachment(log_time, create_time, name, media_type, body.blob64())


def _metadata(body: _Body) -> Metadata:
    return Metadata(body.string(), body.string_map())


def _records(buf: bytes, where: str) -> Iterator[tuple[int, int, memoryview]]:
    """``(opcode, offset, body)`` of each record in ``buf`` (a chunk's records)."""
    view = memoryview(buf)
    pos, end = 0, len(buf)
    while pos < end:
        if pos + 9 > end:
            raise DamagedChunk(f"{where}: a record header is cut short at byte {pos}")
        op, length = _HEAD.unpack_from(buf, pos)
        if length > end - pos - 9:
            raise DamagedChunk(f"{where}: a record of {length} bytes runs past its end")
        yield op, pos, view[pos + 9 : pos + 9 + length]
        pos += 9 + length


class McapFile:
    """An open MCAP file of any profile (see the module docstring).

    Raises :class:`McapFormatError` (a ``ValueError``) when the file does not
    start like MCAP; a summary section that does not parse is ignored and the
    file scanned (:attr:`how` says so).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._f: BinaryIO | None = self.path.open("rb")
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # -- opening ------------------------------------------------------------------------

    def _open(self) -> None:
        f = self._file
        self.size = f.seek(0, os.SEEK_END)
        f.seek(0)
        if f.read(8) != MAGIC:
            raise McapFormatError(f"'{self.path}' does not start with the MCAP magic")
        op, length = self._head(8)
        if op != OP_HEADER:
            raise McapFormatError(f"'{self.path}': the first record is opcode {op}, not a Header")
        body = _Body(self._read(17, length), "Header")
        self.profile, self.library = body.string(), body.string()
        self.data_start = 17 + length
        self.schemas: dict[int, Schema] = {}
        self.channels: dict[int, Channel] = {}
        self.statistics: Statistics | None = None
        """The file's Statistics record, ``None`` when it has none."""
        self.attachments: list[Attachment] = []
        self.metadata: list[Metadata] = []
        self.segments: list[Segment] = []
        self.damage: list[str] = []
        """One line per chunk (or stretch of the file) the scan could not read."""
        self.counts: dict[int, int] = {}
        """Messages per channel id: the Statistics record's, else counted in the data."""
        why = self._read_summary()
        if why is None:
            self.how = "indexed (summary section)"
        else:
            self.how = f"scanned: {why}"
            self._scan()
        if self.statistics is not None and why is None:
            self.counts = dict(self.statistics.channel_message_counts)
        stats = self.statistics if why is None else None
        spans = [(s.start, s.end) for s in self.segments]
        self.start_time: int | None = None
        """First log time, inclusive (``None`` without messages)."""
        self.end_time: int | None = None
        """Last log time, inclusive (``None`` without messages)."""
        if stats is not None and stats.message_count:
            self.start_time, self.end_time = stats.message_start_time, stats.message_end_time
        elif spans and self.message_count:
            self.start_time, self.end_time = min(a for a, _ in spans), max(b for _, b in spans)

    @property
    def _file(self) -> BinaryIO:
        if self._f is None:
            raise ValueError(f"MCAP file '{self.path}' is closed")
        return self._f

    @property
    def message_count(self) -> int:
        """Messages in the file (the Statistics record's, else counted)."""
        return sum(self.counts.values())

    @property
    def scanned(self) -> bool:
        """Whether the data section was scanned (see :attr:`how`)."""
        return self.how.startswith("scanned")

    def _head(self, at: int) -> tuple[int, int]:
        f = self._file
        # A damaged offset outside the file has no header (a seek far past it fails: EINVAL).
        raw = f.read(9) if 0 <= at <= self.size and f.seek(at) == at else b""
        if len(raw) != 9:
            raise McapFormatError(f"'{self.path}': a record header is cut short at byte {at}")
        op, length = _HEAD.unpack(raw)
        if length > self.size - at - 9:
            raise McapFormatError(
                f"'{self.path}': the record at byte {at} (opcode {op}) says {length} bytes, "
                f"past the end of the file"
            )
        return int(op), int(length)

    def _read(self, at: int, n: int) -> bytes:
        if at < 0 or n > self.size - at:
            raise McapFormatError(f"'{self.path}': {n} bytes at byte {at} lie outside the file")
        f = self._file
        f.seek(at)
        data = f.read(n)
        if len(data) != n:
            raise McapFormatError(f"'{self.path}': {n} bytes at byte {at} could not be read")
        return data

    def _footer(self) -> tuple[int, int] | None:
        """``(summary start, data end)`` from the footer, ``None`` when the file has none."""
        at = self.size - len(MAGIC) - _FOOTER_SIZE
        if at < self.data_start or self._read(self.size - 8, 8) != MAGIC:
            return None
        op, length = self._head(at)
        if op != OP_FOOTER or length < 20:
            return None
        summary_start = int(_U64.unpack(self._read(at + 9, 8))[0])
        if summary_start and not self.data_start <= summary_start <= at:
            return None
        return summary_start, summary_start or at

    def _read_summary(self) -> str | None:
        """Read the summary section; why the file must be scanned, or ``None`` if not."""
        footer = self._footer()
        if footer is None:
            self.data_end = self.size
            return "no footer (the file was not closed, or is cut short)"
        summary_start, self.data_end = footer
        if not summary_start:
            return "no summary section"
        chunk_indexes: list[Segment] = []
        attachment_offsets: list[int] = []
        metadata_offsets: list[int] = []
        pos, end = summary_start, self.size - len(MAGIC) - _FOOTER_SIZE
        try:
            while pos < end:
                op, length = self._head(pos)
                body = _Body(self._read(pos + 9, length), f"summary record at byte {pos}")
                if op == OP_SCHEMA:
                    s = _schema(body)
                    self.schemas[s.id] = s
                elif op == OP_CHANNEL:
                    c = _channel(body)
                    self.channels[c.id] = c
                elif op == OP_STATISTICS:
                    self.statistics = _statistics(body)
                elif op == OP_CHUNK_INDEX:
                    start, stop, offset = body.u64(), body.u64(), body.u64()
                    body.u64()  # chunk length
                    ids = body.u16_u64_map()
                    chunk_indexes.append(Segment(start, stop, offset, True, dict.fromkeys(ids, 0)))
                elif op == OP_ATTACHMENT_INDEX:
                    attachment_offsets.append(body.u64())
                elif op == OP_METADATA_INDEX:
                    metadata_offsets.append(body.u64())
                pos += 9 + length
        except McapFormatError as err:
            self.schemas, self.channels, self.statistics = {}, {}, None
            return f"the summary section does not parse ({err})"
        stats = self.statistics
        if stats is None:
            return "the summary section has no Statistics record"
        if stats.message_count and not chunk_indexes:
            return "the summary section has no chunk index"
        used = set(stats.channel_message_counts)
        for seg in chunk_indexes:
            used |= set(seg.counts)
        if stats.message_count and (not self.channels or not used <= set(self.channels)):
            return "the summary section does not repeat every channel"
        if any(c.schema_id and c.schema_id not in self.schemas for c in self.channels.values()):
            return "the summary section does not repeat every schema"
        if stats.attachment_count > len(attachment_offsets):
            return "the summary section does not index every attachment"
        if stats.metadata_count > len(metadata_offsets):
            return "the summary section does not index every metadata record"
        try:
            for at in attachment_offsets:
                self.attachments.append(_attachment(self._record_at(at, OP_ATTACHMENT)))
            for at in metadata_offsets:
                self.metadata.append(_metadata(self._record_at(at, OP_METADATA)))
        except McapFormatError as err:
            self.attachments, self.metadata = [], []
            return f"an attachment or metadata index is wrong ({err})"
        for seg in chunk_indexes:
            seg.counts = {}
        self.segments = chunk_indexes
        return None

    def _record_at(self, at: int, opcode: int) -> _Body:
        op, length = self._head(at)
        if op != opcode:
            raise McapFormatError(f"byte {at} holds opcode {op}, not {opcode}")
        return _Body(self._read(at + 9, length), f"record at byte {at}")

    def _scan(self) -> None:
        """Read the data section record by record (see the module docstring)."""
        self.segments, self.attachments, self.metadata = [], [], []
        counts: dict[int, int] = {}
        pos, end = self.data_start, self.data_end
        while pos < end:
            if end - pos < 9:
                self.damage.append(f"{end - pos} stray bytes at byte {pos} of the data section")
                break
            try:
                op, length = self._head(pos)
            except McapFormatError as err:
                self.damage.append(f"the data section stops at byte {pos}: {err}")
                break
            if op in (OP_FOOTER, OP_DATA_END):
                break
            if op in (OP_SCHEMA, OP_CHANNEL, OP_ATTACHMENT, OP_METADATA, OP_CHUNK, OP_MESSAGE):
                try:
                    self._scan_record(op, pos, length, counts)
                except (McapFormatError, DamagedChunk) as err:
                    self.damage.append(f"the record at byte {pos} (opcode {op}): {err}")
            pos += 9 + length
        self.counts = counts

    def _scan_record(self, op: int, pos: int, length: int, counts: dict[int, int]) -> None:
        if op == OP_MESSAGE:
            if length < _MSG.size:
                raise McapFormatError(f"a Message of {length} bytes")
            cid, _seq, log_time, _pub = _MSG.unpack(self._read(pos + 9, _MSG.size))
            counts[cid] = counts.get(cid, 0) + 1
            self.segments.append(Segment(log_time, log_time, pos, False, {cid: 1}))
            return
        body = _Body(self._read(pos + 9, length), f"record at byte {pos}")
        if op == OP_SCHEMA:
            s = _schema(body)
            self.schemas[s.id] = s
        elif op == OP_CHANNEL:
            c = _channel(body)
            self.channels[c.id] = c
        elif op == OP_ATTACHMENT:
            self.attachments.append(_attachment(body))
        elif op == OP_METADATA:
            self.metadata.append(_metadata(body))
        else:  # a chunk: its schemas, channels and message counts
            seg = Segment(0, 0, pos, True)
            lo, hi = 1 << 64, -1
            for rop, rpos, rbody in _records(self._chunk_bytes(pos, body), f"chunk at {pos}"):
                inner = _Body(rbody, f"record {rpos} of the chunk at byte {pos}")
                if rop == OP_SCHEMA:
                    s = _schema(inner)
                    self.schemas[s.id] = s
                elif rop == OP_CHANNEL:
                    c = _channel(inner)
                    self.channels[c.id] = c
                elif rop == OP_MESSAGE:
                    if len(rbody) < _MSG.size:
                        raise McapFormatError(f"a Message of {len(rbody)} bytes")
                    cid, _seq, log_time, _pub = _MSG.unpack_from(rbody)
                    seg.counts[cid] = seg.counts.get(cid, 0) + 1
                    lo, hi = min(lo, log_time), max(hi, log_time)
            for cid, n in seg.counts.items():
                counts[cid] = counts.get(cid, 0) + n
            if hi >= 0:
                seg.start, seg.end = lo, hi
                self.segments.append(seg)

    def _chunk_bytes(self, pos: int, body: _Body | None = None) -> bytes:
        """The decompressed, checked records of the chunk whose record starts at ``pos``."""
        if body is None:
            body = self._record_at(pos, OP_CHUNK)
        body.u64()
        body.u64()  # message start and end time
        size, crc = body.u64(), body.u32()
        compression = body.string()
        data = body.blob64()
        where = f"chunk at byte {pos}"
        if compression == "" and size != len(data):
            raise DamagedChunk(f"{where}: {len(data)} bytes, its header says {size}")
        if size > 64 * len(data) + (1 << 20):
            raise DamagedChunk(f"{where} says it decompresses to {size} bytes, past any ratio")
        return decompress_chunk(compression, data, size, crc, where)

    # -- reading ------------------------------------------------------------------------

    def segment_messages(
        self, seg: Segment, channels: Collection[int] | None = None
    ) -> list[Message]:
        """The messages of one segment, in file order (``channels``: ids wanted, all if None)."""
        if not seg.chunk:
            body = self._record_at(seg.offset, OP_MESSAGE)
            if len(body.buf) < _MSG.size:
                raise McapFormatError(f"the Message at byte {seg.offset} has {len(body.buf)} bytes")
            return [m for m in [_message(body.buf)] if channels is None or m.channel_id in channels]
        out = []
        where = f"chunk at byte {seg.offset}"
        for op, _pos, rbody in _records(self._chunk_bytes(seg.offset), where):
            if op == OP_MESSAGE:
                if len(rbody) < _MSG.size:
                    raise DamagedChunk(f"{where}: a Message of {len(rbody)} bytes")
                m = _message(rbody)
                if channels is None or m.channel_id in channels:
                    out.append(m)
            elif op == OP_CHANNEL and not self.scanned:
                c = _channel(_Body(rbody, where))
                self.channels.setdefault(c.id, c)
        return out

    def messages(
        self,
        channels: Collection[int] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> Iterator[Message]:
        """Messages of ``channels`` (ids; all when None) with ``start <= log_time < stop``,
        in log-time order, equal log times in file order."""
        lo = -1 if start is None else start
        hi = 1 << 64 if stop is None else stop
        wanted = None if channels is None else set(channels)
        segs = [
            s
            for s in self.segments
            if s.end >= lo
            and s.start < hi
            and (wanted is None or not s.counts or any(c in wanted for c in s.counts))
        ]
        segs.sort(key=lambda s: (s.start, s.offset))
        if all(a.end < b.start for a, b in itertools.pairwise(segs)):
            for seg in segs:  # the common case: no two segments overlap in time
                got = self.segment_messages(seg, wanted)
                got.sort(key=lambda m: m.log_time)
                yield from (m for m in got if lo <= m.log_time < hi)
            return
        heap: list[tuple[int, int, int, Segment | Message]] = [
            (s.start, s.offset, -1, s) for s in segs
        ]
        heapq.heapify(heap)
        while heap:
            _t, offset, _i, item = heapq.heappop(heap)
            if isinstance(item, Message):
                yield item
                continue
            for i, m in enumerate(self.segment_messages(item, wanted)):
                if lo <= m.log_time < hi:
                    heapq.heappush(heap, (m.log_time, offset, i, m))

    def close(self) -> None:
        """Close the file."""
        f, self._f = self._f, None
        if f is not None:
            f.close()

    def __enter__(self) -> McapFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _message(body: bytes | memoryview) -> Message:
    cid, seq, log_time, publish_time = _MSG.unpack_from(body)
    return Message(cid, seq, log_time, publish_time, bytes(body[_MSG.size :]))


def mcap_profile(path: str | os.PathLike[str]) -> str | None:
    """The profile an MCAP file's Header names; ``None`` when ``path`` is no MCAP file
    (or its Header does not parse)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8 + 9 + 4)
            if len(head) < 21 or head[:8] != MAGIC or head[8] != OP_HEADER:
                return None
            (size,) = _U32.unpack_from(head, 17)
            if size > 1 << 16:
                return None
            raw = f.read(size)
            return raw.decode("utf-8") if len(raw) == size else None
    except (OSError, UnicodeDecodeError):
        return None
