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

from fusion.frames import Frame
from fusion.source import Source
from fusion.timing import current_clock

RATES = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, None)
"""Rates the arrow keys step through; ``None`` is as fast as possible."""
_POLL_NS = 50_000_000


class PlaybackControl:
    """Pause, rate and single steps, shared between the keyboard and the pacer."""

    def __init__(self, rate: float | None = 1.0, *, paused: bool = False) -> None:
        self.rate = rate
        self.paused = paused
        self._steps = 0
        self._lock = threading.Lock()

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
    """Re-emit ``inner``'s frames at ``control.rate`` times their recorded pace."""

    def __init__(self, inner: Source, control: PlaybackControl) -> None:
        super().__init__(specs=inner.specs)
        self.inner = inner
        self.control = control

    async def frames(self) -> AsyncIterator[Frame]:
        clock = current_clock()
        control = self.control
        anchor: tuple[int, int, float] | None = None  # (clock time, pace time, rate)
        async for frame in self.inner.frames():
            while control.paused and not control.take_step():
                anchor = None
                await clock.sleep_until(clock.now() + _POLL_NS)
            rate = control.rate
            if rate is not None and not control.paused:
                pace = frame.t_arrival if frame.t_arrival is not None else frame.t
                if anchor is None or anchor[2] != rate:
                    anchor = (clock.now(), pace, rate)
                await clock.sleep_until(anchor[0] + int((pace - anchor[1]) / rate))
            yield frame

    def statistics(self) -> dict[str, object]:
        return dict(self.inner.statistics())

    async def aclose(self) -> None:
        await self.inner.aclose()
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
