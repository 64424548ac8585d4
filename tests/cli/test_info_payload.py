"""``info`` describes a sensor's typical payload and shows its segments and gaps."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from fusion import Frame
from recordings import Recorder, open_recording
from tests.terminal import run_piped

POINT = np.dtype([("x", "f4"), ("y", "f4"), ("z", "f4"), ("intensity", "f4"), ("ring", "u2")])


def info(*args: str) -> subprocess.CompletedProcess[str]:
    return run_piped("info", *args, columns=250, timeout=60, check=True)


def test_the_payload_is_the_typical_one_not_the_first(tmp_path: Path) -> None:
    path = tmp_path / "lidar.hfr"
    sizes = [443, *range(13_800, 13_900, 10), 14_024]  # a partial first sweep
    with Recorder(path, wall_clock=False) as rec:
        for i, n in enumerate(sizes):
            rec.write(Frame("lidar", i, i * 100_000_000, np.zeros(n, POINT)))
            rec.write(Frame("cam", i, i * 100_000_000, np.zeros((48, 64, 3), np.uint8)))
    with open_recording(path) as log:  # the reference: every sweep's size
        counts = [len(f.data) for f in log.frames(sensors=["lidar"])]
    median = int(np.median(counts))
    doc = json.loads(info("--json", str(path)).stdout)
    assert doc["sensors"]["lidar"]["payload"] == (
        f"5 fields x {median:,} (median; {min(counts):,}-{max(counts):,})"
    )
    assert doc["sensors"]["cam"]["payload"] == "uint8 (48, 64, 3)"
    shown = info(str(path)).stdout
    assert f"5 fields x {median:,}" in shown
    assert "segments" in shown
    assert "gaps" in shown


def test_segments_and_gaps_are_in_the_table(tmp_path: Path) -> None:
    path = tmp_path / "restart.hfr"
    with Recorder(path, wall_clock=False) as rec:
        for i in range(20):
            meta = {"segment_start": True} if i == 10 else {}
            if i == 10:
                meta["gap_ns"] = 2_500_000_000
            t = i * 10_000_000 + (3_000_000_000 if i >= 10 else 0)
            rec.write(Frame("imu", i, t, np.zeros(6), t_arrival=t, meta=meta))
    doc = json.loads(info("--json", str(path)).stdout)
    assert doc["sensors"]["imu"]["segments"] == 2
    assert doc["sensors"]["imu"]["gaps_ns"] == [2_500_000_000]
    row = next(ln for ln in info(str(path)).stdout.splitlines() if ln.startswith("│ imu"))
    assert "1 (max 2.50 s)" in row
    cells = [c.strip() for c in row.split("│")]
    assert cells[cells.index("imu") + 7] == "2"  # the segments column
