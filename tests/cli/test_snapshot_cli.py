"""``hyperframes record --snapshot``: a real process, triggered with SIGUSR1."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from hyperframes.cli import main
from recordings import open_recording

S = 1_000_000_000
RECORDED = re.compile(r"^hyperframes_recorder_frames_total (\d+)", re.M)


def recorded(metrics: Path) -> int:
    """Frames the recorder has taken so far, from the live metrics file (0 before it)."""
    try:
        m = RECORDED.search(metrics.read_text())
    except FileNotFoundError:
        return 0
    return int(m.group(1)) if m else 0


def test_record_snapshot_writes_the_last_seconds_on_sigusr1(tmp_path: Path) -> None:
    out = tmp_path / "bb.hfr"
    metrics = tmp_path / "m.prom"
    child = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record", "-o", str(out), "--snapshot", "1s",
         "--snapshot-after", "200ms", "--duration", "4", "--metrics", str(metrics), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # More than 1.2 s of frames (240 a second) in the ring before the trigger.
        while recorded(metrics) < 400 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recorded(metrics) >= 400, child.communicate(timeout=30)
        os.kill(child.pid, signal.SIGUSR1)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=10)
    assert child.returncode == 0, stderr
    snap = tmp_path / "bb.0000.hfr"
    assert f"to {snap}" in stdout
    assert not out.exists()  # nothing but the snapshot is written
    with open_recording(snap) as log:
        assert log.indexed
        assert log.verify() == []
        meta = log.metadata["snapshot"]
        frames = list(log.frames())
    assert meta["reasons"] == ["signal SIGUSR1"]
    assert {f.sensor for f in frames} == {"cam", "lidar", "imu"}
    assert meta["end"] - meta["start"] == 1_200_000_000
    assert all(meta["start"] <= f.t <= meta["end"] for f in frames)
    assert max(f.t for f in frames) - min(f.t for f in frames) > 0.9 * S


def test_record_snapshot_refuses_file_splitting(capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["record", "--snapshot", "5s", "--max-duration", "3", "-o", "x.hfr", "--fast"])
    assert code == 2
    assert "--snapshot writes whole snapshots" in capsys.readouterr().out


def test_record_snapshot_writes_on_the_s_key_in_a_terminal(tmp_path: Path) -> None:
    """In a pseudo-terminal, the 's' key takes a snapshot (the keyboard thread's trigger)."""
    import pty
    import select

    out = tmp_path / "key.hfr"
    metrics = tmp_path / "m.prom"
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record", "-o", str(out), "--snapshot", "1s",
         "--duration", "4", "--metrics", str(metrics)],
        stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "TERM": "xterm"},
    )  # fmt: skip
    os.close(slave)
    screen = b""
    pressed = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal (EIO)
                    break
                if not chunk:
                    break
                screen += chunk
            if not pressed and recorded(metrics) >= 400:
                os.write(master, b"s")  # the pipeline runs, the key thread reads
                pressed = True
            if child.poll() is not None and not ready:
                break
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        os.close(master)
    text = screen.decode(errors="replace")
    assert pressed, text[-2000:]
    assert child.returncode == 0, text[-2000:]
    snap = tmp_path / "key.0000.hfr"
    assert not out.exists()
    with open_recording(snap) as log:
        assert log.verify() == []
        meta = log.metadata["snapshot"]
        frames = list(log.frames())
    assert meta["reasons"] == ["key"]
    assert meta["end"] - meta["start"] == S  # 1 s before the key, nothing after
    assert {f.sensor for f in frames} == {"cam", "lidar", "imu"}
    assert all(meta["start"] <= f.t <= meta["end"] for f in frames)
