"""Bags whose message definitions are hostile, written with rosbags' ROS 1 writer and the
mcap writer: a good ``/good`` topic (std_msgs/String) beside an ``/evil`` one.

The classes (``HOSTILE``): a recursive type, 10,000 fields, a type name with
path separators, one with terminal control characters, field names with both.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

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


# -- decompression bombs in a real bag (issue 35) ---------------------------------

FIDUCIALS = Path(__file__).resolve().parents[3] / "shared/data/real/bags/fiducials_aruco_images.bag"
"""Raspberry Pi camera: one 1280x960 JPEG CompressedImage and 15 CameraInfo (real)."""
IMAGE_TOPIC = "/raspicam_node/image/compressed"
BOMB_SIDE = 8192
"""The PNG bomb: 8192x8192 RGBA, all zeros: 256 MiB decoded from about 255 kB."""
FORGED_JPEG_SIDE = 30000
"""The real JPEG with its frame header saying 30000x30000 (900 megapixels)."""


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    import zlib

    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb(side: int = BOMB_SIDE) -> bytes:
    """A valid PNG of ``side`` x ``side`` RGBA zeros, compressed at zlib level 9."""
    import zlib

    row = b"\x00" * (1 + side * 4)  # filter type 0, then the pixels
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row * 64) for _ in range(side // 64)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )  # fmt: skip


def forge_jpeg_size(jpeg: bytes, width: int, height: int) -> bytes:
    """``jpeg`` with the size in its first frame header (SOF0..SOF15) replaced."""
    at = 2
    while at < len(jpeg):
        marker = jpeg[at + 1]
        (length,) = struct.unpack_from(">H", jpeg, at + 2)
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return jpeg[: at + 5] + struct.pack(">HH", height, width) + jpeg[at + 9 :]
        at += 2 + length
    raise ValueError("no frame header")


def write_image_bombs(path: Path, bombs: int = 12) -> Path:
    """The real fiducials bag, every message kept, with ``bombs`` more CompressedImage
    messages after its JPEG: PNG bombs and the JPEG with a forged frame header, alternating
    (even seq after the real one: PNG; odd: JPEG), 10 ms apart."""
    import dataclasses

    from rosbags.rosbag1 import Reader, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    bomb = png_bomb()
    path.unlink(missing_ok=True)
    with Reader(FIDUCIALS) as reader, Writer(path) as writer:
        out = {
            c.id: writer.add_connection(c.topic, c.msgtype, typestore=ts)
            for c in reader.connections
        }
        for conn, t, raw in reader.messages():
            writer.write(out[conn.id], t, raw)
            if conn.topic != IMAGE_TOPIC:
                continue
            msg: Any = ts.deserialize_ros1(raw, conn.msgtype)
            jpeg = bytes(msg.data)
            for i in range(bombs):
                if i % 2 == 0:
                    fmt, data = "png", bomb
                else:
                    fmt, data = "jpeg", forge_jpeg_size(jpeg, FORGED_JPEG_SIDE, FORGED_JPEG_SIDE)
                evil = dataclasses.replace(msg, format=fmt, data=np.frombuffer(data, np.uint8))
                t_evil = t + (i + 1) * 10_000_000
                writer.write(out[conn.id], t_evil, ts.serialize_ros1(evil, conn.msgtype))
    return path
