"""Field-for-field comparison of messages deserialised by rosbags, and reading MCAP exports back.

:func:`assert_same_message` walks two rosbags message objects by field name
(constants are class attributes, not fields, so they are not compared);
a ROS 1 ``Header``'s ``seq`` is ignored on the ROS 1 side, since ROS 2 has none, and
ROS 1 names are matched case-insensitively (a ROS 1 ``CameraInfo``'s ``D`` goes out as
ROS 2's ``d``); fields only the ROS 2 type has must be empty.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

BAGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"
EXPECTED = BAGS.parent / "expected.json"


def _fields(msg: Any) -> list[str]:
    """Field names; constants are ``ClassVar`` annotations (strings) and are left out."""
    return [f.name for f in dataclasses.fields(msg) if not str(f.type).startswith("ClassVar")]


def assert_same_message(want: Any, got: Any, where: str = "") -> None:
    """``got`` (ROS 2) has every field of ``want`` (ROS 1 or 2) with an equal value."""
    if dataclasses.is_dataclass(want):
        assert dataclasses.is_dataclass(got), f"{where}: {got!r} is not a message"
        names = _fields(want)
        if type(want).__name__.startswith("std_msgs__msg__Header") or (
            getattr(want, "__msgtype__", "") == "std_msgs/msg/Header"
        ):
            names = [n for n in names if n != "seq"]
        # ROS 1 names under ROS 2's rules (CameraInfo's D is d); a ROS 2 type may have
        # more fields than ROS 1's (Marker's textures), which must then be empty.
        theirs = {n.lower(): n for n in _fields(got)}
        assert [n.lower() for n in names if n.lower() in theirs] == [
            n for n in theirs if n in {m.lower() for m in names}
        ], f"{where}: fields differ"
        missing = [n for n in names if n.lower() not in theirs]
        assert not missing, f"{where}: fields {missing} missing"
        for name in names:
            assert_same_message(
                getattr(want, name), getattr(got, theirs[name.lower()]), f"{where}.{name}"
            )
        for extra in set(theirs) - {n.lower() for n in names}:
            value = getattr(got, theirs[extra])
            empty = not dataclasses.is_dataclass(value) and not np.any(value)
            assert empty or dataclasses.is_dataclass(value), f"{where}.{extra}: {value!r}"
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, list):
        assert isinstance(got, list), f"{where}: {type(got)}"
        assert len(got) == len(want), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            assert_same_message(a, b, f"{where}[{i}]")
    elif isinstance(want, float) and np.isnan(want):
        assert isinstance(got, float), f"{where}: {type(got)}"
        assert np.isnan(got), f"{where}: {got!r} is not NaN"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def read_bag(path: Path) -> dict[str, list[tuple[int, str, Any]]]:
    """Per topic, ``(log_time, msgtype, message)`` in log order, read with rosbags alone."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    out: dict[str, list[tuple[int, str, Any]]] = {}
    store = get_typestore(Stores.ROS2_HUMBLE)
    if path.is_dir() and path.suffix == ".bag":  # AnyReader takes it for ROS 1
        from rosbags.rosbag2 import Reader

        with Reader(path) as bag:
            for conn, log_time, raw in bag.messages():
                msg = store.deserialize_cdr(raw, conn.msgtype)
                out.setdefault(conn.topic, []).append((log_time, conn.msgtype, msg))
        return out
    with AnyReader([path], default_typestore=store) as reader:
        for conn, log_time, raw in reader.messages():
            try:
                msg = reader.deserialize(raw, conn.msgtype)
            except Exception:
                continue
            out.setdefault(conn.topic, []).append((log_time, conn.msgtype, msg))
    return out


def read_mcap_cdr(path: Path) -> Iterator[tuple[str, str, int, int, Any]]:
    """``(topic, schema name, log_time, publish_time, message)`` of every CDR message.

    Decoded with the ``mcap`` reader and rosbags types built from each
    channel's own ``ros2msg`` schema: what a ROS-less tool can do.
    """
    from mcap.reader import make_reader
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    stores: dict[int, Any] = {}
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            if channel.message_encoding != "cdr":
                continue
            assert schema is not None
            assert schema.encoding == "ros2msg"
            store = stores.get(schema.id)
            if store is None:
                store = stores[schema.id] = get_typestore(Stores.EMPTY)
                store.register(get_types_from_msg(schema.data.decode(), schema.name))
            msg = store.deserialize_cdr(message.data, schema.name)
            yield channel.topic, schema.name, message.log_time, message.publish_time, msg
