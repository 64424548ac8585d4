"""The writers' thread shell: jobs in order, a failure kept and said once, owners let go.

:class:`~recordings.hfr._writer_thread.WriterThread` is shared by the recorder
and the snapshot recorder; here it runs a plain owner's jobs, so what it
promises is checked apart from either.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

from recordings.hfr._writer_thread import STOP, WriterThread


class Owner:
    def __init__(self, *, fail_at: int | None = None) -> None:
        self.cond = threading.Condition()
        self.done: list[int] = []
        self.failures: list[BaseException] = []
        self.fail_at = fail_at
        self.closing = False
        self.thread = WriterThread(self, self.cond, "test-writer")
        self.thread.start()

    def _next_job(self) -> tuple[Any, float | None]:
        queue = self.thread.queue
        if queue:
            return queue[0], None
        return (STOP if self.closing else None), None

    def _run_job(self, job: int) -> bool:
        if job == self.fail_at:
            raise OSError(28, "No space left on device")
        self.done.append(job)
        self.thread.done()
        return True

    def _failed(self, err: BaseException) -> None:
        self.failures.append(err)

    def put(self, job: int) -> None:
        with self.cond:
            self.thread.put(job)

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.thread.join(10)


def test_jobs_run_in_the_order_queued_and_stop_ends_the_thread() -> None:
    owner = Owner()
    for job in range(50):
        owner.put(job)
    owner.close()
    assert owner.done == list(range(50))
    assert not owner.thread.thread.is_alive()
    assert owner.thread.error is None
    assert owner.failures == []


def test_a_failed_job_is_kept_said_once_and_ends_the_thread() -> None:
    owner = Owner(fail_at=3)
    for job in range(10):
        owner.put(job)
    owner.thread.join(10)
    assert not owner.thread.thread.is_alive()
    assert owner.done == [0, 1, 2]
    assert isinstance(owner.thread.error, OSError)
    assert owner.failures == [owner.thread.error]  # told once
    assert not owner.thread.queue  # what was queued after it is dropped, not left waiting


def test_the_thread_holds_its_owner_until_it_ends_then_lets_go() -> None:
    """Held strongly (a weak reference is cleared by the cyclic collector before the
    owner's ``__del__`` runs: the thread would be gone when asked to finish)."""
    owner = Owner()
    owner.put(1)
    thread = owner.thread
    with owner.cond:
        while owner.done != [1]:
            owner.cond.wait(1)
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert gone() is not None  # the thread holds it while it runs
    with thread.cond:
        thread.put(STOP)  # a job its owner's _next_job hands back as STOP
    thread.join(10)
    assert not thread.thread.is_alive()
    gc.collect()
    assert gone() is None  # an ended thread lets go of it
