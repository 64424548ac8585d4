"""Bags in every form rosbag2 writes them, built here with rosbags' writer, read by BagSource
and by the independent readers of :mod:`tests.interop.bagref` in the same test.

Per-message and file zstd compression (MCAP and sqlite3), QoS metadata that
disagrees with the storage, a topic whose schema does not parse, an MCAP whose
only chunk is zeroed (the messages its summary promised are ``missing``), and
the type store of ``ros_distro`` for bags without stored definitions.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from adapters import BagSource
from adapters.errors import SourceOpenError
from adapters.ros._typestore import default_ros_distro, ros_distros
from tests.interop.bagref import reference

REPO = Path(__file__).resolve().parents[2]
BAGS = REPO / ".." / "shared" / "data" / "real" / "bags"
TALKER = BAGS / "rosbag2_talker" / "talker.mcap"
RANGE = BAGS / "ros2bag_tools_range.bag"
N = 40


def write(path: Path, storage: str, mode: str | None = None, qos: bool = False) -> Path:
    """A rosbag2 bag of N std_msgs/String and N sensor_msgs/Imu messages (Humble types)."""
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    writer = Writer(path, version=9, storage_plugin=StoragePlugin[storage.upper()])
    if mode is not None:
        writer.set_compression(CompressionMode[mode.upper()], CompressionFormat.ZSTD)
    profiles = []
    if qos:
        t = QosTime(sec=0, nsec=0)
        profiles = [
            Qos(
                QosHistory.KEEP_LAST,
                10,
                QosReliability.RELIABLE,
                QosDurability.VOLATILE,
                t,
                t,
                QosLiveliness.AUTOMATIC,
                t,
                False,
            )
        ]
    String = ts.types["std_msgs/msg/String"]
    Imu, Header = ts.types["sensor_msgs/msg/Imu"], ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    Vector3, Quaternion = (
        ts.types["geometry_msgs/msg/Vector3"],
        ts.types["geometry_msgs/msg/Quaternion"],
    )
    import numpy as np

    with writer:
        text = writer.add_connection(
            "/text", "std_msgs/msg/String", typestore=ts, offered_qos_profiles=profiles
        )
        imu = writer.add_connection("/imu", "sensor_msgs/msg/Imu", typestore=ts)
        for i in range(N):
            t = 1_000_000_000 + i * 10_000_000
            writer.write(text, t, ts.serialize_cdr(String(data=f"msg {i}"), String.__msgtype__))
            msg = Imu(
                header=Header(
                    stamp=Time(sec=1, nanosec=i * 10_000_000 - 1000 + 10**6), frame_id="imu"
                ),
                orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
                orientation_covariance=np.zeros(9),
                angular_velocity=Vector3(x=0.0, y=0.0, z=float(i)),
                angular_velocity_covariance=np.zeros(9),
                linear_acceleration=Vector3(x=float(i), y=0.0, z=9.8),
                linear_acceleration_covariance=np.zeros(9),
            )
            writer.write(imu, t + 5, ts.serialize_cdr(msg, Imu.__msgtype__))
    return path


async def read(source: BagSource) -> dict[str, list[tuple[int, int]]]:
    got: dict[str, list[tuple[int, int]]] = {}
    async with source:
        async for f in source.frames():
            assert f.t_arrival is not None
            got.setdefault(f.meta["topic"], []).append((f.t_arrival, f.t_sensor))
    return got


def assert_same(
    got: dict[str, list[tuple[int, int]]], want: dict[str, list[tuple[int, int]]]
) -> None:
    assert {t: Counter(v) for t, v in got.items()} == {t: Counter(v) for t, v in want.items() if v}


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("mode", ["message", "file"])
async def test_zstd_compressed_bags_read_in_both_modes(
    tmp_path: Path, storage: str, mode: str
) -> None:
    bag = write(tmp_path / "bag", storage, mode)
    want = reference(bag)
    assert {t: len(v) for t, v in want.items()} == {"/text": N, "/imu": N}
    source = BagSource(bag)
    got = await read(source)
    assert_same(got, want)
    assert source.errors == {}
    # The IMU is decoded from its (decompressed) bytes, and its header stamp kept.
    assert source.raw_decoded == {"/imu"}
    assert got["/imu"][3] == (1_030_000_005, 1_030_000_000 - 1000 + 10**6)


async def test_a_message_that_does_not_decompress_costs_that_message(tmp_path: Path) -> None:
    bag = write(tmp_path / "bag", "sqlite3", "message")
    con = sqlite3.connect(bag / "bag.db3")
    with con:
        con.execute("UPDATE messages SET data = x'00112233' WHERE id = 7")
    con.close()
    source = BagSource(bag)
    got = await read(source)
    assert sum(map(len, got.values())) == 2 * N - 1
    assert source.errors == {"undecodable": 1}
    assert "does not decompress (zstd)" in str(source.last_error)
    stats = source.ledgers()
    assert {s: (v.received, v.emitted, v.lost) for s, v in stats.items()} in (
        {"text": (N, N - 1, {"undecodable": 1}), "imu": (N, N, {})},
        {"text": (N, N, {}), "imu": (N, N - 1, {"undecodable": 1})},
    )


async def test_qos_metadata_that_disagrees_with_the_storage_still_reads(tmp_path: Path) -> None:
    from rosbags.highlevel import AnyReader

    bag = write(tmp_path / "bag", "sqlite3", qos=True)
    con = sqlite3.connect(bag / "bag.db3")
    with con:
        con.execute("UPDATE topics SET offered_qos_profiles = ''")
    con.close()
    with AnyReader([bag]) as rosbags_reader:  # what rosbags makes of it: /text is gone
        assert {c.topic for c, _, _ in rosbags_reader.messages()} == {"/imu"}
    want = reference(bag)
    source = BagSource(bag)
    assert_same(await read(source), want)
    assert sum(s.emitted for s in source.ledgers().values()) == 2 * N


async def test_the_talker_bag_whose_mcap_disagrees_with_its_metadata_reads() -> None:
    bag = BAGS / "rosbag2_talker"
    if not bag.exists():
        pytest.skip("no rosbag2_talker")
    source = BagSource(bag)
    assert_same(await read(source), reference(bag))


def bad_schema_mcap(path: Path) -> Path:
    """An MCAP with a good String topic and a topic whose schema is not a message definition."""
    from mcap.writer import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    msgdef, _ = ts.generate_msgdef("std_msgs/msg/String", ros_version=2)
    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="ros2")
        good = w.register_schema("std_msgs/msg/String", "ros2msg", msgdef.encode())
        bad = w.register_schema("acme/msg/Odd", "ros2msg", b"int32[ x\n")
        text = w.register_channel("/text", "cdr", good)
        odd = w.register_channel("/odd", "cdr", bad)
        String = ts.types["std_msgs/msg/String"]
        for i in range(5):
            raw = bytes(ts.serialize_cdr(String(data=f"m{i}"), "std_msgs/msg/String"))
            w.add_message(text, 100 + i, raw, 100 + i)
            w.add_message(odd, 200 + i, b"\x00\x01\x00\x00\x01\x00\x00\x00", 200 + i)
        w.finish()
    return path


async def test_a_topic_whose_schema_does_not_parse_costs_that_topic_only(tmp_path: Path) -> None:
    path = bad_schema_mcap(tmp_path / "odd.mcap")
    source = BagSource(path)
    assert "/odd" in source.unsupported
    assert "acme/msg/Odd: its type definition does not parse" in source.unsupported["/odd"]
    got = await read(source)
    assert_same(got, {"/text": reference(path)["/text"]})
    ledgers = source.ledgers()
    assert ledgers["odd"].lost == {"unsupported_type": 5}
    assert ledgers["odd"].received == 5
    assert ledgers["text"].emitted == 5
    with pytest.raises(SourceOpenError, match=r"'/odd' cannot be read .*does not parse"):
        BagSource(path, ["/odd"])


def zeroed_chunk(src: Path, out: Path) -> Path:
    """A copy of a real one-chunk MCAP whose chunk's bytes are all zero."""
    from mcap.reader import make_reader

    with open(src, "rb") as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    assert len(summary.chunk_indexes) == 1
    chunk = summary.chunk_indexes[0]
    data = bytearray(src.read_bytes())
    a = chunk.chunk_start_offset
    data[a : a + chunk.chunk_length] = bytes(chunk.chunk_length)
    out.write_bytes(bytes(data))
    return out


