"""The writers' thread shell: jobs in order, a failure kept and said once, owners let go.

:class:`~recordings.hfr._writer_thread.WriterThread` is shared by the recorder
and the snapshot recorder; here it runs a plain owner's jobs, so what it
promises is checked apart from either.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from recordings.hfr._writer_thread import STOP, WriterThread


class Owner:
    def __init__(self, *, weak: bool = True, fail_at: int | None = None) -> None:
        self.cond = threading.Condition()
        self.done: list[int] = []
        self.failures: list[BaseException] = []
        self.fail_at = fail_at
        self.closing = False
        self.thread = WriterThread(self, self.cond, "test-writer", weak=weak)
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


@pytest.mark.parametrize("weak", [True, False])
def test_a_weak_thread_lets_its_owner_go_and_a_strong_one_keeps_it(weak: bool) -> None:
    owner = Owner(weak=weak)
    owner.put(1)
    thread = owner.thread
    with owner.cond:
        while owner.done != [1]:
            owner.cond.wait(1)
    holder = [owner]
    del owner
    holder.clear()
    gc.collect()
    with thread.cond:
        thread.cond.notify_all()  # wake it: it looks for its owner again
    thread.join(5 if weak else 0.2)  # the weak one ends at once; the strong one waits on
    assert thread.thread.is_alive() is not weak
    if not weak:
        with thread.cond:
            thread.put(STOP)  # a job its owner's _next_job hands back as STOP
        thread.join(10)
        assert not thread.thread.is_alive()
