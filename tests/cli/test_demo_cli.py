"""The demo command runs the whole path and says what it did."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.cli import main
from recordings import open_recording


def test_demo_runs_sensors_through_hub_model_and_recorder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo.hfr"
    assert main(["demo", "--seconds", "3", "--keep", str(out), "--quiet"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("demo ok: 30 groups from 720 frames")
    with open_recording(out) as log:
        summary = log.summary()
    assert set(summary.sensors) == {"cam", "lidar", "imu"}
    assert summary.sensors["lidar"].count == 30
    assert summary.indexed


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
