"""Finding a recording's records: the header, the footer index, or a scan.

:class:`ChunkLocator` is the part of :class:`~recordings.hfr._reader.Recording`
that reads record heads with ``pread`` and turns them into the chunk list,
reporting damage as it goes:

* **indexed**: the trailer points at the footer index, which lists every
  chunk's meta and offset;
* **scan** (no trailer, or ``use_index=False``): walk the records from the
  header on, trusting a prelude's lengths only once its meta CRC checks out;
  a record that fails its check is reported and the scan resynchronises on
  the next valid prelude, in time linear in the file size (:data:`RESYNC_WORK`).

Every problem goes through :meth:`ChunkLocator._report` into the recording's
:class:`~recordings.hfr._damage.DamageLog`, which keeps one entry per byte
offset, so a chunk read twice is reported once.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fusion import SensorSpec, WallAnchor
from recordings.errors import CorruptChunk, RecordingError, TruncatedRecording
from recordings.hfr._chunk_reader import HeadRead, RecordHead
from recordings.hfr._damage import DamageLog
from recordings.hfr._format import (
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
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._ledgers import SensorLedger, parse_ledgers
from recordings.hfr._limits import ReadLimits
from recordings.hfr._parser import header_contents, parse_chunk_meta, parse_index, parse_specs

RESYNC_WORK = 8
"""Bytes of meta all resynchronising may CRC, as a multiple of the file size."""

RESYNC_SMALL_META = 4096
"""Once that is spent, a candidate is tried only if its meta is at most this long."""

_KINDS = frozenset(int(k) for k in RecordKind)
_MAP_FIRST_BYTES = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])


class ChunkLocator:
    """Record heads, the header, the footer index and the scan of one open file.

    :class:`~recordings.hfr._reader.Recording` sets these attributes in its
    ``__init__``; this class only reads the file through them.
    """

    path: Path
    limits: ReadLimits
    size: int
    version: tuple[int, int]
    metadata: dict[str, Any]
    _fd: int
    _damage: DamageLog
    _resync_work: int
    _resync_spent: bool
    _specs: dict[str, SensorSpec]
    _ledgers: dict[str, SensorLedger]
    _header_wall: WallAnchor | None
    _chunks: Sequence[ChunkMeta]
    _body: int
    _details_at: tuple[int, Any] | None
    _chunk_table_problem: str | None = "the footer index is not used"
    _summaries: Any = None
    """The INDEX's ``summaries`` (1.7) as decoded, unchecked."""
    """``(index offset, the INDEX's "details" pointer)`` of an indexed file (1.6)."""

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
        if self._read_table(index_offset):
            return True
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
        self._details_at = (index_offset, meta.get("details"))
        self._summaries = meta.get("summaries")
        self._take_specs(meta.get("sensors"))
        if "ledger" in meta:
            try:
                self._ledgers = parse_ledgers(meta["ledger"])
            except ValueError as err:
                self._report(CorruptChunk(f"{err}; ignoring it", **self._at(index_offset)))
        for c in chunks:
            self._take_specs(c.new_specs)
        return True

    def _read_table(self, index_offset: int) -> bool:
        """The chunk list from the chunk table (1.7, :mod:`recordings.hfr._chunk_table`): the
        INDEX's meta CRC-checked and its keys read, its chunk entries skipped, not
        decoded. ``False`` (the INDEX is then parsed) when the file has no table or it
        does not check out (``Recording.chunk_table_problem`` says why)."""
        from recordings.hfr._chunk_table import index_keys, read_chunk_table

        _, _, meta_len, _, _, _ = PRELUDE.unpack(os.pread(self._fd, PRELUDE.size, index_offset))
        if not self.limits.meta_fits(meta_len):
            self._chunk_table_problem = "the footer index is over the reader's meta limit"
            return False
        data = os.pread(self._fd, PRELUDE.size + meta_len, index_offset)
        got = index_keys(data, index_offset, self.size)
        if isinstance(got, str):
            self._chunk_table_problem = got
            return False
        keys, count = got
        if "table" not in keys:
            self._chunk_table_problem = (
                f"the file has no chunk table (format {self.version[0]}.{self.version[1]}; "
                "it came in 1.7)"
            )
            return False
        table = read_chunk_table(self._fd, keys["table"], index_offset, count, self.limits)
        if isinstance(table, str):
            self._chunk_table_problem = table
            return False
        self._chunk_table_problem = None
        self._chunks = table
        self._details_at = (index_offset, keys.get("details"))
        self._summaries = keys.get("summaries")
        self._take_specs(keys.get("sensors"))
        if "ledger" in keys:
            try:
                self._ledgers = parse_ledgers(keys["ledger"])
            except ValueError as err:
                self._report(CorruptChunk(f"{err}; ignoring it", **self._at(index_offset)))
        for specs in table.new.values():
            self._take_specs(specs)
        return True

    def _scan(self, offset: int) -> None:
        found: list[ChunkMeta] = []
        self._chunks = found
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
                    found.append(chunk)
                    self._take_specs(chunk.new_specs)
            elif rec.kind == RecordKind.INDEX:
                return  # what follows is the trailer
            offset = rec.end  # headers repeated and unknown kinds are skipped

    def _read_record_head(self, offset: int) -> RecordHead | RecordingError:
        """The verified head of the record at ``offset``, or why there is none
        (:class:`~recordings.hfr._chunk_reader.HeadRead` decides what to read)."""
        read = HeadRead(offset, self.size, limits=self.limits, where=str(self.path))
        while read.want is not None:
            at, length = read.want
            read.feed(os.pread(self._fd, length, at))
        assert read.result is not None
        return read.result

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
                        and self.limits.meta_fits(meta_len)
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
        self._damage.report(err)
