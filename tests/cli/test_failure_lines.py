"""A bare Python error (issue 35: ``OverflowError``, ``RecursionError``, ``IndexError``,
``ValueError: default_data_format``) still ends a command in one line that names the
input and where it happened; the traceback only with ``-v``. Errors of ours and OS
errors, which name their input themselves, are printed as they are."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, NoReturn

import pytest

import recordings
from hyperframes.cli import failure_line, main


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.parametrize(
    "error",
    [OverflowError("cannot convert float infinity to integer"), RecursionError(),
     IndexError("index 0 is out of bounds for axis 1 with size 0"),
     ValueError("default_data_format")],
    ids=lambda e: type(e).__name__,
)  # fmt: skip
def test_a_bare_error_names_the_input_and_the_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def fails(*_: Any, **__: Any) -> NoReturn:
        raise error

    monkeypatch.setattr(recordings, "open_recording", fails)
    path = tmp_path / "s.hfr"
    path.write_bytes(b"x")
    code, text = run(["check", str(path)])
    assert code == 2
    assert "Traceback" not in text
    first, hint = text.splitlines()
    assert first.startswith(f"hyperframes check: error: {type(error).__name__}")
    assert f"(reading '{path}'; at hyperframes/cli/_check.py:" in first
    assert first.endswith(" in run)")
    assert hint == "(run again with -v for the traceback)"
    with pytest.raises(type(error)):
        main(["check", str(path), "-v"])


def test_errors_that_name_their_input_are_left_as_they_are() -> None:
    from fusion.errors import ConfigError

    assert failure_line(ConfigError("c.toml: bad"), ["c.toml"]) == "error: c.toml: bad"
    missing = FileNotFoundError(2, "No such file or directory", "x.hfr")
    assert failure_line(missing, ["x.hfr"]) == (
        "error: FileNotFoundError: [Errno 2] No such file or directory: 'x.hfr'"
    )
    assert failure_line(ExceptionGroup("g", [KeyError("k")]), []) == "error: KeyError: 'k'"
    assert failure_line(RecursionError(), []) == "error: RecursionError"
