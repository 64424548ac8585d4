"""Stream timestamps to int nanoseconds, exactly, and what to do when a frame has none.

Theory of operation. A video stream stamps each frame with an integer PTS in
units of the stream's ``time_base`` (a rational: 1/90000 for MPEG-TS, 1/1000
for Matroska, 1/15360 for many MP4s). The instant is ``pts * time_base``
seconds. We compute ``pts * num * 10**9 / den`` in integers and round to the
nearest nanosecond (halves up), so there is no float drift however long the
stream runs: frame 10 million of a 1/90000 stream is stamped exactly as frame 0
plus its PTS difference.

``t_sensor`` is the stream's own time: a file that starts at PTS 1000 gives a
first frame at ``1000 * time_base``, not 0, because that is what the sensor
wrote (pass ``origin_pts`` to measure from another point). Variable frame rate
needs nothing special: each frame carries its own PTS and we never compute
time from a frame index.

Frames without a PTS (raw elementary streams, some AVI and live encoders) get
a documented fallback, in this order, recorded per frame as ``pts_source``:

1. ``"dts"``: the decode timestamp the demuxer gave the packet;
2. ``"extrapolated"``: the previous frame's time plus this frame's
   ``duration`` (or the stream's nominal period when duration is unknown);
3. ``"origin"``: the first frame of a stream with neither gets time 0.

A fallback stamp is never earlier than the previous frame's, so the timeline
stays monotonic.

This module is sans-I/O: no PyAV objects, only integers.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from fusion.errors import ConfigError

PtsSource = Literal["pts", "dts", "extrapolated", "origin"]

NS_PER_S = 1_000_000_000


class Timeline:
    """Maps one stream's timestamps (in its ``time_base``) to int ns.

    ``nominal_period_ns`` is used only to extrapolate frames that have neither
    PTS nor duration; pass the stream's average frame period when known.
    """

    __slots__ = ("_den", "_last_ns", "_mul", "nominal_period_ns", "origin_pts", "time_base")

    def __init__(
        self,
        time_base: Fraction | tuple[int, int],
        *,
        origin_pts: int = 0,
        nominal_period_ns: int | None = None,
    ) -> None:
        tb = Fraction(*time_base) if isinstance(time_base, tuple) else Fraction(time_base)
        if tb <= 0:
            raise ConfigError(f"time_base must be positive, got {tb}")
        self.time_base = tb
        self.origin_pts = int(origin_pts)
        self.nominal_period_ns = nominal_period_ns
        self._mul = tb.numerator * NS_PER_S
        self._den = tb.denominator
        self._last_ns: int | None = None

    def to_ns(self, ts: int) -> int:
        """``(ts - origin_pts) * time_base`` in ns, rounded to nearest (halves up)."""
        return ((ts - self.origin_pts) * self._mul * 2 + self._den) // (2 * self._den)

    def duration_ns(self, ticks: int) -> int:
        """A duration of ``ticks`` time-base units in ns (same rounding)."""
        return (ticks * self._mul * 2 + self._den) // (2 * self._den)

    def stamp(
        self, pts: int | None, dts: int | None = None, duration: int | None = None
    ) -> tuple[int, PtsSource]:
        """The frame's time in ns and where it came from (see the module docstring)."""
        source: PtsSource
        if pts is not None:
            t, source = self.to_ns(pts), "pts"
        elif dts is not None:
            t, source = self.to_ns(dts), "dts"
            if self._last_ns is not None and t < self._last_ns:
                t = self._last_ns
        elif self._last_ns is not None:
            step = self.duration_ns(duration) if duration else (self.nominal_period_ns or 0)
            t, source = self._last_ns + step, "extrapolated"
        else:
            t, source = 0, "origin"
        self._last_ns = t
        return t, source

    def reset(self) -> None:
        """Forget the previous frame (a live stream reconnected: a new timeline)."""
        self._last_ns = None

    def __repr__(self) -> str:
        return f"Timeline(time_base={self.time_base}, origin_pts={self.origin_pts})"
