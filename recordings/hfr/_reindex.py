"""Upgrade a recording to format 1.6: the same records, stamp blocks, a stamp index and
the frame details.

Theory of operation. Files before 1.4 keep their stamps only inside the
compressed payloads, so ``sync`` has to decompress every chunk; files before
1.5 have no footer stamp index, so it parses every chunk meta; files before
1.6 have no frame details, so ``info`` reads every frame.
:func:`reindex` writes a copy in which every chunk meta (and the footer
index) also carries the chunk's stamp block, and the footer is followed by
the stamp index, with the frame details before the index
(``recordings/hfr/FORMAT.md``). It changes nothing else: the
HEADER record and every payload are copied byte for byte (so wall-clock
anchors, specs, metadata and compression stay), the footer keeps the
source's sensors and input ledger, and only the chunk metas, their CRCs,
the index and the stamp index are new. Each chunk is decoded once, through
the frame reader's own validation, to read its frames' stamps; a recording
with any damage is refused (``hyperframes check --repair`` first), so the
copy never claims stamps a reader would reject.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import zstandard

from recordings.errors import RecordingError
from recordings.hfr._details import DetailsWriter, chunk_details
from recordings.hfr._format import (
    PRELUDE,
    TRAILER,
    RecordKind,
    pack_preamble,
    pack_prelude,
    pack_trailer,
)
from recordings.hfr._reader import Recording
from recordings.hfr._stamp_block import stamp_table
from recordings.hfr._stamp_index import StampIndexWriter

__all__ = ["reindex"]

_PREAMBLE_BYTES = 16


def reindex(log: Recording, out: str | os.PathLike[str]) -> int:
    """Write ``log`` to ``out`` as format 1.6 (stamp blocks, stamp index, frame details);
    returns the chunk count.

    ``log`` must have been closed by its writer (a footer index) and be free
    of damage; ``RecordingError`` says otherwise.
    """
    if not log.indexed:
        raise RecordingError(f"{log.path}: no footer index; run check --repair first")
    if log.verify():
        raise RecordingError(f"{log.path}: damaged; run check --repair first")
    cctx = zstandard.ZstdCompressor(write_content_size=True)
    table = StampIndexWriter(spool=True)
    details = DetailsWriter(spool=True)
    fd = os.open(log.path, os.O_RDONLY)
    try:
        header = _record(fd, _PREAMBLE_BYTES)
        size = os.fstat(fd).st_size
        index_offset = TRAILER.unpack(os.pread(fd, TRAILER.size, size - TRAILER.size))[0]
        index_meta: dict[str, Any] = msgpack.unpackb(
            _record(fd, index_offset)[PRELUDE.size :], raw=False, strict_map_key=False
        )
        entries = []
        with Path(out).open("wb") as f:
            f.write(pack_preamble())
            f.write(header)
            at = _PREAMBLE_BYTES + len(header)
            for chunk in log.chunks:
                record = _record(fd, chunk.offset)
                _, _, meta_len, payload_len, _, payload_crc = PRELUDE.unpack(record[: PRELUDE.size])
                payload = record[PRELUDE.size + meta_len :]
                frames = list(log.decode_chunk(chunk).frames())
                index = {name: i for i, name in enumerate(chunk.sensors)}
                rows = [(index[fr.sensor], fr.seq, fr.t, fr.t_arrival) for fr in frames]
                raw = stamp_table(len(frames), np.full(len(frames), 255, np.uint8), [], rows)
                sensor = np.array([r[0] for r in rows], np.int64)
                details.add(chunk.sensors, sensor, chunk_details(frames, index))
                table.add(
                    chunk.sensors,
                    sensor,
                    np.array([r[1] for r in rows], np.int64),
                    np.array([r[2] for r in rows], np.int64),
                    np.array([0 if r[3] is None else r[3] for r in rows], np.int64),
                    np.array([r[3] is not None for r in rows], np.uint8),
                )
                meta = dataclasses.replace(chunk, stamps=cctx.compress(raw))
                meta_bytes = msgpack.packb(meta.to_msgpack(), use_bin_type=True)
                f.write(pack_prelude(chunk.kind, meta_bytes, payload_len, payload_crc))
                f.write(meta_bytes)
                f.write(payload)
                entry = meta.to_msgpack()
                entry["off"] = at
                entry["len"] = payload_len
                entries.append(entry)
                at += PRELUDE.size + len(meta_bytes) + payload_len
            index_meta["chunks"] = entries  # with their blocks: no chunk table (1.7) needed
            index_meta.pop("table", None)  # the input's points into the input
            found = details.record()
            if found is not None:
                pieces, length = found
                for piece in pieces:
                    f.write(piece)
                index_meta["details"] = [at, length]
                at += length
            packed = msgpack.packb(index_meta, use_bin_type=True)
            f.write(pack_prelude(RecordKind.INDEX, packed, 0, 0))
            f.write(packed)
            for piece in table.record() or []:
                f.write(piece)
            f.write(pack_trailer(at))
            f.flush()
            os.fsync(f.fileno())
    finally:
        os.close(fd)
    return len(entries)


def _record(fd: int, offset: int) -> bytes:
    """The whole record at ``offset`` (prelude, meta, payload), as stored."""
    head = os.pread(fd, PRELUDE.size, offset)
    _, _, meta_len, payload_len, _, _ = PRELUDE.unpack(head)
    length = PRELUDE.size + meta_len + payload_len
    data = os.pread(fd, length, offset)
    if len(data) != length:
        raise RecordingError(f"record at byte {offset} runs past the end of the file")
    return data
