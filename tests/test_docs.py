"""The documentation is true: every ```python block in README.md and docs/*.md runs.

Each block runs as it is, in a fresh interpreter with the repository root as
the working directory (so ``../shared/data`` and ``examples/`` resolve as they
do for a reader of a clone), under a wall-clock timeout. A block whose first
line starts with ``# pytest`` is a test file: it is written to a temporary
``test_block.py`` and run with pytest under the repository's pytest settings,
which is how a user's suite would run it (the ``hfr`` fixtures come from the
installed plugin). Anything that cannot run here (a live sensor, a GPU, a
cluster) belongs in a ```text, ```console or ```toml fence.

Also checked: ```toml blocks are valid configs; README.md stays within 250
lines; every page that shows the ``Thermometer`` adapter shows the one of
examples/custom_adapter.py; every docs page has a "Limits" section; docs/cli.md and
docs/configuration.md name every flag and TOML key the code has; and every
relative link (with its #anchor) in README.md, docs/*.md and BENCHMARKS.md
points at a file, folder or heading of the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT_S = 60
README_MAX_LINES = 250

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    info: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fenced_blocks(page: Path) -> list[Block]:
    """Every fenced block of a Markdown page, with its info string and first line."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        start, body = i, []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close["fence"].startswith(fence) and not close["info"].strip():
                break
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        else:
            raise AssertionError(f"{page.relative_to(ROOT)}:{start + 1}: fence never closed")
        blocks.append(Block(page, start + 1, m["info"].strip(), "\n".join(body) + "\n"))
        i += 1
    return blocks


def python_blocks() -> list[Block]:
    return [
        b for page in PAGES for b in fenced_blocks(page) if b.info.split(" ")[0] in ("python", "py")
    ]


