"""Several written chunks' stamps and details, gathered for the footer's writers at once.

A recorder's part (:class:`~recordings.hfr._part_index.PartIndex`) hands every
written chunk's stamps to the stamp index (1.5) and its frame details to the
details record (1.6). Both writers cost a few dozen numpy calls per chunk and
per sensor, whatever the chunk's size: a 200 Hz IMU's one-second chunks of 200
rows spent more in them than in writing the rows. :class:`StampBatch` gathers
chunks until :data:`BATCH_ROWS` rows or :data:`BATCH_CHUNKS` chunks and gives
them back as one :class:`Batch`: the rows concatenated in written order, each
chunk's sensor numbers mapped to the batch's names (in order of first
appearance, as the writers would meet them chunk by chunk), each chunk's plain
array shapes numbered into one list, and the row numbers of its gaps,
connections and key-packet params counted from the batch's first row. The
writers take a batch as they took a chunk (the stamp index keeps each chunk's
run of rows per sensor from ``chunk_rows``), so what they record is what
they recorded chunk by chunk. Sans-I/O.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from recordings.hfr._details import ChunkDetails

__all__ = ["BATCH_CHUNKS", "BATCH_ROWS", "Batch", "StampBatch"]

BATCH_ROWS = 4096
"""Rows after which a batch is given to the writers (32 KiB a stamp column)."""
BATCH_CHUNKS = 64
"""Chunks after which a batch is given to the writers, however few their rows."""

Stamps = tuple[Any, Any, Any, Any, Any]
"""``(sensor, seq, t, t_arrival, has_arrival)`` of a chunk's rows, in written order."""


@dataclasses.dataclass(slots=True)
class Batch:
    """Chunks' rows as one: what the footer's writers take."""

    sensors: tuple[str, ...]
    """Sensor names, in order of first appearance."""
    sensor: np.ndarray[Any, Any]
    """Each row's index into :attr:`sensors`."""
    stamps: tuple[Any, Any, Any, Any]
    """``seq, t, t_arrival, has_arrival`` of every row."""
    details: ChunkDetails | None
    """The chunks' details as one chunk's, or None when a chunk had none."""
    chunk_rows: list[int]
    """Rows of each chunk, in order."""


class StampBatch:
    """Gathers written chunks' stamps and details (see the module docstring)."""

    def __init__(self) -> None:
        self._chunks: list[tuple[tuple[str, ...], Stamps, ChunkDetails | None]] = []
        self._rows = 0

    def __len__(self) -> int:
        return len(self._chunks)

    def add(self, sensors: tuple[str, ...], stamps: Stamps, details: ChunkDetails | None) -> bool:
        """Gather a chunk (``stamps[0]`` indexes ``sensors``); True when the batch is full."""
        self._chunks.append((sensors, stamps, details))
        self._rows += len(stamps[1])
        return self._rows >= BATCH_ROWS or len(self._chunks) >= BATCH_CHUNKS

    def take(self) -> Batch | None:
        """The gathered chunks as one batch (None if none); the batch is empty after."""
        chunks, self._chunks, self._rows = self._chunks, [], 0
        if not chunks:
            return None
        if len(chunks) == 1:
            sensors, stamps, details = chunks[0]
            return Batch(sensors, stamps[0], stamps[1:], details, [len(stamps[1])])
        first = chunks[0][0]
        if all(c[0] == first for c in chunks):
            names, maps = first, None
        else:
            numbers: dict[str, int] = {}
            maps = [np.array([numbers.setdefault(s, len(numbers)) for s in c[0]]) for c in chunks]
            names = tuple(numbers)
        sensor = np.concatenate(
            [c[1][0] if maps is None else maps[i][c[1][0]] for i, c in enumerate(chunks)]
        )
        seq, t, arrival, has = (np.concatenate([c[1][k] for c in chunks]) for k in range(1, 5))
        rows = [len(c[1][1]) for c in chunks]
        each = [c[2] for c in chunks]
        merged = None
        if all(d is not None for d in each):
            merged = _merged([d for d in each if d is not None], maps, rows)
        return Batch(names, sensor, (seq, t, arrival, has), merged, rows)


def _merged(
    details: list[ChunkDetails], maps: list[np.ndarray[Any, Any]] | None, rows: list[int]
) -> ChunkDetails:
    """Chunks' details as one chunk's (sensor numbers through ``maps``, if any)."""
    shapes: dict[tuple[int, ...], int] = {}
    first_shapes = details[0].shapes
    if all(d.shapes == first_shapes for d in details):
        shape = np.concatenate([d.shape for d in details])
        shapes = {s: i for i, s in enumerate(first_shapes)}
    else:
        parts = []
        for d in details:
            ids = [shapes.setdefault(s, len(shapes)) for s in d.shapes]
            to = np.array([*ids, -1], np.int32)  # index -1 (not a plain array) stays -1
            parts.append(to[d.shape])
        shape = np.concatenate(parts)
    out = ChunkDetails(
        np.concatenate([d.offset for d in details]),
        np.concatenate([d.flags for d in details]),
        np.concatenate([d.size for d in details]),
        shape,
        list(shapes),
        [],
        [],
        [],
        {},
    )
    start = 0
    for i, (d, n) in enumerate(zip(details, rows, strict=True)):
        out.gaps += [(start + row, gap) for row, gap in d.gaps]
        out.connections += [(start + row, c) for row, c in d.connections]
        out.params += [(start + row, p) for row, p in d.params]
        for k, brief in d.firsts.items():
            out.firsts.setdefault(k if maps is None else int(maps[i][k]), brief)
        start += n
    return out
