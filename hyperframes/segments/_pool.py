"""The process pool that works a job's segments; results come back in time order.

Theory of operation. A :class:`concurrent.futures.ProcessPoolExecutor`
(``spawn``: no forked threads) works the segments a
:class:`~hyperframes.segments._jobs.Job` plans; each task decodes its segment
and runs the job on it.

Results come back through a **bounded pool of shared-memory blocks**: the
parent creates ``blocks`` :class:`multiprocessing.shared_memory.SharedMemory`
blocks of ``block_bytes`` and gives each task one; the task writes every
numpy array of its results into it and returns only a small description
(offsets, dtypes, shapes; other values are pickled as they are small). At most
``blocks`` tasks are in flight, so memory is bounded; a task whose results
fill its block stops there and its segment's remainder becomes a new
segment. The parent copies the arrays out and frees the block.

**Children die with their parent.** Each worker watches its parent
(:func:`_watch_parent`): on Linux ``PR_SET_PDEATHSIG`` makes the kernel kill
it with the parent (when the pool was made in the main thread, since the
signal follows the thread that spawned it), and everywhere a thread checks
``getppid()`` every 0.2 s and exits when the parent is gone. Blocks are
named ``hf_<pid>_<n>`` and unlinked at exit; a janitor process outside the
parent's process group removes them when the parent is killed, and stale
ones of dead owners are reclaimed at the next start (and by ``hyperframes
doctor --clean``); see :mod:`hyperframes.segments._janitor`.

**Order.** Results are yielded in time order, a segment's as soon as every
earlier one is done: identical to the serial run (same items, same values,
same order), which :func:`run_serial` gives.

**Stragglers.** Segment times vary (a scene that decodes slowly, a dense
stretch of a log). When nothing is left to start and a running segment has
run ``straggle`` times longer than the median segment so far, it is split:
the parent asks the job for a point ``S`` between its progress and its end
(:meth:`~hyperframes.segments._jobs.Job.split_point`: a key frame for a
video), and, under the lock both sides take per item, tells the task to
stop before ``S`` if it has not reached ``S`` yet; ``[S, end)`` is then a new
segment. A task checks its stop point before each item, so no item is done
twice and none is lost.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import itertools
import multiprocessing as mp
import os
import pickle
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path
from typing import Any

import numpy as np

from fusion.errors import HyperframesError
from hyperframes.segments import _janitor as janitor
from hyperframes.segments._jobs import Job

__all__ = ["SegmentError", "SegmentStatistics", "run_segments", "run_serial"]

_NONE = -(1 << 63)  # "no start": before every time
_MAX = (1 << 63) - 1
_ALIGN = 64


class SegmentError(HyperframesError):
    """A segment's task failed; names the source and the time range."""


@dataclass(slots=True)
class SegmentStatistics:
    """What a run did."""

    planned: int = 0
    """Segments in the plan."""
    run: int = 0
    """Segment tasks finished (re-splits and continuations included)."""
    resplit: int = 0
    """Running segments cut in two because they lagged."""
    continued: int = 0
    """Segments continued because their results filled a block."""
    seconds: list[float] = field(default_factory=list)
    """Run time of each finished task (from its start in a process)."""


# -- the worker-process side ------------------------------------------------------

_progress: Any = None
_stop: Any = None
_began: Any = None
_blocks: dict[str, SharedMemory] = {}


def _init(progress: Any, stop: Any, began: Any, parent: int, deathsig: bool) -> None:
    global _progress, _stop, _began
    _progress, _stop, _began = progress, stop, began
    _watch_parent(parent, deathsig)


_PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int, deathsig: bool) -> None:
    """Exit when process ``parent`` dies: at once by the kernel where it can
    (Linux ``PR_SET_PDEATHSIG``), else within 0.2 s by a polling thread."""
    if deathsig and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the watch was set
        os._exit(1)

    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=poll, name="hf-parent-watch", daemon=True).start()


@dataclass(slots=True)
class _Out:
    items: list[tuple[int, bytes, list[tuple[int, str, tuple[int, ...]]]]]
    """``(t, pickled value with arrays replaced, [(offset, dtype, shape)])`` per item."""
    resume: int | None = None
    """Where the segment's rest starts, if this task stopped early."""
    reason: str = ""
    seconds: float = 0.0
    """How long the task ran (not counting its wait for a process)."""


