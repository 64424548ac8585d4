"""Paths and expected values of the real LiDAR captures in ../shared/data/lidar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LIDAR_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "lidar"
MONTEREY = LIDAR_DATA / "monterey-first-100-packets.pcap"  # HDL-32E, 2702 data packets
VLP16 = LIDAR_DATA / "vlp-16-test-90deg-1-50-frames.pcap"  # VLP-16, 1902 data packets


def expected() -> dict[str, Any]:
    result: dict[str, Any] = json.loads((LIDAR_DATA / "expected.json").read_text())
    return result


def pcap_stats(name: str) -> dict[str, Any]:
    stats: dict[str, Any] = next(s for s in expected()["pcap_stats"] if s["file"] == name)
    return stats


def write_pcap(path: Path, records: list[tuple[int, int, bytes]]) -> None:
    """Write (capture ns, UDP destination port, payload) records as an Ethernet pcap."""
    import struct

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for t_ns, port, payload in records:
        udp = struct.pack(">HHHH", port, port, 8 + len(payload), 0) + payload
        ip = struct.pack(
            ">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
            bytes([192, 168, 1, 201]), bytes([255, 255, 255, 255]),
        )  # fmt: skip
        frame = b"\xff" * 6 + b"\x00" * 6 + b"\x08\x00" + ip + udp
        sec, usec = divmod(t_ns // 1000, 1_000_000)
        out.append(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


def data_packets(path: Path) -> list[tuple[int, bytes]]:
    """(capture ns, payload) of every data packet in a capture."""
    from adapters.lidar._pcap import read_udp

    return [(d.t_capture, d.payload) for d in read_udp(path, dst_port=2368)]
