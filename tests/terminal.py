"""``hyperframes`` run as a process: in a pipe, or in a pseudo-terminal with the screen a
person would see of it."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pyte

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_piped(
    *args: str,
    cwd: Path | None = None,
    columns: int = 200,
    timeout: float = 120,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m hyperframes ARGS`` with stdout and stderr captured (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, check=check,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)},
    )  # fmt: skip


def run_in_terminal(
    *args: str, cwd: Path, columns: int = 160, timeout: float = 120
) -> tuple[int, bytes]:
    """``python -m hyperframes ARGS`` with a pty for stdin, stdout and stderr: its exit
    code and every byte it wrote to the terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", *args],
        stdin=slave, stdout=slave, stderr=slave, cwd=cwd, close_fds=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns), "LINES": "50"},
    )  # fmt: skip
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=timeout), bytes(out)


def plain(output: bytes) -> str:
    """The bytes as text without colour and cursor sequences (every frame drawn)."""
    return ANSI.sub("", output.decode(errors="replace"))


def screen(output: bytes, columns: int = 160, lines: int = 200) -> str:
    """The final screen of a terminal that received ``output``."""
    s = pyte.Screen(columns, lines)
    pyte.ByteStream(s).feed(output.replace(b"\n", b"\r\n"))
    return "\n".join(line.rstrip() for line in s.display)
