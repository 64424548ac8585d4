"""Replay pacing with pause, single steps and rate changes, on a virtual clock."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import anyio
import pytest

from adapters import Source
from fusion import Frame, SensorSpec, VirtualClock, use_clock
from hyperframes.cli._playback import RATES, PacedSource, PlaybackControl

MS = 1_000_000


class Recorded(Source):
    """Frames recorded 100 ms apart, read as fast as possible."""

    def __init__(self, n: int) -> None:
        super().__init__(SensorSpec("cam"))
        self.n = n

    async def frames(self) -> AsyncIterator[Frame]:
        for i in range(self.n):
            yield Frame("cam", i, i * 100 * MS, t_arrival=i * 100 * MS)


async def play(control: PlaybackControl, n: int, actions: dict[int, str]) -> list[int]:
    """Emission times (virtual ns) of each frame; ``actions[i]`` runs after frame i."""
    clock = VirtualClock()
    times: list[int] = []

    async def resume_later() -> None:
        await clock.sleep_until(clock.now() + 1000 * MS)
        control.toggle_pause()

    with use_clock(clock):
        async with clock.autojump(), anyio.create_task_group() as tg:
            async for frame in PacedSource(Recorded(n), control).frames():
                times.append(clock.now())
                action = actions.get(frame.seq)
                if action == "faster":
                    control.faster()
                elif action == "pause-then-resume":
                    control.toggle_pause()
                    tg.start_soon(resume_later)  # the consumer does not wait for it
    return times


async def test_frames_keep_their_recorded_spacing_at_rate_one() -> None:
    times = await play(PlaybackControl(1.0), 5, {})
    assert [t - times[0] for t in times] == [0, 100 * MS, 200 * MS, 300 * MS, 400 * MS]


async def test_a_rate_change_takes_effect_from_the_next_frame_without_a_jump() -> None:
    times = await play(PlaybackControl(1.0), 5, {1: "faster"})
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps == [100 * MS, 0, 50 * MS, 50 * MS]  # re-anchored at frame 2, then 2x


async def test_pause_holds_frames_until_resumed() -> None:
    times = await play(PlaybackControl(1.0), 3, {0: "pause-then-resume"})
    assert 1000 * MS <= times[1] - times[0] <= 1000 * MS + 50 * MS  # held, then re-anchored
    assert times[2] - times[1] == 100 * MS


def test_steps_are_taken_one_at_a_time() -> None:
    control = PlaybackControl(paused=True)
    control.step()
    assert control.take_step()
    assert not control.take_step()


@pytest.mark.parametrize(
    ("start", "direction", "expected"),
    [(1.0, +1, 2.0), (1.0, -1, 0.5), (16.0, +1, None), (0.1, -1, 0.1)],
)
def test_rate_steps_through_the_ladder(
    start: float, direction: int, expected: float | None
) -> None:
    control = PlaybackControl(start)
    (control.faster if direction > 0 else control.slower)()
    assert control.rate == expected
    assert None in RATES
