"""The live UDP shell of ``TimeSeriesSource.from_udp``: datagrams in, Batches out.

Each wakeup takes every datagram queued (:meth:`adapters.net._udp.UdpReceiver.receive_many`)
and hands them on as one list of :class:`~adapters._timeseries_records.Batch` es, so
a burst costs one trip through the hub: runs of steady-state rows (one plain record
per datagram with exactly the schema's fields, stamps not going back) are packed into
one array, each row keeping its datagram's arrival; anything else goes through
:class:`~adapters._timeseries_records.RecordPacker`'s general path, in arrival order,
which decides, counts and explains. While the schema is learned from a slow sender
the datagrams come one at a time (the learning window needs each one's time).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import numpy as np

from adapters._timeseries_records import LEARN_WINDOW_NS, Batch, RecordPacker, decode_datagram
from adapters.net import UdpReceiver
from fusion import Source, current_clock

DRAIN = 64
"""Most datagrams a UDP source takes per wakeup (the hub's channel holds 256)."""


async def udp_batches(
    source: Source, receiver: UdpReceiver, packer: RecordPacker, format: str, combine: bool
) -> AsyncIterator[Batch | list[Batch]]:
    """``receiver``'s datagrams as rows of ``source`` until cancelled (``combine``: a
    burst's steady-state rows in one array; the source's ``block`` must be 1)."""
    arrival: int | None = None
    try:
        while True:
            since = packer.learning_since
            if since is None:  # every datagram queued now, as one list
                burst = Burst(source, packer, combine)
                for payload, address, arrival in await receiver.receive_many(DRAIN):
                    what = f"datagram from {address[0]}:{address[1]}"
                    try:
                        records = decode_datagram(payload, format)
                    except ValueError as err:
                        source.count_error("bad_datagram", f"{what}: {err}")
                        continue
                    burst.add(records, arrival, what)
                if batches := burst.batches():
                    yield batches
                continue
            else:  # a slow sender: learn the schema from what came in time
                wait = (since + LEARN_WINDOW_NS - current_clock().now()) / 1e9
                with anyio.move_on_after(max(wait, 0.0)):
                    payload, address, arrival = await receiver.receive()
                    since = None
                if since is not None:
                    rows, weights = packer.decide(source, arrival)
                    if len(rows):
                        yield Batch(rows, arrival, weights)
                    continue
            what = f"datagram from {address[0]}:{address[1]}"
            try:
                records = decode_datagram(payload, format)
            except ValueError as err:
                source.count_error("bad_datagram", f"{what}: {err}")
                continue
            rows, weights = packer.pack(records, source, arrival, what=what)
            if len(rows):
                yield Batch(rows, arrival, weights)
    finally:
        rows, weights = packer.finish(source, arrival)
        if len(rows):  # an end with records still held to learn the schema
            source.count_error(
                "incomplete",
                f"{len(rows)} sample(s) held to learn the schema when the stream ended",
                units=int(weights.sum()),
            )


class Burst:
    """The datagrams of one UDP wakeup as Batches: runs of steady-state rows (stamps
    not going back) in one array with each row's arrival, anything else packed on its
    own by the general path, in arrival order."""

    def __init__(self, source: Source, packer: RecordPacker, combine: bool) -> None:
        self.source = source
        self.packer = packer
        self.combine = combine
        self.out: list[Batch] = []
        self.rows: list[tuple[Any, ...]] = []
        self.units: list[tuple[list[Any], int, str]] = []  # (records, arrival, what) of rows

    def add(self, records: list[Any], arrival: int, what: str) -> None:
        row = self.packer.row_of(records) if self.combine else None
        if row is not None and (not self.rows or row[0] >= self.rows[-1][0]):
            self.rows.append(row)
            self.units.append((records, arrival, what))
            return
        self._flush()
        if row is not None:  # a stamp back: a new run (the restart check sees its first row)
            self.rows.append(row)
            self.units.append((records, arrival, what))
            return
        rows, weights = self.packer.pack(records, self.source, arrival, what=what)
        if len(rows):
            self.out.append(Batch(rows, arrival, weights))

    def _flush(self) -> None:
        if not self.rows:
            return
        units, rows = self.units, self.rows
        self.rows, self.units = [], []
        try:
            array = np.array(rows, self.packer.dtype)
        except (TypeError, ValueError, OverflowError):  # a value that does not fit: one by one
            for records, arrival, what in units:
                packed, weights = self.packer.pack(records, self.source, arrival, what=what)
                if len(packed):
                    self.out.append(Batch(packed, arrival, weights))
            return
        arrivals = [arrival for _, arrival, _ in units]
        self.out.append(Batch(array, arrivals[-1], np.ones(len(rows), np.int64), arrivals))

    def batches(self) -> list[Batch]:
        self._flush()
        return self.out
