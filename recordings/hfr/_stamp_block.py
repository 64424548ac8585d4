"""A chunk's stamp block (format 1.4): its frames' stamps outside the payload.

Theory of operation. Grouping, ``info`` and seeking need each frame's sensor,
``seq``, ``t`` and ``t_arrival``, not its payload; before 1.4 those lived only
inside the compressed chunk, so reading 16 k stamps of a 3 GB recording
decompressed 3 GB. The writer now also puts them in the chunk meta (key
``st``, so in the footer index too) as one small zstd frame:

```
block := sensor:<u4[n]  seq:<i8[n]  t:<i8[n]  t_arrival:<i8[n]  has_arrival:u1[n]
```

``n`` is the chunk's frame count, rows in recorded order; ``seq``, ``t`` and
``t_arrival`` are delta-coded like the columnar chunk's columns (``d[0] = v[0]``,
``d[i] = v[i] - v[i-1]`` modulo 2**64), ``t_arrival`` is 0 where
``has_arrival`` is 0. A frame's position in the chunk among its sensor's
frames (what :class:`~recordings.hfr._stamps.FrameFetcher` seeks by) is its rank
in this order.

:func:`decode_block` checks the block against the meta before anything is
taken from it: the zstd frame declares exactly ``29 * n`` bytes (and at most
the reader's chunk limit), sensors index the meta's ``s``, the per-sensor
counts equal ``c``, every ``t`` lies in its sensor's ``r`` range with both
ends reached. A block that fails is not used: the caller reads the payload
(the pre-1.4 path), so a bad block costs time, never frames.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import zstandard

from recordings.hfr._layout import ChunkMeta

__all__ = [
    "ROW_BYTES",
    "StampBlock",
    "StampColumns",
    "decode_block",
    "group_stamps",
    "pack_stamps",
    "raw_block",
    "stamp_columns",
    "stamp_table",
]

ROW_BYTES = 29
"""Bytes per frame of an uncompressed block."""
_GENERIC = 255  # the order column's value for a frame from the msgpack records
Int64 = np.ndarray[Any, np.dtype[np.int64]]
StampColumns = tuple[np.ndarray[Any, Any], Int64, Int64, Int64, np.ndarray[Any, Any]]
"""``(sensor, seq, t, t_arrival, has_arrival)`` of a chunk's frames, in recorded order."""
_local = threading.local()  # one decompressor per thread


def _delta(v: Int64) -> Int64:
    d = v.copy()
    if len(v) > 1:
        d[1:] = v[1:] - v[:-1]  # int64 wraps: the reader's running sum undoes it
    return d


def stamp_table(
    n: int,
    order: np.ndarray[Any, np.dtype[np.uint8]],
    groups: Sequence[tuple[int, int, bytes | bytearray, int]],
    records: Sequence[tuple[int, int, int, int | None]],
) -> bytes:
    """The uncompressed block of a chunk being sealed (:func:`stamp_columns`, packed)."""
    return pack_stamps(stamp_columns(n, order, groups, records))


def stamp_columns(
    n: int,
    order: np.ndarray[Any, np.dtype[np.uint8]],
    groups: Sequence[tuple[int, int, bytes | bytearray, int]],
    records: Sequence[tuple[int, int, int, int | None]],
) -> StampColumns:
    """The stamp columns of a chunk being sealed (the builder's view of it).

    ``order`` is the builder's per-frame source (a group index or 255 for the
    next record), ``groups`` ``(group index, sensor index, packed ints, width)``
    with rows ``seq, t, t_sensor(, t_arrival)``, ``records`` the msgpack
    records' ``(sensor index, seq, t, t_arrival)`` in order.
    """
    sensor = np.empty(n, "<u4")
    seq = np.empty(n, np.int64)
    t = np.empty(n, np.int64)
    arrival = np.zeros(n, np.int64)
    has = np.zeros(n, np.uint8)
    for gi, sidx, ints, width in groups:
        rows = np.frombuffer(ints, "<i8").reshape(-1, width)
        where = order == gi
        sensor[where] = sidx
        seq[where] = rows[:, 0]
        t[where] = rows[:, 1]
        if width == 4:
            arrival[where] = rows[:, 3]
            has[where] = 1
    if records:
        where = order == _GENERIC
        sensor[where] = [r[0] for r in records]
        seq[where] = [r[1] for r in records]
        t[where] = [r[2] for r in records]
        arrival[where] = [0 if r[3] is None else r[3] for r in records]
        has[where] = [r[3] is not None for r in records]
    return sensor, seq, t, arrival, has


