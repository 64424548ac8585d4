"""The video adapter's sans-I/O parts (timeline, ledger), its queue, and hardware fallback."""

from __future__ import annotations

import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import anyio
import av
import numpy as np
import pytest
from anyio import wait_all_tasks_blocked
from av.codec.hwaccel import hwdevices_available
from av.video.reformatter import VideoReformatter
from hypothesis import given
from hypothesis import strategies as st

from adapters import VideoSource
from adapters.video import BufferPool, PacketLedger, PixelConverter, Timeline
from adapters.video._convert import Payload
from adapters.video._hwaccel import AUTO_ORDER, HWAccelReport
from adapters.video._prefetch import Prefetch
from adapters.video._synth import write_video
from fusion.errors import ConfigError


class TestTimeline:
    @given(
        num=st.integers(1, 10**6),
        den=st.integers(1, 10**6),
        pts=st.integers(-(2**40), 2**40),
    )
    def test_to_ns_is_the_exact_rational_rounded_to_nearest(
        self, num: int, den: int, pts: int
    ) -> None:
        tb = Fraction(num, den)
        exact = pts * tb * 10**9
        got = Timeline(tb).to_ns(pts)
        assert abs(Fraction(got) - exact) <= Fraction(1, 2)
        assert got == (exact + Fraction(1, 2)).__floor__()

    @given(st.lists(st.integers(1, 10**5), min_size=2, max_size=50))
    def test_differences_of_stamps_do_not_drift(self, steps: list[int]) -> None:
        tl = Timeline(Fraction(1, 90000))
        pts = [sum(steps[:i]) for i in range(len(steps))]
        stamps = [tl.stamp(p)[0] for p in pts]
        assert stamps[-1] == tl.to_ns(pts[-1])  # no accumulated error

    def test_missing_pts_falls_back_to_dts_then_extrapolation(self) -> None:
        tl = Timeline(Fraction(1, 1000), nominal_period_ns=40_000_000)
        assert tl.stamp(None) == (0, "origin")
        assert tl.stamp(None, duration=20) == (20_000_000, "extrapolated")
        assert tl.stamp(None) == (60_000_000, "extrapolated")  # nominal period
        assert tl.stamp(None, dts=100) == (100_000_000, "dts")
        assert tl.stamp(None, dts=50) == (100_000_000, "dts")  # never goes backwards
        assert tl.stamp(120) == (120_000_000, "pts")

    def test_origin_pts_moves_zero(self) -> None:
        assert Timeline(Fraction(1, 90000), origin_pts=90000).to_ns(180000) == 10**9


class TestPacketLedger:
    def test_a_packet_that_never_comes_out_is_lost_after_the_reorder_window(self) -> None:
        ledger = PacketLedger(reorder_window=2)
        for pts in (0, 1, 2, 3):
            ledger.sent(pts)
        assert ledger.received(0) == []
        assert ledger.received(2) == []  # 1 may still come (reordering)
        assert ledger.received(3) == [1]
        assert ledger.pending == 0

    def test_flush_reports_everything_pending(self) -> None:
        ledger = PacketLedger()
        ledger.sent(5)
        ledger.sent(None)
        ledger.sent(6)
        assert ledger.flush() == [5, 6]

    def test_limit_bounds_the_ledger(self) -> None:
        ledger = PacketLedger(limit=3)
        evicted = [p for i in range(5) for p in ledger.sent(i)]
        assert evicted == [0, 1]
        assert ledger.pending == 3

    @given(st.permutations(list(range(20))), st.sets(st.integers(0, 19)))
    def test_every_packet_is_either_received_or_reported_once(
        self, order: list[int], lost: set[int]
    ) -> None:
        ledger = PacketLedger(reorder_window=1)
        reported: list[int] = []
        for pts in range(20):
            reported += ledger.sent(pts)
        for pts in sorted(set(order) - lost):  # decoders output in PTS order
            reported += ledger.received(pts)
        reported += ledger.flush()
        assert sorted(reported) == sorted(lost)


