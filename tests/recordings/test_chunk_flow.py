"""Who compresses a sealed chunk: the writer thread for a small one, the pool for a large."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from fusion import Frame
from recordings import Recorder, open_recording
from recordings.errors import RecorderClosed, RecordingError
from recordings.hfr import _chunk_flow
from recordings.hfr._chunk_encode import SMALL_CHUNK_BYTES
from recordings.hfr._format import Compression

MS = 1_000_000


def imu(n: int, hz: int = 200) -> list[Frame]:
    rng = np.random.default_rng(5)
    step = 1000 * MS // hz
    return [Frame("imu", i, i * step, rng.normal(size=6), t_arrival=i * step + 7) for i in range(n)]


def test_small_chunks_are_compressed_by_the_writer_thread_large_ones_by_the_pool(
    tmp_path: Path,
) -> None:
    """One-second chunks of a 200 Hz IMU (about 10 KB) never wake a pool thread; 600 KB
    chunks of camera frames do; both files hold every frame, compressed."""
    frames = imu(4000)  # 20 s: 20 chunks
    with Recorder(tmp_path / "imu.hfr") as rec:
        for f in frames:
            rec.write(f)
        flow = rec._flow
    assert not flow._compressing  # no pool thread was ever started
    with open_recording(tmp_path / "imu.hfr") as log:
        assert len(log.chunks) == 20
        assert all(c.raw_size <= SMALL_CHUNK_BYTES for c in log.chunks)
        assert {c.compression for c in log.chunks} == {Compression.ZSTD}
        got = [(f.seq, f.t, f.t_arrival, f.data.tolist()) for f in log.frames()]
    assert got == [(f.seq, f.t, f.t_arrival, f.data.tolist()) for f in frames]

    scene = np.random.default_rng(6).integers(0, 40, (240, 320), np.uint8)
    cams = [Frame("cam", i, i * 33 * MS, scene + i % 7) for i in range(40)]
    with Recorder(tmp_path / "cam.hfr", chunk_bytes=600_000) as rec:
        for f in cams:
            rec.write(f)
        flow = rec._flow
    assert flow._compressing  # the pool compressed them
    with open_recording(tmp_path / "cam.hfr") as log:
        assert all(c.raw_size > SMALL_CHUNK_BYTES for c in log.chunks[:-1])
        assert [f.data.tolist() for f in log.frames()] == [f.data.tolist() for f in cams]


def test_a_small_chunk_that_fails_to_encode_fails_the_recorder_as_a_pool_failure_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread's own compression failing is the recorder's failure: further
    frames are refused saying why, close() raises it, the chunks before it stay."""
    real = _chunk_flow._encode
    calls = []

    def failing(sealed: object, level: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("no room to compress")
        return real(sealed, level)  # type: ignore[arg-type]

    monkeypatch.setattr(_chunk_flow, "_encode", failing)
    rec = Recorder(tmp_path / "imu.hfr")
    for f in imu(2000):  # the third chunk's seal is handed over; a later write is refused
        try:
            rec.write(f)
        except RecorderClosed as refused:
            assert "no room to compress" in str(refused)  # noqa: PT017
            break
    else:
        pytest.fail("every frame was accepted")
    with pytest.raises(RecordingError, match="no room to compress") as failed:
        rec.close()
    assert isinstance(failed.value.__cause__, MemoryError)
    assert len(calls) == 3
    with open_recording(tmp_path / "imu.hfr") as log:  # the two chunks written before it
        assert len(log.chunks) == 2
        seqs = [f.seq for f in log.frames()]
    assert seqs == list(range(len(seqs)))
    assert 2 * 200 <= len(seqs) <= 2 * 201


@pytest.mark.parametrize("durable", [False, True])
def test_small_chunks_queued_together_are_written_as_one_at_a_time_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    """While the writer thread is busy, small chunks queue; it takes them as one run and
    writes them with one ``writev`` (``durable``: one at a time, each synced). The parts,
    where they split and the chunks in each are those of one chunk at a time."""
    frames = imu(2400)  # 12 one-second chunks of about 10 KB
    real = _chunk_flow.ChunkFlow._write_small

    def record(name: str, most: int) -> tuple[list[list[tuple[int, int]]], list[int]]:
        monkeypatch.setattr(_chunk_flow, "SMALL_RUN", most)
        runs: list[int] = []
        queued = threading.Event()

        def write_small(flow: _chunk_flow.ChunkFlow, run: list[object]) -> None:
            runs.append(len(run))
            queued.wait(10)  # the first run waits until every chunk is sealed
            real(flow, run)  # type: ignore[arg-type]

        monkeypatch.setattr(_chunk_flow.ChunkFlow, "_write_small", write_small)
        rec = Recorder(
            tmp_path / name, max_pending=16, split_bytes=25_000, flush_interval=None,
            durable=durable,
        )  # fmt: skip
        for f in frames:
            rec.write(f)
        queued.set()
        rec.close()
        parts, seqs = [], []
        for path in rec.paths:
            with open_recording(path) as log:
                parts.append([(c.t_start, c.count) for c in log.chunks])
                seqs += [f.seq for f in log.frames()]
        assert seqs == list(range(len(frames)))
        return parts, runs

    in_runs, runs = record("runs.hfr", 32)
    one_by_one, singles = record("single.hfr", 1)
    # The chunks sealed meanwhile, taken at once: the first run, the rest, and the last
    # chunk sealed at close (a writer slow to start takes more in its first: 5 and 7).
    assert sum(runs) == sum(singles) == 12
    assert len(runs) <= 3
    assert set(singles) == {1}
    assert len(in_runs) >= 4  # parts split inside the run
    assert in_runs == one_by_one
