"""LiDAR decoding and file-reading throughput, each against a peer in the same run.

Velodyne, every model: points/s of our decoder against velodyne_decoder (C++, the
reference decoder on PyPI) on the same packets with the same calibration, interleaved,
best of N: (a) in memory: our ``SweepAssembler.push_many`` + ``RawSweep.decode`` (the
path ``VelodyneSource`` runs) against velodyne_decoder's ``StreamDecoder`` fed packet by
packet and its ``ScanDecoder`` given every packet in one call (the faster of the two is
the ratio's peer); (b) from the file: ``VelodyneSource(pcap=...)`` to the last frame
against ``velodyne_decoder.read_pcap``. Wall and process CPU time both; the compiled
kernels are warmed before the timing, and what a fresh process's first decode costs
(compiling them, or loading them from numba's cache) is printed after the table. Captures: the
real ones in ../shared/data/lidar and tests/data/velodyne; models without a public
capture on packets built to the manual (tests/adapters/velodyne_oracle.py).
Point-cloud files: Mpoints/s reading KITTI ``.bin`` and PCD (binary,
binary_compressed, ascii) files against ``np.fromfile`` of the same bytes and open3d's
reader. KITTI camera PNGs: frames/s of the PyAV decoder we use against Pillow and
OpenCV.

Run:  .venv/bin/python benchmarks/bench_lidar.py [--repeat N] [--velodyne-only] [--model NAME]
"""

from __future__ import annotations

import argparse
import math
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import open3d as o3d

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.lidar import XYZI_DTYPE, SweepAssembler, VelodyneModel, read_pcd, xyz
from adapters.lidar._layouts import read_bin
from adapters.lidar._pcap import read_udp
from adapters.lidar._velodyne_decode import decode_sweeps
from adapters.lidar._velodyne_models import MODELS, get_model

