"""What a recorder's part keeps for its footer, chunk by chunk, and the footer it writes.

For every chunk written a :class:`PartIndex` keeps its INDEX entry (with its
stamp block while the part's blocks fit a budget: :meth:`PartIndex._blocks`),
its row of the chunk table (1.7, :mod:`recordings.hfr._chunk_table`), its
stamps in the stamp index (1.5, :mod:`recordings.hfr._stamp_index`) and its
frame details and sensor summaries (1.6/1.7, :mod:`recordings.hfr._details`),
the last two spooled so that memory stays flat over hours.
:meth:`PartIndex.footer` gives the footer's records, in the order
``recordings/hfr/FORMAT.md`` fixes: details, chunk table, INDEX, STAMPS,
trailer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from recordings.hfr._chunk_encode import pack
from recordings.hfr._chunk_table import ChunkTableWriter
from recordings.hfr._details import DetailsWriter
from recordings.hfr._format import pack_trailer
from recordings.hfr._layout import ChunkMeta
from recordings.hfr._out_file import index_pieces, pack_index
from recordings.hfr._sensor_summary import SensorReducer
from recordings.hfr._stamp_batch import StampBatch
from recordings.hfr._stamp_block import raw_block
from recordings.hfr._stamp_index import StampIndexWriter

__all__ = ["PartIndex"]


class PartIndex:
    """The footer of one part, kept as its chunks are written.

    ``block_budget``: stamp-block bytes the INDEX repeats at most (the
    recorder's ``INDEX_BLOCK_BYTES``); past it the INDEX holds none.
    """

    def __init__(self, block_budget: int) -> None:
        self._budget = block_budget
        self._entries: list[Any] = []  # entry maps, or packed entries (_blocks)
        self._block_bytes = 0  # -1 once the part's blocks are left out of its index
        self._stamps = StampIndexWriter(spool=True)  # small: the default level
        self._details = DetailsWriter(spool=True, reducer=SensorReducer)  # spooled: flat memory
        self._table = ChunkTableWriter()  # 1.7: the chunk list as columns
        self._batch = StampBatch()  # chunks' stamps and details on their way to the two above

    def add(self, meta: ChunkMeta, offset: int, length: int, details: Any = None) -> None:
        """Chunk ``meta`` was written at ``offset``, its payload ``length`` bytes."""
        entry = meta.to_msgpack()
        self._blocks(entry)
        entry["off"] = offset
        entry["len"] = length
        self._table.add(meta, offset, length)
        # Packed once the blocks are out: a dict per chunk grew the writer by 7 MB an hour.
        self._entries.append(entry if self._block_bytes >= 0 else pack(entry))
        self._add_stamps(meta, details)

    def _blocks(self, entry: dict[str, Any]) -> None:
        """Keep the chunk's stamp block in its index entry while the part's blocks add up
        to at most the budget; past that, none (the ones held are dropped).

        The block stays in the chunk's own meta, and the STAMPS record holds every
        frame's stamps: blocks in the index only spare a reader that cannot use that
        record a read per chunk. Hours of them would make the INDEX hundreds of MB
        (refused by readers as over their meta limit) and the writer's memory grow.
        An INDEX without blocks also gets the chunk table (1.7,
        :mod:`recordings.hfr._chunk_table`), which has none: a reader of a file whose INDEX
        holds its blocks (a short one) parses the INDEX, in milliseconds at that size.
        """
        block = entry.get("st")
        if block is None:
            return
        if self._block_bytes >= 0:
            self._block_bytes += len(block)
            if self._block_bytes <= self._budget:
                return
            self._block_bytes = -1
            for held in self._entries:
                held.pop("st", None)
            self._entries[:] = [pack(held) for held in self._entries]
        del entry["st"]

    def _add_stamps(self, meta: ChunkMeta, details: Any) -> None:
        """The chunk's block and details, on their way to the part's stamp index (1.5) and
        frame details (1.6): gathered with the next chunks' (:mod:`recordings.hfr._stamp_batch`)."""
        if meta.stamps is None or self._stamps.chunks < 0:
            self._stamps.skip_chunk()
            self._details.skip_chunk()
            self._batch.take()
            return
        own = None if details is None else details.stamps  # the seal's: no decompression
        if details is None:
            self._details.skip_chunk()
        if self._batch.add(meta.sensors, raw_block(meta) if own is None else own, details):
            self._write_batch()

    def _write_batch(self) -> None:
        """The gathered chunks into the stamp index and the frame details."""
        batch = self._batch.take()
        if batch is None:
            return
        seq, t, arrival, has = batch.stamps
        self._stamps.add(batch.sensors, batch.sensor, seq, t, arrival, has, batch.chunk_rows)
        if batch.details is not None:
            self._details.add(
                batch.sensors, batch.sensor, batch.details, batch.stamps, len(batch.chunk_rows)
            )

    def footer(
        self, at: int, specs: list[dict[str, Any]], ledgers: dict[str, Any]
    ) -> Iterable[Any]:
        """The footer's pieces, for a part whose chunks end at offset ``at``: details,
        chunk table, INDEX (with ``specs`` and ``ledgers``), STAMPS, trailer."""
        self._write_batch()
        index_offset = at
        index_meta: dict[str, Any] = {"sensors": specs}
        if ledgers:
            index_meta["ledger"] = ledgers
        details = self._details.record()  # right before the INDEX, which points at it
        pieces: Iterable[bytes] = ()
        if details is not None:
            pieces, length = details
            index_meta["details"] = [index_offset, length]
            index_offset += length
            summaries = self._details.summaries()  # 1.7: what info reports, per sensor
            if summaries:
                index_meta["summaries"] = summaries
        if self._block_bytes <= 0:  # 1.7, right before the INDEX: see _blocks
            table, length = self._table.record()
            index_meta["table"] = [index_offset, length]
            index_offset += length
            pieces = itertools.chain(pieces, table)
        index = pack_index(self._entries, index_meta)
        stamps = self._stamps.record() or ()  # between the INDEX and the trailer
        return itertools.chain(pieces, index_pieces(index), stamps, (pack_trailer(index_offset),))
