"""Writing an output without ever touching an input, and never half a file under its name.

Theory of operation. Every file or folder a command writes goes through
:func:`safe_output`:

1. :func:`refuse_overlap` resolves the output (symlinks followed, ``..``
   collapsed) and compares it with every input, by resolved path and, where
   both exist, by ``(st_dev, st_ino)``, so a hard link to the input is the
   input. An output inside an input folder (a bag directory) is refused too;
   a folder output may hold an input, but no file merged into it may replace
   one (checked for every file before the first is moved). The error names
   both paths.
2. The output is written into a staging folder beside the final name
   (``.NAME.XXXX.partial/NAME``: same file system, so the rename is atomic;
   the writer sees the final file name, so a suffix that picks the format,
   ``.mcap`` or a bag folder, still works).
3. Only when the body finished without an exception is it published: a file
   by ``os.replace`` onto the final path, a folder by ``os.replace`` when no
   folder of that name exists, else file by file into it (each rename
   atomic, the folder's other files kept). The staging folder is removed
   either way.

So a failed command leaves the old file (if any) as it was and nothing under
the final name; a command killed with SIGKILL leaves at most a hidden
``.partial`` folder (and a ``.NAME.lock``, see below) beside it.

One writer per output. Before step 2, :func:`lock_output` takes an exclusive
``flock`` on ``.NAME.lock`` beside the output (its pid written in it), held
until the output is published or abandoned: a second command writing the same
output (two ``record -o s.hfr`` at once, an ``export`` into the folder a
running ``export`` fills) is refused with :class:`OutputInUse`, naming the
output and the holder's pid, before it writes a byte. The lock is the kernel's:
a killed holder releases it, and the next writer takes the file it left. The
recorder takes the same lock for each file it writes (``NAME.partial`` is
renamed to ``NAME`` under it).

:class:`~recordings.Recorder` has its own form of step 2 for a live
recording (``atomic=True``: ``s.hfr.partial`` renamed at each finished part),
because what a crashed live recorder wrote cannot be recorded again and must
stay readable where the operator looks for it. For the same reason the next
recorder of that name never truncates a ``s.hfr.partial`` it finds: it keeps it
aside as ``s.hfr.partial.1`` (:func:`keep_aside`) and says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fusion.errors import ConfigError, HyperframesError

__all__ = [
    "OutputInUse",
    "OutputIsInput",
    "OutputLock",
    "fsync_dir",
    "keep_aside",
    "lock_output",
    "publish",
    "refuse_overlap",
    "safe_output",
]

StrPath = str | os.PathLike[str]


class OutputIsInput(ConfigError):
    """An output path is (or links to, or lies inside) one of the command's inputs."""

    def __init__(self, output: StrPath, input: StrPath, how: str) -> None:
        self.output = str(output)
        self.input = str(input)
        super().__init__(
            f"output '{self.output}' {how} the input '{self.input}'; "
            "nothing was written: write somewhere else"
        )


class OutputInUse(HyperframesError):
    """Another command (or recorder) is writing the same output right now."""

    def __init__(self, output: StrPath, pid: int | None) -> None:
        self.output = str(output)
        self.pid = pid
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"output '{self.output}' is being written by {holder} (it holds the lock "
            f"'{lock_path(Path(output).resolve())}'); nothing was written: wait for it "
            "to end or write somewhere else"
        )


def lock_path(output: Path) -> Path:
    """The lock file of ``output``: ``.NAME.lock`` beside it."""
    return output.with_name(f".{output.name}.lock")


class OutputLock:
    """An exclusive ``flock`` on an output's lock file, held until :meth:`release`."""

    def __init__(self, output: Path, fd: int, path: Path) -> None:
        self.output = output
        self.path = path
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def release(self) -> None:
        """Remove the lock file and let go of the lock (idempotent). The file is removed
        while the lock is held, so a waiting writer finds it gone and makes a new one."""
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == os.fstat(self._fd).st_ino:
                os.unlink(self.path)
        os.close(self._fd)
        self._fd = -1

    def __enter__(self) -> OutputLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)


