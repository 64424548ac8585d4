"""The CLI on hostile recordings, as a user runs it (a subprocess): literal text, safe
paths, one clear line and an exit code on failure, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fusion.frames import Frame, SensorSpec
from hyperframes.cli.common import printable
from recordings import Recorder
from recordings.export.names import inside, safe_filename
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


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    proc = cli("check", str(tmp_path / "nope.hfr"), cwd=tmp_path)
    assert proc.returncode == 2
    assert_clean(proc)
    assert len((proc.stdout + proc.stderr).strip().splitlines()) == 1
