"""Whether a path is a ROS bag, and which kind, from what is in it rather than its name.

* a **ROS 2 bag directory** holds ``metadata.yaml``, whatever the directory is
  called (``ros2 bag record -o images.bag`` makes a directory named ``*.bag``);
* a **ROS 1 bag** is a file starting with ``#ROSBAG V2.0``, whatever its suffix;
* a **ROS 2 storage file** is an MCAP file (``\\x89MCAP0\\r\\n``) or a rosbag2
  sqlite3 file (``SQLite format 3``) read without its ``metadata.yaml``.

:func:`bag_format` answers ``"ros1"``, ``"ros2"`` or ``None``;
:func:`not_a_bag` says, for a path that is none of them, what was tried.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

ROS1_MAGIC = b"#ROSBAG V2.0"
MCAP_MAGIC = b"\x89MCAP0\r\n"
SQLITE_MAGIC = b"SQLite format 3\x00"

BagFormat = Literal["ros1", "ros2"]


def _head(path: Path, n: int = 16) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def bag_format(path: str | os.PathLike[str]) -> BagFormat | None:
    """``"ros1"``, ``"ros2"`` (directory, MCAP or sqlite3 file) or ``None`` for anything else."""
    p = Path(path)
    if p.is_dir():
        return "ros2" if (p / "metadata.yaml").is_file() else None
    if not p.is_file():
        return None
    head = _head(p)
    if head.startswith(ROS1_MAGIC):
        return "ros1"
    if head.startswith(MCAP_MAGIC) or (head.startswith(SQLITE_MAGIC) and p.suffix == ".db3"):
        return "ros2"
    return None


def not_a_bag(path: str | os.PathLike[str]) -> str:
    """Why ``path`` is not read as a bag: every test :func:`bag_format` made, in one line."""
    p = Path(path)
    if not p.exists():
        return f"'{p}' does not exist"
    if p.is_dir():
        return f"'{p}' is a directory without metadata.yaml, so not a ROS 2 bag directory"
    head = _head(p)
    return (
        f"'{p}' is not a ROS 1 bag (no {ROS1_MAGIC.decode()!r} header), not an MCAP file "
        f"(no MCAP magic) and not a rosbag2 sqlite3 .db3 file; it starts with {head[:12]!r}"
    )
