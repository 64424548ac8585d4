"""``Ros2Source`` against a ROS 2 publisher process on loopback DDS: the frames a bag gives.

The publisher (``ros2_publisher.py``) shares no code with ``adapters.ros``;
the reference for every frame is :class:`~adapters.BagSource` reading the same
bag, and for every payload the bag's own bytes.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest

from adapters import BagSource, SourceOpenError
from adapters.ros import (
    Participant,
    Ros2Source,
    TopicQos,
    loopback_config,
    message_class,
    raw_sample,
    wait_matched,
)
from adapters.ros._passthrough import RAW, passthrough_type
from adapters.ros._typestore import type_store
from fusion._frames import Frame
from tests.adapters.ros2.ros2_helpers import (
    DRIVE_BAG,
    JPEG_BAG,
    TYPES_BAG,
    Publisher,
    free_domain,
    same_data,
)

pytestmark = pytest.mark.timeout(60)

SENSOR_TOPICS = {
    "/test/sensor_msgs/image": "image",
    "/test/sensor_msgs/compressed_image": "compressed",
    "/test/sensor_msgs/point_cloud2": "cloud",
    "/test/sensor_msgs/imu": "imu",
    "/test/sensor_msgs/nav_sat_fix": "fix",
    "/test/nav_msgs/odometry": "odom",
    "/test/tf2_msgs/tf_message": "tf",
}
JPEG_TOPIC = "/raspicam_node/image/compressed"


async def _take(source: Ros2Source, count: int) -> list[Frame]:
    got: list[Frame] = []
    with anyio.fail_after(30):
        async for frame in source.frames():
            got.append(frame)
            if len(got) == count:
                break
    return got


async def test_every_sensor_type_live_is_the_frame_the_bag_gives() -> None:
    """Eight topics from two publishers: the ROS 2 bag's seven sensor types (its images are
    synthetic and do not decode, in the bag as live) and a ROS 1 bag's real JPEG."""
    domain = free_domain()
    reliable = TopicQos("reliable", "transient_local", 10)
    topics = {**SENSOR_TOPICS, JPEG_TOPIC: "jpeg"}
    extra = ("--reliable", "--transient-local", "--hold-s", "30")
    pubs = [
        Publisher(domain, TYPES_BAG, list(SENSOR_TOPICS), *extra),
        Publisher(domain, JPEG_BAG, [JPEG_TOPIC], *extra),
    ]
    try:
        # types not given: each topic's type is read from the publications in the graph
        source = Ros2Source(
            topics,
            domain_id=domain,
            config=loopback_config(),
            qos=dict.fromkeys(topics, reliable),
            discover_s=20,
        )
        async with source:
            for pub in pubs:
                pub.wait_line("done")
            live = await _take(source, 11)
            stats = source.ledgers()
            reports = list(source.reports)
    finally:
        for pub in pubs:
            pub.kill()
    expected: list[Frame] = []
    bag_stats = {}
    bag_reports: list[str] = []
    for path, mapping in ((TYPES_BAG, SENSOR_TOPICS), (JPEG_BAG, {JPEG_TOPIC: "jpeg"})):
        async with BagSource(path, mapping) as bag:
            expected += [f async for f in bag.frames()]
            bag_stats.update(bag.ledgers())
            bag_reports += bag.reports
    assert len(live) == len(expected) == 11
    for sensor in topics.values():
        ours = [f for f in live if f.sensor == sensor]
        theirs = [f for f in expected if f.sensor == sensor]
        assert [f.seq for f in ours] == [f.seq for f in theirs]
        for a, b in zip(ours, theirs, strict=True):
            if sensor != "jpeg":  # the ROS 1 bag's bytes are ROS 1's; the live ones CDR
                assert a.meta[RAW] == b.meta[RAW], sensor  # the bag's bytes, unchanged
            assert same_data(a.data, b.data), sensor
            assert a.meta.get("frame_id") == b.meta.get("frame_id")
            if sensor == "tf":  # no header: stamped on receipt (the bag: its log time)
                assert a.meta["stamp"] == "receive_time"
                assert b.meta["stamp"] == "log_time"
            else:
                assert (a.t, a.t_sensor) == (b.t, b.t_sensor), sensor
            assert a.t_arrival is not None
        assert stats[sensor].received == bag_stats[sensor].received
        assert stats[sensor].lost == bag_stats[sensor].lost
    assert stats["image"].lost == stats["compressed"].lost == {"undecodable": 2}
    assert sorted(r.split(": ", 1)[1] for r in reports) == sorted(bag_reports)
    assert next(f for f in live if f.sensor == "jpeg").data.shape == (960, 1280, 3)
    for spec in source.specs:  # what an export needs to write each message back as it came
        exported = passthrough_type(spec.meta)
        assert exported is not None
        assert exported.name == spec.meta["msgtype"]
        for frame in (f for f in live if f.sensor == spec.name):
            assert exported.to_cdr(frame.meta[RAW]) == frame.meta[RAW]
            exported.store.deserialize_cdr(frame.meta[RAW], exported.name)
    spec = {s.name: s for s in source.specs}["imu"]
    assert spec.kind == "imu"
    assert spec.meta["msgtype"] == "sensor_msgs/msg/Imu"
    assert spec.meta["msgdef"].startswith("std_msgs/Header header")


