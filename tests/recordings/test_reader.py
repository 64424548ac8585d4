"""Recorder and reader together, over the indexed and the scanning paths."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import anyio
import numpy as np
import pytest

from fusion._frames import Frame, SensorSpec
from fusion.errors import FrameFormatError
from recordings import Recorder, open_recording
from recordings.errors import RecorderClosed
from recordings.hfr._format import BLOB_ALIGN

from .helpers import make_frames, same_frame

PATHS = [pytest.param(True, id="indexed"), pytest.param(False, id="scan")]


@pytest.fixture(scope="module")
def frames() -> list[Frame]:
    return make_frames(600)


@pytest.fixture
def recorded(tmp_path: Path, frames: list[Frame]) -> Path:
    path = tmp_path / "s.hfr"
    specs = [SensorSpec("cam", kind="camera", rate_hz=33.3), SensorSpec("lidar", kind="lidar")]
    with Recorder(path, sensors=specs, metadata={"site": "lab"}, chunk_bytes=40_000) as rec:
        for f in frames:
            rec.write(f)
    return path


@pytest.mark.parametrize("use_index", PATHS)
def test_every_frame_reads_back_in_recorded_order(
    recorded: Path, frames: list[Frame], use_index: bool
) -> None:
    with open_recording(recorded, use_index=use_index) as log:
        back = list(log.frames())
        assert log.indexed is use_index
        assert log.damage == []
    assert len(back) == len(frames)
    assert all(same_frame(a, b) for a, b in zip(frames, back, strict=True))


@pytest.mark.parametrize("use_index", PATHS)
def test_summary_needs_no_decompression(recorded: Path, use_index: bool) -> None:
    with open_recording(recorded, use_index=use_index) as log:
        s = log.summary()
    assert s.count == 600
    assert s.chunks > 3
    assert {n: x.count for n, x in s.sensors.items()} == {"cam": 200, "lidar": 200, "imu": 200}
    assert s.sensors["cam"].spec.kind == "camera"
    assert s.sensors["imu"].spec == SensorSpec("imu")  # declared by its first frame
    assert (s.sensors["cam"].t_start, s.sensors["cam"].t_end) == (0, 597 * 10_000_000)
    assert (s.t_start, s.t_end, s.duration_ns) == (0, 599 * 10_000_000, 599 * 10_000_000)
    assert s.metadata == {"site": "lab"}
    assert s.compression_ratio > 1.0
    assert s.file_size == recorded.stat().st_size
    assert s.indexed is use_index


@pytest.mark.parametrize("use_index", PATHS)
@pytest.mark.parametrize(
    ("sensors", "start", "end"),
    [
        (None, 1_000_000_000, 2_000_000_000),
        (["imu"], None, None),
        (["cam", "lidar"], 3_000_000_000, None),
        (None, None, 10_000_000),
        (None, 9_000_000_000, None),
        (["imu"], 2_000_000_001, 2_050_000_000),
    ],
)
def test_filters_select_exactly_the_matching_frames(
    recorded: Path,
    frames: list[Frame],
    use_index: bool,
    sensors: list[str] | None,
    start: int | None,
    end: int | None,
) -> None:
    expected = [
        (f.sensor, f.seq)
        for f in frames
        if (sensors is None or f.sensor in sensors)
        and (start is None or f.t >= start)
        and (end is None or f.t < end)
    ]
    with open_recording(recorded, use_index=use_index) as log:
        got = [(f.sensor, f.seq) for f in log.frames(sensors=sensors, start=start, end=end)]
    assert got == expected


def test_a_window_reads_only_the_chunks_that_overlap_it(recorded: Path) -> None:
    with open_recording(recorded) as log:
        chosen = log.select(start=2_000_000_000, end=2_100_000_000)
        assert 0 < len(chosen) <= 2
        assert all(c.t_end >= 2_000_000_000 and c.t_start < 2_100_000_000 for c in chosen)


def test_arrays_are_read_only_aligned_views(recorded: Path) -> None:
    with open_recording(recorded) as log:
        cam = next(log.frames(sensors=["cam"]))
    assert cam.data.flags.writeable is False
    assert cam.data.ctypes.data % BLOB_ALIGN == 0
    with pytest.raises(ValueError, match="read-only"):
        cam.data[0, 0, 0] = 1


def test_out_of_order_times_are_found_by_a_window(tmp_path: Path) -> None:
    # A late sensor writes old stamps after newer ones: chunks overlap in time.
    path = tmp_path / "late.hfr"
    ts = [(i * 1_000, "a") for i in range(200)] + [(i * 1_000 + 500, "late") for i in range(200)]
    with Recorder(path, chunk_bytes=1_000) as rec:
        for seq, (t, name) in enumerate(ts):
            rec.write(Frame(name, seq, t, np.zeros(4)))
    with open_recording(path) as log:
        got = [f.t for f in log.frames(start=50_000, end=52_000)]
    assert sorted(got) == [50_000, 50_500, 51_000, 51_500]


def test_the_flush_interval_puts_frames_on_disk_without_closing(tmp_path: Path) -> None:
    path = tmp_path / "open.hfr"
    rec = Recorder(path, flush_interval=0.02)
    try:
        rec.write(Frame("a", 0, 1, np.arange(10)))
        with anyio.from_thread.start_blocking_portal() as portal:  # real wall time passes
            for _ in range(500):
                if rec.statistics().chunks_written:
                    break
                portal.call(anyio.sleep, 0.01)
        with open_recording(path) as log:
            assert not log.indexed
            assert [f.seq for f in log.frames()] == [0]
            assert log.damage == []
    finally:
        rec.close()


def test_flush_makes_everything_written_so_far_readable(tmp_path: Path) -> None:
    path = tmp_path / "f.hfr"
    with Recorder(path, flush_interval=None) as rec:
        for i in range(5):
            rec.write(Frame("a", i, i))
        rec.flush()
        with open_recording(path) as log:
            assert log.summary().count == 5


def test_backpressure_keeps_the_pending_chunks_bounded(tmp_path: Path) -> None:
    path = tmp_path / "bp.hfr"
    peak = 0
    with Recorder(path, chunk_bytes=10_000, max_pending=1, workers=1) as rec:
        for i in range(300):
            rec.write(Frame("a", i, i, np.full(5_000, i, np.uint16)))
            peak = max(peak, rec.statistics().pending_chunks)
    assert peak <= 1
    with open_recording(path) as log:
        assert log.summary().count == 300


def test_split_by_size_writes_numbered_self_contained_files(tmp_path: Path) -> None:
    path = tmp_path / "s.hfr"
    with Recorder(path, chunk_bytes=5_000, split_bytes=20_000) as rec:
        for i in range(400):
            rec.write(Frame("a", i, i * 1_000, np.random.default_rng(i).random(100)))
    assert len(rec.paths) > 2
    assert [p.name for p in rec.paths[:2]] == ["s.0000.hfr", "s.0001.hfr"]
    seqs = []
    for part in rec.paths:
        with open_recording(part) as log:
            assert log.indexed
            assert log.summary().sensors["a"].spec.name == "a"
            seqs += [f.seq for f in log.frames()]
    assert seqs == list(range(400))


def test_split_by_duration_cuts_on_frame_time(tmp_path: Path) -> None:
    path = tmp_path / "d.hfr"
    with Recorder(path, chunk_bytes=500, split_seconds=1.0) as rec:
        for i in range(50):
            rec.write(Frame("a", i, i * 100_000_000, np.zeros(100)))
    spans = []
    for part in rec.paths:
        with open_recording(part) as log:
            spans.append(log.summary().duration_ns)
    assert len(rec.paths) >= 4
    assert max(spans) <= 1_100_000_000


def test_a_closed_recorder_refuses_frames(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "c.hfr")
    rec.close()
    rec.close()
    with pytest.raises(RecorderClosed, match=r"recorder for '.*c\.hfr' is closed"):
        rec.write(Frame("a", 0, 0))


def test_a_bad_frame_is_refused_and_the_rest_recorded(tmp_path: Path) -> None:
    path = tmp_path / "b.hfr"
    with Recorder(path) as rec:
        rec.write(Frame("a", 0, 0, np.zeros(3)))
        with pytest.raises(FrameFormatError, match=r"sensor 'a' seq 1"):
            rec.write(Frame("a", 1, 1, np.array([None], dtype=object)))
        rec.write(Frame("a", 2, 2, np.ones(3)))
    with open_recording(path) as log:
        assert [f.seq for f in log.frames()] == [0, 2]


async def test_the_recorder_is_an_async_sink(tmp_path: Path) -> None:
    path = tmp_path / "async.hfr"
    with anyio.fail_after(10):
        async with Recorder(path, chunk_bytes=2_000, max_pending=1) as rec:
            for i in range(200):
                await rec.send(Frame("a", i, i, np.full(100, i)))
    with open_recording(path) as log:
        assert [int(f.data[0]) for f in log.frames()] == list(range(200))


def test_a_failed_writer_says_why(tmp_path: Path) -> None:
    path = tmp_path / "fail.hfr"
    rec = Recorder(path, flush_interval=None)
    import os

    os.close(rec._fd)  # the disk goes away under the writer
    rec.write(Frame("a", 0, 0))
    with pytest.raises(Exception, match="Bad file descriptor"):
        rec.close()
    with pytest.raises(RecorderClosed, match="failed and accepts no more frames"):
        rec.write(Frame("a", 1, 1))


def test_an_abandoned_recorder_warns_and_still_finishes_its_file(tmp_path: Path) -> None:
    path = tmp_path / "abandoned.hfr"
    rec = Recorder(path, flush_interval=0.001)
    for f in make_frames(30):
        rec.write(f)
    thread, holder = rec._thread, [rec]
    del rec
    with pytest.warns(ResourceWarning, match=r"abandoned\.hfr.* without close\(\)"):
        _drop_and_join(holder, thread)
    with open_recording(path) as log:
        assert log.indexed  # the index and trailer were written
        assert log.summary().count == 30
        assert log.damage == []


def _drop_and_join(holder: list[Recorder], thread: threading.Thread) -> None:
    """Drop the last reference; __del__ runs here or in the writer thread, which then ends."""
    holder.clear()
    gc.collect()
    thread.join(10)
    assert not thread.is_alive()


def test_an_abandoned_read_with_readahead_closes_cleanly(recorded: Path) -> None:
    log = open_recording(recorded, readahead=2)
    frames = log.frames()
    assert next(frames).seq == 0  # chunks 1 and 2 are being decoded ahead
    log.close()  # waits for them; no read after close
    frames.close()
    assert log.closed
    with open_recording(recorded, readahead=2) as again:
        assert sum(1 for _ in again.frames()) == 600
