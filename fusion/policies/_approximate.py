"""ApproximateTime: the ROS ``message_filters`` approximate-time algorithm.

Theory of operation
-------------------
This is the algorithm of ``message_filters/sync_policies/approximate_time.h``
(C++), re-expressed over sensor indices; for the same arrival order and
parameters it emits the same sets. Each sensor ``i`` has a queue ``_deques[i]``
sorted by ``t`` (arrival order, since each sensor's ``t`` strictly increases)
and a list ``_past[i]`` of frames already examined for the current candidate.

* A *candidate* is one frame per sensor: the front of every queue. Its size is
  ``end - start`` (latest minus earliest front). The *pivot* is the sensor of
  the latest front when the candidate was first made.
* While every queue is non-empty, the front with the earliest ``t`` is moved to
  ``_past`` and the new fronts form the next candidate, which replaces the old
  one if ``(end - cand_end) * (1 + age_penalty) < (start - cand_start)``.
* A set is emitted only when no later arrival could beat it: when the pivot
  itself reaches the front, or when ``(end - cand_end) * (1 + age_penalty)``
  already exceeds ``pivot_time - cand_start`` (any future candidate contains
  ``[pivot_time, end]``), or when that bound holds for the *virtual* fronts an
  empty queue could at best deliver, using ``lower_bounds`` (each sensor's
  minimum inter-frame interval).
* ``queue_size`` bounds ``len(deque) + len(past)`` per sensor; on overflow the
  search restarts and the oldest frame of the offending sensor is dropped, and
  that sensor may not be a pivot until its drop can no longer matter.

Where we go beyond ROS
----------------------
ROS drops frames silently; we count each drop with a reason (``unmatched`` for
frames skipped by the search, ``queue_full`` for overflow). ROS has no timeout:
``expire(deadline)`` publishes a pending candidate whose ``t`` is before the
deadline (it is the best set seen so far) and, when the search is blocked on an
empty queue, drops queued frames older than the deadline as ``incomplete``.
``drain()`` publishes pending candidates until none is left and drops the rest.
The group's ``t`` is the candidate's latest member (``cand_end``); it never
decreases because every sensor's members do not.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from fusion._frames import Frame, FrameGroup
from fusion.errors import ConfigError
from fusion.policies._base import PolicyBase

_NO_PIVOT = -1


class ApproximateTime(PolicyBase):
    """Best-matching sets across sensors, as ROS ``message_filters`` does (contract)."""

    def __init__(
        self,
        sensors: Iterable[str],
        queue_size: int = 10,
        max_interval: int | None = None,
        age_penalty: float = 0.0,
        lower_bounds: Mapping[str, int] | None = None,
    ) -> None:
        names = list(sensors)
        super().__init__(names)
        if len(names) < 2:
            raise ConfigError("ApproximateTime needs at least two sensors")
        if queue_size < 1:
            raise ConfigError(f"queue_size must be >= 1, got {queue_size}")
        if age_penalty < 0:
            raise ConfigError(f"age_penalty must be >= 0, got {age_penalty}")
        self.queue_size = queue_size
        self.max_interval = max_interval
        self.age_penalty = float(age_penalty)
        bounds = dict(lower_bounds or {})
        unknown = set(bounds) - set(names)
        if unknown:
            raise ConfigError(f"lower_bounds names unknown sensors {sorted(unknown)}")
        self._bounds = [int(bounds.get(s, 0)) for s in names]
        self._index = {s: i for i, s in enumerate(names)}
        self._n = len(names)
        self._deques: list[deque[Frame]] = [deque() for _ in names]
        self._past: list[list[Frame]] = [[] for _ in names]
        self._has_dropped = [False] * self._n
        self._non_empty = 0
        self._pivot = _NO_PIVOT
        self._pivot_time = 0
        self._cand: list[Frame] | None = None
        self._cand_start = 0
        self._cand_end = 0
        self._out: list[FrameGroup] = []

    # -- public, sans-I/O -------------------------------------------------------

    def push(self, frame: Frame) -> list[FrameGroup]:
        """Add one frame; return the sets it makes certain (usually 0 or 1)."""
        if not self._admit(frame):
            return []
        i = self._index[frame.sensor]
        q = self._deques[i]
        q.append(frame)
        self._held(1)
        if len(q) == 1:
            self._non_empty += 1
            if self._non_empty == self._n:
                self._process()
        if len(q) + len(self._past[i]) > self.queue_size:
            # Cancel the candidate search, drop the oldest frame of this sensor.
            self._recover_all()
            self._drop(q.popleft(), "queue_full")
            self._buffered -= 1
            self._has_dropped[i] = True
            if self._pivot != _NO_PIVOT:
                self._cand = None
                self._pivot = _NO_PIVOT
                self._process()
        return self._take_output()

    def expire(self, deadline_ns: int) -> list[FrameGroup]:
        """Publish the pending set if it lies before ``deadline_ns``; drop frames older
        than the deadline that wait on an empty queue."""
        self._advance_watermark(deadline_ns)
        while self._pivot != _NO_PIVOT and self._cand_end < deadline_ns:
            self._publish()
            self._process()
        if self._pivot == _NO_PIVOT:
            for q in self._deques:
                had = bool(q)
                while q and q[0].t < deadline_ns:
                    self._drop(q.popleft(), "incomplete")
                    self._buffered -= 1
                if had and not q:
                    self._non_empty -= 1
            if self._non_empty == self._n:
                self._process()
        return self._take_output()

    def drain(self) -> list[FrameGroup]:
        """End of stream: publish pending sets while any remain, drop everything else."""
        while self._pivot != _NO_PIVOT:
            self._publish()
            self._process()
        for q, past in zip(self._deques, self._past, strict=True):
            for frame in (*past, *q):
                self._drop(frame, "unmatched")
            self._buffered -= len(q) + len(past)
            q.clear()
            past.clear()
        self._non_empty = 0
        return self._take_output()

    # -- the ROS algorithm ----------------------------------------------------------

    def _take_output(self) -> list[FrameGroup]:
        out = self._out
        if out:
            self._out = []
        return out

    def _better(self, end: int, start: int) -> bool:
        """Is a candidate ``[start, end]`` strictly better than the current one?"""
        grow = end - self._cand_end
        if self.age_penalty:
            grow = int(grow * (1.0 + self.age_penalty))
        return grow < start - self._cand_start

    def _proved_optimal(self, end: int) -> bool:
        """No future candidate, which must contain ``[pivot_time, end]``, can be better."""
        grow = end - self._cand_end
        if self.age_penalty:
            grow = int(grow * (1.0 + self.age_penalty))
        return grow >= self._pivot_time - self._cand_start

    def _process(self) -> None:
        deques = self._deques
        n = self._n
        while self._non_empty == n:
            # Candidate boundaries: earliest front (first on ties), latest (last on ties).
            start_i = end_i = 0
            start_t = end_t = deques[0][0].t
            for i in range(1, n):
                t = deques[i][0].t
                if t < start_t:
                    start_t, start_i = t, i
                if t >= end_t:
                    end_t, end_i = t, i
            for i in range(n):
                if i != end_i:
                    self._has_dropped[i] = False
            if self._pivot == _NO_PIVOT:
                if (self.max_interval is not None and end_t - start_t > self.max_interval) or (
                    self._has_dropped[end_i]
                ):
                    self._delete_front(start_i)
                    continue
                self._make_candidate()
                self._cand_start, self._cand_end = start_t, end_t
                self._pivot, self._pivot_time = end_i, end_t
                self._move_front_to_past(start_i)
            else:
                if self._better(end_t, start_t):
                    self._make_candidate()
                    self._cand_start, self._cand_end = start_t, end_t
                self._move_front_to_past(start_i)
            if start_i == self._pivot or self._proved_optimal(end_t):
                self._publish()
            elif self._non_empty < n:
                self._virtual_search()

    def _virtual_search(self) -> None:
        """Use ``lower_bounds`` to try to prove the candidate optimal before more data."""
        moves = [0] * self._n
        while True:
            vt = [self._virtual_time(i) for i in range(self._n)]
            start_i = 0
            start_t = end_t = vt[0]
            for i in range(1, self._n):
                t = vt[i]
                if t < start_t:
                    start_t, start_i = t, i
                if t >= end_t:
                    end_t = t
            if self._proved_optimal(end_t):
                self._publish()
                return
            if self._better(end_t, start_t):
                # An optimistic future candidate beats ours: undo the virtual moves.
                self._non_empty = 0
                for i in range(self._n):
                    self._recover(i, moves[i])
                return
            self._move_front_to_past(start_i)
            moves[start_i] += 1

    def _virtual_time(self, i: int) -> int:
        q = self._deques[i]
        if q:
            return q[0].t
        bound = self._past[i][-1].t + self._bounds[i]
        return bound if bound > self._pivot_time else self._pivot_time

    def _make_candidate(self) -> None:
        self._cand = [q[0] for q in self._deques]
        for past in self._past:
            # Frames examined before this better candidate can no longer be used.
            for frame in past:
                self._drop(frame, "unmatched")
            self._buffered -= len(past)
            past.clear()

    def _publish(self) -> None:
        cand = self._cand
        assert cand is not None
        group = FrameGroup(self._cand_end, {f.sensor: f for f in cand})
        self._emitted(group, self._n)
        self._out.append(group)
        self._cand = None
        self._pivot = _NO_PIVOT
        # Put examined frames back and remove the published ones (the fronts).
        self._non_empty = 0
        for q, past in zip(self._deques, self._past, strict=True):
            if past:
                q.extendleft(reversed(past))
                past.clear()
            q.popleft()
            if q:
                self._non_empty += 1
        self._buffered -= self._n

    def _recover_all(self) -> None:
        self._non_empty = 0
        for q, past in zip(self._deques, self._past, strict=True):
            if past:
                q.extendleft(reversed(past))
                past.clear()
            if q:
                self._non_empty += 1

    def _recover(self, i: int, count: int) -> None:
        q, past = self._deques[i], self._past[i]
        for _ in range(count):
            q.appendleft(past.pop())
        if q:
            self._non_empty += 1

    def _delete_front(self, i: int) -> None:
        q = self._deques[i]
        self._drop(q.popleft(), "unmatched")
        self._buffered -= 1
        if not q:
            self._non_empty -= 1

    def _move_front_to_past(self, i: int) -> None:
        q = self._deques[i]
        self._past[i].append(q.popleft())
        if not q:
            self._non_empty -= 1
