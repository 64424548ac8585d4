"""ExactTime: identical stamps, optional sensors, ordering and bounds."""

from __future__ import annotations

from fusion import Frame
from fusion.policies import ExactTime
from tests.fusion.harness import check_accounting, feed


class TestExactTime:
    def test_groups_frames_with_identical_time_as_soon_as_complete(self) -> None:
        policy = ExactTime(["a", "b"])
        assert policy.push(Frame("a", 0, 10)) == []
        out = policy.push(Frame("b", 0, 10))
        assert [(g.t, sorted(g.frames)) for g in out] == [(10, ["a", "b"])]

    def test_unmatched_stamps_are_dropped_once_certainly_alone(self) -> None:
        policy = ExactTime(["a", "b"])
        groups, frames = feed(policy, [("a", 5), ("b", 10), ("a", 10)])
        assert [g.t for g in groups] == [10]
        assert policy.stats.dropped[("a", "incomplete")] == 1
        check_accounting(policy, frames, groups)

    def test_optional_sensor_missing_emits_partial_group_when_certain(self) -> None:
        policy = ExactTime(["a", "b", "c"], optional=["c"])
        groups, _ = feed(policy, [("a", 10), ("b", 10), ("c", 20)])
        assert [(g.t, g.missing) for g in groups] == [(10, frozenset({"c"}))]
        assert policy.stats.groups_partial == 1

    def test_a_newer_complete_group_resolves_older_open_ones_first(self) -> None:
        policy = ExactTime(["a", "b"], queue_size=10)
        groups, _ = feed(policy, [("a", 10), ("a", 20), ("b", 20)])
        assert [g.t for g in groups] == [20]
        assert policy.stats.dropped[("a", "incomplete")] == 1

    def test_queue_size_bounds_open_times(self) -> None:
        policy = ExactTime(["a", "b"], queue_size=3)
        feed(policy, [("a", t) for t in range(10)])
        assert policy.stats.buffered == 3
        assert policy.stats.dropped[("a", "queue_full")] == 7

    def test_expire_and_late_frames(self) -> None:
        policy = ExactTime(["a", "b"], optional=["b"])
        policy.push(Frame("a", 0, 10))
        out = policy.expire(11)
        assert [(g.t, g.missing) for g in out] == [(10, frozenset({"b"}))]
        assert policy.push(Frame("b", 0, 10)) == []
        assert policy.stats.dropped[("b", "late")] == 1
