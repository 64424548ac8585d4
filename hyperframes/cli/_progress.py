"""Progress of long work: a bar with total, position, rate and ETA, in a terminal only.

Every command that reads a whole recording (``export``, ``sync``, ``info``,
``check``, ``replay``) reports through :func:`progress_bar`. In a pipe, in a
log or with ``-q`` it shows nothing (the final line is the result); in a
terminal the bar is transient, so the command's own last line is printed once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich.progress loads only when a bar is shown (a terminal)
    from rich.console import Console

Advance = Callable[[int], None]
"""``advance(n)``: ``n`` more units done."""


def _nothing(n: int = 1) -> None:
    return None


@contextmanager
def progress_bar(
    console: Console, label: str, total: int | None, *, unit: str = "frames"
) -> Iterator[Advance]:
    """A bar for ``total`` units (``None``: unknown, it counts up) while the block runs."""
    if not console.is_terminal or console.quiet:
        yield _nothing
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """``12,345 frames/s`` (blank until rich has a speed estimate)."""

        def __init__(self, unit: str) -> None:
            super().__init__()
            self.unit = unit

        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.0f} {self.unit}/s")

    columns: list[ProgressColumn] = [
        TextColumn(label, markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit, markup=False),
        RateColumn(unit),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=total)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        yield advance
