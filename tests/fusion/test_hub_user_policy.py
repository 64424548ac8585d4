"""A policy of the user's own, not derived from ours, runs through SyncHub.

``fusion.SyncPolicy`` is a protocol: anything with ``push``, ``expire``,
``drain`` and ``stats`` is a policy. ``TimeBuckets`` below subclasses nothing
of ours; mypy accepts it where a ``SyncPolicy`` is expected (the annotated
assignments) and ``isinstance`` does at run time.
"""

from __future__ import annotations

from types import MappingProxyType

import anyio

from fusion import (
    Frame,
    FrameGroup,
    PolicyStatistics,
    SensorSpec,
    SyncHub,
    SyncPolicy,
    VirtualClock,
)
from tests.fusion.harness import check_accounting, feed
from tests.fusion.test_hub import ListSource, collect

MS = 1_000_000


class TimeBuckets:
    """Every frame with ``k * width <= t < (k + 1) * width`` in one group, at ``t = k * width``.

    A bucket goes out once ``expire`` passes its end (or at ``drain``); a frame
    for a bucket already out is dropped as ``late``.
    """

    def __init__(self, sensors: list[str], width: int) -> None:
        self.sensors = tuple(sensors)
        self.width = width
        self._buckets: dict[int, list[Frame]] = {}
        self._closed_below = 0  # buckets below this index are out
        self._pushed = self._groups = self._frames_out = self._peak = 0
        self._dropped: dict[tuple[str, str], int] = {}

    def push(self, frame: Frame) -> list[FrameGroup]:
        self._pushed += 1
        k = frame.t // self.width
        reason = "unknown_sensor" if frame.sensor not in self.sensors else None
        if reason is None and k < self._closed_below:
            reason = "late"
        if reason is not None:
            key = (frame.sensor, reason)
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return []
        self._buckets.setdefault(k, []).append(frame)
        self._peak = max(self._peak, self._held())
        return []

    def expire(self, deadline_ns: int) -> list[FrameGroup]:
        return self._emit_below(deadline_ns // self.width)

    def drain(self) -> list[FrameGroup]:
        return self._emit_below(max(self._buckets, default=-1) + 1)

    @property
    def stats(self) -> PolicyStatistics:
        return PolicyStatistics(
            pushed=self._pushed,
            groups_emitted=self._groups,
            groups_partial=0,
            groups_dropped=0,
            frames_emitted=self._frames_out,
            buffered=self._held(),
            peak_buffered=self._peak,
            dropped=MappingProxyType(dict(self._dropped)),
        )

    def _held(self) -> int:
        return sum(len(b) for b in self._buckets.values())

    def _emit_below(self, end: int) -> list[FrameGroup]:
        out = []
        for k in sorted(k for k in self._buckets if k < end):
            members = self._buckets.pop(k)
            frames: dict[str, Frame | list[Frame]] = {s: [] for s in self.sensors}
            for f in members:
                listed = frames[f.sensor]
                assert isinstance(listed, list)
                listed.append(f)
            out.append(FrameGroup(k * self.width, frames))
            self._groups += 1
            self._frames_out += len(members)
        self._closed_below = max(self._closed_below, end)
        return out


class NoStats:
    """Has push, expire and drain but no ``stats``: not a policy."""

    def push(self, frame: Frame) -> list[FrameGroup]:
        return []

    def expire(self, deadline_ns: int) -> list[FrameGroup]:
        return []

    def drain(self) -> list[FrameGroup]:
        return []


def test_a_class_with_the_four_members_is_a_sync_policy_and_one_without_stats_is_not() -> None:
    policy: SyncPolicy = TimeBuckets(["a"], 10)
    assert isinstance(policy, SyncPolicy)
    assert not isinstance(NoStats(), SyncPolicy)


def test_the_user_policy_keeps_the_accounting_invariant_under_the_shared_harness() -> None:
    policy = TimeBuckets(["a", "b"], 10)
    groups, frames = feed(policy, [("a", 1), ("b", 5), ("a", 12), ("c", 13)])
    groups += policy.expire(10)  # bucket 0 out
    more, late = feed(policy, [("b", 3)])
    groups += more + policy.drain()
    check_accounting(policy, frames + late, groups)
    assert [(g.t, sorted(g.keys)) for g in groups] == [
        (0, [("a", 0), ("b", 0)]),
        (10, [("a", 1)]),
    ]
    assert dict(policy.stats.dropped) == {("c", "unknown_sensor"): 1, ("b", "late"): 1}


async def test_sync_hub_runs_a_user_policy_and_reports_its_counters() -> None:
    clock = VirtualClock()
    a = ListSource(SensorSpec("a"), [i * 10 * MS for i in range(20)], gap=10 * MS)
    b = ListSource(SensorSpec("b"), [0, 120 * MS], gap=150 * MS)  # arrive at 150 and 300 ms
    policy: SyncPolicy = TimeBuckets(["a", "b"], 50 * MS)
    hub = SyncHub(policy, max_latency=30 * MS, clock=clock)
    with anyio.fail_after(5):
        async with clock.autojump():
            groups = await collect(hub, [a, b])
    # b's frame at t=0 arrives after bucket 0 expired (50 ms + max_latency): late.
    # Its frame at 120 ms arrives at 300 ms, after bucket 2 (100-150 ms) went out at ~190 ms.
    assert [g.t for g in groups] == [0, 50 * MS, 100 * MS, 150 * MS]
    assert [len(g.members()) for g in groups] == [5, 5, 5, 5]
    assert all(not g.frames["b"] for g in groups)
    stats = hub.statistics()
    assert stats.groups_emitted == 4
    assert stats.dropped == {("b", "late"): 2}
    assert stats.sensors["b"].dropped == {"late": 2}
    assert stats.groups_expired >= 3  # the last bucket may go out at the final drain
