"""Hesai test data: tier4/nebula's packet bags (``../shared/data/lidar/hesai/`` and
``tests/data/hesai/``), their packets, and pcaps made of them."""

from __future__ import annotations

import shutil
import sqlite3
import struct
from pathlib import Path

import zstandard

from adapters.lidar._hesai_models import get_model
from adapters.lidar._hesai_packets import bag_packets, prepare

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "lidar" / "hesai"
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "hesai"


def capture(key: str, tmp_path: Path) -> tuple[Path, Path]:
    """(bag directory, ground-truth PCD) of one model's capture."""
    if key in ("40p", "qt128", "xt32"):
        bag = next(p for p in (SHARED / key).iterdir() if p.is_dir())
        return bag, next((SHARED / key).glob("*.pcd"))
    src = BUNDLED / key
    out = tmp_path / key
    for f in src.rglob("*"):
        if f.is_dir():
            continue
        target = out / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.suffix == ".zst":
            target.with_suffix("").write_bytes(
                zstandard.ZstdDecompressor().decompress(f.read_bytes(), max_output_size=1 << 26)
            )
        else:
            shutil.copy(f, target)
    return next(p for p in out.iterdir() if p.is_dir()), next(out.glob("*.pcd"))


def bag_payloads(bag: Path) -> list[tuple[int, bytes]]:
    """(bag log time, payload) of every packet of a rosbag2 of ``PandarScan``."""
    db = next(bag.glob("*.db3"))
    rows = sqlite3.connect(db).execute("select timestamp, data from messages order by timestamp")
    return [(t, p) for t, data in rows for p in bag_packets(data, "pandar_msgs/msg/PandarScan")]


def write_pcap(path: Path, packets: list[tuple[int, bytes]], port: int = 2368) -> None:
    """Ethernet / IPv4 / UDP records of ``packets`` (ns stamps) in a classic pcap."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)]
    for t, payload in packets:
        udp = struct.pack(">HHHH", 10000, port, 8 + len(payload), 0) + payload
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                         bytes([192, 168, 1, 201]), bytes([192, 168, 1, 100]))  # fmt: skip
        frame = b"\xff" * 6 + b"\x00" * 6 + b"\x08\x00" + ip + udp
        out.append(struct.pack("<IIII", t // 10**9, t % 10**9, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


def sensor_timed_pcap(key: str, model: str, tmp_path: Path) -> Path:
    """A pcap of one capture's packets, each stamped with its own firing time (the
    tail's date and time): replayed at its captured rate it comes as the sensor sent it
    (a bag stamps a whole message's packets with one time)."""
    bag, _pcd = capture(key, tmp_path)
    payloads = [p for _t, p in bag_payloads(bag)]
    batch, rejected = prepare(get_model(model), payloads)
    assert not rejected, rejected[:3]
    pcap = tmp_path / f"{key}.pcap"
    write_pcap(pcap, list(zip(batch.stamps.tolist(), payloads, strict=True)))
    return pcap
