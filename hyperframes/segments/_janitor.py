"""What a segment pool leaves in ``/dev/shm`` when its parent dies, and who removes it.

Theory of operation. A pool's shared-memory blocks are named after their
owner, ``hf_<pid>_<n>`` (:func:`block_name`), so a block whose owner is dead
is known to be garbage (:func:`stale_blocks`). multiprocessing's own
semaphores (``sem.mp-*``, the locks of the pool's queues and arrays) carry
no owner, but a live one is always mapped by the processes that use it, so
one of ours that no process maps is garbage too (:func:`unmapped_semaphores`).

Three things reclaim them:

* the parent, at exit (normal or by an exception), unlinks its own blocks;
* a **janitor**: this file, run as a script (stdlib only, so it starts in
  tens of milliseconds) in its own session, so a ``kill`` of the parent's
  process group does not reach it. It reads its stdin, a pipe from the
  parent, until EOF (the parent exited, however), waits up to 3 s for the
  workers to go (they watch their parent, see ``pool._watch_parent``), then
  removes the dead owner's blocks and the unmapped semaphores, and exits;
* the next pool start and ``hyperframes doctor --clean`` (:func:`reclaim`),
  for a janitor that was itself killed.

Python's resource tracker also unlinks what it registered when its pipe
closes, which happens once the parent and every worker are gone; it then
exits on its own (it lingered before only because orphaned workers kept its
pipe open).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

SHM = Path("/dev/shm")
_BLOCK = re.compile(r"hf_(\d+)_\d+")


def block_name(pid: int, n: int) -> str:
    """The name of block ``n`` of the pool owned by process ``pid``."""
    return f"hf_{pid}_{n}"


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def stale_blocks(shm: Path = SHM, owner: int | None = None) -> list[Path]:
    """Blocks ``hf_<pid>_<n>`` whose owner is dead (or is ``owner``, when given)."""
    out = []
    with contextlib.suppress(OSError):
        for p in shm.iterdir():
            m = _BLOCK.fullmatch(p.name)
            if m is None:
                continue
            pid = int(m.group(1))
            if pid == owner or (owner is None and not alive(pid)):
                out.append(p)
    return sorted(out)


def mapped_shm() -> set[int]:
    """Inodes of ``/dev/shm`` files mapped by any process this user can inspect.

    Inodes, not names: the creator of a semaphore maps it under a temporary
    name (glibc links the final name afterwards), shown as deleted.
    """
    inodes: set[int] = set()
    with contextlib.suppress(OSError):
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                text = (d / "maps").read_text(errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                if "/dev/shm/" in line:
                    fields = line.split(maxsplit=5)
                    if len(fields) > 4 and fields[4].isdigit():
                        inodes.add(int(fields[4]))
    return inodes


def _inode(p: Path) -> int:
    try:
        return p.stat().st_ino
    except OSError:
        return -1


def unmapped_semaphores(shm: Path = SHM) -> list[Path]:
    """This user's ``sem.mp-*`` that no process maps: left by a killed multiprocessing."""
    uid = os.getuid()
    mine = []
    with contextlib.suppress(OSError):
        for p in shm.iterdir():
            if p.name.startswith("sem.mp-"):
                with contextlib.suppress(OSError):
                    if p.stat().st_uid == uid:
                        mine.append(p)
    if not mine:
        return []
    mapped = mapped_shm()
    return sorted(p for p in mine if _inode(p) not in mapped)


def reclaim(shm: Path = SHM, owner: int | None = None) -> list[str]:
    """Remove stale blocks (of dead owners, or of ``owner``) and unmapped semaphores;
    the names removed."""
    removed = []
    for p in [*stale_blocks(shm, owner), *unmapped_semaphores(shm)]:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            removed.append(p.name)
    return removed


def _main(parent: int) -> None:
    sys.stdin.buffer.read()  # until the parent's end of the pipe closes
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        ours = {_inode(p) for p in stale_blocks(owner=parent)}
        if not ours & mapped_shm():
            break  # no worker maps a block any more
        time.sleep(0.1)
    reclaim(owner=parent)


if __name__ == "__main__":
    _main(int(sys.argv[1]))
