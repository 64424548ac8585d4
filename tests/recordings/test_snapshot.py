"""SnapshotRecorder: the window's frames exactly, bounded memory, triggers during a write,
signals, predicates, a pipeline on a virtual clock, and SIGKILL in the middle of a write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import SyntheticCamera, SyntheticImu, SyntheticLidar
from fusion import BatchWorker, Frame, FrameGroup, Nearest, Pipeline, VirtualClock
from fusion.workers._models import scale_model
from recordings import open_recording
from recordings.errors import RecordingError
from recordings.hfr._snapshot import SnapshotRecorder
from tests.recordings.helpers import digest, make_frames

MS = 1_000_000
S = 1_000_000_000
REPO = Path(__file__).resolve().parents[2]


def content(frames: list[Frame]) -> list[tuple[Any, ...]]:
    return [(f.sensor, f.seq, f.t, f.t_sensor, f.t_arrival, digest(f.data), f.meta) for f in frames]


def read(path: Path) -> list[Frame]:
    with open_recording(path) as log:
        assert log.indexed
        assert log.verify() == []
        return list(log.frames())


def test_a_snapshot_holds_the_window_and_nothing_else(tmp_path: Path) -> None:
    frames = make_frames(900)  # cam, lidar, imu round robin, 10 ms apart: 9 s
    rec = SnapshotRecorder(tmp_path / "bb.hfr", keep=5.0, pre=2.0, post=1.0, chunk_seconds=0.25)
    requests = []
    for f in frames:
        rec.write(f)
        if f.t == 4_000 * MS:
            requests.append(rec.trigger("bump"))  # at the newest frame: 4.0 s
    requests.append(rec.trigger("late", t=8_000 * MS, pre=0.5, post=0.0))
    rec.close()
    early, late = (r.wait(5) for r in requests)
    assert early.name == "bb.0000.hfr"
    assert late.name == "bb.0001.hfr"
    want = [f for f in frames if 2_000 * MS <= f.t <= 5_000 * MS]
    assert content(read(early)) == content(want)
    assert content(read(late)) == content([f for f in frames if 7_500 * MS <= f.t <= 8 * S])
    with open_recording(early) as log:
        snap = log.metadata["snapshot"]
        assert (snap["trigger_t"], snap["start"], snap["end"]) == (4 * S, 2 * S, 5 * S)
        assert snap["reasons"] == ["bump"]
        assert set(log.specs) == {"cam", "lidar", "imu"}
    assert rec.statistics().snapshots_written == 2


def test_memory_stays_within_bytes_and_duration_under_a_flood(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    max_bytes, keep = 1 << 20, 2.0
    rec = SnapshotRecorder(
        tmp_path / "flood.hfr", keep=keep, max_bytes=max_bytes, chunk_bytes=64 << 10,
        chunk_seconds=0.1,
    )  # fmt: skip
    frames = []
    for i in range(6_000):  # 1 ms apart: a fast flood of incompressible 8 kB frames
        f = Frame("cam", i, i * MS, rng.integers(0, 255, 8192, dtype=np.uint8))
        rec.write(f)
        frames.append(f)
        stats = rec.statistics()
        assert stats.ring_bytes <= max_bytes
        assert stats.ring_span_ns <= (keep + 0.1) * S
    assert stats.evicted_frames > 0
    path = rec.trigger("flood", pre=10.0).wait(10)
    rec.close()
    got = read(path)
    # What is left is the newest frames, consecutive, the last one included.
    assert content(got) == content(frames[-len(got) :])
    assert 0 < len(got) * 8192 <= max_bytes


def test_duration_bounds_the_ring_when_bytes_do_not(tmp_path: Path) -> None:
    rec = SnapshotRecorder(tmp_path / "d.hfr", keep=1.0, chunk_seconds=0.1)
    frames = make_frames(500)  # 5 s
    for f in frames:
        rec.write(f)
    assert rec.statistics().ring_span_ns <= 1.1 * S
    path = rec.trigger(pre=100.0).wait(5)
    rec.close()
    got = read(path)
    assert got[0].t >= frames[-1].t - 1.1 * S
    assert content(got) == content([f for f in frames if f.t >= got[0].t])


class Gated(SnapshotRecorder):
    """Holds the first snapshot's write open until ``gate`` is set."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.gate = threading.Event()
        self.inside = threading.Event()

    def _write_chunk(self, out: Any, meta: Any, parts: list[bytes]) -> None:
        super()._write_chunk(out, meta, parts)
        self.inside.set()
        assert self.gate.wait(10)