async def test_a_message_that_does_not_decode_costs_only_itself() -> None:
    """Valid CDR (DDS passes it) whose image is 3 bytes short of its rows: ``undecodable``,
    counted with the topic; the message after it is a frame."""
    domain = free_domain()
    config = loopback_config()
    store = type_store("jazzy")
    msg = store.types
    stamp = msg["builtin_interfaces/msg/Time"](7, 5)

    def image(data: bytes) -> bytes:
        header = msg["std_msgs/msg/Header"](stamp, "cam")
        pixels = np.frombuffer(data, np.uint8)
        value = msg["sensor_msgs/msg/Image"](header, 2, 2, "mono8", 0, 2, pixels)
        return bytes(store.serialize_cdr(value, "sensor_msgs/msg/Image"))

    qos = TopicQos("reliable", "volatile", 10)
    source = Ros2Source(
        {"/cam": "cam"},
        domain_id=domain,
        config=config,
        qos={"/cam": qos},
        types={"/cam": "sensor_msgs/msg/Image"},
    )
    async with source:
        with Participant(domain, config) as pub:
            cls = message_class(store, "sensor_msgs/msg/Image")
            writer = pub.writer("/cam", cls, qos)
            assert await anyio.to_thread.run_sync(wait_matched, writer, 1, 20.0)
            writer.write(raw_sample(cls, image(b"\x01")))  # 1 byte for 2 rows of 2
            writer.write(raw_sample(cls, image(b"\x01\x02\x03\x04")))
            (frame,) = await _take(source, 1)
    assert frame.seq == 1  # the bad message took seq 0
    assert frame.data.tolist() == [[1, 2], [3, 4]]
    assert frame.t_sensor == 7_000_000_005
    ledger = source.ledgers()["cam"]
    assert ledger.received == 2
    assert ledger.lost == {"undecodable": 1}
    assert source.errors["undecodable"] == 1
    assert source.reports[0].startswith("ROS 2 topic '/cam': sensor 'cam' seq 0: image 2x2")


def test_a_type_the_distribution_does_not_define_is_refused_naming_the_topic() -> None:
    with pytest.raises(
        SourceOpenError,
        match=r"ROS 2 topic '/widget' has type acme_msgs/msg/Widget, which ROS 2 jazzy",
    ):
        Ros2Source(
            {"/widget": "widget"},
            domain_id=free_domain(),
            config=loopback_config(),
            types={"/widget": "acme_msgs/msg/Widget"},
            ros_distro="jazzy",
        )


