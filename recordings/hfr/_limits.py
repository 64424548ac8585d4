"""Every read limit and memory budget of a ``.hfr`` reader, checked here and only here.

A ``.hfr`` file is untrusted input, so every reader checks what a file
declares against limits before it reads, decompresses or decodes anything
(``recordings/hfr/FORMAT.md``, docs/recordings.md "Hostile input"). The four
limits are one frozen :class:`ReadLimits`, which travels from
:func:`~recordings.open_recording` or :func:`~recordings.read_stream` down to
the checks, so a limit is named in one place and cannot be dropped on the way;
and every comparison against a limit is a method of it, so no other module
compares a size with a limit or raises :class:`~recordings.errors.LimitExceeded`
(``tests/recordings/test_read_walk.py`` holds the others to that):

* ``max_meta_bytes``: a record's meta, checked from its prelude
  (:meth:`ReadLimits.meta_refusal`, :meth:`ReadLimits.meta_fits`);
* ``max_chunk_bytes``: a chunk's stored and decompressed size, checked from
  its meta before its payload is read (:meth:`ReadLimits.admit_chunk`,
  :meth:`ReadLimits.check_chunk_size`, :meth:`ReadLimits.stream_refusal`), and
  the size of the footer's parts (:meth:`ReadLimits.footer_fits`);
* ``max_chunk_frames``: the frames one chunk may declare
  (:meth:`ReadLimits.admit`, :meth:`ReadLimits.counts`);
* ``max_decoded_bytes``: the memory the Python objects of the chunks in
  flight may take together (:meth:`ReadLimits.charge`,
  :meth:`ReadLimits.fit_together`), the **decoded-cost budget** below.

The budget. Decompression is bounded by the sizes a chunk's meta declares,
but the Python objects msgpack builds are not bytes: one byte (``0x80``, an
empty map) becomes a 64-byte dict, a 3-byte map a 232-byte one, and an
8-byte record a 300-byte frame. A 3 KB zstd frame can hold millions of
records. So a reader charges every chunk its **decoded cost** against
``max_decoded_bytes`` before decoding it:

* :func:`static_cost` bounds the cost from the meta alone: the raw buffer,
  :data:`FRAME_COST` per frame and :data:`RECORD_BYTE_COST` per byte of the
  msgpack region (the worst measured ratio of object bytes to msgpack bytes,
  rounded up). Almost every chunk passes here, at no cost.
* A chunk over that bound is walked (:func:`walked_cost`): the msgpack head is
  read type byte by type byte, without building anything, and each value
  costs what CPython would allocate for it; the walk stops as soon as the
  budget is spent. A chunk still over the budget is refused with
  :class:`~recordings.errors.LimitExceeded` naming it.

The seeking reader counts chunks decoded ahead (readahead) against the same
budget (:meth:`ReadLimits.fit_together`), so readahead never multiplies it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from recordings.errors import LimitExceeded
from recordings.hfr._layout import ChunkMeta

_Ints = np.ndarray[Any, np.dtype[np.int64]]
_Bools = np.ndarray[Any, np.dtype[np.bool_]]

FRAME_COST = 320
"""Bytes of Python objects per decoded frame (Frame, its ints, meta dict, record row)."""

RECORD_BYTE_COST = 128
"""Upper bound of object bytes per byte of msgpack (worst measured: ~125, a 1-entry map)."""

# Costs of the walk, per value, including the 8-byte slot that refers to it.
_SCALAR, _INT, _LIST, _MAP0, _MAP, _MAP_ITEM, _STR, _BIN, _EXT = 8, 40, 64, 72, 240, 64, 64, 48, 128


def static_cost(meta: ChunkMeta) -> int:
    """An upper bound of what decoding ``meta``'s chunk allocates, from its meta alone."""
    return meta.raw_size + meta.count * FRAME_COST + meta.records_size * RECORD_BYTE_COST


