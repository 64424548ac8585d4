"""Is a live stream continuous? Segments, silences and the opening burst (sans-I/O).

Theory of operation. A live sender is restarted, goes silent, or comes back
after a network outage; its timestamps show which. Between two consecutive
frames the sensor time advances ``ds`` and the arrival time ``da``. On an
unbroken stream the two agree within jitter. :class:`Continuity` compares them:

* ``ds < -threshold`` (back) or ``ds > da + threshold`` (forward, beyond the
  time that passed): the sender's clock jumped (a restarted encoder starts
  again near 0; a camera rebooted into another epoch). The frame opens a new
  **segment**: the clock model must start over instead of fitting the jump
  as skew, and readers must not fit one line across segments.
* ``da > threshold``: a **gap**, reported with its length whether or not the
  timestamps jumped. When the sensor time advanced by less than the gap
  without going back, it is a gap only: a demuxer that holds a stream's last
  frame until more data comes (MPEG-TS does) delivers it late with the next
  timestamp, and a sender that pauses its clock is caught by the clock
  model's own jump detection.

Without arrival times (a file) only a backward jump of more than
``threshold`` counts; a file's forward gap is what it recorded.

:class:`OpeningBurst` handles what a receiver buffered before the consumer
was ready. Opening a network stream, FFmpeg reads (probes) for a while and
then hands over everything it read at once: those frames all arrive "now",
so their delays (``t_arrival - t_sensor``) fall frame by frame until the
backlog is gone. Learnt as they are, the clock takes the first, late frame's
delay as the offset and aligns the backlog up to the probe time too late.
The burst holds frames while each one's delay is lower than every earlier
one's (the receiver is catching up) and, once a frame is not, releases them
with ``t_arrival = min(read time, t_sensor + lowest delay)``: the time they
would have arrived at the pace of the frames that followed. It never invents
a delay lower than one actually measured, so the clock's lower envelope
(:mod:`fusion._clock_envelope`) is not pulled below the truth. The burst is
bounded in frames and in sensor time.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from fusion._frames import Frame
from fusion.errors import ConfigError

S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Discontinuity:
    """What changed between a frame and the one before it (ns)."""

    sensor_step_ns: int
    """Sensor time from the previous frame to this one (negative: it went back)."""
    arrival_step_ns: int | None
    """Arrival time from the previous frame to this one; ``None`` without arrivals."""
    restarted: bool
    """The timestamps jumped: this frame starts a new segment."""
    gap_ns: int | None
    """Arrival gap before this frame when longer than the threshold."""

    def describe(self) -> str:
        """In words: ``stream restarted, timestamps jumped back 4.96 s``, ``no data for 2.10 s``."""
        parts = []
        if self.restarted:
            step = self.sensor_step_ns
            direction = "back" if step < 0 else "forward"
            parts.append(f"stream restarted, timestamps jumped {direction} {abs(step) / S:.2f} s")
        if self.gap_ns is not None:
            parts.append(f"{'after' if self.restarted else 'no data for'} {self.gap_ns / S:.2f} s")
            if self.restarted:
                parts[-1] += " without data"
        return " ".join(parts)


class Continuity:
    """Feeds on ``(t_sensor, t_arrival)`` per frame; says when a segment starts or a gap ends."""

    __slots__ = ("_last", "gaps", "segment", "threshold_ns")

    def __init__(self, threshold_ns: int = S) -> None:
        if threshold_ns <= 0:
            raise ConfigError(f"threshold_ns must be > 0, got {threshold_ns}")
        self.threshold_ns = int(threshold_ns)
        self._last: tuple[int, int | None] | None = None
        self.segment = 0
        """Segments started after the first (0 until the first jump)."""
        self.gaps = 0
        """Gaps longer than the threshold."""

    def observe(self, t_sensor: int, t_arrival: int | None) -> Discontinuity | None:
        """The discontinuity before this frame, or ``None`` when it follows on."""
        last, self._last = self._last, (t_sensor, t_arrival)
        if last is None:
            return None
        ds = t_sensor - last[0]
        da = None if t_arrival is None or last[1] is None else t_arrival - last[1]
        threshold = self.threshold_ns
        if da is None:
            restarted = ds < -threshold
            gap = None
        else:
            restarted = ds < -threshold or ds - da > threshold
            gap = da if da > threshold else None
        if not restarted and gap is None:
            return None
        self.segment += restarted
        self.gaps += gap is not None
        return Discontinuity(ds, da, restarted, gap)

    def reset(self) -> None:
        """Forget the previous frame (nothing to compare the next one with)."""
        self._last = None


class Stamped(Protocol):
    t_sensor: int
    t_arrival: int | None


F = TypeVar("F", bound=Stamped)


class OpeningBurst(Generic[F]):
    """Re-paces the backlog a live receiver hands over when it opens (see the module doc).

    ``push(item)`` returns the items ready to go on, in order, with
    ``t_arrival`` lowered where they were part of the burst; ``restart()``
    arms it again (a reconnect); ``flush()`` releases what is held.
    """

    def __init__(
        self, *, tolerance_ns: int = 1_000_000, max_items: int = 256, max_span_ns: int = 3 * S
    ) -> None:
        self.tolerance_ns = int(tolerance_ns)
        self.max_items = int(max_items)
        self.max_span_ns = int(max_span_ns)
        self._held: list[F] = []
        self._lowest = 0
        self._armed = True
        self.repaced = 0
        """Items whose ``t_arrival`` was lowered, since construction."""

    def restart(self) -> list[F]:
        """Arm for a new connection; returns anything still held."""
        out = self.flush()
        self._armed = True
        return out

    def push(self, item: F) -> list[F]:
        if not self._armed or item.t_arrival is None:
            return [*self.flush(), item]
        delay = item.t_arrival - item.t_sensor
        held = self._held
        if not held:
            held.append(item)
            self._lowest = delay
            return []
        if delay < self._lowest - self.tolerance_ns and (
            len(held) < self.max_items and item.t_sensor - held[0].t_sensor < self.max_span_ns
        ):
            held.append(item)  # still catching up on the backlog
            self._lowest = delay
            return []
        self._lowest = min(self._lowest, delay)
        out = self.flush()
        out.append(item)
        self._armed = False
        return out

    def flush(self) -> list[F]:
        held, self._held = self._held, []
        lowest = self._lowest
        for item in held:
            assert item.t_arrival is not None
            paced = item.t_sensor + lowest
            if paced < item.t_arrival:
                item.t_arrival = paced
                self.repaced += 1
        return held


class StreamWatch:
    """:class:`Continuity` for a source's frames: marks them and reports in words.

    ``watch.check(frame)`` sets ``meta["segment_start"]`` on a frame that opens
    a segment (the hub then restarts the sensor's clock model) and
    ``meta["gap_ns"]`` after a silence, counts both, and logs one line naming
    the sensor: ``imu: no data for 2.31 s``.
    """

    def __init__(self, sensor: str, threshold_ns: int = S, logger: Any = None) -> None:
        self.sensor = sensor
        self.continuity = Continuity(threshold_ns)
        self.gaps_ns: deque[int] = deque(maxlen=256)
        """Lengths of the latest gaps, newest last."""
        self._log = logger if logger is not None else logging.getLogger("fusion._continuity")

    @property
    def restarts(self) -> int:
        """Segments started after the first."""
        return self.continuity.segment

    def check(self, frame: Frame) -> Discontinuity | None:
        change = self.continuity.observe(frame.t_sensor, frame.t_arrival)
        if change is None:
            return None
        if change.restarted:
            frame.meta["segment_start"] = True
        if change.gap_ns is not None:
            frame.meta["gap_ns"] = change.gap_ns
            self.gaps_ns.append(change.gap_ns)
        self._log.warning("%s: %s", self.sensor, change.describe())
        return change

    def as_dict(self) -> dict[str, Any]:
        return {"restarts": self.restarts, "gaps_ns": list(self.gaps_ns)}
