"""Stopping early, the way most people write it: ``break`` out of ``async for`` over
``worker.stream(...)``, ``StreamMux.results()`` or a ``Pipeline``, without
``contextlib.aclosing``.

Python's finaliser then closes the stream in a task of its own. Before, the stream held
a task group across its ``yield`` and that task could not leave it: anyio cancelled the
consumer's task instead (``CancelledError`` at its next ``await``). Now the consumer goes
on, the stream's threads end, its input is closed, and the worker runs its next stream
(a pipeline: its sources are closed). Real sessions, a real decoder on a real clip.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import anyio
import anyio.lowlevel
import numpy as np
import pytest

from adapters import VideoSource
from fusion import Frame, Nearest, Pipeline, SensorSpec, Source, UsageError
from fusion.workers import BatchWorker, ImagePreprocess, StreamMux
from fusion.workers._models import scale_model, tiny_cnn

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"
CLIP = REAL / "androidx_trim_optimization_failure.mp4"  # H.264, 1280x720


def items(n: int) -> list[Frame]:
    return [Frame("imu", i, i * 1_000_000, np.full(4, i, np.float32)) for i in range(n)]


class Counter(Source):
    """A user's own source: numbered frames at 1 kHz; says when its frames() was closed."""

    def __init__(self, name: str, n: int = 10_000) -> None:
        super().__init__(SensorSpec(name, kind="imu", rate_hz=1000.0))
        self.n, self.closed = n, False

    async def frames(self) -> AsyncIterator[Frame]:
        try:
            for i in range(self.n):
                await anyio.lowlevel.checkpoint()
                yield Frame(self.name, i, i * 1_000_000, np.full(4, i, np.float32))
        finally:
            self.closed = True


def worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("hyperframes-worker")]


async def settled(closed: Sequence[Counter] = ()) -> None:
    """Let the finaliser's task run: the worker's threads gone, the sources closed."""
    gc.collect()
    deadline = time.monotonic() + 10
    while (worker_threads() or not all(c.closed for c in closed)) and time.monotonic() < deadline:  # noqa: ASYNC110 (threads end outside the event loop)
        await anyio.sleep(0.01)
    assert worker_threads() == []
    assert all(c.closed for c in closed)


async def test_breaking_out_of_a_stream_of_a_list_lets_the_caller_go_on() -> None:
    worker = BatchWorker(scale_model(features=4), providers="cpu", max_batch=4)
    seen = []
    async for result in worker.stream(items(200)):
        seen.append(result.item.seq)
        if len(seen) == 5:
            break
    await settled()
    await anyio.sleep(0.05)  # the caller's task was cancelled here before
    assert seen == [0, 1, 2, 3, 4]
    again = [r.value for r in [r async for r in worker.stream(items(8))]]
    assert [float(v[0]) for v in again] == [2.0 * i for i in range(8)]  # scale_model: 2x


async def test_breaking_out_of_a_stream_of_a_users_source_closes_the_source() -> None:
    worker = BatchWorker(scale_model(features=4), providers="cpu", max_batch=4, max_delay=1)
    source = Counter("imu")
    n = 0
    async for result in worker.stream(source):  # the feeder task and the max_delay timer
        assert result.ok
        n += 1
        if n == 20:
            break
    await settled([source])
    await anyio.sleep(0.05)
    assert len([r async for r in worker.stream(items(30))]) == 30


async def test_breaking_out_of_a_stream_of_a_real_video_goes_on() -> None:
    pre = ImagePreprocess((32, 32))
    worker = BatchWorker(tiny_cnn(32), preprocess=pre, providers="cpu", max_batch=4)
    source = VideoSource(CLIP, name="cam")
    taken = []
    async with source:
        async for result in worker.stream(source):
            assert result.ok, result.error
            taken.append(result.item.seq)
            if len(taken) == 6:
                break
        await settled()
        await anyio.sleep(0.05)
    assert taken == list(range(6))
    assert "decoder" in worker.resize_outcome["cam"]  # the frames came resized


async def test_breaking_out_of_a_mux_closes_every_camera() -> None:
    worker = BatchWorker(scale_model(features=4), providers="cpu", max_batch=8)
    cameras = {name: Counter(name) for name in ("a", "b", "c")}
    mux = StreamMux(worker, {name: c.frames() for name, c in cameras.items()})
    got = 0
    async for _name, result in mux.results():
        assert result.ok
        got += 1
        if got == 30:
            break
    await settled(list(cameras.values()))
    await anyio.sleep(0.05)


async def test_a_consumer_cancelled_inside_the_stream_ends_its_threads_and_input() -> None:
    worker = BatchWorker(scale_model(features=4), providers="cpu", max_batch=4)
    source = Counter("imu", n=10**9)
    with anyio.move_on_after(0.3) as scope:
        async for _ in worker.stream(source):
            pass
    assert scope.cancelled_caught
    await settled([source])


async def test_breaking_out_of_a_pipeline_ends_its_decoder_and_workers() -> None:
    camera = VideoSource(CLIP, name="cam")
    worker = BatchWorker(tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu")
    policy = Nearest("cam", ["cam"], tolerance=1)
    pipeline = Pipeline([camera], policy=policy, workers={"cnn": worker})
    seqs = []
    async for group in pipeline:
        seqs.append(group.frames["cam"].seq)
        if len(seqs) == 3:
            break
    await settled()
    await anyio.sleep(0.05)
    assert seqs == [0, 1, 2]


async def test_breaking_out_of_a_pipeline_closes_a_users_source() -> None:
    imu = Counter("imu")
    pipeline = Pipeline([imu], policy=Nearest("imu", ["imu"], tolerance=1))
    seqs = []
    async for group in pipeline:
        seqs.append(group.frames["imu"].seq)
        if len(seqs) == 3:
            break
    await settled([imu])
    await anyio.sleep(0.05)
    assert seqs == [0, 1, 2]


async def test_a_pipeline_iterated_twice_raises_out_of_the_loop() -> None:
    pipeline = Pipeline([Counter("imu", n=5)], policy=Nearest("imu", ["imu"], tolerance=1))
    assert len([g async for g in pipeline]) == 5
    with pytest.raises(UsageError, match="runs once"):
        async for _ in pipeline:
            pass
