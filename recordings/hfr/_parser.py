"""What a record's meta says, as the readers keep it: chunk metas, the index, specs.

Theory of operation. A record's head (its prelude and meta, verified by the
meta CRC) is parsed by :func:`recordings.hfr._chunk_reader.parse_record_head`;
the functions here turn a head's meta into what the readers keep, so they are
written once for the seeking reader (:mod:`recordings.hfr._locate`) and the
streaming reader (:mod:`recordings.hfr._stream`): :func:`parse_chunk_meta`,
:func:`parse_index`, :func:`header_contents` and :func:`parse_specs`. Every
integer is range-checked and every field type-checked here, before a reader does
arithmetic or I/O with it.
"""

from __future__ import annotations

from typing import Any

from fusion import SensorSpec
from recordings.errors import CorruptChunk
from recordings.hfr._chunk_reader import RecordHead
from recordings.hfr._format import PREAMBLE, PRELUDE
from recordings.hfr._layout import ChunkMeta, spec_from_wire


def parse_chunk_meta(head: RecordHead, *, where: str) -> ChunkMeta | CorruptChunk:
    """The :class:`ChunkMeta` of a chunk record's head, or why it does not parse."""
    try:
        return ChunkMeta.from_msgpack(
            head.meta, offset=head.offset, stored_size=head.payload_len, kind=head.kind
        )
    except Exception as err:
        return CorruptChunk(f"a chunk meta does not parse ({err})", path=where, offset=head.offset)


def header_contents(meta: Any) -> tuple[list[SensorSpec], dict[str, Any] | None]:
    """The sensor specs and user metadata of a header record's meta (bad entries left out)."""
    if not isinstance(meta, dict):
        return [], None
    metadata = meta.get("metadata")
    return parse_specs(meta.get("sensors")), metadata if isinstance(metadata, dict) else None


def parse_specs(specs: Any) -> list[SensorSpec]:
    """Sensor specs from their stored form; entries that do not parse are left out."""
    if not isinstance(specs, list | tuple):
        return []
    out = []
    for d in specs:
        try:
            out.append(spec_from_wire(d))
        except Exception:
            continue
    return out


def parse_index(meta: Any, *, index_offset: int, where: str) -> list[ChunkMeta] | CorruptChunk:
    """The chunk list of a footer index's meta, or why it cannot be trusted.

    Every entry is checked before it is used: a map whose ``off`` and ``len``
    are integers placing a whole record between the header and the index, in
    increasing order and without overlap; a chunk listed twice, entries out
    of order or any entry that does not parse make the whole index untrusted
    (the caller scans the chunks instead, which finds each one once).
    """
    if not isinstance(meta, dict) or not isinstance(meta.get("chunks"), list):
        return CorruptChunk(
            "the footer index has no chunk list; scanning instead", path=where, offset=index_offset
        )
    chunks: list[ChunkMeta] = []
    seen: set[int] = set()
    end = PREAMBLE.size
    for n, e in enumerate(meta["chunks"]):
        problem = None
        if not isinstance(e, dict):
            problem = "is not a map"
        else:
            off, length = e.get("off"), e.get("len")
            if type(off) is not int or type(length) is not int:
                problem = "has a non-integer offset or length"
            elif off in seen:
                problem = f"lists the chunk at offset {off} again"
            elif not end <= off or length < 0 or off + PRELUDE.size + length > index_offset:
                problem = (
                    f"places a record of {length} payload bytes at offset {off}, outside "
                    f"the chunk region or overlapping the entry before"
                )
            else:
                try:
                    chunks.append(ChunkMeta.from_msgpack(e, offset=off, stored_size=length))
                except Exception as err:
                    problem = f"does not parse ({err})"
                else:
                    seen.add(off)
                    end = off + PRELUDE.size + length
        if problem is not None:
            return CorruptChunk(
                f"footer index entry {n} {problem}; scanning the chunks instead",
                path=where,
                offset=index_offset,
            )
    return chunks
