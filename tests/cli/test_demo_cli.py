"""The demo command runs the whole path and says what it did."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperframes.cli import main
from recordings import open_recording


def test_demo_runs_sensors_through_hub_models_recorder_and_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "demo.hfr"
    assert main(["demo", "--seconds", "3", "--keep", str(out), "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # --quiet prints one line: 3 s of camera (89 of 90 frames survive the link),
    # LiDAR 30 and IMU 600; the last sweep's IMU window runs past the end.
    assert lines == [lines[-1]]
    assert lines[-1].startswith("demo ok: 29 groups from 719 frames")
    assert lines[-1].endswith("replay reproduced all 29 groups")
    with open_recording(out) as log:
        summary = log.summary()
    assert set(summary.sensors) == {"cam", "lidar", "imu"}
    assert summary.sensors["lidar"].count == 30
    assert summary.sensors["imu"].count == 600
    assert summary.indexed
    # --quiet writes no report unless asked.
    assert list(tmp_path.glob("*.png")) == []


def test_demo_rejects_a_session_shorter_than_a_second(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seconds", "0.5", "--quiet"]) == 2
    assert "--seconds must be at least 1, got 0.5" in capsys.readouterr().out


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