def test_a_topic_whose_type_nobody_announces_is_refused_with_what_to_do() -> None:
    domain = free_domain()
    with pytest.raises(SourceOpenError, match=r"no publisher of ROS 2 topic '/imu' announced"):
        Ros2Source({"/imu": "imu"}, domain_id=domain, config=loopback_config(), discover_s=0.2)


async def test_a_topic_without_publisher_says_so_and_waits() -> None:
    source = Ros2Source(
        {"/gps/fix": "gps"},
        domain_id=free_domain(),
        config=loopback_config(),
        types={"/gps/fix": "sensor_msgs/msg/NavSatFix"},
    )
    async with source:
        with anyio.move_on_after(0.3):
            async for _ in source.frames():
                raise AssertionError("no publisher, no frame")
        assert source.idle_reason("gps") == "no publisher"
        assert source.publishers() == {"/gps/fix": 0}
    assert source.ledgers()["gps"].received == 0


async def test_closing_the_source_ends_its_frames_at_once() -> None:
    source = Ros2Source(
        {"/imu": "imu"},
        domain_id=free_domain(),
        config=loopback_config(),
        types={"/imu": "sensor_msgs/msg/Imu"},
    )
    got: list[Frame] = []
    ended = anyio.Event()

    async def consume() -> None:
        async for frame in source.frames():
            got.append(frame)
        ended.set()

    with anyio.fail_after(60):  # a loaded machine starts a DDS participant slowly
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            # frames() is taking once its taking thread runs. (Not wait_all_tasks_blocked:
            # its 0.1 s polls fell in step with the 100 ms rounds and saw the consumer
            # just woken, for 7-15 s.)
            for _ in range(1000):
                if source._taker._thread is not None:
                    break
                await anyio.sleep(0.01)
            with anyio.fail_after(5):  # closing, not a timeout, ends frames()
                await source.aclose()  # the reading thread wakes; frames() ends, not cancelled
                await ended.wait()
    assert got == []
    assert source.participant.dds is None


