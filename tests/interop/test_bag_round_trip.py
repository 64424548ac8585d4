"""Real bags: BagSource -> Recorder -> export (ros2, foxglove) -> rosbags and the mcap reader.

The reference is rosbags reading the bag itself (and ``expected.json``, made
with rosbags 0.11.9): every topic comes back with its type, its count, its
log times and messages equal field for field (header stamps included).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import BagSource
from adapters.errors import SourceOpenError
from hyperframes.cli import main as cli
from recordings import Recorder
from recordings.outputs._export import export_recording
from tests.interop.rosmsgs import BAGS, EXPECTED, assert_same_message, read_bag, read_mcap_cdr

BAG_NAMES = sorted(p.name for p in BAGS.iterdir()) if BAGS.is_dir() else []
# rosbag2_talker as a directory and as its bare MCAP: rosbags alone yields none of
# the directory's messages (a QoS mismatch, expected.json), BagSource all 20.
ROUND_TRIP = [*BAG_NAMES, "rosbag2_talker/talker.mcap"]


def expected(name: str) -> dict[str, Any]:
    files = json.loads(EXPECTED.read_text())["files"]
    return files[f"bags/{name.split('/')[0]}"]["expected"]  # type: ignore[no-any-return]


def record_bag(bag: Path, out: Path) -> tuple[Path, BagSource]:
    async def main() -> BagSource:
        source = BagSource(bag)
        with Recorder(out, sensors=source.specs) as rec:
            async with source:
                async for frame in source.frames():
                    rec.write(frame)
        return source

    return out, anyio.run(main)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, BagSource]]:
    root = tmp_path_factory.mktemp("bags")
    return {
        name: record_bag(BAGS / name, root / f"{name.replace('/', '_')}.hfr") for name in ROUND_TRIP
    }


def by_topic(messages: list[tuple[str, str, int, Any]]) -> dict[str, list[tuple[str, int, Any]]]:
    out: dict[str, list[tuple[str, int, Any]]] = {}
    for topic, msgtype, log_time, msg in messages:
        out.setdefault(topic, []).append((msgtype, log_time, msg))
    return out


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
@pytest.mark.parametrize("name", ROUND_TRIP)
@pytest.mark.parametrize("profile", ["ros2", "foxglove"])
def test_every_topic_round_trips_with_its_type_stamps_and_fields(
    recorded: dict[str, tuple[Path, BagSource]], tmp_path: Path, name: str, profile: str
) -> None:
    hfr, source = recorded[name]
    # The reference reads rosbag2_talker's MCAP: rosbags yields nothing from the directory.
    want = read_bag(BAGS / name / "talker.mcap" if name == "rosbag2_talker" else BAGS / name)
    lost = sum(source.errors.values())  # messages whose decoded view failed, counted
    out = tmp_path / "out.mcap"
    report = export_recording(hfr, out, to=profile, groups="none")  # type: ignore[arg-type]
    assert report.skipped == {}
    assert report.frames_written == report.frames_read
    if profile == "ros2":  # rosbags reads the file as a ROS 2 bag
        from rosbags.highlevel import AnyReader

        with AnyReader([out]) as reader:
            got = by_topic(
                [
                    (c.topic, c.msgtype, t, reader.deserialize(raw, c.msgtype))
                    for c, t, raw in reader.messages()
                ]
            )
    else:
        got = by_topic([(tp, ty, lt, m) for tp, ty, lt, _, m in read_mcap_cdr(out)])
    facts = expected(name)["topics"]
    assert {t: len(m) for t, m in want.items()} == {
        t: f["count"] for t, f in facts.items() if f["count"]
    }
    errors_by_topic: dict[str, int] = {}
    for topic, messages in want.items():
        kept = got.get(topic, [])
        assert {t for t, _, _ in kept} <= {facts[topic]["msgtype"]}
        if len(kept) != len(messages):
            errors_by_topic[topic] = len(messages) - len(kept)
            continue
        for (log_time, msgtype, msg), (got_type, got_time, got_msg) in zip(
            messages, kept, strict=True
        ):
            assert got_type == msgtype == facts[topic]["msgtype"]
            assert got_time == log_time
            assert_same_message(msg, got_msg, topic)
    # Only messages whose decoded view failed are missing, exactly as many as were counted.
    assert sum(errors_by_topic.values()) == lost, errors_by_topic
    assert set(got) <= set(want)


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
def test_export_command_writes_odometry_and_imu_of_a_real_drive(
    recorded: dict[str, tuple[Path, BagSource]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rosbags.highlevel import AnyReader

    hfr, _ = recorded["robot_localization_test2.bag"]
    out = tmp_path / "drive.mcap"
    assert cli(["export", str(hfr), "-o", str(out), "--profile", "ros2"]) == 0
    assert "wrote 6121 of 6121 frames read" in " ".join(capsys.readouterr().out.split())
    with AnyReader([out]) as reader:
        topics = {t: (i.msgtype, i.msgcount) for t, i in reader.topics.items()}
    assert topics["/jackal_velocity_controller/odom"] == ("nav_msgs/msg/Odometry", 3060)
    assert topics["/imu/data"] == ("sensor_msgs/msg/Imu", 3061)


async def first_frames(path: Path) -> dict[str, Any]:
    source = BagSource(path)
    topics = {s.name: s.meta["topic"] for s in source.specs}
    out: dict[str, Any] = {}
    async with source:
        async for frame in source.frames():
            out.setdefault(topics[frame.sensor], frame)
    return out


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
def test_generic_decoding_gives_fields_never_constants_and_keeps_sequences() -> None:
    for name in (
        "rosbags_rs_test_bag_sqlite3",
        "rosbagjs_example-bz2.bag",
        "rosbag2_talker/talker.mcap",
    ):
        constants = {c for t in expected(name).get("types_with_constants", {}).values() for c in t}
        assert constants, name
        for topic, frame in anyio.run(first_frames, BAGS / name).items():
            if isinstance(frame.data, dict):
                keys = {k.rsplit(".", 1)[-1] for k in frame.data}
                assert not keys & constants, (name, topic, keys & constants)
    frames = anyio.run(first_frames, BAGS / "rosbags_rs_test_bag_sqlite3")
    joints = frames["/test/sensor_msgs/joint_state"].data
    battery = frames["/test/sensor_msgs/battery_state"].data
    assert "POWER_SUPPLY_STATUS_FULL" not in battery
    assert "voltage" in battery
    tf = frames["/test/tf2_msgs/tf_message"].data
    want = read_bag(BAGS / "rosbags_rs_test_bag_sqlite3")
    ref_joints = want["/test/sensor_msgs/joint_state"][0][2]
    assert joints["name"].tolist() == ref_joints.name
    np.testing.assert_array_equal(joints["position"], ref_joints.position)
    ref_tf = want["/test/tf2_msgs/tf_message"][0][2]
    assert tf["transforms.child_frame_id"].tolist() == [t.child_frame_id for t in ref_tf.transforms]
    assert tf["transforms.transform.translation.x"].tolist() == [
        t.transform.translation.x for t in ref_tf.transforms
    ]


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
def test_bags_are_recognised_by_content_not_by_name(tmp_path: Path) -> None:
    from recordings import is_bag, open_source

    for name in ("ros2bag_tools_range.bag", "ros2bag_tools_diagnostics.bag"):
        path = BAGS / name
        assert path.is_dir()
        assert is_bag(path)
        frames = anyio.run(first_frames, path)
        assert set(frames) == set(expected(name)["topics"])
        source = open_source(path, speed=None)
        assert isinstance(source, BagSource)
        source.close()
    renamed = tmp_path / "cube.rosbag"  # a ROS 1 bag without its suffix
    renamed.write_bytes((BAGS / "webviz_only-a-cube.bag").read_bytes())
    assert is_bag(renamed)
    assert set(anyio.run(first_frames, renamed)) == {"/marker_in_parent_frame", "/tf"}
    text = tmp_path / "notes.bag"
    text.write_text("not a bag\n")
    assert not is_bag(text)
    with pytest.raises(SourceOpenError) as err:
        open_source(text)
    message = str(err.value)
    for tried in ("ROS 1 bag", "#ROSBAG V2.0", "MCAP", "sqlite3", ".hfr recording"):
        assert tried in message
    with pytest.raises(SourceOpenError, match=r"without metadata\.yaml"):
        open_source(tmp_path)


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
def test_a_topic_without_messages_does_not_hold_the_groups_back(
    recorded: dict[str, tuple[Path, BagSource]], tmp_path: Path
) -> None:
    hfr, _ = recorded["rosbag2_talker"]  # /parameter_events: declared, no message
    report = export_recording(hfr, tmp_path / "t.mcap", to="ros2")
    assert report.complete
    assert report.groups == 10  # /topic and /rosout pair up, one group per publish


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
@pytest.mark.parametrize("name", ROUND_TRIP)
def test_info_of_a_recorded_bag_comes_from_its_footer_and_says_what_every_frame_says(
    recorded: dict[str, tuple[Path, BagSource]], name: str
) -> None:
    from hyperframes.cli._sensorstats import sensor_details
    from recordings import open_recording

    hfr, source = recorded[name]
    with open_recording(hfr) as log:
        fast, why = sensor_details(log)
        frames = {n: s.count for n, s in log.summary().sensors.items()}
        topics = {n: s.spec.meta.get("topic") for n, s in log.summary().sensors.items()}
    assert why is None  # the 1.6 footer served: no chunk was read
    with open_recording(hfr, use_index=False) as log:
        slow, why = sensor_details(log)
    assert why == "the footer is not used"
    assert fast == slow
    # Independently of both: the bag's message counts per topic (expected.json, from
    # rosbags and the mcap reader); a message BagSource could not decode is counted.
    facts = {t: f["count"] for t, f in expected(name)["topics"].items()}
    per_topic = {topics[n]: c for n, c in frames.items()}
    assert all(c <= facts[t] for t, c in per_topic.items())
    assert sum(per_topic.values()) + sum(source.errors.values()) == sum(facts.values())
    assert all(d["segments"] >= 1 for d in fast.values())
