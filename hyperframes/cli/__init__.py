"""The ``hyperframes`` command line.

Each subcommand lives in its own module under ``hyperframes.cli`` with a
``register(subparsers)`` function that adds its parser and sets ``func``.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
from collections.abc import Sequence

from hyperframes.cli.common import add_output_flags, configure_logging

# Order here is the order ``--help`` lists them.
COMMANDS = ("demo", "record", "replay", "info", "check", "export", "bench", "fleet")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hyperframes",
        description=(
            "Multi-sensor frame data: sync sensors on one clock, batch them through "
            "models, record and replay sessions (.hfr frame logs)."
        ),
        epilog="Run 'hyperframes COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"hyperframes {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"hyperframes.cli.{name}").register(sub)
    for command in sub.choices.values():
        add_output_flags(command)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hyperframes")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    configure_logging(args)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print(f"hyperframes {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # every failure ends with one clear line (-v: the traceback)
        if getattr(args, "verbose", 0):
            raise
        print(f"hyperframes {args.command}: {failure_line(err)}", file=sys.stderr)
        print("(run again with -v for the traceback)", file=sys.stderr)
        return 2
    return code


def failure_line(err: BaseException) -> str:
    """What failed, in one line: the first leaf of an exception group, without markup.

    Errors of ours carry their context in the message (sensor, seq, path,
    offset); anything else is named by its type, as in ``OSError: [Errno 28]
    No space left on device: 'x.hfr'``.
    """
    from fusion.errors import HyperframesError
    from hyperframes.cli.common import printable

    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = str(err) or type(err).__name__
    if not isinstance(err, HyperframesError):
        text = f"{type(err).__name__}: {text}"
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
