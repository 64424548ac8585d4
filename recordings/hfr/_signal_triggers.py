"""Signals as snapshot triggers: noted by the handler, taken by the recorder's next call.

A signal handler runs between two bytecodes of whatever the main thread was
doing, possibly inside the :class:`~recordings.SnapshotRecorder`'s own
``write`` holding its lock: taking that lock in the handler could deadlock.
So :class:`SignalTriggers`'s handler only appends the signal number to a
deque (atomic), and the recorder turns each noted signal into a trigger at
its next ``write`` or ``close`` (:meth:`SignalTriggers.take`).
"""

from __future__ import annotations

import collections
import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["SignalTriggers"]


class SignalTriggers:
    """Signals noted since the last :meth:`take`, and the handlers they replaced."""

    def __init__(self) -> None:
        self.pending: collections.deque[int] = collections.deque()
        """Signal numbers noted and not taken yet (test it before calling :meth:`take`)."""
        self._old: dict[int, Any] = {}

    def install(self, signum: int) -> None:
        """Note ``signum`` from now on (main thread only: :func:`signal.signal`)."""
        self._old[signum] = signal.signal(signum, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.pending.append(signum)

    def take(self) -> Iterator[str]:
        """The reason of each signal noted, oldest first (``"signal SIGUSR1"``)."""
        while self.pending:
            yield f"signal {signal.Signals(self.pending.popleft()).name}"

    def restore(self) -> None:
        """Put back the handlers :meth:`install` replaced (where this thread may)."""
        for signum, old in self._old.items():
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signum, old)
        self._old.clear()