def test_triggers_while_a_snapshot_is_written_queue_or_merge(tmp_path: Path) -> None:
    frames = make_frames(800)
    rec = Gated(tmp_path / "q.hfr", keep=10.0, pre=1.0, post=0.5, chunk_seconds=0.2)
    for f in frames[:300]:
        rec.write(f)
    first = rec.trigger("one")  # window [1.99, 3.49] s
    for f in frames[300:360]:
        rec.write(f)  # past 3.49 s: handed to the writer, which stalls inside
    assert rec.inside.wait(10)
    second = rec.trigger("two")  # at 3.59 s, overlaps the one being written: queued
    third = rec.trigger("three", t=3_900 * MS)  # overlaps the second, not yet written: merged
    assert second is not first
    assert third is second
    assert (second.start, second.end) == (2_590 * MS, 4_400 * MS)
    for f in frames[360:]:
        rec.write(f)
    assert not first.done
    rec.gate.set()
    rec.close()
    assert content(read(first.wait(5))) == content(
        [f for f in frames if 1_990 * MS <= f.t <= 3_490 * MS]
    )
    assert content(read(second.wait(5))) == content(
        [f for f in frames if 2_590 * MS <= f.t <= 4_400 * MS]
    )
    assert second.reasons == ["two", "three"]


def test_sigusr1_triggers_a_snapshot_at_the_next_frame(tmp_path: Path) -> None:
    rec = SnapshotRecorder(tmp_path / "sig.hfr", keep=1.0, chunk_seconds=0.1)
    frames = make_frames(300)
    rec.install_signal(signal.SIGUSR1)
    try:
        for f in frames[:200]:
            rec.write(f)
        os.kill(os.getpid(), signal.SIGUSR1)
        for f in frames[200:]:
            rec.write(f)
    finally:
        rec.close()
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL  # restored
    (path,) = rec.paths
    got = read(path)
    with open_recording(path) as log:
        assert log.metadata["snapshot"]["reasons"] == ["signal SIGUSR1"]
    # Taken at the write of frame 200, before it: the newest frame is then at 1.99 s.
    assert content(got) == content([f for f in frames if 990 * MS <= f.t <= 1_990 * MS])


async def test_a_predicate_on_pipeline_groups_triggers_on_a_virtual_clock(tmp_path: Path) -> None:
    """A model's score over a threshold, in a pipeline on a virtual clock: the snapshot's
    frames equal those recorded in its window."""

    def hot(group: FrameGroup) -> bool:
        return bool(group.results["score"] >= 30.0)  # true from sweep 15 on: one trigger

    fired: list[int] = []

    snap = SnapshotRecorder(
        tmp_path / "p.hfr", keep=3.0, pre=1.0, post=0.3, trigger_on=hot, settle=0.2
    )  # settle = max_latency: no frame of the window arrives later than that
    seen: list[Frame] = []

    original = snap.write

    def write(frame: Frame) -> None:
        seen.append(frame)
        original(frame)

    snap.write = write  # type: ignore[method-assign]
    clock = VirtualClock()
    pipeline = Pipeline(
        [
            SyntheticLidar(duration_s=3, points=64, seed=1),
            SyntheticCamera(duration_s=3, width=8, height=6, seed=2),
            SyntheticImu(duration_s=3, seed=3),
        ],
        Nearest("lidar", ["lidar", "cam", "imu"], 20 * MS, windows={"imu": (50 * MS, 49 * MS)}),
        max_latency=200 * MS,
        workers={
            "score": BatchWorker(
                scale_model(4, 2.0),  # score = 2 x the sweep number
                preprocess=lambda gs: np.array(
                    [[g.frames["lidar"].seq, 0, 0, 0] for g in gs],  # type: ignore[union-attr]
                    np.float32,
                ),
                postprocess=lambda items, out: [float(r[0]) for r in out[0]],
                max_batch=4,
                max_delay=5 * MS,
            )
        },
        sinks=[snap.observe, lambda g: fired.append(g.t) if hot(g) else None],
        recorder=snap,
        clock=clock,
    )
    with anyio.fail_after(30):
        async with clock.autojump():
            await pipeline.run()
    (path,) = snap.paths
    with open_recording(path) as log:
        t0 = log.metadata["snapshot"]["trigger_t"]
    assert t0 == fired[0]  # the first group whose score crossed the threshold
    assert len(fired) > 10  # it stayed true: still one snapshot (rising edge)
    got = read(path)
    want = [f for f in seen if t0 - S <= f.t <= t0 + 300 * MS]
    # The sources' tasks send concurrently, so the order across sensors is the
    # recorder's, not that of the wrapper's appends; per sensor it is the same.
    assert sorted(content(got)) == sorted(content(want))
    for sensor in ("lidar", "cam", "imu"):
        assert content([f for f in got if f.sensor == sensor]) == content(
            [f for f in want if f.sensor == sensor]
        )
    assert len({f.sensor for f in got}) == 3


