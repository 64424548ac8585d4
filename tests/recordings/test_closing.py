"""The close protocol the three recorders share (recordings/hfr/_closing.py).

Each recorder, used with ``with`` and with ``async with``, ends closed with its
file finished (the reader finds the footer index and every frame); ``aclose``
runs ``close`` off the event loop; an error raised by ``close`` comes out of
the ``with`` block.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fusion._frames import Frame
from recordings import Recorder, RecorderClosed, SnapshotRecorder, VideoRecorder, open_recording
from recordings.hfr._closing import Closeable

MS = 1_000_000


def frames() -> list[Frame]:
    image = np.zeros((16, 16, 3), np.uint8)
    return [Frame("cam", i, i * 40 * MS, image + i) for i in range(5)]


def plain(path: Path) -> Recorder:
    return Recorder(path)


def video(path: Path) -> VideoRecorder:
    return VideoRecorder(path, video={"cam": "ffv1"})


MAKERS: list[Callable[[Path], Any]] = [plain, video]


@pytest.mark.parametrize("make", MAKERS, ids=["Recorder", "VideoRecorder"])
def test_with_closes_the_recorder_and_finishes_its_file(
    tmp_path: Path, make: Callable[[Path], Any]
) -> None:
    path = tmp_path / "with.hfr"
    with make(path) as rec:
        assert isinstance(rec, Closeable)
        for frame in frames():
            rec.write(frame)
        assert not rec.closed
    assert rec.closed
    with open_recording(path) as log:
        assert log.indexed
        assert sorted({f.seq for f in log.frames()}) == [0, 1, 2, 3, 4]  # video: packet records


@pytest.mark.parametrize("make", MAKERS, ids=["Recorder", "VideoRecorder"])
async def test_async_with_closes_the_recorder_and_finishes_its_file(
    tmp_path: Path, make: Callable[[Path], Any]
) -> None:
    path = tmp_path / "async.hfr"
    async with make(path) as rec:
        for frame in frames():
            await rec.send(frame)
    assert rec.closed
    with open_recording(path) as log:
        assert log.indexed
        assert sorted({f.seq for f in log.frames()}) == [0, 1, 2, 3, 4]  # video: packet records


async def test_the_snapshot_recorder_closes_with_both_forms(tmp_path: Path) -> None:
    with SnapshotRecorder(tmp_path / "a.hfr", keep=1.0) as rec:
        for frame in frames():
            rec.write(frame)
        request = rec.trigger("with")
    assert rec.closed
    assert request.path is not None
    async with SnapshotRecorder(tmp_path / "b.hfr", keep=1.0) as arec:
        for frame in frames():
            arec.write(frame)
        arequest = arec.trigger("async with")
    assert arec.closed
    assert arequest.path is not None
    with open_recording(arequest.path) as log:
        assert [f.seq for f in log.frames()] == [0, 1, 2, 3, 4]


class Probe(Closeable):
    def __init__(self, fail: bool = False) -> None:
        self.closed_in: list[int] = []
        self.fail = fail

    def close(self) -> None:
        self.closed_in.append(threading.get_ident())
        if self.fail:
            raise RecorderClosed("probe failed")


async def test_aclose_runs_close_in_a_worker_thread() -> None:
    async with Probe() as probe:
        pass
    assert len(probe.closed_in) == 1
    assert probe.closed_in[0] != threading.get_ident()


def test_an_error_from_close_leaves_the_with_block() -> None:
    with pytest.raises(RecorderClosed, match="probe failed"), Probe(fail=True) as probe:
        pass
    assert probe.closed_in == [threading.get_ident()]


def test_a_class_without_close_cannot_be_made() -> None:
    class Unfinished(Closeable):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Unfinished()  # type: ignore[abstract]


async def test_send_many_records_what_send_records_one_frame_at_a_time(tmp_path: Path) -> None:
    """The hub's batch tap: a batch recorded with ``send_many`` (chunks sealed on the
    way, as the 1 ms chunk limit makes them) reads back frame for frame as ``send``."""
    batch = [
        Frame("imu", i, i * MS, np.array([(i * MS, float(i))], [("t", "<i8"), ("ax", "<f8")]))
        for i in range(300)
    ]
    read: list[list[tuple[int, int, float]]] = []
    for name in ("one", "many"):
        path = tmp_path / f"{name}.hfr"
        async with Recorder(path, chunk_duration=0.001) as rec:
            if name == "one":
                for frame in batch:
                    await rec.send(frame)
            else:
                for start in range(0, 300, 64):
                    await rec.send_many(batch[start : start + 64])
        with open_recording(path) as log:
            read.append([(f.seq, f.t, float(f.data["ax"][0])) for f in log.frames()])
    assert read[0] == read[1] == [(i, i * MS, float(i)) for i in range(300)]
