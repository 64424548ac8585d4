"""The messages of an indexed MCAP file, read chunk by chunk with ``struct`` (no record objects).

Why: ``rosbags``' MCAP reader builds a ``BytesIO`` and a named tuple per message
and merges every chunk through ``heapq``; for bags of small messages that is
most of the cost of reading them. Here a chunk is decompressed once (its CRC
checked, as rosbags does), its Message records are cut out of the buffer with
one ``unpack_from`` each, and chunks are read in log-time order. The result is
what rosbags yields: ``(connection, log time, bytes)`` in log-time order,
messages of equal log time in file order.

Only the common layout takes this path: an MCAP file with a chunk index whose
chunks do not overlap in time. Anything else (no index, overlapping chunks)
goes through rosbags' own reader. A chunk that does not decompress or whose
CRC does not match raises :class:`DamagedChunk`, as rosbags raises its
``ReaderError``, so the caller's damage handling is the same.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Generator, Mapping
from typing import Any

from adapters.bags import _compat_rosbags as compat

_RECORD = struct.Struct("<BQ")
_MESSAGE = struct.Struct("<BQHIQ")  # opcode, length, channel id, sequence, log time
_CRC = struct.Struct("<I")
_OP_MESSAGE = 0x05


MAX_CHUNK_BYTES = 1 << 30
"""The largest chunk read, decompressed (the recordings' default limit too)."""


class DamagedChunk(Exception):
    """A chunk that does not decompress, has the wrong size or fails its CRC."""


def indexed(storage: Any) -> bool:
    """Whether ``storage`` (rosbags' ``McapReader``, read through
    :mod:`~adapters.bags._compat_rosbags`) can be read here."""
    chunks = compat.mcap_chunks(storage)
    if not chunks or compat.mcap_file(storage) is None:
        return False
    ordered = sorted(chunks, key=lambda c: (c.message_start_time, c.chunk_start_offset))
    return all(a.message_end_time < b.message_start_time for a, b in itertools.pairwise(ordered))


def chunk_messages(
    storage: Any, channels: Mapping[int, Any], start: int | None, stop: int | None
) -> Generator[tuple[Any, int, bytes], None, None]:
    """``(connection, log time, bytes)`` of the channels in ``channels`` (id -> connection).

    ``start``/``stop`` are half-open log times; ``storage`` must pass :func:`indexed`.
    """
    lo = -1 if start is None else start
    hi = 1 << 64 if stop is None else stop
    chunks = sorted(
        compat.mcap_chunks(storage), key=lambda c: (c.message_start_time, c.chunk_start_offset)
    )
    bio = compat.mcap_file(storage)
    size = bio.seek(0, 2)
    for chunk in chunks:
        if chunk.message_end_time < lo or chunk.message_start_time >= hi:
            continue
        if chunk.channel_count and not any(chunk.channel_count.get(c) for c in channels):
            continue
        buf = _chunk_records(bio, chunk, size)
        out: list[tuple[Any, int, bytes]] = []
        pos, end = 0, len(buf)
        unpack = _MESSAGE.unpack_from
        ordered = True
        last = -1
        while pos + 9 <= end:
            if buf[pos] == _OP_MESSAGE and pos + 31 <= end:  # one unpack for a message
                _, length, cid, _, log_time = unpack(buf, pos)
            else:
                _, length = _RECORD.unpack_from(buf, pos)
                cid = -1
            body = pos + 9
            if cid >= 0 and length >= 22:
                conn = channels.get(cid)
                if conn is not None and lo <= log_time < hi:
                    out.append((conn, log_time, buf[body + 22 : body + length]))
                    if log_time < last:
                        ordered = False
                    last = log_time
            pos = body + length
        if pos != end:
            at = chunk.chunk_start_offset
            raise DamagedChunk(f"chunk at byte {at}: a record runs past its end")
        if not ordered:
            out.sort(key=lambda m: m[1])
        yield from out


def _chunk_records(bio: Any, chunk: Any, size: int) -> bytes:
    """A chunk's records, decompressed and checked; ``size``: the file's, in bytes."""
    where = f"chunk at byte {chunk.chunk_start_offset}"
    records = chunk.chunk_start_offset + 9 + 40 + len(chunk.compression)
    if chunk.chunk_start_offset < 0 or records + chunk.compressed_size > size:
        # a damaged index: nothing sought or read outside the file (a seek that far fails,
        # a read that long would allocate it)
        raise DamagedChunk(
            f"{where} runs past the file's end (the file is cut short, or its index damaged)"
        )
    bio.seek(chunk.chunk_start_offset + 9 + 24)
    head = bio.read(4)
    if len(head) != 4:
        raise DamagedChunk(f"{where} is cut short")
    (crc,) = _CRC.unpack(head)
    bio.seek(records)
    data = bio.read(chunk.compressed_size)
    if len(data) != chunk.compressed_size:
        raise DamagedChunk(f"{where} is cut short")
    return decompress_chunk(chunk.compression, data, chunk.uncompressed_size, crc, where)


def decompress_chunk(compression: str, data: bytes, size: int, crc: int, where: str) -> bytes:
    """A chunk's records from its stored bytes, checked against its header's size and CRC
    (0: none); ``where`` names the chunk in the messages.

    The header's size is checked before anything that large is allocated: over
    :data:`MAX_CHUNK_BYTES`, or not what a zstd frame's own header says, the chunk is
    damaged; an lz4 frame is decompressed to at most ``size`` bytes.
    """
    if size > MAX_CHUNK_BYTES:
        raise DamagedChunk(
            f"{where}: its header says {size} bytes decompressed, over the {MAX_CHUNK_BYTES} "
            "a chunk may hold here (a damaged header, or a file this reader does not take)"
        )
    try:
        if compression == "":
            raw = data
        elif compression == "zstd":
            raw = _unzstd(data, size, where)
        elif compression == "lz4":
            raw = _unlz4(data, size, where)
        else:
            raise DamagedChunk(f"{where}: unsupported chunk compression {compression!r}")
    except DamagedChunk:
        raise
    except Exception as err:  # zstandard.ZstdError, lz4's RuntimeError
        raise DamagedChunk(f"{where} does not decompress ({err})") from err
    if len(raw) != size:
        raise DamagedChunk(f"{where}: {len(raw)} bytes decompressed, its header says {size}")
    if crc and zlib.crc32(raw) != crc:
        raise DamagedChunk(f"{where}: CRC mismatch")
    return bytes(raw)


def _unzstd(data: bytes, size: int, where: str) -> bytes:
    import zstandard

    declared = zstandard.frame_content_size(data)
    if declared not in (-1, size):  # -1: the frame does not say; then size bounds the output
        raise DamagedChunk(f"{where}: its zstd frame says {declared} bytes, its header {size}")
    return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)


def _unlz4(data: bytes, size: int, where: str) -> bytes:
    from lz4.frame import LZ4FrameDecompressor  # type: ignore[import-untyped]

    decompressor = LZ4FrameDecompressor()
    raw: bytes = decompressor.decompress(data, max_length=size)
    if not decompressor.eof:
        raise DamagedChunk(
            f"{where}: its lz4 frame is cut short, or holds more than the {size} bytes "
            "its header says"
        )
    return raw
