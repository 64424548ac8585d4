"""Put results back in input order, within a bounded window.

Batches finish out of order (several replicas, retries after an error, items
that skip inference), yet a consumer wants result ``k`` after result ``k - 1``.
:class:`ReorderBuffer` numbers items as they are admitted and holds finished
results until every earlier one has finished, then releases the run.

The window is bounded: at most ``window`` items may be admitted and not yet
released. :meth:`ReorderBuffer.admit` refuses beyond that, so a slow item
stalls the producer (backpressure) instead of growing memory without limit.
Sans-I/O, like the batcher: no clock, no waiting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

from fusion.errors import ConfigError, UsageError

T = TypeVar("T")


class ReorderBuffer(Generic[T]):
    """Sequence numbers in, results out in sequence order."""

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ConfigError(f"reorder window must be >= 1, got {window}")
        self.window = window
        self._next_seq = 0
        self._next_out = 0
        self._done: dict[int, T] = {}
        self._high_water = 0

    @property
    def can_admit(self) -> bool:
        """True if :meth:`admit` would succeed."""
        return self._next_seq - self._next_out < self.window

    @property
    def outstanding(self) -> int:
        """Items admitted and not yet released."""
        return self._next_seq - self._next_out

    @property
    def high_water(self) -> int:
        """Most results ever held back waiting for an earlier one."""
        return self._high_water

    def admit(self) -> int:
        """Number the next item; raises if the window is full (check :attr:`can_admit`)."""
        return self.admit_many(1)

    def admit_many(self, n: int) -> int:
        """Number the next ``n`` items; return the first number (the others follow it).

        Raises, admitting none, if fewer than ``n`` fit in the window."""
        if self._next_seq + n - self._next_out > self.window:
            raise UsageError(
                f"reorder window full: {self.outstanding} items outstanding since seq "
                f"{self._next_out}, {n} more do not fit in {self.window}"
            )
        first = self._next_seq
        self._next_seq += n
        return first

    def complete_run(self, first: int, results: Sequence[T]) -> list[T]:
        """:meth:`complete_many` of ``results`` numbered ``first, first + 1, ...``.

        A run that is next in line with nothing held back is released as it is,
        in one step (a batch back from a lone replica, the usual case)."""
        n = len(results)
        if first == self._next_out and not self._done and first + n <= self._next_seq:
            self._next_out += n
            return list(results)
        return self.complete_many(zip(range(first, first + n), results, strict=True))

    def complete(self, seq: int, result: T) -> list[T]:
        """Store the result of ``seq``; return every result now releasable, in order."""
        return self.complete_many(((seq, result),))

    def complete_many(self, results: Iterable[tuple[int, T]]) -> list[T]:
        """Store each ``(seq, result)``; return every result now releasable, in order.

        One call per finished batch instead of one per item. Raises ``ValueError``
        at the first ``seq`` not outstanding or completed twice (those before it
        are stored)."""
        done = self._done
        for seq, result in results:
            if not self._next_out <= seq < self._next_seq:
                outstanding = f"{self._next_out}..{self._next_seq - 1}"
                raise ValueError(f"seq {seq} is not outstanding (outstanding: {outstanding})")
            if seq in done:
                raise ValueError(f"seq {seq} completed twice")
            done[seq] = result
        out: list[T] = []
        while self._next_out in self._done:
            out.append(self._done.pop(self._next_out))
            self._next_out += 1
        if len(self._done) > self._high_water:
            self._high_water = len(self._done)
        return out
