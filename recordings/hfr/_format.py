"""Constants of the ``.hfr`` byte layout: magics, version, record kinds, limits.

The full specification is ``recordings/hfr/FORMAT.md``; this module is its single
source of numbers. In short::

    file     := preamble record* [trailer]
    preamble := MAGIC(8) major:u16 minor:u16 flags:u32            (16 bytes)
    record   := prelude meta payload
    prelude  := SYNC(3) kind:u8 meta_len:u32 payload_len:u64
                meta_crc:u32 payload_crc:u32                       (24 bytes)
    trailer  := index_offset:u64 crc:u32 END_MAGIC(8)             (20 bytes)

``meta`` is a msgpack map; ``meta_crc`` covers the first 16 prelude bytes and
the meta bytes, so a reader trusts a record's lengths only once they check out.
``payload_crc`` covers the payload as stored (compressed, for a chunk), so a
chunk is verified without decompressing it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from enum import IntEnum

from recordings.errors import RecordingError, TruncatedRecording, UnsupportedVersion

MAGIC = b"\x89HFR\r\n\x1a\n"
"""First 8 bytes of every ``.hfr`` file (PNG-style: catches text-mode mangling)."""

END_MAGIC = b"\x89HFREND\n"
"""Last 8 bytes of a file whose writer closed it (the trailer is present)."""

SYNC = b"HFR"
"""First 3 bytes of every record prelude: lets a reader resynchronise after damage."""

VERSION_MAJOR = 1
"""Bumped for changes an older reader cannot read; such a reader refuses the file."""

VERSION_MINOR = 8
"""Bumped for additions (new meta keys, new record kinds) an older reader can skip."""

PREAMBLE = struct.Struct("<8sHHI")
PRELUDE = struct.Struct("<3sBIQII")
TRAILER = struct.Struct("<QI8s")


class RecordKind(IntEnum):
    """The ``kind`` byte of a record prelude."""

    HEADER = 1
    """Sensor specs and user metadata; the first record of a file."""
    CHUNK = 2
    """A zstd-compressed batch of frames, described by its meta."""
    INDEX = 3
    """The footer index: every chunk's meta and offset, written by ``close()``."""
    COLUMNS = 4
    """A chunk whose small arrays are stored as columns (format 1.1, ``_columns.py``)."""
    STAMPS = 5
    """Every frame's stamps as columns, between the INDEX and the trailer (format 1.5,
    ``recordings/hfr/_stamp_index.py``)."""
    DETAILS = 6
    """What ``info`` reports of every frame beyond its stamps, right before the INDEX
    (format 1.6, ``recordings/hfr/_details.py``)."""
    TABLE = 7
    """The footer index's chunk list as columns, right before the INDEX (format 1.7,
    ``recordings/hfr/_chunk_table.py``)."""
    PACKED_STAMPS = 8
    """The stamp index with its delta columns' frames packed (format 1.8, in STAMPS' place;
    ``recordings/hfr/_stamp_index.py``): an older reader finds no stamp index there."""


CHUNK_KINDS = frozenset({RecordKind.CHUNK, RecordKind.COLUMNS})
"""Record kinds that hold frames."""


class Compression(IntEnum):
    """How a chunk payload is stored (``meta["z"]``)."""

    NONE = 0
    ZSTD = 1


EXT_NDARRAY = 1
"""msgpack extension code of an array reference: ``[blob_offset, dtype, shape]``."""

EXT_COLUMN = 2
"""msgpack extension code of a column reference (COLUMNS chunks, 1.1): like
:data:`EXT_NDARRAY`, its offset counted from the start of the column region."""

DEFAULT_CHUNK_BYTES = 2 * 1024 * 1024
"""Raw bytes after which the recorder closes a chunk.

2 MiB, not more: zstd level 3 costs more per byte on larger frames of noisy
camera and LiDAR payloads (CPU for 174 MB of them in 1/2/4 MiB chunks:
0.30/0.33/0.37 s, measured in one run) while the ratio gains under 0.1 %;
at 2 MiB the file is still smaller than mcap's at its 1 MiB default."""

DEFAULT_CHUNK_DURATION = 1.0
"""Seconds of recording time (frame ``t``) after which the recorder closes a chunk, so
one damaged chunk costs at most about this much of every sensor's data."""

DEFAULT_FLUSH_INTERVAL = 1.0
"""Seconds after which an open chunk is written even if small: the most a crash loses."""

BLOB_ALIGN = 64
"""Arrays inside a raw chunk start at multiples of this, so views are SIMD-aligned."""


def _crc32_impl() -> Callable[[bytes | bytearray | memoryview, int], int]:
    """ISA-L's CRC-32 when ``isal`` is installed, else zlib's: the same polynomial and values.

    Why: every chunk's stored bytes are checksummed when written and again when
    read, and zlib 1.2's CRC runs at about 2.3 GB/s on one core, ISA-L's
    (carry-less multiply) at about 13: on 174 MB of camera frames and LiDAR
    sweeps that is 0.06 s of the recorder's 0.5 CPU-s saved on each side.
    """
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - a platform without isal wheels
        return zlib.crc32
    fast: Callable[[bytes | bytearray | memoryview, int], int] = isal_zlib.crc32
    return fast


_crc32 = _crc32_impl()


def crc32(*parts: bytes | bytearray | memoryview) -> int:
    """CRC-32 (zlib polynomial) over the concatenation of ``parts``."""
    crc = 0
    for part in parts:
        crc = _crc32(part, crc)
    return crc


def pack_preamble(major: int = VERSION_MAJOR, minor: int = VERSION_MINOR) -> bytes:
    return PREAMBLE.pack(MAGIC, major, minor, 0)


def unpack_preamble(head: bytes, *, path: str, source: str = "file") -> tuple[int, int]:
    """The ``(major, minor)`` version of a preamble, the first bytes of a ``source``.

    Raises :class:`~recordings.errors.TruncatedRecording` when ``head`` is a cut-off
    preamble, :class:`~recordings.errors.RecordingError` when it is not one at all, and
    :class:`~recordings.errors.UnsupportedVersion` for a major version this reader does
    not read.
    """
    if len(head) < PREAMBLE.size or head[:8] != MAGIC:
        if len(head) < PREAMBLE.size and MAGIC.startswith(head[:8]):
            raise TruncatedRecording(
                f"the {source} ends after {len(head)} bytes, inside its preamble",
                path=path,
                offset=len(head),
            )
        raise RecordingError("not a hyperframes recording (bad magic bytes)", path=path, offset=0)
    _, major, minor, _flags = PREAMBLE.unpack(head)
    if major != VERSION_MAJOR:
        raise UnsupportedVersion(
            f"Recording has format version {major}.{minor}; this reader supports {VERSION_MAJOR}.x",
            path=path,
            offset=8,
        )
    return major, minor


def pack_prelude(kind: int, meta: bytes, payload_len: int, payload_crc: int) -> bytes:
    """The 24-byte prelude of a record whose meta bytes are ``meta``."""
    head = PRELUDE.pack(SYNC, kind, len(meta), payload_len, 0, 0)[:16]
    return head + struct.pack("<II", crc32(head, meta), payload_crc)


def pack_trailer(index_offset: int) -> bytes:
    raw = struct.pack("<Q", index_offset)
    return TRAILER.pack(index_offset, crc32(raw), END_MAGIC)
