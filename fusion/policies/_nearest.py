"""Nearest: one group per reference frame, other sensors matched by nearest time.

Theory of operation
-------------------
Reference frames (say a 10 Hz LiDAR) wait in ``_refs``; every other sensor's
frames wait in ``_buf[sensor]``, sorted by ``t`` because each sensor's ``t``
strictly increases. For a reference at ``r``:

* a *matched* sensor contributes the one frame nearest to ``r`` within its
  tolerance (the earlier frame wins a tie);
* a *window* sensor (an IMU, a CAN bus) contributes every frame in
  ``[r - before, r + after]``, possibly none.

The group is *certain*, and emitted at once, when no future frame could change
it: a matched sensor has a frame at or after ``r`` still buffered (later frames
are farther away; if an earlier group took that frame, the next one decides,
unless the sensor is already past ``r + tolerance``), a window sensor has
delivered one at or after ``r + after``. The groups therefore do not depend on
how the sensors' arrivals interleave, only on their stamps, as long as no
buffer overflows and ``expire`` is not called. Only the sensors
not yet certain for the oldest reference are tracked (``_need``), so a push
costs O(1) unless it completes a group. Certainty is monotone in ``r``, so
groups resolve in reference order.

Each frame is used at most once. Frames older than a chosen one, and frames too
old for any future reference, are dropped as ``unmatched``. If a required
sensor has nothing for a reference, the reference is dropped as
``incomplete`` (its would-be partners stay available to the next one); an
optional sensor without a frame is listed in ``missing``.

``expire(deadline)`` resolves references before the deadline with whatever is
buffered (the hub calls it when ``max_latency`` passes); frames arriving later
with ``t < deadline`` are dropped as ``late``. Each buffer holds at most
``max_buffer`` frames (``queue_full`` drops the oldest), so a silent reference
sensor cannot grow memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from fusion._frames import Frame, FrameGroup
from fusion.errors import ConfigError
from fusion.policies._base import PolicyBase


class Nearest(PolicyBase):
    """Group each reference frame with the nearest frames of the other sensors (contract)."""

    def __init__(
        self,
        reference: str,
        sensors: Iterable[str],
        tolerance: int | Mapping[str, int],
        optional: Iterable[str] = (),
        windows: Mapping[str, tuple[int, int]] | None = None,
        max_buffer: int = 1024,
    ) -> None:
        names = list(sensors)
        super().__init__(names)
        if reference not in names:
            raise ConfigError(f"reference {reference!r} must be one of sensors {names}")
        self.reference = reference
        self.windows = dict(windows or {})
        self.optional = frozenset(optional)
        bad = (set(self.windows) | self.optional) - set(names)
        if bad:
            raise ConfigError(f"windows/optional name sensors not in {names}: {sorted(bad)}")
        if reference in self.windows or reference in self.optional:
            raise ConfigError(f"the reference {reference!r} cannot be windowed or optional")
        for name, (before, after) in self.windows.items():
            if before < 0 or after < 0:
                raise ConfigError(f"window of {name!r} must be non-negative, got {(before, after)}")
        if max_buffer < 1:
            raise ConfigError(f"max_buffer must be >= 1, got {max_buffer}")
        self.max_buffer = max_buffer
        self._matched = [s for s in names if s != reference and s not in self.windows]
        if isinstance(tolerance, Mapping):
            lacking = [s for s in self._matched if s not in tolerance]
            if lacking:
                raise ConfigError(f"tolerance gives no value for {lacking}")
            self.tolerance = {s: int(tolerance[s]) for s in self._matched}
        else:
            self.tolerance = dict.fromkeys(self._matched, int(tolerance))
        if any(v < 0 for v in self.tolerance.values()):
            raise ConfigError(f"tolerances must be non-negative, got {self.tolerance}")
        # How far before a reference time each sensor can still contribute.
        self._reach_back = {s: self.tolerance[s] for s in self._matched}
        self._reach_back.update({s: b for s, (b, _) in self.windows.items()})
        self._refs: deque[Frame] = deque()
        self._buf: dict[str, deque[Frame]] = {s: deque() for s in names if s != reference}
        self._need: dict[str, int] = {}
        self._last_ref_t: int | None = None

    # -- public, sans-I/O -----------------------------------------------------------

    def push(self, frame: Frame) -> list[FrameGroup]:
        """Add one frame; return the groups it makes certain."""
        if not self._admit(frame):
            return []
        out: list[FrameGroup] = []
        sensor = frame.sensor
        self._held(1)
        if sensor == self.reference:
            self._refs.append(frame)
            self._last_ref_t = frame.t
            if len(self._refs) == 1:
                self._start_waiting(frame.t)
                if not self._need:
                    self._resolve(out)
            return out
        buf = self._buf[sensor]
        buf.append(frame)
        if len(buf) > self.max_buffer:
            self._drop(buf.popleft(), "queue_full")
            self._buffered -= 1
        self._prune(sensor)
        need = self._need
        if sensor in need and frame.t >= need[sensor]:
            del need[sensor]
            if not need:
                self._resolve(out)
        return out

    def expire(self, deadline_ns: int) -> list[FrameGroup]:
        """Resolve references with ``t < deadline_ns`` now, with what is buffered."""
        out: list[FrameGroup] = []
        self._advance_watermark(deadline_ns)
        while self._refs and self._refs[0].t < deadline_ns:
            self._emit_front(out)
        self._need = {}
        if self._refs:
            self._start_waiting(self._refs[0].t)
            if not self._need:
                self._resolve(out)
        for sensor in self._buf:
            self._prune(sensor)
        return out

    def drain(self) -> list[FrameGroup]:
        """End of stream: resolve every reference, drop frames no group used."""
        out: list[FrameGroup] = []
        while self._refs:
            self._emit_front(out)
        for buf in self._buf.values():
            for frame in buf:
                self._drop(frame, "unmatched")
            self._buffered -= len(buf)
            buf.clear()
        self._need = {}
        return out

    # -- internals --------------------------------------------------------------------

    def _start_waiting(self, r: int) -> None:
        """Record which sensors are not yet certain for a reference at ``r``."""
        last = self._last_t
        need: dict[str, int] = {}
        for s in self._matched:
            # Certain once a frame at or after r is still buffered: later ones are
            # farther. If an earlier group took it, the next frame may still be
            # within tolerance, unless the last one already lies beyond it.
            t = last.get(s, r - 1)
            if t < r or (not self._buf[s] and t < r + self.tolerance[s]):
                need[s] = r
        for s, (_, after) in self.windows.items():
            if last.get(s, r + after - 1) < r + after:
                need[s] = r + after
        self._need = need

    def _resolve(self, out: list[FrameGroup]) -> None:
        """Emit the oldest references while they are certain."""
        while True:
            self._emit_front(out)
            if not self._refs:
                self._need = {}
                return
            self._start_waiting(self._refs[0].t)
            if self._need:
                return

    def _floor(self) -> int | None:
        """Earliest reference time any future group can have."""
        if self._refs:
            floor = self._refs[0].t
        elif self._last_ref_t is not None:
            floor = self._last_ref_t + 1
        else:
            floor = None
        wm = self._watermark
        if wm is not None and (floor is None or wm > floor):
            floor = wm
        return floor

    def _prune(self, sensor: str) -> None:
        floor = self._floor()
        if floor is None:
            return
        limit = floor - self._reach_back[sensor]
        buf = self._buf[sensor]
        while buf and buf[0].t < limit:
            self._drop(buf.popleft(), "unmatched")
            self._buffered -= 1

    def _emit_front(self, out: list[FrameGroup]) -> None:
        ref = self._refs.popleft()
        r = ref.t
        picks: dict[str, int] = {}  # sensor -> index of the chosen frame in its buffer
        spans: dict[str, tuple[int, int]] = {}  # window sensor -> [lo, hi) indices
        missing: list[str] = []
        complete = True
        for s in self._matched:
            k = _nearest_index(self._buf[s], r, self.tolerance[s])
            if k is None:
                missing.append(s)
                complete = complete and s in self.optional
            else:
                picks[s] = k
        for s, (before, after) in self.windows.items():
            buf = self._buf[s]
            lo = _first_at_or_after(buf, r - before)
            hi = _first_at_or_after(buf, r + after + 1)
            if lo == hi:
                missing.append(s)
                complete = complete and s in self.optional
            spans[s] = (lo, hi)
        if not complete:
            self._drop(ref, "incomplete")
            self._buffered -= 1
            self._groups_dropped += 1
            return
        frames: dict[str, Frame | list[Frame]] = {self.reference: ref}
        used = 1
        for s in self.sensors:
            if s in picks:
                frames[s] = self._take(s, picks[s], picks[s] + 1)[0]
                used += 1
            elif s in spans:
                lo, hi = spans[s]
                taken = self._take(s, lo, hi)
                frames[s] = taken
                used += len(taken)
        self._buffered -= used
        group = FrameGroup(r, frames, frozenset(missing))
        self._emitted(group, used)
        out.append(group)

    def _take(self, sensor: str, lo: int, hi: int) -> list[Frame]:
        """Remove frames ``[lo, hi)`` of a buffer; frames before ``lo`` are dropped."""
        buf = self._buf[sensor]
        for _ in range(lo):
            self._drop(buf.popleft(), "unmatched")
        self._buffered -= lo
        return [buf.popleft() for _ in range(hi - lo)]


def _first_at_or_after(buf: deque[Frame], t: int) -> int:
    """Index of the first frame with ``frame.t >= t`` (``len(buf)`` if none)."""
    for i, frame in enumerate(buf):
        if frame.t >= t:
            return i
    return len(buf)


def _nearest_index(buf: deque[Frame], r: int, tol: int) -> int | None:
    """Index of the frame nearest ``r`` within ``tol`` (earlier wins ties), or None."""
    best: int | None = None
    best_d = tol + 1
    for i, frame in enumerate(buf):
        d = frame.t - r
        if d > tol:
            break
        if d < 0:
            d = -d
        if d < best_d:
            best, best_d = i, d
    return best