def walked_cost(data: bytes | memoryview, budget: int) -> int:
    """Object bytes the msgpack values in ``data`` decode to; stops once over ``budget``.

    Malformed input is not an error here (the decoder reports it); the walk
    just stops. Container lengths are counted against the bytes left, as
    every element takes at least one.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    n = len(buf)
    pos = 0
    cost = 0
    while pos < n and cost <= budget:
        b = buf[pos]
        pos += 1
        if b <= 0x7F or b in (0xC0, 0xC2, 0xC3):
            cost += _SCALAR
        elif b >= 0xE0 or 0xCA <= b <= 0xD3:
            cost += _INT
            pos += _FIXED.get(b, 0)
        elif b <= 0x8F or b in (0xDE, 0xDF):
            k, pos = (b & 0x0F, pos) if b <= 0x8F else _length(buf, pos, 2 if b == 0xDE else 4)
            cost += _MAP0 if k == 0 else _MAP + _MAP_ITEM * k
        elif b <= 0x9F or b in (0xDC, 0xDD):
            k, pos = (b & 0x0F, pos) if b <= 0x9F else _length(buf, pos, 2 if b == 0xDC else 4)
            cost += _LIST + 8 * k
        elif b <= 0xBF or 0xD9 <= b <= 0xDB or 0xC4 <= b <= 0xC6:
            if b <= 0xBF:
                k = b & 0x1F
            else:
                width = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4}[b]
                k, pos = _length(buf, pos, width)
            cost += (_STR if b <= 0xBF or b >= 0xD9 else _BIN) + k
            pos += k
        elif 0xC7 <= b <= 0xC9 or 0xD4 <= b <= 0xD8:
            if b >= 0xD4:
                k = 1 << (b - 0xD4)
            else:
                k, pos = _length(buf, pos, 1 << (b - 0xC7))
            # An array reference builds a view and maybe a structured dtype.
            cost += _EXT + 48 * (k + 2)
            pos += k + 1
        else:
            break  # 0xC1: never used; the decoder reports it
    return cost


_FIXED = {0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8, 0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}


def _length(buf: bytes, pos: int, width: int) -> tuple[int, int]:
    return int.from_bytes(buf[pos : pos + width], "big"), pos + width


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

    # -- record heads ------------------------------------------------------

    def meta_fits(self, meta_len: int) -> bool:
        """Whether a record meta of ``meta_len`` bytes is within ``max_meta_bytes``."""
        return meta_len <= self.max_meta_bytes

    def meta_refusal(self, meta_len: int, *, where: str, offset: int) -> LimitExceeded | None:
        """Why a record meta of ``meta_len`` bytes is refused unread, or ``None``."""
        if meta_len <= self.max_meta_bytes:
            return None
        return LimitExceeded(
            f"record meta of {meta_len} bytes is over the limit of {self.max_meta_bytes}",
            path=where,
            offset=offset,
        )

    # -- one chunk, from its meta, before its payload is read -----------------

    def admit_chunk(self, meta: ChunkMeta, stored: int, *, where: str) -> None:
        """Refuse (:class:`LimitExceeded`) a chunk of the seeking reader whose stored
        size, decompressed size, frame count or decoded floor is over a limit,
        before anything of it is read: :meth:`check_chunk_size` and :meth:`admit`
        after the stored size."""
        if stored > self.max_chunk_bytes:
            raise LimitExceeded(
                f"{meta.describe()} stores {stored} bytes, over the limit of "
                f"{self.max_chunk_bytes}; refusing to read it",
                path=where or None,
                offset=meta.offset,
            )
        self.check_chunk_size(meta, where=where)
        self.admit(meta, where=where)

    def stream_refusal(self, meta: ChunkMeta, stored: int, *, where: str) -> LimitExceeded | None:
        """Why the streaming reader skips a chunk unread (stored or decompressed size
        over ``max_chunk_bytes``, then :meth:`admit`'s checks), or ``None``."""
        limit = self.max_chunk_bytes
        if stored > limit or meta.raw_size > limit:
            return LimitExceeded(
                f"{meta.describe()} declares {max(stored, meta.raw_size)} bytes, over "
                f"the limit of {limit}; skipping it unread",
                path=where,
                offset=meta.offset,
            )
        try:
            self.admit(meta, where=where)
        except LimitExceeded as err:
            return err
        return None

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

    def admit(self, meta: ChunkMeta, *, where: str) -> None:
        """Refuse a chunk whose declared frames or raw size alone are over the limits
        (``max_chunk_frames``, ``max_decoded_bytes``)."""
        if meta.count > self.max_chunk_frames:
            raise LimitExceeded(
                f"{meta.describe()} declares {meta.count} frames, over the limit of "
                f"{self.max_chunk_frames} (max_chunk_frames); refusing to decode it",
                path=where or None,
                offset=meta.offset,
            )
        floor = meta.raw_size + meta.count * FRAME_COST
        if floor > self.max_decoded_bytes:
            raise _over(meta, floor, self.max_decoded_bytes, where)

    @overload
    def counts(self, declared: int) -> bool: ...
    @overload
    def counts(self, declared: _Ints) -> _Bools: ...
    def counts(self, declared: int | _Ints) -> bool | _Bools:
        """Whether a chunk declaring ``declared`` frames (or each of an array of counts)
        is within ``max_chunk_frames``: one over it is refused when read, so no total
        adds its count."""
        return declared <= self.max_chunk_frames

    # -- the footer's parts -------------------------------------------------

    def footer_fits(self, nbytes: int, *, slack: int = 0) -> bool:
        """Whether a footer part (the chunk table, the stamp index, the frame details) of
        ``nbytes`` bytes, or one sensor's column of one decoded, is within
        ``max_chunk_bytes``; ``slack`` is what the part's framing or meta may add to
        its data (a part over it is not used: the reader takes the slower way)."""
        return nbytes <= self.max_chunk_bytes + slack

    # -- the decoded-cost budget ---------------------------------------------

    def charge(self, head: bytes | memoryview, meta: ChunkMeta, *, where: str) -> int:
        """The chunk's decoded cost (its msgpack ``head`` walked only when the static
        bound is over the budget), at most ``max_decoded_bytes``; raises
        :class:`LimitExceeded` beyond it."""
        budget = self.max_decoded_bytes
        cost = static_cost(meta)
        if cost <= budget:
            return cost
        walked = meta.raw_size + meta.count * FRAME_COST
        walked += walked_cost(head, budget - walked)
        if walked > budget:
            raise _over(meta, walked, budget, where)
        return walked

    def fit_together(self, metas: Iterable[ChunkMeta]) -> bool:
        """Whether the chunks of ``metas``, decoded at once (readahead), fit the budget
        by their static costs."""
        return sum(map(static_cost, metas)) <= self.max_decoded_bytes


DEFAULT_LIMITS = ReadLimits()
"""The limits of a reader told nothing else."""


def _over(meta: ChunkMeta, cost: int, budget: int, where: str) -> LimitExceeded:
    return LimitExceeded(
        f"{meta.describe()} would decode to about {cost} bytes of objects, over the budget "
        f"of {budget} (max_decoded_bytes); refusing to decode it",
        path=where or None,
        offset=meta.offset,
    )