def group_stamps(sensor: int, table: Int64, deltas: Int64) -> tuple[StampColumns, bytes]:
    """``(stamp_columns, pack_stamps)`` of a chunk whose frames all lie in one column
    group (a chunk of one sensor's small arrays: the usual IMU chunk), from the group's
    ``(n, width)`` rows ``seq, t, t_sensor(, t_arrival)`` and the seal's delta-coded
    ``deltas`` of them (:func:`~recordings.hfr._columns.delta_rows`): the same block,
    without gathering rows by the order column."""
    n, width = table.shape
    ids = np.full(n, sensor, "<u4")
    has = np.full(n, width == 4, np.uint8)
    if width == 4:
        arrival, arrival_deltas = table[:, 3].copy(), deltas[3]
    else:
        arrival = arrival_deltas = np.zeros(n, np.int64)
    columns = (ids, table[:, 0].copy(), table[:, 1].copy(), arrival, has)
    parts = (ids, deltas[0], deltas[1], arrival_deltas, has)
    return columns, b"".join(p.tobytes() for p in parts)


def pack_stamps(columns: StampColumns) -> bytes:
    """The uncompressed block of ``columns`` (what :func:`raw_block` gives back)."""
    sensor, seq, t, arrival, has = columns
    parts = (sensor, _delta(seq), _delta(t), _delta(arrival), has)
    return b"".join(p.astype(p.dtype.newbyteorder("<"), copy=False).tobytes() for p in parts)


class StampBlock:
    """A decoded, checked block: parallel columns in recorded order."""

    __slots__ = ("_by_sensor", "arrival", "has_arrival", "sensor", "seq", "t")

    def __init__(
        self,
        sensor: np.ndarray[Any, Any],
        seq: Int64,
        t: Int64,
        arrival: Int64,
        has_arrival: np.ndarray[Any, np.dtype[np.bool_]],
    ) -> None:
        self.sensor = sensor
        self.seq = seq
        self.t = t
        self.arrival = arrival
        self.has_arrival = has_arrival
        self._by_sensor: list[tuple[Int64, Int64]] = []

    def of(self, k: int) -> tuple[Int64, Int64]:
        """``(t, seq)`` of the meta's sensor ``k``, in recorded order."""
        return self._by_sensor[k]


def raw_block(meta: ChunkMeta) -> tuple[np.ndarray[Any, Any], Int64, Int64, Int64, Any]:
    """``(sensor, seq, t, t_arrival, has_arrival)`` of a block this process just wrote:
    decompressed without :func:`decode_block`'s checks (the writer's own stamp index)."""
    n = meta.count
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    buf = memoryview(dctx.decompress(meta.stamps or b"", max_output_size=ROW_BYTES * n))
    cols = [np.cumsum(np.frombuffer(buf, "<i8", n, 4 * n + 8 * n * k)) for k in range(3)]
    sensor = np.frombuffer(buf, "<u4", n, 0)
    return sensor, cols[0], cols[1], cols[2], np.frombuffer(buf, np.uint8, n, 28 * n)


def decode_block(meta: ChunkMeta, max_bytes: int) -> StampBlock:
    """Decompress and check ``meta.stamps``; ``ValueError`` says what does not fit."""
    block = meta.stamps
    if block is None:
        raise ValueError(f"{meta.describe()} has no stamp block")
    n = meta.count
    size = ROW_BYTES * n
    if size > max_bytes:
        raise ValueError(f"stamp block of {meta.describe()} would be {size} bytes")
    try:
        declared = zstandard.frame_content_size(block)
    except zstandard.ZstdError as err:
        raise ValueError(f"stamp block of {meta.describe()} is not a zstd frame: {err}") from err
    if declared != size:
        raise ValueError(f"stamp block of {meta.describe()} declares {declared}, not {size} bytes")
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    try:
        raw = dctx.decompress(block, max_output_size=size)
    except zstandard.ZstdError as err:
        raise ValueError(f"stamp block of {meta.describe()} does not decompress: {err}") from err
    if len(raw) != size:
        raise ValueError(f"stamp block of {meta.describe()} holds {len(raw)}, not {size} bytes")
    buf = memoryview(raw)
    sensor = np.frombuffer(buf, "<u4", n, 0)
    cols = [np.cumsum(np.frombuffer(buf, "<i8", n, 4 * n + 8 * n * k)) for k in range(3)]
    has = np.frombuffer(buf, np.uint8, n, 28 * n)
    if n and (int(sensor.max()) >= len(meta.sensors) or int(has.max()) > 1):
        raise ValueError(f"stamp block of {meta.describe()} names a sensor it does not have")
    counts = np.bincount(sensor, minlength=len(meta.sensors)) if n else np.zeros(0, np.int64)
    if tuple(counts.tolist()) != tuple(meta.counts):
        raise ValueError(f"stamp block of {meta.describe()} does not match its counts")
    t = cols[1]
    out = StampBlock(sensor, cols[0], t, cols[2], has.view(np.bool_))
    if len(meta.sensors) == 1:
        out._by_sensor = [(t, cols[0])]
    else:
        masks = [sensor == k for k in range(len(meta.sensors))]
        out._by_sensor = [(t[m], cols[0][m]) for m in masks]
    for k, (lo, hi) in enumerate(meta.ranges):
        tk = out.of(k)[0]
        if len(tk) and (int(tk.min()) != lo or int(tk.max()) != hi):
            raise ValueError(f"stamp block of {meta.describe()} does not match its time ranges")
    return out
