"""Chunk buffers reused across chunks and recorders: never a stale byte in a file."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from fusion import Frame
from recordings import Recorder, open_recording
from recordings.hfr import _buffers as buffers
from recordings.hfr._builder import ChunkBuilder


def test_a_buffer_given_back_is_taken_again_and_views_never_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An empty pool: buffers earlier tests of this process gave back (16 small ones
    # fill it) would leave no room for this one.
    monkeypatch.setattr(buffers, "_kept", [])
    buf = buffers.take(3 << 20)
    buffers.give(buf)
    assert buffers.take(3 << 20) is buf  # its pages stay mapped
    view = buf[10:]
    buffers.give(view)  # a view: its owner may still use the rest
    assert buffers.take(len(view)) is not view
    big = buffers.take(64 << 20)
    buffers.give(big)
    assert buffers.take(1 << 20) is not big  # not a 64 MiB buffer for 1 MiB


def test_the_chunk_after_an_overflowing_frame_has_room_for_it() -> None:
    """The frame that fills a chunk lands past its capacity; the next chunk's buffer keeps
    that much spare, so its arrays are copied once, not again when it grows."""
    builder = ChunkBuilder(capacity=4 << 20)
    frame = np.zeros(1_600_000, np.uint8)
    for seq in range(3):
        builder.add(Frame("lidar", seq, seq, frame))
    builder.seal()
    assert len(builder._blob.buffer) >= (4 << 20) + frame.nbytes


def test_recorders_in_threads_reusing_buffers_write_exactly_their_frames(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    sessions = {
        name: [rng.integers(0, 255, int(rng.integers(1, 2_000_000)), np.uint8) for _ in range(40)]
        for name in ("a", "b", "c")
    }

    def record(name: str) -> None:
        with Recorder(tmp_path / f"{name}.hfr", chunk_bytes=1 << 20) as rec:
            for seq, data in enumerate(sessions[name]):
                rec.write(Frame("cam", seq, seq * 1000, data))

    for _ in range(2):  # the second round reuses the first round's buffers
        threads = [threading.Thread(target=record, args=(n,)) for n in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for name, payloads in sessions.items():
            with open_recording(tmp_path / f"{name}.hfr") as log:
                back = [f.data for f in log.frames()]
            assert len(back) == len(payloads)
            assert all(np.array_equal(a, b) for a, b in zip(back, payloads, strict=True))
