"""The error contract across floors: misuse is a UsageError, not a bare RuntimeError."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest

from adapters import SyntheticImu, VelodyneSource
from fusion import ExactTime, Frame, Pipeline, SyncHub, UsageError, VirtualClock
from fusion.workers import DynamicBatcher, ReorderBuffer
from recordings import Recorder, Replay, read_stream

REAL_PCAP = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "lidar"


def recording(tmp_path: Path) -> Path:
    path = tmp_path / "s.hfr"
    with Recorder(path) as rec:
        rec.write(Frame("imu", 0, 1_000, np.zeros(3, np.float32)))
    return path


async def test_a_pipeline_run_twice_is_a_usage_error() -> None:
    clock = VirtualClock()
    pipeline = Pipeline([SyntheticImu(duration_s=0.05, seed=1)], ExactTime(["imu"]), clock=clock)
    with anyio.fail_after(10):
        async with clock.autojump():
            await pipeline.run()
            with pytest.raises(UsageError, match="a Pipeline runs once; build a new one"):
                await pipeline.run()


async def test_a_hub_run_twice_is_a_usage_error() -> None:
    clock = VirtualClock()
    hub = SyncHub(ExactTime(["imu"]), clock=clock)
    with anyio.fail_after(10), hub.groups:
        async with clock.autojump():
            await hub.run([SyntheticImu(duration_s=0.05, seed=1)])
            with pytest.raises(UsageError, match="a SyncHub runs once; create a new one"):
                await hub.run([SyntheticImu(duration_s=0.05, seed=1)])


def test_a_closed_replay_is_a_usage_error(tmp_path: Path) -> None:
    replay = Replay(recording(tmp_path), speed=None)
    replay.close()
    with pytest.raises(UsageError, match=r"replay of '.*s\.hfr' is closed"):
        _ = replay.recording


def test_a_stream_read_twice_is_a_usage_error(tmp_path: Path) -> None:
    with recording(tmp_path).open("rb") as f:
        stream = read_stream(f)
        assert [frame.seq for frame in stream.frames()] == [0]
        with pytest.raises(UsageError, match="was already read; open it again"):
            next(iter(stream.frames()))


async def test_wait_listening_on_a_pcap_source_is_a_usage_error() -> None:
    pcap = REAL_PCAP / "vlp-16-test-90deg-1-50-frames.pcap"
    source = VelodyneSource(pcap=pcap, model="VLP-16")
    try:
        with pytest.raises(UsageError, match=r"wait_listening\(\) is for live sources"):
            await source.wait_listening()
    finally:
        await source.aclose()


def test_batcher_and_reorder_misuse_are_usage_errors() -> None:
    batcher: DynamicBatcher[int] = DynamicBatcher(max_batch=1, max_delay=10, capacity=1)
    batcher.push(1, now=0)
    with pytest.raises(UsageError, match=r"batcher queue is full \(1 items\)"):
        batcher.push(2, now=1)
    batcher.close()
    with pytest.raises(UsageError, match="push\\(\\) after close\\(\\)"):
        batcher.push(3, now=2)
    reorder: ReorderBuffer[int] = ReorderBuffer(window=1)
    reorder.admit()
    with pytest.raises(UsageError, match="reorder window full: 1 items outstanding"):
        reorder.admit()


def test_usage_error_is_still_a_runtime_error() -> None:
    assert issubclass(UsageError, RuntimeError)