BLOCKS = python_blocks()


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp)  # what a block puts in tempfile.mkdtemp() goes with tmp_path
    # The checkout's code wins over any installed copy, in the block and its children.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    return env


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    if block.code.lstrip().startswith("# pytest"):
        script = tmp_path / "test_block.py"
        script.write_text(block.code, encoding="utf-8")
        command = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(script),
        ]  # fmt: skip
    else:
        script = tmp_path / "block.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(script)]
    before = set(os.listdir(ROOT))
    try:
        result = subprocess.run(
            command, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the python block ran past {TIMEOUT_S} s")
    assert result.returncode == 0, (
        f"{block.where}: the python block failed (exit {result.returncode}):\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    left = sorted(set(os.listdir(ROOT)) - before - {".pytest_cache", ".hypothesis", "__pycache__"})
    assert not left, f"{block.where}: the block left {left} in the repository root; use a temp dir"


TOML_BLOCKS = [b for page in PAGES for b in fenced_blocks(page) if b.info == "toml"]


@pytest.mark.parametrize("block", TOML_BLOCKS, ids=[b.where for b in TOML_BLOCKS])
def test_toml_block_is_a_valid_config(block: Block) -> None:
    """A ```toml block parses, and a whole pipeline or fleet file passes the schema."""
    import tomllib

    from hyperframes.config import validate_config
    from hyperframes.fleet._config import validate_fleet_config

    try:
        raw = tomllib.loads(block.code)
    except tomllib.TOMLDecodeError as err:
        pytest.fail(f"{block.where}: not valid TOML: {err}")
    if "fleet" in raw and "sync" in raw:
        validate_fleet_config(raw, source=block.where)
    elif "sources" in raw and "sync" in raw:  # a whole file, not a snippet of one table
        validate_config(raw, source=block.where)


def test_every_page_has_its_python_blocks_found() -> None:
    """The fence parser sees the blocks (a parser bug would make every page pass)."""
    pages_with_blocks = {b.page.name for b in BLOCKS}
    assert "README.md" in pages_with_blocks
    assert len(BLOCKS) >= 15


def class_source(text: str, name: str) -> list[str]:
    """The non-blank lines of ``class name`` in ``text``, up to the next unindented line."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"class {name}(")))
    body = [lines[start]]
    for line in lines[start + 1 :]:
        if line and not line[0].isspace():
            break
        if line.strip():
            body.append(line)
    return body


def test_there_is_one_thermometer_and_every_page_shows_the_example_s() -> None:
    """README.md and docs/ show the Thermometer of examples/custom_adapter.py, line for line."""
    canonical = class_source(
        (ROOT / "examples" / "custom_adapter.py").read_text(encoding="utf-8"), "Thermometer"
    )
    assert len(canonical) > 10
    showing = [page for page in PAGES if "class Thermometer(" in page.read_text(encoding="utf-8")]
    assert {p.name for p in showing} >= {"README.md", "sync.md"}
    for page in showing:
        shown = class_source(page.read_text(encoding="utf-8"), "Thermometer")
        assert shown == canonical, f"{page.relative_to(ROOT)} shows another Thermometer"


def test_readme_is_at_most_250_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; keep it to {README_MAX_LINES} and move detail "
        "to a page under docs/"
    )


def fenced_lines(page: Path) -> set[int]:
    """Line numbers inside fenced blocks, fences included."""
    lines: set[int] = set()
    for b in fenced_blocks(page):
        lines.update(range(b.line, b.line + b.code.count("\n") + 2))
    return lines


def relative_links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative Markdown link outside fenced blocks."""
    fenced = fenced_lines(page)
    out = []
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if n in fenced:
            continue
        for m in LINK.finditer(line):
            target = m["target"]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL (https:, mailto:) or an anchor on the same page
            out.append((n, target))
    return out


LINKED_PAGES = [*PAGES, ROOT / "BENCHMARKS.md"]


@pytest.mark.parametrize("page", LINKED_PAGES, ids=[str(p.relative_to(ROOT)) for p in LINKED_PAGES])
def test_relative_links_point_at_existing_files(page: Path) -> None:
    broken = []
    for line, target in relative_links(page):
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve()
        if not path.exists():
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in heading_anchors(path):
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no such heading)")
    assert not broken, "broken relative links:\n" + "\n".join(broken)


def heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped)."""
    fenced = fenced_lines(page)
    anchors = set()
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if n not in fenced and (m := re.match(r"^#{1,6} +(.*?) *$", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", m[1].lower()).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.parent.name == "docs" and p.name != "index.md"], ids=str
)
def test_every_docs_page_states_its_limits(page: Path) -> None:
    headings = [
        line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("## ")
    ]
    assert "## Limits" in headings, f"{page.relative_to(ROOT)} has no '## Limits' section"


def test_the_link_checker_finds_links() -> None:
    assert relative_links(ROOT / "README.md"), "README.md links to no page under docs/"


def test_cli_page_names_every_command_and_flag() -> None:
    """docs/cli.md keeps up with the parser: each command has a section, each flag a mention."""
    import argparse

    from hyperframes.cli import build_parser

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in sub.choices.items():
        if f"\n## {name}\n" not in page:
            missing.append(f"section '## {name}'")
        for action in command._actions:
            if action.help == argparse.SUPPRESS:
                continue  # a hidden alias
            missing += [f"{name} {o}" for o in action.option_strings if o.startswith("--")
                        and o != "--help" and o not in page]  # fmt: skip
    assert not missing, "docs/cli.md does not mention: " + ", ".join(missing)


def test_the_index_and_the_readme_reach_every_command_and_the_recipes() -> None:
    from hyperframes.cli import COMMANDS

    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    row = next(line for line in index.splitlines() if line.startswith("| [cli.md]"))
    assert [c for c in COMMANDS if c not in row] == []
    assert "(docs/recipes.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_configuration_page_names_every_toml_key() -> None:
    """docs/configuration.md keeps up with the schema: every key of every table is named."""
    from pydantic import BaseModel

    import hyperframes.config._base as base
    import hyperframes.config._python_source as python_source
    import hyperframes.config._schema as schema
    from hyperframes.config import sources
    from hyperframes.config.sources import SOURCE_TYPES
    from hyperframes.fleet._config import FleetSection

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    tables = [
        m
        for module in (base, sources, python_source, schema)
        for m in vars(module).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == module.__name__
    ] + [m for m in SOURCE_TYPES if m.__module__ != sources.__name__]  # one module per type
    missing = [
        f"{model.__name__}.{key}"
        for model in [*tables, FleetSection]
        for key in [f.alias or name for name, f in model.model_fields.items()]  # TOML spelling
        if not any(form in page for form in (f"`{key}`", f"{key} =", f"[{key}]"))
    ]
    assert not missing, "docs/configuration.md does not mention: " + ", ".join(missing)
