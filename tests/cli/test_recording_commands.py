"""``hyperframes record | info | check | replay`` end to end: in process, and a real
``record`` subprocess stopped with SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hyperframes.cli import main
from recordings import open_recording

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "configs" / "synthetic.toml"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "synthetic.hfr"
    code = main(
        [
            "record",
            "-o",
            str(path),
            "--fast",
            "--quiet",
            "--metadata",
            "driver=ann",
            "--metadata",
            "route=ring road",
            "--compression",
            "zstd:1",
        ]
    )
    assert code == 0
    return path


def test_record_without_config_records_the_builtin_synthetic_session(recorded: Path) -> None:
    with open_recording(recorded) as log:
        s = log.summary()
    assert {n: x.count for n, x in s.sensors.items()} == {"cam": 300, "lidar": 100, "imu": 2000}
    assert s.metadata["driver"] == "ann"
    assert s.metadata["route"] == "ring road"
    assert s.indexed


def test_record_fast_duration_counts_recorded_time_not_wall_time(tmp_path: Path) -> None:
    out = tmp_path / "three.hfr"
    assert main(["record", "-o", str(out), "--fast", "--quiet", "--duration", "3"]) == 0
    with open_recording(out) as log:
        s = log.summary()
    counts = {n: x.count for n, x in s.sensors.items()}
    assert abs(counts["cam"] - 90) <= 2, counts
    assert abs(counts["imu"] - 600) <= 4, counts
    assert 2.8e9 <= s.t_end - s.t_start <= 3.1e9


def test_record_with_a_config_selects_sensors_and_splits_by_duration(tmp_path: Path) -> None:
    out = tmp_path / "split.hfr"
    code = main(
        [
            "record",
            str(CONFIG),
            "-o",
            str(out),
            "--fast",
            "--quiet",
            "--exclude",
            "imu",
            "--max-duration",
            "4",
        ]
    )
    assert code == 0
    parts = sorted(tmp_path.glob("split.*.hfr"))
    assert len(parts) >= 2
    counts: dict[str, int] = {}
    for part in parts:
        with open_recording(part) as log:
            for name, x in log.summary().sensors.items():
                counts[name] = counts.get(name, 0) + x.count
    assert counts == {"cam": 300, "lidar": 100}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--compression", "lz4"], "only zstd is supported"),
        (["--metadata", "novalue"], "expected KEY=VALUE"),
        (["--max-size", "huge"], "expected a size like"),
    ],
)
def test_record_refuses_bad_options_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["record", "-o", str(tmp_path / "x.hfr"), "--fast", *argv]) == 2
    said = capsys.readouterr()
    assert message in said.out + said.err  # an option argparse refuses: its stderr line


def test_info_json_has_dates_rates_drops_and_clock_fit(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["info", str(recorded), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["frames"] == 2400
    assert doc["indexed"] is True
    imu = doc["sensors"]["imu"]
    assert imu["dropped"] == 0
    assert imu["rate_hz"] == pytest.approx(200, rel=1e-3)
    assert imu["skew_ppm"] == pytest.approx(-80, abs=15)  # the IMU clock runs 80 ppm slow
    assert doc["sensors"]["cam"]["payload"] == "uint8 (48, 64, 3)"


def test_info_table_prints_the_summary(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(recorded)]) == 0
    out = capsys.readouterr().out
    assert "footer index" in out
    assert "2000" in out


def test_check_passes_a_good_file(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(recorded)]) == 0
    assert "every CRC checks out" in capsys.readouterr().out


def test_check_fails_a_damaged_file_and_repair_salvages_the_rest(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recording(recorded) as log:
        victim = log.chunks[0]
        total = log.summary().count
    bad = tmp_path / "bad.hfr"
    data = bytearray(recorded.read_bytes())
    data[victim.offset + 300] ^= 0xFF
    bad.write_bytes(bytes(data))
    assert main(["check", str(bad)]) == 1
    assert "--repair" in capsys.readouterr().out
    fixed = tmp_path / "fixed.hfr"
    assert main(["check", str(bad), "--repair", "-o", str(fixed)]) == 1
    out = capsys.readouterr().out
    assert f"byte {victim.offset}" in out
    assert f"wrote {total - victim.count} frames" in out
    assert main(["check", str(fixed)]) == 0
    capsys.readouterr()
    # --allow-loss keeps every word of the damage and only changes the exit code
    assert main(["check", str(bad), "--allow-loss"]) == 0
    allowed = capsys.readouterr().out
    assert "damaged:" in allowed
    assert f"byte {victim.offset}" in allowed


def test_replay_plays_a_selection(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_recording(recorded) as log:
        t0 = log.summary().t_start or 0
        n = len(list(log.frames(sensors=["lidar", "cam"], start=t0 + 10**9, end=t0 + 3 * 10**9)))
    argv = [
        "replay",
        str(recorded),
        "--rate",
        "max",
        "--sensors",
        "lidar",
        "cam",
        "--start-offset",
        "1",
        "--duration",
        "2",
    ]
    assert main(argv) == 0
    assert f"replayed {n} frames" in capsys.readouterr().out


def test_replay_through_the_config_pipeline_reproduces_the_groups(
    recorded: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    metrics = tmp_path / "metrics.prom"
    argv = ["replay", str(recorded), "--fast", "--config", str(CONFIG), "--metrics", str(metrics)]
    assert main(argv) == 0
    assert "replayed 2400 frames into 100 groups" in capsys.readouterr().out
    text = metrics.read_text()
    assert 'hyperframes_hub_groups_total{outcome="complete"} 100' in text
    assert 'hyperframes_worker_items_total{worker="edges"} 100' in text


def test_replay_of_a_missing_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path / "nope.hfr")]) == 2
    assert "nope.hfr" in capsys.readouterr().out


def test_info_on_a_foreign_file_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "nope.hfr"
    path.write_bytes(b"hello world, not a recording")
    assert main(["info", str(path)]) == 2


def test_sigint_stops_a_recording_gracefully_with_its_footer(tmp_path: Path) -> None:
    out = tmp_path / "live.hfr"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record", "-o", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    partial = out.with_name(out.name + ".partial")  # the name while recording
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not partial.exists() or partial.stat().st_size < 4096):
        time.sleep(0.05)  # a real process on the real clock: wait until it is recording
    time.sleep(1.5)  # past the first flush interval
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr.decode()
    assert b"SIGINT: stopping sources" in stderr
    assert not partial.exists()  # renamed once whole
    with open_recording(out) as log:
        summary = log.summary()
    assert summary.indexed  # footer and index written
    assert summary.sensors["imu"].count >= 200  # >= 1 s of the 200 Hz IMU
    assert summary.count < 2400  # stopped before the 10 s session ended
    assert b"recorded" in stdout
