"""Bags whose message definitions are hostile, written with rosbags' ROS 1 writer and the
mcap writer: a good ``/good`` topic (std_msgs/String) beside an ``/evil`` one.

The classes (``HOSTILE``): a recursive type, 10,000 fields, a type name with
path separators, one with terminal control characters, field names with both.
"""

from __future__ import annotations

import struct
from pathlib import Path

T0 = 1_700_000_000_000_000_000
N = 10

HOSTILE: dict[str, tuple[str, str]] = {
    "recursive": ("evil/msg/Loop", "int32 a\nevil/Loop next\n"),
    "wide": ("evil/msg/Wide", "".join(f"int8 f{i}\n" for i in range(10_000))),
    "pathname": ("evil/msg/../../../tmp/x", "int32 a\n"),
    "ctrlname": ("evil/msg/Be\x1b[31mll\x07", "int32 a\n"),
    "fieldname": ("evil/msg/Field", "int32 a/../b\nint32 c\x1b[2J\n"),
}
"""class -> (type name, stored definition, ROS 1 style)."""


def good_text(i: int) -> str:
    return f"hello {i}"


def write_ros1(path: Path, msgtype: str, msgdef: str) -> Path:
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    path.unlink(missing_ok=True)
    with Writer(path) as w:
        good = w.add_connection("/good", "std_msgs/msg/String", typestore=ts)
        bad = w.add_connection("/evil", msgtype, msgdef=msgdef, md5sum="0" * 32)
        for i in range(N):
            text = good_text(i).encode()
            w.write(good, T0 + i * 10**8, struct.pack("<I", len(text)) + text)
            w.write(bad, T0 + i * 10**8 + 1, b"\x01\x00\x00\x00" * 4)
    return path


def write_mcap(path: Path, msgtype: str, msgdef: str) -> Path:
    from mcap.writer import Writer

    ros2def = msgdef.replace("evil/", "evil/msg/")
    with path.open("wb") as f:
        w = Writer(f)
        w.start(profile="ros2", library="hyperframes tests")
        sg = w.register_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        sb = w.register_schema(msgtype, "ros2msg", ros2def.encode())
        cg = w.register_channel("/good", "cdr", sg)
        cb = w.register_channel("/evil", "cdr", sb)
        for i in range(N):
            s = good_text(i).encode() + b"\0"
            t = T0 + i * 10**8
            w.add_message(cg, t, b"\x00\x01\x00\x00" + struct.pack("<I", len(s)) + s, t)
            w.add_message(cb, t + 1, b"\x00\x01\x00\x00" + b"\x01\x00\x00\x00" * 4, t + 1)
        w.finish()
    return path


def write(folder: Path, name: str, kind: str) -> Path:
    """The hostile bag of class ``name`` as ``kind`` (``"ros1"`` or ``"mcap"``)."""
    msgtype, msgdef = HOSTILE[name]
    if kind == "ros1":
        return write_ros1(folder / f"bag_{name}.bag", msgtype, msgdef)
    return write_mcap(folder / f"bag_{name}.mcap", msgtype, msgdef)
