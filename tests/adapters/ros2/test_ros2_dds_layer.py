"""The DDS layer under ``Ros2Source``: names, QoS, message types built from rosbags' store,
raw CDR through a loopback participant.

The reference for the types is a real rosbag2 bag (94 standard message types,
serialised by ROS 2 itself) and Cyclone DDS's own CDR machinery: a type whose
layout differs from the message's would not read the bag's bytes back into the
same bytes.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.bags._reader import BagReader
from adapters.ros import (
    DEFAULT,
    SENSOR_DATA,
    Participant,
    TopicQos,
    UnsupportedType,
    dds_topic_name,
    dds_type_name,
    loopback_config,
    message_class,
    raw_sample,
    ros_topic_name,
    ros_type_name,
    wait_matched,
)
from adapters.ros._idltypes import pad_cdr, sample_bytes, unpad_cdr
from adapters.ros._qos import type_hash_from_user_data, type_hash_user_data
from adapters.ros._typestore import type_store
from fusion.errors import UsageError

REAL = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "real" / "bags"
TYPES_BAG = REAL / "rosbags_rs_test_bag_sqlite3"


@pytest.mark.parametrize(
    ("topic", "dds"),
    [("/imu/data", "rt/imu/data"), ("/chatter", "rt/chatter"), ("/a_1/b2/_c", "rt/a_1/b2/_c")],
)
def test_topics_map_to_rt_prefixed_dds_names_and_back(topic: str, dds: str) -> None:
    assert dds_topic_name(topic) == dds
    assert ros_topic_name(dds) == topic


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("imu", "must start with '/'"),
        ("/imu/", "'' is not a valid name token"),
        ("//imu", "'' is not a valid name token"),
        ("/1imu", "'1imu' is not a valid name token"),
        ("/imu data", "'imu data' is not a valid name token"),
    ],
)
def test_a_topic_that_is_not_fully_qualified_is_refused_with_the_reason(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("(", r"\(")):
        dds_topic_name(bad)


def test_dds_topics_that_are_not_ros_topics_map_to_none() -> None:
    assert ros_topic_name("rq/add_two_intsRequest") is None
    assert ros_topic_name("ros_discovery_info") is None
    assert ros_topic_name("rt/bad//name") is None


def test_types_map_to_the_dds_type_names_rmw_uses() -> None:
    assert dds_type_name("sensor_msgs/msg/Imu") == "sensor_msgs::msg::dds_::Imu_"
    assert ros_type_name("tf2_msgs::msg::dds_::TFMessage_") == "tf2_msgs/msg/TFMessage"
    assert ros_type_name("rmw_dds_common::msg::ParticipantEntitiesInfo") is None
    with pytest.raises(ValueError, match="not a ROS 2 message type name"):
        dds_type_name("sensor_msgs/Imu")


_ident = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,12}", fullmatch=True)


@given(st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), min_size=1))
def test_every_valid_topic_round_trips(tokens: list[str]) -> None:
    topic = "/" + "/".join(tokens)
    assert ros_topic_name(dds_topic_name(topic)) == topic


@given(_ident, _ident)
def test_every_valid_type_round_trips(package: str, name: str) -> None:
    msgtype = f"{package}/msg/{name}"
    assert ros_type_name(dds_type_name(msgtype)) == msgtype


@given(st.binary(min_size=4, max_size=64))
def test_padding_recorded_in_the_options_is_undone_exactly(body: bytes) -> None:
    raw = b"\x00\x01\x00\x00" + body
    padded = pad_cdr(raw)
    assert len(padded) % 4 == 0
    assert padded[3] & 3 == -len(raw) % 4
    assert unpad_cdr(padded) == raw


def test_bytes_without_recorded_padding_stay_as_received() -> None:
    raw = b"\x00\x01\x00\x00\x03\x00\x00\x00ab\x00\x00"  # rmw_cyclonedds: zeros, options 0
    assert unpad_cdr(raw) == raw


def test_qos_profiles_are_ros2s_and_refuse_unknown_values() -> None:
    assert TopicQos("best_effort", "volatile", 5) == SENSOR_DATA
    assert TopicQos("reliable", "volatile", 10) == DEFAULT
    assert TopicQos.from_mapping({"reliability": "reliable"}) == TopicQos("reliable", "volatile", 5)
    assert TopicQos.from_mapping({"depth": 20}, DEFAULT).depth == 20
    with pytest.raises(ValueError, match="QoS reliability 'sometimes'"):
        TopicQos("sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="QoS depth must be an integer >= 1, got 0"):
        TopicQos(depth=0)
    with pytest.raises(ValueError, match="unknown QoS key 'history'"):
        TopicQos.from_mapping({"history": "keep_all"})


def test_the_type_hash_travels_in_user_data_as_rmw_writes_it() -> None:
    digest = "RIHS01_" + "ab" * 32
    assert type_hash_user_data(digest) == f"typehash={digest};".encode()
    assert type_hash_from_user_data(b"foo=bar;typehash=" + digest.encode() + b";") == digest
    assert type_hash_from_user_data(b"") is None


def _bag_messages() -> tuple[Any, list[tuple[str, str, bytes]]]:
    """The types bag's own type store, and (topic, type, CDR bytes) of the first message
    of each of its topics."""
    out: dict[str, tuple[str, str, bytes]] = {}
    with BagReader(TYPES_BAG) as reader:
        conns = [c for info in reader.topics.values() for c in info.connections]
        for conn, _, raw in reader.messages(conns):
            out.setdefault(conn.topic, (conn.topic, conn.msgtype, bytes(raw)))
        return reader.typestore, sorted(out.values())


def test_every_standard_type_has_the_layout_of_its_ros2_message() -> None:
    store, messages = _bag_messages()  # the definitions the bag's writer used
    assert len(messages) >= 90
    checked = 0
    for topic, msgtype, raw in messages:
        cls = message_class(store, msgtype)
        assert cls.__idl_typename__ == dds_type_name(msgtype)  # type: ignore[attr-defined]
        # Cyclone's own CDR machinery reads the bag's bytes into this struct and
        # writes them back identically: same fields, types, order and alignment.
        value = cls.__idl__.deserialize(raw)  # type: ignore[attr-defined]
        again = cls.__idl__.serialize(value)  # type: ignore[attr-defined]
        assert again == raw + b"\0" * (len(again) - len(raw)), (topic, msgtype)
        assert len(again) - len(raw) <= 3
        checked += 1
    assert checked >= 90


def test_distributions_differ_in_a_type_and_its_hash_says_so() -> None:
    """sensor_msgs/Range gained a ``variance`` field in Jazzy: a Jazzy-typed reader cannot
    read a Humble publisher's Range (Cyclone drops it), which the type hash announces."""
    store, _ = _bag_messages()  # recorded with Humble's definitions
    humble, jazzy = type_store("humble"), type_store("jazzy")
    rng, imu = "sensor_msgs/msg/Range", "sensor_msgs/msg/Imu"
    assert store.fielddefs[rng] == humble.fielddefs[rng]
    assert "variance" not in [f[0] for f in humble.fielddefs[rng][1]]
    assert "variance" in [f[0] for f in jazzy.fielddefs[rng][1]]
    assert humble.hash_rihs01(rng) != jazzy.hash_rihs01(rng)
    assert humble.hash_rihs01(imu) == jazzy.hash_rihs01(imu)


