"""Columnar chunks (record kind ``COLUMNS``, format 1.1): small arrays stored as columns.

Theory of operation. A 1.0 chunk stores one msgpack record per frame, so
writing and reading cost Python work per frame: fine for a camera image,
ruinous for 200,000 IMU samples of 48 bytes. A columnar chunk groups the
frames whose payload is one small C-order array (``0 < nbytes <
COLUMN_MAX_BYTES``) by ``(sensor, dtype, shape, has t_arrival)``; a group
stores ``seq``, ``t``, ``t_sensor`` and ``t_arrival`` as int64 columns and the
payloads stacked into one ``(n, *shape)`` array. Everything else (bytes,
dicts, large or odd arrays) stays a msgpack record as in 1.0, and a ``uint8``
``order`` column (group index, or :data:`GENERIC` for the next msgpack
record) keeps the recorded order across groups and records.

Writing a row is a few C-level appends (:class:`ColumnGroup`); this module is
the writer's side and the layout's constants. Reading the groups back is
:mod:`recordings.hfr._chunk_columns`, a helper of the chunk reader.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

COLUMN_MAX_BYTES = 4096
"""Arrays this size or larger stay msgpack records (one aligned array each)."""

MAX_GROUPS = 255
"""Most column groups in one chunk; further shapes fall back to msgpack records."""

GENERIC = 255
"""``order`` value of a frame stored as a msgpack record."""

_INT64 = np.dtype("<i8")
Int64Table = np.ndarray[Any, np.dtype[np.int64]]
_ORDER = np.dtype("u1")

PACK_TIMES = struct.Struct("<3q").pack
"""Packs ``seq, t, t_sensor`` of a row without ``t_arrival``."""

PACK_ARRIVAL = struct.Struct("<4q").pack
"""Packs ``seq, t, t_sensor, t_arrival``."""


class ColumnGroup:
    """Builder side of one group: columns grown by C-level appends (sans-I/O).

    ``ints`` holds each row's ``seq, t, t_sensor[, t_arrival]`` as packed
    little-endian int64 (``width`` values a row: one ``struct`` pack per frame,
    which also refuses non-integers and values outside int64); ``data`` the payload
    bytes; ``metas`` the msgpack bytes of non-empty frame metas by row, so a
    frame without meta costs nothing there.
    """

    __slots__ = (
        "data",
        "dtype",
        "index",
        "ints",
        "metas",
        "no_arrival",
        "row_bytes",
        "sensor",
        "shape",
        "width",
    )

    def __init__(
        self,
        index: int,
        sensor: str,
        dtype: np.dtype[Any],
        shape: tuple[int, ...],
        no_arrival: bool,
    ) -> None:
        self.index = index
        self.sensor = sensor
        self.dtype = dtype
        self.shape = shape
        self.no_arrival = no_arrival
        self.width = 3 if no_arrival else 4
        self.ints = bytearray()
        self.data = bytearray()
        self.metas: dict[int, bytes] = {}
        self.row_bytes = dtype.itemsize * math.prod(shape) + 8 * self.width + 1

    def __len__(self) -> int:
        return len(self.ints) // (8 * self.width)

    def table(self) -> Int64Table:
        """The rows ``seq, t, t_sensor(, t_arrival)`` as an ``(n, width)`` little-endian
        int64 view of :attr:`ints` (valid until the next row is added)."""
        return np.frombuffer(self.ints, _INT64).reshape(-1, self.width)


def pack_metas(group: ColumnGroup) -> bytes:
    """The group's ``metas`` field: nil when no row has meta, else an array of maps/nils."""
    if not group.metas:
        return b"\xc0"
    n = len(group)
    get = group.metas.get
    return b"\xdd" + n.to_bytes(4, "big") + b"".join(get(i, b"\xc0") for i in range(n))


def delta_rows(table: Int64Table) -> Int64Table:
    """Each column of an ``(n, width)`` int64 table delta-coded, as the rows of a
    ``(width, n)`` array: ``[c0, c1 - c0, c2 - c1, ...]`` modulo 2**64, so regular
    stamps become constants, which zstd packs to almost nothing (raw int64 stamps
    barely compress). All columns at once: a chunk's four in two numpy calls."""
    out = np.empty((table.shape[1], table.shape[0]), _INT64)
    if len(table):
        out[:, 0] = table[0]
        np.subtract(table[1:].T, table[:-1].T, out=out[:, 1:])  # wraps; decoding wraps back
    return out