# ouster-sdk, the Ouster rows' peer, outside site-packages (the Makefile's --target folder)
OUSTER_ORACLE = Path(sys.prefix) / "oracles" / "ouster"
if OUSTER_ORACLE.is_dir() and str(OUSTER_ORACLE) not in sys.path:
    sys.path.append(str(OUSTER_ORACLE))

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "lidar"
OURS_DATA = ROOT / "tests" / "data" / "velodyne"
CAPTURES = [  # (name, pcap, model): the real captures
    ("VLP-16", DATA / "vlp-16-test-90deg-1-50-frames.pcap", MODELS["VLP-16"]),
    ("HDL-32E", DATA / "monterey-first-100-packets.pcap", MODELS["HDL-32E"]),
    ("VLP-32C", OURS_DATA / "vlp32c_nebula.pcap", MODELS["VLP-32C"]),
    ("VLS-128", OURS_DATA / "vls128_nebula.pcap", MODELS["VLS-128"]),
    ("VLP-16 dual", OURS_DATA / "vlp16_dual_nebula.pcap", MODELS["VLP-16"]),
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


def interleaved_best_cpu(
    repeat: int, fns: dict[str, Callable[[], object]]
) -> dict[str, tuple[float, float]]:
    """(best wall, best process CPU) seconds of each function, interleaved."""
    best = dict.fromkeys(fns, (math.inf, math.inf))
    for _ in range(repeat):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def ours(packets: list[bytes], model: VelodyneModel, batch: int = 512) -> int:
    """Points of the whole stream through SweepAssembler + decode_sweeps, in pcap-sized
    batches (what VelodyneSource does with a pcap)."""
    assembler = SweepAssembler(model)
    total = 0
    for i in range(0, len(packets), batch):
        total += sum(map(len, decode_sweeps(assembler.push_many(packets[i : i + batch]), model)))
    return total + sum(map(len, decode_sweeps(assembler.flush(), model)))


def _vd_config(model: VelodyneModel, vd_model: Any) -> Any:
    import velodyne_decoder as vd

    calibration = vd.Calibration.from_string(model.calibration.to_yaml())
    return vd.Config(model=vd_model, calibration=calibration, min_range=0, max_range=10_000)


def vd_stream(packets: list[tuple[float, bytes]], config: Any) -> int:
    """velodyne_decoder's streaming API, a packet a call (what a driver does)."""
    import velodyne_decoder as vd

    decoder, total = vd.StreamDecoder(config), 0
    for stamp, payload in packets:
        result = decoder.decode(stamp, payload, as_pcl_structs=True)
        if result is not None:
            total += len(result[1])
    last = decoder.finish(as_pcl_structs=True)
    return total + (len(last[1]) if last is not None else 0)


def vd_packets(packets: list[tuple[int, bytes]]) -> list[Any]:
    """velodyne_decoder's packet objects (built outside the timing, as its ScanDecoder
    wants them)."""
    import velodyne_decoder as vd

    return [vd.VelodynePacket(t / 1e9, p) for t, p in packets]


def vd_scan(packets: Any, config: Any) -> int:
    """velodyne_decoder's ScanDecoder: every (prebuilt) packet in one call."""
    import velodyne_decoder as vd

    return len(vd.ScanDecoder(config).decode(packets, as_pcl_structs=True)[1])


def velodyne_cases() -> list[tuple[str, str, list[tuple[int, bytes]], VelodyneModel, Any]]:
    """(model, where the packets come from, packets, our model, velodyne_decoder's model)."""
    import velodyne_decoder as vd

    from adapters.lidar import read_calibration
    from tests.adapters.velodyne_oracle import (
        HDL64_XML,
        hdl64e_packets,
        vls128_dual_from_single,
        with_footer,
    )

    vd_models = {"VLP-16": vd.Model.VLP16, "HDL-32E": vd.Model.HDL32E,
                 "VLP-32C": vd.Model.VLP32C, "VLS-128": vd.Model.AlphaPrime}  # fmt: skip
    cases = []
    for name, path, model in CAPTURES:
        if not path.exists():
            continue
        packets = [(d.t_capture, d.payload) for d in read_udp(path, dst_port=2368)]
        if name == "VLP-16":  # early firmware: give velodyne_decoder the byte it checks
            packets = [(t, with_footer(p, product=0x22)) for t, p in packets]
        cases.append((name, f"real: {path.name}", packets, model,
                      vd_models[name.removesuffix(" dual")]))  # fmt: skip
    vlp16 = next((c[2] for c in cases if c[0] == "VLP-16"), None)
    if vlp16 is not None:
        hires = [(t, with_footer(p, product=0x24)) for t, p in vlp16]
        cases.append(("Puck-Hi-Res", "VLP-16 packets, product 0x24", hires,
                      MODELS["Puck-Hi-Res"], vd.Model.PuckHiRes))  # fmt: skip
    vls = next((c[2] for c in cases if c[0] == "VLS-128"), None)
    if vls is not None:
        first = int.from_bytes(vls[0][1][1200:1204], "little")
        alpha = [(t, with_footer(p, stamp=first + round(i * 173.4))) for i, (t, p) in
                 enumerate(vls)]  # fmt: skip
        cases.append(("Alpha-Prime", "VLS-128 packets at 173.4 µs", alpha,
                      MODELS["Alpha-Prime"], vd.Model.AlphaPrime))  # fmt: skip
        cases.append(("VLS-128 dual", "built (velodyne_decoder's mock)",
                      vls128_dual_from_single(vls[:300]), MODELS["VLS-128"],
                      vd.Model.AlphaPrime))  # fmt: skip
    calibration = read_calibration(HDL64_XML)
    for s3, dual in [(False, False), (True, False), (True, True)]:
        name = "HDL-64E-S3" if s3 else "HDL-64E-S2"
        cases.append((name + (" dual" if dual else ""), "built to the manual, db.xml",
                      hdl64e_packets(2000, s3=s3, dual=dual),
                      get_model(name).with_calibration(calibration),
                      vd.Model.HDL64E_S3 if s3 else vd.Model.HDL64E_S2))  # fmt: skip
    return cases


def _vd_file(path: Path, config: Any) -> int:
    import velodyne_decoder as vd

    return sum(len(cloud) for _stamp, cloud in vd.read_pcap(str(path), config, as_pcl_structs=True))


async def _source_points(path: Path, calibration: Any) -> int:
    from adapters import VelodyneSource

    total = 0
    async with VelodyneSource(pcap=path, calibration=calibration) as source:
        async for frame in source.frames():
            total += len(frame.data)
    return total


def velodyne_rows(repeat: int, models: set[str] | None = None) -> list[str]:
    """Every model, ours against velodyne_decoder in memory and from the file."""
    import anyio

    sys.path.insert(0, str(ROOT / "tests" / "adapters"))
    from lidar_testdata import write_pcap

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, where, packets, model, vd_model in velodyne_cases():
            if models and name not in models:
                continue
            payloads = [p for _t, p in packets]
            config = _vd_config(model, vd_model)
            stream = [(t / 1e9, p) for t, p in packets]
            prebuilt = vd_packets(packets)
            points = ours(payloads, model)
            assert points == vd_scan(prebuilt, config), name
            memory = interleaved_best_cpu(repeat, {
                "ours": partial(ours, payloads, model),
                "vd stream": partial(vd_stream, stream, config),
                "vd scan": partial(vd_scan, prebuilt, config),
            })  # fmt: skip
            path = Path(tmp) / "capture.pcap"
            write_pcap(path, [(t, 2368, p) for t, p in packets])
            calibration = model.calibration if name.startswith("HDL-64E") else None
            readers = {
                "ours": partial(anyio.run, _source_points, path, calibration),
                "vd": partial(_vd_file, path, config),
            }
            assert readers["ours"]() == readers["vd"](), name  # also warms both up
            file = interleaved_best_cpu(repeat, readers)
            peer = min(memory["vd stream"][0], memory["vd scan"][0])
            peer_cpu = min(memory["vd stream"][1], memory["vd scan"][1])
            rows.append(
                f"| {name} | {where} | {points:,} | {points / memory['ours'][0] / 1e6:,.1f} | "
                f"{points / memory['vd stream'][0] / 1e6:,.1f} | "
                f"{points / memory['vd scan'][0] / 1e6:,.1f} | "
                f"**{peer / memory['ours'][0]:.2f}x** | {peer_cpu / memory['ours'][1]:.2f}x | "
                f"{file['ours'][0] * 1e3:,.0f} | {file['vd'][0] * 1e3:,.0f} | "
                f"**{file['vd'][0] / file['ours'][0]:.2f}x** | "
                f"{file['vd'][1] / file['ours'][1]:.2f}x |"
            )
    return rows


_FIRST_DECODE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from adapters.lidar import VLP_16, SweepAssembler
from adapters.lidar._pcap import read_udp
packets = [d.payload for d in read_udp(sys.argv[2], dst_port=2368)][:100]
start = time.perf_counter()
SweepAssembler(VLP_16).push_many(packets)[0].decode(VLP_16)
print(time.perf_counter() - start)
"""


def first_decode_s() -> tuple[float, float]:
    """Seconds of a fresh process's first 100 packets (numba's import, the check and
    decode kernels, the work): with an empty numba cache (the compile), then with the
    cache that run wrote (a load)."""
    import os
    import subprocess

    capture = str(CAPTURES[0][1])
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        runs = [
            float(subprocess.run([sys.executable, "-c", _FIRST_DECODE, str(ROOT), capture],
                                 env=env, check=True, capture_output=True, text=True).stdout)
            for _ in range(2)
        ]  # fmt: skip
    return runs[0], runs[1]


VELODYNE_HEADER = (
    "| model | packets | points | ours Mpts/s | vd stream Mpts/s | vd scan Mpts/s | "
    "in memory (wall) | (CPU) | ours file ms | vd file ms | from file (wall) | (CPU) |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


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

    from adapters.datasets._kitti_raw import read_png

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


def _sdk_points(scan: Any, points: Any) -> np.ndarray:
    """An ouster-sdk ``LidarFrame`` made into our point array by the same compiled kernels
    OusterSource decodes packets with: its (beams, columns) fields as (1, columns, beams)
    views, XYZLut's tables (``points``: a PointMaker)."""
    from adapters.lidar import OUSTER_DTYPE
    from adapters.lidar._ouster_kernel import fill, select

    def cols(name: str) -> np.ndarray:
        return np.asarray(scan.field(name)).T[None]

    rng = cols("RANGE")
    mid = np.asarray(scan.measurement_id)[None]
    status = np.asarray(scan.status)[None]
    stamps = np.asarray(scan.timestamp)[None]
    width = rng.shape[1]
    slot, ids = np.empty(width, np.int64), np.empty(width, np.int64)
    masks = np.full(4, 0xFFFFFFFF, np.int64)  # ouster-sdk's fields are values already
    n_cols, n_points = select(mid, status, rng, masks[0], slot, ids)
    out = np.empty(n_points, OUSTER_DTYPE)
    fields = [cols(name) for name in ("SIGNAL", "REFLECTIVITY", "NEAR_IR")]
    shifts = np.zeros(4, np.int64)
    fill(slot, ids, n_cols, stamps, rng, *fields, masks, shifts, points._direction,
         points._offset, points._ring, out)  # fmt: skip
    return out