def test_nested_messages_are_structs_with_their_own_dds_names() -> None:
    store = type_store("jazzy")
    cls = message_class(store, "sensor_msgs/msg/Imu")
    header = cls.__annotations__["header"]
    assert header.__idl_typename__ == "std_msgs::msg::dds_::Header_"
    assert header is message_class(store, "std_msgs/msg/Header")
    assert message_class(store, "sensor_msgs/msg/Imu") is cls


def test_a_type_the_store_lacks_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedType, match="no definition of acme_msgs/msg/Widget"):
        message_class(type_store("jazzy"), "acme_msgs/msg/Widget")


def test_samples_carry_their_cdr_bytes_and_refuse_to_write_without_them() -> None:
    cls = message_class(type_store("jazzy"), "std_msgs/msg/String")
    raw = b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00"
    sample = raw_sample(cls, raw)
    assert sample_bytes(sample) == raw
    assert sample.serialize() == pad_cdr(raw)
    assert repr(sample) == "String_(11 bytes)"
    with pytest.raises(TypeError, match=r"make it with raw_sample\(cls, data\)"):
        object.__new__(cls).serialize()


def test_raw_bytes_cross_a_loopback_domain_unchanged_with_the_type_hash_announced() -> None:
    store = type_store("jazzy")
    cls = message_class(store, "std_msgs/msg/String")
    digest = store.hash_rihs01("std_msgs/msg/String")
    domain = random.randrange(100, 200)
    config = loopback_config()
    sent = [bytes(store.serialize_cdr(store.types["std_msgs/msg/String"](t), "std_msgs/msg/String"))
            for t in ("a", "hello", "three")]  # fmt: skip
    qos = TopicQos("reliable", "transient_local", 10)
    with Participant(domain, config) as pub, Participant(domain, config) as sub:
        writer = pub.writer("/chatter", cls, qos, type_hash=digest)
        for raw in sent:
            writer.write(raw_sample(cls, raw))
        reader = sub.reader("/chatter", cls, qos)
        got: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(got) < len(sent) and time.monotonic() < deadline:
            got += [sample_bytes(s) for s in reader.take(N=10)]
            time.sleep(0.01)
        assert got == sent  # padding undone: the bytes rosbags wrote
        found: list[Any] = []
        while not found and time.monotonic() < deadline:
            found = [p for p in sub.publications() if p.topic == "/chatter"]
            time.sleep(0.01)
        assert found[0].msgtype == "std_msgs/msg/String"
        assert found[0].dds_type == "std_msgs::msg::dds_::String_"
        assert found[0].type_hash == digest
    with pytest.raises(UsageError, match="is closed"):
        pub.reader("/chatter", cls, qos)


