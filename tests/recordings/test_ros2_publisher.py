"""``Ros2Publisher`` and ``replay --to-ros2`` read by a plain cyclonedds subscriber process.

The subscriber (``ros2_subscriber.py``) shares no code with ``adapters.ros`` or
``recordings``: ros2/design names, hand-written DDS types that Cyclone matches
against the publisher's, and each sample's bytes kept for rosbags to decode here.
The references: the frames, groups and results the pipeline made; a recorded
bag's own bytes (rosbags reading the bag); a recording's frames and wall clock.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import BagSource
from adapters.ros import TopicQos, loopback_config
from fusion import Frame, FrameGroup, Pipeline, WorkerError
from fusion._frames import SensorSpec
from fusion.errors import UsageError
from recordings import Recorder, open_recording
from recordings.outputs.live._ros2_publisher import Ros2Publisher
from tests.adapters.ros2.ros2_helpers import JPEG_BAG, TYPES_BAG, free_domain

pytestmark = pytest.mark.timeout(90)

SUBSCRIBER = Path(__file__).resolve().parent / "ros2_subscriber.py"
ROOT = Path(__file__).resolve().parents[2]
MS = 1_000_000
JPEG_TOPIC = "/raspicam_node/image/compressed"
BAG_TOPICS = [
    "/test/sensor_msgs/point_cloud2",
    "/test/sensor_msgs/imu",
    "/test/sensor_msgs/nav_sat_fix",
    "/test/nav_msgs/odometry",
    "/test/tf2_msgs/tf_message",
    "/test/sensor_msgs/range",
]
"""The ROS 2 types bag's sensor topics whose messages decode (its image test data does not)."""


class Subscriber:
    """``ros2_subscriber.py`` as a process, ready (its readers exist) once constructed."""

    def __init__(self, domain: int, topics: dict[str, str], out: Path | None, *extra: str):
        cmd = [sys.executable, str(SUBSCRIBER), "--domain", str(domain), *extra]
        for topic, msgtype in topics.items():
            cmd += ["--topic", f"{topic}={msgtype}"]
        if out is not None:
            cmd += ["--out", str(out)]
        self.out = out
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", line

    def samples(self, timeout: float = 30) -> list[tuple[str, int, bytes]]:
        """``(topic, receive time, CDR bytes)`` of every sample, once the subscriber ended."""
        assert self.proc.wait(timeout=timeout) == 0
        assert self.out is not None
        data, out, at = self.out.read_bytes(), [], 0
        while at < len(data):
            n_topic, n_data, received = struct.unpack_from("<HIq", data, at)
            at += 14
            topic = data[at : at + n_topic].decode()
            out.append((topic, received, _unpad(data[at + n_topic : at + n_topic + n_data])))
            at += n_topic + n_data
        return out

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _unpad(raw: bytes) -> bytes:
    """The CDR bytes as sent: XTypes 1.3 7.6.3.1.2 records final padding in the options."""
    pad = raw[3] & 3
    return raw[:3] + bytes([raw[3] & 0xFC]) + raw[4 : len(raw) - pad] if pad else raw


def _humble() -> Any:
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)


def _stamp(msg: Any) -> int:
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


