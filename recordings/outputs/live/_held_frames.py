"""Frames of a channel nobody watches yet, held for its first subscriber (no I/O, no lock).

A Foxglove channel is advertised on its sensor's first frame, which no client can have
subscribed to yet. :class:`HeldFrames` keeps, per topic, the last frame (a latched topic's
last ``HOLD_LATCHED``, all together within a quarter of the live view's budget, the latest
always kept); when a client subscribes, the topic is *wanted* and
:class:`~recordings.outputs.live._foxglove_server.FoxgloveServer`'s encoder thread writes
its held frames, oldest first, before the topic's next frame. The server calls everything
here under its condition's lock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from fusion import Frame

HOLD_LATCHED = 256
"""Frames of a latched topic held while nobody subscribes."""


class HeldFrames:
    """Per topic, the frames nobody could see yet; ``budget`` is the live view's."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._held: dict[str, deque[Frame]] = {}
        self._wanted: set[str] = set()  # topics just subscribed: their held frames go out

    @property
    def wanted(self) -> bool:
        """Some topic's held frames wait to be written."""
        return bool(self._wanted)

    def hold(self, topic: str, frame: Frame, latched: bool) -> None:
        """Hold ``frame`` of ``topic``: instead of the one held before, or (``latched``)
        after it, the oldest giving way beyond ``HOLD_LATCHED`` or a quarter of the budget."""
        keep = HOLD_LATCHED if latched else 1
        held = self._held.get(topic)
        if held is None or held.maxlen != keep:
            held = self._held[topic] = deque(held or (), maxlen=keep)
        held.append(frame)
        if keep > 1:  # a latched topic's frames: within a quarter of the budget too
            sizes = [payload_bytes(f.data) for f in held]
            total = sum(sizes)
            for size in sizes[:-1]:
                if total <= self.budget // 4:
                    break
                held.popleft()
                total -= size

    def want(self, topic: str) -> bool:
        """A client subscribed to ``topic``: whether it has held frames (now wanted)."""
        if topic not in self._held:
            return False
        self._wanted.add(topic)
        return True

    def take(self) -> list[Frame]:
        """The held frames of the wanted topics, each topic's oldest first (no longer held)."""
        wanted, self._wanted = self._wanted, set()
        return [f for topic in wanted for f in self._held.pop(topic, ())]

    def holds(self, topic: str) -> tuple[Frame, ...]:
        """What ``topic`` holds now, oldest first."""
        return tuple(self._held.get(topic, ()))


def payload_bytes(data: Any) -> int:
    """About how many bytes a frame's payload holds (arrays, bytes, dicts of them)."""
    if isinstance(data, np.ndarray):
        return int(data.nbytes)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return len(data)
    if isinstance(data, Mapping):
        return sum(payload_bytes(v) for v in data.values())
    return 64
