"""No class over 300 code lines and no function over 80 in the library without a reason beside it.

Issue 36 point 2. A class or function is measured in *code lines*: the lines of
its span that are not blank, not comment-only and not part of a docstring (a
class counts its methods' lines too). One that passes its limit must say why on
the comment block directly above its ``def``/``class`` (above its decorators
when it has some), in a line of the form ``# long: <why>``; the reason is for
the reader, so it names what keeps the code in one piece (a numba kernel that
must stay one compiled loop, an ``__init__`` whose length is its documented
keyword options), not that it is long.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fusion", "adapters", "recordings", "hyperframes")
CLASS_LIMIT = 300
FUNCTION_LIMIT = 80
REASON = "# long:"

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _is_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def code_lines(lines: list[str], node: _Def) -> int:
    """Lines of ``node``'s span (``lines`` is its module's text) that hold code.

    Blank lines, comment-only lines and the lines of string statements
    (docstrings, and bare strings used as comments) are not counted; the same
    count as ``/work/notes/sizes.py``.
    """
    strings: set[int] = set()
    for inner in ast.walk(node):
        if _is_string(inner):
            assert isinstance(inner, ast.Expr)
            assert inner.end_lineno is not None
            strings.update(range(inner.lineno, inner.end_lineno + 1))
    first, last = node.lineno, node.end_lineno or node.lineno
    count = 0
    for number in range(first, last + 1):
        text = lines[number - 1].strip()
        if text and not text.startswith("#") and number not in strings:
            count += 1
    return count


def reason(lines: list[str], node: _Def) -> str | None:
    """The ``# long: <why>`` text in the comment block right above ``node`` (or its decorators)."""
    top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    number = top - 1
    while number >= 1 and lines[number - 1].strip().startswith("#"):
        text = lines[number - 1].strip()
        if text.startswith(REASON) and text[len(REASON) :].strip():
            return text[len(REASON) :].strip()
        number -= 1
    return None


@dataclass(frozen=True)
class Long:
    """One class or function over its limit."""

    where: str
    name: str
    size: int
    limit: int
    why: str | None

    def __str__(self) -> str:
        return f"{self.where} {self.name}: {self.size} code lines (limit {self.limit})"


def measure(path: Path, source: str) -> Iterator[Long]:
    """Every class over ``CLASS_LIMIT`` and function over ``FUNCTION_LIMIT`` in one module."""
    lines = source.split("\n")
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.ClassDef):
            limit = CLASS_LIMIT
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            limit = FUNCTION_LIMIT
        else:
            continue
        size = code_lines(lines, node)
        if size > limit:
            yield Long(f"{path}:{node.lineno}", node.name, size, limit, reason(lines, node))


def library() -> Iterator[Long]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield from measure(path.relative_to(ROOT), path.read_text(encoding="utf-8"))


def test_long_classes_and_functions_say_why() -> None:
    found = list(library())
    for long in found:
        print(f"{long}  # long: {long.why}" if long.why else f"{long}  NO REASON")
    offenders = [long for long in found if long.why is None]
    assert not offenders, (
        f"{len(offenders)} classes/functions over their limit (class {CLASS_LIMIT}, function "
        f"{FUNCTION_LIMIT} code lines) without a '{REASON} <why>' comment right above them:\n"
        + "\n".join(str(long) for long in offenders)
    )


SAMPLE = '''\
"""Module docstring."""


class Small:
    """A docstring
    over two lines."""

    # a comment

    def method(self) -> int:
        "a one-line docstring"
        x = 1  # trailing comment counts: the line holds code
        """a bare string used as a comment"""
        return (
            x
        )


@decorator
async def g():
    pass
'''


def test_the_counter_counts_code_lines_only() -> None:
    tree = ast.parse(SAMPLE)
    lines = SAMPLE.split("\n")
    small, g = tree.body[1], tree.body[2]
    assert isinstance(small, ast.ClassDef)
    method = small.body[1]
    assert isinstance(method, ast.FunctionDef)
    assert isinstance(g, ast.AsyncFunctionDef)
    # class line, def line, x = 1, return ( x ): 6 lines of code
    assert code_lines(lines, small) == 6
    assert code_lines(lines, method) == 5
    # the decorator is outside the function's span; `async def` and `pass` are counted
    assert code_lines(lines, g) == 2


def test_a_long_function_needs_its_reason_right_above() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    bare = f"def f():\n{body}\n"
    said = f"# long: one table of 81 constants\ndef f():\n{body}\n"
    decorated = f"# long: a numba kernel, one loop\n@njit\ndef f():\n{body}\n"
    block = f"# long: two-line reason,\n#   continued\n@njit\ndef f():\n{body}\n"
    apart = f"# long: not adjacent\n\ndef f():\n{body}\n"
    empty = f"# long:\ndef f():\n{body}\n"
    short = "def f():\n" + "\n".join(f"    x{i} = {i}" for i in range(79)) + "\n"
    assert [(x.name, x.size, x.why) for x in measure(Path("m.py"), bare)] == [("f", 82, None)]
    assert [x.why for x in measure(Path("m.py"), said)] == ["one table of 81 constants"]
    assert [x.why for x in measure(Path("m.py"), decorated)] == ["a numba kernel, one loop"]
    assert [x.why for x in measure(Path("m.py"), block)] == ["two-line reason,"]
    assert [x.why for x in measure(Path("m.py"), apart)] == [None]
    assert [x.why for x in measure(Path("m.py"), empty)] == [None]
    assert list(measure(Path("m.py"), short)) == []
    assert str(next(measure(Path("m.py"), bare))) == "m.py:1 f: 82 code lines (limit 80)"


def test_a_long_class_is_measured_with_its_methods() -> None:
    methods = "\n".join(f"    def m{i}(self):\n        return {i}\n" for i in range(150))
    source = f"class C:\n{methods}"
    assert [(x.name, x.size) for x in measure(Path("m.py"), source)] == [("C", 301)]
