"""CAN sensors exported: ``hyperframes record`` of python-can's real logs and a candump log of
cantools' motohawk DBC, then ``export`` to a ROS 2 MCAP and a Foxglove MCAP, read back with
the ``mcap`` reader and rosbags: raw frames are ``can_msgs/msg/Frame`` whose ids, flags and
bytes equal python-can's read of the source log, decoded signals a typed record per CAN
frame equal to cantools' decoding; ``sync -o groups.parquet`` on the CAN sensors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import can
import cantools
import numpy as np
import pytest
from mcap.reader import make_reader

ROOT = Path(__file__).resolve().parents[2]
REAL_CAN = ROOT / ".." / "shared" / "data" / "real" / "can"
DATA = ROOT / "tests" / "data" / "can"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def mcap_messages(path: Path) -> dict[str, list[tuple[Any, Any, bytes]]]:
    """Per topic: (schema, message, data) in file order, read with the mcap reader."""
    out: dict[str, list[tuple[Any, Any, bytes]]] = {}
    with path.open("rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(log_time_order=False):
            out.setdefault(channel.topic, []).append((schema, message, message.data))
    return out


def typestore_for(schemas: list[Any]) -> Any:
    """A rosbags type store knowing the MCAP's own message definitions (can_msgs too)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    for schema in schemas:
        if schema.name not in store.types:
            text = schema.data.decode()
            first = text.split("\n=====")[0]  # the type's own definition, before dependencies
            store.register(get_types_from_msg(first, schema.name))
    return store


def reference(path: Path) -> list[can.Message]:
    kwargs = {"relative_timestamp": False} if ".asc" in path.suffixes else {}
    return [
        m
        for m in can.LogReader(str(path), **kwargs)
        if not m.is_error_frame
        and len(m.data or b"") <= 8
        and (m.is_remote_frame or m.dlc == len(m.data))
    ]


