"""tier4/nebula's ``nebula_msgs/msg/NebulaPackets`` (CDR bytes of a ROS 2 bag) -> packets.

A nebula driver records a sensor's UDP payloads as they came, each with the
time it received them::

    NebulaPackets:  std_msgs/Header header;  NebulaPacket[] packets
    NebulaPacket:   builtin_interfaces/Time stamp;  uint8[] data

Bags written before ROS 2 Iron store no message definitions, and nebula's
types are in no standard type store, so the layout is read here directly:
plain CDR (either byte order), every length checked against the bytes that
are there before anything is sliced. ``tests/adapters/test_radar_ars548.py``
checks it against ``rosbags`` deserialising the same bytes with nebula's
``.msg`` definitions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MSGTYPE = "nebula_msgs/msg/NebulaPackets"
MSGTYPES = (MSGTYPE, "nebula_msgs/NebulaPackets")


class Malformed(ValueError):
    """Bytes that are not a NebulaPackets message (the message says where)."""


@dataclass(frozen=True, slots=True)
class Packets:
    """One message: its header stamp and frame id, each packet's stamp (ns) and bytes."""

    stamp: int
    frame_id: str
    packets: list[tuple[int, bytes]]


def parse(raw: bytes | memoryview) -> Packets:
    """Decode one CDR-serialised NebulaPackets message; :class:`Malformed` if it is not one."""
    buf = memoryview(raw)
    if len(buf) < 4:
        raise Malformed(f"{len(buf)} bytes, shorter than the 4-byte CDR header")
    kind = buf[1]
    if buf[0] != 0 or kind not in (0, 1):
        raise Malformed(f"CDR header {bytes(buf[:4]).hex()}: not plain CDR")
    e = "<" if kind == 1 else ">"
    u32 = struct.Struct(e + "I").unpack_from
    time = struct.Struct(e + "iI").unpack_from
    end = len(buf)
    pos = 4

    def need(n: int, what: str) -> None:
        if pos + n > end:
            raise Malformed(f"{what} at byte {pos} needs {n} bytes, {end - pos} left")

    def align4() -> None:
        nonlocal pos
        pos += -(pos - 4) % 4

    need(12, "header")
    sec, nsec = time(buf, pos)
    (text_len,) = u32(buf, pos + 8)
    pos += 12
    need(text_len, "frame_id")
    frame_id = bytes(buf[pos : pos + text_len]).rstrip(b"\0").decode("utf-8", "replace")
    pos += text_len
    align4()
    need(4, "packet count")
    (count,) = u32(buf, pos)
    pos += 4
    if count * 12 > end - pos:  # each packet holds at least its stamp and length
        raise Malformed(f"{count:,} packets cannot fit in the {end - pos:,} bytes left")
    packets: list[tuple[int, bytes]] = []
    for i in range(count):
        align4()
        need(12, f"packet {i}")
        p_sec, p_nsec = time(buf, pos)
        (size,) = u32(buf, pos + 8)
        pos += 12
        need(size, f"packet {i}'s {size:,} data bytes")
        packets.append((p_sec * 1_000_000_000 + p_nsec, bytes(buf[pos : pos + size])))
        pos += size
    return Packets(sec * 1_000_000_000 + nsec, frame_id, packets)
