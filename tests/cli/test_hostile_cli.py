"""The CLI on hostile recordings, as a user runs it (a subprocess): literal text, safe
paths, one clear line and an exit code on failure, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fusion._frames import Frame, SensorSpec
from hyperframes.cli._common import printable
from recordings import Recorder
from recordings.outputs.files._names import inside, safe_filename
from tests.recordings.hostile import Chunk, good_chunks, recording

REPO = Path(__file__).resolve().parents[2]

HOSTILE_NAMES = [
    "../../escaped",
    "..",
    ".",
    "/etc/passwd-x",
    "C:\\Windows\\x",
    "a\\..\\..\\b",
    "nul\x00byte",
    "NUL",
    "con.txt",
    "Com1",
    "lpt9.pcd",
    "",
    "[/x]",
    "[bold red]boom",
    "\x1b]0;pwned\x07\x1b[31mred",
    "trailing.",
    "%2F",
    "é/ü",
    "x" * 400,
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def assert_clean(proc: subprocess.CompletedProcess[str]) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    assert "\x1b]" not in out
    assert "\x07" not in out
    assert "\x00" not in out


# -- names that become paths -----------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_safe_filename_is_one_component_inside_the_folder(tmp_path: Path, name: str) -> None:
    safe = safe_filename(name)
    assert safe not in ("", ".", "..")
    assert not set(safe) & set('/\\\x00:*?"<>|')
    assert len(safe.encode()) <= 160
    assert not safe.endswith((".", " "))
    assert safe.split(".")[0].lower() not in {"con", "prn", "aux", "nul", "com1", "lpt9"}
    assert inside(tmp_path, safe).parent == tmp_path.resolve()


def test_safe_filenames_of_different_names_differ() -> None:
    names = [*HOSTILE_NAMES, "%", "_", "a/b", "a%2Fb", "NUL.x", "%4EUL"]
    assert len({safe_filename(n) for n in names}) == len(set(names))


def test_inside_refuses_a_component_that_leaves_the_folder(tmp_path: Path) -> None:
    for bad in ("../x", "/abs", "a/b", ".."):
        with pytest.raises(ValueError, match="not a file inside"):
            inside(tmp_path, bad)


POINTS = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4")])


@pytest.fixture(scope="module")
def hostile_names_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("names") / "names.hfr"
    names = [n for n in HOSTILE_NAMES if n]  # a SensorSpec needs a name
    specs = [SensorSpec(n, kind="lidar") for n in names]
    with Recorder(
        path, sensors=specs, metadata={"note": "[/x]", "esc": "\x1b[2J\x1b]0;t\x07"}
    ) as rec:
        for seq in range(2):
            for i, n in enumerate(names):
                rec.write(Frame(n, seq, (seq * len(names) + i) * 1000, np.zeros(3, POINTS)))
    return path


def test_export_to_pcd_writes_only_inside_the_output_folder(
    hostile_names_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "deep" / "out"
    proc = cli("export", str(hostile_names_file), "-o", str(out), "--to", "pcd", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert len(written) == 2 * (len(HOSTILE_NAMES) - 1)
    assert all(p.parent == out for p in written)
    assert not (tmp_path / "escaped-000000-0.pcd").exists()


@pytest.mark.parametrize(
    "command",
    [["info"], ["info", "--quick"], ["info", "--json"], ["check"], ["replay", "--fast"]],
    ids=lambda c: " ".join(c),
)
def test_names_and_metadata_from_a_file_print_literally(
    hostile_names_file: Path, tmp_path: Path, command: list[str]
) -> None:
    proc = cli(*command, str(hostile_names_file), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_clean(proc)
    assert "\x1b[31m" not in proc.stdout
    if command[0] == "replay":
        assert "[bold red]boom" in proc.stdout
    if command[0] == "info" and "--json" not in command:
        assert "[/x]" in proc.stdout
        assert printable("\x1b]0;pwned") in proc.stdout


def test_printable_escapes_every_control_character() -> None:
    text = "ok\x1b[31m\x9b2J\u202etxt\n\x00"
    assert printable(text) == "ok\\x1b[31m\\x9b2J\\u202etxt\\x0a\\x00"


def test_record_metadata_with_markup_is_written_and_printed(tmp_path: Path) -> None:
    out = tmp_path / "m.hfr"
    proc = cli(
        "record",
        "-o",
        str(out),
        "--fast",
        "--duration",
        "0.5",
        "--metadata",
        "note=[/x]",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert "[/x]" in proc.stdout


# -- hostile recordings: one line, an exit code ----------------------------


def hostile_files(tmp_path: Path) -> dict[str, Path]:
    n = 2_000_000
    bomb = b"\xdd" + n.to_bytes(4, "big") + b"\x97\x00\x00\x00\xc0\xc0\xc0\xc0" * n
    bad = good_chunks(3)
    bad[1].records[0][2] = "abc"
    dup = good_chunks(2)
    for r in dup[1].records:
        r[1] -= 3
    return {
        "count-bomb": recording(
            tmp_path / "bomb.hfr", [*good_chunks(1), Chunk(head=bomb, overrides={"n": n, "c": [n]})]
        ),
        "trailer-2**63": recording(tmp_path / "t.hfr", good_chunks(2), trailer_offset=1 << 63),
        "index-3x": recording(tmp_path / "i.hfr", good_chunks(2), index_entries=None),
        "negative-offset": recording(
            tmp_path / "n.hfr", good_chunks(2), index_entries=[{"off": -1, "len": 3}]
        ),
        "t-as-string": recording(tmp_path / "f.hfr", bad),
        "duplicate-seq": recording(tmp_path / "d.hfr", dup),
    }


def test_hostile_recordings_never_end_in_a_traceback(tmp_path: Path) -> None:
    files = hostile_files(tmp_path)
    for name, path in files.items():
        for command in (["info"], ["info", "--quick"], ["check"], ["replay", "--fast"]):
            proc = cli(*command, str(path), cwd=tmp_path)
            assert_clean(proc)
            assert proc.returncode in (0, 1, 2), (name, command, proc.stderr)
            if command == ["check"] and name != "index-3x":
                assert proc.returncode == 1, (name, proc.stdout)
                assert "damaged:" in proc.stdout


def test_forged_chunk_counts_are_never_printed_as_a_total(tmp_path: Path) -> None:
    forged = [
        Chunk(c.records, index=c.index, overrides={"n": 1 << 62, "c": [1 << 62]})
        for c in good_chunks(6)[2:]
    ]
    path = recording(tmp_path / "forged.hfr", [*good_chunks(2), *forged])
    check = cli("check", str(path), cwd=tmp_path)
    info = cli("info", str(path), cwd=tmp_path)
    for proc in (check, info):
        assert_clean(proc)
        assert str(1 << 64) not in proc.stdout
        assert str((1 << 62) + 6) not in proc.stdout
        assert "not counting chunks 2, 3, 4 and 1 more" in proc.stdout, proc.stdout
        assert "a damaged count" in proc.stdout
    assert check.returncode == 1
    assert "6 frames (not counting chunks" in check.stdout
    doc = json.loads(cli("info", "--json", str(path), cwd=tmp_path).stdout)
    assert doc["frames"] == 6
    assert doc["overcounted_chunks"] == [2, 3, 4, 5]


def test_replay_says_each_distinct_message_once_and_bounds_them(tmp_path: Path) -> None:
    forged = [
        Chunk(c.records, index=c.index, overrides={"n": 1 << 62, "c": [1 << 62]})
        for c in good_chunks(7)[2:]
    ]
    path = recording(tmp_path / "forged.hfr", [*good_chunks(2), *forged])
    proc = cli("replay", "--fast", str(path), cwd=tmp_path)
    assert_clean(proc)
    assert proc.returncode == 1
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 4, proc.stdout
    for line, index in zip(skipped, (2, 3, 4), strict=False):
        assert line.startswith(f"skipped 1 (damaged): {path}"), line
        assert f"chunk {index} (" in line
    assert skipped[-1] == "skipped 2 more (damaged) with other messages"


def test_replay_of_a_bag_says_an_unreadable_topic_once(tmp_path: Path) -> None:
    bag = REPO / "tests" / "data" / "hostile" / "bag_recursive.mcap"
    proc = cli("replay", "--fast", str(bag), cwd=tmp_path)
    assert_clean(proc)
    assert proc.returncode == 1
    assert " ".join(proc.stdout.split()).count("its type is recursive") == 1, proc.stdout
    assert "lost: evil: lost 10 of 10 messages (unsupported_type 10)" in proc.stdout


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    proc = cli("check", str(tmp_path / "nope.hfr"), cwd=tmp_path)
    assert proc.returncode == 2
    assert_clean(proc)
    assert len((proc.stdout + proc.stderr).strip().splitlines()) == 1


# -- runtime failures: one line, the traceback only with -v -----------------

CONFIG = REPO / "examples" / "configs" / "synthetic.toml"


def test_a_duration_that_does_not_fit_in_int64_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.read_text().replace("max_latency_ms = 200 ", "max_latency_ms = 1e308"))
    proc = cli("record", str(config), "-o", str(tmp_path / "x.hfr"), "--fast", cwd=tmp_path)
    assert proc.returncode == 2
    assert_clean(proc)
    assert "max_latency_ms = 1e+308 is not a finite duration" in proc.stdout + proc.stderr


def test_a_missing_model_is_one_line_and_the_traceback_needs_verbose(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    missing = tmp_path / "nope.onnx"
    config.write_text(
        CONFIG.read_text() + f'\n[[workers]]\nname = "m"\nmodel = "{missing}"\ninput = "cam"\n'
    )
    args = ["record", str(config), "-o", str(tmp_path / "x.hfr"), "--fast", "--duration", "1"]
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert_clean(proc)
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("WARNING")]
    assert lines == [
        f"hyperframes record: error: cannot read model file '{missing}': No such file or directory",
        "(run again with -v for the traceback)",
    ]
    verbose = cli(*args, "-v", cwd=tmp_path)
    assert verbose.returncode != 0
    assert "Traceback" in verbose.stderr


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, mounted for the test (needs root; skipped with the reason if not)."""
    where = tmp_path / "small"
    where.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
            check=True,
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", b"") or b""
        pytest.skip(f"cannot mount a tmpfs here ({err}; {detail.decode(errors='replace')})")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False, capture_output=True, timeout=20)


def test_disk_full_while_recording_is_one_line_and_keeps_what_was_written(
    small_tmpfs: Path, tmp_path: Path
) -> None:
    out = small_tmpfs / "x.hfr"
    proc = cli("record", "-o", str(out), "--fast", "--duration", "10", cwd=tmp_path)
    assert proc.returncode == 2
    assert_clean(proc)
    assert proc.stderr.splitlines() == [
        f"hyperframes record: error: RecorderClosed: recorder for '{out}' failed and accepts no "
        "more frames: [Errno 28] No space left on device (what it wrote so far is in "
        f"'{out}.partial'); the disk is full: free space or write "
        "elsewhere (what was written so far is readable: run 'hyperframes check' on it)",
        "(run again with -v for the traceback)",
    ]
    from recordings import open_recording

    assert not out.exists()  # never half a file under the final name
    with open_recording(out.with_name(out.name + ".partial")) as log:
        frames = list(log.frames())
        assert len(log.chunks) >= 3
        assert len(frames) == sum(c.count for c in log.chunks)