@pytest.fixture
def zeroed_talker(tmp_path: Path) -> Path:
    """The real talker.mcap with its only chunk zeroed (CRC and all)."""
    if not TALKER.exists():
        pytest.skip("no talker.mcap")
    return zeroed_chunk(TALKER, tmp_path / "zeroed.mcap")


async def test_an_mcap_whose_only_chunk_is_zeroed_reports_every_message_missing(
    zeroed_talker: Path,
) -> None:
    path = zeroed_talker
    want = {t: len(v) for t, v in reference(TALKER).items()}
    source = BagSource(path)
    got = await read(source)
    assert got == {}
    ledgers = source.ledgers()
    assert {s: st.lost.get("missing", 0) for s, st in ledgers.items()} == {
        "rosout": want["/rosout"],
        "topic": want["/topic"],
        "parameter_events": 0,
    }
    assert sum(want.values()) == 20
    for st in ledgers.values():
        assert st.received == st.emitted + st.lost_total
    assert "its index says 10 messages, 0 were read (10 missing)" in str(source.last_error)
    assert any("is damaged" in m for m in source.reports)


async def test_a_bag_without_definitions_takes_the_types_of_the_distro_it_was_written_by() -> None:
    if not RANGE.exists():
        pytest.skip("no range.bag")
    source = BagSource(RANGE)
    assert source.ros_distro == "humble"
    assert source.types == "the ROS humble types (the bag stores no definitions)"
    assert_same(await read(source), reference(RANGE))
    # Iron added sensor_msgs/Range.variance: the newer types misread this bag, counted.
    newer = BagSource(RANGE, ros_distro="jazzy")
    assert await read(newer) == {}
    assert newer.errors == {"undecodable": 2}
    with pytest.raises(
        ValueError, match=r"unknown ROS distribution 'rolling'; rosbags has .*humble"
    ):
        BagSource(RANGE, ros_distro="rolling")


