"""CSV and space-separated logs as time series: the header, the schema, each row's fate.

The unit is the row (one line; blank lines are not rows). The schema comes
from the header and the rows together:

* **The header** is the first line. A header marked as a comment (``#``), as
  TUM trajectories (``# timestamp tx ty tz qx qy qz qw``) and EuRoC logs
  (``#timestamp [ns],w_RS_S_x ...``) write it, has the ``#`` stripped, as
  their own tools do: the TUM line names 8 columns, not a ``#`` column and 7
  shifted names. Of several leading ``#`` lines, the header is the last one
  that names the time column and as many columns as the rows hold (the
  others are comments, skipped). ``time_column`` names the time
  column as the header writes it, with or without the ``#``; ``"#"`` alone is
  the first column of a ``#`` header.
* **The width** (values per row) is what most of the first
  :data:`LEARN_FROM` rows hold, not what the first row holds. When most rows
  hold more values than the header names, the extra columns are kept, named
  ``column_<n>`` (1-based), with a warning; when they hold fewer, the names
  without values are left out (an error if the time column or a chosen column
  is among them).
* **Each row** of that width is parsed; a row with more values is kept and
  its extras counted (``extra_columns``, a warning: the row is not lost); a
  row with fewer is dropped and counted (``schema_mismatch``); a row whose
  values do not parse is dropped and counted (``bad_row``). Every message
  names the file and line.

Sans-I/O: :class:`CsvLayout` is built from the header and the first rows'
cells; :meth:`CsvLayout.parse` takes one row's cells and returns its values
or raises with the reason.
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapters._timeparse import parse_time_ns
from adapters.errors import SourceOpenError
from fusion.errors import ConfigError

log = logging.getLogger("adapters._timeseries")

LEARN_FROM = 8
"""Rows whose majority width is the schema's width."""


class RowMismatch(ValueError):
    """A row that does not fit the schema (too few values): ``schema_mismatch``."""


@dataclass(frozen=True)
class CsvLayout:
    """Where each value of a row is and how it is parsed."""

    path: Path
    names: tuple[str, ...]
    """Column names, the header's (``#`` stripped) plus ``column_<n>`` for kept extras."""
    width: int
    """Values a row holds (the majority of the first rows)."""
    time_index: int
    time_unit: str
    columns: tuple[tuple[str, int, np.dtype[Any]], ...]
    """(name, index, dtype) of every value column taken."""

    @property
    def dtype(self) -> np.dtype[Any]:
        """The rows' structured dtype: int64 ns ``t``, then the value columns."""
        return np.dtype([("t", "<i8"), *((n, d) for n, _, d in self.columns)])

    def parse(self, cells: Sequence[str], line: int) -> tuple[tuple[Any, ...], int]:
        """``(t, *values)`` of one row and how many values beyond the width it held."""
        if len(cells) < self.width:
            raise RowMismatch(
                f"{self.path}: line {line}: {len(cells)} values, the rows hold {self.width} "
                f"({', '.join(self.names)})"
            )
        t = parse_time_ns(cells[self.time_index], self.time_unit)
        values = tuple(_cell(cells[i], dtype) for _, i, dtype in self.columns)
        return (t, *values), len(cells) - self.width


def csv_cells(path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of every non-blank line; runs of a whitespace delimiter are one."""
    spaced = delimiter.isspace()
    with path.open(newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f, delimiter=delimiter, skipinitialspace=spaced)
        for row in reader:
            cells = [c for c in row if c != ""] if spaced else row
            if cells:
                yield reader.line_num, cells


def read_layout(
    path: Path,
    *,
    time_column: str,
    time_unit: str,
    columns: Sequence[str] | None,
    dtypes: Mapping[str, Any] | None,
    delimiter: str,
) -> tuple[CsvLayout, int]:
    """The layout of the file at ``path`` and the last line of its header (rows follow)."""
    candidates: list[tuple[int, list[str]]] = []  # the first line, or the leading # lines
    widths: list[int] = []
    commented = False
    for line, cells in csv_cells(path, delimiter):
        if not candidates or (not widths and cells[0].startswith("#") and commented):
            candidates.append((line, cells))
            commented = candidates[0][1][0].startswith("#")
            continue
        widths.append(len(cells))
        if len(widths) >= LEARN_FROM:
            break
    if not candidates:
        raise SourceOpenError(f"CSV file {str(path)!r} is empty (expected a header row)")
    width = _majority(widths) if widths else len(_header_names(candidates[-1][1]))
    # Of the leading # lines, the header is the last that names the time column and the
    # rows' width, else the last that names the width (the others are comments), else
    # the last one.
    fitting = [c for c in candidates if len(_header_names(c[1])) == width]
    timed = [c for c in fitting if _finds(_header_names(c[1]), time_column)]
    header = (timed or fitting or candidates)[-1][1]
    header_end = candidates[-1][0]  # rows start after the header and its comments
    commented = header[0].startswith("#")
    names = _header_names(header)
    if width > len(names):
        extra = [f"column_{i + 1}" for i in range(len(names), width)]
        log.warning(
            "%s: the header names %d columns but most rows hold %d values: the extra ones "
            "are kept as %s",
            path,
            len(names),
            width,
            ", ".join(extra),
        )
        names += extra
    elif width < len(names):
        log.warning(
            "%s: the header names %d columns but most rows hold %d values: %s have no values",
            path,
            len(names),
            width,
            ", ".join(names[width:]),
        )
    time_index = _time_index(path, names, time_column, commented)
    wanted = (
        list(columns)
        if columns is not None
        else [n for i, n in enumerate(names) if i != time_index and i < width]
    )
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise ConfigError(
            f"{path}: no column(s) {', '.join(unknown)} in the header (it has {', '.join(names)})"
        )
    empty = [n for n in [names[time_index], *wanted] if names.index(n) >= width]
    if empty:
        raise ConfigError(
            f"{path}: column(s) {', '.join(empty)} have no values: most rows hold {width}"
        )
    types = {c: np.dtype((dtypes or {}).get(c, "f8")) for c in wanted}
    layout = CsvLayout(
        path=path,
        names=tuple(names),
        width=width,
        time_index=time_index,
        time_unit=time_unit,
        columns=tuple((c, names.index(c), types[c]) for c in wanted),
    )
    return layout, header_end


def _header_names(header: list[str]) -> list[str]:
    """The header's names: stripped, the comment mark ``#`` removed from the first."""
    names = [h.strip() for h in header]
    if names and names[0].startswith("#"):
        first = names[0][1:].strip()
        names = [first, *names[1:]] if first else names[1:]
    return names


def _time_index(path: Path, names: list[str], time_column: str, commented: bool) -> int:
    if time_column in names:
        return names.index(time_column)
    if time_column == "#" and commented:
        return 0
    bare = time_column.lstrip("#").strip()
    if bare and bare in names:
        return names.index(bare)
    raise ConfigError(f"{path}: no time column {time_column!r}; the header has {', '.join(names)}")


def _finds(names: list[str], time_column: str) -> bool:
    bare = time_column.lstrip("#").strip()
    return time_column in names or time_column == "#" or bool(bare and bare in names)


def _majority(widths: list[int]) -> int:
    """The most common width (ties: the wider)."""
    votes = Counter(widths)
    return max(votes, key=lambda w: (votes[w], w))


def _cell(text: str, dtype: np.dtype[Any]) -> Any:
    if dtype.kind in "iu":
        return int(text, 0)
    if dtype.kind == "b":
        return text.strip().lower() in ("1", "true", "yes")
    if dtype.kind == "f":
        return float(text)
    return text