class TestPrefetch:
    async def test_a_full_queue_blocks_the_producer_until_the_loop_takes_items(self) -> None:
        queue: Prefetch[int] = Prefetch(2)
        done = threading.Event()

        def produce() -> None:
            for i in range(10):
                queue.put(i)
            queue.finish()
            done.set()

        thread = threading.Thread(target=produce)
        thread.start()
        got = []
        with anyio.fail_after(5):
            while True:
                try:
                    got.append(await queue.get())
                except anyio.EndOfStream:
                    break
        thread.join()
        assert got == list(range(10))
        assert queue.high_water <= 2

    async def test_drop_oldest_evicts_frames_but_never_control_items(self) -> None:
        queue: Prefetch[str] = Prefetch(2, drop_oldest=True)
        assert queue.put("f0") == []
        assert queue.put("error", droppable=False) == []
        assert queue.put("f1") == []
        assert queue.put("f2") == ["f0"]
        queue.finish()
        got = [await queue.get() for _ in range(3)]
        assert got == ["error", "f1", "f2"]

    async def test_a_waiting_consumer_is_woken_once_per_wake_after_frames(self) -> None:
        queue: Prefetch[object] = Prefetch(4, wake_after=3)
        got: list[object] = []

        async def consume() -> None:
            while True:
                try:
                    got.append(await queue.get())
                except anyio.EndOfStream:
                    return

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await wait_all_tasks_blocked()
                queue.put(1)
                queue.put(2)
                await wait_all_tasks_blocked()
                assert got == []  # two frames: the consumer sleeps on
                queue.put(3)
                await wait_all_tasks_blocked()
                assert got == [1, 2, 3]
                queue.put("error", droppable=False)  # a control item wakes it at once
                await wait_all_tasks_blocked()
                assert got == [1, 2, 3, "error"]
                queue.put(4)
                queue.finish()  # and so does the end
        assert got == [1, 2, 3, "error", 4]

    @given(capacity=st.integers(1, 6), data=st.data())
    def test_every_frame_arrives_in_order_whatever_wake_after(
        self, capacity: int, data: st.DataObject
    ) -> None:
        wake_after = data.draw(st.integers(1, capacity))
        n = data.draw(st.integers(0, 40))
        queue: Prefetch[int] = Prefetch(capacity, wake_after=wake_after)
        thread = threading.Thread(target=lambda: [*map(queue.put, range(n)), queue.finish()])

        async def consume() -> list[int]:
            got = []
            with anyio.fail_after(10):
                while True:
                    try:
                        got.append(await queue.get())
                    except anyio.EndOfStream:
                        return got

        thread.start()
        assert anyio.run(consume) == list(range(n))
        thread.join(5)

    @pytest.mark.parametrize("wake_after", [0, 3])
    def test_wake_after_must_fit_the_queue(self, wake_after: int) -> None:
        with pytest.raises(ConfigError, match="wake_after"):
            Prefetch(2, wake_after=wake_after)

    def test_close_releases_a_blocked_producer(self) -> None:
        queue: Prefetch[int] = Prefetch(1)
        queue.put(0)
        result: list[object] = []
        thread = threading.Thread(target=lambda: result.append(queue.put(1)))
        thread.start()
        queue.close()
        thread.join(5)
        assert result == [None]


def test_buffer_pool_reuses_only_unreferenced_buffers() -> None:
    pool = BufferPool((4, 4), max_buffers=2)
    a = pool.acquire()
    view = a[1:]
    b = pool.acquire()
    assert b is not a
    del a
    c = pool.acquire()  # a's view is still alive, b is held: a fresh, unkept buffer
    assert pool.misses == 1
    assert c is not b
    del view
    assert pool.acquire() is not b


def _decoded(path: Path) -> list[av.VideoFrame]:
    with av.open(str(path)) as container:
        return list(container.decode(video=0))


def _reference(
    frame: av.VideoFrame, fmt: str, size: tuple[int, int] | None, interp: str
) -> Payload:
    """What PyAV's own reformatter makes of ``frame`` (the converter must match it exactly).

    Shrunk into RGB or BGR to half the pixels or fewer, the converter asks swscale for
    planar RGB (``gbrp``) and interleaves it: so does the reference.
    """
    w, h = size if size is not None else (None, None)
    planar = (
        size is not None
        and fmt in ("rgb24", "bgr24")
        and 2 * size[0] * size[1] <= frame.width * frame.height
    )
    out = VideoReformatter().reformat(
        frame,
        width=w,
        height=h,
        format="gbrp" if planar else fmt,
        interpolation=interp.upper(),
        threads=1,
    )
    if planar:
        rgb = out.to_ndarray()  # PyAV's own interleaving, in RGB order
        return rgb if fmt == "rgb24" else rgb[:, :, ::-1]
    if fmt == "yuv420p":
        return {name: _plane(out, i) for i, name in enumerate("yuv")}
    return out.to_ndarray()  # type: ignore[no-any-return]


