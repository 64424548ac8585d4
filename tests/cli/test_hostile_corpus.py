"""Every case of the red-team corpus (``tests/cli/hostile_corpus.py``): its exit code, one
error line naming what it is about, no traceback, and its input untouched."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from pathlib import Path

import pytest

from hyperframes.cli import main
from tests.cli.hostile_corpus import Case, build

README = Path(__file__).resolve().parents[1] / "data" / "hostile" / "README.md"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Case]]:
    folder = tmp_path_factory.mktemp("hostile")
    return folder, {c.name: c for c in build(folder)}


def names() -> list[str]:
    """The cases the README's "Command lines" section lists (``- `NAME`: ...``)."""
    section = README.read_text().split("## Command lines", 1)[1]
    return [line[2:].split(": ", 1)[0].strip("`") for line in section.splitlines()
            if line.startswith("- `")]  # fmt: skip


def test_the_readme_has_one_line_per_case(corpus: tuple[Path, dict[str, Case]]) -> None:
    assert sorted(names()) == sorted(corpus[1])


@pytest.mark.parametrize("name", names())
def test_each_case_ends_in_one_clear_line(corpus: tuple[Path, dict[str, Case]], name: str) -> None:
    folder, cases = corpus
    case = cases[name]
    guard = folder / case.guard if case.guard else None
    before = hashlib.sha256(guard.read_bytes()).hexdigest() if guard else None
    out = io.StringIO()
    here = Path.cwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(list(case.argv))
    finally:
        os.chdir(here)
    text = out.getvalue()
    assert code == case.code, text
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if case.words in ln]
    assert len(lines) == 1, text
    if guard is not None:
        assert hashlib.sha256(guard.read_bytes()).hexdigest() == before
