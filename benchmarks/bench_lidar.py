"""LiDAR decoding and file-reading throughput, each against a baseline in the same run.

Velodyne: packets/s and points/s of our vectorised decoder (SweepAssembler +
RawSweep.decode, the path VelodyneSource runs) on the shipped real captures,
against (a) a per-packet loop that decodes each packet with numpy and (b) a
per-point pure-Python loop. Point-cloud files: Mpoints/s reading KITTI ``.bin``
and PCD (binary, binary_compressed, ascii) files against ``np.fromfile`` of the
same bytes and open3d's reader. KITTI camera PNGs: frames/s of the PyAV decoder
we use against Pillow and OpenCV.

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

from adapters.lidar import (
    HDL_32E,
    VLP_16,
    XYZI_DTYPE,
    SweepAssembler,
    VelodyneModel,
    read_pcd,
    xyz,
)
from adapters.lidar.layouts import read_bin
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


def interleaved_best(repeat: int, fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best time of each function over ``repeat`` rounds, one call of each per round, so
    every reader sees the same moments of a shared, noisy machine."""
    best = dict.fromkeys(fns, math.inf)
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


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


def _cloud(n: int, rng: np.random.Generator) -> np.ndarray:
    points = np.zeros(n, XYZI_DTYPE)
    for axis in "xyz":
        points[axis] = rng.normal(0, 30, n)
    points["intensity"] = rng.uniform(0, 1, n)
    return points


def _o3d_cloud(points: np.ndarray) -> o3d.t.geometry.PointCloud:
    cloud = o3d.t.geometry.PointCloud(o3d.core.Tensor.from_numpy(xyz(points)))
    cloud.point.intensity = o3d.core.Tensor.from_numpy(
        np.ascontiguousarray(points["intensity"]).reshape(-1, 1)
    )
    return cloud


def _data_offset(path: Path) -> int:
    raw = path.read_bytes()
    return raw.index(b"\nDATA ") + raw[raw.index(b"\nDATA ") + 1 :].index(b"\n") + 2


def pointcloud_rows(repeat: int) -> list[str]:
    """Mpoints/s reading .bin and PCD files against np.fromfile and open3d, same files, same run."""
    rows = []
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (120_000, 2_000_000):  # one HDL-64E sweep (KITTI); a big aggregated cloud
            points = _cloud(n, rng)
            runs = repeat * (40 if n < 1_000_000 else 6)
            label = f"{n:,} pts"
            kitti = Path(tmp) / f"{n}.bin"
            points.tofile(kitti)
            cases: list[tuple[str, str, Callable[[], object]]] = [
                (f".bin KITTI ({label})", "ours: read_bin(layout='kitti'), checked",
                 partial(read_bin, kitti, "kitti")),
                (f".bin KITTI ({label})", "baseline: np.fromfile",
                 partial(np.fromfile, kitti, np.float32)),
            ]  # fmt: skip
            for kind in ("binary", "binary_compressed", "ascii"):
                if kind == "ascii" and n > 200_000:
                    continue
                path = Path(tmp) / f"{n}_{kind}.pcd"
                o3d.t.io.write_point_cloud(
                    path, _o3d_cloud(points), write_ascii=kind == "ascii",
                    compressed=kind == "binary_compressed",
                )  # fmt: skip
                name = f"PCD {kind} ({label})"
                cases.append((name, "ours: read_pcd", partial(read_pcd, path)))
                if kind == "binary":
                    dtype = read_pcd(path).dtype
                    cases.append((name, "baseline: np.fromfile (data section)",
                                  partial(np.fromfile, path, dtype, offset=_data_offset(path))))  # fmt: skip
                cases.append(
                    (name, "open3d tensor reader", partial(o3d.t.io.read_point_cloud, str(path)))
                )
            times = {
                (f, r): best_of(runs if "ascii" not in f else repeat, fn) for f, r, fn in cases
            }
            for (file, reader), seconds in times.items():
                base_key = next(
                    (k for k in times if k[0] == file and k[1].startswith("baseline")),
                    (file, "open3d tensor reader"),
                )
                base = times[base_key]
                rows.append(
                    f"| {file} | {reader} | {n / seconds / 1e6:,.1f} | "
                    f"{seconds / base:.2f}x | {base_key[1].removeprefix('baseline: ')} |"
                )
    return rows


def png_rows(repeat: int) -> list[str]:
    """KITTI camera frames (1242x375 PNG): PyAV's decoder (ours) against Pillow and OpenCV."""
    import io

    from PIL import Image

    from adapters.datasets.kitti_raw import read_png

    rows = []
    rng = np.random.default_rng(1)
    gradient = np.linspace(0, 255, 1242)[None, :, None] * np.ones((375, 1, 3))
    picture = (gradient + rng.normal(0, 12, (375, 1242, 3))).clip(0, 255).astype(np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        for label, pixels in [
            ("grey (image_00)", picture[:, :, 0]),
            ("colour (image_02)", picture),
        ]:
            path = Path(tmp) / "frame.png"
            Image.fromarray(pixels).save(path)
            readers: list[tuple[str, Callable[[], object]]] = [
                ("ours: PyAV png decoder", partial(read_png, path)),
                ("Pillow", lambda p=path: np.asarray(Image.open(io.BytesIO(p.read_bytes())))),
            ]
            try:
                import cv2

                readers.append(
                    ("OpenCV imread", partial(cv2.imread, str(path), cv2.IMREAD_UNCHANGED))
                )
            except ImportError:
                pass
            times = {name: best_of(repeat * 4, fn) for name, fn in readers}
            for name, seconds in times.items():
                rows.append(
                    f"| {label} | {name} | {1 / seconds:,.0f} | {seconds / times['Pillow']:.2f}x |"
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
    print("| file | reader | Mpoints/s | time vs baseline | baseline |")
    print("|---|---|---:|---:|---|")
    for row in pointcloud_rows(args.repeat):
        print(row)
    print()
    print("| 1242x375 PNG | decoder | frames/s | time vs Pillow |")
    print("|---|---|---:|---:|")
    for row in png_rows(args.repeat):
        print(row)


if __name__ == "__main__":
    main()
