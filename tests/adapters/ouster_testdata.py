"""The real Ouster capture in ../shared/data/lidar, and longer streams made from it.

The capture is one full scan (64 lidar packets, frame id 638) of an OS-1-32 in
the LEGACY profile. Longer streams repeat it with the frame id and column
timestamps advanced, as the sensor's next scans would be; IMU packets are
built to the firmware 2.x manual's LEGACY layout (48 bytes: sys_ts, accel_ts,
gyro_ts as u64 ns, then acceleration x/y/z in g and angular velocity x/y/z in
deg/s as f32).
"""

from __future__ import annotations

import struct

import numpy as np
from lidar_testdata import LIDAR_DATA

OUSTER_PCAP = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"
OUSTER_JSON = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.json"
VALID_POINTS = 27310  # returns with range > 0 in the scan, as ouster-sdk reads it
_COLUMN = 16 + 32 * 12 + 4  # LEGACY column: header, 32 pixels, status


def lidar_packets() -> list[tuple[int, bytes]]:
    """(capture ns, payload) of the capture's 64 lidar packets."""
    from adapters.lidar._pcap import read_udp

    return [(d.t_capture, d.payload) for d in read_udp(OUSTER_PCAP, dst_port=7502)]


def next_scan(
    packets: list[tuple[int, bytes]], frame_id: int, dt_ns: int
) -> list[tuple[int, bytes]]:
    """The packets again as scan ``frame_id``, ``dt_ns`` later (capture and column times)."""
    out = []
    for t, payload in packets:
        cols = np.frombuffer(payload, np.uint8).copy().reshape(16, _COLUMN)
        cols[:, 10:12] = np.frombuffer(np.uint16(frame_id).tobytes(), np.uint8)
        stamps = cols[:, 0:8].copy().view("<u8")[:, 0] + np.uint64(dt_ns)
        cols[:, 0:8] = stamps.view(np.uint8).reshape(16, 8)
        out.append((t + dt_ns, cols.tobytes()))
    return out


def imu_packet(
    t_ns: int, accel_g: tuple[float, float, float], gyro_dps: tuple[float, float, float]
) -> bytes:
    """A LEGACY IMU packet: both sensor times ``t_ns``, sys_ts ``t_ns - 1000``."""
    return struct.pack("<QQQ6f", t_ns - 1000, t_ns, t_ns, *accel_g, *gyro_dps)


def stream(scans: int = 3) -> list[tuple[int, int, bytes]]:
    """(capture ns, port, payload): ``scans`` scans 100 ms apart, one IMU packet per 10 ms."""
    base = lidar_packets()
    records: list[tuple[int, int, bytes]] = []
    for k in range(scans):
        records += [(t, 7502, p) for t, p in next_scan(base, 638 + k, k * 100_000_000)]
    t0_capture, t0_sensor = base[0][0], 3_577_133_606_620
    for i in range(scans * 10):
        dt = i * 10_000_000
        payload = imu_packet(t0_sensor + dt, (0.01 * i, -0.02, 1.0), (0.5, -1.5, 0.25 * i))
        records.append((t0_capture + dt + 50_000, 7503, payload))
    records.sort(key=lambda r: r[0])
    return records