def test_sigkill_during_a_snapshot_write_leaves_earlier_snapshots_valid(tmp_path: Path) -> None:
    base = tmp_path / "crash.hfr"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.recordings.snapshot_child", str(base)],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        assert child.stdout is not None
        lines = []
        for line in child.stdout:
            lines.append(line.strip())
            if line.strip() == "writing":
                break
        assert lines[-1] == "writing", lines
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
    first = tmp_path / "crash.0000.hfr"
    assert lines[0] == f"written {first}"
    frames = make_frames(600)
    assert content(read(first)) == content([f for f in frames if 1_990 * MS <= f.t <= 2_990 * MS])
    # The second never got its name: only its partial file exists.
    assert not (tmp_path / "crash.0001.hfr").exists()
    assert (tmp_path / "crash.0001.hfr.partial").exists()


def test_a_snapshot_keeps_an_interrupted_runs_partial_of_its_name(tmp_path: Path) -> None:
    stale = tmp_path / "bb.0000.hfr.partial"
    stale.write_bytes(b"what a killed snapshot wrote")
    rec = SnapshotRecorder(tmp_path / "bb.hfr", keep=1.0)
    for f in make_frames(50):
        rec.write(f)
    request = rec.trigger("key")
    rec.close()
    assert request.wait(5) == tmp_path / "bb.0000.hfr"
    assert rec.stale_partials == [(stale, tmp_path / "bb.0000.hfr.partial.1")]
    assert (tmp_path / "bb.0000.hfr.partial.1").read_bytes() == b"what a killed snapshot wrote"
    assert not stale.exists()


def test_bad_bounds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"max_bytes \(100\) must hold at least two chunks of 100 bytes"
    ):
        SnapshotRecorder(tmp_path / "x.hfr", max_bytes=100, chunk_bytes=100)
    with pytest.raises(ValueError, match="keep must be > 0"):
        SnapshotRecorder(tmp_path / "x.hfr", keep=0)


def test_a_snapshot_never_replaces_an_input(tmp_path: Path) -> None:
    source = tmp_path / "bb.0000.hfr"  # what the first snapshot would be called
    source.write_bytes(b"the session this one replays")
    (tmp_path / "alias.hfr").symlink_to(source.name)
    rec = SnapshotRecorder(tmp_path / "bb.hfr", keep=1.0, inputs=[tmp_path / "alias.hfr"])
    for f in make_frames(50):
        rec.write(f)
    request = rec.trigger("key")
    rec.close()
    with pytest.raises(RecordingError, match="links to the input"):
        request.wait(5)
    assert source.read_bytes() == b"the session this one replays"
    (failure,) = rec.statistics().failures
    assert failure.startswith(f"snapshot {source} was not written: output ")
    assert not (tmp_path / "bb.0000.hfr.partial").exists()
