"""The taking thread of a :class:`~adapters.ros.Ros2Source`: every reader's samples, as they come.

One thread waits on all readers at once (a DDS wait set, 100 ms at a time so a stop is
never late) and takes what arrived, nothing more: decoding runs elsewhere meanwhile, so a
camera's JPEGs never keep a 200 Hz IMU's reader from being emptied. What is taken and not
handed on yet is bounded (256 MiB); past it samples wait in DDS, whose queues count what
they reject. Each round also reads every reader's statuses and turns them into events
(:func:`~adapters.ros._live_checks.status_events`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.ros._idltypes import message_class, sample_bytes
from adapters.ros._live_checks import Distributions, Event, read_status, status_events
from adapters.ros._live_topics import Route
from adapters.ros._participant import Participant
from fusion import Clock

WAIT_NS = 100_000_000
"""One wait of the taking thread: how late a stop can be."""
_TAKE = 256  # samples taken from one reader per round
_PENDING_BYTES = 256 << 20  # taken and not handed on yet: past this, samples wait in DDS


@dataclass(slots=True)
class Round:
    """What one wait of the taking thread brought (handed to the event loop)."""

    items: list[tuple[Route, bytes, int]] = field(default_factory=list)
    """``(route, CDR bytes, receive time)`` of each sample taken, not decoded yet."""
    size: int = 0
    """Bytes in ``items``."""
    received: dict[str, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    """``(sensor, reason, message, units lost)``; ``units == 0`` is a warning."""
    joined: bool = False
    """A publisher matched a reader: check its type hash."""

    def add(self, other: Round) -> None:
        """Append what ``other`` brought."""
        self.items += other.items
        self.size += other.size
        self.events += other.events
        self.joined = self.joined or other.joined
        for sensor, n in other.received.items():
            self.received[sensor] = self.received.get(sensor, 0) + n


class Taker:
    """The readers of ``routes`` on ``participant``, one wait set, and the thread taking them."""

    def __init__(
        self, participant: Participant, routes: Sequence[Route], distros: Distributions
    ) -> None:
        self.participant = participant
        self.routes = list(routes)
        self.distros = distros
        self.lock = threading.Lock()
        """Held while DDS is used by the taking thread, and to close the participant."""
        self._pending = Round()
        self._pending_cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._waitset: Any = None
        self._wake: Any = None

    def open_readers(self) -> None:
        """Make each route's reader (its type, QoS and type hash) and the wait set."""
        from cyclonedds.core import (
            GuardCondition,
            InstanceState,
            ReadCondition,
            SampleState,
            ViewState,
            WaitSet,
        )

        store, dds = self.distros.store, self.participant.dds
        self._waitset = WaitSet(dds)
        self._wake = GuardCondition(dds)
        self._waitset.attach(self._wake)
        self._conditions = []
        mask = SampleState.Any | ViewState.Any | InstanceState.Any
        for route in self.routes:
            cls = message_class(store, route.msgtype)
            digest = store.hash_rihs01(route.msgtype)
            route.reader = self.participant.reader(route.topic, cls, route.qos, type_hash=digest)
            condition = ReadCondition(route.reader, mask)
            self._waitset.attach(condition)
            self._conditions.append(condition)

    def start(self, clock: Clock) -> None:
        """Start the thread that takes every reader's samples (once)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._loop, args=(clock,), name="ros2-take", daemon=True
        )
        self._thread.start()

    def _loop(self, clock: Clock) -> None:
        """Take samples as they come until the participant closes; nothing is decoded here,
        so a camera's JPEG never keeps a 200 Hz IMU's queue from being emptied."""
        while self.participant.dds is not None:
            with self._pending_cond:
                behind = self._pending.size >= _PENDING_BYTES
            if behind:  # decoding is behind: leave the samples in DDS (its queues count)
                with self._pending_cond:
                    self._pending_cond.wait(0.05)
                continue
            got = self._take_round(clock)
            if got.items or got.events or got.received or got.joined:
                with self._pending_cond:
                    self._pending.add(got)
                    self._pending_cond.notify_all()

    def next_round(self) -> Round:
        """What the taking thread took since the last call, waiting at most 100 ms for some
        (runs in a worker thread)."""
        with self._pending_cond:
            if not (self._pending.items or self._pending.events or self._pending.joined):
                self._pending_cond.wait(WAIT_NS / 1e9)
            got, self._pending = self._pending, Round()
            self._pending_cond.notify_all()
        return got

    def _take_round(self, clock: Clock) -> Round:
        """Wait (at most 100 ms) and take what every reader has (the taking thread)."""
        out = Round()
        with self.lock:
            if self.participant.dds is None:
                return out
            self._waitset.wait(WAIT_NS)
            for route in self.routes:
                events, joined = status_events(
                    route, read_status(route), self.participant.publications, self.distros
                )
                out.events += events
                out.joined = out.joined or joined
                try:
                    samples = route.reader.take(N=_TAKE)
                except Exception as err:  # the binding's; the samples stay for the next round
                    message = f"ROS 2 topic {route.topic!r}: taking samples failed: {err}"
                    out.events.append((route.sensor, "dds_take_failed", message, 0))
                    continue
                if samples:
                    self._keep(route, samples, clock.now(), out)
        return out

    @staticmethod
    def _keep(route: Route, samples: list[Any], now: int, out: Round) -> None:
        """Keep the samples that carry a message (not a writer's dispose or unregister)."""
        n = 0
        for sample in samples:
            info = getattr(sample, "sample_info", None)
            if info is None or not info.valid_data:
                continue
            n += 1
            raw = sample_bytes(sample)
            out.items.append((route, raw, now))
            out.size += len(raw)
        if n:
            out.received[route.sensor] = out.received.get(route.sensor, 0) + n

    def close(self) -> None:
        """Leave the DDS domain: wake the wait, close the participant, join the thread."""
        if self._wake is not None:
            self._wake.set(True)
        with self.lock:
            self.participant.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            with self._pending_cond:
                self._pending_cond.notify_all()
            thread.join(timeout=5)
