"""pytest plugin ``hyperframes``: replay ``.hfr`` recordings through your pipeline in tests.

Installed with the package (entry point ``pytest11``), nothing to configure.
Fixtures:

* ``hfr``: a :class:`HfrHelper` bound to the test's ``tmp_path``. It writes
  small recordings from frames (``hfr.record(frames)``), opens them, and
  runs a consumer against a :class:`~recordings.Replay` on a fresh
  :class:`~fusion._timing.VirtualClock` with autojump (``await hfr.run(path,
  consume)``): real-time pacing without sleeping, the same result every run.
  Everything it opened is closed at teardown.
* ``hfr_clock``: a fresh :class:`~fusion._timing.VirtualClock` at 0.

Example::

    async def test_detector_sees_every_camera_frame(hfr):
        async def consume(replay):
            return [f.seq async for f in replay.frames() if f.sensor == "cam"]

        seqs = await hfr.run("tests/data/drive.hfr", consume, speed=1.0)
        assert seqs == list(range(300))

A quiet run in a fresh project: an ``async def`` test that uses ``hfr`` or
``hfr_clock`` runs without configuration (marked ``asyncio`` for pytest-asyncio
in its strict mode, else ``anyio`` for anyio's own plugin), and pytest-asyncio's
warning that ``asyncio_default_fixture_loop_scope`` is unset is silenced: these
fixtures are plain function-scoped ones, which no loop scope changes. The one
setting we cannot make for you: open3d installs ``dash``, whose pytest plugin
warns on every run; add ``-p no:dash`` to your ``addopts`` (docs/recordings.md).

This module imports only pytest at load time: the plugin is loaded in every
test session of an environment where hyperframes is installed.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from fusion import Frame, SensorSpec, VirtualClock
    from recordings._replay import Replay
    from recordings.hfr import Recording

T = TypeVar("T")


class HfrHelper:
    """What the ``hfr`` fixture gives a test: record, open and replay frame logs."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self._open: list[Recording] = []
        self._replays: list[Replay] = []
        self._made = 0

    def record(
        self,
        frames: Iterable[Frame],
        path: str | os.PathLike[str] | None = None,
        *,
        sensors: Iterable[SensorSpec] = (),
        **recorder_options: Any,
    ) -> Path:
        """Write ``frames`` to ``path`` (default: a new file in ``tmp_path``); the path."""
        from recordings.hfr import Recorder

        if path is None:
            self._made += 1
            path = self.tmp_path / f"recording-{self._made}.hfr"
        with Recorder(path, sensors=sensors, **recorder_options) as rec:
            for frame in frames:
                rec.write(frame)
        return Path(path)

    def open(self, path: str | os.PathLike[str], **options: Any) -> Recording:
        """:func:`~recordings.open_recording`, closed at teardown."""
        from recordings.hfr import open_recording

        log = open_recording(path, **options)
        self._open.append(log)
        return log

    def replay(
        self, path: str | os.PathLike[str], speed: float | None = None, **options: Any
    ) -> Replay:
        """A :class:`~recordings.Replay` (as fast as possible by default), closed at teardown."""
        from recordings._replay import Replay

        replay = Replay(path, speed, **options)
        self._replays.append(replay)
        return replay

    async def run(
        self,
        path: str | os.PathLike[str],
        consume: Callable[[Replay], Awaitable[T]],
        *,
        speed: float | None = 1.0,
        timeout: float = 60.0,  # noqa: ASYNC109 - a wall-clock guard, not a deadline API
        clock: VirtualClock | None = None,
        **options: Any,
    ) -> T:
        """``await consume(replay)`` with a virtual, auto-jumping clock in effect.

        Pacing follows ``speed`` in virtual time, so a 60 s real-time replay
        finishes as fast as the frames decode, with the same result every run.
        ``timeout`` (wall seconds) fails a test that hangs.
        """
        import anyio

        from fusion import VirtualClock, use_clock

        clk = clock if clock is not None else VirtualClock()
        with anyio.fail_after(timeout), use_clock(clk):
            async with clk.autojump():
                replay = self.replay(path, speed, **options)
                try:
                    return await consume(replay)
                finally:
                    await replay.aclose()

    async def frames(self, path: str | os.PathLike[str], **options: Any) -> list[Frame]:
        """Every frame a replay of ``path`` emits, in order (virtual clock, real-time pacing)."""

        async def collect(replay: Replay) -> list[Frame]:
            return [frame async for frame in replay.frames()]

        return await self.run(path, collect, **options)

    def _close_all(self) -> None:
        for log in self._open:
            log.close()
        for replay in self._replays:
            replay.close()


@pytest.fixture
def hfr(tmp_path: Path) -> Iterator[HfrHelper]:
    """Record, open and deterministically replay ``.hfr`` frame logs (see :class:`HfrHelper`)."""
    helper = HfrHelper(tmp_path)
    yield helper
    helper._close_all()


@pytest.fixture
def hfr_clock() -> VirtualClock:
    """A fresh virtual clock at t=0; install it with ``fusion._timing.use_clock``."""
    from fusion import VirtualClock

    return VirtualClock()


OUR_FIXTURES = frozenset({"hfr", "hfr_clock"})

LOOP_SCOPE_UNSET = r'The configuration option "asyncio_default_fixture_loop_scope" is unset'


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Silence pytest-asyncio's loop-scope notice (our fixtures have no loop scope)."""
    warnings.filterwarnings(
        "ignore", message=LOOP_SCOPE_UNSET, category=pytest.PytestDeprecationWarning
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Mark an unmarked ``async def`` test that uses our fixtures for the async plugin
    that is there, before that plugin decides whether to run it."""
    if not (inspect.iscoroutinefunction(obj) and collector.funcnamefilter(name)):  # type: ignore[attr-defined]
        return
    if not OUR_FIXTURES & set(inspect.signature(obj).parameters):
        return
    marks = {m.name for m in getattr(obj, "pytestmark", [])}
    if marks & {"asyncio", "anyio", "trio"}:
        return
    manager = collector.config.pluginmanager
    if manager.has_plugin("asyncio"):
        pytest.mark.asyncio(obj)
    elif manager.has_plugin("anyio"):
        pytest.mark.anyio(obj)
