"""velodyne_decoder as the oracle: decode the same packets with the same calibration,
and packets built to the manuals for the models with no public capture."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from adapters.lidar import SweepAssembler, VelodyneModel

DATA = Path(__file__).resolve().parents[1] / "data" / "velodyne"
VLP32C = DATA / "vlp32c_nebula.pcap"  # real VLP-32C, 379 packets
VLS128 = DATA / "vls128_nebula.pcap"  # real VLS-128, 800 packets
VLP16_DUAL = DATA / "vlp16_dual_nebula.pcap"  # real VLP-16 in dual-return mode, 603 packets
HDL64_XML = DATA / "HDL-64_veloview.xml"  # VeloView's HDL-64E calibration (db.xml format)

Packets = list[tuple[int, bytes]]  # (capture ns, payload)


def ours(packets: Packets, model: VelodyneModel) -> tuple[np.ndarray, np.ndarray]:
    """Every point of the stream and its firing time (ns, sensor clock)."""
    assembler = SweepAssembler(model)
    sweeps = assembler.push_many([p for _t, p in packets], [t for t, _p in packets])
    sweeps += assembler.flush()
    assert not assembler.rejected, assembler.last_error
    points = [s.decode(model) for s in sweeps]
    times = [
        s.t_sensor + p["t_offset"].astype(np.int64) for s, p in zip(sweeps, points, strict=True)
    ]
    return np.concatenate(points), np.concatenate(times)


def theirs(packets: Packets, model: VelodyneModel, vd_model: Any) -> np.ndarray:
    """velodyne_decoder's points for the same packets, with our calibration."""
    import velodyne_decoder as vd

    calibration = vd.Calibration.from_string(model.calibration.to_yaml())
    config = vd.Config(model=vd_model, calibration=calibration, min_range=0, max_range=10_000)
    stream = [vd.VelodynePacket(t / 1e9, p) for t, p in packets]
    _stamp, cloud = vd.ScanDecoder(config).decode(stream, as_pcl_structs=True)
    result: np.ndarray = cloud
    return result


def compare(
    a: np.ndarray, t_a: np.ndarray, b: np.ndarray, *, advanced: bool = False
) -> dict[str, np.ndarray]:
    """Pair the points (by firing time, ring, return) and return per-point differences.

    velodyne_decoder's frame is ROS's (x forward, y left); ours the manual's
    (x right, y forward): x_ours = -y_vd, y_ours = x_vd.
    """
    assert len(a) == len(b)
    ia = np.lexsort((a["return"], a["ring"], t_a))
    ib = np.lexsort((b["return_type"], b["ring"], b["time"].astype(np.float64)))
    a, t_a, b = a[ia], t_a[ia], b[ib]
    np.testing.assert_array_equal(a["ring"], b["ring"])
    np.testing.assert_array_equal(a["return"], b["return_type"])
    bx, by = -b["y"], b["x"]
    azimuth = np.degrees(np.arctan2(a["x"], a["y"]) - np.arctan2(bx, by))
    azimuth[np.hypot(bx, by) < 0.5] = 0  # float32 x, y this near say little about the angle
    return {
        "t_ns": t_a - t_a[0],
        "azimuth_deg": np.abs((azimuth + 180) % 360 - 180),
        "horizontal_m": np.abs(np.hypot(a["x"], a["y"]) - np.hypot(bx, by)),
        "z_m": np.abs(a["z"] - b["z"]),
        "intensity": np.abs(a["intensity"] - b["intensity"]),
        "time_us": np.abs(
            (t_a - t_a[0]) / 1e3 - (b["time"].astype(np.float64) - b["time"][0]) * 1e6
        ),
    }


def stamps_us(packets: Packets) -> np.ndarray:
    return np.array([struct.unpack_from("<I", p, 1200)[0] for _t, p in packets], np.int64)


def with_footer(payload: bytes, *, stamp: int | None = None, mode: int | None = None,
                product: int | None = None) -> bytes:  # fmt: skip
    stamp_, mode_, product_ = struct.unpack_from("<IBB", payload, 1200)
    return payload[:1200] + struct.pack(
        "<IBB",
        stamp_ if stamp is None else stamp,
        mode_ if mode is None else mode,
        product_ if product is None else product,
    )


def hdl64e_packets(count: int, *, s3: bool, dual: bool, seed: int = 0) -> Packets:
    """HDL-64E S2/S3 packets laid out as the S3 manual's packet format says: blocks
    alternate upper (0xEEFF, lasers 0-31) and lower (0xDDFF, 32-63) at one azimuth; in
    dual-return mode upper/lower strongest then upper/lower last share it. No product
    byte: the last two bytes are a status type and value. 10 Hz, seeded returns."""
    rng = np.random.default_rng(seed)
    column_us = 57.6 if s3 else 48.0
    columns = 3 if dual else 6
    step = 36000 * column_us / 100_000  # 0.01° per column at 10 Hz
    out: Packets = []
    azimuth = 12_345.0
    for i in range(count):
        blocks = []
        for _c in range(columns):
            az = round(azimuth) % 36000
            strongest = []
            for flag in (0xEEFF, 0xDDFF):
                distance = rng.integers(500, 60_000, 32)
                distance[rng.random(32) < 0.1] = 0
                intensity = rng.integers(0, 256, 32)
                strongest.append((flag, distance, intensity))
            group = list(strongest)
            if dual:
                for flag, distance, _intensity in strongest:
                    last = distance + rng.integers(0, 2, 32) * rng.integers(100, 3000, 32)
                    last[distance == 0] = 0
                    group.append((flag, np.minimum(last, 65_535), rng.integers(0, 256, 32)))
            for flag, distance, intensity in group:
                returns = b"".join(struct.pack("<HB", int(d), int(n)) for d, n in
                                   zip(distance, intensity, strict=True))  # fmt: skip
                blocks.append(struct.pack("<HH", flag, az) + returns)
            azimuth += step
        stamp = 1_000_000 + round(i * columns * column_us)
        payload = b"".join(blocks) + struct.pack("<I", stamp) + b"H\x10"
        out.append((1_700_000_000_000_000_000 + stamp * 1000, payload))
    return out


def vls128_dual_from_single(packets: Packets, *, vary: bool = True, seed: int = 0) -> Packets:
    """Dual-return VLS-128 packets from single-return ones, the way velodyne_decoder's
    test data is made (its test/data/mock_vls128_dual.py): each single packet's three
    columns become three packets of (last, strongest) block pairs per bank, the last
    four blocks empty. ``vary`` makes some strongest echoes differ from the last."""
    rng = np.random.default_rng(seed)
    out: Packets = []
    sequence_us = 20 * 8 / 3
    for t, payload in packets:
        stamp, _mode, product = struct.unpack_from("<IBB", payload, 1200)
        for column in range(3):
            blocks = []
            for bank in range(4):
                block = bytearray(
                    payload[(column * 4 + bank) * 100 : (column * 4 + bank + 1) * 100]
                )
                strongest = bytearray(block)
                if vary:
                    for slot in np.flatnonzero(rng.random(32) < 0.3).tolist():
                        (d,) = struct.unpack_from("<H", block, 4 + 3 * slot)
                        if d:
                            struct.pack_into("<H", strongest, 4 + 3 * slot, max(1, d - 200))
                blocks += [bytes(block), bytes(strongest)]
            dummy = bytearray(100)
            dummy[2:4] = blocks[0][2:4]
            blocks += [bytes(dummy)] * 4
            offset = round(sequence_us * column)
            footer = struct.pack("<IBB", stamp + offset, 0x39, product)
            out.append((t + offset * 1000, b"".join(blocks) + footer))
    return out
