"""Times, durations and sizes as the command line reads and prints them.

One home for every unit the commands show or take: ``20ms`` and ``1.5s`` in
(:func:`parse_duration`, a unit always required so nothing is ambiguous),
seconds (:func:`parse_seconds`), sizes (:func:`parse_size`), dates, epoch
stamps, seconds and byte counts out. Nothing here imports another command
module, so any command can use it at load time.

Every parser is strict: ``inf``, ``nan``, a value that does not fit and a value
outside the option's range are refused with one line naming the option and
the accepted range (``--start: expected seconds from 0 to 1e+09 (about 31
years), found 'inf'``), never an ``OverflowError`` later. ``seconds_arg``,
``duration_arg`` and ``size_arg`` are the same parsers as argparse ``type=``
functions. Numbers are read exactly (``Fraction``), so ``9223372036854775807ns``
is that many nanoseconds, not the nearest float.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
from collections.abc import Callable
from fractions import Fraction

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60 * 10**9}
_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_FORM = re.compile(rf"\s*{_NUMBER}\s*(ns|us|µs|ms|s|min)\s*")
_MAX_TEXT = 64  # characters: longer is no number a user typed

MAX_DURATION_NS = 10**18
"""The longest duration an option takes: 10**18 ns, about 31.7 years. Far inside int64
(9.2e18 ns), so a stamp plus a tolerance or window never wraps."""
MAX_SECONDS = 1e9
"""The most seconds an option takes (``--start``, ``--duration``...): the same 31.7 years."""
MAX_SIZE = 1 << 60
"""The largest size an option takes: 1 EiB."""

_YEARS = "about 31 years"


def _too_long(text: str) -> bool:
    return len(text) > _MAX_TEXT


def parse_duration(
    text: str, *, what: str = "duration", minimum: int = 0, maximum: int = MAX_DURATION_NS
) -> int:
    """``text`` (``20ms``, ``1.5s``, ``500us``, ``250ns``, ``2min``) in nanoseconds.

    ``ValueError`` naming ``what`` (the option) and the accepted range for text
    that is not a duration with a unit, or outside ``minimum..maximum`` ns.
    """
    m = None if _too_long(text) else _FORM.fullmatch(text)
    if m is None:
        raise ValueError(
            f"{what}: expected a duration with a unit (20ms, 1.5s, 500us, 2min), "
            f"found {_shown(text)}"
        )
    ns = round(Fraction(m.group(1)) * _UNITS[m.group(2)])
    if not minimum <= ns <= maximum:
        raise ValueError(
            f"{what}: expected a duration from {_ns_text(minimum)} to {_ns_text(maximum)} "
            f"({_YEARS}), found {_shown(text)}"
        )
    return ns


def parse_seconds(
    text: str | float,
    *,
    what: str = "seconds",
    minimum: float = 0.0,
    maximum: float = MAX_SECONDS,
    above: bool = False,
) -> float:
    """``text`` as a finite number of seconds in ``minimum..maximum`` (``above``:
    strictly more than ``minimum``); ``ValueError`` naming ``what`` and the range."""
    low = f"more than {minimum:g}" if above else f"from {minimum:g}"
    range_text = f"{low} to {maximum:g} ({_YEARS})"
    try:
        value = float(text) if not _too_long(str(text)) else math.nan
    except ValueError:
        value = math.nan
    ok = math.isfinite(value) and (value > minimum if above else value >= minimum)
    if not ok or value > maximum:
        raise ValueError(f"{what}: expected seconds {range_text}, found {_shown(text)}")
    return value


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(rf"{_NUMBER}([a-z]*)")


def parse_size(text: str, *, what: str = "size", minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    """``"4GiB"``, ``"500MB"``, ``"1024"`` -> bytes; ``ValueError`` naming ``what`` and the
    range for anything else (``inf``, ``nan``, ``-1``, ``1e300``, an unknown unit)."""
    raw = str(text).strip().lower().replace(" ", "")
    m = None if _too_long(raw) else _SIZE.fullmatch(raw)
    if m is None or m.group(2) not in _SIZE_UNITS:
        raise ValueError(f"{what}: expected a size like '4GiB' or '500MB', found {_shown(text)}")
    size = int(Fraction(m.group(1)) * _SIZE_UNITS[m.group(2)])
    if not minimum <= size <= maximum:
        raise ValueError(
            f"{what}: expected a size from {minimum} B to {maximum} B (1 EiB), found {_shown(text)}"
        )
    return size


def _shown(text: object) -> str:
    text = str(text)
    return repr(text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "...")


def _ns_text(ns: int) -> str:
    if ns == 0:
        return "0"
    if ns >= 10**9 and ns % 10**9 == 0:
        return f"{ns // 10**9} s"
    return f"{ns} ns"


def _argparse(parse: Callable[[str], object]) -> Callable[[str], object]:
    def convert(text: str) -> object:
        try:
            return parse(text)
        except ValueError as err:  # argparse names the option; our message says the range
            raise argparse.ArgumentTypeError(str(err).partition(": ")[2] or str(err)) from None

    return convert


def seconds_arg(
    option: str, *, above: bool = False, maximum: float = MAX_SECONDS
) -> Callable[[str], float]:
    """An argparse ``type=`` for ``option``: :func:`parse_seconds`."""
    return _argparse(  # type: ignore[return-value]
        lambda text: parse_seconds(text, what=option, above=above, maximum=maximum)
    )


def duration_arg(option: str) -> Callable[[str], int]:
    """An argparse ``type=`` for ``option``: :func:`parse_duration` (nanoseconds)."""
    return _argparse(lambda text: parse_duration(text, what=option))  # type: ignore[return-value]


def size_arg(option: str) -> Callable[[str], int]:
    """An argparse ``type=`` for ``option``: :func:`parse_size` (bytes)."""
    return _argparse(lambda text: parse_size(text, what=option))  # type: ignore[return-value]


def count_arg(option: str, *, minimum: int = 1, maximum: int = 1 << 16) -> Callable[[str], int]:
    """An argparse ``type=`` for a whole number of things in ``minimum..maximum``."""

    def parse(text: str) -> int:
        try:
            value = int(text) if not _too_long(text) else None
        except ValueError:
            value = None
        if value is None or not minimum <= value <= maximum:
            raise ValueError(
                f"{option}: expected a whole number from {minimum} to {maximum}, "
                f"found {_shown(text)}"
            )
        return value

    return _argparse(parse)  # type: ignore[return-value]


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
