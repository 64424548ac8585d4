"""Pieces the commands share: logging flags, consoles, messages, graceful signals, live display.

Every command prints through :func:`console_for`: rich markup is off, so a
message or a name from a file prints literally (``hyperframes[rerun]`` keeps
its brackets), and when output is not a terminal the console is wide enough
that tables keep their columns in a pipe or a log. Styled labels go through
:func:`error`, :func:`warn` and :func:`note`, which build ``Text`` objects
instead of markup strings.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import math
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:  # the pipeline and anyio load only for the commands that run one
    from rich.live import Live
    from rich.table import Table

    from fusion import Pipeline, PipelineStatistics

MS = 1_000_000
T = TypeVar("T")
log = logging.getLogger("hyperframes")


class NamesAction(argparse.Action):
    """``--sensors a b`` and ``--sensors a,b`` (and repeats) give one list of names."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        items = [values] if isinstance(values, str) else list(values or ())
        names = list(getattr(namespace, self.dest, None) or [])
        for item in items:
            names += [n.strip() for n in str(item).split(",") if n.strip()]
        setattr(namespace, self.dest, names)


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


@contextmanager
def command_logging(args: argparse.Namespace) -> Iterator[None]:
    """Plain ``logging`` to stderr while a command runs: warnings by default, -v info,
    -vv debug, -q errors.

    The root logger's level and handlers are the command's only while it runs, then
    restored as they were: a command run in-process (``main([...])`` from a test, a
    notebook or another program) leaves its caller's logging as it found it.
    """
    verbose = getattr(args, "verbose", 0) or 0
    level = (
        logging.ERROR
        if getattr(args, "quiet", False)
        else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    )
    root = logging.getLogger()
    saved_level, saved = root.level, list(root.handlers)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    for h in saved:
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        handler.close()
        for h in saved:
            root.addHandler(h)
        root.setLevel(saved_level)


PIPE_WIDTH = 200
"""Console width when output is not a terminal: tables keep their columns in a pipe."""


def console_for(args: argparse.Namespace | None = None, *, stderr: bool = False) -> Console:
    """The console a command prints with: literal text, quiet with ``-q``, wide in a pipe."""
    quiet = bool(getattr(args, "quiet", False))
    console = Console(quiet=quiet, markup=False, highlight=False, emoji=False, stderr=stderr)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def styled(label: str, style: str, message: object = "") -> Text:
    """``label`` in ``style`` followed by ``message`` printed literally."""
    text = Text(label, style=style)
    if message != "":
        text.append(" ")
        text.append(printable(message, lines=True))
    return text


def error(console: Console, message: object) -> None:
    """``error: MESSAGE`` in red (always shown, ``-q`` included)."""
    quiet, console.quiet = console.quiet, False
    try:
        console.print(styled("error:", "red", message), soft_wrap=True)
    finally:
        console.quiet = quiet


def warn(console: Console, label: str, message: object = "") -> None:
    """A yellow label and a literal message (``skipped 3 (decode_error): ...``)."""
    console.print(styled(label, "yellow", message), soft_wrap=True)


def note(console: Console, label: str, message: object = "", style: str = "green") -> None:
    console.print(styled(label, style, message), soft_wrap=True)


async def run_until_signalled(pipeline: Pipeline, body: Callable[[], Awaitable[T]]) -> T:
    """Run ``body`` with SIGINT/SIGTERM turned into :meth:`Pipeline.stop` (graceful).

    The first signal stops the sources; frames already received drain and the
    recorder writes its index. A second signal cancels the draining too (the
    recorder still closes its file): an operator pressing Ctrl-C twice means it.
    """

    def stop(name: str) -> None:
        log.warning("%s: stopping sources, draining in-flight frames", name)
        pipeline.stop()

    return await run_until_interrupted(body, on_first_signal=stop)  # record.py reports a cut drain


