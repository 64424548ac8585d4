"""The ``hyperframes`` command line.

Each subcommand lives in its own module under ``hyperframes.cli`` with a
``register(subparsers)`` function that adds its parser and sets ``func``.
"""

from __future__ import annotations

import argparse
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
    code: int = args.func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
