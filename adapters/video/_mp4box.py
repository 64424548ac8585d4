"""The edit lists of an MP4/MOV file, read from its box headers (no decoding).

An edit list (``moov/trak/edts/elst``) maps a track's media time to the
presentation: phones use it to hide pre-roll packets (FFmpeg then marks them
*discard*) or to start the video later than 0. FFmpeg applies it but does
not say whether a track has one, so :func:`edit_lists` reads the boxes:
seeking over everything but ``moov``, so a large file costs a few reads.

Only what we report is parsed: per track ID, the entries as
``(segment_duration, media_time, rate)``. A file that is not a readable MP4
gives an empty dict. File contents never become paths or markup here: sizes
and counts are checked against the file before use.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

EditList = list[tuple[int, int, float]]
_CONTAINERS = {b"moov", b"trak", b"edts", b"mdia"}
_MAX_ENTRIES = 4096


def edit_lists(path: str) -> dict[int, EditList]:
    """``{track_id: [(segment_duration, media_time, rate), ...]}`` of every track with an
    ``elst`` box; empty when the file is not an MP4 or cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(0)
            out: dict[int, EditList] = {}
            _walk(f, 0, size, None, out, 0)
            return out
    except (OSError, ValueError, struct.error):
        return {}


def _walk(
    f: BinaryIO, start: int, end: int, track: list[int] | None, out: dict[int, EditList], depth: int
) -> None:
    pos = start
    while pos + 8 <= end and depth < 6:
        f.seek(pos)
        head = f.read(8)
        if len(head) < 8:
            return
        size, kind = struct.unpack(">I4s", head)
        header = 8
        if size == 1:
            size = struct.unpack(">Q", f.read(8))[0]
            header = 16
        elif size == 0:
            size = end - pos
        if size < header:
            return
        box_end = min(pos + size, end)  # a box claiming more than the file holds is cut
        if kind in _CONTAINERS:
            inner = [0] if kind == b"trak" else track
            _walk(f, pos + header, box_end, inner, out, depth + 1)
        elif kind == b"tkhd" and track is not None:
            version = f.read(1)[0]
            f.read(3)
            f.read(16 if version == 1 else 8)  # creation and modification times
            track[0] = struct.unpack(">I", f.read(4))[0]
        elif kind == b"elst" and track is not None:
            out[track[0]] = _elst(f, box_end)
        pos += size


def _elst(f: BinaryIO, end: int) -> EditList:
    version = f.read(1)[0]
    f.read(3)
    count = struct.unpack(">I", f.read(4))[0]
    entry = 20 if version == 1 else 12
    count = min(count, _MAX_ENTRIES, max(0, (end - f.tell()) // entry))
    entries: EditList = []
    for _ in range(count):
        if version == 1:
            duration, media_time = struct.unpack(">Qq", f.read(16))
        else:
            duration, media_time = struct.unpack(">Ii", f.read(8))
        whole, frac = struct.unpack(">hH", f.read(4))
        entries.append((duration, media_time, whole + frac / 65536))
    return entries
