"""Damage a real ``.hfr`` behind its CRCs: decode its records, change them, write them back.

:func:`records_of` splits a file written by the Recorder into its records
(kind, meta, payload); :func:`rewrite` writes records back with every prelude
CRC, the index's offsets and the trailer recomputed, so what a test changed
(a chunk's records, a chunk meta, an index entry) is what the reader meets
once the CRCs pass. :func:`edit_chunk` decompresses one chunk's raw buffer,
lets a function change it, and recompresses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import zstandard

from recordings.hfr._format import PREAMBLE, PRELUDE, TRAILER, RecordKind, crc32, pack_trailer
from tests.recordings.hostile import record


@dataclass
class Rec:
    kind: int
    meta: Any
    payload: bytes


def records_of(path: Path) -> tuple[bytes, list[Rec]]:
    """The preamble and every record up to the index (included) of a clean file."""
    data = path.read_bytes()
    pos, out = PREAMBLE.size, []
    while pos + PRELUDE.size <= len(data) - TRAILER.size:
        _, kind, meta_len, payload_len, _, _ = PRELUDE.unpack_from(data, pos)
        m0 = pos + PRELUDE.size
        meta = msgpack.unpackb(data[m0 : m0 + meta_len], raw=False, strict_map_key=False)
        payload = data[m0 + meta_len : m0 + meta_len + payload_len]
        out.append(Rec(kind, meta, payload))
        pos = m0 + meta_len + payload_len
        if kind == RecordKind.INDEX:
            break
    return data[: PREAMBLE.size], out


def rewrite(
    path: Path,
    preamble: bytes,
    recs: list[Rec],
    index_edit: Callable[[list[dict[str, Any]]], None] | None = None,
) -> Path:
    """Write ``recs`` back with CRCs, index offsets and trailer recomputed; ``index_edit``
    may change the index's chunk entries (lying about what the chunks say)."""
    out = bytearray(preamble)
    entries: list[dict[str, Any]] = []
    for r in recs:
        offset = len(out)
        if r.kind == RecordKind.TABLE:
            continue  # the forged INDEX is the chunk list (as in a file before 1.7)
        if r.kind == RecordKind.INDEX:
            meta = dict(r.meta)
            meta.pop("table", None)
            if index_edit is not None:
                index_edit(entries)
            meta["chunks"] = entries
            out += record(RecordKind.INDEX, meta)
            out += pack_trailer(offset)
            break
        out += record(r.kind, r.meta, r.payload)
        if r.kind in (RecordKind.CHUNK, RecordKind.COLUMNS):
            entries.append({**r.meta, "k": r.kind, "off": offset, "len": len(r.payload)})
    path.write_bytes(bytes(out))
    return path


def chunks(recs: list[Rec]) -> list[Rec]:
    return [r for r in recs if r.kind in (RecordKind.CHUNK, RecordKind.COLUMNS)]


def edit_chunk(rec: Rec, change: Callable[[bytearray], None]) -> None:
    """Decompress ``rec``'s payload, let ``change`` edit the raw buffer, recompress."""
    raw = bytearray(zstandard.ZstdDecompressor().decompress(rec.payload))
    change(raw)
    rec.meta = {**rec.meta, "raw": len(raw)}
    rec.payload = zstandard.ZstdCompressor().compress(bytes(raw))


def crc_ok(path: Path) -> bool:
    """Every record's payload CRC right (what a forged file must keep)."""
    data = path.read_bytes()
    pos = PREAMBLE.size
    while pos + PRELUDE.size <= len(data) - TRAILER.size:
        _, kind, meta_len, payload_len, _, payload_crc = PRELUDE.unpack_from(data, pos)
        p0 = pos + PRELUDE.size + meta_len
        if crc32(data[p0 : p0 + payload_len]) != payload_crc:
            return False
        pos = p0 + payload_len
        if kind == RecordKind.INDEX:
            break
    return True