def ouster_runs() -> dict[str, Callable[[Path], object]]:
    """The Ouster decoders compared, by name: each reads a capture, returns its scans."""
    import ouster.sdk as osdk
    from ouster.sdk import core

    import adapters.lidar._ouster_setup as ouster_setup
    from adapters.lidar import OUSTER_DTYPE, OusterSource
    from adapters.lidar._ouster_packets import PointMaker

    def sdk(path: Path, points: str = "") -> int:
        source = osdk.open_source(str(path), meta=[str(OUSTER_JSON)])
        info = source.sensor_info[0]
        maker = PointMaker(info) if points == "compiled" else None  # XYZLut's tables in it
        lut = core.XYZLut(info) if maker is None else None
        n = 0
        for frames in source:
            scan = frames[0]
            if maker is not None:  # its scans into our array, with our compiled kernels
                _sdk_points(scan, maker)
                n += 1
                continue
            assert lut is not None
            xyz = lut(scan)
            if points == "numpy":  # the same product as ours, in the obvious numpy
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

    async def ours(path: Path, decoder: str = "numba", cold: bool = False) -> int:
        if cold:  # the layout and beam tables made again, as for a metadata never seen
            ouster_setup.clear_cache()
        async with OusterSource(path, metadata=OUSTER_JSON, decoder=decoder) as source:
            return sum([1 async for frame in source.frames() if frame.sensor == "lidar"])

    return {
        "OusterSource": ours,
        OUSTER_COLD: partial(ours, cold=True),
        "OusterSource(decoder='numpy')": partial(ours, decoder="numpy"),
        "OusterSource(decoder='ouster-sdk')": partial(ours, decoder="ouster-sdk"),
        OUSTER_PEER: sdk,
        "ouster-sdk + the same array (numpy)": partial(sdk, points="numpy"),
        "ouster-sdk + the same array (our kernels)": partial(sdk, points="compiled"),
    }


