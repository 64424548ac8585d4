"""Hand-crafted ``.hfr`` files: any meta, any records, every CRC right.

The checks behind the CRCs are what hostile input meets once the CRCs pass,
so these files are built record by record from Python values (or raw bytes),
with correct preludes, payload CRCs, index and trailer unless told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import zstandard

from recordings.hfr._format import (
    BLOB_ALIGN,
    PRELUDE,
    RecordKind,
    crc32,
    pack_preamble,
    pack_prelude,
    pack_trailer,
)

INT64 = 1 << 63


def record(kind: int, meta: Any, payload: bytes = b"") -> bytes:
    """One record: prelude, meta (packed unless bytes) and payload, CRCs computed."""
    meta_bytes = meta if isinstance(meta, bytes) else msgpack.packb(meta)
    return pack_prelude(kind, meta_bytes, len(payload), crc32(payload)) + meta_bytes + payload


@dataclass
class Chunk:
    """A chunk from records ``[sensor, seq, t, t_sensor, t_arrival, data, meta]``.

    The meta is derived from the records where their fields allow it;
    ``overrides`` replaces meta keys afterwards (lying metas), ``head`` replaces
    the packed records region (raw msgpack bytes).
    """

    records: list[Any] = field(default_factory=list)
    sensors: tuple[str, ...] = ("s",)
    overrides: dict[str, Any] = field(default_factory=dict)
    head: bytes | None = None
    index: int = 0

    def raw(self) -> bytes:
        head = self.head if self.head is not None else msgpack.packb(self.records)
        return head + b"\0" * (-len(head) % BLOB_ALIGN)

    def meta(self) -> dict[str, Any]:
        head = self.head if self.head is not None else msgpack.packb(self.records)
        ints = [r[2] for r in self.records if isinstance(r, list) and len(r) > 2]
        ints = [t for t in ints if type(t) is int and -INT64 <= t < INT64] or [0]
        counts = [0] * len(self.sensors)
        for r in self.records:
            if isinstance(r, list) and r and type(r[0]) is int and 0 <= r[0] < len(counts):
                counts[r[0]] += 1
        meta = {
            "i": self.index,
            "t0": min(ints),
            "t1": max(ints),
            "n": len(self.records),
            "raw": len(self.raw()),
            "rec": len(head),
            "z": 1,
            "s": list(self.sensors),
            "c": counts,
            "r": [[min(ints), max(ints)] for _ in self.sensors],
            "new": [],
        }
        meta.update(self.overrides)
        return meta

    def payload(self) -> bytes:
        return zstandard.ZstdCompressor().compress(self.raw())


def recording(
    path: Path,
    chunks: list[Chunk] | list[bytes],
    *,
    sensors: tuple[str, ...] = ("s",),
    metadata: dict[str, Any] | None = None,
    index: bool = True,
    index_entries: list[Any] | None = None,
    trailer_offset: int | None = None,
) -> Path:
    """Write a file: preamble, header, the chunks, then (``index``) an index and trailer.

    ``chunks`` may be :class:`Chunk` values or ready record bytes.
    ``index_entries`` replaces the index's chunk list; ``trailer_offset`` the
    offset the trailer points at.
    """
    specs = [{"name": n, "kind": "generic"} for n in sensors]
    out = bytearray(pack_preamble())
    out += record(RecordKind.HEADER, {"sensors": specs, "metadata": metadata or {}, "part": 0})
    entries = []
    for c in chunks:
        offset = len(out)
        if isinstance(c, bytes):
            out += c
            continue
        meta, payload = c.meta(), c.payload()
        out += record(RecordKind.CHUNK, meta, payload)
        entries.append({**meta, "off": offset, "len": len(payload)})
    if index:
        index_offset = len(out)
        listed = entries if index_entries is None else index_entries
        out += record(RecordKind.INDEX, {"chunks": listed, "sensors": specs})
        out += pack_trailer(index_offset if trailer_offset is None else trailer_offset)
    path.write_bytes(bytes(out))
    return path


def good_chunks(n: int = 10, per: int = 3, sensor: str = "s") -> list[Chunk]:
    """``n`` healthy chunks of ``per`` frames each, seq and t counting up."""
    out = []
    for i in range(n):
        rows = [[0, i * per + k, (i * per + k) * 1000, None, None, k, None] for k in range(per)]
        out.append(Chunk(rows, sensors=(sensor,), index=i))
    return out


def chunk_offsets(path: Path) -> list[int]:
    """Offsets of the CHUNK records of a file written by :func:`recording`."""
    data = path.read_bytes()
    pos, found = 16, []
    while pos + PRELUDE.size <= len(data):
        _, kind, meta_len, payload_len, _, _ = PRELUDE.unpack_from(data, pos)
        if kind == RecordKind.CHUNK:
            found.append(pos)
        pos += PRELUDE.size + meta_len + payload_len
        if kind == RecordKind.INDEX:
            break
    return found
