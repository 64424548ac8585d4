"""Pieces the commands share: logging flags, graceful signals, live pipeline display."""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from fusion.pipeline import Pipeline, PipelineStatistics

MS = 1_000_000
T = TypeVar("T")
log = logging.getLogger("hyperframes")


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` and ``-q/--quiet`` on a subcommand that lacks them."""
    options = parser._option_string_actions
    if "--verbose" not in options:
        parser.add_argument(
            "-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)"
        )
    if "--quiet" not in options:
        parser.add_argument(
            "-q", "--quiet", action="store_true", help="only errors and the final result"
        )


def configure_logging(args: argparse.Namespace) -> None:
    """Plain ``logging`` to stderr: warnings by default, -v info, -vv debug, -q errors."""
    verbose = getattr(args, "verbose", 0) or 0
    level = (
        logging.ERROR
        if getattr(args, "quiet", False)
        else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    )
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr, force=True
    )


def console_for(args: argparse.Namespace) -> Console:
    return Console(quiet=bool(getattr(args, "quiet", False)))


async def run_until_signalled(pipeline: Pipeline, body: Callable[[], Awaitable[T]]) -> T:
    """Run ``body`` with SIGINT/SIGTERM turned into :meth:`Pipeline.stop` (graceful)."""
    result: T

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    log.warning(
                        "%s: stopping sources, draining in-flight frames",
                        signal.Signals(signum).name,
                    )
                    pipeline.stop()

        tg.start_soon(watch)
        result = await body()
        tg.cancel_scope.cancel()
    return result


def live_table(stats: PipelineStatistics, title: str, extra: str = "") -> Table:
    """One-screen view of a running pipeline: sensors, groups, workers."""
    table = Table(title=literal(title), caption=literal(extra) if extra else None)
    for col in ("sensor", "frames", "dropped", "lag ms", "clock"):
        table.add_column(col, justify="left" if col in ("sensor", "clock") else "right")
    for name, s in stats.hub.sensors.items():
        dropped = sum(s.dropped.values())
        lag = "" if s.lag_ns is None else f"{s.lag_ns / MS:.1f}"
        table.add_row(literal(name), str(s.frames_in), str(dropped), lag, clock_text(s.clock))
    hub = stats.hub
    table.add_row(
        "[bold]groups",
        str(stats.groups_out),
        f"{hub.groups_dropped}",
        "",
        f"{hub.groups_partial} partial",
    )
    for name, w in stats.workers.items():
        sizes = ",".join(f"{k}:{v}" for k, v in sorted(w.batch_sizes.items()))
        table.add_row(
            literal(name, "bold"),
            str(w.items),
            str(w.failed),
            f"{w.latency_p50 / MS:.1f}",
            f"batches {sizes}",
        )
    return table


def clock_text(estimate: Any) -> str:
    if not estimate:
        return "-"
    if estimate.get("model") == "OnlineClock" and "offset_ns" in estimate:
        return (
            f"offset {estimate['offset_ns'] / 1e9:+.4f} s, "
            f"skew {estimate.get('skew_ppm', 0.0):+.1f} ppm"
        )
    return str(estimate.get("model", "-"))


async def drive(
    pipeline: Pipeline,
    console: Console,
    title: str,
    *,
    metrics: Path | None = None,
    status: Callable[[], str] | None = None,
) -> PipelineStatistics:
    """Run ``pipeline`` to the end with a live table (refreshed 4x/s) and graceful signals."""
    live = Live(
        console=console, refresh_per_second=4, transient=False, auto_refresh=console.is_terminal
    )

    async def body() -> PipelineStatistics:
        with live:
            async with pipeline.open() as groups:
                n = 0
                async for _ in groups:
                    n += 1
                    if n % 16 == 0:
                        _refresh(live, pipeline, title, status, metrics)
            return _refresh(live, pipeline, title, status, metrics, final=True)

    return await run_until_signalled(pipeline, body)


def _refresh(
    live: Live,
    pipeline: Pipeline,
    title: str,
    status: Callable[[], str] | None,
    metrics: Path | None,
    *,
    final: bool = False,
) -> PipelineStatistics:
    """Show the pipeline's statistics now (and keep the metrics file current)."""
    stats = pipeline.statistics()
    live.update(live_table(stats, title, status() if status else ""), refresh=final)
    if metrics is not None:
        write_metrics(metrics, stats)
    return stats


def write_metrics(path: Path, stats: PipelineStatistics) -> None:
    """Prometheus text, replaced atomically (a scraper never reads half a file)."""
    from fusion.metrics import prometheus_text

    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(prometheus_text(stats))
    tmp.replace(path)


# -- text from files, names and users: printed literally ---------------------

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")


def printable(value: object, *, lines: bool = False) -> str:
    """``str(value)`` with every control character written as an escape.

    C0 and C1 controls, DEL and the bidirectional overrides become ``\\x1b``,
    ``\\u202e`` and so on, so an ANSI/OSC sequence or a newline from a file
    reaches the terminal as visible text, never as a command. ``lines`` keeps
    newlines (a message of several problems, one a line).
    """

    def escape(m: re.Match[str]) -> str:
        char = m.group()
        if lines and char == "\n":
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _CONTROL.sub(escape, str(value))


def literal(value: object, style: str = "", *, lines: bool = False) -> Text:
    """``value`` as rich ``Text``: never parsed as markup, control characters escaped.

    Use it for every table cell and message part that comes from a file, a
    sensor name, a path or a user (a sensor named ``[/x]`` prints as such).
    """
    return Text(printable(value, lines=lines), style=style)


def say(console: Console, label: str, style: str, message: object) -> None:
    """One line: a styled ``label`` (ours) and a literal ``message`` (anyone's)."""
    console.print(Text.assemble((label, style), " ", literal(message, lines=True)), soft_wrap=True)
