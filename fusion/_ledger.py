"""The input ledger: every unit a source receives ends as a frame or as a counted loss.

A *unit* is whatever the source reads: a datagram, a capture packet, a bag
message, a CSV row or line, a file, a recording chunk. The ledger keeps four
numbers per source and one invariant::

    received == emitted + sum(lost.values()) + pending

``emitted`` counts units that went into a frame (a Velodyne sweep is built
from ~75 packets: 75 units emitted, one frame). ``lost`` counts units by
reason (see :data:`LOSS_REASONS` for the shared vocabulary; a source may add
its own). ``pending`` is what the source still holds in a partial frame; it is
0 once the source has ended. Units the kernel dropped before we could read
them (``kernel_overflow``) arrived at the host: they count as received and
lost.

A source that never calls :meth:`InputLedger.receive` (a simple custom
adapter) is *implicit*: each frame is one unit received and emitted and each
counted error one unit received and lost, so the invariant holds with no
bookkeeping at all.

Sans-I/O: integers in, a frozen :class:`LedgerStatistics` out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

LOSS_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "bad_length": "a unit shorter or longer than its format allows",
        "bad_checksum": "a checksum or CRC that does not match",
        "undecodable": "bytes the decoder could not turn into a frame",
        "foreign_sender": "a datagram from a sender other than the one this source follows",
        "kernel_overflow": "datagrams the kernel dropped because the socket buffer was full",
        "schema_mismatch": "a sample whose fields do not match the stream's schema",
        "extra_columns": "values beyond the header's columns",
        "bad_row": "a row that could not be parsed",
        "bad_time": "a timestamp that is missing, not finite or out of range",
        "unsupported_device": "input from a device or model this source does not decode",
        "unsupported_type": "a message type this source cannot decode",
        "dropped": "frames dropped by the overflow policy of a full channel",
        "incomplete": "units held in a partial frame when the source ended",
        "partial_sweep": "packets of a LiDAR sweep short of a full turn, dropped by its options",
        "missing": "units a summary or index promised that were never read",
        "wrong_port": "a datagram of a capture sent to a port this source does not read",
        "stale": "a packet of a scan already emitted (late, or a counter that went back)",
        "unread_at_stop": "datagrams still queued in a socket when its source stopped",
        "missing_fragment": "a datagram of a capture whose IP fragments did not all arrive",
    }
)
"""The shared loss reasons, with what each means (docs/ledger.md has the table)."""


@dataclass(frozen=True)
class LedgerStatistics:
    """A snapshot of one source's ledger (frozen: safe to hand to other threads)."""

    unit: str
    """What one unit is: ``"datagram"``, ``"packet"``, ``"message"``, ``"row"``, ..."""
    received: int
    """Units that reached the source (or the host's socket, for kernel drops)."""
    emitted: int
    """Units that went into a frame."""
    frames: int
    """Frames made from them."""
    lost: Mapping[str, int] = field(default_factory=dict)
    """Units lost, by reason."""

    @property
    def lost_total(self) -> int:
        """Every unit lost, whatever the reason."""
        return sum(self.lost.values())

    @property
    def pending(self) -> int:
        """Units received but neither emitted nor lost yet (held in a partial frame)."""
        return self.received - self.emitted - self.lost_total

    def as_dict(self) -> dict[str, Any]:
        """Plain types, for JSON, msgpack and the recording's footer."""
        return {
            "unit": self.unit,
            "received": self.received,
            "emitted": self.emitted,
            "frames": self.frames,
            "lost": dict(sorted(self.lost.items())),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> LedgerStatistics:
        """Read back :meth:`as_dict` (a recording's stored ledger); strict about types."""
        lost = raw.get("lost", {})
        if not isinstance(lost, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in lost.items()
        ):
            raise ValueError("a ledger's 'lost' must map reasons to counts >= 0")
        numbers = {}
        for key in ("received", "emitted", "frames"):
            value = raw.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"a ledger's {key!r} must be an integer >= 0, got {value!r}")
            numbers[key] = value
        unit = raw.get("unit", "unit")
        if not isinstance(unit, str):
            raise ValueError("a ledger's 'unit' must be a string")
        return cls(unit=unit, lost=dict(lost), **numbers)


class InputLedger:
    """Counts of what one source received, emitted and lost (see the module docstring)."""

    __slots__ = ("_emitted", "_frames", "_lost", "_received", "unit")

    def __init__(self, unit: str = "frame") -> None:
        self.unit = unit
        self._received: int | None = None  # None: implicit (never told what arrived)
        self._emitted = 0
        self._frames = 0
        self._lost: Counter[str] = Counter()

    def receive(self, units: int = 1) -> None:
        """``units`` arrived (call before they are decoded)."""
        if units < 0:
            raise ValueError("units must be >= 0")
        self._received = (self._received or 0) + units

    def emit(self, units: int = 1, *, frames: int = 1) -> None:
        """``units`` went into ``frames`` frames."""
        if units < 0 or frames < 0:
            raise ValueError("units and frames must be >= 0")
        self._emitted += units
        self._frames += frames

    def lose(self, reason: str, units: int = 1, *, arrived: bool = True) -> None:
        """``units`` are lost for ``reason``.

        ``arrived=False`` is for units the source never called :meth:`receive`
        for (the kernel's socket drops, a summary's missing messages): they
        count as received here so the invariant holds.
        """
        if units < 0:
            raise ValueError("units must be >= 0")
        if units == 0:
            return
        self._lost[reason] += units
        if not arrived and self._received is not None:
            self._received += units

    @property
    def explicit(self) -> bool:
        """Whether the source counts what it receives (else each frame is one unit)."""
        return self._received is not None

    def statistics(self) -> LedgerStatistics:
        """A frozen snapshot."""
        lost_total = sum(self._lost.values())
        received = self._received if self._received is not None else self._emitted + lost_total
        return LedgerStatistics(
            unit=self.unit,
            received=received,
            emitted=self._emitted,
            frames=self._frames,
            lost=dict(self._lost),
        )


def merge_ledgers(ledgers: Mapping[str, LedgerStatistics]) -> dict[str, int]:
    """Losses of many ledgers summed by reason (for a one-line summary)."""
    total: Counter[str] = Counter()
    for stats in ledgers.values():
        total.update(stats.lost)
    return dict(total)
