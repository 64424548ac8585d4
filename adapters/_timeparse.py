"""Stamps from text and numbers, exact to the nanosecond (no float on the way).

Every time-series reader (CSV, UDP records, KITTI stamps, point-cloud stamp
files) parses times here, so ``"1700000000.123456789"`` seconds is
1700000000123456789 ns everywhere and a stamp beyond int64 ns is refused the
same way everywhere.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from fusion.errors import ConfigError

TIME_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
INT64 = (-(1 << 63), (1 << 63) - 1)


def unit_scale(unit: str) -> int:
    """Nanoseconds per ``unit``; ``ConfigError`` naming the units for anything else."""
    if unit not in TIME_UNITS:
        raise ConfigError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {unit!r}")
    return TIME_UNITS[unit]


def parse_time_ns(text: str, unit: str = "s") -> int:
    """Parse one timestamp exactly into int ns: a number in ``unit`` or an ISO date-time.

    ``"1700000000.123456789"`` with unit "s" gives 1700000000123456789 with no
    float rounding; ``"2011-09-26 13:02:25.964389445"`` (KITTI) is read as UTC.
    """
    scale = unit_scale(unit)
    text = text.strip()
    try:
        return decimal_ns(Decimal(text), scale, text)
    except InvalidOperation:
        pass
    date, _, frac = text.replace("T", " ").partition(".")
    digits = "".join(c for c in frac if c.isdigit())
    tail = frac[len(digits) :]
    try:
        stamp = datetime.fromisoformat(date + tail)
    except ValueError as err:
        raise ValueError(f"{text!r} is neither a number nor an ISO date-time") from err
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    whole = int(stamp.timestamp())
    return whole * 1_000_000_000 + int((digits + "000000000")[:9])


def decimal_ns(value: Decimal, scale: int, text: str) -> int:
    """``value * scale`` as int64 ns, checked before any huge integer is built."""
    ns = value * scale
    if not ns.is_finite() or not INT64[0] <= ns <= INT64[1]:
        raise ValueError(f"time {text!r:.40} is not a finite int64 count of nanoseconds")
    return int(ns)
