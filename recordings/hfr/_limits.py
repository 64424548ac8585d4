"""What a reader lets one file cost: the four read limits as one value.

A ``.hfr`` file is untrusted input, so every reader checks what a file
declares against limits before it reads, decompresses or decodes anything
(``recordings/hfr/FORMAT.md``, docs/recordings.md "Hostile input"):

* ``max_meta_bytes``: a record's meta, checked from its prelude
  (:func:`recordings.hfr._parser.parse_record_head`);
* ``max_chunk_bytes``: a chunk's stored and decompressed size, checked from
  its meta before its payload is read (:meth:`ReadLimits.check_chunk_size`);
* ``max_chunk_frames`` and ``max_decoded_bytes``: the frames a chunk
  declares and the memory its Python objects may take, all chunks in flight
  together (:mod:`recordings.hfr._budget`).

One frozen :class:`ReadLimits` travels from :func:`~recordings.open_recording`
or :func:`~recordings.read_stream` down to those checks, so a limit is named
in one place and cannot be dropped on the way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from recordings.errors import LimitExceeded
from recordings.hfr._layout import ChunkMeta

DEFAULT_MAX_CHUNK_BYTES = 1 << 30
"""Largest raw (decompressed) or stored chunk a reader accepts unless told otherwise."""

DEFAULT_MAX_META_BYTES = 64 * 1024 * 1024
"""Largest record meta a reader accepts (an index of ~500k chunks)."""

DEFAULT_MAX_DECODED_BYTES = 1 << 30
"""Memory a reader lets the chunks it holds decode to, all together (1 GiB)."""

DEFAULT_MAX_CHUNK_FRAMES = 1 << 20
"""Most frames one chunk may declare (a 1 s chunk of a 1 MHz stream)."""


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """The most a reader accepts from one file; anything over is :class:`LimitExceeded`."""

    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES
    """Largest chunk, stored or decompressed (1 GiB)."""
    max_meta_bytes: int = DEFAULT_MAX_META_BYTES
    """Largest record meta (64 MiB: an index of ~500k chunks)."""
    max_decoded_bytes: int = DEFAULT_MAX_DECODED_BYTES
    """Memory the decoded objects of the chunks in flight may take, readahead included
    (1 GiB)."""
    max_chunk_frames: int = DEFAULT_MAX_CHUNK_FRAMES
    """Most frames one chunk may declare (2**20)."""

    def replace(
        self,
        *,
        max_chunk_bytes: int | None = None,
        max_meta_bytes: int | None = None,
        max_decoded_bytes: int | None = None,
        max_chunk_frames: int | None = None,
    ) -> ReadLimits:
        """These limits with the ones given (not ``None``) changed."""
        given = {
            "max_chunk_bytes": max_chunk_bytes,
            "max_meta_bytes": max_meta_bytes,
            "max_decoded_bytes": max_decoded_bytes,
            "max_chunk_frames": max_chunk_frames,
        }
        changed = {k: v for k, v in given.items() if v is not None}
        return dataclasses.replace(self, **changed) if changed else self

    def check_chunk_size(self, meta: ChunkMeta, *, where: str = "") -> None:
        """Refuse a chunk whose meta declares more decompressed bytes than
        ``max_chunk_bytes``, before anything of it is read or allocated."""
        if meta.raw_size > self.max_chunk_bytes:
            raise LimitExceeded(
                f"{meta.describe()} declares {meta.raw_size} decompressed bytes, over the "
                f"limit of {self.max_chunk_bytes}; refusing to decompress it",
                path=where or None,
                offset=meta.offset,
            )


DEFAULT_LIMITS = ReadLimits()
"""The limits of a reader told nothing else."""
