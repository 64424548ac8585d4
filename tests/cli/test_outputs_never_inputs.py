"""No command writes over its input: every ``-o`` (and ``--metrics``) that is the input,
a symlink to it or a hard link to it is refused (exit 2, one line naming both paths) and
the input hashes the same after; a command killed mid-write leaves the old file and no
half-written file under the final name. Journeys: the CLI as a subprocess."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hyperframes.cli import main
from recordings import open_recording

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


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording (cam, lidar, imu) made by ``record``."""
    folder = tmp_path_factory.mktemp("base")
    done = cli("record", "--fast", "--duration", "1", "-o", "s.hfr", "-q", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "s.hfr"


@pytest.fixture(scope="module")
def damaged(base: Path) -> Path:
    """``base`` with bytes of its first chunk's payload flipped (for ``check --repair``)."""
    with open_recording(base) as log:
        chunk = log.chunks[0]
    data = bytearray(base.read_bytes())
    middle = chunk.offset + chunk.stored_size // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    path = base.with_name("damaged.hfr")
    path.write_bytes(bytes(data))
    return path


# (name, input fixture, output suffix, the command with IN and OUT placeholders)
COMMANDS: list[tuple[str, str, str, list[str]]] = [
    ("sync .hfr", "base", ".hfr", ["sync", "IN", "--reference", "lidar", "--tolerance", "20ms"]),
    ("sync .parquet", "base", ".parquet", ["sync", "IN", "--reference", "lidar",
                                           "--tolerance", "20ms"]),
    ("export mcap", "base", ".mcap", ["export", "IN"]),
    ("export bag", "base", "", ["export", "IN"]),
    ("export mp4", "base", ".mp4", ["export", "IN", "--to", "mp4", "--sensors", "cam"]),
    ("export pcd", "base", "", ["export", "IN", "--to", "pcd", "--sensors", "lidar"]),
    ("export rerun", "base", ".rrd", ["export", "IN", "--view", "rerun"]),
    ("check --repair", "damaged", ".hfr", ["check", "IN", "--repair"]),
    ("record", "base", ".hfr", ["record", "CONFIG", "--fast"]),
    ("record --max-size", "base", ".hfr", ["record", "CONFIG", "--fast", "--max-size", "1MB"]),
    ("replay --metrics", "base", ".prom", ["replay", "IN", "--metrics", "OUT"]),
]  # fmt: skip

REPLAY_CONFIG = """
[[sources]]
type = "replay"
name = "rep"
path = "{path}"

[sync]
policy = "approximate"
"""


def prepare(tmp: Path, source: Path, suffix: str, how: str) -> tuple[Path, Path]:
    """The input copied into ``tmp`` and the output path: the input, a symlink or a hard link."""
    given = tmp / source.name
    given.write_bytes(source.read_bytes())
    if how == "same":
        return given, given
    out = tmp / f"alias{suffix}"
    if how == "symlink":
        out.symlink_to(given.name)
    else:
        os.link(given, out)
    return given, out


def refused(
    tmp: Path, source: Path, suffix: str, how: str, command: list[str], *, journey: bool
) -> None:
    """Run ``command`` with its output aliasing the input; assert the refusal and no change."""
    given, out = prepare(tmp, source, suffix, how)
    config = tmp / "replay.toml"
    config.write_text(REPLAY_CONFIG.format(path=given.name))
    before = sha(given)
    listing = sorted(p.name for p in tmp.iterdir())
    args = [{"IN": given.name, "OUT": out.name, "CONFIG": config.name}.get(a, a) for a in command]
    if "OUT" not in command:
        args += ["-o", out.name]
    if journey:
        done = cli(*args, cwd=tmp)
        code, text = done.returncode, done.stdout + done.stderr
    else:
        code, text = in_process(args, tmp)
    assert code == 2, text
    assert "Traceback" not in text
    line = next(ln for ln in text.splitlines() if "nothing was written" in ln)
    assert f"'{out.name}'" in line, line
    assert f"'{given.name}'" in line, line
    assert sha(given) == before  # not one byte changed
    assert sorted(p.name for p in tmp.iterdir()) == listing  # and nothing left beside it


def in_process(args: list[str], cwd: Path) -> tuple[int, str]:
    """``hyperframes ARGS`` run by its entry point in this process (the matrix is large)."""
    out = io.StringIO()
    here = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(args)
    finally:
        os.chdir(here)
    return code, out.getvalue()


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize(("name", "fixture", "suffix", "command"), COMMANDS, ids=lambda v: v)
def test_an_output_that_is_the_input_is_refused_and_the_input_is_untouched(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    how: str,
    name: str,
    fixture: str,
    suffix: str,
    command: list[str],
) -> None:
    refused(tmp_path, request.getfixturevalue(fixture), suffix, how, command, journey=False)


@pytest.mark.parametrize(
    ("how", "suffix", "command"),
    [
        ("same", ".hfr", ["sync", "IN", "--reference", "lidar", "--tolerance", "20ms"]),
        ("symlink", ".hfr", ["record", "CONFIG", "--fast"]),
        ("hardlink", ".mcap", ["export", "IN"]),
    ],
    ids=["sync-same", "record-symlink", "export-hardlink"],
)
def test_the_refusal_as_a_user_meets_it(
    base: Path, tmp_path: Path, how: str, suffix: str, command: list[str]
) -> None:
    refused(tmp_path, base, suffix, how, command, journey=True)


SEGMENTS_RUN = """
[sync]
policy = "nearest"
reference = "lidar"
tolerance_ms = 20
"""


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_segments_refuses_an_output_that_is_its_recording(
    base: Path, tmp_path: Path, how: str
) -> None:
    given, out = prepare(tmp_path, base, ".hfr", how)
    run = tmp_path / "run.toml"
    run.write_text(SEGMENTS_RUN)
    before = sha(given)
    listing = sorted(p.name for p in tmp_path.iterdir())
    code, text = in_process(["segments", run.name, given.name, "-o", out.name], tmp_path)
    assert code == 2, text
    assert "Traceback" not in text
    assert "nothing was written" in text, text
    assert sha(given) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing


def test_fleet_never_writes_a_results_file_over_a_recording(base: Path, tmp_path: Path) -> None:
    first = tmp_path / "a.hfr"
    first.write_bytes(base.read_bytes())
    os.link(first, tmp_path / "a.results.hfr")  # what a's results file would be called
    before = sha(first)
    run = tmp_path / "run.toml"
    run.write_text(
        f'[fleet]\nrecordings = ["{first}"]\noutput = "{tmp_path}"\n\n'
        '[sync]\npolicy = "nearest"\nreference = "lidar"\ntolerance_ms = 20\n\n'
        '[[workers]]\nname = "edges"\nmodel = "builtin:sobel_edges"\ninput = "cam"\n'
        'preprocess = "image"\nheight = 12\nwidth = 16\n'
    )
    done = cli("fleet", str(run), "--local", cwd=tmp_path)
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert "a.results.hfr' is a hard link to the input" in text, text
    assert sha(first) == before


def wait_for(predicate: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def test_a_killed_export_leaves_the_old_file_and_no_half_file(base: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.mcap"
    out.write_bytes(b"the previous export\n")
    child = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "export", str(base), "-o", str(out), "-q"],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        staging = lambda: [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]  # noqa: E731
        wait_for(lambda: bool(staging()) or child.poll() is not None)
        child.send_signal(signal.SIGKILL)  # mid-write: the staging folder exists
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL, "the export finished before the kill"
    assert out.read_bytes() == b"the previous export\n"
    leftovers = [p.name for p in tmp_path.iterdir() if p != out]
    # The staging folder, and the lock file the kernel released at the kill (the next
    # export takes it and removes it).
    assert all(
        n == ".s.mcap.lock" or (n.startswith(".s.mcap.") and n.endswith(".partial"))
        for n in leftovers
    ), leftovers


def test_a_killed_record_leaves_the_old_file_and_a_readable_partial(tmp_path: Path) -> None:
    out = tmp_path / "s.hfr"
    out.write_bytes(b"yesterday's session\n")
    child = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record", "--duration", "60", "-o", str(out), "-q"],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    partial = tmp_path / "s.hfr.partial"

    def a_whole_chunk_is_written() -> bool:  # a kill inside the first writev leaves none
        if not partial.exists() or partial.stat().st_size <= 4096:
            return False
        with open_recording(partial) as log:
            return log.summary().count > 0

    try:
        wait_for(a_whole_chunk_is_written)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert out.read_bytes() == b"yesterday's session\n"  # the final name never half written
    with open_recording(partial) as log:  # what was recorded is kept, readable
        assert log.summary().count > 0
    repaired = cli("check", str(partial), "--repair", "-o", str(tmp_path / "r.hfr"), cwd=tmp_path)
    assert "repaired: wrote" in repaired.stdout, repaired.stdout + repaired.stderr


def test_a_finished_record_replaces_the_old_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "s.hfr"
    out.write_bytes(b"old")
    done = cli("record", "--fast", "--duration", "1", "-o", str(out), "--max-size", "100KB",
               "-q", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    parts = sorted(p.name for p in tmp_path.iterdir())
    assert not any(n.endswith(".partial") for n in parts), parts
    assert len([n for n in parts if n.startswith("s.0")]) >= 2, parts  # split, each renamed
    assert out.read_bytes() == b"old"  # split parts have their own names
    for name in parts:
        if name.startswith("s.0"):
            with open_recording(tmp_path / name) as log:
                assert log.indexed


def test_the_demo_report_never_replaces_the_kept_recording(tmp_path: Path) -> None:
    kept = tmp_path / "k.hfr"
    kept.write_bytes(b"a kept session")
    code, text = in_process(["demo", "--keep", "k.hfr", "--report", "k.hfr"], tmp_path)
    assert code == 2, text
    assert "output 'k.hfr' is the input 'k.hfr'" in text
    assert kept.read_bytes() == b"a kept session"


@pytest.mark.parametrize("key", ["path", "database"])
def test_record_never_writes_over_a_side_input_a_source_names(tmp_path: Path, key: str) -> None:
    """Every key that names a file a source reads (a CAN log and its DBC here; also an OSF,
    Ouster metadata, a calibration, a timestamps file) is an input ``-o`` may not be."""
    data = Path(__file__).resolve().parents[1] / "data" / "can"
    log, dbc = tmp_path / "drive.log", tmp_path / "vehicle.dbc"
    shutil.copy(data / "candump_cantools_logreader.log", log)
    shutil.copy(data / "vehicle.dbc", dbc)
    (tmp_path / "can.toml").write_text(
        f'[[sources]]\ntype = "can"\nname = "bus"\npath = "{log.name}"\ndatabase = "{dbc.name}"\n'
    )
    target = {"path": log, "database": dbc}[key]
    before = sha(target)
    code, text = in_process(["record", "can.toml", "--fast", "-o", target.name], tmp_path)
    assert code == 2, text
    line = next(ln for ln in text.splitlines() if "nothing was written" in ln)
    assert f"'{target.name}'" in line
    assert sha(target) == before
