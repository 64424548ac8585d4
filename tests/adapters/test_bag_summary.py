"""``read_bag_summary`` against the readers made for each format, on real bags.

The reference counts come from reading every message (``rosbags`` for each
bag, and the ``mcap`` reader's message iterator for the MCAP file), not from
the indexes the summary reads, so a summary that trusted a stale index would
fail here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.bags import BagSummary, BagTopicSummary, read_bag_summary

BAGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"


def rosbags_reference(path: Path) -> tuple[dict[str, tuple[str, int]], list[int]]:
    """Per topic (type, messages read), and every log time, from ``rosbags``."""
    from rosbags.highlevel import AnyReader

    counts: dict[str, int] = {}
    times = []
    with AnyReader([path]) as reader:
        types = {name: str(info.msgtype) for name, info in reader.topics.items()}
        for connection, t, _ in reader.messages():
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
            times.append(t)
    return {name: (msgtype, counts.get(name, 0)) for name, msgtype in types.items()}, times


@pytest.mark.parametrize(
    ("name", "storage"),
    [
        ("robot_localization_test2.bag", "rosbag1"),
        ("rviz_satellite_sample.bag", "rosbag1"),
        ("rosbag2_cdr_test_0.mcap", "mcap"),
        ("rosbags_rs_test_bag_sqlite3", "rosbag2"),
    ],
)
def test_summary_matches_every_message_read_by_rosbags(name: str, storage: str) -> None:
    path = BAGS / name
    summary = read_bag_summary(path)
    expected, times = rosbags_reference(path)
    assert isinstance(summary, BagSummary)
    assert summary.storage == storage
    assert {t.name: (t.msgtype, t.count) for t in summary.topics} == expected
    assert [t.name for t in summary.topics] == sorted(expected)
    assert summary.messages == len(times)
    assert (summary.start_ns, summary.end_ns) == (min(times), max(times))
    assert summary.duration_ns == max(times) - min(times)


def test_an_mcap_summary_matches_the_mcap_message_iterator() -> None:
    from mcap.reader import make_reader

    path = BAGS / "rosbag2_cdr_test_0.mcap"
    counts: dict[str, int] = {}
    times = []
    with path.open("rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            key = f"{channel.topic} {schema.name if schema else '-'}"
            counts[key] = counts.get(key, 0) + 1
            times.append(message.log_time)
    summary = read_bag_summary(path)
    assert {f"{t.name} {t.msgtype}": t.count for t in summary.topics} == counts
    assert (summary.start_ns, summary.end_ns) == (min(times), max(times))


def test_a_robot_clock_bag_is_not_dated_and_keeps_its_expected_span() -> None:
    summary = read_bag_summary(BAGS / "robot_localization_test2.bag")
    assert summary.topics == (
        BagTopicSummary("/imu/data", "sensor_msgs/msg/Imu", 3061, read=3061),
        BagTopicSummary(
            "/jackal_velocity_controller/odom", "nav_msgs/msg/Odometry", 3060, read=3060
        ),
    )
    assert summary.checked
    assert summary.missing == 0
    assert summary.types == "the bag"
    assert (
        read_bag_summary(BAGS / "robot_localization_test2.bag", check=False).topics[0].read is None
    )
    assert (summary.start_ns, summary.end_ns) == (47_580_000_000, 108_781_000_000)
    assert not summary.dated


def unclosed_mcap(path: Path, profile: str) -> Path:
    from mcap.data_stream import RecordBuilder
    from mcap.records import DataEnd, Footer, Header

    builder = RecordBuilder()
    Header(profile=profile, library="test").write(builder)
    DataEnd(0).write(builder)
    Footer(0, 0, 0).write(builder)
    magic = b"\x89MCAP0\r\n"
    path.write_bytes(magic + builder.end() + magic)
    return path


def test_an_mcap_file_of_another_profile_without_a_summary_section_is_scanned_and_says_so(
    tmp_path: Path,
) -> None:
    summary = read_bag_summary(unclosed_mcap(tmp_path / "open.mcap", ""))
    assert (summary.messages, summary.topics, summary.profile) == (0, (), "")
    assert summary.index == "scanned: no summary section"


def test_a_ros2_mcap_file_without_a_summary_section_is_scanned(tmp_path: Path) -> None:
    summary = read_bag_summary(unclosed_mcap(tmp_path / "open.mcap", "ros2"))
    assert (summary.messages, summary.topics, summary.start_ns) == (0, (), None)
