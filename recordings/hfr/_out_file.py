"""One ``.hfr`` file being written: records back to back, then the footer index and trailer.

The thin I/O both writers share (:class:`~recordings.Recorder`'s parts and
:class:`~recordings.SnapshotRecorder`'s snapshots): every record goes to the
file as a list of pieces through :func:`recordings.hfr._writev.write_all`
(``writev`` split at ``IOV_MAX``, short writes resumed), so at any instant the
file is a valid prefix; :meth:`OutFile.sync` is the ``fsync`` of a flush.
What to put in the file is decided by the callers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fusion import sample_anchor
from recordings.hfr._chunk_encode import pack
from recordings.hfr._format import RecordKind, crc32, pack_preamble, pack_prelude
from recordings.hfr._writev import write_all

__all__ = ["OutFile", "header_pieces", "index_pieces", "pack_index"]


class OutFile:
    """A file opened for writing (truncated), its bytes counted as they are written."""

    __slots__ = ("fd", "offset", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.offset = 0
        """Bytes written so far: where the next record starts."""

    def write(self, parts: Iterable[Any]) -> int:
        """Write ``parts`` back to back; the bytes written. An ``OSError`` propagates."""
        n = write_all(self.fd, parts)
        self.offset += n
        return n

    def sync(self) -> None:
        """``fsync``: what was written survives a power loss."""
        os.fsync(self.fd)

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def abandon(self) -> None:
        """Close after a failure, ignoring a second one."""
        with contextlib.suppress(OSError):
            self.close()


def header_pieces(
    specs: list[dict[str, Any]], metadata: dict[str, Any], part: int, *, wall_clock: bool
) -> list[bytes]:
    """The file's start: preamble and HEADER record (sensor specs, user metadata, the
    part's number and, with ``wall_clock``, a wall anchor sampled now)."""
    head: dict[str, Any] = {
        "sensors": specs,
        "metadata": metadata,
        "writer": "hyperframes",
        "part": part,
    }
    if wall_clock:
        head["wall"] = sample_anchor().as_list()
    header = pack(head)
    return [pack_preamble(), pack_prelude(RecordKind.HEADER, header, 0, crc32(b"")), header]


def index_pieces(index: bytes) -> list[bytes]:
    """The INDEX record of meta ``index`` (:func:`pack_index`)."""
    return [pack_prelude(RecordKind.INDEX, index, 0, crc32(b"")), index]


def pack_index(chunks: list[Any], rest: dict[str, Any]) -> bytes:
    """The INDEX meta ``{"chunks": chunks, **rest}`` as msgpack; ``chunks`` are entry maps,
    or entries packed already (spliced in as they are)."""
    if not chunks or not isinstance(chunks[0], bytes):
        return pack({"chunks": chunks, **rest})
    n, k = len(chunks), len(rest) + 1
    head = bytes([0x80 | k]) if k < 16 else b"\xde" + k.to_bytes(2, "big")
    if n < 16:
        array = bytes([0x90 | n])
    elif n < 1 << 16:
        array = b"\xdc" + n.to_bytes(2, "big")
    else:
        array = b"\xdd" + n.to_bytes(4, "big")
    pairs = [pack(key) + pack(value) for key, value in rest.items()]
    return b"".join([head, pack("chunks"), array, *chunks, *pairs])