def lock_output(output: StrPath) -> OutputLock:
    """Take the output's exclusive lock (``.NAME.lock`` beside it, made if missing);
    :class:`OutputInUse` naming the holder's pid when another process (or another
    writer in this one) holds it. Never waits."""
    final = Path(output)
    path = lock_path(final.resolve())  # one lock whatever symlink names the output
    for _ in range(100):  # a holder removes its file as it ends: lock the one that stays
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd)
            os.close(fd)
            raise OutputInUse(final, pid) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # removed (or replaced) by its last holder after we opened it
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return OutputLock(final, fd, path)
    raise OutputInUse(final, None)  # pragma: no cover - 100 holders in a row


def _holder(fd: int) -> int | None:
    """The pid a lock file holds (written by its holder), if it is a number."""
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).split()[0])
    return None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _inside(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


def refuse_overlap(output: StrPath, inputs: Iterable[StrPath | None]) -> Path:
    """The resolved ``output``; :class:`OutputIsInput` if it is, or overlaps, an input."""
    out = Path(output)
    final = out.resolve()
    ident = _identity(final)
    for item in inputs:
        if item is None:
            continue
        source = Path(item)
        resolved = source.resolve()
        if final == resolved:
            how = "is" if os.path.abspath(out) == os.path.abspath(source) else "links to"
            raise OutputIsInput(out, source, how)
        if ident is not None and ident == _identity(resolved):
            raise OutputIsInput(out, source, "is a hard link to")
        if resolved.is_dir() and _inside(final, resolved):
            raise OutputIsInput(out, source, "lies inside")
    return final


def publish(staged: Path, final: Path, inputs: Iterable[StrPath | None] = ()) -> None:
    """Move ``staged`` (a file or a folder) to ``final``; a folder merges into an existing
    one, each file renamed into place, none of them over one of ``inputs``."""
    if staged.is_dir() and not staged.is_symlink():
        if not final.exists():
            os.replace(staged, final)
            return
        if not final.is_dir():
            raise ConfigError(f"output '{final}' exists and is not a folder")
        sources = list(inputs)
        moves = [
            (entry, final / entry.relative_to(staged))
            for entry in sorted(staged.rglob("*"))
            if not entry.is_dir()
        ]
        for _, target in moves:  # all checked before the first is moved
            refuse_overlap(target, sources)
        for entry, target in moves:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(entry, target)
        return
    if final.is_dir() and not final.is_symlink():
        raise ConfigError(f"output '{final}' is a folder; give a file name")
    os.replace(staged, final)


KEEP_ASIDE_TRIES = 1000
"""Names :func:`keep_aside` tries (``NAME.1`` .. ``NAME.1000``) before it gives up."""


def keep_aside(path: Path) -> Path | None:
    """Rename an existing ``path`` to the first free ``path.N`` (never over a file, as a
    link is made before the old name is removed); its new name, or ``None`` when there
    was no such file. Raises ``FileExistsError`` when every name is taken."""
    if not path.exists() and not path.is_symlink():
        return None
    for n in range(1, KEEP_ASIDE_TRIES + 1):
        target = path.with_name(f"{path.name}.{n}")
        try:
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links: check, then rename
            if target.exists() or target.is_symlink():
                continue
            os.rename(path, target)
            return target
        os.unlink(path)
        return target
    raise FileExistsError(
        f"'{path}' is left from an interrupted run and '{path}.1' .. "
        f"'{path}.{KEEP_ASIDE_TRIES}' are all taken; move them away first"
    )


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: not every file system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def safe_output(output: StrPath, inputs: Iterable[StrPath | None] = ()) -> Iterator[Path]:
    """A staging path to write ``output`` to; published only if the body succeeds.

    ``with safe_output("s.mcap", inputs=["s.hfr"]) as tmp: write(tmp)``.
    Raises :class:`OutputIsInput` before anything is written when ``output``
    is an input, :class:`OutputInUse` when another command is writing it. The
    output's folder is created if missing. A symlinked output is written where
    it points.
    """
    inputs = list(inputs)
    final = refuse_overlap(output, inputs)
    final.parent.mkdir(parents=True, exist_ok=True)
    with lock_output(final):  # one writer per output: a second is refused here
        stage = Path(
            tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent)
        )
        try:
            staged = stage / final.name
            yield staged
            if staged.exists() or staged.is_symlink():
                publish(staged, final, inputs)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
