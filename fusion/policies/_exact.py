"""ExactTime: group frames whose ``t`` is identical across sensors.

Theory of operation
-------------------
Pending groups are kept by time in ``_pending`` (``t -> {sensor: frame}``) with
their times sorted in ``_times``. Because each sensor's ``t`` strictly
increases, a sensor whose latest frame is at or after a group's time will never
add to that group: it is *certainly absent*. A group is resolved as soon as it
is complete, or as soon as every sensor it lacks is certainly absent (emitted
with ``missing`` when those sensors are optional, dropped as ``incomplete``
otherwise).

Groups go out in time order. When a newer group completes while older ones are
still open, the older ones are resolved first, with what they have. This is
where we follow ROS ``message_filters``' ExactTime, which publishes the complete
set and discards older partial ones; we emit them when only optional sensors
are missing.

At most ``queue_size`` distinct times are open; a new one beyond that resolves
the oldest with what it has (``queue_full`` for its frames if it must be
dropped). ``expire(deadline)`` resolves every group before ``deadline`` the
same way, and frames that arrive later with ``t < deadline`` are dropped as
``late``.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable

from fusion._frames import Frame, FrameGroup
from fusion.errors import ConfigError
from fusion.policies._base import PolicyBase


class ExactTime(PolicyBase):
    """Group frames with identical ``t`` (contract)."""

    def __init__(
        self, sensors: Iterable[str], queue_size: int = 10, optional: Iterable[str] = ()
    ) -> None:
        super().__init__(list(sensors))
        if queue_size < 1:
            raise ConfigError(f"queue_size must be >= 1, got {queue_size}")
        self.queue_size = queue_size
        self.optional = frozenset(optional)
        unknown = self.optional - set(self.sensors)
        if unknown:
            raise ConfigError(f"optional sensors {sorted(unknown)} are not among {self.sensors}")
        self._n = len(self.sensors)
        self._required = frozenset(self.sensors) - self.optional
        self._pending: dict[int, dict[str, Frame]] = {}
        self._times: list[int] = []

    def push(self, frame: Frame) -> list[FrameGroup]:
        """Add one frame; return the groups it completes or makes certain."""
        if not self._admit(frame):
            return []
        t = frame.t
        out: list[FrameGroup] = []
        times = self._times
        members = self._pending.get(t)
        self._buffered += 1
        if self._buffered > self._peak:
            self._peak = self._buffered
        if members is None:
            members = self._pending[t] = {frame.sensor: frame}
            if not times or t > times[-1]:
                times.append(t)
            else:
                insort(times, t)
            if len(times) > self.queue_size:
                self._force_oldest(out, "queue_full")
        else:
            members[frame.sensor] = frame
            if len(members) == self._n:
                while times[0] != t:
                    self._force_oldest(out, "incomplete")
                self._emit_oldest(out)
        if times:
            self._resolve_certain(out)
        return out

    def expire(self, deadline_ns: int) -> list[FrameGroup]:
        """Resolve every group with ``t < deadline_ns`` now, with what it has."""
        out: list[FrameGroup] = []
        self._advance_watermark(deadline_ns)
        while self._times and self._times[0] < deadline_ns:
            self._force_oldest(out, "incomplete")
        return out

    def drain(self) -> list[FrameGroup]:
        """End of stream: resolve every open group."""
        out: list[FrameGroup] = []
        while self._times:
            self._force_oldest(out, "incomplete")
        return out

    def _resolve_certain(self, out: list[FrameGroup]) -> None:
        last = self._last_t
        times = self._times
        while times:
            t0 = times[0]
            members = self._pending[t0]
            for sensor in self.sensors:
                if sensor not in members and last.get(sensor, t0 - 1) < t0:
                    return  # this sensor may still deliver at t0
            self._force_oldest(out, "incomplete")

    def _emit_oldest(self, out: list[FrameGroup]) -> None:
        t = self._times.pop(0)
        members = self._pending.pop(t)
        ordered: dict[str, Frame | list[Frame]] = {
            s: members[s] for s in self.sensors if s in members
        }
        missing = frozenset(s for s in self.sensors if s not in members)
        group = FrameGroup(t, ordered, missing)
        self._buffered -= len(members)
        self._emitted(group, len(members))
        out.append(group)

    def _force_oldest(self, out: list[FrameGroup], reason: str) -> None:
        members = self._pending[self._times[0]]
        if self._required <= members.keys():
            self._emit_oldest(out)
            return
        t = self._times.pop(0)
        del self._pending[t]
        self._buffered -= len(members)
        self._groups_dropped += 1
        for frame in members.values():
            self._drop(frame, reason)
