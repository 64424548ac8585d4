"""The ``hyperframes`` command line.

Each subcommand lives in its own module under ``hyperframes.cli`` with a
``register(subparsers)`` function that adds its parser and sets ``func``.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from hyperframes.cli._common import add_output_flags, command_logging
from hyperframes.cli._units import parse_size

# Order here is the order ``--help`` lists them.
COMMANDS = (
    "demo",
    "record",
    "replay",
    "info",
    "check",
    "export",
    "sync",
    "bench",
    "fleet",
    "segments",
    "doctor",
)

_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")


def plain(text: str) -> str:
    """Help text without reST markup: ``code`` and :func:`x` become code and x."""
    text = _ROLE.sub(
        lambda m: m.group(1).rsplit(".", 1)[-1] if "~" in m.group(0) else m.group(1), text
    )
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return text.replace("::\n", ":\n")


class PlainHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps descriptions' line breaks (examples stay examples) and drops reST markup."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return plain(super()._expand_help(action))


class OneLineParser(argparse.ArgumentParser):
    """A parser whose errors are one line (the option, what it takes, what was found),
    like every other failure of a command, instead of a usage block and the message."""

    def error(self, message: str) -> NoReturn:
        from hyperframes.cli._common import printable

        self.exit(2, f"{self.prog}: error: {printable(message)} (see '{self.prog} --help')\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command ``only`` alone.

    Each command's module is imported to register it, and some import what
    their command needs at the top (numpy, rich's live views); ``main`` builds
    just the named command's parser, so ``hyperframes sync FILE`` does not pay
    for ``demo``'s or ``record``'s imports (``python -X importtime`` shows it).
    """
    parser = OneLineParser(
        prog="hyperframes",
        description=(
            "Multi-sensor frame data: sync sensors on one clock, batch them through "
            "models, record and replay sessions (.hfr frame logs)."
        ),
        epilog="Run 'hyperframes COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"hyperframes.cli._{name}").register(sub)
    parser.formatter_class = PlainHelpFormatter
    for command in sub.choices.values():
        _plain_everywhere(command)
        add_output_flags(command)
    return parser


def _plain_everywhere(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = PlainHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _plain_everywhere(child)


class _VersionAction(argparse.Action):
    """``--version``: the distribution's version, looked up only when asked
    (``importlib.metadata`` costs a command that never prints it ~20 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(f"hyperframes {_version()}")  # stdout, as argparse's own version action
        parser.exit(0)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hyperframes")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    parser = build_parser(first if first in COMMANDS else None)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as done:  # --help, --version, or an option refused in one line
        return done.code if isinstance(done.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with command_logging(args):
            code: int = args.func(args)
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) outside a pipeline's graceful handling
        print(f"hyperframes {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # every failure ends with one clear line (-v: the traceback)
        if getattr(args, "verbose", 0):
            raise
        print(f"hyperframes {args.command}: {failure_line(err, _inputs(args))}", file=sys.stderr)
        print("(run again with -v for the traceback)", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    return code


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM before (or outside) a pipeline's handler: stop like Ctrl-C, no traceback."""
    raise KeyboardInterrupt


_INPUT_ARGS = ("config", "file", "run")
"""The argparse names of the commands' input arguments."""

_BARE: tuple[type[BaseException], ...] = (
    *(ArithmeticError, LookupError, RecursionError, TypeError, ValueError),
    *(AttributeError, AssertionError, MemoryError),
)
"""Errors that say what went wrong but not where: the line adds the input and the place."""


def _inputs(args: argparse.Namespace) -> list[str]:
    return [str(v) for name in _INPUT_ARGS if (v := getattr(args, name, None)) is not None]


def failure_line(err: BaseException, inputs: Sequence[str] = ()) -> str:
    """What failed, in one line: the first leaf of an exception group, without markup.

    Errors of ours carry their context in the message (sensor, seq, path,
    offset); anything else is named by its type, as in ``OSError: [Errno 28]
    No space left on device: 'x.hfr'``. A bare Python error (``OverflowError``,
    ``RecursionError``, ``IndexError``, a ``ValueError`` of a library) names
    neither the input nor the place: the line adds the command's ``inputs``
    and the innermost line of hyperframes it passed through (a bug to report,
    with the ``-v`` traceback).
    """
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import printable

    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = str(err) or type(err).__name__
    if not isinstance(err, HyperframesError):
        if str(err):
            text = f"{type(err).__name__}: {text}"
        if isinstance(err, _BARE) and not isinstance(err, OSError):
            text += _where(err, inputs)
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno == errno.ENOSPC:
            text += (
                "; the disk is full: free space or write elsewhere (what was written so far "
                "is readable: run 'hyperframes check' on it)"
            )
            break
        cause = cause.__cause__ or cause.__context__
    return "error: " + printable(text)


def _where(err: BaseException, inputs: Sequence[str]) -> str:
    """`` (reading 'x.toml'; at hyperframes/cli/_common.py:240 in silence_notes)``."""
    import traceback
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    place = None
    for frame in traceback.extract_tb(err.__traceback__):
        path = Path(frame.filename)
        if path.is_relative_to(root) and path.relative_to(root).parts[0] in _PACKAGES:
            place = f"{path.relative_to(root).as_posix()}:{frame.lineno} in {frame.name}"
    parts = [f"reading {', '.join(repr(i) for i in inputs)}"] if inputs else []
    if place is not None:
        parts.append(f"at {place}")
    return f" ({'; '.join(parts)})" if parts else ""


_PACKAGES = ("fusion", "adapters", "recordings", "hyperframes")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

__all__ = [
    "parse_size",
]
