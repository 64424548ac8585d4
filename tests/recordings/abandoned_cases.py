"""An abandoned recorder in a reference cycle still finishes its file, whichever thread
the cyclic garbage collector runs in.

A recorder stored on an object whose bound methods are callbacks sits in a
cycle, so only the cyclic collector frees it, and that runs in whichever
thread allocates: the writer thread itself, perhaps while it holds the
recorder's lock (asking for its next job) or between two jobs; or another
thread while the writer thread waits for work. Each case is made
deterministic here (the collector is run from a wrapper around the writer
thread's own calls, or while the thread is known to wait) and must end the
same way: a ``ResourceWarning``, the writer thread ended within a bound, and
a file the reader opens with its index and every frame written, in order.
"""

from __future__ import annotations

import contextlib
import gc
import re
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from recordings import Recorder
from recordings.hfr import _chunk_flow, _writer, open_recording

from .helpers import make_frames

BOUND = 10.0  # seconds: every wait in these tests ends by then
FRAMES = 90


@pytest.fixture(autouse=True)
def _collect_only_when_told() -> Iterator[None]:
    """No automatic collection: the cycle is collected where each test says."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Callbacks:
    """Holds a recorder and hands out its own bound method: the usual cycle."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.on_frame: Callable[[], None] = self.tick  # self -> bound method -> self

    def tick(self) -> None:
        pass


class Abandoned:
    """A recorder written to and held only through a cycle; the test drops the cycle.

    ``at`` names the call that runs the collector: the writer thread's ``"next_job"``
    (under the recorder's lock) or ``"run_job"`` (between jobs, out of the lock), a
    compression thread's ``"encode"`` (a chunk the writer thread waits for), or None
    (the writer thread only says when it waits; the test collects).
    """

    def __init__(self, path: Path, at: str | None, **options: Any) -> None:
        self.patch = pytest.MonkeyPatch()
        self.armed = threading.Event()
        self.entered = threading.Event()
        self.dropped = threading.Event()
        self.waiting = False  # the writer thread's last question got "wait" (under the lock)
        rec = Recorder(path, **options)
        self.alive = weakref.ref(rec)  # not a reference: only the cycle holds it
        self.thread, self.lock = rec._thread, rec._lock
        self._wrap(rec, at)
        if at in ("run_job", "encode"):
            self.armed.set()  # its first job after this (the flush seal) collects
        for frame in make_frames(FRAMES):
            rec.write(frame)
        self.holder = [Callbacks(rec)]

    def _wrap(self, rec: Recorder, at: str | None) -> None:
        flow = rec._flow  # not kept here: only the writer thread holds it
        asked, ran, encode_chunk = flow._next_job, flow._run_job, _chunk_flow._encode

        def collect() -> None:
            self.armed.clear()
            self.entered.set()
            self.dropped.wait(BOUND)  # the test has dropped the last reference
            self.collect()

        def next_job() -> tuple[Any, float | None]:
            if at == "next_job" and self.armed.is_set():
                collect()
            job, timeout = asked()
            self.waiting = job is None
            return job, timeout

        def run_job(job: Any) -> bool:
            if at == "run_job" and self.armed.is_set():
                collect()
            return ran(job)

        def encode(sealed: Any, level: Any) -> Any:
            if self.armed.is_set():
                collect()
            return encode_chunk(sealed, level)

        flow._next_job = next_job  # type: ignore[method-assign]
        flow._run_job = run_job  # type: ignore[method-assign]
        if at == "encode":
            self.patch.setattr(_chunk_flow, "_encode", encode)

    def collect(self) -> None:
        """Collect until the recorder is gone (bounded): ``gc.collect()`` returns at once,
        collecting nothing, while a collection another thread started is still running
        (a slow finaliser of an earlier test's object): seen once in a full run."""
        deadline = time.monotonic() + BOUND
        while self.alive() is not None and time.monotonic() < deadline:
            gc.collect()
            if self.alive() is not None:
                time.sleep(0.01)

    def wake(self) -> None:
        """Wake the writer thread if it waits for work. It may be asking for its next job
        already, armed, and then holds the recorder's lock while it waits for the drop:
        blocking on the lock here deadlocked the test until the bound (2 in 25 runs at
        load), so the lock is only tried until the thread has entered the wrapper."""
        while not self.entered.is_set():
            if self.lock.acquire(timeout=0.01):
                try:
                    self.lock.notify_all()
                finally:
                    self.lock.release()
                return

    def drop_when_entered(self) -> bool:
        """Once the writer thread waits in the wrapper, drop the cycle; whether the thread
        then ends within the bound."""
        assert self.entered.wait(BOUND)
        self.holder.clear()
        self.dropped.set()
        return self._ended()

    def drop_and_collect(self) -> bool:
        """Drop the cycle and collect it in this thread; whether the writer thread ends."""
        self.holder.clear()
        self.collect()  # __del__ runs here, in this thread
        return self._ended()

    def _ended(self) -> bool:
        self.thread.join(BOUND)
        self.patch.undo()
        return not self.thread.is_alive()


