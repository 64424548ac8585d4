"""A CPU worker given a video source (or its unstarted frames) tells it what a frame
costs the model (fusion/workers/_pacing.py); the source then chooses its decoder's
threads (adapters/video/_pacing.py, tested in test_video_pacing.py). Real input: the
HEVC clip of the Android test suite (../shared/data); every frame decoded reaches the
model and comes back."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from adapters import VideoSource
from fusion.workers import BatchWorker, ImagePreprocess
from fusion.workers._models import tiny_cnn
from fusion.workers._pacing import model_cpu_per_item

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"
CLIP = REAL / "androidx_h265_bframes.mp4"  # 854x480 HEVC with B-frames


@pytest.mark.parametrize("wiring", ["source", "frames"])
async def test_a_cpu_worker_paces_the_source_it_is_given(wiring: str) -> None:
    worker = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    source = VideoSource(CLIP, name="cam")
    n = 0
    with anyio.fail_after(60):
        async with source:
            items = source if wiring == "source" else source.frames()
            async for result in worker.stream(items):
                assert result.ok, result.error
                n += 1
    assert n == source.video_stats.delivered > 0
    assert worker.decoder_outcome is None
    why = source.video_stats.decoder_threads
    assert why is not None
    assert why.startswith(("1 thread", "automatic")), why
    # A source whose threads were given keeps them; the worker says so.
    fixed = VideoSource(CLIP, name="cam", threads=1)
    worker2 = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    with anyio.fail_after(60):
        async with fixed, aclosing(worker2.stream(fixed)) as results:  # type: ignore[type-var]
            async for result in results:
                assert result.ok, result.error
                break
    assert worker2.decoder_outcome == "threads=1 was given"
    assert fixed.video_stats.decoder_threads is None


async def test_the_model_cost_is_measured_once_per_model() -> None:
    worker = BatchWorker(tiny_cnn(32), providers="cpu", max_batch=4, threads=1)
    await worker.start()
    runner = worker._runner
    assert runner is not None
    first = model_cpu_per_item(runner)
    assert first is not None
    assert first > 0
    assert model_cpu_per_item(runner) == first  # kept: not run again
