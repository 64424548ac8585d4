"""Hesai packets built to nebula's layouts for the models with no public capture (AT128, OT128).

Each packet is built field by field from ``hesai_packet.hpp``'s structs (not from
our decoder's tables): random distances, reflectivities and echo pairs (some
identical, some closer than the dual-return threshold, some zero), block azimuths
advancing as the sensor's do, stamps in the tail's own clock format.
"""

from __future__ import annotations

import struct

import numpy as np

AT128_STEP = 1280  # 0.05° of mirror rotation a firing, in 1/25600°
OT128_STEP = 20  # 0.2° a firing, in 1/100°


def _units(rng: np.random.Generator, n_blocks: int, channels: int, far: int) -> np.ndarray:
    dist = rng.integers(100, far, (n_blocks, channels))
    refl = rng.integers(0, 256, (n_blocks, channels))
    dist[rng.random((n_blocks, channels)) < 0.08] = 0
    if n_blocks == 2:  # echo pairs: some identical, some within 0.1 m
        same = rng.random(channels) < 0.1
        dist[1, same], refl[1, same] = dist[0, same], refl[0, same]
        near = rng.random(channels) < 0.1
        dist[1, near] = np.minimum(dist[0, near] + rng.integers(0, 20, near.sum()), 65535)
    return np.stack([dist, refl], axis=-1)


def at128_packets(
    n: int, *, dual: bool, seed: int = 0, start_az: int = 0, t0_us: int = 1_679_653_308_000_000
) -> list[bytes]:
    """``n`` AT128E2X packets (1118 bytes: with UDP sequence, tail CRC and the 32-byte
    signature), 2 blocks each, 4 mm distance unit."""
    rng = np.random.default_rng(seed)
    out = []
    az = start_az
    mode = 0x39 if dual else 0x37  # last+strongest / strongest
    for i in range(n):
        head = struct.pack("<HBBBBBBBBBB", 0xFFEE, 4, 3, 0, 0, 128, 2, 0, 4, 2 if dual else 1, 0)
        units = _units(rng, 2, 128, 45000)
        blocks = b""
        azs = [az, az] if dual else [az, (az + AT128_STEP) % (360 * 25600)]
        for b in range(2):
            a = azs[b] + int(rng.integers(0, 256)) if b == 0 or not dual else azs[0]
            a %= 360 * 25600
            if b == 0:
                azs[0] = a
            body = b"".join(struct.pack("<HBB", int(d), int(r), 0) for d, r in units[b])
            blocks += struct.pack("<HB", a >> 8, a & 0xFF) + body
        az = (az + (1 if dual else 2) * AT128_STEP) % (360 * 25600)
        t_us = t0_us + i * 80
        secs, micros = divmod(t_us, 1_000_000)
        tail = bytes(6) + b"\x00" + bytes(11) + struct.pack("<HIBB", 200, micros, mode, 0x42)
        tail += b"\x00" + secs.to_bytes(5, "big")
        packet = head + blocks + b"\x00\x00\x00\x00" + tail + struct.pack("<II", i, 0)
        out.append(packet + bytes(32))
    assert all(len(p) == 1118 for p in out)
    return out


def ot128_packets(
    n: int,
    *,
    dual: bool,
    hires: bool = False,
    seed: int = 0,
    start_az: int = 0,
    t0_us: int = 1_679_653_308_000_000,
) -> list[bytes]:
    """``n`` OT128 (nebula's ``Packet128E4X`` = ``Packet128E3X``) packets of 893 bytes:
    a 12-byte header (protocol 1.4, 128 lasers, 2 blocks, 4 mm), 2 blocks of (u16
    azimuth in 1/100 degree, 128 x 3-byte units), the body CRC, 17 bytes of functional
    safety, the 56-byte tail (azimuth states, operational state: 0 high resolution,
    1 standard; return mode, date from 1900 and microseconds) and a 32-byte signature."""
    import time

    rng = np.random.default_rng(seed)
    out = []
    az = start_az
    mode = 0x39 if dual else 0x37
    for i in range(n):
        head = struct.pack("<HBBBBBBBBBB", 0xFFEE, 1, 4, 0, 0, 128, 2, 0, 4, 2 if dual else 1, 0)
        units = _units(rng, 2, 128, 50000)
        blocks = b""
        for b in range(2):
            a = az if dual or b == 0 else (az + OT128_STEP) % 36000
            body = b"".join(struct.pack("<HB", int(d), int(r)) for d, r in units[b])
            blocks += struct.pack("<H", a) + body
        az = (az + (1 if dual else 2) * OT128_STEP) % 36000
        t_us = t0_us + i * (111_112 if not dual else 55_556) // 1000  # 10 Hz
        secs, micros = divmod(t_us, 1_000_000)
        g = time.gmtime(secs)
        date = bytes([g.tm_year - 1900, g.tm_mon, g.tm_mday, g.tm_hour, g.tm_min, g.tm_sec])
        states = int(rng.integers(0, 2)) << 14 | int(rng.integers(0, 2)) << 12
        tail = bytes(9) + struct.pack("<HBBH", states, 0 if hires else 1, mode, 600)
        tail += date + struct.pack("<IB", micros, 0x42) + struct.pack("<I", i) + bytes(22 + 4)
        packet = head + blocks + b"\x00\x00\x00\x00" + bytes(17) + tail
        assert len(packet) == 861, len(packet)
        out.append(packet + bytes(32))
    return out
