"""Options are parsed once, strictly: durations, seconds, sizes and counts refuse inf, NaN and
out-of-range values in one line naming the option and the range; unknown sensors are exit 2
with what the recording has; errors name what they are about."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hyperframes.cli import main
from hyperframes.cli._units import (
    MAX_DURATION_NS,
    MAX_SECONDS,
    MAX_SIZE,
    parse_duration,
    parse_seconds,
    parse_size,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("strict")
    assert main(["record", "--fast", "--duration", "1", "-o", str(folder / "s.hfr"), "-q"]) == 0
    return folder / "s.hfr"


def said(capsys: pytest.CaptureFixture[str]) -> list[str]:
    out = capsys.readouterr()
    return [ln for ln in (out.out + out.err).splitlines() if ln.strip()]


SYNC = ["--reference", "lidar", "--tolerance", "20ms"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--start", "inf", *SYNC], "argument --start: expected seconds from 0 to 1e+09"),
        (["--start", "1e300", *SYNC], "argument --start: expected seconds from 0 to 1e+09"),
        (["--end", "nan", *SYNC], "argument --end: expected seconds from 0 to 1e+09"),
        (["--start", "-1", *SYNC], "found '-1'"),
        (["--reference", "lidar", "--tolerance", "9223372036854775808ns"],
         "--tolerance: expected a duration from 0 to 1000000000 s"),
        (["--reference", "lidar", "--tolerance", "cam=infms"], "--tolerance cam: expected"),
        (["--reference", "lidar", "--tolerance", "20ms", "--window", "imu=1e999s:1ms"],
         "--window imu (before): expected a duration"),
        (["--reference", "nosuch", "--tolerance", "20ms"],
         "--reference: nosuch is not in the recording; it has cam, lidar, imu"),
        (["--reference", "lidar", "--tolerance", "20ms", "--optional", "radar"],
         "--optional: radar is not in the recording; it has cam, lidar, imu"),
        (["--reference", "lidar", "--tolerance", "radar=20ms"],
         "--tolerance: radar is not in the recording"),
    ],
)  # fmt: skip
def test_sync_refuses_each_bad_value_in_one_line(
    session: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(["sync", str(session), *args]) == 2
    lines = said(capsys)
    assert len(lines) == 1, lines
    assert words in lines[0]


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["export", "S", "-o", "x.mcap", "--start", "inf"], "argument --start: expected seconds"),
        (["replay", "S", "--duration", "nan"], "argument --duration: expected seconds"),
        (["replay", "S", "--start-offset", "1e300"], "argument --start-offset: expected"),
        (["record", "--max-size", "inf"], "argument --max-size: expected a size"),
        (["record", "--max-size", "99999999999TiB"], "from 1 B to 1152921504606846976 B"),
        (["record", "--snapshot", "nan"], "argument --snapshot: expected a duration"),
        (["record", "--snapshot-max-size", "-1"], "argument --snapshot-max-size"),
        (["record", "--flush", "0"], "argument --flush: expected seconds more than 0"),
        (["record", "--duration", "inf"], "argument --duration: expected seconds"),
        (["record", "--max-duration", "0"], "argument --max-duration: expected seconds more"),
        (["demo", "--seconds", "inf"], "argument --seconds: expected seconds from 0 to 86400"),
        (["fleet", "run.toml", "--actors", "0"], "argument --actors: expected a whole number"),
    ],
)
def test_every_command_refuses_out_of_range_values_in_one_line(
    session: Path, capsys: pytest.CaptureFixture[str], command: list[str], words: str
) -> None:
    args = [str(session) if a == "S" else a for a in command]
    assert main(args) == 2
    lines = said(capsys)
    assert len(lines) == 1, lines
    assert words in lines[0], lines[0]


def test_the_reported_overflows_end_in_one_line_as_a_user_meets_them(session: Path) -> None:
    for args in (["--start", "inf"], ["--tolerance", "9223372036854775808ns"]):
        done = subprocess.run(
            [sys.executable, "-m", "hyperframes", "sync", str(session), "--reference", "lidar",
             "--tolerance", "20ms", *args],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )  # fmt: skip
        text = done.stdout + done.stderr
        assert done.returncode == 2, text
        assert "OverflowError" not in text
        assert "Traceback" not in text
        assert len(text.strip().splitlines()) == 1, text


# -- the parsers themselves ---------------------------------------------------------------


@given(st.integers(0, MAX_DURATION_NS))
def test_a_duration_in_range_reads_back_exactly(ns: int) -> None:
    assert parse_duration(f"{ns}ns") == ns
    assert parse_duration(f"{ns // 10**9}.{ns % 10**9:09d}s") == ns


@given(st.text(max_size=80))
def test_any_text_is_a_duration_in_range_or_one_value_error(text: str) -> None:
    try:
        ns = parse_duration(text, what="--x")
    except ValueError as err:
        message = str(err)
    else:
        assert 0 <= ns <= MAX_DURATION_NS
        return
    assert message.startswith("--x: expected a duration")


@given(st.one_of(st.floats(), st.text(max_size=40)))
def test_any_value_is_seconds_in_range_or_one_value_error(value: float | str) -> None:
    try:
        s = parse_seconds(value, what="--start")
    except ValueError as err:
        message = str(err)
    else:
        assert math.isfinite(s)
        assert 0 <= s <= MAX_SECONDS
        return
    assert message.startswith("--start: expected seconds from 0 to 1e+09")


@given(st.text(max_size=40))
def test_any_text_is_a_size_in_range_or_one_value_error(text: str) -> None:
    try:
        n = parse_size(text, what="--max-size")
    except ValueError as err:
        message = str(err)
    else:
        assert 1 <= n <= MAX_SIZE
        return
    assert message.startswith("--max-size: expected a size")


def test_sizes_read_as_before() -> None:
    assert parse_size("4GiB") == 4 << 30
    assert parse_size("500MB") == 500 * 10**6
    assert parse_size("1024") == 1024
    assert parse_size("1.5 KiB") == 1536