async def test_a_close_while_a_round_is_taken_ends_frames_without_reading_the_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aclose() from elsewhere while the taking thread's round is out: frames() ends at
    once; it no longer asks the closed participant for the graph (a UsageError a fresh
    clone's serial pass hit: 'the DDS participant of domain N is closed')."""
    source = Ros2Source(
        {"/imu": "imu"},
        domain_id=free_domain(),
        config=loopback_config(),
        types={"/imu": "sensor_msgs/msg/Imu"},
    )
    taker = source._taker
    real = taker.next_round

    def closed_meanwhile() -> Any:
        got = real()
        source.close()  # as aclose() does, while this round was being taken
        got.joined = True  # a publisher joined: the graph would be read next
        return got

    monkeypatch.setattr(taker, "next_round", closed_meanwhile)
    with anyio.fail_after(60):
        got = [frame async for frame in source.frames()]
    assert got == []
    assert source.participant.dds is None


async def test_a_publisher_of_another_definition_warns_and_is_read() -> None:
    """Its type hash (in USER_DATA) is not the distribution's: one warning; the DDS type
    name is the same, so its messages still come."""
    domain = free_domain()
    config = loopback_config()
    store = type_store("jazzy")
    qos = TopicQos("reliable", "volatile", 10)
    types = {"/imu": "sensor_msgs/msg/Imu"}
    source = Ros2Source(
        {"/imu": "imu"}, domain_id=domain, config=config, qos={"/imu": qos}, types=types
    )
    imu = message_class(store, "sensor_msgs/msg/Imu")
    t = store.types
    header = t["std_msgs/msg/Header"](t["builtin_interfaces/msg/Time"](3, 4), "imu")
    v3, cov = t["geometry_msgs/msg/Vector3"](0.0, 0.0, 9.8), np.zeros(9)
    q = t["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0)
    value = t["sensor_msgs/msg/Imu"](header, q, cov, v3, cov, v3, cov)
    cdr = bytes(store.serialize_cdr(value, "sensor_msgs/msg/Imu"))
    async with source:
        with Participant(domain, config) as pub:
            writer = pub.writer("/imu", imu, qos, type_hash="RIHS01_" + "00" * 32)
            assert await anyio.to_thread.run_sync(wait_matched, writer, 1, 20.0)
            writer.write(raw_sample(imu, cdr))
            (frame,) = await _take(source, 1)
    assert frame.t_sensor == 3_000_000_004
    assert source.errors["type_hash_mismatch"] == 1
    assert "has type hash RIHS01_0000" in source.reports[0]
    assert "another ROS 2 distribution?" in source.reports[0]


async def test_a_publisher_of_another_type_is_named_and_not_read() -> None:
    """The config says Imu, the robot publishes Odometry on the topic: DDS does not match
    the two, and the source says so instead of only 'no publisher'."""
    domain = free_domain()
    topic = "/jackal_velocity_controller/odom"
    pub = Publisher(domain, DRIVE_BAG, [topic], "--subscribers", "0", "--hold-s", "20")
    try:
        source = Ros2Source(
            {topic: "odom"},
            domain_id=domain,
            config=loopback_config(),
            types={topic: "sensor_msgs/msg/Imu"},
        )
        async with source, anyio.create_task_group() as tg:
            tg.start_soon(_take, source, 1)
            with anyio.fail_after(20):  # the graph is read every 2 s while no one matches
                while not source.errors["type_mismatch"]:  # noqa: ASYNC110 - a count, no event
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
    finally:
        pub.kill()
    assert source.idle_reason("odom") == "no publisher"
    assert source.reports == [
        f"ROS 2 topic {topic!r}: a publisher sends nav_msgs/msg/Odometry, "
        "not sensor_msgs/msg/Imu; it is not read"
    ]
    assert source.ledgers()["odom"].received == 0


def test_a_humble_layout_is_reported_as_a_distribution_mismatch() -> None:
    """A publisher with XTypes type information sending Humble's sensor_msgs/Range (no
    ``variance``) to a Jazzy source: DDS's type check refuses the match, and the source says
    the robot runs another distribution (was a bare "no publisher"); with ros_distro =
    "humble" the same publisher's messages are read."""
    topic = "/test/sensor_msgs/range"
    domain = free_domain()
    # transient local at both ends: the publisher writes once its writer matched the right
    # reader, perhaps before that reader matched it (a volatile best-effort reader then
    # dropped both messages: 0 of 2 in a fresh clone's serial pass)
    extra = ("--reliable", "--transient-local", "--hold-s", "30")
    publisher = Publisher(domain, TYPES_BAG, [topic], *extra)
    kept = {topic: TopicQos("reliable", "transient_local", 10)}
    try:
        wrong = Ros2Source(
            {topic: "range"},
            domain_id=domain,
            config=loopback_config(),
            types={topic: "sensor_msgs/msg/Range"},
            qos=kept,
        )

        async def run(source: Ros2Source, seconds: float) -> list[Frame]:
            got = []
            async with source:
                with anyio.move_on_after(seconds):
                    async for frame in source.frames():
                        got.append(frame)
                        if len(got) == 2:  # the bag's two: no need to wait out the rest
                            break
            return got

        assert anyio.run(run, wrong, 3) == []
        right = Ros2Source(
            {topic: "range"},
            domain_id=domain,
            config=loopback_config(),
            types={topic: "sensor_msgs/msg/Range"},
            ros_distro="humble",
            qos=kept,
        )
        read = anyio.run(run, right, 5)
    finally:
        publisher.kill()
    assert len(read) == 2  # the bag's two Range messages
    assert read[0].meta[RAW]
    (report,) = [r for r in wrong.reports if "layout" in r]
    assert "sensor_msgs/msg/Range has another layout than ROS 2 jazzy's" in report
    assert "humble" in report
    assert wrong.idle_reason("range") == "no publisher (distribution mismatch)"
