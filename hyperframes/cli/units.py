"""Times, durations and sizes as the command line reads and prints them.

One home for every unit the commands show or take: ``20ms`` and ``1.5s`` in
(:func:`parse_duration`, a unit always required so nothing is ambiguous),
dates, epoch stamps, seconds and byte counts out. Nothing here imports another
command module, so any command can use it at load time.
"""

from __future__ import annotations

import datetime
import re

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60 * 10**9}
_FORM = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ns|us|µs|ms|s|min)\s*")


def parse_duration(text: str, *, what: str = "duration") -> int:
    """``text`` (``20ms``, ``1.5s``, ``500us``, ``250ns``, ``2min``) in nanoseconds."""
    m = _FORM.fullmatch(text)
    if m is None:
        raise ValueError(
            f"{what}: expected a duration with a unit (20ms, 1.5s, 500us, 2min), found {text!r}"
        )
    return round(float(m.group(1)) * _UNITS[m.group(2)])


def stamp(ns: int | None, utc_ns: int | None = None) -> str:
    """``2026-11-29 23:49:14.123 UTC, 00:49:14.123 local (epoch 1796000954.123 s)``.

    ``utc_ns`` is ``ns`` dated with the recording's wall clock; without it, a
    value after 1973 is taken as an epoch stamp and a small one is not a date.
    """
    if ns is None:
        return "-"
    if utc_ns is None and ns > 10**17:
        utc_ns = ns
    if utc_ns is None:
        return f"{ns / 1e9:.6f} s on the monotonic clock (no wall-clock record)"
    epoch = f"{utc_ns // 10**9}.{utc_ns % 10**9 // 10**6:03d}"
    return f"{utc_text(utc_ns)}, {local_text(utc_ns)} (epoch {epoch} s)"


def utc_text(utc_ns: int) -> str:
    """``2026-11-29 23:49:14.123 UTC``."""
    date = datetime.datetime.fromtimestamp(utc_ns // 10**9, tz=datetime.UTC)
    return f"{date:%Y-%m-%d %H:%M:%S}.{utc_ns % 10**9 // 10**6:03d} UTC"


def local_text(utc_ns: int) -> str:
    """``2026-11-30 00:49:14.123 CET`` (the machine's time zone)."""
    date = datetime.datetime.fromtimestamp(utc_ns // 10**9).astimezone()
    return f"{date:%Y-%m-%d %H:%M:%S}.{utc_ns % 10**9 // 10**6:03d} {date:%Z} local"


def iso_utc(utc_ns: int | None) -> str | None:
    """``2026-11-29T23:49:14.123456789Z`` (RFC 3339, to the nanosecond), ``None`` for ``None``."""
    if utc_ns is None:
        return None
    date = datetime.datetime.fromtimestamp(utc_ns // 10**9, tz=datetime.UTC)
    return f"{date:%Y-%m-%dT%H:%M:%S}.{utc_ns % 10**9:09d}Z"


def human_bytes(n: int) -> str:
    """``812 B``, ``3.4 MiB``: binary units, one decimal above a KiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def human_ns(ns: int) -> str:
    """A duration in seconds to the millisecond: ``12.345 s``."""
    return f"{ns / 1e9:.3f} s"