def _plane(frame: av.VideoFrame, index: int) -> np.ndarray:
    plane = frame.planes[index]
    rows = np.frombuffer(memoryview(plane), np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, : plane.width]


class TestPixelConverter:
    @pytest.mark.parametrize(
        ("fmt", "size", "interp"),
        [
            ("rgb24", None, "bilinear"),
            ("bgr24", None, "bicubic"),
            ("gray", None, "point"),
            ("bgr24", (32, 16), "bicubic"),
            ("gray", (40, 30), "area"),
            ("rgb24", (101, 75), "point"),
            ("yuv420p", (32, 16), "lanczos"),
        ],
    )
    def test_pooled_output_equals_the_reformatter_pixel_for_pixel(
        self, tmp_path: Path, fmt: Any, size: tuple[int, int] | None, interp: str
    ) -> None:
        path = tmp_path / "px.mkv"
        write_video(path, [0, 40, 80], size=(64, 48))
        converter = PixelConverter(fmt, size=size, interpolation=interp)
        for frame in _decoded(path):
            got, want = converter.convert(frame), _reference(frame, fmt, size, interp)
            if isinstance(want, dict):
                assert isinstance(got, dict)
                for name in want:
                    np.testing.assert_array_equal(got[name], want[name])
            else:
                np.testing.assert_array_equal(got, want)

    def test_released_buffers_are_reused_and_held_ones_never_overwritten(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "pool.mkv"
        write_video(path, list(range(0, 800, 40)), size=(64, 48))
        converter = PixelConverter("rgb24")
        frames = _decoded(path)
        held = converter.convert(frames[0])
        assert isinstance(held, np.ndarray)
        snapshot = held.copy()
        addresses = set()
        for frame in frames[1:]:
            image = converter.convert(frame)
            assert isinstance(image, np.ndarray)
            addresses.add(image.__array_interface__["data"][0])
            del image  # released: its buffer goes back to the pool
        assert len(addresses) < 4, "buffers come back from the pool"
        assert held.__array_interface__["data"][0] not in addresses
        np.testing.assert_array_equal(held, snapshot)
        converter.release()  # frees the pool; what a consumer still holds stays valid
        np.testing.assert_array_equal(held, snapshot)
        again = converter.convert(frames[1])
        np.testing.assert_array_equal(again, _reference(frames[1], "rgb24", None, "bilinear"))

    def test_inputs_the_graph_does_not_take_still_convert(self) -> None:
        rgb = np.random.default_rng(1).integers(0, 256, (48, 64, 3), np.uint8)
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        planes = PixelConverter("yuv420p").convert(frame)  # into YUV: the reformatter's matrix
        want = _reference(frame, "yuv420p", None, "bilinear")
        assert isinstance(planes, dict)
        assert isinstance(want, dict)
        for name in want:
            np.testing.assert_array_equal(planes[name], want[name])


class TestHardwareFallback:
    async def test_cuda_requested_without_a_gpu_falls_back_and_says_why(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        path = tmp_path / "hw.mkv"
        write_video(path, [0, 40, 80])
        source = VideoSource(path, hwaccel="cuda")
        with anyio.fail_after(20):
            async with source:
                frames = [f async for f in source.frames()]
        report = source.hwaccel_report
        assert report is not None
        assert len(frames) == 3
        if report.used == "cuda":  # pragma: no cover - only on a machine with a GPU
            return
        assert report.fell_back
        assert report.reasons
        assert report.reasons[0].startswith("cuda: ")
        assert "software decode: hardware 'cuda' unavailable" in str(report)
        assert any("hardware decode cuda:" in r.message for r in caplog.records)
        assert source.statistics()["hwaccel"]["used"] is None

    async def test_auto_tries_devices_in_order_and_always_decodes(self, tmp_path: Path) -> None:
        path = tmp_path / "auto.mkv"
        write_video(path, [0, 40])
        source = VideoSource(path, hwaccel="auto")
        with anyio.fail_after(30):
            async with source:
                frames = [f async for f in source.frames()]
        assert len(frames) == 2
        report = source.hwaccel_report
        assert report is not None
        if report.used is not None:  # pragma: no cover - only with working hardware
            return
        tried = {r.split(":")[0] for r in report.reasons}
        built = {d for d in AUTO_ORDER if d in hwdevices_available()}
        assert tried == (built or {"auto"})  # every candidate refused, each with a reason

    def test_report_without_request_says_software(self) -> None:
        assert str(HWAccelReport(None)) == "software decode (no hardware requested)"
