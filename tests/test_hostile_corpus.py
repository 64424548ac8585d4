"""The red-team corpus (tests/data/hostile): every file has its README line, and the
sweep bench_hostile.py runs over it gives what the README says, without a crash."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "hostile"
FILES = sorted(p for p in CORPUS.iterdir() if p.suffix not in (".py", ".md"))


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_hostile", ROOT / "benchmarks" / "bench_hostile.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_hostile", module)
    spec.loader.exec_module(module)
    return module


def test_every_corpus_file_has_one_readme_line() -> None:
    readme = (CORPUS / "README.md").read_text()
    assert len(FILES) >= 16
    for p in FILES:
        assert readme.count(f"`{p.name}`") == 1, p.name


EXPECTED = {
    "sync_index_2_62.hfr": "34 groups, 1 damaged chunks reported",
    "sync_meta_array.hfr": "34 groups, 1 damaged chunks reported",
    "sync_t_outside_range.hfr": "34 groups, 1 damaged chunks reported",
    "sync_int64_extremes.hfr": "0 groups, 0 damaged chunks reported",
}


@pytest.mark.parametrize("path", [p for p in FILES if not p.name.startswith("mp4_")], ids=str)
def test_the_sweep_gives_what_the_readme_says(path: Path, tmp_path: Path) -> None:
    outcome = bench().sweep_file(path, tmp_path)
    if path.name.startswith("bag_"):
        assert outcome == "10 frames, 1 topics refused"  # /good kept, /evil refused
    else:
        assert outcome == EXPECTED[path.name]
