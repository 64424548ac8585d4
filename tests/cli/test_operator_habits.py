"""What an operator types and reads: the live table before a clock estimate, shared flags,
literal messages, quiet runs, empty selections, plain --help, info on bags, doctor."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fusion._frames import Frame, SensorSpec
from fusion.clock import OnlineClock
from hyperframes.cli import COMMANDS, build_parser, main
from hyperframes.cli._common import clock_text
from recordings import Recorder

ROOT = Path(__file__).resolve().parents[2]
BAGS = ROOT / ".." / "shared" / "data" / "real" / "bags"
MS = 1_000_000


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a process whose output is a pipe (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "80"},
    )


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "a session with a long name [v2].hfr"
    specs = [SensorSpec("cam", kind="camera"), SensorSpec("imu", kind="imu")]
    with Recorder(path, sensors=specs, wall_clock=False) as rec:
        for i in range(20):
            rec.write(Frame("cam", i, i * 50 * MS, np.zeros((4, 4, 3), np.uint8)))
            rec.write(Frame("imu", i, i * 50 * MS + MS, np.zeros(6, np.float32)))
    return path


def test_the_live_table_shows_an_online_clock_before_its_first_sample() -> None:
    estimate = OnlineClock().describe()  # offset_ns and skew_ppm are None: this crashed
    assert clock_text(estimate) == "online: learning (no sample yet)"
    clock = OnlineClock()
    clock.observe(0, 5 * MS)
    assert clock_text(clock.describe()).startswith("offset +0.0050 s, skew +0.0 ppm")


def test_replay_rate_takes_a_number_or_max_with_ros2_bag_spelling(recording: Path) -> None:
    parser = build_parser()
    assert parser.parse_args(["replay", "x.hfr", "-r", "max"]).rate is None
    assert parser.parse_args(["replay", "x.hfr", "--rate", "2"]).rate == 2.0
    args = parser.parse_args(["replay", "x.hfr", "--start-paused", "--sensors", "a,b", "c"])
    assert args.start_paused
    assert args.sensors == ["a", "b", "c"]
    done = run_cli("replay", str(recording), "--rate", "quick")
    assert done.returncode == 2
    assert "expected a number > 0 or 'max', found 'quick'" in done.stderr
    assert "Traceback" not in done.stderr


def test_record_replay_and_export_share_output_and_sensor_flags() -> None:
    parser = build_parser()
    for command in ("record", "export"):
        args = parser.parse_args([command, "x", "-o", "y", "--sensors", "cam", "imu"])
        assert args.output == "y" or str(args.output) == "y"
        assert args.sensors == ["cam", "imu"]
    assert parser.parse_args(["export", "x", "--output", "y", "--sensors", "cam,imu"]).sensors == [
        "cam",
        "imu",
    ]


def test_messages_print_literally_and_tables_keep_their_columns_in_a_pipe(
    recording: Path,
) -> None:
    missing = run_cli("info", str(recording.with_name("nope [rerun].hfr")))
    assert missing.returncode == 2
    assert "nope [rerun].hfr: no such recording" in missing.stdout
    shown = run_cli("info", str(recording))
    assert shown.returncode == 0
    header = next(line for line in shown.stdout.splitlines() if "sensor" in line and "kind" in line)
    for column in ("frames", "Hz", "dropped", "payload", "clock fit"):
        assert column in header  # one line per row, however narrow COLUMNS says the pipe is
    assert str(recording) in shown.stdout  # brackets and all


def test_quiet_silences_every_command_but_errors(recording: Path, tmp_path: Path) -> None:
    export = run_cli("export", str(recording), "-o", str(tmp_path / "x.mcap"), "-q")
    assert export.returncode == 0
    assert export.stdout.splitlines() == [
        f"wrote 40 of 40 frames read (ros2 -> {tmp_path / 'x.mcap'})"
    ]
    info = run_cli("info", str(recording), "-q")
    assert info.stdout == ""
    bad = run_cli("export", str(tmp_path / "missing.hfr"), "-o", str(tmp_path / "y.mcap"), "-q")
    assert bad.returncode == 2
    assert "error:" in bad.stdout


def test_a_range_that_selects_nothing_says_so(recording: Path, tmp_path: Path) -> None:
    replay = run_cli("replay", str(recording), "-r", "max", "--start-offset", "60")
    assert replay.returncode == 0
    assert "replayed 0 frames" in replay.stdout
    assert "warning: nothing replayed: --start-offset 60 selects no frames" in replay.stdout
    export = run_cli(
        "export", str(recording), "-o", str(tmp_path / "e.mcap"), "--start", "60", "--end", "61"
    )
    assert export.returncode == 1
    assert "warning: nothing exported: --start 60.0 --end 61.0 selects no frames" in export.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_text_has_no_rest_markup(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0  # main returns argparse's exit code
    text = capsys.readouterr().out
    assert "``" not in text
    assert ":func:" not in text
    assert ":class:" not in text


@pytest.mark.parametrize(
    "name", ["robot_localization_test2.bag", "rosbag2_cdr_test_0.mcap", "rosbag2_talker"]
)
def test_info_summarises_a_bag_like_ros2_bag_info(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rosbags.highlevel import AnyReader

    path = BAGS / name
    assert main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    with AnyReader([path]) as reader:  # the independent reference
        expected = {t: (i.msgtype, i.msgcount) for t, i in reader.topics.items()}
        start, end = reader.start_time, reader.end_time
    got = {t["topic"]: (t["type"], t["count"]) for t in doc["topics"]}
    assert got == expected
    assert doc["messages"] == sum(n for _, n in expected.values())
    if doc["messages"]:
        assert doc["start_ns"] == start
        assert doc["end_ns"] <= end
    assert main(["info", str(path)]) == 0
    assert "topics" in capsys.readouterr().out


def test_info_on_the_robot_bag_matches_expected_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(BAGS / "robot_localization_test2.bag"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    counts = {t["topic"]: t["count"] for t in doc["topics"]}
    assert counts == {"/imu/data": 3061, "/jackal_velocity_controller/odom": 3060}
    assert (doc["start_ns"], doc["end_ns"]) == (47_580_000_000, 108_781_000_000)
    assert doc["start_utc"] is None  # the robot's own clock: not a date, not shifted


def test_doctor_reports_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    checks = {(c["area"], c["item"]): c for c in json.loads(capsys.readouterr().out)}
    for package in ("fusion", "adapters", "recordings"):
        assert checks[("package", package)]["status"] == "ok"
    assert checks[("onnxruntime", "CPUExecutionProvider")]["status"] == "ok"
    assert checks[("tool", "ffmpeg")]["status"] == "ok"
    assert checks[("version", "av")]["detail"]


def test_no_nvidia_gpu_is_one_info_line_not_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from fusion.workers import _models as models
    from fusion.workers._sessions import ModelSession, nvidia_gpu_present

    if nvidia_gpu_present():
        pytest.skip("this machine has an NVIDIA GPU: the fallback is not expected")
    with caplog.at_level(logging.INFO, logger="fusion.workers"):
        session = ModelSession(models.sobel_edges(), "auto")
    assert session.providers[0] == "CPUExecutionProvider"
    records = [r for r in caplog.records if "CUDAExecutionProvider" in r.getMessage()]
    assert [r.levelname for r in records] in ([], ["INFO"])
    assert all("no NVIDIA GPU" in r.getMessage() for r in records)


def test_a_second_ctrl_c_cuts_the_drain_short() -> None:
    import os
    import signal

    import anyio

    from hyperframes.cli._common import run_until_signalled

    class Draining:
        stops = 0

        def stop(self) -> None:  # the sources stop; the drain below never ends by itself
            self.stops += 1

    pipeline = Draining()

    async def body() -> None:
        await anyio.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: graceful stop ...
        await anyio.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)  # ... and again: do not wait
        await anyio.sleep(30)

    async def main() -> None:
        with anyio.fail_after(10):
            await run_until_signalled(pipeline, body)  # type: ignore[arg-type]

    with pytest.raises(KeyboardInterrupt):
        anyio.run(main)
    assert pipeline.stops == 1