class _Seen:
    """A sink and frame tap keeping what the pipeline made."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.groups: list[FrameGroup] = []

    def publish(self, frame: Frame) -> None:
        self.frames.append(frame)

    def __call__(self, group: FrameGroup) -> None:
        self.groups.append(group)


async def test_a_pipeline_s_frames_groups_and_results_reach_a_ros2_subscriber(
    tmp_path: Path,
) -> None:
    """Camera, LiDAR and IMU, the sync groups and two models' results, from a real
    pipeline: a subscriber process gets every one, field for field as the pipeline made it."""
    from tests.fusion.test_pipeline import policy, sensors, workers

    domain = free_domain()
    topics = {
        "/cam": "sensor_msgs/msg/Image",
        "/lidar": "sensor_msgs/msg/PointCloud2",
        "/imu": "sensor_msgs/msg/Imu",
        "/hyperframes/groups": "diagnostic_msgs/msg/DiagnosticArray",
        "/hyperframes/results/brightness": "std_msgs/msg/String",
        "/hyperframes/results/occupancy": "std_msgs/msg/String",
    }
    subscriber = Subscriber(domain, topics, tmp_path / "got.bin")
    seen = _Seen()
    publisher = Ros2Publisher(
        domain,
        config=loopback_config(),
        dating=None,
        subscribers=1,
        backlog=4096,
        # a reliable writer keeping the last 10 loses what a busy subscriber has not
        # acknowledged 10 messages later; keep the session's
        qos=TopicQos("reliable", "volatile", 1000),
    )
    pipeline = Pipeline(
        sensors(1.0),
        policy(False),
        max_latency=300 * MS,
        workers=workers(),
        sinks=[seen, publisher],
    )
    try:
        with publisher, anyio.fail_after(60):
            stats = await pipeline.run()
            assert publisher.flush(20), publisher.statistics()
            published = publisher.statistics()
            opened = publisher.topics()
        samples = subscriber.samples()
    finally:
        subscriber.stop()
    made = Counter(f.sensor for f in seen.frames)
    assert made == Counter(published.frames)
    assert sum(made.values()) == stats.hub.frames_in
    assert published.groups == len(seen.groups) == stats.groups_out == 10
    assert not published.dropped
    assert not published.unmatched
    assert not published.failed
    assert opened == topics  # each with its ROS 2 type
    assert Counter(t for t, _, _ in samples) == published.published

    store = _humble()
    got: dict[str, list[Any]] = {}
    for topic, _, cdr in samples:
        got.setdefault(topic, []).append(store.deserialize_cdr(cdr, topics[topic]))
    by_sensor: dict[str, list[Frame]] = {}
    for frame in seen.frames:
        by_sensor.setdefault(frame.sensor, []).append(frame)
    for frame, msg in zip(by_sensor["cam"], got["/cam"], strict=True):
        assert _stamp(msg) == frame.t
        assert msg.header.frame_id == "cam"
        assert (msg.height, msg.width, msg.encoding, msg.step) == (12, 16, "rgb8", 48)
        assert bytes(msg.data) == frame.data.tobytes()
    for frame, msg in zip(by_sensor["lidar"], got["/lidar"], strict=True):
        points = frame.data
        assert _stamp(msg) == frame.t
        assert msg.width == len(points)
        assert msg.height == 1
        assert [f.name for f in msg.fields] == list(points.dtype.names)
        assert [f.offset for f in msg.fields] == [
            points.dtype.fields[n][1] for n in points.dtype.names
        ]
        assert msg.point_step == points.dtype.itemsize
        assert bytes(msg.data) == points.tobytes()
    for frame, msg in zip(by_sensor["imu"], got["/imu"], strict=True):
        a, g = msg.linear_acceleration, msg.angular_velocity
        assert _stamp(msg) == frame.t
        assert np.array_equal([a.x, a.y, a.z], frame.data["accel"].astype(np.float64))
        assert np.array_equal([g.x, g.y, g.z], frame.data["gyro"].astype(np.float64))
        assert msg.orientation_covariance[0] == -1.0  # REP 145: no orientation
    groups = {g.t: g for g in seen.groups}
    assert sorted(_stamp(m) for m in got["/hyperframes/groups"]) == sorted(groups)
    for msg in got["/hyperframes/groups"]:
        group = groups[_stamp(msg)]
        values = {kv.key: kv.value for kv in msg.status[0].values}
        for sensor, item in group.frames.items():
            members = item if isinstance(item, list) else [item]
            assert values[sensor] == " ".join(f"{f.seq}@{f.t}" for f in members)
        assert values["spread_ns"] == str(group.spread)
    errors = 0
    for worker in ("brightness", "occupancy"):
        records = [json.loads(m.data) for m in got[f"/hyperframes/results/{worker}"]]
        assert len(records) == len(seen.groups)
        for record in records:
            t = record["timestamp"]["sec"] * 1_000_000_000 + record["timestamp"]["nsec"]
            value = groups[t].results[worker]
            assert record["worker"] == worker
            if isinstance(value, WorkerError):
                assert record["error"] == str(value)
                errors += 1
            else:
                assert record["value"] == value
    assert errors >= 1  # every 7th sweep's model call fails: its error is published


def _replay(path: Path, domain: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CYCLONEDDS_URI": loopback_config()}
    cmd = [sys.executable, "-m", "hyperframes", "replay", str(path), "--to-ros2"]
    cmd += ["--ros2-domain", str(domain), "--ros2-subscribers", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def test_replay_to_ros2_republishes_bag_messages_byte_for_byte(tmp_path: Path) -> None:
    """Two real bags recorded to one .hfr: a ROS 2 bag's sensor types (PointCloud2, Imu,
    NavSatFix, Odometry, TFMessage, Range) and a ROS 1 camera's JPEG CompressedImage (1280x960).
    Replayed with --to-ros2, each message reaches the subscriber on its bag topic with
    its type: the ROS 2 bag's own bytes, the ROS 1 message as rosbags converts it to CDR."""
    from rosbags.highlevel import AnyReader

    recording = tmp_path / "bags.hfr"
    hand_written = _hand_written()

    async def record() -> list[SensorSpec]:
        types = BagSource(TYPES_BAG, topics=BAG_TOPICS)
        jpeg = BagSource(JPEG_BAG, topics={JPEG_TOPIC: "camera"})
        specs = [*types.specs, *jpeg.specs]
        with Recorder(recording, sensors=specs) as rec:
            async with types:
                async for frame in types.frames():
                    rec.write(frame)
            async with jpeg:
                async for frame in jpeg.frames():
                    rec.write(frame)
        return specs

    specs = anyio.run(record)
    with open_recording(recording) as log:
        recorded = Counter(f.sensor for f in log.frames())
    chosen = {
        s.name: (s.meta["topic"], s.meta["msgtype"])
        for s in specs
        if s.meta["msgtype"] in hand_written and recorded[s.name]
    }
    topics = dict(chosen.values())
    assert set(topics) == {*BAG_TOPICS, JPEG_TOPIC}
    sent = []
    for bag in (TYPES_BAG, JPEG_BAG):
        with AnyReader([bag]) as reader:
            store = reader.typestore if reader.is2 else _humble()
            for c, _, raw in reader.messages(
                connections=[c for c in reader.connections if c.topic in topics]
            ):
                cdr = bytes(raw) if reader.is2 else bytes(store.ros1_to_cdr(raw, c.msgtype))
                sent.append((c.topic, cdr))
                assert topics[c.topic] == c.msgtype
    assert len(sent) == 13  # 2 messages of each ROS 2 type, the camera's one JPEG
    domain = free_domain()
    subscriber = Subscriber(domain, topics, tmp_path / "got.bin")
    try:
        done = _replay(recording, domain, "-r", "max")
        assert done.returncode == 0, done.stdout + done.stderr
        samples = subscriber.samples()
    finally:
        subscriber.stop()
    got = Counter((t, cdr) for t, _, cdr in samples)
    assert got == Counter(sent), done.stdout  # byte for byte, none lost or added
    assert f"ros2 domain {domain}: 13 frames published (13 messages on 7 topics)" in done.stdout


