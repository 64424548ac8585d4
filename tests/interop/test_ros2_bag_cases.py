"""ROS 2 bags as rosbag2 writes them, against independent readers (rosbags, sqlite3, mcap).

* **Service events** (Jazzy+): the real ``rosbag2_topics_and_services.mcap`` and the
  same bag in sqlite3 storage, whose ``message_definitions`` row is keyed by the service
  type (``pkg/srv/X``, as rosbag2 writes it) rather than the topic's ``X_Event``:
  both read every message, the same values, each event's sum the sum of its request.
* **Per-message zstd compression without metadata.yaml**: a ``.db3`` alone (the real
  ``rosbag2_wbag`` rewritten with per-message compression by rosbags' writer) reads
  every message, detected from the data, each equal to the uncompressed original.
* **Placeholder definitions**: rosbag2's own sqlite3 talker bag stores ``uint8 level``
  for ``rcl_interfaces/msg/Log``; the topic is read as the standard type, with a warning.
* **Jazzy, Kilted and Lyrical** bags (metadata version 9, ``ros_distro``, RIHS01 type
  hashes, each distribution's own definitions; MCAP and sqlite3) written by rosbags'
  writer from the messages of a real bag: every message read, value for value as
  rosbags deserialises it.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import BagSource
from adapters.bags import read_bag_summary
from adapters.ros import decode_generic, message_to_arrays
from adapters.ros._passthrough import RAW
from fusion import Frame
from tests.interop.bagmake import rewrite

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "real"
SERVICES = SHARED / "bags-rosbag2" / "rosbag2_topics_and_services.mcap"
WBAG = SHARED / "bags" / "rosbag2_wbag"
TALKER = ROOT / "tests" / "data" / "rosbag2_sqlite3_talker"
TYPES_BAG = SHARED / "bags" / "rosbags_rs_test_bag_sqlite3"


def frames_of(path: Path, **kwargs: Any) -> tuple[list[Frame], BagSource]:
    source = BagSource(path, **kwargs)

    async def run() -> list[Frame]:
        return [f async for f in source.frames()]

    try:
        return anyio.run(run), source
    finally:
        source.close()


def same(a: Any, b: Any) -> bool:
    """Decoded payloads equal: dicts key for key, arrays element for element (NaN = NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    x, y = np.asarray(a), np.asarray(b)
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        return x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=True))
    return x.shape == y.shape and bool(np.array_equal(x, y))


# -- service events -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def services_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("services") / "services"
    assert rewrite(SERVICES, out, storage="sqlite3", ros_distro="jazzy") == 13
    with sqlite3.connect(next(out.glob("*.db3"))) as db:  # as rosbag2 stores it
        rows = {r[0] for r in db.execute("SELECT topic_type FROM message_definitions")}
    assert "example_interfaces/srv/AddTwoInts" in rows
    assert "example_interfaces/srv/AddTwoInts_Event" not in rows
    return out


def test_service_events_read_from_sqlite3_as_from_mcap(services_sqlite: Path) -> None:
    from mcap.reader import make_reader

    from_mcap, src_mcap = frames_of(SERVICES)
    from_db, src_db = frames_of(services_sqlite)
    from_db3, _ = frames_of(next(services_sqlite.glob("*.db3")))  # the .db3 alone too
    assert src_mcap.reports == src_db.reports == []
    assert src_db.unsupported == {}
    with SERVICES.open("rb") as f:
        want = [
            (c.topic, m.log_time, m.data)
            for _s, c, m in make_reader(f).iter_messages(log_time_order=True)
        ]
    for got in (from_mcap, from_db, from_db3):
        assert [(f.meta["topic"], f.t_arrival, f.meta[RAW]) for f in got] == want
    for a, b in zip(from_mcap, from_db, strict=True):
        assert same(a.data, b.data)
    events = [f.data for f in from_db if f.meta["topic"] == "/add_two_ints/_service_event"]
    assert len(events) == 6
    # ground truth: each response's sum is the a + b of the request of its sequence number
    requests = {int(e["info.sequence_number"]): e for e in events if "request.a" in e}
    responses = {int(e["info.sequence_number"]): e for e in events if "response.sum" in e}
    assert len(requests) == len(responses) == 3
    for seq, response in responses.items():
        request = requests[seq]
        assert response["response.sum"] == request["request.a"] + request["request.b"]
    info = read_bag_summary(services_sqlite)
    assert info.missing == 0
    assert [t.problem for t in info.topics] == [None] * 5
    assert {t.name: t.read for t in info.topics}["/add_two_ints/_service_event"] == 6


# -- per-message compression ---------------------------------------------------------------


def test_per_message_zstd_db3_without_metadata_is_detected(tmp_path: Path) -> None:
    from rosbags.rosbag2 import Reader

    bag = tmp_path / "compressed"
    total = rewrite(WBAG, bag, message_compression=True)
    alone = tmp_path / "alone.db3"
    shutil.copy(next(bag.glob("*.db3")), alone)
    with Reader(WBAG) as reader:  # the uncompressed original, read by rosbags
        want = sorted((c.topic, t, bytes(raw)) for c, t, raw in reader.messages())
    assert len(want) == total == 6074
    got, source = frames_of(alone)
    assert source.reports == []
    assert sorted((f.meta["topic"], f.t_arrival, f.meta[RAW]) for f in got) == want
    info = read_bag_summary(alone)
    assert info.compression == "zstd (message, detected from the data)"
    assert (info.messages, info.missing) == (6074, 0)