@pytest.mark.parametrize("block", [1, 16])
@pytest.mark.parametrize(
    "name", ["issue_1256.asc", "test_CanMessage.asc.gz", "test_CanMessage_V1_1.trc"]
)
def test_raw_frames_export_as_can_msgs_frame_equal_to_python_can(
    tmp_path: Path, name: str, block: int
) -> None:
    log = REAL_CAN / name
    config = tmp_path / "can.toml"
    config.write_text(f'[[sources]]\ntype = "can"\nname = "bus"\npath = "{log}"\nblock = {block}\n')
    out = tmp_path / "can.hfr"
    done = cli("record", str(config), "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    mcap = tmp_path / "can.mcap"
    done = cli("export", str(out), "-o", str(mcap), "--groups", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    messages = mcap_messages(mcap)["/bus"]
    assert {s.name for s, _, _ in messages} == {"can_msgs/msg/Frame"}
    store = typestore_for([messages[0][0]])
    decoded = [store.deserialize_cdr(data, "can_msgs/msg/Frame") for _, _, data in messages]
    expected = reference(log)
    assert len(decoded) == len(expected)
    for msg, m in zip(decoded, expected, strict=True):
        assert msg.id == m.arbitration_id
        assert msg.is_extended == m.is_extended_id
        assert msg.is_rtr == m.is_remote_frame
        assert not msg.is_error
        assert msg.dlc == (m.dlc if m.is_remote_frame else len(m.data))
        if not m.is_remote_frame:
            assert bytes(msg.data[: msg.dlc]) == bytes(m.data)
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        assert msg.header.frame_id == "bus"
        assert stamp > 0
    # the row stamps keep the log's spacing (a block's rows too)
    stamps = [d.header.stamp.sec * 10**9 + d.header.stamp.nanosec for d in decoded]
    own = [round(m.timestamp * 1e9) for m in expected]
    assert np.array_equal(np.diff(stamps), np.diff(own))


def test_fd_frames_that_do_not_fit_can_msgs_are_counted(tmp_path: Path) -> None:
    log = REAL_CAN / "test_CanFdMessage.blf"  # two FD frames of 64 bytes
    config = tmp_path / "can.toml"
    config.write_text(f'[[sources]]\ntype = "can"\nname = "bus"\npath = "{log}"\n')
    out = tmp_path / "fd.hfr"
    assert cli("record", str(config), "-o", str(out)).returncode == 0
    done = cli("export", str(out), "-o", str(tmp_path / "fd.mcap"), "--groups", "none")
    wide = [m for m in can.LogReader(str(log)) if m.is_fd and len(m.data) > 8]
    assert wide  # the log has FD frames longer than 8 bytes
    assert done.returncode == 1  # frames that cannot be exported fail the command, said
    assert "does not fit can_msgs/msg/Frame" in done.stdout + done.stderr


def motohawk_log(path: Path, n: int = 120) -> tuple[Path, list[bytes]]:
    db: Any = cantools.database.load_file(str(DATA / "motohawk.dbc"))
    message = db.get_message_by_name("ExampleMessage")
    rng = np.random.default_rng(11)
    payloads = [bytes(rng.integers(0, 256, 8, dtype=np.uint8)) for _ in range(n)]
    lines = [
        f"({1.7e9 + k * 0.01:.6f}) can0 {message.frame_id:03X}#{p.hex().upper()}"
        for k, p in enumerate(payloads)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, payloads


@pytest.mark.parametrize("block", [1, 32])
def test_decoded_signals_export_as_typed_records_equal_to_cantools(
    tmp_path: Path, block: int
) -> None:
    log, payloads = motohawk_log(tmp_path / "drive.log")
    db: Any = cantools.database.load_file(str(DATA / "motohawk.dbc"))
    message = db.get_message_by_name("ExampleMessage")
    config = tmp_path / "can.toml"
    config.write_text(
        f'[[sources]]\ntype = "can"\nname = "bus"\npath = "{log}"\n'
        f'database = "{DATA / "motohawk.dbc"}"\nblock = {block}\n'
    )
    out = tmp_path / "sig.hfr"
    done = cli("record", str(config), "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    mcap = tmp_path / "sig.mcap"
    assert cli("export", str(out), "-o", str(mcap), "--groups", "none").returncode == 0
    topics = mcap_messages(mcap)
    signals = topics["/bus.ExampleMessage"]
    schema = signals[0][0]
    assert schema.name.startswith("hyperframes_msgs/msg/")
    text = schema.data.decode()  # ROS field names are lower case
    assert "float64 temperature" in text  # scaled by 0.01: a float64 field
    assert "int64 enable" in text  # a raw integer signal stays an integer
    store = typestore_for([schema])
    rows = [store.deserialize_cdr(data, schema.name) for _, _, data in signals]
    assert len(rows) == len(payloads)
    for row, payload in zip(rows, payloads, strict=True):
        expected = message.decode(payload, decode_choices=False)
        for name, value in expected.items():
            assert getattr(row, name.lower()) == pytest.approx(value, rel=1e-12), name
    assert len(topics["/bus"]) == len(payloads)  # the raw copy, as can_msgs/msg/Frame

    # the Foxglove profile: JSON, one message per CAN frame, a number per signal
    fox = tmp_path / "sig.fox.mcap"
    done = cli("export", str(out), "-o", str(fox), "--profile", "foxglove", "--groups", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    topics = mcap_messages(fox)
    records = [json.loads(data) for _, _, data in topics["/bus.ExampleMessage"]]
    assert len(records) == len(payloads)
    for record, payload in zip(records, payloads, strict=True):
        for name, value in message.decode(payload, decode_choices=False).items():
            assert record[name] == pytest.approx(value, rel=1e-12)
    raw = [json.loads(data) for _, _, data in topics["/bus"]]
    assert [bytes(r["data"]) for r in raw] == payloads
    assert {r["id"] for r in raw} == {message.frame_id}

    # sync groups to Parquet with a CAN message as the reference
    table = tmp_path / "groups.parquet"
    done = cli(
        "sync", str(out), "--policy", "nearest", "--reference", "bus.ExampleMessage",
        "--sensors", "bus.ExampleMessage", "bus", "--tolerance", "1ms", "-o", str(table),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    import pyarrow.parquet as pq

    groups = pq.read_table(table)
    assert groups.num_rows == -(-len(payloads) // block)  # a group per reference frame
    assert groups.column("bus_seq").null_count == 0


def test_raw_frames_in_a_ros1_bag_are_can_msgs_frame_equal_to_python_can(tmp_path: Path) -> None:
    from rosbags.rosbag1 import Reader
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    log = REAL_CAN / "issue_1256.asc"
    config = tmp_path / "can.toml"
    config.write_text(f'[[sources]]\ntype = "can"\nname = "bus"\npath = "{log}"\nblock = 64\n')
    out = tmp_path / "can.hfr"
    assert cli("record", str(config), "-o", str(out)).returncode == 0
    bag = tmp_path / "can.bag"
    done = cli("export", str(out), "-o", str(bag), "--groups", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    with Reader(bag) as reader:
        (conn,) = reader.connections
        assert conn.msgtype == "can_msgs/msg/Frame"
        store = get_typestore(Stores.ROS1_NOETIC)
        text = conn.msgdef.data if hasattr(conn.msgdef, "data") else conn.msgdef
        store.register(get_types_from_msg(text.split("\n====")[0], conn.msgtype))
        msgs = [store.deserialize_ros1(raw, c.msgtype) for c, _, raw in reader.messages()]
    expected = reference(log)
    assert len(msgs) == len(expected)
    for msg, m in zip(msgs, expected, strict=True):
        assert (msg.id, msg.is_extended, msg.is_rtr) == (
            m.arbitration_id,
            m.is_extended_id,
            m.is_remote_frame,
        )
        assert bytes(msg.data[: msg.dlc]) == bytes(m.data)