def _hand_written() -> set[str]:
    sys.path.insert(0, str(ROOT))
    from tests.adapters.ros2.ros2_publisher import TYPES

    return set(TYPES)


def test_replay_to_ros2_paces_a_live_recording_and_dates_its_stamps(tmp_path: Path) -> None:
    """A recording made on the host clock (dated): replayed at rate 1, the subscriber gets
    each IMU sample at the recording's pace, its header stamp the frame's wall-clock date."""
    recording = tmp_path / "live.hfr"
    with Recorder(recording, sensors=[SensorSpec("imu", kind="imu")], chunk_bytes=2048) as rec:
        for i in range(25):
            t = time.monotonic_ns()
            accel = np.array([i, 0.5, 9.81], np.float32)
            rec.write(Frame("imu", i, t, {"accel": accel, "gyro": np.zeros(3, np.float32)}))
            time.sleep(0.02)
    with open_recording(recording) as log:
        assert log.dated == {"imu"}
        wall = log.wall_clock
        assert wall is not None
        frames = list(log.frames())
    domain = free_domain()
    subscriber = Subscriber(domain, {"/imu": "sensor_msgs/msg/Imu"}, tmp_path / "got.bin")
    try:
        done = _replay(recording, domain, "--ros2-qos", "reliable,depth=50")
        assert done.returncode == 0, done.stdout + done.stderr
        samples = subscriber.samples()
    finally:
        subscriber.stop()
    store = _humble()
    msgs = [store.deserialize_cdr(cdr, "sensor_msgs/msg/Imu") for _, _, cdr in samples]
    assert len(msgs) == len(frames) == 25
    for frame, msg in zip(frames, msgs, strict=True):
        assert _stamp(msg) == wall.to_utc(frame.t)  # the recording's date, as export gives it
        assert msg.linear_acceleration.x == float(frame.data["accel"][0])
    # the recording's pace, from the 10th sample on (the first ones may wait in the queue
    # while the topic waits for its subscriber); at 'max' they would come within milliseconds
    recorded = (frames[-1].t - frames[10].t) / 1e9
    received = (samples[-1][1] - samples[10][1]) / 1e9
    assert recorded > 0.25
    assert 0.5 * recorded < received < recorded + 1.0  # slack for a busy machine


