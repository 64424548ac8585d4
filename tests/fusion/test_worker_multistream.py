"""StreamMux: N cameras into one worker, batches across cameras, results back per camera."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import anyio
import numpy as np

from fusion import Frame
from fusion.workers import BatchWorker, StreamMux
from fusion.workers._models import scale_model

MS = 1_000_000


async def camera(name: str, n: int, *, fail_at: int | None = None) -> AsyncIterator[Frame]:
    for i in range(n):
        if i == fail_at:
            raise OSError(f"camera {name} unplugged")
        yield Frame(name, i, i * 33 * MS, np.full(4, i, np.float32))
        await anyio.lowlevel.checkpoint()


def recording_preprocess(batches: list[set[str]]) -> object:
    def pre(items: list[Frame]) -> np.ndarray:
        batches.append({f.sensor for f in items})
        return np.stack([f.data for f in items])  # type: ignore[misc]

    return pre


async def run(mux: StreamMux) -> dict[str, list[object]]:
    per_camera: dict[str, list[object]] = {}
    with anyio.fail_after(30):
        async for name, result in mux.results():
            assert result.item.sensor == name  # routed back to the camera it came from
            per_camera.setdefault(name, []).append(result)
    return per_camera


async def test_frames_of_several_cameras_share_batches_and_come_back_in_each_cameras_order() -> (
    None
):
    batches: list[set[str]] = []
    every_camera_started = threading.Event()
    record = recording_preprocess(batches)

    def pre(items: list[Frame]) -> np.ndarray:
        # The replicas wait until the last camera has sent a frame, so that frames of
        # several cameras are queued when they next take a batch (else, on a fast
        # machine, a replica may take each frame alone the moment it arrives).
        every_camera_started.wait(10)
        return record(items)  # type: ignore[operator, no-any-return]

    async def last_camera(name: str, n: int) -> AsyncIterator[Frame]:
        async for frame in camera(name, n):
            every_camera_started.set()
            yield frame

    worker = BatchWorker(
        scale_model(), preprocess=pre, max_batch=16, adaptive=False, providers="cpu"
    )
    names = [f"cam{i}" for i in range(8)]
    sources = {n: camera(n, 25) for n in names[:-1]} | {names[-1]: last_camera(names[-1], 25)}
    mux = StreamMux(worker, sources, capacity=32)
    out = await run(mux)
    assert sorted(out) == names
    for name in names:
        results = out[name]
        assert [r.item.seq for r in results] == list(range(25))  # type: ignore[attr-defined]
        for r in results:
            np.testing.assert_array_equal(r.value, 2 * r.item.data)  # type: ignore[attr-defined]
    assert any(len(b) > 1 for b in batches), batches  # a batch held frames of several cameras
    stats = mux.statistics()
    assert stats.results == dict.fromkeys(names, 25)
    assert set(stats.latency_p99_ns) == set(names)


async def test_a_failing_camera_loses_only_its_own_frames() -> None:
    def pre(items: list[Frame]) -> np.ndarray:
        for f in items:
            if f.sensor == "bad" and f.seq % 3 == 1:
                raise ValueError(f"bad frame {f.sensor} {f.seq}")
        return np.stack([f.data for f in items])  # type: ignore[misc]

    worker = BatchWorker(scale_model(), preprocess=pre, max_batch=8, providers="cpu")
    sources = {
        "good": camera("good", 30),
        "bad": camera("bad", 30),
        "unplugged": camera("unplugged", 30, fail_at=10),
    }
    mux = StreamMux(worker, sources)
    out = await run(mux)
    good = out["good"]
    assert [r.item.seq for r in good] == list(range(30))  # type: ignore[attr-defined]
    assert all(r.ok for r in good)  # type: ignore[attr-defined]
    bad = out["bad"]
    assert [r.item.seq for r in bad] == list(range(30))  # type: ignore[attr-defined]
    failed = [r.item.seq for r in bad if not r.ok]  # type: ignore[attr-defined]
    assert failed == [s for s in range(30) if s % 3 == 1]
    assert [r.item.seq for r in out["unplugged"]] == list(range(10))  # type: ignore[attr-defined]
    assert isinstance(mux.failures["unplugged"], OSError)
    assert set(mux.failures) == {"unplugged"}
    assert mux.statistics().errors == {"bad": 10}


async def test_the_muxer_scales_each_cameras_frames_like_the_preprocess_would() -> None:
    from fusion.workers import ImagePreprocess
    from fusion.workers._models import tiny_cnn
    from fusion.workers._resize import resize

    rng = np.random.default_rng(0)
    images = {name: rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for name in ("a", "b")}

    async def still(name: str) -> AsyncIterator[Frame]:
        for i in range(4):
            yield Frame(name, i, i, images[name])

    seen: list[tuple[int, ...]] = []
    pre = ImagePreprocess((32, 32), max_batch=4)

    def spy(items: list[Frame]) -> np.ndarray:
        seen.extend(f.data.shape for f in items)  # type: ignore[union-attr]
        return pre(items)

    worker = BatchWorker(tiny_cnn(32), preprocess=spy, max_batch=4, providers="cpu", threads=1)
    mux = StreamMux(worker, {n: still(n) for n in images}, resize=(32, 32))
    out = await run(mux)
    assert set(seen) == {(32, 32, 3)}  # scaled before the worker
    for name, results in out.items():
        expected = resize(images[name], (32, 32), "area")
        for r in results:
            np.testing.assert_array_equal(r.item.data, expected)  # type: ignore[attr-defined]
            assert r.ok  # type: ignore[attr-defined]
