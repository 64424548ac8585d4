"""What every live sink shares: a bounded queue fed without blocking, one thread, dating.

Theory of operation. A live sink (the Foxglove server, the ROS 2 publisher)
is a pipeline sink and frame tap that must never slow the pipeline down.
:meth:`LiveSink.publish` (a frame) and ``sink(group)`` (a group, whose members
are published first unless the tap already did) only append to a bounded
queue of ``backlog`` items under a condition variable; when it is full the
oldest item is dropped and counted by sensor (or ``"groups"``). One thread,
started by the subclass, takes items with :meth:`LiveSink._take` and does the
slow part (encoding, writing) outside the lock. :meth:`LiveSink._close_queue`
drops and counts what is still queued when the sink closes.

Dating is the same for every sink: ``dating="live"`` dates reference-clock
times with a wall anchor (:func:`fusion._wallclock.sample_anchor`) taken at
start and refreshed every second, as the recorder does per chunk; a
:class:`~fusion._wallclock.WallClock` (a recording's, with its ``dated``
sensors) dates a replay exactly as ``hyperframes export`` does; ``None``
leaves stamps alone (a virtual clock's times are no dates).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from typing import Literal, Self

from fusion import Frame, FrameGroup, SensorSpec, WallClock, sample_anchor
from recordings.outputs.encoders._kinds import is_internal

_ANCHOR_EVERY_S = 1.0

Dating = Literal["live"] | WallClock | None


class LiveSink:
    """The queue, the drop count and the dating of a live sink (module docstring).

    Subclasses implement :meth:`start` (which starts ``self._thread``) and the
    thread's work, and call :meth:`_close_queue` from ``close``.
    """

    def __init__(
        self,
        *,
        backlog: int,
        sensors: Iterable[SensorSpec],
        dating: Dating,
        dated: Iterable[str] | None,
    ) -> None:
        self.backlog = backlog
        self._specs: dict[str, SensorSpec] = {s.name: s for s in sensors}
        self._dating = dating
        self._dated = None if dated is None else frozenset(dated)
        self._wall: WallClock | None = dating if isinstance(dating, WallClock) else None
        self._anchor_at = 0.0
        self._queue: deque[Frame | FrameGroup] = deque()
        self._cond = threading.Condition()
        self._busy = False  # the thread holds an item taken from the queue
        self._last_seq: dict[str, int] = {}
        self._dropped: Counter[str] = Counter()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._woken = False
        self._error: BaseException | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aclose(self) -> None:
        self.close()

    @property
    def last_error(self) -> BaseException | None:
        """The last error raised while handling an item (it was counted)."""
        return self._error

    # -- feeding (never blocks) -------------------------------------------------------

    def publish(self, frame: Frame) -> None:
        """Queue ``frame``; the oldest queued item makes room (counted).

        In a :class:`~fusion.Pipeline` this is its frame tap: every aligned frame,
        grouped or not, as the recorder gets them."""
        if is_internal(frame.sensor):
            return
        if frame.seq > self._last_seq.get(frame.sensor, -1):
            self._last_seq[frame.sensor] = frame.seq
        self._put(frame)

    def __call__(self, group: FrameGroup) -> None:
        """The sink: members not published yet (none under a pipeline's tap), then the
        group marker and the worker results."""
        for frame in group.members():
            if frame.seq > self._last_seq.get(frame.sensor, -1):
                self.publish(frame)
        self._put(group)

    def has_room(self) -> bool:
        """Whether :meth:`publish` would queue without dropping (or the sink is closed)."""
        return self._closed or len(self._queue) < self.backlog

    def wait_room(self, timeout: float = 5.0) -> bool:
        """Block (at most ``timeout`` s) until the queue has room; ``False`` if it still has
        none. For a producer that may wait, as a replay of a file (a live pipeline never
        calls it: its frames cannot wait, and a full queue drops the oldest, counted)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._closed and len(self._queue) >= self.backlog:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.01))
        return True

    def _put(self, item: Frame | FrameGroup) -> None:
        if self._thread is None and not self._closed:
            self.start()
        with self._cond:
            if self._closed:
                self._count_drop(item)
                return
            if len(self._queue) >= self.backlog:
                self._count_drop(self._queue.popleft())
            self._queue.append(item)
            self._cond.notify_all()

    def _count_drop(self, item: Frame | FrameGroup) -> None:
        self._dropped["groups" if isinstance(item, FrameGroup) else item.sensor] += 1

    # -- the sink's thread -------------------------------------------------------------

    def _take(self) -> Frame | FrameGroup | None:
        """The next queued item, waiting for one; ``None`` once the sink is closed."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            self._busy = True
            return self._queue.popleft()

    def _wake(self) -> None:
        """Make the thread's :meth:`_take_or_wake` return even with nothing queued."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def _take_or_wake(self) -> Frame | FrameGroup | bool:
        """As :meth:`_take`, but ``True`` when :meth:`_wake` was called and nothing is
        queued, ``False`` once the sink is closed."""
        with self._cond:
            while not self._queue and not self._closed and not self._woken:
                self._cond.wait()
            if self._closed:
                return False
            self._woken = False
            if not self._queue:
                return True
            self._busy = True
            return self._queue.popleft()

    def _close_queue(self) -> bool:
        """Mark the sink closed, dropping (and counting) what is queued; ``False`` if it
        already was closed."""
        if self._closed:
            return False
        with self._cond:
            self._closed = True
            for item in self._queue:
                self._count_drop(item)
            self._queue.clear()
            self._cond.notify_all()
        return True

    # -- dating ------------------------------------------------------------------------

    def _date(self, t: int) -> int:
        if self._dating == "live":
            now = time.monotonic()
            if self._wall is None or now - self._anchor_at >= _ANCHOR_EVERY_S:
                self._wall = WallClock([sample_anchor()])
                self._anchor_at = now
        return t if self._wall is None else self._wall.to_utc(t)

    def _dates(self, sensor: str) -> bool:
        return self._dating is not None and (self._dated is None or sensor in self._dated)

    def _dated_frame(self, frame: Frame) -> Frame:
        if not self._dates(frame.sensor):
            return frame
        t_arrival = frame.t_arrival
        return dataclasses.replace(
            frame,
            t=self._date(frame.t),
            t_arrival=None if t_arrival is None else self._date(t_arrival),
        )

    def _dated_members(self, group: FrameGroup) -> tuple[dict[str, Frame | list[Frame]], int]:
        """The group's members dated (internal sensors left out) and its dated time."""
        members: dict[str, Frame | list[Frame]] = {
            name: [self._dated_frame(f) for f in item]
            if isinstance(item, list)
            else self._dated_frame(item)
            for name, item in group.frames.items()
            if not is_internal(name)
        }
        reference = next(iter(group.members()), None)
        dated = reference is None or self._dates(reference.sensor)
        return members, self._date(group.t) if dated else group.t