OUSTER_PEER = "ouster-sdk open_source + XYZLut"
OUSTER_COLD = "OusterSource, set-up cache cleared"


def ouster_best(
    runs: dict[str, Callable[[Path], object]], path: Path, scans: int, repeat: int
) -> dict[str, tuple[float, float]]:
    """(best wall, best process CPU) seconds of each run on ``path``, interleaved, after
    one warm-up call of each (numba's cache loaded, files in the page cache)."""
    import anyio

    async def rounds() -> dict[str, tuple[float, float]]:
        for name, run in runs.items():  # warm-up, outside the timed rounds
            done = run(path)
            got = done if isinstance(done, int) else await done
            assert got == scans, (name, got)
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

    return anyio.run(rounds)


def ouster_rows(repeat: int, scans: int = 100) -> list[str]:
    """OusterSource against ouster-sdk's documented path, the same files, interleaved."""
    runs = ouster_runs()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        long = Path(tmp) / "long.pcap"
        _longer_ouster_capture(long, scans)
        for label, path, n in (("OS-1-32 capture (1 scan)", OUSTER_PCAP, 1),
                               (f"{scans} scans made from it", long, scans)):  # fmt: skip
            best = ouster_best(runs, path, n, repeat)
            peer = best[OUSTER_PEER]
            for name, (wall, cpu) in best.items():
                rows.append(
                    f"| {label} | {name} | {n / wall:,.0f} | {peer[0] / wall:.2f}x "
                    f"| {cpu * 1e3 / n:.2f} | {peer[1] / cpu:.2f}x |"
                )
    return rows


