"""How a recording keeps its sources' input ledgers (format 1.3, the index key ``ledger``).

The footer index of a file written through a :class:`~fusion.Pipeline` maps
each sensor to its :class:`~fusion.LedgerStatistics` (``unit``, ``received``,
``emitted``, ``frames``, ``lost`` by reason) plus ``dropped``: the frames the
pipeline itself lost after the source made them (a full channel's overflow
policy), by reason. So ``hyperframes info`` can say what was lost while
recording, long after the run.

A file cut short without its footer has no ledger; a ledger that does not
parse is reported as damage and ignored, never trusted in part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fusion import LedgerStatistics

__all__ = ["SensorLedger", "ledger_entries", "parse_ledgers"]

MAX_REASONS = 256
"""Reasons per sensor a reader accepts (a ledger is small; a huge one is damage)."""


@dataclass(frozen=True, slots=True)
class SensorLedger:
    """One sensor's stored ledger: what its source received and lost, and what the
    pipeline dropped of its frames."""

    source: LedgerStatistics
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Frames the pipeline dropped after the source, by reason."""

    @property
    def lost_total(self) -> int:
        """Units the source lost plus frames the pipeline dropped."""
        return self.source.lost_total + sum(self.dropped.values())

    def losses(self) -> dict[str, int]:
        """Every loss by reason, the source's and the pipeline's together."""
        out = dict(self.source.lost)
        for reason, n in self.dropped.items():
            key = reason if reason not in out else f"pipeline_{reason}"
            out[key] = out.get(key, 0) + n
        return out


def ledger_entries(
    ledgers: Mapping[str, LedgerStatistics],
    dropped: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The index's ``ledger`` map for these ledgers and pipeline drops."""
    dropped = dropped or {}
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(ledgers) | set(dropped)):
        stats = ledgers.get(name) or LedgerStatistics("frame", 0, 0, 0)
        entry = stats.as_dict()
        drops = {str(k): int(v) for k, v in (dropped.get(name) or {}).items() if v}
        if drops:
            entry["dropped"] = dict(sorted(drops.items()))
        out[str(name)] = entry
    return out


def parse_ledgers(raw: Any) -> dict[str, SensorLedger]:
    """Read an index's ``ledger`` map back, strictly; ``ValueError`` says what is wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError("the footer's ledger is not a map")
    out: dict[str, SensorLedger] = {}
    for name, entry in raw.items():
        if not isinstance(name, str) or not isinstance(entry, Mapping):
            raise ValueError("the footer's ledger must map sensor names to maps")
        lost = entry.get("lost", {})
        drops = entry.get("dropped", {})
        if not isinstance(drops, Mapping) or not isinstance(lost, Mapping):
            raise ValueError(f"the footer's ledger of {name!r} has a 'lost' or 'dropped' not a map")
        if len(lost) > MAX_REASONS or len(drops) > MAX_REASONS:
            raise ValueError(f"the footer's ledger of {name!r} lists over {MAX_REASONS} reasons")
        if not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in drops.items()):
            raise ValueError(f"the footer's ledger of {name!r}: 'dropped' must count by reason")
        try:
            source = LedgerStatistics.from_dict(entry)
        except ValueError as err:
            raise ValueError(f"the footer's ledger of {name!r}: {err}") from None
        out[name] = SensorLedger(source, dict(drops))
    return out
