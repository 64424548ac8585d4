"""Children die with their parent: SIGKILL a segment run's parent (or its whole process
group), the pool's workers are gone within 2 s, and within 5 s no worker, resource
tracker or janitor is left, nor any of its
shared-memory blocks (``hf_<pid>_*``) and semaphores (``sem.mp-*``) in /dev/shm."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hyperframes.segments import _janitor as janitor

ROOT = Path(__file__).resolve().parents[2]
SHM = Path("/dev/shm")

pytestmark = pytest.mark.skipif(not SHM.is_dir(), reason="needs Linux /dev/shm")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc's parent links)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(stat.rpartition(")")[2].split()[1])
    out: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - out
        out |= frontier
    return out


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def shm_mapped_by(pid: int) -> set[str]:
    """Names of the /dev/shm files ``pid`` maps (matched by inode: a semaphore's
    creator maps it under a temporary name)."""
    inodes = {
        int(line.split()[4]) for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
        if "/dev/shm/" in line
    }  # fmt: skip
    return {p.name for p in SHM.iterdir() if p.stat().st_ino in inodes}


@pytest.mark.parametrize("kill", ["parent", "process group"])
def test_nothing_outlives_a_killed_parent(clip: Path, kill: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.segments.orphan_child", str(clip)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the resource tracker's warnings as it cleans up
        text=True,
        start_new_session=True,  # its own group: killing it spares this test
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == f"started {proc.pid}\n"
        children = descendants(proc.pid)
        names = {n for pid in (proc.pid, *children) for n in shm_mapped_by(pid)}
        blocks = {n for n in names if n.startswith(f"hf_{proc.pid}_")}
        semaphores = {n for n in names if n.startswith("sem.mp-")}
        assert len(blocks) == 3  # processes + 1 blocks
        assert semaphores
        assert len(children) >= 3  # two workers, the resource tracker, the janitor
        workers = {p for p in children if b"spawn_main" in cmdline(p)}
        assert len(workers) == 2
        if kill == "parent":
            os.kill(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.wait()
        workers_gone = None
        deadline = killed + 5
        while time.monotonic() < deadline:
            left = {p for p in children if janitor.alive(p)}
            if workers_gone is None and not left & workers:
                workers_gone = time.monotonic() - killed
            files = {n for n in blocks | semaphores if (SHM / n).exists()}
            if not left and not files:
                break
            time.sleep(0.05)
        assert workers_gone is not None
        assert workers_gone < 2.0, workers_gone  # the bound
        assert not {p for p in children if janitor.alive(p)}
        assert not {n for n in blocks | semaphores if (SHM / n).exists()}
        assert not list(SHM.glob(f"hf_{proc.pid}_*"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_stale_blocks_of_dead_owners_are_reclaimed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(dead.stdout)
    stale = SHM / janitor.block_name(pid, 0)
    live = SHM / janitor.block_name(os.getpid(), 999)
    stale.write_bytes(b"x")
    live.write_bytes(b"x")
    try:
        removed = janitor.reclaim()
        assert stale.name in removed
        assert not stale.exists()
        assert live.exists()  # its owner (this test) is alive
    finally:
        for p in (stale, live):
            p.unlink(missing_ok=True)


def test_doctor_clean_removes_stale_blocks_and_says_so() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = SHM / janitor.block_name(int(dead.stdout), 7)
    stale.write_bytes(b"x")
    try:
        out = subprocess.run(
            [sys.executable, "-m", "hyperframes", "doctor", "--clean"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert out.returncode == 0
        assert f"removed {stale}" in out.stdout
        assert not stale.exists()
    finally:
        stale.unlink(missing_ok=True)
