"""Encoding a sealed chunk into its on-disk record: msgpack metas, zstd payloads.

Runs in the recorder's compression pool (and in the snapshot writer): each
pool thread keeps its own zstd compressor per level. ``encode_chunk`` turns a
:class:`~recordings.hfr._layout.SealedChunk` into ``(meta, parts, length)``, the
record one ``writev`` puts in the file (``recordings/hfr/FORMAT.md``: chunk).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import msgpack
import zstandard

from recordings.hfr import _buffers as buffers
from recordings.hfr._effort import HIGH, AutoEffort
from recordings.hfr._format import Compression, crc32, pack_prelude
from recordings.hfr._layout import ChunkMeta, SealedChunk

__all__ = ["encode_chunk", "pack", "wire"]

_local = threading.local()
_KEEP_PACKER = 256 << 10
"""A thread's packer is kept for its next :func:`pack` unless its output was larger."""


def wire(obj: Any) -> Any:
    """msgpack ``default`` for specs and user metadata: numbers as numbers, the rest as text."""
    item = getattr(obj, "item", None)
    if callable(item):
        return item()
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    return str(obj)


def pack(obj: Any) -> bytes:
    """``obj`` as msgpack, with :func:`wire` for what msgpack does not know.

    The bytes of ``msgpack.packb(obj, use_bin_type=True, default=wire)``, through the
    calling thread's own packer: ``packb`` makes a packer per call, and each packer
    allocates a 256 KiB buffer, so sealing one chunk allocated and freed 38 of them
    (its column references, its head, its records' array references, its meta). A
    call made while the thread's packer is busy (``wire`` let the cyclic collector
    run a ``__del__`` that packs) gets a packer of its own; a packer whose buffer grew
    past :data:`_KEEP_PACKER` (a footer's INDEX) is not kept.
    """
    packer: msgpack.Packer | None = getattr(_local, "packer", None)
    if packer is None:
        packer = msgpack.Packer(use_bin_type=True, default=wire, autoreset=True)
    _local.packer = None  # taken, until this call is done
    packed: bytes = packer.pack(obj)
    if len(packed) <= _KEEP_PACKER:
        _local.packer = packer
    return packed


def _compressor(level: int) -> zstandard.ZstdCompressor:
    """The calling thread's compressor for ``level`` (each pool thread keeps its own)."""
    cctxs: dict[int, zstandard.ZstdCompressor] | None = getattr(_local, "cctxs", None)
    if cctxs is None:
        cctxs = _local.cctxs = {}
    cctx = cctxs.get(level)
    if cctx is None:
        cctx = cctxs[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
    return cctx


def _compressed_size(level: int, data: bytes) -> int:
    return len(_compressor(level).compress(data))


SMALL_CHUNK_BYTES = 256 << 10
"""Raw bytes up to which a chunk is small: a recorder's writer thread compresses it
itself instead of the pool (:mod:`recordings.hfr._chunk_flow`: a pool thread costs
each chunk two hand-offs, wake-ups and GIL turns, about 130 us of CPU measured on a
200 Hz IMU's 10 KB one-second chunks, more than zstd takes on them; 1 and 4 kHz IMUs,
80 and 320 KB chunks, ran as fast or faster this way, 2 MiB camera chunks keep the
pool), and by one ``compress`` call, not into a pooled buffer: its result is a small
allocation, and the stream writer's calls back into Python cost the writer thread
more GIL turns (10 KB chunks: 3 % of the recording's time, 12 rounds each way)."""


def encode_chunk(
    sealed: SealedChunk, level: int | AutoEffort, taken: list[Any] | None = None
) -> tuple[ChunkMeta, list[Any], int]:
    """Compress a sealed chunk into a record: ``(meta, [prelude, meta, *payload], length)``.

    Runs in the compression pool, or for a small chunk in the writer thread. ``level``
    is a zstd level or the recorder's :class:`~recordings.hfr._effort.AutoEffort`, which
    picks one per chunk or says to store it as is (:mod:`recordings.hfr._effort`). A
    chunk that zstd does not make smaller is stored as is too; stored parts go to
    ``writev`` without a copy.

    With ``taken`` (the recorder's), a one-part chunk over :data:`SMALL_CHUNK_BYTES` is
    compressed into a buffer from :mod:`recordings.hfr._buffers`, appended to
    ``taken``: the caller gives it back
    once the record is written. zstd's own result was a large allocation per chunk
    (its bound, the chunk's raw size), made in a compression thread and freed by
    the writer thread.
    """
    parts = sealed.parts
    raw_size = sealed.meta.raw_size
    chosen = level if isinstance(level, int) else level.level(parts, raw_size, _compressed_size)
    payload: list[Any]
    meta = sealed.meta
    if chosen is None:
        payload, stored = list(parts), raw_size
    else:
        cctx = _compressor(chosen)
        if len(parts) == 1 and taken is not None and raw_size > SMALL_CHUNK_BYTES:
            into = buffers.compress_into(cctx, parts[0], raw_size)
            payload = [into.written]
            taken.append(into.buf)
        elif len(parts) == 1:
            payload = [cctx.compress(parts[0])]
        else:
            stream = cctx.compressobj(size=raw_size)
            payload = [piece for p in parts if (piece := stream.compress(p))]
            payload.append(stream.flush())
        stored = sum(len(p) for p in payload)
        if stored >= raw_size:  # incompressible: store it as is
            payload, stored = list(parts), raw_size
            chosen = None
    if chosen is None:
        meta = _replace_compression(meta, Compression.NONE)
    if sealed.stamps is not None:
        # Stamps are small and regular: the search pays there (level 3 under "auto").
        stamp_level = level if isinstance(level, int) else HIGH
        meta = dataclasses.replace(meta, stamps=_compressor(stamp_level).compress(sealed.stamps))
    meta_bytes = pack(meta.to_msgpack())
    prelude = pack_prelude(meta.kind, meta_bytes, stored, crc32(*payload))
    out = [prelude, meta_bytes, *payload]
    return meta, out, len(prelude) + len(meta_bytes) + stored


def _replace_compression(meta: ChunkMeta, compression: Compression) -> ChunkMeta:
    return dataclasses.replace(meta, compression=compression)
