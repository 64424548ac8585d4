"""A write that fails (a full disk) ends the command non-zero, naming the file.

The limit is real: the child runs under ``RLIMIT_FSIZE`` with ``SIGXFSZ``
ignored, so every write past 64 KiB fails with ``EFBIG`` ("File too large"),
as a full disk fails with ``ENOSPC``.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from recordings import open_recording

REPO = Path(__file__).resolve().parents[2]
LIMIT = 64 * 1024
RECORDED = re.compile(r"^hyperframes_recorder_frames_total (\d+)", re.M)


def limited() -> None:  # runs in the child, before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def start(*args: str, cwd: Path, limit: bool = True) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limited if limit else None,
    )


def test_record_on_a_full_disk_fails_and_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "full.hfr"
    child = start("record", "--fast", "--duration", "3", "-o", str(out), cwd=tmp_path)
    text, _ = child.communicate(timeout=120)
    assert child.returncode == 2, text  # the command could not do its job
    last = [ln for ln in text.splitlines() if ln.startswith("hyperframes record: error:")]
    assert last, text
    assert str(out) in last[0]
    assert "File too large" in last[0]
    assert "Traceback" not in text


def snapshot_run(tmp_path: Path, *, limit: bool) -> tuple[int, str]:
    out = tmp_path / "bb.hfr"
    metrics = tmp_path / "m.prom"
    child = start(
        "record", "-o", str(out), "--snapshot", "1s", "--snapshot-after", "200ms",
        "--duration", "4", "--metrics", str(metrics), cwd=tmp_path, limit=limit,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            m = RECORDED.search(metrics.read_text()) if metrics.exists() else None
            if m and int(m.group(1)) >= 400:
                break
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGUSR1)
        text, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=10)
    return child.returncode, text


def test_a_snapshot_that_cannot_be_written_fails_the_run(tmp_path: Path) -> None:
    code, text = snapshot_run(tmp_path, limit=True)
    assert code == 1, text
    assert f"snapshot {tmp_path / 'bb.0000.hfr'} was not written" in text
    assert "File too large" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.prom"]  # no .partial left


def test_a_snapshot_is_dated_like_every_recording(tmp_path: Path) -> None:
    code, text = snapshot_run(tmp_path, limit=False)
    assert code == 0, text
    with open_recording(tmp_path / "bb.0000.hfr") as log:
        summary = log.summary()
        assert log.wall_clock is not None
        assert all(c.wall is not None for c in log.chunks)
    assert summary.utc_start is not None
    assert abs(summary.utc_start - time.time_ns()) < 60 * 1_000_000_000


def test_record_over_an_interrupted_runs_partial_keeps_it_and_says_how_to_salvage_it(
    tmp_path: Path,
) -> None:
    from fusion import Frame
    from recordings import Recorder

    whole = tmp_path / "whole.hfr"
    with Recorder(whole, chunk_duration=0.01) as rec:
        for i in range(50):
            rec.write(Frame("cam", i, i * 1_000_000, b"x" * 100))
    cut = whole.read_bytes()[:-300]  # what SIGKILL leaves: the footer never written
    stale = tmp_path / "s.hfr.partial"
    stale.write_bytes(cut)
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "400"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hyperframes", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )

    proc = cli("record", "--fast", "--duration", "0.3", "-o", "s.hfr")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notes = [line for line in proc.stdout.splitlines() if "interrupted run" in line]
    assert notes == [
        "note: s.hfr.partial is left from an interrupted run; kept as s.hfr.partial.1: "
        "'hyperframes check --repair s.hfr.partial.1' salvages it"
    ]
    assert (tmp_path / "s.hfr.partial.1").read_bytes() == cut
    assert not stale.exists()
    with open_recording(tmp_path / "s.hfr") as log:
        assert log.indexed
    fixed = cli("check", "--repair", "s.hfr.partial.1", "-o", "fixed.hfr")  # as the note says
    assert fixed.returncode == 1, fixed.stdout
    with open_recording(tmp_path / "fixed.hfr") as log:
        assert 0 < log.summary().count <= 50
