"""Regenerate the .hfr conformance corpus: ``python tests/data/recordings/generate.py``.

Layout, after mcap's ``tests/conformance/data``::

    <Feature>/<Feature>-<variant>.hfr    the file (current format version)
    <Feature>/<Feature>-<variant>.json   what a reader must find in it
    v1.0/<Feature>/...                   files written by the 1.0 writer: frozen,
                                         never regenerated, still read by every reader

Variants of every feature: ``ok`` (closed by its writer), ``nofooter`` (the
writer was killed: no index, no trailer), ``truncated`` (cut inside the last
chunk) and ``badcrc`` (one byte of the second chunk's payload flipped).
The expected JSON lists the frames a reader returns (sensor, seq, t,
t_sensor, t_arrival, meta, a digest of the data) and the damage it reports
(class and byte offset). Files are deterministic: no wall-clock time, no
flush timer, fixed chunk size.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parents[2]))

from fusion._frames import Frame, SensorSpec  # noqa: E402
from recordings import Recorder, open_recording  # noqa: E402
from recordings.hfr._format import PRELUDE, TRAILER  # noqa: E402

MS = 1_000_000


def one_sensor() -> list[Frame]:
    return [Frame("imu", i, i * 5 * MS, np.arange(6, dtype="<f8") * i) for i in range(40)]


def multi_sensor() -> list[Frame]:
    out = []
    for i in range(30):
        out.append(
            Frame("cam", i, i * 33 * MS, np.full((4, 6, 3), i, np.uint8), t_arrival=i * 33 * MS + 7)
        )
        out.append(Frame("lidar", i, i * 33 * MS + 1, np.arange(12, dtype="<f4").reshape(4, 3) + i))
    return out


def payload_types() -> list[Frame]:
    point = np.dtype([("x", "<f4"), ("ring", "<u2")])
    return [
        Frame("a", 0, 0, b"raw bytes"),
        Frame("a", 1, 1, {"img": np.zeros((2, 2), ">i2"), "label": "car", "score": 0.5}),
        Frame("a", 2, 2, np.array([(1.5, 3)], dtype=point)),
        Frame("a", 3, 3, np.array(7, np.int64)),
        Frame("a", 4, 4, None, t_sensor=-4, meta={"t_true": 3, "tags": ["x", "y"]}),
        Frame("a", 5, 5, np.zeros((0, 3), np.float32)),
    ] * 8


def columns() -> list[Frame]:
    """1.1 columnar groups mixed with records: metas, t_sensor, no arrival, two dtypes."""
    out = []
    for i in range(36):
        t = i * 2 * MS
        out.append(
            Frame(
                "imu",
                i,
                t,
                np.arange(6, dtype="<f8") + i,
                t_sensor=t - i % 3,
                t_arrival=t + 5,
                meta={"t_true": t - 1} if i % 4 == 0 else {},
            )
        )
        if i % 3 == 0:
            out.append(Frame("gps", i // 3, t + 1, np.array([i, -i], ">i4")))
        if i % 5 == 0:
            out.append(Frame("imu", 1000 + i, t + 2, np.arange(3, dtype="<f4"), t_arrival=t))
            out.append(Frame("log", i // 5, t + 3, {"text": f"event {i}"}))
    return out


FEATURES: dict[str, Callable[[], list[Frame]]] = {
    "OneSensor": one_sensor,
    "MultiSensor": multi_sensor,
    "PayloadTypes": payload_types,
    "Columns": columns,
}


def digest(data: Any) -> str:
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, np.ndarray):
            h.update(f"{x.dtype.str}{x.dtype.descr}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes())
        elif isinstance(x, dict):
            for k in sorted(x):
                h.update(repr(k).encode())
                feed(x[k])
        else:
            h.update(repr(x).encode())

    feed(data)
    return h.hexdigest()[:16]


def describe(path: Path) -> dict[str, Any]:
    """What the reference reader finds in ``path``: the expected JSON."""
    with open_recording(path) as log:
        frames = [
            {
                "sensor": f.sensor,
                "seq": f.seq,
                "t": f.t,
                "t_sensor": f.t_sensor,
                "t_arrival": f.t_arrival,
                "meta": f.meta,
                "data": digest(f.data),
            }
            for f in log.frames()
        ]
        s = log.summary()
        return {
            "version": list(s.version),
            "indexed": s.indexed,
            "sensors": {n: x.count for n, x in s.sensors.items()},
            "frames": frames,
            "damage": [[type(e).__name__, e.offset] for e in log.damage],
        }


def write(feature: str, frames: list[Frame]) -> None:
    folder = ROOT / feature
    folder.mkdir(exist_ok=True)
    ok = folder / f"{feature}-ok.hfr"
    specs = [SensorSpec(n) for n in dict.fromkeys(f.sensor for f in frames)]
    with Recorder(
        ok, sensors=specs, metadata={"feature": feature}, chunk_bytes=600, flush_interval=None
    ) as rec:
        for f in frames:
            rec.write(f)
    data = ok.read_bytes()
    index_offset = int.from_bytes(data[-TRAILER.size : -TRAILER.size + 8], "little")
    with open_recording(ok) as log:
        chunks = log.chunks
    variants = {
        "nofooter": data[:index_offset],
        "truncated": data[: chunks[-1].offset + PRELUDE.size + 5],
    }
    bad = bytearray(data)
    second = chunks[1]
    bad[second.offset + PRELUDE.size + 60] ^= 0xFF  # inside the meta: its CRC fails
    variants["badcrc"] = bytes(bad)
    for name, blob in variants.items():
        (folder / f"{feature}-{name}.hfr").write_bytes(blob)
    for hfr in sorted(folder.glob("*.hfr")):
        hfr.with_suffix(".json").write_text(
            json.dumps(describe(hfr), indent=1, sort_keys=True) + "\n"
        )


def main() -> None:
    for feature, make in FEATURES.items():
        write(feature, make())
    print(f"wrote {sum(len(list((ROOT / f).glob('*.hfr'))) for f in FEATURES)} files under {ROOT}")


if __name__ == "__main__":
    main()