@contextlib.contextmanager
def warned(match: str) -> Iterator[None]:
    """The recorder's ``__del__`` warns once, matching ``match``, within the block. Its
    ``warnings.warn`` is recorded directly: the warning comes from another thread, and
    pytest.warns (process-wide filters) missed it twice in full parallel runs, the
    suite's 'error' filter turning it into an exception ignored in ``__del__``."""
    calls: list[tuple[str, type[Warning]]] = []

    def warn(message: str, category: type[Warning], **_: Any) -> None:
        calls.append((str(message), category))  # list.append: safe from any thread

    patch = pytest.MonkeyPatch()
    patch.setattr(_writer, "warnings", types.SimpleNamespace(warn=warn))
    try:
        yield
    finally:
        patch.undo()
    assert [c for _, c in calls] == [ResourceWarning], calls
    assert re.search(match, calls[0][0]), calls


def _check_file(path: Path) -> None:
    with open_recording(path) as log:
        assert log.indexed  # the footer index and trailer were written
        assert log.damage == []
        written = [(f.sensor, f.seq) for f in log.frames()]
    assert written == [(f.sensor, f.seq) for f in make_frames(FRAMES)]


def test_collected_on_the_writer_thread_under_its_lock(tmp_path: Path) -> None:
    """The collector runs while the writer thread holds the recorder's (non-reentrant)
    lock, asking for its next job: the recorder's ``__del__`` must not take it again."""
    path = tmp_path / "under_lock.hfr"
    rec = Abandoned(path, "next_job", flush_interval=None, chunk_bytes=64 << 10)
    rec.armed.set()
    rec.wake()  # it asks for its next job, armed
    with warned(r"under_lock\.hfr.* without close\(\)"):
        ended = rec.drop_when_entered()
    assert ended, "the writer thread hangs: the recorder's lock taken twice"
    _check_file(path)


def test_collected_on_the_writer_thread_between_jobs(tmp_path: Path) -> None:
    """The collector runs in the writer thread out of the lock, as a job starts (a chunk
    or the flush seal): the file is finished once, after that job, not inside it."""
    path = tmp_path / "between_jobs.hfr"
    rec = Abandoned(path, "run_job", flush_interval=0.05, chunk_bytes=64 << 10)
    with warned(r"between_jobs\.hfr.* without close\(\)"):
        ended = rec.drop_when_entered()
    assert ended
    _check_file(path)


def test_collected_on_a_compression_thread(tmp_path: Path) -> None:
    """The collector runs in a compression thread, in the middle of a chunk the writer
    thread waits for: ``__del__`` must not wait there for the writer thread."""
    path = tmp_path / "compressing.hfr"
    rec = Abandoned(path, "encode", flush_interval=0.05, chunk_bytes=64 << 10)
    with warned(r"compressing\.hfr.* without close\(\)"):
        ended = rec.drop_when_entered()
    assert ended, "the writer thread waits for a chunk whose thread waits for it"
    _check_file(path)


def test_collected_on_another_thread_while_the_writer_waits(tmp_path: Path) -> None:
    """The collector runs in the test's thread while the writer thread waits for work:
    the writer thread must still be there to write what ``close()`` hands it."""
    path = tmp_path / "idle.hfr"
    rec = Abandoned(path, None, flush_interval=None, chunk_bytes=64 << 10)
    with rec.lock:  # once it said "wait" and we hold the lock, it waits in cond.wait
        for _ in range(int(BOUND / 0.05)):
            if rec.waiting:
                break
            rec.lock.wait(0.05)
        assert rec.waiting
    with warned(r"idle\.hfr.* without close\(\)"):
        ended = rec.drop_and_collect()
    assert ended
    _check_file(path)
