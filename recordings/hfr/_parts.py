"""A recorder's files: one part open at a time, chunks into it, the footer, the next part.

:class:`PartWriter` is the I/O side of the :class:`~recordings.Recorder`: it
runs in the recorder's writer thread (the first part is opened by the
constructor, so an unwritable path fails in the caller). A part is opened
under the one-writer lock of its final name (``recordings.output_files``),
as ``NAME.partial`` when ``atomic`` (an interrupted run's partial kept aside,
never truncated), with its HEADER; each chunk is one write of its record
(``fsync`` when ``durable``); when the :class:`~recordings.hfr._sealing.SealPolicy`
says the part is long enough, its footer (:class:`~recordings.hfr._part_index.PartIndex`)
is written, the file fsynced, closed and (``atomic``) renamed to its name, and
the next part opened.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from recordings.hfr._layout import ChunkMeta
from recordings.hfr._out_file import OutFile, header_pieces
from recordings.hfr._part_index import PartIndex
from recordings.hfr._sealing import SealPolicy

__all__ = ["PartWriter", "part_path"]


def part_path(path: Path, part: int) -> Path:
    """Name of split part ``part``: ``s.hfr`` -> ``s.0003.hfr``."""
    return path.with_name(f"{path.stem}.{part:04d}{path.suffix}")


class PartWriter:
    """Writes a recorder's chunks into its file, or its numbered parts (see the module).

    ``specs()`` gives the sensor specs the header and the footer hold when they are
    written (the recorder's, under its lock); :attr:`ledgers` is what the footer's
    ``ledger`` holds (set by the recorder).
    """

    def __init__(
        self,
        path: Path,
        policy: SealPolicy,
        *,
        metadata: dict[str, Any],
        specs: Callable[[], list[dict[str, Any]]],
        block_budget: int,
        atomic: bool = False,
        durable: bool = False,
        wall_clock: bool = True,
        inputs: list[Path] | None = None,
    ) -> None:
        self.path = path
        self._policy = policy
        self._metadata = metadata
        self._specs = specs
        self.ledgers: dict[str, Any] = {}
        """The footer's ``ledger`` (1.3): each sensor's input ledger."""
        self._budget = block_budget
        self._atomic = atomic
        self._durable = durable
        self._wall_clock = wall_clock
        self._inputs = inputs or []
        self.number = 0
        """The open part's number."""
        self.paths: list[Path] = []
        """Every file written so far (the open one last, ``.partial`` until finished)."""
        self.stale_partials: list[tuple[Path, Path]] = []
        self.chunks_written = 0
        self.raw_written = 0
        self.bytes_written = 0
        self._locks: list[Any] = []  # an OutputLock per file written (recordings.output_files)
        self._final: Path | None = None  # the name the open part gets once finished
        self._file: OutFile | None = None
        self._index = PartIndex(block_budget)

    @property
    def fd(self) -> int:
        """The open part's descriptor (-1 when none)."""
        return -1 if self._file is None else self._file.fd

    @property
    def current(self) -> Path:
        """The file being written (or last written)."""
        return self.paths[-1] if self.paths else self.path

    @property
    def kept(self) -> Path | None:
        """The ``.partial`` a failed atomic part left behind, if any."""
        if self._atomic and self.paths and self.paths[-1] != self._final:
            return self.paths[-1]
        return None

    def open(self) -> None:
        """Start the next part: locked, opened (truncated), its HEADER written."""
        path = part_path(self.path, self.number) if self._policy.splits else self.path
        from recordings.output_files import keep_aside, lock_output, refuse_overlap

        if self._inputs:
            refuse_overlap(path, self._inputs)
        self._final = path
        self._locks.append(lock_output(path))  # one writer per file: a second is refused
        if self._atomic:
            path = path.with_name(path.name + ".partial")
            kept = keep_aside(path)  # an interrupted run's partial: never truncated
            if kept is not None:
                self.stale_partials.append((path, kept))
        self._file = OutFile(path)
        self.paths.append(path)
        self._index = PartIndex(self._budget)
        self._policy.part_opened()
        self._write(
            header_pieces(self._specs(), self._metadata, self.number, wall_clock=self._wall_clock)
        )

    def chunk(self, meta: ChunkMeta, parts: list[Any], details: Any = None) -> None:
        """Write one chunk's record (``[prelude, meta, *payload]``); split after it when
        the policy says the part is done."""
        self.chunks([(meta, parts, details)])

    def chunks(self, records: list[tuple[ChunkMeta, list[Any], Any]]) -> None:
        """:meth:`chunk` for each of ``records`` (``(meta, parts, details)``), those that
        go into one part written with one ``writev`` (``durable``: each chunk written and
        synced before the next): the same file as one at a time."""
        out = self._file
        assert out is not None
        pieces: list[Any] = []
        offset = out.offset
        for meta, parts, details in records:
            payload = sum(len(p) for p in parts[2:])
            self._index.add(meta, offset, payload, details)
            pieces += parts
            offset += len(parts[0]) + len(parts[1]) + payload
            if self._durable:
                self._write(pieces)
                pieces = []
                out.sync()
            self.chunks_written += 1
            self.raw_written += meta.raw_size
            if self._policy.written(offset, meta.t_start, meta.t_end):
                self._write(pieces)
                pieces = []
                self.finish()
                self.number += 1
                self.open()
                out = self._file
                assert out is not None
                offset = out.offset
        if pieces:
            self._write(pieces)
        assert out.offset == offset, "a record's pieces are not byte-sized"

    def finish(self) -> None:
        """Write the open part's footer, fsync, close and (``atomic``) publish it."""
        out = self._file
        assert out is not None
        self._write(self._index.footer(out.offset, self._specs(), self.ledgers))
        out.sync()
        out.close()
        self._file = None
        if self._atomic and self._final is not None:
            from recordings.output_files import fsync_dir, publish

            publish(self.paths[-1], self._final)
            self.paths[-1] = self._final
            if self._durable:
                fsync_dir(self._final.parent)

    def abandon(self) -> None:
        """After a failure: close the open part as it is (readable up to its last record)."""
        if self._file is not None:
            self._file.abandon()
            self._file = None

    def release(self) -> None:
        """Published or abandoned: the next writer of these files may come."""
        for lock in self._locks:
            lock.release()

    def _write(self, parts: Any) -> None:
        assert self._file is not None
        self.bytes_written += self._file.write(parts)