def _work(job: Job, start: int | None, end: int | None, slot: int, block: str) -> _Out:
    shm = _blocks.get(block)
    if shm is None:
        shm = _blocks[block] = SharedMemory(block)
    buf = shm.buf
    assert buf is not None
    lock = _progress.get_lock()
    began = time.monotonic()  # CLOCK_MONOTONIC: the parent's clock too
    _began[slot] = began
    items = job.items(start, end)
    try:
        out = _fill(job, items, slot, buf, lock)
        out.seconds = time.monotonic() - began
        return out
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()  # a generator stopped early releases its decoder or replay now


def _fill(job: Job, items: Iterator[tuple[int, Any]], slot: int, buf: Any, lock: Any) -> _Out:
    size = len(buf)
    used = 0
    out = _Out([])
    for t, raw in items:
        with lock:
            _progress[slot] = t
            stop_at = _stop[slot]
        if t >= stop_at:
            out.resume, out.reason = stop_at, "resplit"
            return out
        value = job.process(raw)
        arrays: list[np.ndarray[Any, Any]] = []
        body = _Pickler.dumps(value, arrays)
        specs = []
        at = used
        for a in arrays:
            at += -at % _ALIGN
            if at + a.nbytes > size:
                if not out.items:
                    raise ValueError(
                        f"one result needs more than the {size} bytes of a shared-memory block"
                    )
                out.resume, out.reason = t, "full"
                return out
            view = np.ndarray(a.shape, a.dtype, buffer=buf, offset=at)
            view[...] = a
            specs.append((at, a.dtype.str, a.shape))
            at += a.nbytes
        used = at
        out.items.append((t, body, specs))
    return out


class _Pickler(pickle.Pickler):
    """Pickles a value with every numpy array replaced by a slot number (persistent id)."""

    def __init__(self, file: Any, arrays: list[np.ndarray[Any, Any]]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays = arrays

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and not obj.dtype.hasobject:
            self.arrays.append(np.ascontiguousarray(obj))
            return len(self.arrays) - 1
        return None

    @classmethod
    def dumps(cls, value: Any, arrays: list[np.ndarray[Any, Any]]) -> bytes:
        import io

        f = io.BytesIO()
        cls(f, arrays).dump(value)
        return f.getvalue()


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, arrays: list[np.ndarray[Any, Any]]) -> None:
        import io

        super().__init__(io.BytesIO(data))
        self.arrays = arrays

    def persistent_load(self, pid: Any) -> Any:
        return self.arrays[pid]


# -- the parent side --------------------------------------------------------------


def run_serial(job: Job) -> Iterator[tuple[int, Any]]:
    """The baseline: every item of the whole source, in one process, in order."""
    for t, raw in job.items(None, None):
        yield t, job.process(raw)