def test_an_absent_or_stalled_subscriber_never_blocks_publish(tmp_path: Path) -> None:
    """No subscriber: frames are counted unmatched, not encoded. A subscriber that stopped
    reading (reliable, its queue full, acknowledging nothing): publish() still returns at
    once, the queue drops the oldest (a write held up past max_blocking_s would fail); every
    frame is counted once, and close is quick."""
    domain = free_domain()
    image = np.zeros((480, 640, 3), np.uint8)
    publisher = Ros2Publisher(
        domain, config=loopback_config(), dating=None, backlog=8, max_blocking_s=1.0
    )
    with publisher:
        for i in range(8):  # as many as the queue holds
            publisher.publish(Frame("cam", i, i * MS, image))
        assert publisher.flush(10)
        alone = publisher.statistics()
        assert alone.unmatched == {"/cam": 8}
        assert not alone.frames
        stalled = Subscriber(
            domain, {"/cam": "sensor_msgs/msg/Image"}, None, "--stall", "--depth", "2"
        )
        try:
            assert publisher.wait_subscribers("/cam", 1, 20)
            slowest = 0.0
            started = time.monotonic()
            for i in range(8, 208):
                before = time.perf_counter()
                publisher.publish(Frame("cam", i, i * MS, image))
                slowest = max(slowest, time.perf_counter() - before)
            publishing = time.monotonic() - started
            assert not publisher.flush(1)  # the stalled subscriber acknowledges nothing
        finally:
            closing = time.monotonic()
            publisher.close()
            closed = time.monotonic() - closing
            stalled.stop(kill=True)
    # after the close: the message in flight (a large one waits up to ack_timeout_s for
    # acknowledgements) is counted, and what was still queued is counted dropped
    stats = publisher.statistics()
    # a publish() that waited on DDS would take up to max_blocking_s (1 s) or the whole
    # stall; these bounds leave room for a busy 2-core machine's scheduling only
    assert slowest < 0.25, slowest
    assert publishing < 2.0
    assert closed < 6
    failed = sum(stats.failed.values())
    assert stats.dropped["cam"] > 0  # the encoder fell behind: the oldest made room, counted
    # a write the stalled subscriber held up past 50 ms, if any, failed and was counted
    assert all(r == "write timed out after 1000 ms (slow subscriber)" for _, r in stats.failed)
    accounted = stats.frames["cam"] + stats.unmatched["/cam"] + stats.dropped["cam"] + failed
    assert accounted == 208
    assert "dropped (publisher behind)" in stats.describe()
    # the large images the stalled subscriber never acknowledged are said to be unconfirmed
    assert 0 < sum(stats.unacknowledged.values()) <= stats.frames["cam"]
    assert "not acknowledged by every reader (delivery unconfirmed)" in stats.describe()


def test_ros2_options_parse_strictly_and_need_to_ros2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from adapters.ros import DEFAULT, SENSOR_DATA, TopicQos
    from hyperframes.cli import main
    from hyperframes.cli._to_ros2 import parse_qos

    assert parse_qos("default") == DEFAULT
    assert parse_qos("sensor_data") == SENSOR_DATA
    assert parse_qos("best_effort,depth=3") == TopicQos("best_effort", "volatile", 3)
    assert parse_qos("sensor_data,reliable,transient_local") == TopicQos(
        "reliable", "transient_local", 5
    )
    with pytest.raises(ValueError, match="unknown item 'fast'"):
        parse_qos("reliable,fast")
    with pytest.raises(ValueError, match="depth must be an integer"):
        parse_qos("depth=x")
    with pytest.raises(ValueError, match="depth must be an integer >= 1"):
        parse_qos("depth=0")
    path = tmp_path / "s.hfr"
    with Recorder(path) as rec:
        rec.write(Frame("imu", 0, 0, np.zeros(3, np.float32)))
    assert main(["replay", str(path), "--ros2-domain", "3", "-q"]) == 2
    out = capsys.readouterr()
    assert "--ros2-domain applies with --to-ros2" in out.out + out.err
    assert main(["replay", str(path), "--to-ros2", "--ros2-domain", "300"]) == 2
    out = capsys.readouterr()
    assert "expected a DDS domain id 0..232, found 300" in out.out + out.err
    with pytest.raises(UsageError, match="backlog must be >= 1"):
        Ros2Publisher(backlog=0)


