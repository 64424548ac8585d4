"""Dates for reference-clock times: the wall clock (UTC) against the host's monotonic clock.

Theory of operation. Live frames are aligned to the *reference clock*: the
runtime clock's ``now()``, which is the host's monotonic clock
(``time.monotonic_ns``) outside tests. It never jumps, which is what sync and
deadlines need, but it counts from boot, so ``t = 728_738_164_000`` is not a
date. A :class:`WallAnchor` pairs one monotonic instant with the UTC time
(``time.time_ns``) read at the same moment; the recorder stores one when it
starts and refreshes it with every chunk. :class:`WallClock` converts with
the latest anchor at or before the instant asked about, so an NTP step of
the wall clock shows up as a step between two anchors, never as a slow drift
(skew) spread over the session.

``t_sensor`` is on the sensor's own clock and has no date unless the sensor
stamps in UTC; ``t_arrival`` is on the reference clock like ``t``.
:func:`reference_to_utc` is the one-line form.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fusion.errors import ConfigError


@dataclass(frozen=True, order=True, slots=True)
class WallAnchor:
    """UTC ns at a reference-clock (monotonic) ns, read together."""

    reference_ns: int
    utc_ns: int

    @property
    def offset_ns(self) -> int:
        """UTC minus reference time."""
        return self.utc_ns - self.reference_ns

    def as_list(self) -> list[int]:
        """``[reference_ns, utc_ns]``, as stored in a recording."""
        return [self.reference_ns, self.utc_ns]

    @classmethod
    def from_wire(cls, value: object) -> WallAnchor | None:
        """``[reference_ns, utc_ns]`` from a file, or ``None`` if it is not that."""
        if (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(type(v) is int for v in value)
        ):
            return cls(int(value[0]), int(value[1]))
        return None


def sample_anchor(
    reference: Callable[[], int] = time.monotonic_ns,
    wall: Callable[[], int] = time.time_ns,
    tries: int = 3,
) -> WallAnchor:
    """Read both clocks; the reference read brackets the wall read (tightest of ``tries``)."""
    best: tuple[int, int, int] | None = None
    for _ in range(max(1, tries)):
        before = reference()
        utc = wall()
        after = reference()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2, utc)
    assert best is not None
    return WallAnchor(best[1], best[2])


class WallClock:
    """Converts reference-clock ns to UTC ns (and back) with a list of anchors."""

    __slots__ = ("_anchors", "_keys")

    def __init__(self, anchors: Iterable[WallAnchor]) -> None:
        ordered = sorted(set(anchors))
        if not ordered:
            raise ConfigError("a WallClock needs at least one anchor")
        self._anchors = ordered
        self._keys = [a.reference_ns for a in ordered]

    @property
    def anchors(self) -> tuple[WallAnchor, ...]:
        return tuple(self._anchors)

    def anchor_for(self, t_ns: int) -> WallAnchor:
        """The latest anchor at or before ``t_ns`` (the first one for earlier times)."""
        i = bisect_right(self._keys, t_ns) - 1
        return self._anchors[max(i, 0)]

    def to_utc(self, t_ns: int) -> int:
        """UTC ns (since the Unix epoch) of reference time ``t_ns``."""
        return t_ns + self.anchor_for(t_ns).offset_ns

    def from_utc(self, utc_ns: int) -> int:
        """Reference time of UTC ``utc_ns`` (the inverse of :meth:`to_utc` between steps)."""
        best = self._anchors[0]
        for anchor in self._anchors:
            if anchor.utc_ns <= utc_ns:
                best = anchor
        return utc_ns - best.offset_ns

    def steps(self, threshold_ns: int = 1_000_000) -> list[tuple[int, int]]:
        """``(reference ns, step ns)`` where the wall clock stepped by over ``threshold_ns``."""
        out = []
        for a, b in zip(self._anchors, self._anchors[1:], strict=False):
            step = b.offset_ns - a.offset_ns
            if abs(step) > threshold_ns:
                out.append((b.reference_ns, step))
        return out

    def __repr__(self) -> str:
        return f"WallClock({len(self._anchors)} anchors)"


def reference_to_utc(t_ns: int, anchors: Iterable[WallAnchor] | WallClock) -> int:
    """UTC ns of reference-clock time ``t_ns`` (``Recording.wall_clock`` has the anchors)."""
    clock = anchors if isinstance(anchors, WallClock) else WallClock(anchors)
    return clock.to_utc(t_ns)