def run_segments(
    job: Job,
    *,
    processes: int = 2,
    target_s: float = 2.0,
    blocks: int | None = None,
    block_bytes: int = 64 << 20,
    straggle: float = 2.0,
    stats: SegmentStatistics | None = None,
    segments: Sequence[tuple[int | None, int | None]] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Items of ``job`` over its segments, worked by ``processes`` processes, in time order.

    ``segments`` overrides the plan (``job.segments(target)``); ``blocks``
    (default ``processes + 1``) bounds the tasks in flight and the shared
    memory to ``blocks * block_bytes``.
    """
    if processes < 1 or block_bytes < _ALIGN:
        raise ValueError(
            f"need processes >= 1 and block_bytes >= 64, got {processes}, {block_bytes}"
        )
    stats = stats if stats is not None else SegmentStatistics()
    plan = list(segments) if segments is not None else job.segments(round(target_s * 1e9))
    stats.planned = len(plan)
    nblocks = blocks if blocks is not None else processes + 1
    if nblocks < 1:
        raise ValueError(f"blocks must be >= 1, got {nblocks}")
    ctx = mp.get_context("spawn")
    progress = ctx.Array("q", [_NONE] * nblocks)
    stop = ctx.Array("q", [_MAX] * nblocks)
    began = ctx.Array("d", [0.0] * nblocks, lock=False)
    janitor.reclaim()  # what killed pools left behind
    sweeper = _start_janitor()
    shms: list[SharedMemory] = []
    pool = None
    try:
        shms = [_block(block_bytes) for _ in range(nblocks)]
        deathsig = threading.current_thread() is threading.main_thread()
        pool = ProcessPoolExecutor(
            processes,
            mp_context=ctx,
            initializer=_init,
            initargs=(progress, stop, began, os.getpid(), deathsig),
        )
        yield from _drive(job, plan, pool, shms, progress, stop, began, straggle, stats)
    finally:
        with progress.get_lock():
            for i in range(nblocks):
                stop[i] = _NONE  # running tasks stop at their next item
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for shm in shms:
            shm.close()
            with contextlib.suppress(FileNotFoundError):
                shm.unlink()
        if sweeper is not None:
            _stop_janitor(sweeper)


_blocks_made = itertools.count()


def _block(size: int) -> SharedMemory:
    """A new block named ``hf_<pid>_<n>``; a leftover of a dead process that had our
    pid is removed first."""
    name = janitor.block_name(os.getpid(), next(_blocks_made))
    try:
        return SharedMemory(name, create=True, size=size)
    except FileExistsError:
        with contextlib.suppress(FileNotFoundError):
            SharedMemory(name).unlink()
        return SharedMemory(name, create=True, size=size)


def _start_janitor() -> subprocess.Popen[bytes] | None:
    """The janitor process (Linux ``/dev/shm`` only), in its own session."""
    if not janitor.SHM.is_dir():
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", janitor.__file__, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a kill of our process group spares it
        )
    except OSError:
        return None


def _stop_janitor(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()  # EOF: it sweeps (nothing left by now) and exits
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass(slots=True)
class _Running:
    start: int | None
    end: int | None
    slot: int
    split: bool = False


def _key(start: int | None) -> int:
    return _NONE if start is None else start


def _drive(
    job: Job,
    plan: list[tuple[int | None, int | None]],
    pool: ProcessPoolExecutor,
    shms: list[SharedMemory],
    progress: Any,
    stop: Any,
    began: Any,
    straggle: float,
    stats: SegmentStatistics,
) -> Iterator[tuple[int, Any]]:
    pending: deque[tuple[int | None, int | None]] = deque(plan)
    order = sorted(_key(s) for s, _ in plan)  # every segment's start, in time order
    results: dict[int, list[tuple[int, Any]]] = {}
    free = deque(range(len(shms)))
    running: dict[Future[_Out], _Running] = {}
    head = 0
    lock = progress.get_lock()

    def add(start: int, end: int | None, front: bool) -> None:
        bisect.insort(order, start)
        (pending.appendleft if front else pending.append)((start, end))

    while pending or running:
        while pending and free:
            start, end = pending.popleft()
            slot = free.popleft()
            with lock:
                progress[slot], stop[slot] = _NONE, _MAX
            began[slot] = 0.0
            fut = pool.submit(_work, job, start, end, slot, shms[slot].name)
            running[fut] = _Running(start, end, slot)
        done, _ = wait(running, timeout=0.05, return_when=FIRST_COMPLETED)
        # In time order: of two segments that failed by now, the earlier one is named.
        for fut in sorted(done, key=lambda f: _key(running[f].start)):
            run = running.pop(fut)
            try:
                out = fut.result()
            except Exception as err:
                raise SegmentError(
                    f"segment [{run.start}, {run.end}) of {_name(job)} failed: {err}"
                ) from err
            results[_key(run.start)] = _collect(out, shms[run.slot])
            free.append(run.slot)
            stats.run += 1
            stats.seconds.append(out.seconds)
            if out.resume is not None and out.reason == "full":
                stats.continued += 1
                add(out.resume, run.end, front=True)
        if not pending and free and stats.seconds:
            _split_stragglers(job, running, progress, stop, began, straggle, stats, add)
        while head < len(order) and order[head] in results:
            yield from results.pop(order[head])
            head += 1


def _split_stragglers(
    job: Job,
    running: dict[Future[_Out], _Running],
    progress: Any,
    stop: Any,
    began: Any,
    straggle: float,
    stats: SegmentStatistics,
    add: Callable[[int, int | None, bool], None],
) -> None:
    typical = statistics.median(stats.seconds)
    now = time.monotonic()
    for run in running.values():
        started = began[run.slot]
        if run.split or not started or now - started <= straggle * typical:
            continue  # already cut, still waiting for a process, or not late
        with progress.get_lock():
            at = progress[run.slot]
            cut = job.split_point(at, run.end) if at != _NONE else None
            if cut is None or cut <= at or (run.start is not None and cut <= run.start):
                continue
            stop[run.slot] = cut
        run.split = True
        stats.resplit += 1
        add(cut, run.end, False)
        run.end = cut


def _collect(out: _Out, shm: SharedMemory) -> list[tuple[int, Any]]:
    """The task's items, arrays copied out of its block (which is then free again)."""
    buf = shm.buf
    assert buf is not None
    items = []
    for t, body, specs in out.items:
        arrays = [
            np.ndarray(shape, np.dtype(dtype), buffer=buf, offset=offset).copy()
            for offset, dtype, shape in specs
        ]
        items.append((t, _Unpickler(body, arrays).load()))
    return items


def _name(job: Job) -> str:
    path = getattr(job, "path", None)
    return f"'{Path(path).name}'" if path else type(job).__name__
