"""Rebuild this red-team corpus (README.md says what each file is):

    PYTHONPATH=. .venv/bin/python tests/data/hostile/make_corpus.py

Files are named by class: ``sync_*`` (offline sync on damaged recordings),
``bag_*`` (hostile message definitions), ``mp4_*`` (encoded video whose packets
are garbage). The builders are the tests' own, so a test and this corpus hold
the same inputs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from fusion import Frame
from recordings import Recorder, open_recording
from tests.interop.hostile_bags import HOSTILE
from tests.interop.hostile_bags import write as write_bag
from tests.recordings.forge import records_of, rewrite
from tests.recordings.test_sync_damage import DAMAGE

HERE = Path(__file__).resolve().parent
MS = 1_000_000
SYNC = {
    "t outside the chunk's range": "sync_t_outside_range.hfr",
    "a record's meta is an array": "sync_meta_array.hfr",
    "index claims 2**62 frames": "sync_index_2_62.hfr",
}


def clean_session(path: Path) -> Path:
    with Recorder(path, chunk_duration=0.5) as rec:
        for i in range(40):
            t = i * 100 * MS
            rec.write(Frame("lidar", i, t, {"x": np.arange(3.0) + i}, meta={"i": i}))
            rec.write(Frame("imu", i, t + 1 * MS, np.arange(6.0) * i))
            rec.write(Frame("cam", i, t + 2 * MS, b"jpeg %d" % i))
    return path


def extremes(path: Path) -> Path:
    """Stamps at the int64 extremes: a reference at -2**63 and at 0, a camera at 2**63 - 1."""
    lo, hi = -(1 << 63), (1 << 63) - 1
    with Recorder(path) as rec:
        rec.write(Frame("lidar", 0, lo, b"a"))
        rec.write(Frame("lidar", 1, 0, b"b"))
        rec.write(Frame("cam", 0, hi, b"c"))
    return path


def garbage_video(path: Path, codec: str) -> Path:
    from tests.interop.test_export_video import make

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "clean.hfr"
        make(src, codec)
        rng = np.random.default_rng(3)
        with open_recording(src) as log:
            specs = list(log.specs.values())
            frames = list(log.frames())
    with Recorder(path, sensors=specs) as rec:
        for f in frames:
            if f.sensor == "cam" and f.seq % 2:
                noise = rng.integers(0, 256, max(len(f.data), 64), dtype=np.uint8).tobytes()
                f = Frame(f.sensor, f.seq, f.t, noise, f.t_sensor, f.t_arrival, f.meta)
            rec.write(f)
    return path


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        clean = clean_session(Path(d) / "clean.hfr")
        for name, file in SYNC.items():
            preamble, recs = records_of(clean)
            edit, index_edit = DAMAGE[name]
            if edit is not None:
                edit(recs)
            rewrite(HERE / file, preamble, recs, index_edit)
    extremes(HERE / "sync_int64_extremes.hfr")
    for name in HOSTILE:
        for kind in ("ros1", "mcap"):
            write_bag(HERE, name, kind)
    for codec in ("h264", "ffv1"):
        garbage_video(HERE / f"mp4_garbage_{codec}.hfr", codec)


if __name__ == "__main__":
    main()
