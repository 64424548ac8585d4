"""Reading a small input file (a calibration, a timestamps list, a config) without trusting it.

Theory of operation. A side file is read whole into memory, so what a user
names there decides what the process allocates: ``/dev/zero`` given as a
Velodyne calibration is read until memory runs out, a FIFO with no writer
blocks the read for ever, a directory fails with an ``IsADirectoryError``
that says nothing of what was expected. Every such read goes through
:func:`read_small` (or :func:`open_regular` for a file read in a stream, a
CSV), which

1. ``stat`` s the path first and refuses anything that is not a regular file
   (device, FIFO, directory, socket) with a line that names the path and what
   it is, before opening it (opening a device can have effects of its own);
2. opens it with ``O_NONBLOCK``, so a path swapped for a FIFO after the
   ``stat`` cannot hang the open, and checks the open file again with
   ``fstat`` (the file read is the file checked);
3. refuses a file over the caller's stated limit from its size, before
   reading, and reads at most ``limit + 1`` bytes, so a file that grows while
   it is read is refused too.

The error is the caller's class (``SourceOpenError`` for a source,
``ConfigError`` for a config), its message one line: ``Velodyne calibration
'x.xml': is a FIFO, not a regular file`` or ``... : 2.1 GiB, over the 4 MiB
limit for a calibration file``.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Protocol

__all__ = [
    "CALIBRATION_LIMIT",
    "CONFIG_LIMIT",
    "METADATA_LIMIT",
    "TIMESTAMPS_LIMIT",
    "kind_of",
    "open_regular",
    "read_small",
    "read_small_text",
    "refuse_special",
    "size_text",
]

CALIBRATION_LIMIT = 4 << 20
"""A LiDAR calibration (Velodyne XML/YAML, KITTI calib): real ones are 1-100 kB."""
TIMESTAMPS_LIMIT = 256 << 20
"""A timestamps file: one line a frame, about 20 bytes; 256 MiB is 10 M frames."""
CONFIG_LIMIT = 16 << 20
"""A TOML config: a few kB by hand, a few MB generated."""
METADATA_LIMIT = 4 << 20
"""A sensor's metadata JSON (Ouster): a few kB."""


class _ErrorClass(Protocol):
    def __call__(self, message: str, /) -> BaseException: ...


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str | None:
    """What a file of ``st_mode`` is (``"a FIFO"``), or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def size_text(n: int) -> str:
    """``n`` bytes for a person: ``2.1 GiB``, ``64 MiB``, ``812 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def _refuse_kind(where: str, mode: int, error: _ErrorClass) -> None:
    kind = kind_of(mode)
    if kind is not None:
        raise error(f"{where}: is {kind}, not a regular file")


def open_regular(
    path: str | os.PathLike[str],
    what: str,
    *,
    limit: int | None = None,
    limit_name: str | None = None,
    error: _ErrorClass,
) -> IO[bytes]:
    """``path`` opened for binary reading (blocking reads), once it is known to be a
    regular file of at most ``limit`` bytes; otherwise ``error(one line)``.

    ``what`` names the file's role (``"Velodyne calibration"``), ``limit_name``
    the limit's (``"a calibration file"``; default: ``what``). A missing or
    unreadable file is ``error`` too, with the OS's reason.
    """
    where = f"{what} '{os.fspath(path)}'"
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise error(f"{where}: does not exist") from None
    except OSError as err:
        raise error(f"{where}: cannot be read: {err.strerror or err}") from err
    _refuse_kind(where, before.st_mode, error)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise error(f"{where}: cannot be read: {err.strerror or err}") from err
    try:
        st = os.fstat(fd)
        _refuse_kind(where, st.st_mode, error)  # swapped for a FIFO or device since the stat
        if limit is not None and st.st_size > limit:
            # Just over (4 MiB + 1 byte) in bytes, or it would read "4.0 MiB, over 4 MiB".
            size = size_text(st.st_size) if st.st_size > limit * 1.05 else f"{st.st_size} bytes"
            raise error(
                f"{where}: {size}, over the {size_text(limit)} limit for {limit_name or what}"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    *,
    limit_name: str | None = None,
    error: _ErrorClass,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; else ``error``.

    See :func:`open_regular`. A file that grows past ``limit`` while it is read
    is refused as well (at most ``limit + 1`` bytes are ever read).
    """
    with open_regular(path, what, limit=limit, limit_name=limit_name, error=error) as file:
        try:
            data = file.read(limit + 1)
        except OSError as err:
            raise error(f"{what} '{os.fspath(path)}': cannot be read: {err}") from err
    if len(data) > limit:
        raise error(
            f"{what} '{os.fspath(path)}': grew past the {size_text(limit)} limit for "
            f"{limit_name or what} while it was read"
        )
    return data


def read_small_text(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    *,
    limit_name: str | None = None,
    error: _ErrorClass,
    encoding: str = "utf-8",
    errors: str = "replace",
) -> str:
    """:func:`read_small`, decoded (undecodable bytes replaced unless ``errors`` says not)."""
    data = read_small(path, what, limit, limit_name=limit_name, error=error)
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError as err:
        raise error(
            f"{what} '{os.fspath(path)}': not {encoding} text (byte {err.start}: {err.reason})"
        ) from err


def refuse_special(path: str | os.PathLike[str], what: str, error: _ErrorClass) -> None:
    """Refuse (``error``) a ``path`` that exists and is not a regular file; a missing path
    passes (the caller says what is missing)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    _refuse_kind(f"{what} '{os.fspath(path)}'", mode, error)
