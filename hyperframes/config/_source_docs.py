"""The source tables of ``docs/configuration.md``, written from the source types' models.

The keys every source takes (:class:`~hyperframes.config._base._SourceBase`'s fields,
between :data:`COMMON_BEGIN` and :data:`COMMON_END`): key, default, meaning. Then one
row per :class:`~hyperframes.config._source_type.SourceOptions` model: its
``type`` values, its ``summary``, then each key as ``key`` (default: its
docstring; bounds; choices; other spellings) and the ``see`` link. Defaults, bounds,
``Literal`` choices and ``validation_alias`` spellings are read from the fields,
so the page cannot disagree with the schema. The table sits between
:data:`BEGIN` and :data:`END` in the page; :func:`rewrite_table` puts the rows
there (``python -c "from hyperframes.config._source_docs import rewrite_page;
rewrite_page('docs/configuration.md')"``), a test checks the page is up to date.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import annotated_types as at
from pydantic import AliasChoices
from pydantic.fields import FieldInfo

from hyperframes.config._source_type import COMMON_KEYS, SourceOptions, type_names

BEGIN = "<!-- source types: written by hyperframes/config/_source_docs.py; edit the models -->"
END = "<!-- end of source types -->"
HEADER = ["| `type` | keys (default) |", "|---|---|"]
COMMON_BEGIN = "<!-- keys of every source: written from hyperframes/config/_base.py -->"
COMMON_END = "<!-- end of the keys of every source -->"
COMMON_HEADER = ["| key | default | meaning |", "|---|---|---|"]


def common_rows() -> list[str]:
    """The rows of the keys every source takes (``type`` first): key, default, meaning.

    A docstring ``none: X; meaning`` puts ``X`` in the default column."""
    fields = SourceOptions.model_fields
    found = []
    for name in ["type", *(k for k in fields if k in COMMON_KEYS and k != "type")]:
        field = fields[name]
        doc = " ".join((field.description or "").split())
        default = "(required)" if field.is_required() else default_text(field)
        if default == "none" and doc.startswith("none: "):
            default, _, doc = doc.removeprefix("none: ").partition("; ")
        meaning = "; ".join(
            m for m in (doc, bounds_text(field), choices_text(field.annotation)) if m
        )
        found.append(f"| `{name}` | {_cell(default)} | {_cell(meaning)} |")
    return found


def rows(models: Sequence[type[SourceOptions]]) -> list[str]:
    """The table's rows, one per model, in the order given."""
    return [row(m) for m in models]


def row(model: type[SourceOptions]) -> str:
    """One model's row: its ``type`` values, summary, keys and link."""
    names = ", ".join(f'`"{n}"`' for n in type_names(model))
    parts = [model.summary.strip()] if model.summary.strip() else []
    keys = ", ".join(key_entry(k, model.model_fields[k]) for k in model.own_keys())
    if keys:
        parts.append(keys)
    if model.see:
        parts.append(f"([{model.see.partition('#')[0]}]({model.see}))")
    return f"| {names} | {_cell(' '.join(parts))} |"


def key_entry(name: str, field: FieldInfo) -> str:
    """``key`` (default: docstring; bounds; choices; also ``alias``).

    A docstring that starts with ``none`` says what no value means, and stands for
    the default."""
    key = field.alias or name
    doc = " ".join((field.description or "").split())
    default = default_text(field)
    head = doc if default == "none" and doc.startswith("none") else default
    if doc and head != doc:
        head += f": {doc}"
    spellings = field.validation_alias
    choices = spellings.choices if isinstance(spellings, AliasChoices) else []
    aliases = [a for a in choices if isinstance(a, str) and a != key]
    extras = [
        bounds_text(field),
        choices_text(field.annotation),
        "also " + ", ".join(f"`{a}`" for a in aliases) if aliases else "",
    ]
    return f"`{key}` ({'; '.join([head, *(e for e in extras if e)])})"


def default_text(field: FieldInfo) -> str:
    """The default as the page writes it: ``required``, ``none``, ``true``, ``"a"``, ``8 MiB``."""
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    return value_text(value)


def value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, int) and value >= 1 << 20:
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
            if value % size == 0:
                return f"{value // size} {unit}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list | tuple) and not value:
        return "`{}`" if isinstance(value, dict) else "`[]`"
    return f"`{value!r}`" if isinstance(value, dict | list | tuple) else str(value)


def bounds_text(field: FieldInfo) -> str:
    """``0 to 65535``, ``> 0``, ``>= 1``, ``> 0, <= 60000`` from the field's bounds."""
    low = high = ""
    for m in field.metadata:
        if isinstance(m, at.Ge):
            low = f">= {value_text(m.ge)}"
        elif isinstance(m, at.Gt):
            low = f"> {value_text(m.gt)}"
        elif isinstance(m, at.Le):
            high = f"<= {value_text(m.le)}"
        elif isinstance(m, at.Lt):
            high = f"< {value_text(m.lt)}"
    if low.startswith(">=") and high.startswith("<="):
        return f"{low[3:]} to {high[3:]}"
    return ", ".join(b for b in (low, high) if b)


def choices_text(annotation: Any) -> str:
    """A ``Literal``'s values (also inside ``X | None``): ```"a"`, `"b"` or `"c"```."""
    args = [annotation]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
    literals = [a for a in args if typing.get_origin(a) is typing.Literal]
    if len(literals) != 1 or len(args) != 1:
        return ""
    values = [value_text(v) for v in typing.get_args(literals[0])]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def _cell(text: str) -> str:
    if "|" in text:
        raise ValueError(f"a docs table cell cannot hold '|': {text[:60]}...")
    return text


def rewrite_table(page: str, models: Sequence[type[SourceOptions]]) -> str:
    """``page`` with the rows between :data:`BEGIN` and :data:`END` written from ``models``,
    and those between :data:`COMMON_BEGIN` and :data:`COMMON_END` from the common keys."""
    page = _rewrite_block(page, COMMON_BEGIN, COMMON_END, [*COMMON_HEADER, *common_rows()])
    return _rewrite_block(page, BEGIN, END, [*HEADER, *rows(models)])


def _rewrite_block(page: str, begin: str, end: str, table: list[str]) -> str:
    lines = page.splitlines()
    try:
        start, stop = lines.index(begin), lines.index(end)
    except ValueError:
        raise ValueError(f"the page has no {begin!r} ... {end!r} block") from None
    return "\n".join([*lines[:start], begin, "", *table, "", *lines[stop:]]) + "\n"


def rewrite_page(path: str | Path, models: Sequence[type[SourceOptions]] | None = None) -> bool:
    """Rewrite the table of the page at ``path``; True when it changed."""
    if models is None:
        from hyperframes.config.sources import SOURCE_TYPES

        models = SOURCE_TYPES
    page = Path(path).read_text(encoding="utf-8")
    new = rewrite_table(page, models)
    if new != page:
        Path(path).write_text(new, encoding="utf-8")
    return new != page
