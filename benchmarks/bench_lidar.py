"""LiDAR decoding and file-reading throughput, each against a baseline in the same run.

Velodyne: packets/s and points/s of our vectorised decoder (SweepAssembler +
RawSweep.decode, the path VelodyneSource runs) on the shipped real captures,
against (a) a per-packet loop that decodes each packet with numpy and (b) a
per-point pure-Python loop. Point-cloud files: Mpoints/s reading KITTI ``.bin``
and PCD (binary, binary_compressed, ascii) files against ``np.fromfile`` of the
same bytes and open3d's reader. KITTI camera PNGs: frames/s of the PyAV decoder
we use against Pillow and OpenCV. Ouster: scans/s of ``OusterSource`` (capture read,
batched, decoded, points array built) against ouster-sdk's own Python path
(``open_source`` + ``XYZLut``) on the real OS-1-32 capture and on a 100-scan capture
made from it, wall and CPU time. Captures: datagrams/s of our pcap/pcapng reader
against dpkt's.

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


OUSTER_PCAP = DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"
OUSTER_JSON = DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.json"


def _longer_ouster_capture(out: Path, scans: int) -> None:
    """The real capture ``scans`` times, as the sensor's next scans (frame id and column
    times advanced 100 ms a scan, UDP checksum cleared), in one classic pcap."""
    raw = OUSTER_PCAP.read_bytes()
    records, pos = [], 24
    while pos < len(raw):
        sec, usec, incl, _ = struct.unpack_from("<IIII", raw, pos)
        records.append((sec, usec, raw[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    chunks = [raw[:24]]
    for k in range(scans):
        for sec, usec, frame in records:
            cols = np.frombuffer(frame[-6464:], np.uint8).copy().reshape(16, 404)
            cols[:, 10:12] = np.frombuffer(np.uint16((638 + k) % 65536).tobytes(), np.uint8)
            stamps = cols[:, 0:8].copy().view("<u8")[:, 0] + np.uint64(k * 100_000_000)
            cols[:, 0:8] = stamps.view(np.uint8).reshape(16, 8)
            head = bytearray(frame[:-6464])
            head[40:42] = b"\0\0"  # Ethernet + IPv4 (20 bytes): the UDP checksum
            t_us = sec * 1_000_000 + usec + k * 100_000
            body = bytes(head) + cols.tobytes()
            chunks.append(
                struct.pack("<IIII", t_us // 1_000_000, t_us % 1_000_000, len(body), len(body))
            )
            chunks.append(body)
    out.write_bytes(b"".join(chunks))


def ouster_rows(repeat: int) -> list[str]:
    """OusterSource against ouster-sdk's documented path, the same files, interleaved."""
    import anyio
    import ouster.sdk as osdk
    from ouster.sdk import core

    from adapters.lidar import OUSTER_DTYPE, OusterSource

    def sdk(path: Path, points: bool = False) -> int:
        source = osdk.open_source(str(path), meta=[str(OUSTER_JSON)])
        lut = core.XYZLut(source.sensor_info[0])
        n = 0
        for frames in source:
            xyz = lut(frames[0])
            if points:  # the same product as ours: the valid returns as one point array
                scan = frames[0]
                rng = scan.field("RANGE")
                keep = (rng != 0).T
                out = np.empty(int(keep.sum()), OUSTER_DTYPE)
                for axis, name in enumerate("xyz"):
                    out[name] = xyz[:, :, axis].T[keep]
                out["range"] = rng.T[keep]
                for name in ("SIGNAL", "REFLECTIVITY", "NEAR_IR"):
                    out[name.lower()] = scan.field(name).T[keep]
                out["intensity"] = out["signal"]
                stamps = np.asarray(scan.timestamp, np.int64)
                out["t"] = np.broadcast_to((stamps - stamps[0])[:, None], keep.shape)[keep]
                out["beam"] = np.broadcast_to(np.arange(rng.shape[0])[None, :], keep.shape)[keep]
                out["column"] = np.broadcast_to(np.arange(rng.shape[1])[:, None], keep.shape)[keep]
                out["ring"] = out["beam"]
            n += 1
        source.close()
        return n

    async def ours(path: Path, decoder: str = "numpy") -> int:
        async with OusterSource(path, metadata=OUSTER_JSON, decoder=decoder) as source:
            return sum([1 async for frame in source.frames() if frame.sensor == "lidar"])

    runs: dict[str, Callable[[Path], object]] = {
        "OusterSource": ours,
        "OusterSource(decoder='ouster-sdk')": partial(ours, decoder="ouster-sdk"),
        "ouster-sdk open_source + XYZLut": sdk,
        "ouster-sdk + the same point array": partial(sdk, points=True),
    }

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        long = Path(tmp) / "long.pcap"
        _longer_ouster_capture(long, 100)
        for label, path, scans in (("OS-1-32 capture (1 scan)", OUSTER_PCAP, 1),
                                   ("100 scans made from it", long, 100)):  # fmt: skip
            assert sdk(path) == scans
            assert anyio.run(ours, path) == scans

            async def rounds(path: Path = path) -> dict[str, tuple[float, float]]:
                best = dict.fromkeys(runs, (math.inf, math.inf))
                for _ in range(repeat):
                    for name, run in runs.items():
                        wall, cpu = time.perf_counter(), time.process_time()
                        done = run(path)
                        if not isinstance(done, int):
                            await done
                        took = (time.perf_counter() - wall, time.process_time() - cpu)
                        best[name] = (min(best[name][0], took[0]), min(best[name][1], took[1]))
                return best

            best = anyio.run(rounds)
            peer = best["ouster-sdk open_source + XYZLut"]
            for name, (wall, cpu) in best.items():
                rows.append(
                    f"| {label} | {name} | {scans / wall:,.0f} | {peer[0] / wall:.2f}x "
                    f"| {cpu * 1e3 / scans:.2f} | {peer[1] / cpu:.2f}x |"
                )
    return rows


