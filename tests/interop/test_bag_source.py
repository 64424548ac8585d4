"""BagSource on real bags written with rosbags: ROS 2 MCAP, ROS 2 sqlite3 and ROS 1."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import BagSource
from adapters.bags import parse_topics
from adapters.errors import DecodeError, SourceOpenError
from adapters.ros import decode_image, decode_pointcloud2
from adapters.ros._pointcloud2 import pointcloud2_fields
from fusion import ApproximateTime, Frame, FrameGroup, SyncHub
from hyperframes.cli import main as cli
from recordings import Recorder, open_recording, open_source
from tests.interop.bagdata import TYPES, Builder, write_bag

KINDS = ["mcap", "sqlite3", "ros1"]
REAL_BAGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"
TOPICS = {t: t.strip("/").replace("/", "_") for t in TYPES}


def bag_path(tmp_path: Path, kind: str) -> Path:
    return tmp_path / ("drive.bag" if kind == "ros1" else "drive")


async def collect(source: BagSource) -> list[Frame]:
    out = []
    async with source:
        async for frame in source.frames():
            out.append(frame)
    return out


def assert_payload(topic: str, got: Any, want: Any) -> None:
    if topic == "/cam/image":
        np.testing.assert_array_equal(got, want)
    elif topic == "/cam/jpeg":
        assert got.shape == want.shape
        assert np.abs(got.astype(int) - want.astype(int)).mean() < 4  # lossy JPEG
    elif topic == "/lidar":
        assert got.dtype.names[:4] == ("x", "y", "z", "intensity")
        for name in want.dtype.names:
            np.testing.assert_array_equal(got[name], want[name])
    elif topic == "/imu":
        np.testing.assert_allclose(got["accel"], want["accel"])
        np.testing.assert_allclose(got["gyro"], want["gyro"])
        np.testing.assert_allclose(got["orientation"], [0, 0, 0, 1])
    elif topic == "/gps":
        assert (float(got["latitude"]), float(got["longitude"]), float(got["altitude"])) == want
        assert int(got["service"]) == 1
    else:
        assert float(got["pose.position.x"]) == want
        assert float(got["pose.orientation.w"]) == 1.0


@pytest.mark.parametrize("kind", KINDS)
async def test_every_standard_message_decodes_with_both_stamps_kept(
    tmp_path: Path, kind: str
) -> None:
    written = write_bag(bag_path(tmp_path, kind), kind)
    source = BagSource(written.path, TOPICS)
    frames = await collect(source)
    assert source.errors == {}
    by_sensor: dict[str, list[Frame]] = {}
    for frame in frames:
        by_sensor.setdefault(frame.sensor, []).append(frame)
    for topic, sensor in TOPICS.items():
        got, want = by_sensor[sensor], written.messages[topic]
        assert [f.seq for f in got] == list(range(len(want)))
        assert [(f.t_sensor, f.t_arrival) for f in got] == [(s, lt) for s, lt, _ in want]
        assert all(f.t == f.t_sensor for f in got)
        assert all(f.meta["topic"] == topic for f in got)
        for frame, (_, _, payload) in zip(got, want, strict=True):
            assert_payload(topic, frame.data, payload)
    # Log-time order across topics, as the bag recorder received them.
    arrivals = [f.t_arrival for f in frames]
    assert arrivals == sorted(arrivals)
    kinds = {s.name: s.kind for s in source.specs}
    assert kinds == {
        "cam_image": "camera",
        "cam_jpeg": "camera",
        "lidar": "lidar",
        "imu": "imu",
        "gps": "gnss",
        "pose": "generic",
    }


@pytest.mark.parametrize("kind", KINDS)
async def test_bag_replays_through_hub_and_recorder_like_the_originals(
    tmp_path: Path, kind: str
) -> None:
    written = write_bag(bag_path(tmp_path, kind), kind, topics=("/cam/image", "/lidar", "/imu"))
    topics = {"/cam/image": "cam", "/lidar": "lidar", "/imu": "imu"}
    # Expected groups: the same policy fed the original messages in log order.
    originals = sorted(
        (lt, topics[topic], i, stamp)
        for topic, msgs in written.messages.items()
        for i, (stamp, lt, _) in enumerate(msgs)
    )
    policy = ApproximateTime(["cam", "lidar", "imu"], queue_size=20)
    expected: list[FrameGroup] = []
    for _, sensor, seq, stamp in originals:
        expected += policy.push(Frame(sensor, seq, stamp))
    expected += policy.drain()

    source = BagSource(written.path, topics)
    hub = SyncHub(ApproximateTime(["cam", "lidar", "imu"], queue_size=20))
    got: list[FrameGroup] = []
    out = tmp_path / "replayed.hfr"
    with anyio.fail_after(20):
        async with Recorder(out, sensors=source.specs) as rec, hub.open([source]) as groups:
            async for group in groups:
                got.append(group)
                for frame in group.members():
                    await rec.send(frame)
    assert [g.keys for g in got] == [g.keys for g in expected]
    assert [g.t for g in got] == [g.t for g in expected]
    with open_recording(out) as log:
        recorded = list(log.frames())
    members = [f for g in got for f in g.members()]
    assert [(f.sensor, f.seq, f.t_sensor, f.t_arrival) for f in recorded] == [
        (f.sensor, f.seq, f.t_sensor, f.t_arrival) for f in members
    ]
    np.testing.assert_array_equal(
        next(f for f in recorded if f.sensor == "lidar").data["ring"],
        written.messages["/lidar"][next(f.seq for f in recorded if f.sensor == "lidar")][2]["ring"],
    )


def write_schemaless(path: Path) -> None:
    from mcap.writer import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    msgdef, _ = ts.generate_msgdef("std_msgs/msg/String", ros_version=2)
    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="ros2")
        sid = w.register_schema("std_msgs/msg/String", "ros2msg", msgdef.encode())
        text = w.register_channel("/text", "cdr", sid)
        secret = w.register_channel("/secret", "cdr", 0)
        msg = ts.types["std_msgs/msg/String"](data="hello")
        w.add_message(text, 5, bytes(ts.serialize_cdr(msg, "std_msgs/msg/String")), 5)
        w.add_message(secret, 6, b"\x00\x01\x00\x00\x01\x02", 6)
        w.finish()


async def test_unreadable_topics_are_listed_not_crashed_on(tmp_path: Path) -> None:
    path = tmp_path / "mixed.mcap"
    write_schemaless(path)
    source = BagSource(path)
    assert "/secret" in source.unsupported
    assert "no message definition" in source.unsupported["/secret"]
    listing = {t.topic: t for t in source.inspect()}
    assert listing["/secret"].decoder is None
    assert listing["/text"].decoder == "generic"
    frames = await collect(source)
    assert [(f.sensor, str(f.data["data"]), f.meta["stamp"]) for f in frames] == [
        ("text", "hello", "log_time")
    ]
    source.close()  # the listing and the time span outlive the open file
    assert {t.topic: t for t in source.inspect()} == listing
    assert source.start_time <= source.end_time
    with pytest.raises(SourceOpenError, match=r"topic '/secret' cannot be read .*definition"):
        BagSource(path, {"/secret": "secret"})
    with pytest.raises(SourceOpenError, match=r"has no topic '/nope'; it has /secret, /text"):
        BagSource(path, ["/nope"])


async def test_a_bad_message_is_counted_and_leaves_a_seq_gap(tmp_path: Path) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    b = Builder(ts)
    path = tmp_path / "bad"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/cam", TYPES["/cam/image"], typestore=ts)
        for i in range(3):
            msg = b.make("/cam/image", 1000 + i, np.zeros((4, 4, 3), np.uint8))
            if i == 1:
                msg.step = 5  # shorter than a 4-pixel rgb8 row
            w.write(conn, 2000 + i, b.serialize(msg))
    source = BagSource(path, {"/cam": "cam"})
    frames = await collect(source)
    assert [f.seq for f in frames] == [0, 2]
    assert source.errors == {"undecodable": 1}
    assert source.last_error is not None
    assert source.last_error.startswith("sensor 'cam' seq 1: image 4x4 rgb8 needs 12 bytes a row")


def test_image_rows_padding_and_big_endian_samples_are_honoured() -> None:
    rows = np.arange(2 * 3, dtype=">u2").reshape(2, 3)
    padded = np.zeros((2, 8), np.uint8)
    padded[:, :6] = rows.view(np.uint8).reshape(2, 6)
    msg = types.SimpleNamespace(
        encoding="16UC1", height=2, width=3, step=8, is_bigendian=1, data=padded.reshape(-1)
    )
    image, meta = decode_image(msg)
    assert image.dtype == np.dtype("=u2")
    assert meta == {"encoding": "16UC1"}
    np.testing.assert_array_equal(image, rows)
    bgr = np.arange(2 * 2 * 3, dtype=np.uint8)
    msg = types.SimpleNamespace(
        encoding="bgr8", height=2, width=2, step=6, is_bigendian=0, data=bgr
    )
    image, _ = decode_image(msg)
    assert image.shape == (2, 2, 3)
    assert image.base is not None
    msg.encoding = "weird9"
    with pytest.raises(DecodeError, match="unknown image encoding 'weird9'; supported: bayer"):
        decode_image(msg)


FIELD_TYPES = ["<f4", "<f8", "<u2", "<i4", "<u1", "<i2"]


@settings(max_examples=40, deadline=None)
@given(
    extra=st.lists(st.sampled_from(FIELD_TYPES), max_size=4),
    pad=st.integers(0, 7),
    n=st.integers(0, 40),
    height=st.sampled_from([1, 2]),
)
def test_pointcloud2_fields_round_trip_by_name(
    extra: list[str], pad: int, n: int, height: int
) -> None:
    descr = [("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")]
    descr += [(f"f{i}", t) for i, t in enumerate(extra)]
    base = np.dtype(descr)
    dtype = np.dtype(
        {
            "names": base.names,
            "formats": [base[i] for i in range(len(descr))],
            "offsets": [base.fields[k][1] for k in base.names],
            "itemsize": base.itemsize + pad,
        }
    )
    points = np.zeros(n * height, dtype)
    for name in dtype.names:
        points[name] = np.arange(n * height) % 97
    fields, step = pointcloud2_fields(points)
    msg = types.SimpleNamespace(
        height=height,
        width=n,
        point_step=step,
        row_step=step * n,
        is_bigendian=False,
        data=points.view(np.uint8).reshape(-1),
        fields=[
            types.SimpleNamespace(name=a, offset=o, datatype=d, count=c) for a, o, d, c in fields
        ],
    )
    got, _ = decode_pointcloud2(msg)
    assert got.dtype.names == dtype.names
    for name in dtype.names:
        np.testing.assert_array_equal(got[name], points[name])


def test_open_source_picks_replay_or_bag(tmp_path: Path) -> None:
    written = write_bag(tmp_path / "d", "mcap", topics=("/imu",))
    source = open_source(written.path, ["/imu=imu"], speed=None)
    assert isinstance(source, BagSource)
    assert [s.name for s in source.specs] == ["imu"]
    source.close()
    assert parse_topics(["/a/b", "/c=cam"]) == {"/a/b": "a_b", "/c": "cam"}
    with pytest.raises(ValueError, match="applies to bags only"):
        open_source(tmp_path / "x.hfr", ["/imu"])


def test_replay_command_reads_a_bag_directly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = write_bag(tmp_path / "d", "mcap", topics=("/cam/image", "/imu"))
    mcap_file = written.path / "d.mcap"
    code = cli(["replay", str(mcap_file), "--topic", "/cam/image=cam", "--topic", "/imu", "--fast"])
    out = capsys.readouterr().out
    assert code == 0
    assert "replayed 110 frames" in out
    assert cli(["replay", str(mcap_file), "--topic", "/nope", "--fast"]) == 2
    assert "has no topic '/nope'" in " ".join(capsys.readouterr().out.split())


async def test_stopping_inside_a_batch_leaves_seq_and_ledger_at_what_was_yielded() -> None:
    """Frames are built in batches of thousands in the reading thread: a consumer that
    stops part-way sees ``seq`` and the ledger where its last frame left them, and a
    second pass numbers on from there (the real 5-file bag of 6074 small messages)."""
    bag = REAL_BAGS
    source = BagSource(bag / "rosbag2_wbag")
    first: list[Frame] = []
    async with source:
        frames = source.frames()
        async for frame in frames:
            first.append(frame)
            if len(first) == 3000:
                break
        await frames.aclose()  # type: ignore[attr-defined]
        stats = source.ledgers()
        assert sum(s.emitted for s in stats.values()) == 3000
        assert sum(s.frames for s in stats.values()) == 3000
        assert sum(source.statistics()["frames"].values()) == 3000
        # Each sensor numbered from 0 without a gap, in log-time order.
        for name in {f.sensor for f in first}:
            seqs = [f.seq for f in first if f.sensor == name]
            assert seqs == list(range(len(seqs)))
        assert [f.t_arrival for f in first] == sorted(f.t_arrival for f in first)
        last = {f.sensor: f.seq for f in first}
        again = [f async for f in source.frames()]
    assert len(again) == 6074
    for name, seq in last.items():
        assert next(f.seq for f in again if f.sensor == name) == seq + 1
    assert sum(s.emitted for s in source.ledgers().values()) == 3000 + 6074
    # The independent reference: rosbags' log times of the same messages.
    from rosbags.highlevel import AnyReader

    with AnyReader([bag / "rosbag2_wbag"]) as reader:
        times = sorted(t for _, t, _ in reader.messages())
    assert [f.t_arrival for f in first] == times[:3000]
    assert sorted(f.t_arrival for f in again) == times


@pytest.mark.parametrize(
    ("name", "standard"),
    [("rosbag2_talker", 2), ("rosbag2_wbag", 8), ("rosbags_rs_test_bag_sqlite3", 86)],
)
def test_ros2_standard_texts_equal_the_parsed_definitions(name: str, standard: int) -> None:
    """A ROS 2 type whose stored ``.msg`` text says what the distribution's says is taken
    from the store unparsed (adapters/ros/_msg_compare.py): every such type's fields are
    exactly what rosbags' parser reads from the bag's own text. The others are parsed as
    before: against the newest store (lyrical) the talker's rcl_interfaces/Log and seven
    of the 94-type bag's (BatteryState, NavSatFix, Pose2D...) differ from what the bag
    recorded, and std_msgs/Empty has no fields to compare."""
    from rosbags.typesys import get_types_from_msg

    from adapters.bags._reader import BagReader

    reader = BagReader(REAL_BAGS / name)
    try:
        taken = [conn for conn in reader.connections if reader._standard_digest(conn)]
        assert len(taken) == standard
        for conn in taken:
            parsed = get_types_from_msg(conn.msgdef.data, conn.msgtype)
            for typename, (consts, fields) in parsed.items():
                assert reader.typestore.fielddefs[typename] == (consts, fields), typename
        assert not reader.unreadable
    finally:
        reader.close()


@pytest.mark.parametrize(
    "name", ["fiducials_aruco_images.bag", "robot_localization_test2.bag", "embag_test.bag"]
)
def test_ros1_standard_md5_types_equal_the_parsed_definitions(name: str) -> None:
    """A ROS 1 type whose MD5 is the standard one is taken from the store unparsed: the
    fields are exactly what rosbags' parser reads from the bag's own text."""
    from rosbags.typesys import get_types_from_msg

    from adapters.bags._reader import BagReader

    reader = BagReader(REAL_BAGS / name)
    try:
        assert any(reader._standard_digest(conn) for conn in reader.connections)
        for conn in reader.connections:
            parsed = get_types_from_msg(conn.msgdef.data, conn.msgtype)
            for typename, (consts, fields) in parsed.items():
                assert reader.typestore.fielddefs[typename] == (consts, fields), typename
    finally:
        reader.close()
