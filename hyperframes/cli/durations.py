"""Durations on the command line: ``20ms``, ``1.5s``, ``500us``, ``250ns``, ``2min``."""

from __future__ import annotations

import re

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60 * 10**9}
_FORM = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ns|us|µs|ms|s|min)\s*")


def parse_duration(text: str, *, what: str = "duration") -> int:
    """``text`` in nanoseconds; a unit is required (``20ms``), so nothing is ambiguous."""
    m = _FORM.fullmatch(text)
    if m is None:
        raise ValueError(
            f"{what}: expected a duration with a unit (20ms, 1.5s, 500us, 2min), found {text!r}"
        )
    return round(float(m.group(1)) * _UNITS[m.group(2)])
