"""Two commands cannot write one output (issue 35): the second is refused with one line
naming the output and the pid that holds it, and the first one's output is whole.
Journeys: the CLI as subprocesses, two ``record -o same.hfr`` at once; every other
command that writes an output (export, sync -o, check --repair, segments) against a
lock held by another process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recordings import open_recording
from recordings.output_files import OutputInUse, lock_output, lock_path, safe_output

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def one_refusal(proc: subprocess.CompletedProcess[str], output: str, pid: int) -> None:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if "is being written by" in ln]
    assert len(lines) == 1, text
    assert f"output '{output}'" in lines[0], text
    assert f"process {pid}" in lines[0], text


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("base")
    done = cli("record", "--fast", "--duration", "1", "-o", "s.hfr", "-q", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "s.hfr"


@pytest.fixture(scope="module")
def damaged(base: Path) -> Path:
    """``base`` with bytes of its first chunk's payload flipped (``check --repair`` writes)."""
    with open_recording(base) as log:
        chunk = log.chunks[0]
    data = bytearray(base.read_bytes())
    middle = chunk.offset + chunk.stored_size // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    path = base.with_name("damaged.hfr")
    path.write_bytes(bytes(data))
    return path


def test_a_second_record_to_the_same_output_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "same.hfr"
    first = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record", "--duration", "60", "-o", str(out), "-q"],
        env=ENV,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    partial = tmp_path / "same.hfr.partial"
    try:
        wait_for(lambda: partial.exists() and partial.stat().st_size > 4096)
        second = cli("record", "--duration", "1", "-o", str(out), "-q", cwd=tmp_path)
        one_refusal(second, str(out), first.pid)
        assert partial.exists()  # the first one's partial is neither moved nor truncated
        assert not (tmp_path / "same.hfr.partial.1").exists()
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    with open_recording(out) as log:  # the first run's file, whole and indexed
        assert log.indexed
        assert log.summary().count > 0
    assert not lock_path(out).exists()  # released and removed at the end
    again = cli("record", "--fast", "--duration", "1", "-o", str(out), "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr


HOLDER = """
import sys, time
from recordings.output_files import lock_output
lock = lock_output(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder() -> Iterator[Callable[[Path], subprocess.Popen[str]]]:
    """Another process holding an output's lock until the test ends."""
    started: list[subprocess.Popen[str]] = []

    def hold(path: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield hold
    for proc in started:
        proc.kill()
        proc.communicate(timeout=30)  # and its pipes closed


COMMANDS = {  # name -> (output, argv)
    "export": ("out.mcap", ("export", "{base}", "-o", "{out}")),
    "export --to pcd": ("pcd", ("export", "{base}", "--to", "pcd", "-o", "{out}")),
    "sync -o": ("g.hfr", ("sync", "{base}", "--reference", "lidar", "--tolerance", "20ms",
                          "-o", "{out}")),
    "check --repair": ("r.hfr", ("check", "{damaged}", "--repair", "-o", "{out}")),
}  # fmt: skip


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_that_writes_an_output_is_refused_while_another_writes_it(
    base: Path,
    damaged: Path,
    tmp_path: Path,
    holder: Callable[[Path], subprocess.Popen[str]],
    name: str,
) -> None:
    output, command = COMMANDS[name]
    out = tmp_path / output
    proc = holder(out)
    argv = (a.format(base=base, damaged=damaged, out=out) for a in command)
    refused = cli(*argv, cwd=tmp_path)
    one_refusal(refused, str(out), proc.pid)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_a_symlink_to_the_output_is_the_same_output(tmp_path: Path) -> None:
    (tmp_path / "link.mcap").symlink_to("real.mcap")
    with lock_output(tmp_path / "real.mcap"):
        with pytest.raises(OutputInUse, match=f"process {os.getpid()}"):
            lock_output(tmp_path / "link.mcap")
        with pytest.raises(OutputInUse), safe_output(tmp_path / "link.mcap"):
            pass
    with lock_output(tmp_path / "link.mcap") as lock:  # released: free again
        assert lock.held
    assert not lock_path(tmp_path / "real.mcap").exists()


def test_a_lock_left_by_a_killed_holder_is_taken(
    tmp_path: Path, holder: Callable[[Path], subprocess.Popen[str]]
) -> None:
    out = tmp_path / "s.mcap"
    proc = holder(out)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert lock_path(out).exists()  # the file stays; the kernel released the lock
    with safe_output(out) as staged:
        staged.write_bytes(b"x")
    assert out.read_bytes() == b"x"
    assert not lock_path(out).exists()


def test_library_writers_take_the_same_lock(tmp_path: Path) -> None:
    """A Recorder and a SnapshotRecorder of an output another writer holds are refused
    before they write; once it is released they write."""
    from recordings import Recorder
    from recordings.hfr._snapshot import SnapshotRecorder

    out = tmp_path / "s.hfr"
    with Recorder(out):
        with pytest.raises(OutputInUse, match=f"output '{out}' is being written by process"):
            Recorder(out)
        with pytest.raises(OutputInUse):
            SnapshotRecorder(out, keep=1.0)
    assert not (tmp_path / "s.hfr.partial.1").exists()  # the first one's partial untouched
    snap = SnapshotRecorder(out, keep=1.0)
    with pytest.raises(OutputInUse):
        Recorder(out)
    snap.close()
    with Recorder(out):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.hfr"]
