"""Writing one snapshot file: records back to back, then the footer index and trailer.

:class:`~recordings.hfr._snapshot.SnapshotRecorder` writes each snapshot through one
of these into ``NAME.partial``, then renames it (see its module docstring).
"""

from __future__ import annotations

from typing import Any

from recordings.hfr._chunk_encode import pack as _pack
from recordings.hfr._format import RecordKind, crc32, pack_prelude, pack_trailer
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._writev import write_all
from recordings.output_files import fsync_dir

__all__ = ["SnapshotFile", "fsync_dir"]


class SnapshotFile:
    """Writes one snapshot file: records back to back, then the index and trailer."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.offset = 0
        self.index: list[dict[str, Any]] = []

    def emit(self, parts: list[bytes]) -> None:
        """Write ``parts`` back to back (split at ``IOV_MAX``, partial writes resumed)."""
        self.offset += write_all(self.fd, parts)

    def chunk(self, meta: ChunkMeta, parts: list[bytes]) -> None:
        entry = meta.to_msgpack()
        entry["off"] = self.offset
        entry["len"] = sum(len(p) for p in parts[2:])
        self.emit(parts)
        self.index.append(entry)

    def finish(
        self, specs: list[dict[str, Any]], ledgers: dict[str, dict[str, Any]] | None = None
    ) -> None:
        at = self.offset
        meta: dict[str, Any] = {"chunks": self.index, "sensors": specs}
        if ledgers:
            meta["ledger"] = ledgers
        index = _pack(meta)
        self.emit([pack_prelude(RecordKind.INDEX, index, 0, crc32(b"")), index, pack_trailer(at)])