def ouster_setup_rows(repeat: int = 50) -> list[str]:
    """What a source derives from the metadata before its first packet, our written-down
    layout and metadata reader against the layout learnt from ouster-sdk (the path before
    issue 36), best of ``repeat``; and ``import ouster.sdk.core``, which the capture path no
    longer pays, in fresh processes."""
    import subprocess

    from _ouster_sdk_layout import SdkLearntLayout
    from ouster.sdk import core

    from adapters.lidar._ouster_geometry import beam_tables, xyzlut_tables
    from adapters.lidar._ouster_layout import PacketLayout
    from adapters.lidar._ouster_meta import parse_metadata

    raw = OUSTER_JSON.read_bytes()
    text = raw.decode()

    def ours() -> object:
        info = parse_metadata(raw)
        return PacketLayout(info), beam_tables(info)

    def before() -> object:
        info = core.SensorInfo(text)
        layout = SdkLearntLayout(info)
        assert layout.usable
        return layout, beam_tables(info)

    def sdk_lut() -> object:  # what ouster-sdk's own path builds: its XYZLut
        return xyzlut_tables(core.SensorInfo(text))

    best = {
        name: best_of(repeat, fn)
        for name, fn in (("ours", ours), ("before", before), ("xyzlut", sdk_lut))
    }
    parts = {
        "metadata": (best_of(repeat, lambda: parse_metadata(raw)),
                     best_of(repeat, lambda: core.SensorInfo(text))),
        "layout": (best_of(repeat, lambda: PacketLayout(parse_metadata(raw))),
                   best_of(repeat, lambda: SdkLearntLayout(core.SensorInfo(text)))),
    }  # fmt: skip
    imports = []
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-c", "import time; t = time.perf_counter(); "
             "import ouster.sdk.core; print(time.perf_counter() - t)"],
            capture_output=True, text=True, check=True,
            env={**__import__("os").environ, "PYTHONPATH": str(OUSTER_ORACLE)},
        )  # fmt: skip
        imports.append(float(done.stdout))
    ms = 1e3
    return [
        f"| metadata read | {parts['metadata'][0] * ms:.3f} ms (ours) "
        f"| {parts['metadata'][1] * ms:.3f} ms (ouster-sdk SensorInfo) "
        f"| {parts['metadata'][1] / parts['metadata'][0]:.1f}x |",
        f"| metadata + packet layout | {parts['layout'][0] * ms:.3f} ms (written down) "
        f"| {parts['layout'][1] * ms:.3f} ms (learnt from ouster-sdk, checked) "
        f"| {parts['layout'][1] / parts['layout'][0]:.1f}x |",
        f"| metadata + layout + beam tables (a source's set-up) | {best['ours'] * ms:.2f} ms "
        f"| {best['before'] * ms:.2f} ms | {best['before'] / best['ours']:.1f}x |",
        f"| ouster-sdk's own XYZLut tables (for reference) | - | {best['xyzlut'] * ms:.2f} ms | - |",
        f"| import ouster.sdk.core, fresh process (no longer paid) | 0 ms "
        f"| {min(imports) * ms:.0f} ms | - |",
    ]


_TIMED = """
import sys, time, math, anyio
sys.path.insert(0, sys.argv[1])
from adapters.lidar import OusterSource, ouster_setup
path, meta, repeat, cold = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
async def once():
    if cold:
        ouster_setup.clear_cache()
    async with OusterSource(path, metadata=meta) as source:
        return sum([1 async for f in source.frames() if f.sensor == "lidar"])
t0 = time.perf_counter()
anyio.run(once)
first = time.perf_counter() - t0
best = math.inf
for _ in range(repeat):
    t = time.perf_counter()
    anyio.run(once)
    best = min(best, time.perf_counter() - t)
print(first, best, "ouster" in sys.modules)
"""