def pcap_rows(repeat: int) -> list[str]:
    """Our capture reader against dpkt: every UDP datagram with its time and ports."""
    import dpkt

    from adapters.lidar.pcap import PcapReader

    def ours(path: Path) -> int:
        with PcapReader(path) as reader:
            return sum(1 for _ in reader)

    def with_dpkt(path: Path) -> int:
        n = 0
        with open(path, "rb") as file:
            ng = file.read(4) == b"\x0a\x0d\x0d\x0a"
            file.seek(0)
            for _ts, buf in dpkt.pcapng.Reader(file) if ng else dpkt.pcap.Reader(file):
                ip = dpkt.ethernet.Ethernet(buf).data
                if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP):
                    n += 1
        return n

    rows = []
    capture = DATA / "monterey-first-100-packets.pcap"
    with tempfile.TemporaryDirectory() as tmp:
        ng = Path(tmp) / "monterey.pcapng"
        with open(capture, "rb") as src, open(ng, "wb") as dst:
            writer = dpkt.pcapng.Writer(dst)
            for ts, buf in dpkt.pcap.Reader(src):
                writer.writepkt(buf, ts=ts)
        for label, path in (("HDL-32E pcap", capture), ("the same as pcapng", ng)):
            assert ours(path) == with_dpkt(path) == 3001
            times = interleaved_best(
                repeat, {"ours": partial(ours, path), "dpkt": partial(with_dpkt, path)}
            )
            for name, seconds in times.items():
                rows.append(
                    f"| {label} | {name} | {3001 / seconds:,.0f} | {times['dpkt'] / seconds:.2f}x |"
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
    print()
    print(
        "| Ouster capture | decoder | scans/s | vs ouster-sdk | CPU ms/scan | CPU vs ouster-sdk |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for row in ouster_rows(max(args.repeat, 5)):
        print(row)
    print()
    print("| capture | reader | datagrams/s | vs dpkt |")
    print("|---|---|---:|---:|")
    for row in pcap_rows(args.repeat):
        print(row)


if __name__ == "__main__":
    main()
