"""``hyperframes segments RUN.toml FILE``: a run file's models over a recording or a real
video in parallel segments, with the progress bar of the other long commands in a
terminal, nothing of it in a pipe, the final line once, and the serial pass's items."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from hyperframes.cli._segments import item_json
from hyperframes.fleet._config import load_fleet_config
from hyperframes.segments import RecordingJob, run_serial
from tests.fleet.fleet_helpers import make_recording, write_run_file
from tests.terminal import plain, run_in_terminal, run_piped, screen

pytestmark = pytest.mark.timeout(300)

VIDEO = Path(__file__).resolve().parents[2] / "../shared/data/real/video"
CLIP = VIDEO / "androidx_trim_optimization_failure.mp4"  # H.264 518x488, 167 frames, 5.6 s
FINAL = re.compile(r"^segments: (\d+) (groups|frames) from .* in (\d+) segment tasks", re.M)


def test_a_recording_in_a_terminal_shows_the_bar_and_gives_the_serial_groups(
    tmp_path: Path,
) -> None:
    drive = make_recording(tmp_path / "drive.hfr", 3.0, 7)
    run = write_run_file(tmp_path / "RUN.toml", [drive], tmp_path / "out")
    args = ["segments", str(run), str(drive), "--segment", "0.5", "-o", "groups.jsonl"]
    code, raw = run_in_terminal(*args, cwd=tmp_path)
    assert code == 0, plain(raw)[-2000:]
    # the bar: seconds of the recording passed out of its 3, then gone
    bar = re.compile(r"\d+/(\d+) s\b")
    assert {int(m[1]) for m in bar.finditer(plain(raw))} == {3}, plain(raw)[-2000:]
    shown = screen(raw)
    assert not bar.search(shown)
    assert len(FINAL.findall(shown)) == 1, shown  # the final line, once
    final = FINAL.search(shown)
    assert final is not None
    assert final[2] == "groups"
    assert int(final[3]) >= 6  # 3 s cut every 0.5 s
    # the file holds one serial pass's items, in its order
    job = RecordingJob(load_fleet_config(run), str(drive))
    expected = [item_json(t, keys, results) for t, (keys, results) in run_serial(job)]
    lines = (tmp_path / "groups.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(expected))
    assert int(final[1]) == len(expected) == 30


def test_a_real_video_in_a_pipe_has_no_bar_and_every_frame_once(tmp_path: Path) -> None:
    run = tmp_path / "RUN.toml"
    run.write_text(
        f"[fleet]\nrecordings = ['{CLIP}']\noutput = 'out'\n\n[sync]\npolicy = 'exact'\n\n"
        "[[workers]]\nname = 'edges'\nmodel = 'builtin:sobel_edges'\ninput = 'cam'\n"
        "preprocess = 'image'\nwidth = 16\nheight = 12\n",
        encoding="utf-8",
    )
    # the independent count: ffprobe's packets of the first video stream
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets",
         "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", str(CLIP)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    frames = int(probe.stdout.strip().rstrip(","))
    assert frames == 167
    args = ["segments", str(run), str(CLIP), "--segment", "1", "-o", "frames.jsonl", "-q"]
    piped = run_piped(*args, cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert not re.search(r"\d+/\d+ frames", piped.stdout + piped.stderr)  # no bar in a pipe
    assert len(piped.stdout.splitlines()) == 1  # -q: only the final line, once
    final = FINAL.match(piped.stdout)
    assert final is not None, piped.stdout
    assert (int(final[1]), final[2]) == (frames, "frames")
    assert int(final[3]) >= 4  # 5.6 s cut every second at its key frames
    items = [json.loads(line) for line in (tmp_path / "frames.jsonl").read_text().splitlines()]
    assert [item["keys"] for item in items] == [[["cam", i]] for i in range(frames)]
    assert all(set(item["results"]) == {"edges"} for item in items)
    assert all("value" in item["results"]["edges"] for item in items)


def test_a_file_that_is_not_there_is_one_error_line(tmp_path: Path) -> None:
    run = write_run_file(tmp_path / "RUN.toml", [CLIP], tmp_path / "out")
    piped = run_piped("segments", str(run), str(tmp_path / "missing.hfr"), cwd=tmp_path)
    assert piped.returncode == 2
    assert piped.stdout.strip().startswith("error:")
    assert "missing.hfr" in piped.stdout
