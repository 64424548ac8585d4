"""Per-topic ledger bookkeeping of a bag read: messages read, frames yielded, and the
messages a topic's index promised that were never read.

The reading thread reports how many messages of each sensor a batch read
(:meth:`TopicTally.receive`, at once: a message read is received); the frames yielded are
counted one by one and told to the ledgers once per batch (:meth:`TopicTally.flush`, one
ledger call per sensor, not per frame). :meth:`TopicTally.shortfalls` compares what was
read with the index at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fusion import InputLedger


class TopicTally:
    """The ledgers of a bag read's sensors and what each has read and yielded."""

    def __init__(self, ledgers: Mapping[str, InputLedger]) -> None:
        self.ledgers = dict(ledgers)
        self.read = dict.fromkeys(self.ledgers, 0)
        """Messages read per sensor."""
        self._emitted = dict.fromkeys(self.ledgers, 0)

    def receive(self, counts: Mapping[str, int]) -> None:
        """``counts`` messages of each sensor were read."""
        for sensor, n in counts.items():
            self.ledgers[sensor].receive(n)
            self.read[sensor] += n

    def emitted(self, sensor: str) -> None:
        """One frame of ``sensor`` was yielded (told to its ledger at the next flush)."""
        self._emitted[sensor] += 1

    def flush(self) -> None:
        """Tell the ledgers the frames yielded since the last flush."""
        emitted = self._emitted
        for sensor, n in emitted.items():
            if n:
                self.ledgers[sensor].emit(n, frames=n)
                emitted[sensor] = 0

    def shortfalls(
        self, wanted: Mapping[str, str], promised: Mapping[str, int]
    ) -> Iterator[tuple[str, str, int, int]]:
        """``(topic, sensor, promised, read)`` of each topic read short of its index."""
        for topic, sensor in wanted.items():
            if self.read[sensor] < promised[topic]:
                yield topic, sensor, promised[topic], self.read[sensor]