# -- placeholder definitions -------------------------------------------------------------------


def test_placeholder_definition_falls_back_to_the_standard_type_with_a_warning() -> None:
    from rosbags.typesys import Stores, get_typestore

    got, source = frames_of(TALKER)
    assert Counter(f.meta["topic"] for f in got) == {"/topic": 10, "/rosout": 10}
    assert source.errors == {"definition_replaced": 1}  # a warning, no message lost
    assert any("uint8 level" not in r and "rcl_interfaces/msg/Log" in r for r in source.reports)
    store = get_typestore(Stores(f"ros2_{source.ros_distro}"))
    with sqlite3.connect(TALKER / "talker.db3") as db:
        rows = db.execute(
            "SELECT timestamp, data FROM messages JOIN topics ON topics.id = topic_id "
            "WHERE name = '/rosout' ORDER BY timestamp"
        ).fetchall()
    logs = [f for f in got if f.meta["topic"] == "/rosout"]
    for frame, (t, raw) in zip(logs, rows, strict=True):
        assert frame.t_arrival == t
        assert same(
            frame.data, message_to_arrays(store.deserialize_cdr(raw, "rcl_interfaces/msg/Log"))
        )
    assert int(logs[0].data["level"]) == 20
    assert str(logs[0].data["msg"]) == "Publishing: 'Hello, world! 0'"
    info = read_bag_summary(TALKER)
    assert [("rcl_interfaces/msg/Log" in n, "/rosout" in n) for n in info.notes] == [(True, True)]
    assert info.missing == 0


# -- Jazzy, Kilted, Lyrical ------------------------------------------------------------------------


def distro_bag(distro: str, storage: str, out: Path) -> dict[str, list[tuple[int, bytes]]]:
    """A bag as ``distro`` writes it (its definitions, RIHS01 hashes, metadata version 9),
    holding the real bag's messages of every type that distro defines as Humble does."""
    from rosbags.interfaces import MessageDefinitionFormat
    from rosbags.rosbag2 import Reader, Writer
    from rosbags.rosbag2.enums import StoragePlugin
    from rosbags.typesys import Stores, get_typestore

    humble = get_typestore(Stores.ROS2_HUMBLE)
    store = get_typestore(Stores(f"ros2_{distro}"))
    plugin = StoragePlugin.SQLITE3 if storage == "sqlite3" else StoragePlugin.MCAP
    written: dict[str, list[tuple[int, bytes]]] = {}
    with Reader(TYPES_BAG) as reader, Writer(out, version=9, storage_plugin=plugin) as writer:
        conns = {}
        for conn in reader.connections:
            same_type = store.fielddefs.get(conn.msgtype) == humble.fielddefs.get(conn.msgtype)
            if conn.msgdef.format == MessageDefinitionFormat.MSG and same_type:
                conns[conn.id] = writer.add_connection(conn.topic, conn.msgtype, typestore=store)
        for conn, t, raw in reader.messages([c for c in reader.connections if c.id in conns]):
            msg = humble.deserialize_cdr(raw, conn.msgtype)
            data = bytes(store.serialize_cdr(msg, conn.msgtype))
            writer.write(conns[conn.id], t, data)
            written.setdefault(conn.topic, []).append((t, data))
    meta = out / "metadata.yaml"
    meta.write_text(meta.read_text().replace("ros_distro: rosbags", f"ros_distro: {distro}"))
    return written


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("distro", ["jazzy", "kilted", "lyrical"])
def test_jazzy_kilted_lyrical_bags_with_type_hashes(
    tmp_path: Path, distro: str, storage: str
) -> None:
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    out = tmp_path / f"{distro}_{storage}"
    written = distro_bag(distro, storage, out)
    assert sum(map(len, written.values())) > 150
    with Reader(out) as reader:  # the hashes are the distribution's own
        store = get_typestore(Stores(f"ros2_{distro}"))
        for conn in reader.connections:
            assert conn.digest == store.hash_rihs01(conn.msgtype)
    got, source = frames_of(out)
    assert source.ros_distro == distro
    # The real bag's two placeholder images (30 bytes for 640x480, a 10-byte "JPEG")
    # are its only losses, as when the original is read.
    fakes = {"/test/sensor_msgs/image", "/test/sensor_msgs/compressed_image"}
    assert dict(source.errors) == {"undecodable": 4}
    assert all("image" in r for r in source.reports)
    by_topic: dict[str, list[Frame]] = {}
    for f in got:
        by_topic.setdefault(f.meta["topic"], []).append(f)
    assert {t: [(f.t_arrival, f.meta[RAW]) for f in fs] for t, fs in by_topic.items()} == {
        t: m for t, m in written.items() if t not in fakes
    }
    kinds = {s.meta["topic"]: (s.kind, s.meta["msgtype"]) for s in source.specs}
    for topic, frames in by_topic.items():
        kind, msgtype = kinds[topic]
        if kind != "generic":  # the sensor decoders have tests of their own
            continue
        for f in frames:
            msg: Any = store.deserialize_cdr(f.meta[RAW], msgtype)
            assert same(f.data, decode_generic(msg)[0]), topic
            if getattr(msg, "header", None) is not None:
                stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
                assert (f.t_sensor, f.meta["frame_id"]) == (stamp, msg.header.frame_id)
    info = read_bag_summary(out)
    assert (info.ros_distro, info.missing) == (distro, 0)
