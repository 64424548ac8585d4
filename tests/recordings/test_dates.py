"""Recordings carry the wall clock against the reference clock; info and export date frames."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from fusion._frames import Frame, SensorSpec
from hyperframes.cli import main
from recordings import Recorder, open_recording
from recordings.outputs._export import export_recording

MS = 1_000_000
CORPUS = Path(__file__).resolve().parents[1] / "data" / "recordings"


def clocks_now() -> tuple[int, int]:
    """(monotonic, wall) read at one moment: the wall read between two monotonic reads
    no more than 50 us apart (read again while the process was preempted between them,
    as a loaded machine does: two plain reads in a row can be milliseconds apart)."""
    for _ in range(1000):
        before, wall, after = time.monotonic_ns(), time.time_ns(), time.monotonic_ns()
        if after - before <= 50_000:
            break
    return (before + after) // 2, wall


def live_recording(path: Path, n: int = 30) -> list[tuple[int, int]]:
    """Frames stamped on the host monotonic clock, as a live pipeline aligns them;
    returns (t, wall clock at that moment) per frame."""
    truth = []
    with Recorder(path, sensors=[SensorSpec("imu", kind="imu")], chunk_bytes=400) as rec:
        for i in range(n):
            t, wall = clocks_now()
            rec.write(Frame("imu", i, t, np.full(3, i, np.float32), t_arrival=t + MS))
            truth.append((t, wall))
            time.sleep(0.002)
    return truth


def test_a_live_recording_dates_every_frame_within_a_millisecond(tmp_path: Path) -> None:
    path = tmp_path / "live.hfr"
    truth = live_recording(path)
    with open_recording(path) as log:
        wall = log.wall_clock
        assert wall is not None
        assert len(wall.anchors) >= len(log.chunks) + 1  # the header's and one per chunk
        assert log.dated == {"imu"}
        for (t, utc), frame in zip(truth, log.frames(), strict=True):
            assert frame.t == t  # stored as recorded: dates are computed, never written over t
            assert abs(wall.to_utc(frame.t) - utc) < MS
        summary = log.summary()
    assert summary.utc_start is not None
    assert abs(summary.utc_start - truth[0][1]) < MS


def test_made_up_times_are_not_dated_and_export_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "synthetic.hfr"
    with Recorder(path) as rec:
        for i in range(5):
            rec.write(Frame("imu", i, i * 10 * MS, np.zeros(3, np.float32)))
    with open_recording(path) as log:
        assert log.wall_clock is not None  # the anchors are there ...
        assert log.dated == frozenset()  # ... but these times are not on that clock
        assert log.summary().utc_start is None


def test_without_anchors_a_file_has_no_wall_clock(tmp_path: Path) -> None:
    path = tmp_path / "plain.hfr"
    with Recorder(path, wall_clock=False) as rec:
        rec.write(Frame("imu", 0, time.monotonic_ns(), np.zeros(3, np.float32)))
    with open_recording(path) as log:
        assert log.wall_clock is None
    old = sorted(CORPUS.glob("*/*-ok.hfr"))[0]  # a 1.1 file from before the anchors
    with open_recording(old) as log:
        assert log.version < (1, 2)
        assert log.wall_clock is None


def test_export_stamps_a_live_recording_in_epoch_time(tmp_path: Path) -> None:
    from mcap.reader import make_reader

    path = tmp_path / "live.hfr"
    truth = live_recording(path)
    out = tmp_path / "live.mcap"
    export_recording(path, out, to="ros2", groups="none")
    with out.open("rb") as f:
        times = [m.log_time for _, _, m in make_reader(f).iter_messages()]
    assert len(times) == len(truth)
    for log_time, (_t, utc) in zip(times, truth, strict=True):
        assert abs(log_time - (utc + MS)) < 2 * MS  # t_arrival, dated


def test_info_shows_dates_in_utc_local_and_epoch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "live.hfr"
    truth = live_recording(path, n=5)
    assert main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert abs(doc["start_utc_ns"] - truth[0][1]) < MS
    assert doc["start_utc"].endswith("Z")
    assert doc["wall_clock"]["reference"] == "monotonic"
    assert doc["wall_clock"]["steps"] == []
    assert main(["info", str(path), "--quick"]) == 0
    text = capsys.readouterr().out
    assert " UTC, " in text
    assert " local (epoch 17" in text
