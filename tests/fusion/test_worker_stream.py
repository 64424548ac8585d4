"""BatchWorker on real onnxruntime sessions with models built in code."""

from __future__ import annotations

import logging
import random
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import (
    DeadlineExpired,
    Frame,
    FrameGroup,
    SensorSpec,
    Source,
    VirtualClock,
    WorkerError,
    use_clock,
)
from fusion._timing import current_clock
from fusion.workers import BatchWorker, ChangeGate, ImagePreprocess, ModelSession, WorkerResult
from fusion.workers import _sessions as sessions_module
from fusion.workers._batcher import DynamicBatcher
from fusion.workers._execution import ModelRunner
from fusion.workers._lanes import Finished, Lanes
from fusion.workers._models import FAIL_MARKER, failing_model, scale_model
from fusion.workers._pinned import PinnedStaging
from fusion.workers._reorder import ReorderBuffer
from fusion.workers._sessions import CPU, CUDA, missing_library_hint

MS = 1_000_000


def frames(n: int, features: int = 4, sensor: str = "cam") -> list[Frame]:
    return [Frame(sensor, i, i * 33 * MS, np.full(features, i, np.float32)) for i in range(n)]


def count_hand_backs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The batches in each hand-back from the threads of the streams to come."""
    from fusion.workers import _stream as stream_module

    runs: list[int] = []

    class CountingLanes(Lanes):
        def _deliver(self, run: list[Finished]) -> None:
            runs.append(len(run))
            super()._deliver(run)

    monkeypatch.setattr(stream_module, "Lanes", CountingLanes)
    return runs


def one_wide_session(preprocess: Any = None) -> ModelRunner:
    """A runner of ``scale_model`` as one replica whose session spans 2 cores."""
    return ModelRunner(
        scale_model(),
        providers="cpu",
        replicas=1,
        threads=2,
        preprocess=preprocess,
        postprocess=None,
        max_restarts=0,
        provider_options=None,
    )


async def collect(worker: BatchWorker, items: Any, **kw: Any) -> list[WorkerResult]:
    with anyio.fail_after(30):
        return [r async for r in worker.stream(items, **kw)]


class TestOrderAndValues:
    async def test_results_come_out_in_input_order_under_random_batch_latencies(self) -> None:
        rng = random.Random(7)

        def jittery(items: list[Frame]) -> np.ndarray:
            # A real, random per-batch delay in the preprocess thread, so three
            # replicas finish their batches out of order.
            time.sleep(rng.choice([0, 0, 0.001, 0.004]))
            return np.stack([f.data for f in items])

        worker = BatchWorker(
            scale_model(), preprocess=jittery, providers="cpu", replicas=3, max_batch=3
        )
        items = frames(120)
        results = await collect(worker, items)
        assert [r.index for r in results] == list(range(120))
        assert [r.item for r in results] == items
        for r in results:
            np.testing.assert_array_equal(r.value, 2 * r.item.data)
        stats = worker.statistics()
        assert stats.items == 120
        assert stats.failed == 0
        assert max(stats.batch_sizes) <= 3

    async def test_async_sources_and_groups_are_accepted(self) -> None:
        async def groups() -> AsyncIterator[FrameGroup]:
            for f in frames(10):
                yield FrameGroup(f.t, {"cam": f, "imu": [Frame("imu", f.seq, f.t)]})

        def pre(items: list[FrameGroup]) -> np.ndarray:
            return np.stack([g.frames["cam"].data for g in items])  # type: ignore[union-attr]

        worker = BatchWorker(scale_model(), preprocess=pre, providers="cpu")
        results = await collect(worker, groups())
        assert [r.item.t for r in results] == [f.t for f in frames(10)]
        assert all(r.ok for r in results)

    async def test_model_loads_from_a_path_and_postprocess_shapes_values(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "scale.onnx"
        path.write_bytes(scale_model(factor=3.0))

        def post(items: list[Frame], outputs: list[np.ndarray]) -> list[float]:
            return [float(row.sum()) for row in outputs[0]]

        worker = BatchWorker(str(path), postprocess=post, providers="cpu")
        results = await collect(worker, frames(5))
        assert [r.value for r in results] == [3.0 * 4 * i for i in range(5)]

    async def test_a_missing_model_file_is_a_worker_error_naming_it(self, tmp_path: Path) -> None:
        worker = BatchWorker(tmp_path / "nope.onnx", providers="cpu")
        with pytest.raises(WorkerError, match=r"cannot read model file '.*nope.onnx'"):
            await worker.start()


class TestErrorIsolation:
    @pytest.mark.parametrize(
        "marked",
        [set(), {0}, {39}, {7, 8}, {3, 17, 22, 31}, set(range(40))],
        ids=["none", "first", "last", "adjacent", "scattered", "all"],
    )
    async def test_model_failing_on_marked_items_fails_exactly_those(
        self, marked: set[int]
    ) -> None:
        items = frames(40)
        for i in marked:
            items[i].data[i % 4] = FAIL_MARKER
        worker = BatchWorker(failing_model(), providers="cpu", max_batch=8, replicas=2)
        results = await collect(worker, items)
        assert [r.item for r in results] == items
        assert {r.item.seq for r in results if not r.ok} == marked
        for r in results:
            if r.ok:
                np.testing.assert_array_equal(r.value, 2 * r.item.data)
            else:
                assert isinstance(r.error, WorkerError)
                assert (r.error.sensor, r.error.seq) == ("cam", r.item.seq)
                assert r.error.__cause__ is not None
                assert f"sensor 'cam' seq {r.item.seq}: inference failed on this item" in str(
                    r.error
                )
        assert worker.statistics().failed == len(marked)

    async def test_preprocess_failing_on_one_item_fails_only_that_item(self) -> None:
        def pre(items: list[Frame]) -> np.ndarray:
            for f in items:
                if f.seq == 5:
                    raise ValueError("cannot convert frame 5")
            return np.stack([f.data for f in items])

        worker = BatchWorker(scale_model(), preprocess=pre, providers="cpu", max_batch=4)
        results = await collect(worker, frames(12))
        failed = [r for r in results if not r.ok]
        assert [r.item.seq for r in failed] == [5]
        assert failed[0].error is not None
        assert "ValueError: cannot convert frame 5" in str(failed[0].error)

    async def test_a_failed_group_names_its_first_member(self) -> None:
        f = frames(1)[0]
        f.data[0] = FAIL_MARKER
        group = FrameGroup(f.t, {"cam": f})
        worker = BatchWorker(
            failing_model(),
            preprocess=lambda gs: np.stack([g.frames["cam"].data for g in gs]),
            providers="cpu",
        )
        (result,) = await collect(worker, [group])
        assert result.error is not None
        assert (result.error.sensor, result.error.seq) == ("cam", 0)
        assert "group [('cam', 0)]" in str(result.error)

    async def test_a_dead_session_is_restarted_and_counted(self) -> None:
        # One replica: with two, the other replica's thread may take every batch.
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=4, replicas=1)
        await worker.start()
        dead = worker._sessions[0].session

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("device lost")

        dead.run = broken
        results = await collect(worker, frames(10))
        assert all(r.ok for r in results)
        assert worker.statistics().restarts == 1
        assert worker._sessions[0].session is not dead


class TestBatchBuffers:
    """Each replica thread prepares the batch it runs; the items' data are stacked into
    that replica's reused buffer. Results must never see another batch's data."""

    @pytest.mark.parametrize("replicas", [1, 2])
    async def test_an_item_of_the_wrong_shape_fails_alone_in_the_stacked_batch(
        self, replicas: int
    ) -> None:
        items = frames(30)
        bad = Frame("cam", 11, 0, np.zeros(5, np.float32))
        items[11] = bad
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=8, replicas=replicas)
        results = await collect(worker, items)
        assert [r.item for r in results] == items
        (failed,) = [r for r in results if not r.ok]
        assert failed.item is bad
        assert failed.error is not None
        assert (failed.error.sensor, failed.error.seq) == ("cam", 11)
        for r in results:
            if r.ok:
                np.testing.assert_array_equal(r.value, 2 * r.item.data)

    async def test_values_stay_each_items_own_across_batch_sizes_and_replicas(self) -> None:
        rng = np.random.default_rng(3)
        items = [Frame("cam", i, i, rng.random(4, dtype=np.float32)) for i in range(600)]
        # Adaptive: the sizer tries every power of two, so the buffers serve many sizes.
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=16, replicas=2)
        results = await collect(worker, items)
        assert len(worker.statistics().batch_sizes) > 2
        for r in results:
            np.testing.assert_array_equal(r.value, 2 * r.item.data)
            assert not np.shares_memory(r.value, r.item.data)

    async def test_two_streams_of_one_worker_side_by_side_keep_their_own_values(self) -> None:
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=8, replicas=2)
        rng = np.random.default_rng(5)
        inputs = {
            name: [Frame(name, i, i, rng.random(4, dtype=np.float32)) for i in range(400)]
            for name in ("a", "b")
        }
        out: dict[str, list[WorkerResult]] = {}

        async def one(name: str) -> None:
            out[name] = await collect(worker, inputs[name])

        async with anyio.create_task_group() as tg:
            for name in inputs:
                tg.start_soon(one, name)
        for name, results in out.items():
            assert [r.item for r in results] == inputs[name]
            for r in results:
                np.testing.assert_array_equal(r.value, 2 * r.item.data)

    def test_image_preprocess_gives_each_thread_its_own_ring(self) -> None:
        pre = ImagePreprocess((4, 4), mean=(0, 0, 0), std=(1 / 255,) * 3, max_batch=2)
        out: dict[int, list[np.ndarray]] = {}

        def prepare(value: int) -> None:
            image = np.full((4, 4, 3), value, np.uint8)
            out[value] = [pre([Frame("cam", k, 0, image)]) for k in range(3)]

        threads = [threading.Thread(target=prepare, args=(v,)) for v in (10, 200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for value, batches in out.items():
            assert all(np.all(b == value) for b in batches)  # nobody overwrote them
        assert not any(np.shares_memory(a, b) for a in out[10] for b in out[200])
        assert np.shares_memory(out[10][0], out[10][2])  # a thread's ring of two came round


@settings(max_examples=200, deadline=None)
@given(order=st.permutations(range(24)), cuts=st.lists(st.integers(1, 6), max_size=24))
def test_results_completed_a_batch_at_a_time_leave_in_order(
    order: list[int], cuts: list[int]
) -> None:
    buffer: ReorderBuffer[int] = ReorderBuffer(24)
    for _ in range(24):
        buffer.admit()
    released: list[int] = []
    rest = list(order)
    for cut in [*cuts, 24]:
        chunk, rest = rest[:cut], rest[cut:]
        out = buffer.complete_many([(seq, seq) for seq in chunk])
        done = set(order[: len(order) - len(rest)])
        # Released: the completed run after what left before, nothing past a gap.
        expected = []
        k = len(released)
        while k in done:
            expected.append(k)
            k += 1
        assert out == expected
        released += out
    assert released == list(range(24))
    with pytest.raises(ValueError, match="seq 3 is not outstanding"):
        buffer.complete_many([(3, 3)])


class TestLifecycle:
    @pytest.mark.parametrize("kind", ["async", "plain"])
    async def test_a_failing_source_raises_its_own_error_from_the_stream(self, kind: str) -> None:
        # A source has a feeder task; a plain iterable is admitted by the generator itself.
        async def source() -> AsyncIterator[Frame]:
            for f in frames(6):
                yield f
            raise OSError("camera unplugged")

        def plain() -> Iterator[Frame]:
            yield from frames(6)
            raise OSError("camera unplugged")

        worker = BatchWorker(scale_model(), providers="cpu", max_batch=2)
        seen: list[int] = []

        async def consume() -> None:
            async for r in worker.stream(source() if kind == "async" else plain()):
                seen.append(r.index)

        with pytest.raises(OSError, match="camera unplugged"):
            await consume()
        assert seen == list(range(len(seen)))  # whatever came out came out in order

    async def test_a_plain_iterable_s_first_batches_are_full_a_source_s_go_greedy(self) -> None:
        # A list's items are all there: no batch of one while a slot is free. A source's
        # first item goes alone (the model would otherwise wait for the next arrival).
        async def source() -> AsyncIterator[Frame]:
            for f in frames(12):
                yield f

        plain = BatchWorker(scale_model(), providers="cpu", max_batch=4, adaptive=False)
        await collect(plain, frames(12))
        assert plain.statistics().batch_sizes == {4: 3}
        greedy = BatchWorker(scale_model(), providers="cpu", max_batch=4, adaptive=False)
        await collect(greedy, source())
        assert min(greedy.statistics().batch_sizes) == 1

    @pytest.mark.parametrize("kind", ["async", "plain"])
    async def test_a_slow_consumer_holds_the_input_back_to_the_window(self, kind: str) -> None:
        pulled = 0

        def counted() -> Iterator[Frame]:
            nonlocal pulled
            for f in frames(300):
                pulled += 1
                yield f

        async def source() -> AsyncIterator[Frame]:
            for f in counted():
                yield f

        window = 24
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=4, window=window)
        ahead: list[int] = []
        async for r in worker.stream(source() if kind == "async" else counted()):
            ahead.append(pulled - (r.index + 1))
            await anyio.lowlevel.checkpoint()  # the consumer's own work
        assert len(ahead) == 300
        # Never more than the window admitted past the consumer (a feeder holds the one
        # item it pulled while it waits for room).
        assert max(ahead) <= window + (kind == "async")
        assert max(ahead) >= 8  # yet items were admitted ahead, in runs

    async def test_sessions_dying_too_often_stop_the_stream_with_a_worker_error(self) -> None:
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=4, max_restarts=0)
        await worker.start()

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("device lost")

        # every replica's session: which replica thread takes a batch is up to the scheduler
        # (two on the CPU; under load one may take every batch)
        for replica in worker._sessions:
            replica.session.run = broken
        with pytest.raises(WorkerError, match=r"died \d+ times \(limit 0\).*device lost"):
            await collect(worker, frames(8))

    async def test_closing_early_waits_for_batches_in_flight_and_stops_the_threads(
        self,
    ) -> None:
        def slow(items: list[Frame]) -> np.ndarray:
            time.sleep(0.01)
            return np.stack([f.data for f in items])

        worker = BatchWorker(scale_model(), preprocess=slow, providers="cpu", max_batch=2)
        # stream() is an async generator typed as an AsyncIterator (as fusion._pipeline notes)
        async with aclosing(worker.stream(frames(50))) as results:  # type: ignore[type-var]
            async for r in results:
                if r.index == 3:
                    break
        assert not [t for t in threading.enumerate() if t.name.startswith("hyperframes-worker")]
        # The worker serves a new stream afterwards.
        again = await collect(worker, frames(5))
        assert [r.index for r in again] == list(range(5))

    async def test_statistics_report_batch_service_times(self) -> None:
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=4)
        await collect(worker, frames(20))
        stats = worker.statistics()
        assert stats.batches == sum(stats.batch_sizes.values())
        assert 0 < stats.service_p50 <= stats.service_p99


class TestThreadLayout:
    """On the CPU with neither replicas nor threads given: the layout is measured among
    the candidates for the free cores (see tests/fusion/test_worker_layout.py)."""

    @pytest.mark.parametrize(
        ("cores", "reserve", "layouts"),
        [
            (1, 0, {(1, 1)}),
            (2, 0, {(2, 1), (1, 2)}),
            (3, 0, {(2, 1), (1, 3), (3, 1)}),
            (8, 0, {(2, 4), (1, 8)}),
            (3, 1, {(2, 1), (1, 2)}),
        ],
    )
    async def test_the_cpu_default_is_a_measured_split_of_the_free_cores(
        self,
        monkeypatch: pytest.MonkeyPatch,
        cores: int,
        reserve: int,
        layouts: set[tuple[int, int]],
    ) -> None:
        monkeypatch.setattr(sessions_module, "free_cores", lambda: cores)
        worker = BatchWorker(scale_model(), providers="cpu", max_batch=4, reserve_threads=reserve)
        results = await collect(worker, frames(20))
        layout = (worker.replicas, worker.threads)
        assert layout in layouts
        assert len(worker._sessions) == layout[0]
        assert [r.index for r in results] == list(range(20))
        assert [float(r.value[0]) for r in results] == [2.0 * i for i in range(20)]
        stats = worker.statistics()
        assert (stats.replicas, stats.threads) == layout

    async def test_given_replicas_or_threads_are_kept(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(sessions_module, "free_cores", lambda: 4)
        one = BatchWorker(scale_model(), providers="cpu", threads=3)
        three = BatchWorker(scale_model(), providers="cpu", replicas=3)
        await one.start()
        await three.start()
        assert (one.replicas, one.threads) == (1, 3)
        assert (three.replicas, three.threads) == (3, 1)

    def test_a_gpu_provider_that_cannot_load_is_a_cpu_layout(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(sessions_module, "probe_provider", lambda p: "no driver")
        assert sessions_module.runs_on_cpu("auto")
        monkeypatch.setattr(sessions_module, "probe_provider", lambda p: None)
        assert not sessions_module.runs_on_cpu("auto")
        assert sessions_module.runs_on_cpu("cpu")

    async def test_a_replica_prepares_the_queued_batch_before_handing_back_its_last(
        self,
    ) -> None:
        # The hand-back wakes the event loop, which then holds the GIL for its turn; a
        # preprocess after it would wait for that turn while the cores idle.
        events: list[tuple[str, int]] = []

        def prepare(items: list[Frame]) -> np.ndarray:
            events.append(("prepare", items[0].seq))
            return np.stack([f.data for f in items])

        class RecordingLanes(Lanes):
            def _deliver(self, run: list[Finished]) -> None:
                for done in run:
                    events.append(("hand back", done.batch.entries[0].item[1].seq))
                super()._deliver(run)

        runner = one_wide_session(prepare)  # the replica prepares its own batches
        batcher: DynamicBatcher[tuple[int, Frame]] = DynamicBatcher(2)
        lanes = RecordingLanes(runner, 1, current_clock())
        finished: list[Finished] = []
        all_back = anyio.Event()

        def on_done(run: list[Finished]) -> None:
            finished.extend(run)
            if len(finished) == 3:
                all_back.set()

        for f in frames(6):
            batcher.push((f.seq, f), 0)
        while (batch := batcher.poll(0)) is not None:
            lanes.submit(batch)  # all three queued before the replica starts
        lanes.start(on_done)
        lanes.stop()
        await anyio.to_thread.run_sync(lanes.join)
        with anyio.fail_after(5):
            await all_back.wait()
        assert events == [
            ("prepare", 0),
            ("prepare", 2),
            ("hand back", 0),
            ("prepare", 4),
            ("hand back", 2),
            ("hand back", 4),
        ]
        values = [float(o.value[0]) for done in finished for o in done.outcomes]
        assert values == [2.0 * i for i in range(6)]

    async def test_a_replica_with_batches_queued_hands_back_up_to_hold_together(self) -> None:
        # Each hand-back wakes the loop, whose turn holds the GIL while the replica
        # waits with the model idle: offline input hands back in runs.
        runs: list[list[int]] = []
        runner = one_wide_session()
        batcher: DynamicBatcher[tuple[int, Frame]] = DynamicBatcher(2, capacity=10)
        lanes = Lanes(runner, 1, current_clock())
        all_back = anyio.Event()

        def on_done(run: list[Finished]) -> None:
            runs.append([done.batch.entries[0].item[0] for done in run])
            if sum(len(r) for r in runs) == 5:
                all_back.set()

        for f in frames(10):
            batcher.push((f.seq, f), 0)
        while (batch := batcher.poll(0)) is not None:
            lanes.submit(batch)  # all five queued before the replica starts
        lanes.start(on_done, hold=2)
        lanes.stop()
        await anyio.to_thread.run_sync(lanes.join)
        with anyio.fail_after(5):
            await all_back.wait()
        # Two and two while more were queued; the last alone (the stop came next).
        assert runs == [[0, 2], [4, 6], [8]]

    async def test_offline_input_comes_back_in_runs_and_a_source_batch_by_batch(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        runs = count_hand_backs(monkeypatch)
        worker = BatchWorker(
            scale_model(), providers="cpu", max_batch=2, adaptive=False, replicas=1, threads=2
        )
        results = await collect(worker, frames(64))
        assert [float(r.value[0]) for r in results] == [2.0 * i for i in range(64)]
        assert sum(runs) == worker.statistics().batches == 32
        assert 1 < max(runs) <= 4  # a list is all there: runs of up to 4

        async def source() -> AsyncIterator[Frame]:
            for f in frames(64):
                yield f

        runs.clear()
        results = await collect(worker, source())
        assert [float(r.value[0]) for r in results] == [2.0 * i for i in range(64)]
        assert set(runs) == {1}  # a live source's results are not held back
        runs.clear()
        delayed = BatchWorker(
            scale_model(), providers="cpu", max_batch=2, max_delay=1_000_000, adaptive=False
        )
        await collect(delayed, frames(16))
        assert set(runs) == {1}  # nor when a delay is asked for

    @pytest.mark.parametrize("from_file", [True, False])
    async def test_a_file_source_comes_back_in_runs_a_live_one_batch_by_batch_as_far_ahead(
        self, monkeypatch: pytest.MonkeyPatch, from_file: bool
    ) -> None:
        # A source reading a file (a video, a log) is all there too: its results come
        # back in runs, as a list's do; a live one's batch by batch. Either way the
        # source is read no further ahead of the consumer than a live source is.
        runs = count_hand_backs(monkeypatch)
        items = frames(96, features=512)
        pulled = [0]

        class Frames(Source):
            @property
            def from_file(self) -> bool:
                return from_file

            async def frames(self) -> AsyncIterator[Frame]:
                for f in items:
                    pulled[0] += 1
                    yield f

        worker = BatchWorker(
            scale_model(512), providers="cpu", max_batch=2, adaptive=False, replicas=1, threads=2
        )
        ahead, values = [], []
        with anyio.fail_after(30):
            async with aclosing(worker.stream(Frames(SensorSpec("cam")))) as results:
                async for r in results:
                    values.append(float(r.value[0]))
                    ahead.append(pulled[0] - len(values))
                    await anyio.lowlevel.checkpoint()  # a consumer that takes its time
        assert values == [2.0 * f.seq for f in items]
        assert sum(runs) == worker.statistics().batches
        assert (max(runs) > 1) is from_file
        # A live source's window (16: the least), plus the one item the feeder holds
        # while it waits for room; runs alone would have let 2 x 2 x (5 in flight + 1).
        assert max(ahead) <= 16 + 1 < 24

    async def test_a_wide_sessions_batches_are_costed_over_an_interval_or_not_at_all(
        self,
    ) -> None:
        # One session across 2 cores: the calling thread's CPU is about half a batch's,
        # so the first hand-backs of a stream (no interval before them) are not costed;
        # later ones share the process's CPU since the last hand-back by their threads'.
        from fusion.workers._batcher import Batch
        from fusion.workers._results import WorkerCounters
        from fusion.workers._stream import StreamRun, StreamSettings

        runner = one_wide_session()
        run = StreamRun(runner, 1, StreamSettings(max_batch=4, max_delay=0, hold=4),
                        WorkerCounters())  # fmt: skip

        def done(cpu_ns: int) -> Finished:
            return Finished(Batch((), 0, "full"), [], 0, 0, cpu_ns=cpu_ns)

        assert run._costs([done(100), done(300)], 1_000, 50_000) == [None, None]
        run._finishes.append((1_000, 50_000, False, 2))  # idle since: CPU counts anyway
        assert run._costs([done(100), done(300)], 9_000, 54_000) == [1_000, 3_000]

    async def test_a_preprocessing_thread_never_works_ahead_past_its_ring(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # One replica of one thread has a preprocessing thread, whose image preprocess
        # reuses two buffers: with hand-backs in runs it would prepare up to four
        # batches ahead and overwrite inputs not yet run (found by the fleet's tests).
        from fusion.workers._models import sobel_edges

        runs = count_hand_backs(monkeypatch)
        rng = np.random.default_rng(7)
        images = [
            Frame("cam", i, i * 1_000, rng.integers(0, 256, (12, 16, 3), np.uint8))
            for i in range(40)
        ]
        pre = ImagePreprocess((16, 12))
        worker = BatchWorker(
            sobel_edges(), preprocess=pre, providers="cpu", max_batch=2, adaptive=False,
            replicas=1, threads=1,
        )  # fmt: skip
        results = await collect(worker, images)
        one = ModelSession(sobel_edges(), "cpu", threads=1)
        expected = [one.run(one.feeds(pre([f])))[0][0] for f in images]
        for got, want in zip(results, expected, strict=True):
            np.testing.assert_array_equal(got.value, want)
        assert set(runs) == {1}


class TestVirtualTime:
    async def test_no_item_waits_longer_than_max_delay_and_batches_stay_within_max_batch(
        self,
    ) -> None:
        clock = VirtualClock()
        rng = random.Random(3)
        arrivals = []
        t = 0
        for _ in range(60):
            t += rng.choice([0, 0, 1 * MS, 2 * MS, 7 * MS])
            arrivals.append(t)

        async def source() -> AsyncIterator[Frame]:
            for i, at in enumerate(arrivals):
                await current_clock().sleep_until(at)
                yield Frame("cam", i, at, np.full(4, i, np.float32))

        worker = BatchWorker(scale_model(), providers="cpu", max_batch=4, max_delay=3 * MS)
        with use_clock(clock):
            async with clock.autojump():
                results = await collect(worker, source())
        assert [r.item.seq for r in results] == list(range(60))
        # Model runs take no virtual time (threads stop the clock), so the bound is max_delay.
        assert max(r.latency for r in results) <= 3 * MS
        stats = worker.statistics()
        assert max(stats.batch_sizes) <= 4
        assert stats.batcher is not None
        assert stats.batcher.by_reason.get("delay", 0) > 0

    async def test_a_lone_item_is_sent_by_the_timer_not_by_the_next_arrival(self) -> None:
        clock = VirtualClock()

        async def source() -> AsyncIterator[Frame]:
            yield Frame("cam", 0, 0, np.zeros(4, np.float32))
            await current_clock().sleep_until(10_000 * MS)
            yield Frame("cam", 1, 10_000 * MS, np.ones(4, np.float32))

        # A fixed cap (the sizer would start at batches of one, which go at once).
        worker = BatchWorker(
            scale_model(), providers="cpu", max_batch=8, max_delay=5 * MS, adaptive=False
        )
        with use_clock(clock):
            async with clock.autojump():
                results = await collect(worker, source())
        assert results[0].latency == 5 * MS

    async def test_items_past_their_deadline_expire_and_are_counted(self) -> None:
        clock = VirtualClock()
        worker = BatchWorker(
            scale_model(),
            providers="cpu",
            max_batch=8,
            max_delay=5 * MS,
            deadline=1 * MS,
            adaptive=False,
        )

        async def source() -> AsyncIterator[Frame]:
            for f in frames(3):
                yield f
            await current_clock().sleep_until(1_000 * MS)  # the input stays open

        with use_clock(clock):
            async with clock.autojump():
                results = await collect(worker, source())
        assert all(isinstance(r.error, DeadlineExpired) for r in results)
        assert results[1].error is not None
        assert str(results[1].error).startswith("sensor 'cam' seq 1: deadline of 1000000 ns")
        stats = worker.statistics()
        assert (stats.expired, stats.failed, stats.batches) == (3, 3, 0)


class TestProviders:
    def test_an_unbuilt_provider_falls_back_to_cpu_reporting_once_why(
        self, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(sessions_module, "_reported", set())
        with caplog.at_level(logging.WARNING, logger="fusion.workers"):
            first = ModelSession(scale_model(), ["OpenVINOExecutionProvider"])
            ModelSession(scale_model(), ["OpenVINOExecutionProvider"])
        assert first.providers == [CPU]
        assert first.failures[0].provider == "OpenVINOExecutionProvider"
        assert "not built into this onnxruntime" in first.failures[0].reason
        warnings = [r for r in caplog.records if "OpenVINOExecutionProvider" in r.getMessage()]
        assert len(warnings) == 1

    def test_sessions_made_in_parallel_threads_leave_the_process_stdout_alone(self) -> None:
        # the demo builds its models' sessions in worker threads at once; a stdout swap
        # per session once left sys.stdout on a dropped buffer and every later print lost
        before = sys.stdout
        errors: list[BaseException] = []

        def make() -> None:
            try:
                for _ in range(5):
                    ModelSession(scale_model(), ["CUDAExecutionProvider", CPU], threads=1)
            except BaseException as err:  # pragma: no cover - reported below
                errors.append(err)

        threads = [threading.Thread(target=make) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors
        assert sys.stdout is before

    async def test_cuda_requested_without_a_gpu_falls_back_to_cpu_with_the_reason(
        self,
    ) -> None:
        if cuda_works():
            pytest.skip("a CUDA GPU is present; the fallback path is not taken")
        worker = BatchWorker(scale_model(), providers="cuda")
        results = await collect(worker, frames(4))
        assert all(r.ok for r in results)
        stats = worker.statistics()
        assert stats.providers == [CPU]
        assert stats.provider_failures[0].provider == CUDA
        assert stats.provider_failures[0].reason  # e.g. "its library does not load: libcublas..."
        assert (stats.max_batch, stats.max_delay) == (4, 0)  # CPU defaults

    @pytest.mark.gpu
    async def test_cuda_provider_runs_the_model_when_a_gpu_is_present(self) -> None:
        if not cuda_works():
            pytest.skip("no CUDA GPU on this machine")
        worker = BatchWorker(scale_model(), providers="cuda")
        results = await collect(worker, frames(20))
        assert worker.providers[0] == CUDA
        assert (worker.max_batch, worker.max_delay) == (8, 5 * MS)  # GPU defaults
        assert worker.statistics().host_buffers == "pinned"  # IO binding from page-locked memory
        for r in results:
            np.testing.assert_array_equal(r.value, 2 * r.item.data)

    def test_a_missing_cuda_library_is_named_with_how_to_get_it(self) -> None:
        hint = missing_library_hint(
            "libcublasLt.so.13: cannot open shared object file: No such file or directory"
        )
        assert "libcublasLt.so.13 is cuBLAS" in hint
        assert "onnxruntime-gpu[cuda,cudnn]" in hint
        assert "NVIDIA driver" in missing_library_hint("libcuda.so.1: cannot open shared object")
        assert missing_library_hint("something else went wrong") == ""
        if not cuda_works():
            reason = ModelSession(scale_model(), "cuda").failures[0].reason
            assert re.search(r"lib\w+\.so[.\d]* is ", reason) or "not built" in reason, reason

    def test_pinned_staging_copies_the_batch_or_says_why_it_cannot(self) -> None:
        staging = PinnedStaging()
        batch = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        staged = staging.stage("x", batch)
        np.testing.assert_array_equal(staged, batch)
        again = staging.stage("x", batch[:1] + 1)
        np.testing.assert_array_equal(again, batch[:1] + 1)
        if staging.pinned:  # reused: the second batch lands in the first one's buffer
            assert again.ctypes.data == staged.ctypes.data
        else:  # no CUDA runtime, or one without a device: "cudaHostAlloc ... failed"
            assert re.search(r"CUDA runtime does not load|cudaHostAlloc", str(staging.reason))
        staging.close()


def cuda_works() -> bool:
    return ModelSession(scale_model(), "cuda").providers[0] == CUDA


class TestChangeGate:
    async def test_static_frames_reuse_the_last_result_and_changed_ones_run(self) -> None:
        still = np.zeros((72, 128, 3), np.uint8)
        moved = still.copy()
        moved[20:50, 40:90] = 255
        pics = [still] * 5 + [moved] * 5
        items = [Frame("cam", i, i * 33 * MS, p) for i, p in enumerate(pics)]

        def pre(fs: list[Frame]) -> np.ndarray:
            return np.stack([[f.data.mean(), f.seq, 0, 0] for f in fs]).astype(np.float32)

        worker = BatchWorker(scale_model(), preprocess=pre, providers="cpu")
        gate = ChangeGate(0.02, keyframe_every=None, keyframe_interval=None)
        results = await collect(worker, items, gate=gate)
        assert [r.reused for r in results] == [False] + [True] * 4 + [False] + [True] * 4
        assert results[3].value[1] == 0.0  # the value computed for frame 0
        assert results[8].value[1] == 10.0  # the value computed for frame 5 (2 * seq)
        assert worker.statistics().reused == 8
