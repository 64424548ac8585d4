"""Replay: a recording as a :class:`~fusion._source.Source`, paced by the runtime clock.

Theory of operation. Frames come out in recorded (arrival) order, exactly as
recorded: same ``sensor``, ``seq``, ``t``, ``t_sensor``, ``t_arrival``, data
and meta, so a pipeline fed by a replay sees what it saw live. Chunks are read
and decompressed in a worker thread, one at a time (memory stays at about one
chunk), and a consumer that is slower than the replay simply holds the
generator: replay applies backpressure and drops nothing.

Pacing: frame ``i`` is due at ``start + (p_i - p_0) / speed`` on
:func:`~fusion._timing.current_clock`, where ``p`` is the frame's recorded
``t_arrival`` (its ``t`` when it has none) and ``start`` is the clock's time at
the first frame (:class:`~fusion._timing.Pacer`). Due times never go backwards,
so out-of-order arrival stamps do not reorder frames. ``speed=None`` yields as
fast as the consumer takes frames. On a :class:`~fusion._timing.VirtualClock`
with autojump, a real-time replay of a long session takes as long as the
decoding, not the session.

``loop=True`` starts again at the end; each pass shifts ``t``, ``t_sensor``
and ``t_arrival`` by the selection's span plus one mean frame interval and
continues each sensor's ``seq``, so downstream stages see one monotonic stream.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Generator, Iterable

from fusion import Frame, Pacer, Source
from fusion.errors import ConfigError, UsageError
from recordings.hfr import ReadLimits, Recording, open_recording


class Replay(Source):
    """Re-emits a ``.hfr`` recording's frames (contract).

    ``speed``: 1.0 real time, 2.0 twice as fast, ``None`` as fast as possible.
    ``sensors``, ``start`` and ``end`` (ns, half-open on ``t``) select frames.
    Damaged chunks are skipped and counted in :attr:`errors` as ``"damaged"``; the
    ledger (unit: frame) counts what the recording promised and did not give: after
    a whole pass over the whole file, a sensor with fewer frames than its chunk
    metas count has lost the rest (``"damaged"``).
    ``path`` may be an open :class:`~recordings.Recording`, which the replay
    then owns and closes; otherwise it is opened with ``limits``
    (:class:`~recordings.ReadLimits`, the defaults without it).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Recording,
        speed: float | None = 1.0,
        *,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
        loop: bool = False,
        limits: ReadLimits | None = None,
    ) -> None:
        if speed is not None and not speed > 0:
            raise ConfigError(f"speed must be > 0 or None (as fast as possible), got {speed}")
        self._log: Recording | None = (
            path if isinstance(path, Recording) else open_recording(path, limits=limits)
        )
        path = self._log.path
        summary = self._log.summary()
        wanted = None if sensors is None else list(sensors)
        if wanted is not None:
            unknown = [s for s in wanted if s not in summary.sensors]
            if unknown:
                self._log.close()
                raise ConfigError(
                    f"recording '{path}' has no sensor {', '.join(map(repr, unknown))}; "
                    f"it has {', '.join(map(repr, summary.sensors)) or 'none'}"
                )
        names = wanted if wanted is not None else list(summary.sensors)
        if not names:
            self._log.close()
            raise ConfigError(f"recording '{path}' has no sensors to replay")
        # Replayed frames are already aligned and must not be dropped.
        specs = tuple(
            dataclasses.replace(summary.sensors[n].spec, clock=None, overflow="block")
            for n in names
        )
        super().__init__(specs=specs)
        self.path = os.fspath(path)
        self.speed = speed
        self.loop = loop
        self._sensors = None if wanted is None else frozenset(wanted)
        self._start = start
        self._end = end
        span_t0 = summary.t_start if start is None else max(start, summary.t_start or start)
        span_t1 = summary.t_end if end is None else min(end - 1, summary.t_end or end)
        count = sum(summary.sensors[n].count for n in names)
        span = max(0, (span_t1 or 0) - (span_t0 or 0))
        self._loop_shift = span + max(1, span // max(1, count - 1))
        self._damage_seen = 0
        self._promised = {n: summary.sensors[n].count for n in names}

    @property
    def recording(self) -> Recording:
        """The open recording (its ``damage`` lists what was skipped)."""
        if self._log is None:
            raise UsageError(f"replay of '{self.path}' is closed")
        return self._log

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return True

    async def frames(self) -> AsyncIterator[Frame]:
        """Yield the selected frames in recorded order, paced by the current clock."""
        log = self.recording
        pacer = Pacer(self.speed)
        shift = 0
        seq_shift: dict[str, int] = {}
        next_seq: dict[str, int] = {}
        while True:
            batches = log.batches(self._sensors, self._start, self._end)
            try:
                while True:
                    batch = await self.run_blocking(_next_batch, batches)
                    self._count_damage(log)
                    if batch is None:
                        break
                    for frame in batch:
                        if shift:
                            frame = _shifted(frame, shift, seq_shift.get(frame.sensor, 0))
                        await pacer.wait(frame.t if frame.t_arrival is None else frame.t_arrival)
                        next_seq[frame.sensor] = frame.seq + 1
                        self._next_seq[frame.sensor] = self._next_seq.get(frame.sensor, 0) + 1
                        if not shift:
                            self.ledger(frame.sensor).emit(1)
                        yield frame
            finally:
                batches.close()
            if not shift:
                self._count_shortfall()
            if not self.loop or not next_seq:
                return
            shift += self._loop_shift
            seq_shift = dict(next_seq)

    def _count_damage(self, log: Recording) -> None:
        for err in log.damage[self._damage_seen :]:
            # The event is counted here; the frames it cost, by the shortfall at the end.
            self.count_error("damaged", str(err), units=0)
        self._damage_seen = len(log.damage)

    def expected_frames(self) -> int | None:
        """The frames the chunk metas promise, for a whole pass without a time range."""
        if self._start is not None or self._end is not None or self.loop:
            return None
        return sum(self._promised.values())

    def _count_shortfall(self) -> None:
        """After a whole pass: frames the chunk metas promised that never came."""
        if self._start is not None or self._end is not None:
            return  # a chunk's counts include frames outside the range
        for name, promised in self._promised.items():
            got = self.ledger(name).statistics().emitted
            if got < promised:
                self.ledger(name).lose("damaged", promised - got)

    _ledger_unit = "frame"

    def close(self) -> None:
        """Close the recording (sync); frames already yielded stay valid."""
        if self._log is not None:
            self._log.close()
            self._log = None
        self._closed = True

    async def aclose(self) -> None:
        self.close()
        await super().aclose()

    def __repr__(self) -> str:
        return f"Replay('{self.path}', speed={self.speed}, sensors={[s.name for s in self.specs]})"


def _next_batch(batches: Generator[list[Frame], None, None]) -> list[Frame] | None:
    return next(batches, None)


def _shifted(frame: Frame, shift: int, seq_shift: int) -> Frame:
    return Frame(
        frame.sensor,
        frame.seq + seq_shift,
        frame.t + shift,
        frame.data,
        frame.t_sensor + shift,
        None if frame.t_arrival is None else frame.t_arrival + shift,
        frame.meta,
    )