def test_a_domain_configured_twice_differently_in_one_process_is_refused() -> None:
    domain = random.randrange(100, 200)
    with (
        Participant(domain, loopback_config()),
        pytest.raises(UsageError, match=f"DDS domain {domain} is already open"),
    ):
        Participant(domain, loopback_config(max_participants=4))
    Participant(domain, loopback_config(max_participants=4)).close()  # the domain was freed


def test_a_domain_opened_with_cyclone_s_defaults_refuses_a_config_by_name() -> None:
    """The publisher of ``record --to-ros2`` opened first without a config: a source's config
    is then a UsageError saying so (was Cyclone's bare PRECONDITION_NOT_MET)."""
    domain = random.randrange(100, 200)
    with (
        Participant(domain),
        pytest.raises(UsageError, match="already open in this process with Cyclone's default"),
    ):
        Participant(domain, loopback_config())
    Participant(domain, loopback_config()).close()  # the domain was freed


def test_a_writer_ignoring_local_readers_is_never_read_back_in_its_process() -> None:
    """``ignore_local``: what ``--to-ros2`` writes, a reader of the same process never matches
    (no echo loop); a reader of another participant of the process matches a plain writer."""
    store = type_store("jazzy")
    cls = message_class(store, "std_msgs/msg/String")
    domain = random.randrange(100, 200)
    qos = TopicQos("reliable", "volatile", 10)
    with Participant(domain, loopback_config()) as pub, Participant(domain) as sub:
        reader = sub.reader("/chatter", cls, qos)
        quiet = pub.writer("/chatter", cls, qos, ignore_local=True)
        assert not wait_matched(quiet, 1, 1.0)
        plain = pub.writer("/chatter", cls, qos)
        assert wait_matched(plain, 1, 10.0)
        assert wait_matched(reader, 1, 10.0)
        assert reader.get_subscription_matched_status().current_count == 1