def test_what_has_no_ros2_message_or_name_is_counted_or_noted() -> None:
    """A payload with no ROS 2 message is skipped with its reason, a sensor name that is no
    ROS 2 name token is published under a valid one and noted, each topic with its type."""
    with Ros2Publisher(free_domain(), config=loopback_config(), dating=None) as ros:
        ros.publish(Frame("blob", 0, 0, b"abc"))  # bytes of no known format
        ros.publish(Frame("cam-0", 0, 0, np.zeros((4, 4, 3), np.uint8)))
        ros.publish(Frame("cube", 0, 0, np.zeros((2, 2, 2, 2))))
        assert ros.flush(10)
        stats = ros.statistics()
        topics = ros.topics()
    assert stats.skipped == {("blob", "bytes with unknown meta['format'] ''"): 1}
    assert topics == {"/cam_0": "sensor_msgs/msg/Image", "/cube": "std_msgs/msg/Float64MultiArray"}
    assert stats.notes == ("topic '/cam-0' is published as '/cam_0' (a valid ROS 2 name)",)
    assert stats.unmatched == {"/cam_0": 1, "/cube": 1}
    assert stats.describe().endswith("2 unmatched (no subscriber), 1 skipped (no ROS 2 message)")


def test_record_to_ros2_publishes_the_live_frames_and_groups_it_records(tmp_path: Path) -> None:
    """``hyperframes record --to-ros2`` (the built-in camera, LiDAR and IMU, 1 s): the
    subscriber gets every recorded frame, stamped with its wall-clock date, and a group
    marker per LiDAR sweep naming recorded frames."""
    out = tmp_path / "live.hfr"
    domain = free_domain()
    topics = {
        "/cam": "sensor_msgs/msg/Image",
        "/lidar": "sensor_msgs/msg/PointCloud2",
        "/imu": "sensor_msgs/msg/Imu",
        "/hyperframes/groups": "diagnostic_msgs/msg/DiagnosticArray",
    }
    subscriber = Subscriber(domain, topics, tmp_path / "got.bin")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CYCLONEDDS_URI": loopback_config()}
    cmd = [sys.executable, "-m", "hyperframes", "record", "--duration", "1", "-o", str(out)]
    cmd += ["--to-ros2", "--ros2-domain", str(domain), "--ros2-subscribers", "1"]
    cmd += ["--ros2-qos", "depth=1000"]  # keep the session for a busy subscriber
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        samples = subscriber.samples()
    finally:
        subscriber.stop()
    with open_recording(out) as log:
        frames = list(log.frames())
        wall = log.wall_clock
        assert wall is not None
    store = _humble()
    got: dict[str, list[Any]] = {}
    for topic, _, cdr in samples:
        got.setdefault(topic, []).append(store.deserialize_cdr(cdr, topics[topic]))
    recorded: dict[str, list[Frame]] = {}
    for frame in frames:
        recorded.setdefault(frame.sensor, []).append(frame)
    dropped = "dropped (publisher behind)" in done.stdout  # counted; a very busy machine
    for sensor in ("cam", "lidar", "imu"):
        msgs = got[f"/{sensor}"]
        assert 0 < len(msgs) <= len(recorded[sensor])
        assert dropped or len(msgs) == len(recorded[sensor]), sensor
        left = iter(recorded[sensor])  # the messages are recorded frames, in order
        for msg in msgs:
            frame = next(f for f in left if abs(_stamp(msg) - wall.to_utc(f.t)) < MS)
            if sensor == "cam":
                assert bytes(msg.data) == frame.data.tobytes()
    by_seq = {(f.sensor, f.seq): f for f in frames}
    markers = got["/hyperframes/groups"]
    assert len(markers) >= len(recorded["lidar"]) - 1  # one per sweep (the last may be cut)
    for msg in markers:
        values = {kv.key: kv.value for kv in msg.status[0].values}
        assert values["lidar"]  # the reference
        for sensor in ("cam", "lidar", "imu"):
            for item in values.get(sensor, "").split():
                seq, _, t = item.partition("@")
                # a recorded frame, named by its seq and its header stamp (dated)
                assert abs(int(t) - wall.to_utc(by_seq[(sensor, int(seq))].t)) < MS
    if not dropped:
        assert f"ros2 domain {domain}: {len(frames)} frames published" in done.stdout
