"""Writing snapshot files: each window's chunks, then the footer index and trailer.

:class:`SnapshotWriter` owns :class:`~recordings.hfr._snapshot.SnapshotRecorder`'s
writer thread (:class:`~recordings.hfr._writer_thread.WriterThread`): it
writes each snapshot handed to it into ``NAME.partial``
(:class:`SnapshotFile`), fsyncs it and renames it to its numbered name (see
the recorder's module docstring). A held chunk wholly in the window is
written as it sits in the ring (only its meta renumbered); one that straddles
an edge is decoded and re-encoded with only the window's frames.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fusion import SensorSpec
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_encode import pack as _pack
from recordings.hfr._chunk_reader import decode_chunk, decompress_chunk
from recordings.hfr._effort import AutoEffort
from recordings.hfr._format import pack_prelude, pack_trailer
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._limits import DEFAULT_MAX_CHUNK_BYTES, ReadLimits
from recordings.hfr._out_file import OutFile, header_pieces, index_pieces, pack_index
from recordings.hfr._snapshot_ring import Held, Ring, SnapshotRequest
from recordings.hfr._writer_thread import STOP, WriterThread
from recordings.output_files import fsync_dir

__all__ = ["SnapshotFile", "SnapshotWriter", "fsync_dir", "snapshot_path"]

log = logging.getLogger("recordings.hfr._snapshot")  # where the recorder's messages were


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
    """Writes the snapshots handed to its writer thread to ``base``'s numbered names, one
    at a time, and counts what was written and what failed (a full disk costs that
    snapshot only: said, counted in :attr:`failures`, raised by its ``wait()``).

    ``cond`` is the recorder's lock; ``specs`` (its sensor specs) and ``ring`` (whose
    waiting requests keep the thread alive while :attr:`closing`) are read under it.
    ``write_chunk(out, meta, parts)`` writes each chunk (the recorder's test seam).
    """

    def __init__(
        self,
        base: Path,
        cond: threading.Condition,
        specs: Mapping[str, SensorSpec],
        ring: Ring,
        write_chunk: WriteChunk,
        *,
        metadata: Mapping[str, Any],
        level: int | AutoEffort,
        wall_clock: bool,
        durable: bool,
        inputs: list[Path],
    ) -> None:
        self.base = base
        self._cond = cond
        self._specs = specs
        self._ring = ring
        self._write_chunk = write_chunk
        self._metadata = dict(metadata)
        self._level = level
        self._wall_clock = wall_clock
        self._durable = durable
        self._inputs = inputs
        self.stale_partials: list[tuple[Path, Path]] = []
        self.ledgers: dict[str, dict[str, Any]] = {}
        """What every later snapshot's footer holds as its ``ledger`` (set under the lock)."""
        self.closing = False
        """Set (under the lock) when the recorder closes: the thread ends once idle."""
        self.writing: SnapshotRequest | None = None
        self.written: list[Path] = []
        self.bytes_written = 0
        self.failures: list[str] = []
        self._number = 0
        # Held strongly, as before: snapshots queued are written even if the recorder
        # is dropped without close().
        self.writer = WriterThread(self, cond, "hfr-snapshot")
        self.writer.start()

    # -- the writer thread's jobs (recordings.hfr._writer_thread.Owner) -----------

    def _next_job(self) -> tuple[Any, float | None]:
        """Under the lock: the next snapshot to write, the end, or a wait."""
        queue = self.writer.queue
        if not queue:
            return (STOP if self.closing and not self._ring.waiting else None), None
        req = queue.popleft()
        self.writing = req
        number = self._number
        self._number += 1
        return (req, number, [s.to_dict() for s in self._specs.values()]), None

    def _run_job(self, job: tuple[SnapshotRequest, int, list[dict[str, Any]]]) -> bool:
        """Write one snapshot; a failure costs that snapshot only (said and counted)."""
        req, number, specs = job
        try:
            req.path = self.write(req, number, specs)
        except BaseException as err:
            req.error = err
            failure = f"snapshot {snapshot_path(self.base, number)} was not written: {err}"
            log.error("%s", failure)
            with self._cond:
                self.failures.append(failure)
        finally:
            req._chunks = []
            with self._cond:
                self.writing = None
                if req.path is not None:
                    self.written.append(req.path)
                    self.bytes_written += req.path.stat().st_size
                self._cond.notify_all()
            req._done.set()
        return True

    def _failed(self, err: BaseException) -> None:
        log.error("snapshot writer for '%s' stopped: %s", self.base, err)

    def write(self, req: SnapshotRequest, number: int, specs: list[dict[str, Any]]) -> Path:
        """Write ``req``'s window as snapshot ``number``; its path."""
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
                    self._write_chunk(out, meta_i, parts)
                    req.frames += meta_i.count
                    index += 1
            with self._cond:
                ledgers = self.ledgers
            out.finish(specs, ledgers)
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
