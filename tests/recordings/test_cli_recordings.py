"""``hyperframes record | info | check [--repair] | replay`` end to end, in process."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fusion.cli import check, info, record, replay
from recordings import open_recording


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="hyperframes")
    sub = parser.add_subparsers()
    for module in (record, info, check, replay):
        module.register(sub)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "synthetic.hfr"
    assert cli("record", str(path), "--duration", "2", "--fast", "--chunk-mb", "0.2") == 0
    return path


def test_record_writes_the_synthetic_session(recorded: Path) -> None:
    with open_recording(recorded) as log:
        s = log.summary()
    assert {n: x.count for n, x in s.sensors.items()} == {"cam": 60, "lidar": 20, "imu": 400}
    assert s.metadata["source"] == "synthetic"
    assert s.chunks > 1


def test_info_prints_the_summary(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("info", str(recorded)) == 0
    out = capsys.readouterr().out
    assert "footer index" in out
    assert "imu" in out
    assert "400" in out


def test_check_passes_a_good_file(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("check", str(recorded)) == 0
    assert "every CRC checks out" in capsys.readouterr().out


def test_check_fails_a_damaged_file_and_repair_salvages_the_rest(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recording(recorded) as log:
        victim = log.chunks[1]
        total = log.summary().count
    bad = tmp_path / "bad.hfr"
    data = bytearray(recorded.read_bytes())
    data[victim.offset + 300] ^= 0xFF
    bad.write_bytes(bytes(data))
    out_path = tmp_path / "fixed.hfr"
    assert cli("check", str(bad), "--repair", str(out_path)) == 1
    out = capsys.readouterr().out
    assert f"byte {victim.offset}" in out
    assert f"wrote {total - victim.count} frames" in out
    assert cli("check", str(out_path)) == 0
    with open_recording(out_path) as log:
        assert log.summary().count == total - victim.count


def test_replay_runs_fast_with_a_selection(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recording(recorded) as log:
        t0 = log.summary().t_start or 0
        n = len(list(log.frames(sensors=["lidar", "cam"], start=t0, end=t0 + 10**9)))
    assert cli("replay", str(recorded), "--fast", "--sensors", "lidar,cam", "--end", "1") == 0
    out = capsys.readouterr().out
    assert f"replayed {n} frames" in out


def test_info_on_a_foreign_file_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "nope.hfr"
    path.write_bytes(b"hello world, not a recording")
    assert cli("info", str(path)) == 2
