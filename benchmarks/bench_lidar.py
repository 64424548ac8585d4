"""LiDAR decoding and file-reading throughput, each against a baseline in the same run.

Velodyne: packets/s and points/s of our vectorised decoder (SweepAssembler +
RawSweep.decode, the path VelodyneSource runs) on the shipped real captures,
against (a) a per-packet loop that decodes each packet with numpy and (b) a
per-point pure-Python loop. PCD: MB/s of our reader against open3d's tensor and
legacy readers on binary and ASCII files written by open3d.

Run:  .venv/bin/python benchmarks/bench_lidar.py [--repeat N]
"""

from __future__ import annotations

import argparse
import math
import struct
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import open3d as o3d

from adapters.lidar import HDL_32E, VLP_16, SweepAssembler, VelodyneModel, read_pcd
from adapters.lidar.pcap import read_udp
from adapters.lidar.velodyne_packets import PACKET_DTYPE

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "lidar"
CAPTURES = [
    ("VLP-16", DATA / "vlp-16-test-90deg-1-50-frames.pcap", VLP_16),
    ("HDL-32E", DATA / "monterey-first-100-packets.pcap", HDL_32E),
]


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ours(packets: list[bytes], model: VelodyneModel) -> int:
    assembler = SweepAssembler(model)
    sweeps = []
    for payload in packets:
        sweeps += assembler.push(payload)
    sweeps += assembler.flush()
    return sum(len(s.decode(model)) for s in sweeps)


def per_packet_numpy(packets: list[bytes], model: VelodyneModel) -> int:
    """Baseline (a): the obvious loop, one numpy decode per packet."""
    tables = model.slot_tables()
    total = 0
    for payload in packets:
        packet = np.frombuffer(payload, PACKET_DTYPE)[0]
        az = packet["blocks"]["azimuth"].astype(np.float64)
        gap = np.append(np.diff(az), np.diff(az)[-1]) % 36000
        dist = packet["blocks"]["returns"]["distance"].astype(np.float64) * 0.002
        a = np.deg2rad((az[:, None] + gap[:, None] * tables["fraction"][None, :]) / 100)
        horizontal = dist * tables["cos_el"][None, :]
        x, y, z = horizontal * np.sin(a), horizontal * np.cos(a), dist * tables["sin_el"][None, :]
        keep = dist > 0
        total += len(np.stack([x[keep], y[keep], z[keep]], axis=1))
    return total


def per_point_python(packets: list[bytes], model: VelodyneModel) -> int:
    """Baseline (b): struct + math, a Python loop over every return."""
    elevations = [math.radians(e) for e in model.elevations_deg]
    block_us = model.block_period_us
    out = []
    for payload in packets:
        azimuths = [struct.unpack_from("<H", payload, 100 * b + 2)[0] for b in range(12)]
        for b in range(12):
            gap = ((azimuths[b + 1] if b < 11 else azimuths[b]) - azimuths[b - (b == 11)]) % 36000
            for slot in range(32):
                dist, intensity = struct.unpack_from("<HB", payload, 100 * b + 4 + 3 * slot)
                if not dist:
                    continue
                laser, firing = slot % model.lasers, slot // model.lasers
                offset = firing * model.firing_period_us + laser * model.laser_period_us
                a = math.radians((azimuths[b] + gap * offset / block_us) / 100)
                r, w = dist * 0.002, elevations[laser]
                out.append((r * math.cos(w) * math.sin(a), r * math.cos(w) * math.cos(a),
                            r * math.sin(w), intensity))  # fmt: skip
    return len(out)


def velodyne_rows(repeat: int) -> list[str]:
    rows = []
    for name, path, model in CAPTURES:
        packets = [d.payload for d in read_udp(path, dst_port=2368)]
        points = ours(packets, model)
        t_ours = best_of(repeat, partial(ours, packets, model))
        t_packet = best_of(max(1, repeat // 2), partial(per_packet_numpy, packets, model))
        few = packets[:200]  # the per-point loop is slow: time a slice and scale
        t_point = best_of(1, partial(per_point_python, few, model)) * len(packets) / len(few)
        for label, seconds in [("ours (vectorised sweeps)", t_ours),
                               ("baseline: per-packet numpy loop", t_packet),
                               ("baseline: per-point Python loop", t_point)]:  # fmt: skip
            rows.append(
                f"| {name} | {label} | {len(packets) / seconds:,.0f} | "
                f"{points / seconds / 1e6:,.2f} | {t_packet / seconds:,.1f}x | "
                f"{t_point / seconds:,.0f}x |"
            )
    return rows


def pcd_rows(repeat: int) -> list[str]:
    rows = []
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for kind, n in [("binary", 2_000_000), ("ascii", 200_000)]:
            cloud = o3d.t.geometry.PointCloud(
                o3d.core.Tensor.from_numpy(rng.normal(0, 30, (n, 3)).astype(np.float32))
            )
            cloud.point.intensity = o3d.core.Tensor.from_numpy(
                rng.uniform(0, 1, (n, 1)).astype(np.float32)
            )
            path = Path(tmp) / f"{kind}.pcd"
            o3d.t.io.write_point_cloud(path, cloud, write_ascii=kind == "ascii")
            mb = path.stat().st_size / 1e6
            readers: list[tuple[str, Callable[[], object]]] = [
                ("ours (numpy, all fields)", partial(read_pcd, path)),
                ("open3d tensor reader", partial(o3d.t.io.read_point_cloud, path)),
                ("open3d legacy reader (drops intensity)",
                 partial(o3d.io.read_point_cloud, path)),
            ]  # fmt: skip
            times = {label: best_of(repeat, fn) for label, fn in readers}
            base = times["open3d tensor reader"]
            for label, seconds in times.items():
                rows.append(
                    f"| {kind} ({n:,} pts, {mb:.0f} MB) | {label} | {mb / seconds:,.0f} | "
                    f"{base / seconds:.1f}x |"
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs (default 5)")
    args = parser.parse_args()
    print("| capture | decoder | packets/s | Mpoints/s | vs per-packet | vs per-point |")
    print("|---|---|---:|---:|---:|---:|")
    for row in velodyne_rows(args.repeat):
        print(row)
    print()
    print("| PCD file | reader | MB/s | vs open3d tensor |")
    print("|---|---|---:|---:|")
    for row in pcd_rows(args.repeat):
        print(row)


if __name__ == "__main__":
    main()
