"""Nearest: multi-rate grouping, windows, optional sensors, and emitting as soon as certain."""

from __future__ import annotations

import pytest

from fusion import Frame
from fusion.policies import Nearest
from tests.fusion.harness import check_accounting, feed

MS = 1_000_000


def multirate_arrivals(seconds: float = 2.0) -> list[tuple[str, int]]:
    """LiDAR 10 Hz, camera 30 Hz (offset 3 ms), IMU 200 Hz, merged by time."""
    end = int(seconds * 1000 * MS)
    events = [("lidar", t) for t in range(0, end, 100 * MS)]
    events += [("cam", t + 3 * MS) for t in range(0, end, 33_333_333)]
    events += [("imu", t) for t in range(0, end, 5 * MS)]
    return sorted(events, key=lambda e: (e[1], e[0]))


class TestNearest:
    def test_each_lidar_sweep_gets_the_nearest_camera_frame_and_its_imu_window(self) -> None:
        policy = Nearest(
            "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
        )
        groups, frames = feed(policy, multirate_arrivals(), drain=True)
        assert [g.t for g in groups] == list(range(0, 2000 * MS, 100 * MS))
        for g in groups:
            cam = g.frames["cam"]
            assert isinstance(cam, Frame)
            assert abs(cam.t - g.t) <= 17 * MS
            imu = g.frames["imu"]
            assert isinstance(imu, list)
            imu_times = range(0, 2000 * MS, 5 * MS)
            expected = [t for t in imu_times if g.t - 50 * MS <= t <= g.t + 49 * MS]
            assert [f.t for f in imu] == expected
        check_accounting(policy, frames, groups)

    def test_group_is_emitted_by_the_frame_that_makes_it_certain_not_later(self) -> None:
        policy = Nearest(
            "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (0, 10 * MS)}
        )
        assert policy.push(Frame("lidar", 0, 100 * MS)) == []
        assert policy.push(Frame("cam", 0, 95 * MS)) == []  # a later cam frame could be nearer
        assert policy.push(Frame("imu", 0, 100 * MS)) == []
        assert policy.push(Frame("cam", 1, 104 * MS)) == []  # cam certain; imu window still open
        out = policy.push(Frame("imu", 1, 110 * MS))  # reaches the window end: certain now
        assert len(out) == 1
        assert out[0].frames["cam"].seq == 1  # type: ignore[union-attr]
        assert [f.seq for f in out[0].frames["imu"]] == [0, 1]  # type: ignore[union-attr]

    def test_reference_arriving_after_its_partners_is_emitted_on_arrival(self) -> None:
        policy = Nearest("lidar", ["lidar", "cam"], tolerance=10 * MS)
        policy.push(Frame("cam", 0, 98 * MS))
        policy.push(Frame("cam", 1, 131 * MS))
        out = policy.push(Frame("lidar", 0, 100 * MS))
        assert [(g.t, g.frames["cam"].seq) for g in out] == [(100 * MS, 0)]  # type: ignore[union-attr]

    def test_ties_go_to_the_earlier_frame(self) -> None:
        policy = Nearest("ref", ["ref", "cam"], tolerance=10)
        groups, _ = feed(policy, [("cam", 95), ("cam", 105), ("ref", 100)])
        assert groups[0].frames["cam"].t == 95  # type: ignore[union-attr]

    def test_optional_sensor_missing_is_listed_and_required_sensor_missing_drops(self) -> None:
        policy = Nearest("ref", ["ref", "cam", "gps"], tolerance=10, optional=["gps"])
        groups, frames = feed(
            policy, [("ref", 100), ("gps", 300), ("cam", 101), ("ref", 200), ("cam", 260)]
        )
        assert [(g.t, sorted(g.missing)) for g in groups] == [(100, ["gps"])]
        assert policy.stats.dropped[("ref", "incomplete")] == 1  # ref@200: no cam within 10
        check_accounting(policy, frames, groups)

    def test_expire_resolves_groups_waiting_on_a_silent_optional_sensor(self) -> None:
        policy = Nearest("ref", ["ref", "cam", "gps"], tolerance=10, optional=["gps"])
        groups, _ = feed(policy, [("ref", 100), ("cam", 101), ("ref", 200), ("cam", 199)])
        assert groups == []  # gps has never spoken: could still deliver
        out = policy.expire(150)
        assert [(g.t, g.missing) for g in out] == [(100, frozenset({"gps"}))]
        assert policy.push(Frame("gps", 0, 120)) == []  # late: before the deadline
        assert policy.stats.dropped[("gps", "late")] == 1
        assert policy.push(Frame("gps", 1, 205)) == []  # cam@199: a nearer cam may come
        out = policy.push(Frame("cam", 2, 230))
        assert [(g.t, g.frames["gps"].t, g.frames["cam"].t) for g in out] == [(200, 205, 199)]  # type: ignore[union-attr]

    def test_each_frame_is_used_once_and_never_out_of_order(self) -> None:
        policy = Nearest("ref", ["ref", "cam"], tolerance=50)
        groups, _ = feed(policy, [("cam", 0), ("cam", 10), ("ref", 10), ("ref", 11), ("cam", 40)])
        used = [g.frames["cam"].t for g in groups]  # type: ignore[union-attr]
        assert used == [10, 40]  # cam@0 is older than the one used for ref@10: dropped
        assert policy.stats.dropped[("cam", "unmatched")] == 1

    def test_buffers_are_bounded_when_the_reference_is_silent(self) -> None:
        policy = Nearest("ref", ["ref", "imu"], tolerance=5, max_buffer=16)
        feed(policy, [("imu", t) for t in range(1000)])
        assert policy.stats.buffered == 16
        assert policy.stats.dropped[("imu", "queue_full")] == 1000 - 16

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"reference": "x"}, "reference 'x' must be one of"),
            ({"tolerance": {"cam": 1}}, "tolerance gives no value for"),
            ({"windows": {"ref": (0, 1)}}, "cannot be windowed"),
            ({"optional": ["nope"]}, "not in"),
        ],
    )
    def test_bad_configuration_is_refused_with_a_clear_message(self, kwargs, message) -> None:
        args = {"reference": "ref", "sensors": ["ref", "cam", "imu"], "tolerance": 5} | kwargs
        with pytest.raises(ValueError, match=message):
            Nearest(**args)
