"""Writing one snapshot file: its window's chunks, then the footer index and trailer.

:class:`~recordings.hfr._snapshot.SnapshotRecorder`'s writer thread writes each
snapshot through a :class:`SnapshotWriter` into ``NAME.partial``
(:class:`SnapshotFile`), fsyncs it and renames it to its numbered name (see
the recorder's module docstring). A held chunk wholly in the window is
written as it sits in the ring (only its meta renumbered); one that straddles
an edge is decoded and re-encoded with only the window's frames.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_encode import pack as _pack
from recordings.hfr._effort import AutoEffort
from recordings.hfr._format import pack_prelude, pack_trailer
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._limits import DEFAULT_MAX_CHUNK_BYTES, ReadLimits
from recordings.hfr._out_file import OutFile, header_pieces, index_pieces, pack_index
from recordings.hfr._records import decode_chunk, decompress_chunk
from recordings.hfr._snapshot_ring import Held, SnapshotRequest
from recordings.output_files import fsync_dir

__all__ = ["SnapshotFile", "SnapshotWriter", "fsync_dir", "snapshot_path"]


def snapshot_path(base: Path, number: int) -> Path:
    """``black.hfr`` -> ``black.0003.hfr``."""
    return base.with_name(f"{base.stem}.{number:04d}{base.suffix or '.hfr'}")


class SnapshotFile:
    """Writes one snapshot file: records back to back, then the index and trailer."""

    def __init__(self, path: Path) -> None:
        self.out = OutFile(path)
        self.index: list[dict[str, Any]] = []

    @property
    def fd(self) -> int:
        return self.out.fd

    @property
    def offset(self) -> int:
        return self.out.offset

    def emit(self, parts: list[bytes]) -> None:
        """Write ``parts`` back to back (split at ``IOV_MAX``, partial writes resumed)."""
        self.out.write(parts)

    def chunk(self, meta: ChunkMeta, parts: list[bytes]) -> None:
        entry = meta.to_msgpack()
        entry["off"] = self.out.offset
        entry["len"] = sum(len(p) for p in parts[2:])
        self.out.write(parts)
        self.index.append(entry)

    def finish(
        self, specs: list[dict[str, Any]], ledgers: dict[str, dict[str, Any]] | None = None
    ) -> None:
        at = self.out.offset
        rest: dict[str, Any] = {"sensors": specs}
        if ledgers:
            rest["ledger"] = ledgers
        index = pack_index(self.index, rest)
        self.out.write([*index_pieces(index), pack_trailer(at)])


WriteChunk = Callable[[SnapshotFile, ChunkMeta, list[bytes]], None]


class SnapshotWriter:
    """Writes snapshots of a recorder's ring to ``base``'s numbered names (one at a time,
    in the recorder's writer thread)."""

    def __init__(
        self,
        base: Path,
        *,
        metadata: Mapping[str, Any],
        level: int | AutoEffort,
        wall_clock: bool,
        durable: bool,
        inputs: list[Path],
    ) -> None:
        self.base = base
        self._metadata = dict(metadata)
        self._level = level
        self._wall_clock = wall_clock
        self._durable = durable
        self._inputs = inputs
        self.stale_partials: list[tuple[Path, Path]] = []

    def write(
        self,
        req: SnapshotRequest,
        number: int,
        specs: list[dict[str, Any]],
        ledgers: Callable[[], dict[str, dict[str, Any]]],
        write_chunk: WriteChunk,
    ) -> Path:
        """Write ``req``'s window as snapshot ``number``; its path. ``write_chunk(out, meta,
        parts)`` writes each chunk (the recorder's seam); ``ledgers()`` is read at the end."""
        final = snapshot_path(self.base, number)
        from recordings.output_files import keep_aside, refuse_overlap

        if self._inputs:
            refuse_overlap(final, self._inputs)
        partial = final.with_name(final.name + ".partial")
        kept = keep_aside(partial)  # a killed run's partial: never truncated
        if kept is not None:
            self.stale_partials.append((partial, kept))
        out = SnapshotFile(partial)
        written = False
        try:
            out.emit(header_pieces(specs, self._head(req, number), 0, wall_clock=self._wall_clock))
            index = 0
            for held in sorted(req._chunks, key=lambda c: c.meta.index):
                for meta_i, parts in self.window_chunks(held, req.start, req.end, index):
                    write_chunk(out, meta_i, parts)
                    req.frames += meta_i.count
                    index += 1
            out.finish(specs, ledgers())
            if self._durable:
                out.out.sync()
            written = True
        finally:
            out.out.close()
            if not written:  # a full disk or a failed write leaves no half file behind
                with contextlib.suppress(OSError):
                    partial.unlink()
        os.replace(partial, final)
        if self._durable:
            fsync_dir(final.parent)
        return final

    def _head(self, req: SnapshotRequest, number: int) -> dict[str, Any]:
        """The snapshot's header metadata: the recorder's, and the trigger's."""
        snapshot = {
            "number": number,
            "trigger_t": req.t,
            "start": req.start,
            "end": req.end,
            "reasons": list(req.reasons),
        }
        return {**self._metadata, "snapshot": snapshot}

    def window_chunks(
        self, held: Held, lo: int, hi: int, index: int
    ) -> list[tuple[ChunkMeta, list[bytes]]]:
        """``held`` cut to ``[lo, hi]`` as records ready to write (none if nothing is inside)."""
        meta = held.meta
        if meta.t_end < lo or meta.t_start > hi:
            return []
        if lo <= meta.t_start and meta.t_end <= hi:
            renumbered = dataclasses.replace(meta, index=index, new_specs=())
            meta_bytes = _pack(renumbered.to_msgpack())
            prelude = pack_prelude(meta.kind, meta_bytes, held.nbytes, held.crc)
            return [(renumbered, [prelude, meta_bytes, *held.payload])]
        raw = decompress_chunk(
            b"".join(held.payload),
            meta,
            limits=ReadLimits(max_chunk_bytes=max(DEFAULT_MAX_CHUNK_BYTES, meta.raw_size)),
        )
        builder = ChunkBuilder(index=index)
        for frame in decode_chunk(raw, meta).frames(None, lo, hi + 1):
            builder.add(frame)
        if builder.count == 0:
            return []
        sealed = builder.seal()
        sealed.meta = dataclasses.replace(sealed.meta, wall=meta.wall)  # the held chunk's
        cut, parts, _ = encode_chunk(sealed, self._level)
        return [(cut, [bytes(p) for p in parts])]
