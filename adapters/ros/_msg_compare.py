"""Whether a ROS 2 bag's stored ``.msg`` text says what a distribution's type says; sans-I/O.

Theory of operation. rosbag2 stores each topic's type as the ``.msg`` files'
own text (comments, blank lines, names relative to the package, its
dependencies after ``MSG: pkg/Type`` headers between lines of ``=``). Parsing
it with rosbags' grammar costs about 8 ms a type, most of opening a small bag,
and a bag of a hundred types waits most of a second. Most of those types are
the distribution's own, which the type store already holds. ROS 1 bags name a
definition by its MD5; ROS 2 bags before Iron store no hash, so the text itself
is compared: :func:`fields_by_type` reduces a text to, per type, its field and
constant lines with comments and spacing removed and every type name made
absolute (``Header`` is ``std_msgs/Header``, a bare name is the package's own,
``pkg/msg/T`` is ``pkg/T``). Two texts that reduce to the same lines define the
same fields in the same order, so the stored type is the store's. Anything the
reduction does not understand (a line that is not ``type rest``, a default
value, a type with no fields, whose store form adds a placeholder member) makes
the comparison say no, and the caller parses the text as before: a wrong "yes"
would decode every message wrongly, a wrong "no" costs only the parse.
"""

from __future__ import annotations

import re

__all__ = ["fields_by_type", "same_definition"]

_PRIMITIVES = frozenset(
    [
        "bool",
        "byte",
        "char",
        "float32",
        "float64",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "string",
        "wstring",
    ]
)
_SEPARATOR = re.compile(r"^={10,}\s*$")
_TYPE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*(?:/[A-Za-z][A-Za-z0-9_]*){0,2})(.*)$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_CONSTANT = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.*)$")


def _short(name: str) -> str:
    """``pkg/msg/T`` as ``pkg/T``."""
    parts = name.split("/")
    return f"{parts[0]}/{parts[2]}" if len(parts) == 3 and parts[1] == "msg" else name


def _uncomment(line: str) -> str:
    """``line`` without its ``#`` comment (a ``#`` inside quotes is a constant's)."""
    quote = None
    for i, ch in enumerate(line):
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i].strip()
    return line.strip()


def _field(line: str, package: str) -> str | None:
    """One field or constant line in absolute form; ``None`` when not understood."""
    parts = line.split(None, 1)
    if len(parts) != 2:
        return None
    typ, rest = parts
    m = _TYPE.match(typ)
    if m is None:
        return None
    base, suffix = m.groups()
    if base not in _PRIMITIVES:
        if "/" not in base:
            base = "std_msgs/Header" if base == "Header" else f"{package}/{base}"
        base = _short(base)
    constant = _CONSTANT.match(rest)
    if constant is not None:
        return f"{base}{suffix} {constant.group(1)}={constant.group(2).strip()}"
    if not _NAME.match(rest):
        return None  # a default value, or something else after the name
    return f"{base}{suffix} {rest}"


def fields_by_type(text: str, msgtype: str) -> dict[str, tuple[str, ...]] | None:
    """``{pkg/Type: (field lines, ...)}`` of the ``.msg`` ``text`` defining ``msgtype``
    and its dependencies; ``None`` when a line or header is not understood."""
    sections: dict[str, list[str]] = {}
    current: str | None = _short(msgtype)
    lines: list[str] = []
    for raw in text.splitlines():
        if _SEPARATOR.match(raw):
            if current is not None:
                sections[current] = lines
            current, lines = None, []
            continue
        stripped = _uncomment(raw)
        if current is None:
            if stripped.startswith("MSG:"):
                current = _short(stripped[4:].strip())
            elif stripped:
                return None
            continue
        if stripped:
            lines.append(stripped)
    if current is not None:
        sections[current] = lines
    out: dict[str, tuple[str, ...]] = {}
    for name, body in sections.items():
        package = name.split("/")[0]
        fields = [_field(line, package) for line in body]
        if not fields or any(f is None for f in fields):
            return None  # no fields: the store's form adds a placeholder member
        out[name] = tuple(f for f in fields if f is not None)
    return out


def same_definition(stored: str, generated: str, msgtype: str) -> bool:
    """Whether the bag's ``stored`` text defines ``msgtype`` and every type it nests as
    ``generated`` (the store's own text of it) does."""
    ours = fields_by_type(stored, msgtype)
    theirs = fields_by_type(generated, msgtype)
    if not ours or not theirs:
        return False
    return all(ours.get(name) == fields for name, fields in theirs.items())