async def run_until_interrupted(
    body: Callable[[], Awaitable[T]], *, on_first_signal: Callable[[str], object] | None = None
) -> T:
    """Run ``body``; SIGINT or SIGTERM cancels it, then :class:`KeyboardInterrupt`.

    With ``on_first_signal``, the first signal only calls it (with the signal's name)
    and a second one cancels. The cancellation is an anyio cancel scope, not asyncio's
    own Ctrl-C handling (the main task cancelled natively), which a cancel scope inside
    ``body`` can take for its own and swallow: a replay then played on after Ctrl-C.
    """
    import anyio

    result: T
    async with anyio.create_task_group() as tg:
        body_scope = anyio.CancelScope()

        async def watch() -> None:
            graceful = on_first_signal
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    name = signal.Signals(signum).name
                    if graceful is not None:
                        graceful(name)
                        graceful = None
                        continue
                    if on_first_signal is not None:
                        log.warning("%s again: not waiting for the drain", name)
                    body_scope.cancel()

        tg.start_soon(watch)
        with body_scope:
            result = await body()
        tg.cancel_scope.cancel()
    if body_scope.cancelled_caught:
        raise KeyboardInterrupt
    return result


def live_table(
    stats: PipelineStatistics,
    title: str,
    extra: str = "",
    *,
    silence: Mapping[str, str] | None = None,
) -> Table:
    """One-screen view of a running pipeline: sensors, groups, workers.

    ``lost`` is what the sensor's source lost of its input (its ledger: bad
    datagrams, the kernel's drops...), ``dropped`` what the pipeline dropped of
    its frames; ``silence`` maps a sensor to the words that replace its clock
    cell while it sends nothing (see :func:`silence_notes`).
    """
    silence = silence or {}
    from rich.table import Table

    table = Table(title=literal(title), caption=literal(extra) if extra else None)
    for col in ("sensor", "frames", "lost", "dropped", "lag ms", "clock"):
        table.add_column(col, justify="left" if col in ("sensor", "clock") else "right")
    names = list(stats.hub.sensors) + [n for n in stats.ledgers if n not in stats.hub.sensors]
    for name in names:
        s = stats.hub.sensors.get(name)
        ledger = stats.ledgers.get(name)
        lost = "" if ledger is None else str(ledger.lost_total)
        if s is None:
            table.add_row(literal(name), "0", lost, "0", "", literal(silence.get(name, "-")))
            continue
        dropped = sum(s.dropped.values())
        lag = "" if s.lag_ns is None else f"{s.lag_ns / MS:.1f}"
        state = silence.get(name)
        clock = literal(state, "yellow") if state else literal(clock_text(s.clock))
        table.add_row(literal(name), str(s.frames_in), lost, str(dropped), lag, clock)
    hub = stats.hub
    table.add_row(
        Text("groups", style="bold"),
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
    """A clock model's estimate in a few words; "learning" before its first sample."""
    if not estimate:
        return "-"
    model = str(estimate.get("model", "-"))
    if model != "OnlineClock":
        return model
    offset = estimate.get("offset_ns")
    if offset is None:
        return "online: learning (no sample yet)"
    skew = estimate.get("skew_ppm")
    text = f"offset {offset / 1e9:+.4f} s"
    if skew is not None:
        text += f", skew {skew:+.1f} ppm"
    if not estimate.get("settled", True):
        text += " (settling)"
    resets = estimate.get("resets") or 0
    if resets:
        text += f", {resets} reset{'s' if resets != 1 else ''}"
    return text


def silence_notes(
    pipeline: Pipeline, sensors: Mapping[str, Any], now: int, started: int
) -> dict[str, str]:
    """``no data for 12.3 s`` (with the source's last error) for each sensor that has sent
    nothing for longer than its source's :meth:`~fusion.Source.silence_timeout_s`;
    ``sensors`` is the hub's per-sensor statistics already taken for the table."""
    notes: dict[str, str] = {}
    for source in pipeline.sources:
        timeout = source.silence_timeout_s()
        if not math.isfinite(timeout) or timeout * 1e9 >= 2**63:
            continue  # never silent (a synthetic source at 1e-300 Hz: an infinite period)
        limit_ns = int(timeout * 1e9)
        for spec in source.specs:
            s = sensors.get(spec.name)
            last = s.last_received if s is not None else None
            since = started if last is None else last
            quiet = now - since
            if quiet <= limit_ns:
                continue
            text = f"no data for {quiet / 1e9:.1f} s"
            if last is None:
                text = f"no data yet ({quiet / 1e9:.1f} s)"
            reason = source.idle_reason(spec.name)
            if reason:
                text = f"{reason} for {quiet / 1e9:.1f} s"
            if source.last_error:
                text += f": {source.last_error}"
            notes[spec.name] = text
    return notes


class ConsoleLogHandler(logging.Handler):
    """Log records printed through the console, so they land above a live table
    instead of being painted over by its next refresh."""

    def __init__(self, console: Console, level: int) -> None:
        super().__init__(level)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            style = "yellow" if record.levelno == logging.WARNING else ""
            style = "red" if record.levelno >= logging.ERROR else style
            self.console.print(literal(text, style, lines=True), soft_wrap=True)
        except Exception:
            self.handleError(record)


@contextmanager
def logging_through(console: Console) -> Iterator[None]:
    """While a live table shows on ``console``, the root logger's stream handlers
    print through it (same level and format); restored afterwards."""
    root = logging.getLogger()
    streams = [
        h for h in root.handlers if isinstance(h, logging.StreamHandler) and h.stream in _TTYS
    ]
    if not console.is_terminal or console.quiet or not streams:
        yield
        return
    handler = ConsoleLogHandler(console, streams[0].level)
    handler.setFormatter(streams[0].formatter)
    for h in streams:
        root.removeHandler(h)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for h in streams:
            root.addHandler(h)


_TTYS = (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)


REFRESH_S = 0.25
"""How often the live table (and the metrics file) is refreshed while a pipeline runs."""


async def drive(
    pipeline: Pipeline,
    console: Console,
    title: str,
    *,
    metrics: Path | None = None,
    status: Callable[[], str] | None = None,
) -> PipelineStatistics:
    """Run ``pipeline`` to the end with a live table (refreshed 4x/s) and graceful signals.

    The table refreshes on a timer, not per group, so it stays current while a
    live source is connecting or silent.
    """
    import anyio
    from rich.live import Live

    from fusion import current_clock

    live = Live(
        console=console, refresh_per_second=4, transient=False, auto_refresh=console.is_terminal
    )
    started = current_clock().now()

    def show(final: bool = False) -> PipelineStatistics:
        return _refresh(live, pipeline, title, status, metrics, started, final=final)

    async def body() -> PipelineStatistics:
        with logging_through(console), live:
            async with anyio.create_task_group() as tg:

                async def tick() -> None:
                    while True:
                        await anyio.sleep(REFRESH_S)
                        show()

                if console.is_terminal or metrics is not None:
                    tg.start_soon(tick)
                async with pipeline.open() as groups:
                    async for group in groups:
                        for sink in pipeline.sinks:  # a live view (--serve)
                            result = sink(group)
                            if inspect.isawaitable(result):
                                await result
                tg.cancel_scope.cancel()
            return show(final=True)

    return await run_until_signalled(pipeline, body)


def _refresh(
    live: Live,
    pipeline: Pipeline,
    title: str,
    status: Callable[[], str] | None,
    metrics: Path | None,
    started: int,
    *,
    final: bool = False,
) -> PipelineStatistics:
    """Show the pipeline's statistics now (and keep the metrics file current)."""
    from fusion import current_clock

    stats = pipeline.statistics()
    silence = silence_notes(pipeline, stats.hub.sensors, current_clock().now(), started)
    table = live_table(stats, title, status() if status else "", silence=silence)
    live.update(table, refresh=final)
    if metrics is not None:
        write_metrics(metrics, stats)
    return stats


def write_metrics(path: Path, stats: PipelineStatistics) -> None:
    """Prometheus text, replaced atomically (a scraper never reads half a file)."""
    from fusion import prometheus_text

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


def titled_table(title: object) -> Table:
    """A table titled ``title`` (printed literally) and at least as wide as it, so a long
    file name in the title is not broken across lines (rich wraps a title to its table)."""
    from rich.table import Table

    text = literal(title)
    return Table(title=text, min_width=text.cell_len)


def literal(value: object, style: str = "", *, lines: bool = False) -> Text:
    """``value`` as rich ``Text``: never parsed as markup, control characters escaped.

    Use it for every table cell and message part that comes from a file, a
    sensor name, a path or a user (a sensor named ``[/x]`` prints as such).
    """
    return Text(printable(value, lines=lines), style=style)


def count_caveat(summary: Any) -> str:
    """What a recording summary's frame count leaves out, as words to follow it: the
    chunks whose metas declare more frames than a reader decodes (a damaged count, never
    added to a printed total); ``""`` when none."""
    bad = summary.overcounted
    if not bad:
        return ""
    which = ", ".join(str(i) for i in bad[:3])
    if len(bad) > 3:
        which += f" and {len(bad) - 3} more"
    one = len(bad) == 1
    return (
        f" (not counting chunk{'' if one else 's'} {which}: "
        f"{'its meta declares' if one else 'their metas declare'} more frames than a "
        "reader decodes, a damaged count)"
    )
