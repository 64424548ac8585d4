"""How much memory decoding a chunk may take: checked before any object is built.

Theory of operation. Decompression is bounded by the sizes a chunk's meta
declares (``max_chunk_bytes``; the limits are one
:class:`~recordings.hfr._limits.ReadLimits`), but the Python objects msgpack builds are
not bytes: one byte (``0x80``, an empty map) becomes a 64-byte dict, a
3-byte map a 232-byte one, and an 8-byte record a 300-byte frame. A 3 KB
zstd frame can hold millions of records. So a reader charges every chunk its
**decoded cost** against a budget (``max_decoded_bytes``) before decoding it:

* :func:`static_cost` bounds the cost from the meta alone: the raw buffer,
  :data:`FRAME_COST` per frame and :data:`RECORD_BYTE_COST` per byte of the
  msgpack region (the worst measured ratio of object bytes to msgpack bytes,
  rounded up). Almost every chunk passes here, at no cost.
* A chunk over that bound is walked (:func:`walked_cost`): the msgpack head is
  read type byte by type byte, without building anything, and each value
  costs what CPython would allocate for it; the walk stops as soon as the
  budget is spent. A chunk still over the budget is refused with
  :class:`~recordings.errors.LimitExceeded` naming it.

``max_chunk_frames`` bounds the frame count the same way, before the payload
is read. The seeking reader counts chunks decoded ahead (readahead) against
the same budget, so readahead never multiplies it.
"""

from __future__ import annotations

from recordings.errors import LimitExceeded
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._limits import ReadLimits

FRAME_COST = 320
"""Bytes of Python objects per decoded frame (Frame, its ints, meta dict, record row)."""

RECORD_BYTE_COST = 128
"""Upper bound of object bytes per byte of msgpack (worst measured: ~125, a 1-entry map)."""

# Costs of the walk, per value, including the 8-byte slot that refers to it.
_SCALAR, _INT, _LIST, _MAP0, _MAP, _MAP_ITEM, _STR, _BIN, _EXT = 8, 40, 64, 72, 240, 64, 64, 48, 128


def static_cost(meta: ChunkMeta) -> int:
    """An upper bound of what decoding ``meta``'s chunk allocates, from its meta alone."""
    return meta.raw_size + meta.count * FRAME_COST + meta.records_size * RECORD_BYTE_COST


def admit(meta: ChunkMeta, limits: ReadLimits, *, where: str) -> None:
    """Refuse a chunk whose declared frames or raw size alone are over ``limits``
    (``max_chunk_frames``, ``max_decoded_bytes``)."""
    if meta.count > limits.max_chunk_frames:
        raise LimitExceeded(
            f"{meta.describe()} declares {meta.count} frames, over the limit of "
            f"{limits.max_chunk_frames} (max_chunk_frames); refusing to decode it",
            path=where or None,
            offset=meta.offset,
        )
    floor = meta.raw_size + meta.count * FRAME_COST
    if floor > limits.max_decoded_bytes:
        raise _over(meta, floor, limits.max_decoded_bytes, where)


def decoded_cost(head: bytes | memoryview, meta: ChunkMeta, *, budget: int, where: str) -> int:
    """The chunk's decoded cost, at most ``budget``; raises :class:`LimitExceeded` beyond it."""
    cost = static_cost(meta)
    if cost <= budget:
        return cost
    walked = meta.raw_size + meta.count * FRAME_COST
    walked += walked_cost(head, budget - walked)
    if walked > budget:
        raise _over(meta, walked, budget, where)
    return walked


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


def _over(meta: ChunkMeta, cost: int, budget: int, where: str) -> LimitExceeded:
    return LimitExceeded(
        f"{meta.describe()} would decode to about {cost} bytes of objects, over the budget "
        f"of {budget} (max_decoded_bytes); refusing to decode it",
        path=where or None,
        offset=meta.offset,
    )
