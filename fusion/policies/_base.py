"""What every sync policy shares: the ``SyncPolicy`` protocol, the statistics, the accounting.

:class:`SyncPolicy` is the contract :class:`~fusion.SyncHub` and
:class:`~fusion.Pipeline` type against: any object with ``push``, ``expire``,
``drain`` and ``stats`` is a policy, whether or not it subclasses
:class:`PolicyBase` (which only holds the counters ours share).

The accounting invariant every policy keeps: each pushed frame ends up in
exactly one emitted group or is counted as dropped with a reason; no frame is
emitted twice; emitted group times never decrease.

Drop reasons (``PolicyStatistics.dropped`` keys are ``(sensor, reason)``):

``unknown_sensor``  the policy was not told about this sensor
``out_of_order``    ``t`` not after the sensor's previous frame
``late``            ``t`` before a deadline already passed to ``expire``
``queue_full``      the sensor's buffer was at its limit; the oldest frame went
``unmatched``       no group could use the frame
``incomplete``      the frame's group lacked a required sensor and was dropped
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from fusion._frames import Frame, FrameGroup
from fusion.errors import ConfigError


@dataclass(frozen=True, slots=True)
class PolicyStatistics:
    """A snapshot of a policy's counters."""

    pushed: int
    """Frames given to ``push``."""
    groups_emitted: int
    """Groups returned, complete or partial."""
    groups_partial: int
    """Emitted groups with at least one optional sensor missing."""
    groups_dropped: int
    """Groups abandoned because a required sensor had nothing (their frames are
    counted in ``dropped`` as ``incomplete``)."""
    frames_emitted: int
    """Frames inside emitted groups."""
    buffered: int
    """Frames held now, waiting for a decision."""
    peak_buffered: int
    """Most frames ever held at once."""
    dropped: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """Frames dropped, by ``(sensor, reason)``."""

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def dropped_by_reason(self) -> dict[str, int]:
        """Drops summed over sensors."""
        out: dict[str, int] = {}
        for (_, reason), n in self.dropped.items():
            out[reason] = out.get(reason, 0) + n
        return out


@runtime_checkable
class SyncPolicy(Protocol):
    """A sans-I/O sync policy (contract): frames in, groups out, no clocks and no I/O.

    Every frame given to ``push`` must end in exactly one returned group or be
    counted in ``stats.dropped``; returned group times never decrease. The hub
    calls nothing else, and never two methods at once.
    """

    def push(self, frame: Frame) -> list[FrameGroup]:
        """Take one frame; return the groups it completes (possibly none)."""
        ...

    def expire(self, deadline_ns: int) -> list[FrameGroup]:
        """Resolve everything that can no longer complete before ``deadline_ns``."""
        ...

    def drain(self) -> list[FrameGroup]:
        """End of stream: resolve every frame still held."""
        ...

    @property
    def stats(self) -> PolicyStatistics:
        """Counters so far: groups emitted, frames dropped by sensor and reason."""
        ...


class PolicyBase:
    """Counters and helpers shared by the policies; holds no sync logic."""

    def __init__(self, sensors: list[str]) -> None:
        if not sensors:
            raise ConfigError("a sync policy needs at least one sensor")
        if len(set(sensors)) != len(sensors):
            raise ConfigError(f"sensor names must be unique, got {sensors}")
        self.sensors: tuple[str, ...] = tuple(sensors)
        self._pushed = 0
        self._groups = 0
        self._partial = 0
        self._groups_dropped = 0
        self._frames_out = 0
        self._buffered = 0
        self._peak = 0
        self._dropped: dict[tuple[str, str], int] = {}
        self._last_t: dict[str, int] = {}
        self._watermark: int | None = None

    @property
    def stats(self) -> PolicyStatistics:
        """Counters so far (contract): groups emitted, frames dropped by sensor and reason."""
        return PolicyStatistics(
            pushed=self._pushed,
            groups_emitted=self._groups,
            groups_partial=self._partial,
            groups_dropped=self._groups_dropped,
            frames_emitted=self._frames_out,
            buffered=self._buffered,
            peak_buffered=self._peak,
            dropped=MappingProxyType(dict(self._dropped)),
        )

    def _drop(self, frame: Frame, reason: str) -> None:
        key = (frame.sensor, reason)
        self._dropped[key] = self._dropped.get(key, 0) + 1

    def _admit(self, frame: Frame) -> bool:
        """Count the push and reject frames no policy may buffer. True if admitted."""
        self._pushed += 1
        last = self._last_t.get(frame.sensor)
        if last is None:
            if frame.sensor not in self.sensors:
                self._drop(frame, "unknown_sensor")
                return False
        elif frame.t <= last:
            self._drop(frame, "out_of_order")
            return False
        if self._watermark is not None and frame.t < self._watermark:
            self._last_t[frame.sensor] = frame.t
            self._drop(frame, "late")
            return False
        self._last_t[frame.sensor] = frame.t
        return True

    def _held(self, n: int) -> None:
        self._buffered += n
        if self._buffered > self._peak:
            self._peak = self._buffered

    def _emitted(self, group: FrameGroup, n_frames: int) -> None:
        self._groups += 1
        self._frames_out += n_frames
        if group.missing:
            self._partial += 1

    def _advance_watermark(self, deadline: int) -> bool:
        """Raise the watermark to ``deadline``; False if it was already there."""
        if self._watermark is not None and deadline <= self._watermark:
            return False
        self._watermark = deadline
        return True
