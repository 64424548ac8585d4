"""Interactive pacing for replays: pause, step and change the rate from the keyboard.

:class:`PlaybackControl` holds the state (paused, rate, pending steps);
:class:`PacedSource` wraps any source read as fast as possible (a
:class:`~recordings.Replay` or a bag with ``speed=None``) and paces it on the
runtime clock by each frame's arrival time, re-anchoring whenever the rate
changes or playback resumes, so a change never makes frames burst or stall.
:func:`keyboard` reads keys in a terminal (space: pause/resume, right arrow:
one frame while paused, up/down: faster/slower) without blocking the loop.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Literal

from fusion import Frame, Source, current_clock

RATES = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, None)
"""Rates the arrow keys step through; ``None`` is as fast as possible."""
_POLL_NS = 50_000_000


class PlaybackControl:
    """Pause, rate and single steps, shared between the keyboard and the pacer."""

    def __init__(self, rate: float | None = 1.0, *, paused: bool = False) -> None:
        self.rate = rate
        self.paused = paused
        self.ended = False
        """The source has no more frames (a held replay waits for a seek)."""
        self._steps = 0
        self._seek: int | None = None
        self._lock = threading.Lock()

    def seek(self, t: int) -> None:
        """Play from ``t`` (the source's own time, ns) next: the source is read again
        from there (:class:`PacedSource` with ``reopen``)."""
        with self._lock:
            self._seek = t

    def take_seek(self) -> int | None:
        with self._lock:
            t, self._seek = self._seek, None
            return t

    @property
    def seeking(self) -> bool:
        return self._seek is not None

    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def step(self) -> None:
        """Let one frame through while paused."""
        with self._lock:
            self._steps += 1

    def take_step(self) -> bool:
        with self._lock:
            if self._steps:
                self._steps -= 1
                return True
            return False

    def faster(self) -> None:
        self.rate = _neighbour(self.rate, +1)

    def slower(self) -> None:
        self.rate = _neighbour(self.rate, -1)

    def describe(self) -> str:
        rate = "max" if self.rate is None else f"{self.rate:g}x"
        return f"{'paused' if self.paused else 'playing'} at {rate}"


def _neighbour(rate: float | None, direction: int) -> float | None:
    key = float("inf") if rate is None else rate
    ordered = [float("inf") if r is None else r for r in RATES]
    index = min(range(len(ordered)), key=lambda i: abs(ordered[i] - key))
    index = max(0, min(len(RATES) - 1, index + direction))
    return RATES[index]


class PacedSource(Source):
    """Re-emit ``inner``'s frames at ``control.rate`` times their recorded pace.

    With ``reopen`` (``t -> a source from t``), :meth:`PlaybackControl.seek` plays on from
    another time: the current source is closed and ``reopen(t)`` read instead. With ``hold``,
    the end of the frames waits (``control.ended``) for a seek instead of ending. A pause,
    a rate change or a seek takes effect within 50 ms of clock time, even during a long gap.
    """

    def __init__(
        self,
        inner: Source,
        control: PlaybackControl,
        *,
        reopen: Callable[[int], Source] | None = None,
        hold: bool = False,
    ) -> None:
        super().__init__(specs=inner.specs)
        self.inner = inner
        self.control = control
        self.reopen = reopen
        self.hold = hold and reopen is not None
        self.on_hold: Callable[[], object] | None = None
        """Called when the frames ran out and a held source starts waiting for a seek."""
        self._sources = [inner]

    async def frames(self) -> AsyncIterator[Frame]:
        clock = current_clock()
        control = self.control
        source = self.inner
        while True:
            async for frame in self._paced(source, clock):
                yield frame
            seek = control.take_seek() if self.reopen is not None else None
            if seek is None and self.hold:
                control.ended = True
                if self.on_hold is not None:
                    self.on_hold()
            while seek is None and self.hold:
                await clock.sleep_until(clock.now() + _POLL_NS)
                seek = control.take_seek()
            if seek is None or self.reopen is None:
                control.ended = True
                return
            control.ended = False
            if source is not self.inner:  # the first stays open: its errors are reported
                self._sources.remove(source)
                await source.aclose()
            source = self.reopen(seek)
            self._sources.append(source)

    async def _paced(self, source: Source, clock: Any) -> AsyncIterator[Frame]:
        """``source``'s frames at the control's pace, until they end or a seek is asked."""
        control = self.control
        anchor: tuple[int, int, float] | None = None  # (clock time, pace time, rate)
        frames = source.frames()
        try:
            async for frame in frames:
                if control.seeking and self.reopen is not None:
                    return
                pace = frame.t_arrival if frame.t_arrival is not None else frame.t
                while True:
                    if control.seeking and self.reopen is not None:
                        return
                    if control.paused:
                        if control.take_step():
                            break
                        anchor = None
                        await clock.sleep_until(clock.now() + _POLL_NS)
                        continue
                    rate = control.rate
                    if rate is None:
                        break
                    if anchor is None or anchor[2] != rate:
                        anchor = (clock.now(), pace, rate)
                    due = anchor[0] + int((pace - anchor[1]) / rate)
                    if clock.now() >= due:
                        break
                    await clock.sleep_until(min(due, clock.now() + _POLL_NS))
                yield frame
        finally:
            aclose = getattr(frames, "aclose", None)
            if aclose is not None:
                await aclose()

    def statistics(self) -> dict[str, object]:
        return dict(self.inner.statistics())

    async def aclose(self) -> None:
        for source in self._sources:
            await source.aclose()
        await super().aclose()


@contextlib.contextmanager
def keyboard(
    control: PlaybackControl,
    *,
    enabled: bool = True,
    extra: Mapping[bytes, Callable[[], object]] | None = None,
) -> Iterator[bool]:
    """Read playback keys from the terminal in a thread; yields whether it is active.

    ``extra`` maps further keys to callbacks (run in the key thread).
    """
    if not enabled or not sys.stdin.isatty():
        yield False
        return
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    stop = threading.Event()

    def read_keys() -> None:
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            key = os.read(fd, 3)
            if key == b" ":
                control.toggle_pause()
            elif key in (b"\x1b[C", b"l"):
                control.step()
            elif key in (b"\x1b[A", b"+"):
                control.faster()
            elif key in (b"\x1b[B", b"-"):
                control.slower()
            elif extra and key in extra:
                extra[key]()

    tty.setcbreak(fd)
    thread = threading.Thread(target=read_keys, name="hyperframes-keys", daemon=True)
    thread.start()
    try:
        yield True
    finally:
        stop.set()
        thread.join(timeout=1)
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class ServedPlayback:
    """Foxglove's playback controls (``replay --serve``) on a replay's :class:`PlaybackControl`.

    ``window`` is the replayed span in the source's own time (``[start, end)`` ns: log time
    for a bag, ``t`` for a recording); ``to_served``/``from_served`` map that time to the
    served one (a recording's wall clock) and back. Pause and play set ``control.paused``,
    the speed its rate, a seek (only when ``seekable``: no pipeline) asks the source to
    play on from that time, clamped to the window. A
    :class:`~recordings.outputs.live._foxglove_server.PlaybackHandler`.
    """

    def __init__(
        self,
        control: PlaybackControl,
        window: tuple[int, int],
        *,
        to_served: Callable[[int], int] = int,
        from_served: Callable[[int], int] = int,
        seekable: bool = True,
    ) -> None:
        self.control = control
        self.window = window
        self.seekable = seekable
        self._from_served = from_served
        self._range = (to_served(window[0]), to_served(max(window[0], window[1] - 1)))

    @property
    def time_range(self) -> tuple[int, int]:
        return self._range

    def __call__(self, request: Any) -> Any:
        from recordings.outputs import PlaybackReply

        control = self.control
        if request.speed > 0:
            control.rate = float(request.speed)
        did_seek = request.seek is not None and self.seekable
        if did_seek:
            t = self._from_served(int(request.seek))
            control.seek(min(max(t, self.window[0]), self.window[1] - 1))
        control.paused = request.pause
        status: Literal["playing", "paused", "ended"] = "paused" if control.paused else "playing"
        if control.ended and not did_seek:
            status = "ended"
        rate = control.rate if control.rate is not None else float(request.speed)
        return PlaybackReply(
            status, rate, did_seek=did_seek, time=request.seek if did_seek else None
        )

    def ended(self) -> Any:
        """The state to tell clients when the frames ran out."""
        from recordings.outputs import PlaybackReply

        rate = self.control.rate
        return PlaybackReply("ended", 1.0 if rate is None else rate, time=self._range[1])
