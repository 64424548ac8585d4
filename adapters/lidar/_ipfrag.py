"""IP fragment reassembly for the capture reader (sans-I/O).

A UDP datagram larger than the link's MTU leaves the sender as IP fragments
(an Ouster lidar packet of firmware 3 is 8-25 kB; tcpdump records each
1500-byte fragment as one record). :class:`Reassembler` takes the fragments
of IPv4 and IPv6 datagrams as the records come and returns a datagram's IP
payload (its UDP header and data) when the last missing piece arrives, as the
kernel does (RFC 815's hole list reduced to a sorted interval check: the
pieces are kept until they cover ``[0, total)`` without a gap).

Bounded: a datagram is at most 65,535 bytes (more is counted ``oversized``);
at most :data:`MAX_PENDING` datagrams are held at once (the oldest is given
up, counted ``missing``, when another starts); one whose pieces have not all
come within :data:`MAX_RECORDS_APART` records of its first is given up too
(a capture runs at link speed: the kernel's 30 s timeout would hold
thousands). What is given up is reported to ``on_lost(reason, offset)`` with
the byte offset of the datagram's first fragment record, once per datagram.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_DATAGRAM = 65_535
MAX_PENDING = 64
MAX_RECORDS_APART = 4096

Key = tuple[bytes, bytes, int, int]
"""(source address, destination address, identification, protocol)."""


@dataclass
class _Pending:
    first_offset: int
    first_record: int
    pieces: dict[int, bytes] = field(default_factory=dict)
    total: int | None = None  # known once the last fragment (more-fragments clear) came


class Reassembler:
    """Fragments in, whole IP payloads out; lost datagrams reported to ``on_lost``."""

    def __init__(self, on_lost: Callable[[str, int], None]) -> None:
        self._on_lost = on_lost
        self._pending: dict[Key, _Pending] = {}
        self._record = 0
        self.reassembled = 0
        """Datagrams made whole."""
        self.fragments = 0
        """Fragment records taken."""

    def push(
        self, key: Key, offset: int, more: bool, data: bytes, record_offset: int
    ) -> bytes | None:
        """One fragment: ``offset`` (bytes into the datagram's payload), ``more`` (the
        more-fragments flag), its ``data``; the whole payload when this completes it."""
        self._record += 1
        self.fragments += 1
        self._expire()
        pending = self._pending.get(key)
        if pending is None:
            if len(self._pending) >= MAX_PENDING:
                oldest = next(iter(self._pending))
                self._give_up(oldest, "missing_fragment")
            pending = self._pending[key] = _Pending(record_offset, self._record)
        end = offset + len(data)
        if end > MAX_DATAGRAM:
            self._give_up(key, "oversized_record")
            return None
        if not more:
            pending.total = end
        pending.pieces[offset] = data  # a repeated piece replaces the first copy
        if pending.total is None:
            return None
        covered = 0
        for start in sorted(pending.pieces):
            if start > covered:
                return None
            covered = max(covered, start + len(pending.pieces[start]))
        if covered < pending.total:
            return None
        del self._pending[key]
        whole = bytearray(pending.total)
        for start, piece in pending.pieces.items():
            whole[start : start + len(piece)] = piece[: max(0, pending.total - start)]
        self.reassembled += 1
        return bytes(whole)

    def flush(self) -> None:
        """The capture ended: every datagram still missing a piece is lost."""
        for key in list(self._pending):
            self._give_up(key, "missing_fragment")

    def _expire(self) -> None:
        while self._pending:
            key, oldest = next(iter(self._pending.items()))
            if self._record - oldest.first_record <= MAX_RECORDS_APART:
                return
            self._give_up(key, "missing_fragment")

    def _give_up(self, key: Key, reason: str) -> None:
        pending = self._pending.pop(key)
        self._on_lost(reason, pending.first_offset)
