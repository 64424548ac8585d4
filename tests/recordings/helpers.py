"""Frames with deterministic content, and comparisons, shared by the recordings tests."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Any

import numpy as np

from fusion._frames import Frame
from recordings.hfr._format import PRELUDE, TRAILER, RecordKind


def payload(sensor: str, seq: int) -> Any:
    """Deterministic data for ``(sensor, seq)``: regenerated to check byte identity."""
    rng = np.random.default_rng([seq, len(sensor), ord(sensor[0])])
    if sensor == "cam":
        return rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)
    if sensor == "lidar":
        return {
            "xyz": rng.normal(size=(200, 3)).astype(np.float32),
            "ring": np.array(seq, np.uint16),
        }
    return rng.normal(size=6).astype(np.float64)


def make_frames(n: int = 300, sensors: tuple[str, ...] = ("cam", "lidar", "imu")) -> list[Frame]:
    """``n`` frames round-robin over ``sensors``, 10 ms apart, with arrival stamps."""
    seqs = dict.fromkeys(sensors, 0)
    out = []
    for i in range(n):
        name = sensors[i % len(sensors)]
        seq = seqs[name]
        seqs[name] = seq + 1
        t = i * 10_000_000
        out.append(
            Frame(
                name, seq, t, payload(name, seq), t_sensor=t - 7, t_arrival=t + 1_000, meta={"i": i}
            )
        )
    return out


def digest(data: Any) -> str:
    """A stable hash of a payload: dtype, shape and bytes of every array."""
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, np.ndarray):
            h.update(f"{x.dtype.str}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes())
        elif isinstance(x, dict):
            for k in sorted(x):
                h.update(str(k).encode())
                feed(x[k])
        elif isinstance(x, bytes):
            h.update(x)
        else:
            h.update(repr(x).encode())

    feed(data)
    return h.hexdigest()[:16]


def same_frame(a: Frame, b: Frame) -> bool:
    return (a.sensor, a.seq, a.t, a.t_sensor, a.t_arrival, a.meta) == (
        b.sensor,
        b.seq,
        b.t,
        b.t_sensor,
        b.t_arrival,
        b.meta,
    ) and digest(a.data) == digest(b.data)


def stamp_record_span(data: bytes) -> tuple[int, int]:
    """``(start, end)`` of the STAMPS record: after the INDEX, before the trailer."""
    index_offset = struct.unpack_from("<Q", data, len(data) - TRAILER.size)[0]
    _, kind, meta_len, payload_len, _, _ = PRELUDE.unpack_from(data, index_offset)
    assert kind == RecordKind.INDEX
    return index_offset + PRELUDE.size + meta_len + payload_len, len(data) - TRAILER.size


def without_stamp_index(path: Path) -> None:
    """Rewrite ``path`` as a 1.4 writer left it: no STAMPS record."""
    data = path.read_bytes()
    a, b = stamp_record_span(data)
    path.write_bytes(data[:a] + data[b:])
