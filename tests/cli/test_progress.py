"""Long commands show a progress bar in a terminal (total, position, rate, ETA), nothing
in a pipe, and print their final line once."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fusion import Frame
from recordings import Recorder
from tests.terminal import plain, run_in_terminal, run_piped, screen

FRAMES = 6_000


@pytest.fixture(scope="module")
def drive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("progress") / "drive.hfr"
    rng = np.random.default_rng(7)
    with Recorder(path, chunk_bytes=64 * 1024, wall_clock=False) as rec:
        for i in range(FRAMES):
            rec.write(Frame("imu", i, i * 5_000_000, rng.standard_normal(6)))
            if i % 10 == 0:
                rec.write(Frame("lidar", i // 10, i * 5_000_000, rng.standard_normal(3000)))
    return path


@pytest.mark.parametrize(
    ("command", "unit", "final"),
    [
        (["info", "--scan"], "frames", "sensors"),  # a 1.6 footer needs no frame pass
        (["check"], "chunks", "ok:"),
        (["sync", "--policy", "nearest", "--reference", "lidar", "--tolerance", "20ms"],
         "chunks", "groups"),
        (["export", "-o", "out.mcap"], "frames", "exported"),
        (["replay", "--rate", "max"], "frames", "replayed"),
    ],
)  # fmt: skip
def test_a_terminal_sees_the_bar_a_pipe_does_not(
    drive: Path, tmp_path: Path, command: list[str], unit: str, final: str
) -> None:
    args = [command[0], str(drive), *command[1:]]
    code, raw = run_in_terminal(*args, cwd=tmp_path)
    assert code == 0, raw.decode(errors="replace")[-2000:]
    text = plain(raw)
    # The bar was drawn: a position out of the total, in its unit.
    bar = re.compile(rf"\d+/(\d+) {unit}")
    totals = {int(m.group(1)) for m in bar.finditer(text)}
    assert totals, text[-2000:]
    shown = screen(raw)
    assert final in shown
    assert not bar.search(shown)  # transient: the final screen holds the result only
    if command[0] == "replay":
        assert shown.count("replayed") == 1  # the final line, once
    piped = run_piped(*args, cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert not bar.search(piped.stdout + piped.stderr)
