"""The messages of a ROS 1 bag, read from its index with ``struct`` (no header objects).

Why: ``rosbags``' ROS 1 reader walks its per-connection indexes through
``heapq.merge`` and parses every record header into a ``Header`` object of
name/value strings; for bags of small messages that is most of the cost of
reading them. Here the same index entries ``(time, chunk, offset)`` are
sorted once (the order ``heapq.merge`` gives), each chunk is decompressed once
with rosbags' own decompressor, and a record header is scanned only for its
``op`` field. The result is what rosbags yields: ``(connection, log time,
bytes)`` in index order.

A record that is not message data where the index points (after any
connection records, which rosbags skips too) raises :class:`DamagedRecord`,
as rosbags raises its ``ReaderError``, so the caller's damage handling is the
same.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Generator
from typing import Any

from adapters.bags import _compat_rosbags as compat

_U32 = struct.Struct("<I").unpack_from
_OP_MSGDATA = 0x02
_OP_CONNECTION = 0x07


class DamagedRecord(Exception):
    """Index and chunk disagree: no message data where the index points."""


def usable(reader: Any) -> bool:
    """Whether ``reader`` (rosbags' open ROS 1 ``Reader``) has what this module reads
    (:mod:`~adapters.bags._compat_rosbags`)."""
    return compat.ros1_indexed(reader)


class ChunkCache:
    """The one decompressed chunk kept between messages (dropped after an error)."""

    def __init__(self) -> None:
        self.pos = -1
        self.data = b""

    def forget(self) -> None:
        self.pos, self.data = -1, b""


def ros1_messages(
    reader: Any,
    connections: Collection[Any],
    start: int | None,
    stop: int | None,
    cache: ChunkCache,
) -> Generator[tuple[Any, int, bytes], None, None]:
    """``(connection, log time, bytes)`` of ``connections``, ``start``/``stop`` half-open."""
    entries: list[tuple[int, int, int]] = []
    for conn in connections:
        entries += compat.ros1_entries(reader, conn.id)
    entries.sort()
    byid = {c.id: c for c in connections}
    for time, chunk_pos, offset in entries:
        if start is not None and time < start:
            continue
        if stop is not None and time >= stop:
            return
        if cache.pos != chunk_pos:
            cache.forget()
            records = compat.ros1_chunk(reader, chunk_pos)
            if records is None:
                raise DamagedRecord(f"chunk at byte {chunk_pos} is cut short")
            cache.data, cache.pos = records, chunk_pos
        data = cache.data
        pos = offset
        while True:
            hlen = _U32(data, pos)[0]
            op, conn_id = _op_conn(data, pos + 4, pos + 4 + hlen)
            pos += 4 + hlen
            dlen = _U32(data, pos)[0]
            pos += 4
            if op != _OP_CONNECTION:
                break
            pos += dlen
        if op != _OP_MSGDATA or pos + dlen > len(data):
            raise DamagedRecord(f"no message data at offset {offset} of chunk {chunk_pos}")
        conn = byid.get(conn_id)
        if conn is None:
            raise DamagedRecord(f"message data of connection {conn_id} where the index points")
        yield conn, time, data[pos : pos + dlen]


def _op_conn(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The ``op`` and ``conn`` fields of a record header (``-1`` when absent)."""
    op = conn = -1
    while pos < end:
        flen = _U32(data, pos)[0]
        field = pos + 4
        if data[field : field + 3] == b"op=":
            op = data[field + 3]
        elif data[field : field + 5] == b"conn=":
            conn = _U32(data, field + 5)[0]
        pos = field + flen
    if pos != end:
        raise DamagedRecord("a record header runs past its end")
    return op, conn