def test_the_default_distro_is_the_newest_lts_rosbags_ships() -> None:
    have = ros_distros()
    assert default_ros_distro() in have
    lts = [d for d in ("lyrical", "jazzy", "humble") if d in have]
    assert default_ros_distro() == lts[0]


async def test_a_ros2_bag_directory_named_dot_bag_reads(tmp_path: Path) -> None:
    bag = write(tmp_path / "drive.bag", "sqlite3")
    source = BagSource(bag)
    assert_same(await read(source), reference(bag))


def info(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from hyperframes.cli import main

    rc = main(["info", *args])
    return rc, capsys.readouterr().out


def test_info_checks_the_summary_against_the_contents_of_a_zeroed_chunk(
    zeroed_talker: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = zeroed_talker
    rc, out = info(capsys, str(path), "--json")
    assert rc == 0
    doc = json.loads(out)
    assert (doc["messages"], doc["missing"]) == (20, 20)
    assert {t["topic"]: (t["count"], t["read"]) for t in doc["topics"]} == {
        "/parameter_events": (0, 0),
        "/rosout": (10, 0),
        "/topic": (10, 0),
    }
    assert len(doc["damage"]) == 1
    rc, out = info(capsys, str(path))
    assert "0 (20 missing)" in out
    assert "/rosout: the index says 10 messages, 0 read" in " ".join(out.split())
    rc, out = info(capsys, str(path), "--quick", "--json")  # the index alone
    assert json.loads(out)["missing"] is None


def test_info_names_a_topic_whose_schema_does_not_parse_and_reads_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_schema_mcap(tmp_path / "odd.mcap")
    rc, out = info(capsys, str(path), "--json")
    doc = json.loads(out)
    topics = {t["topic"]: t for t in doc["topics"]}
    assert "does not parse" in topics["/odd"]["problem"]
    assert topics["/text"]["problem"] is None
    assert (topics["/text"]["read"], doc["missing"]) == (5, 0)
    rc, out = info(capsys, str(path))
    assert rc == 0
    assert "not readable:" in out
    assert "/odd (acme/msg/Odd)" in " ".join(out.split())


def test_info_names_the_type_store_and_takes_ros_distro(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if not RANGE.exists():
        pytest.skip("no range.bag")
    rc, out = info(capsys, str(RANGE), "--json")
    doc = json.loads(out)
    assert rc == 0
    assert (doc["ros_distro"], doc["plugin"], doc["missing"]) == ("humble", "sqlite3", 0)
    assert doc["types"] == "the ROS humble types (the bag stores no definitions)"
    rc, out = info(capsys, str(RANGE), "--ros-distro", "jazzy", "--json")
    assert json.loads(out)["types"] == "the ROS jazzy types (the bag stores no definitions)"
    rc, out = info(capsys, str(RANGE), "--ros-distro", "rolling")
    assert rc == 2
    assert "unknown ROS distribution 'rolling'" in out


@pytest.mark.parametrize("mode", ["message", "file"])
def test_info_reads_compressed_bags(
    tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bag = write(tmp_path / "bag.bag", "mcap", mode)
    rc, out = info(capsys, str(bag), "--json")
    doc = json.loads(out)
    assert (rc, doc["compression"], doc["messages"], doc["missing"]) == (
        0,
        f"zstd ({mode})",
        2 * N,
        0,
    )


def test_replay_of_the_zeroed_chunk_fails_with_what_it_lost_unless_loss_is_allowed(
    zeroed_talker: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # round 1's leftover: it replayed 0 frames with exit 0 while the summary said 20
    from hyperframes.cli import main

    path = zeroed_talker
    assert main(["replay", "--fast", str(path)]) == 1
    failed = " ".join(capsys.readouterr().out.split())
    assert "missing" in failed
    assert main(["replay", "--fast", "--allow-loss", str(path)]) == 0
    allowed = " ".join(capsys.readouterr().out.split())
    assert "missing" in allowed  # still reported, only the exit code changes
