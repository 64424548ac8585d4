"""The footer's writers take written chunks a batch at a time: what they record is what
they recorded chunk by chunk (stamp index, frame details, sensor summaries)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Frame
from recordings import Recorder, open_recording
from recordings.hfr import _stamp_batch

MS = 1_000_000
SENSORS = ("imu", "gps", "cam", "can")


def _payload(kind: int, i: int) -> Any:
    if kind == 0:
        return np.full(6, i, np.float64)
    if kind == 1:
        return np.zeros(i % 3 + 1, np.float32)  # shapes that change from frame to frame
    if kind == 2:
        return np.zeros(i % 2 + 1, [("x", "<f4"), ("y", "u1")])
    return b"\x01" * (i % 5)  # a record, not a column


frame_specs = st.lists(
    st.tuples(
        st.sampled_from(SENSORS),
        st.integers(0, 3),  # payload kind
        st.integers(0, 40 * MS),  # step in t
        st.booleans(),  # t_arrival
        st.sampled_from([None, "gap", "conn-a", "conn-b"]),
    ),
    min_size=1,
    max_size=300,
)


def _record(path: Path, specs: list[tuple[str, int, int, bool, str | None]]) -> list[Frame]:
    frames, t, seqs = [], 0, dict.fromkeys(SENSORS, 0)
    for i, (sensor, kind, step, arrival, mark) in enumerate(specs):
        t += step
        meta: dict[str, Any] = {}
        if mark == "gap":
            meta["gap_ns"] = 5 * MS
        elif mark is not None:
            meta["connection"] = mark
        frames.append(
            Frame(
                sensor,
                seqs[sensor],
                t,
                _payload(kind, i),
                t_sensor=t - i % 3,
                t_arrival=t + 7 if arrival else None,
                meta=meta,
            )
        )
        seqs[sensor] += 1 + i % 2
    # small chunks (a tenth of a second, 2 KB): tens of chunks a batch, sensors coming
    # and going from chunk to chunk
    with Recorder(path, wall_clock=False, chunk_bytes=2048, chunk_duration=0.1) as rec:
        for f in frames:
            rec.write(f)
    return frames


def _footer(path: Path) -> dict[str, Any]:
    """Everything the footer says per sensor, shapes resolved (their numbering is free)."""
    out: dict[str, Any] = {}
    with open_recording(path) as log:
        index = log.stamp_index()
        details = log.frame_details()
        assert index is not None
        assert details is not None
        out["chunks"] = (len(log.chunks), details.chunks)
        for name in index.sensors:
            t, seq, chunk, rank = index.of(name)
            arrival, has = index.arrivals(name)
            offset, flags, size = details.of(name)
            notes = details.notes(name)
            shapes = [notes.shapes[-2 - s] if s < -1 else s for s in size.tolist()]
            out[name] = (
                [c.tolist() for c in (t, seq, chunk, rank, arrival, has, offset, flags)],
                shapes,
                (notes.first, notes.gaps, notes.conn, notes.params, notes.over),
            )
        out["summaries"] = log.sensor_summaries()
        out["frames"] = [(f.sensor, f.seq, f.t, f.t_arrival) for f in log.frames()]
    return out


@settings(max_examples=40, deadline=None)
@given(frame_specs)
def test_batched_footer_is_the_chunk_by_chunk_footer(
    tmp_path_factory: Any, specs: list[tuple[str, int, int, bool, str | None]]
) -> None:
    tmp = tmp_path_factory.mktemp("batch")
    frames = _record(tmp / "batched.hfr", specs)
    with mock.patch.object(_stamp_batch, "BATCH_CHUNKS", 1):
        _record(tmp / "one_by_one.hfr", specs)
    batched = _footer(tmp / "batched.hfr")
    assert batched == _footer(tmp / "one_by_one.hfr")
    assert batched["frames"] == [(f.sensor, f.seq, f.t, f.t_arrival) for f in frames]
    for name in {f.sensor for f in frames}:  # and both say what the frames say
        mine = [f for f in frames if f.sensor == name]
        (t, seq, *_), _shapes, _notes = batched[name]
        assert t == [f.t for f in mine]
        assert seq == [f.seq for f in mine]


def test_a_long_run_of_small_chunks_is_written_in_batches(tmp_path: Path) -> None:
    """About 1,000 one-second chunks of a 200 Hz IMU reach the writers in batches of about
    BATCH_ROWS rows, and the footer still places every frame in its chunk."""
    calls: list[int] = []
    real = _stamp_batch.StampBatch.take

    def counting(self: _stamp_batch.StampBatch) -> Any:
        batch = real(self)
        if batch is not None:
            calls.append(len(batch.chunk_rows))
        return batch

    rng = np.random.default_rng(2)
    with (
        mock.patch.object(_stamp_batch.StampBatch, "take", counting),
        Recorder(tmp_path / "imu.hfr", wall_clock=False) as rec,
    ):
        for i in range(200_000):
            rec.write(Frame("imu", i, i * 5 * MS, rng.normal(size=6), t_arrival=i * 5 * MS))
    assert max(calls) <= _stamp_batch.BATCH_ROWS // 200 + 1
    assert len(calls) < 60
    with open_recording(tmp_path / "imu.hfr") as log:
        assert sum(calls) == len(log.chunks) > 900
        index = log.stamp_index()
        assert index is not None
        _t, seq, chunk, rank = index.of("imu")
        assert seq.tolist() == list(range(200_000))
        assert np.bincount(chunk).tolist() == [c.count for c in log.chunks]
        assert rank.max() == max(c.count for c in log.chunks) - 1