def ouster_versus_before(before: Path, repeat: int = 7, rounds: int = 3) -> list[str]:
    """OusterSource of this tree against OusterSource of ``before`` (a tree of the code
    before issue 36, whose layout was learnt from ouster-sdk: ``git archive eb95688^
    adapters fusion | tar -x -C DIR``), in fresh processes taken in turns: the process's
    first capture (imports, numba's cache, set-up), then the best of ``repeat`` (set-up
    cache kept, or cleared)."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(OUSTER_ORACLE)}
    results: dict[tuple[str, str, bool], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        long = Path(tmp) / "long.pcap"
        _longer_ouster_capture(long, 100)
        cases = [("OS-1-32 capture (1 scan)", OUSTER_PCAP), ("100 scans made from it", long)]
        for _ in range(rounds):
            for label, path in cases:
                for cold in (False, True):
                    for tree, name in ((ROOT, "ours"), (before, "before")):
                        done = subprocess.run(
                            [sys.executable, "-c", _TIMED, str(tree), str(path),
                             str(OUSTER_JSON), str(repeat), "1" if cold else "0"],
                            capture_output=True, text=True, check=True, env=env, cwd=tmp,
                        )  # fmt: skip
                        first, best, imported = done.stdout.split()
                        assert (imported == "True") == (name == "before"), (name, imported)
                        key = (label, name, cold)
                        results.setdefault(key, []).append((float(first), float(best)))
    rows = []
    for label, _ in cases:
        for cold in (False, True):
            ours = [min(x) for x in zip(*results[(label, "ours", cold)], strict=True)]
            then = [min(x) for x in zip(*results[(label, "before", cold)], strict=True)]
            what = "set-up cache cleared" if cold else "set-up cache kept"
            rows.append(
                f"| {label} | {what} | {ours[0] * 1e3:.0f} ms | {then[0] * 1e3:.0f} ms "
                f"| {ours[1] * 1e3:.2f} ms | {then[1] * 1e3:.2f} ms | {then[1] / ours[1]:.2f}x |"
            )
    return rows


def ouster_quick(scans: int = 100, repeat: int = 3) -> tuple[float, float, float]:
    """(our scans/s, wall ratio, CPU ratio) against ouster-sdk's path on ``scans`` scans."""
    runs = ouster_runs()
    runs = {name: runs[name] for name in ("OusterSource", OUSTER_PEER)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.pcap"
        _longer_ouster_capture(path, scans)
        best = ouster_best(runs, path, scans, repeat)
    (wall, cpu), (peer_wall, peer_cpu) = best["OusterSource"], best[OUSTER_PEER]
    return scans / wall, peer_wall / wall, peer_cpu / cpu


def ouster_capture_quick(repeat: int = 7) -> tuple[float, float, float]:
    """(our scans/s, wall ratio, CPU ratio) against ouster-sdk's path on the real one-scan
    capture, the set-up cache cleared before each call (the cold figure: the source's
    set-up counts most on a short capture)."""
    runs = ouster_runs()
    runs = {name: runs[name] for name in (OUSTER_COLD, OUSTER_PEER)}
    best = ouster_best(runs, OUSTER_PCAP, 1, repeat)
    (wall, cpu), (peer_wall, peer_cpu) = best[OUSTER_COLD], best[OUSTER_PEER]
    return 1 / wall, peer_wall / wall, peer_cpu / cpu


def pcap_rows(repeat: int) -> list[str]:
    """Our capture reader against dpkt: every UDP datagram with its time and ports."""
    import dpkt

    from adapters.lidar._pcap import PcapReader

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
    parser.add_argument("--velodyne-only", action="store_true", help="the Velodyne table only")
    parser.add_argument("--model", action="append", help="Velodyne rows of this case only")
    args = parser.parse_args()
    print(VELODYNE_HEADER)
    for row in velodyne_rows(args.repeat, set(args.model or ())):
        print(row, flush=True)
    print()
    compile_s, cached_s = first_decode_s()
    print(
        f"first 100 packets in a fresh process: {compile_s:.2f} s compiling the kernels, "
        f"{cached_s:.2f} s loading them from numba's cache (numba's import included)"
    )
    print()
    if args.velodyne_only:
        return
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
    print("| Ouster set-up, real OS-1-32 metadata | ours | before (ouster-sdk) | ratio |")
    print("|---|---:|---:|---:|")
    for row in ouster_setup_rows():
        print(row)
    print()
    print("| capture | reader | datagrams/s | vs dpkt |")
    print("|---|---|---:|---:|")
    for row in pcap_rows(args.repeat):
        print(row)


if __name__ == "__main__":
    main()
