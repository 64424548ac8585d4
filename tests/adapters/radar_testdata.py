"""The real ARS548 data of ../shared/data/real/radar/ars548 (tier4/nebula's decoder test):
its bag of packets, the ground truth nebula's decoder wrote, and the packets read by an
independent reader (rosbags with nebula's message definitions)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ARS548 = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "radar" / "ars548"
)
BAG = ARS548 / "1708578204"
TOPIC = "/sensing/radar/front_center/nebula_packets"
DETECTION_TRUTH = ARS548 / "1708578204_202447652_detection.yaml"
OBJECT_TRUTH = ARS548 / "1708578204_199326753_object.yaml"

NEBULA_MSGS = {
    # src/nebula_core/nebula_msgs/msg/*.msg at tier4/nebula 606ac41f
    "nebula_msgs/msg/NebulaPacket": "builtin_interfaces/Time stamp\nuint8[] data\n",
    "nebula_msgs/msg/NebulaPackets": "std_msgs/Header header\nNebulaPacket[] packets\n",
}


def truth(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


@functools.lru_cache(maxsize=1)
def nebula_typestore() -> Any:
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    types: dict[str, Any] = {}
    for name, text in NEBULA_MSGS.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def bag_packets() -> list[tuple[int, bytes]]:
    """(packet stamp ns, UDP payload) of every packet in the bag, read by rosbags with
    nebula's definitions (not by our parser)."""
    from rosbags.rosbag2 import Reader

    store = nebula_typestore()
    out = []
    with Reader(BAG) as reader:
        for conn, _t, raw in reader.messages():
            msg = store.deserialize_cdr(raw, conn.msgtype)
            for packet in msg.packets:
                stamp = packet.stamp.sec * 1_000_000_000 + packet.stamp.nanosec
                out.append((stamp, bytes(packet.data)))
    return out


def raw_messages() -> list[bytes]:
    """The bag's messages as stored (CDR bytes)."""
    from rosbags.rosbag2 import Reader

    with Reader(BAG) as reader:
        return [bytes(raw) for _c, _t, raw in reader.messages()]


def restamped(payload: bytes, t_ns: int) -> bytes:
    """A real list datagram with its sensor stamp (bytes 36-44: ns, s) set to ``t_ns``."""
    s, ns = divmod(t_ns, 1_000_000_000)
    return payload[:36] + ns.to_bytes(4, "big") + s.to_bytes(4, "big") + payload[44:]


def scan_capture(
    path: Path, scans: int, *, start_ns: int = 10_000_000, period_ns: int = 50_000_000
) -> None:
    """A pcap of ``scans`` radar cycles (the real object and detection lists, restamped
    every ``period_ns`` from ``start_ns``; each captured 2 ms after its stamp)."""
    from tests.adapters.lidar_testdata import write_pcap

    packets = [p for _t, p in bag_packets()]
    records = []
    for k in range(scans):
        t = start_ns + k * period_ns
        records += [
            (t + 2_000_000 + i * 1000, 42102, restamped(p, t)) for i, p in enumerate(packets)
        ]
    write_pcap(path, records)
