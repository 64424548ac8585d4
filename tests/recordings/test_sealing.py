"""The writers' sealing policy (sans-I/O): its bounds hold for any frames, any clock.

:class:`~recordings.hfr._sealing.SealPolicy` decides when both writers seal a
chunk, flush it and split a part. Properties drive it with drawn frame sizes,
times (forwards and backwards) and clock steps, as each writer does, and check
the module's bounds: no empty chunk, a chunk less its last frame under
``chunk_bytes`` and ``chunk_ns``, a flush never later than the interval, a
part less its last chunk under ``split_bytes`` and ``split_ns``, the same
decisions for the same input. Then the recorder and the snapshot recorder
are checked to seal where the policy says, on real frames.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion._frames import Frame
from fusion.errors import ConfigError
from recordings import Recorder, open_recording
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._sealing import FULL, OPENED, SealPolicy
from recordings.hfr._snapshot import SnapshotRecorder

MS = 1_000_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 100

    def __call__(self) -> int:
        return self.now


# (raw bytes the frame adds, t step in ns (may be negative), clock step in s)
frames_st = st.lists(
    st.tuples(
        st.integers(1, 5000),
        st.integers(-50 * MS, 400 * MS),
        st.integers(0, 300),  # clock units (ints: exact sums, as a ns clock's)
    ),
    min_size=1,
    max_size=120,
)


def run_recorder_style(
    frames: list[tuple[int, int, int]],
    chunk_bytes: int,
    chunk_ns: int | None,
    flush: int | None,
) -> tuple[list[list[tuple[int, int]]], list[str]]:
    """Drive the policy as the recorder does: add, seal when FULL; the writer thread
    seals when ``flush_in() <= 0``. The chunks as ``(size after, t)`` per frame, and
    what each seal was for."""
    clock = FakeClock()
    policy = SealPolicy(
        chunk_bytes=chunk_bytes, chunk_ns=chunk_ns, flush_interval=flush, clock=clock
    )
    chunks: list[list[tuple[int, int]]] = []
    why: list[str] = []
    open_: list[tuple[int, int]] = []
    size, t = 0, 10**12
    opened_at = 0
    for grow, step, tick in frames:
        clock.now += tick
        due = policy.flush_in()
        if due is not None and due <= 0:
            assert open_, "a flush due with no chunk open"
            assert clock.now - opened_at >= flush  # type: ignore[operator]
            chunks.append(open_)
            why.append("flush")
            open_, size = [], 0
            policy.sealed()
        elif due is not None:
            assert flush is not None
            assert clock.now - opened_at < flush
        else:
            assert flush is None or not open_
        size += grow
        t += step
        skip = size < policy.chunk_bytes and t < policy.t_due  # the hot path's guard
        said = policy.add(size, t)
        assert not (skip and said), "the guard skipped a frame the policy had a word on"
        assert bool(said & OPENED) == (not open_)
        if not open_:
            opened_at = clock.now
        open_.append((size, t))
        if said & FULL:
            chunks.append(open_)
            why.append("full")
            open_, size = [], 0
            policy.sealed()
    if open_:
        chunks.append(open_)
        why.append("close")
    return chunks, why


@settings(max_examples=150, deadline=None)
@given(
    frames=frames_st,
    chunk_bytes=st.integers(1, 20_000),
    chunk_ns=st.none() | st.integers(1, 2000 * MS),
    flush=st.none() | st.integers(50, 2000),
)
def test_recorder_style_bounds_hold_and_decisions_repeat(
    frames: list[tuple[int, int, int]],
    chunk_bytes: int,
    chunk_ns: int | None,
    flush: int | None,
) -> None:
    chunks, why = run_recorder_style(frames, chunk_bytes, chunk_ns, flush)
    assert sum(len(c) for c in chunks) == len(frames)  # every frame in exactly one chunk
    for chunk, reason in zip(chunks, why, strict=True):
        assert chunk, "an empty chunk"
        t0 = chunk[0][1]
        for size, t in chunk[:-1]:  # the chunk less its last frame is under both bounds
            assert size < chunk_bytes
            assert chunk_ns is None or t < t0 + chunk_ns
        last_size, last_t = chunk[-1]
        if reason == "full":
            assert last_size >= chunk_bytes or (chunk_ns is not None and last_t >= t0 + chunk_ns)
    assert run_recorder_style(frames, chunk_bytes, chunk_ns, flush) == (chunks, why)


def run_snapshot_style(
    frames: list[tuple[int, int, int]], chunk_bytes: int, chunk_ns: int
) -> list[list[tuple[int, int]]]:
    """Drive the policy as the snapshot recorder does: seal before a frame that would
    overflow the open chunk. The chunks as ``(size before, t)`` per frame."""
    policy = SealPolicy(chunk_bytes=chunk_bytes, chunk_ns=chunk_ns)
    chunks: list[list[tuple[int, int]]] = []
    open_: list[tuple[int, int]] = []
    size, t = 0, 10**12
    for grow, step, _tick in frames:
        t += step
        if policy.full_before(size, t):
            assert open_, "told to seal an empty chunk"
            chunks.append(open_)
            open_, size = [], 0
            policy.sealed()
        open_.append((size, t))
        size += grow
        policy.add(size, t)
        assert policy.t0 == open_[0][1]
    if open_:
        chunks.append(open_)
    return chunks


@settings(max_examples=150, deadline=None)
@given(frames=frames_st, chunk_bytes=st.integers(1, 20_000), chunk_ns=st.integers(0, 2000 * MS))
def test_snapshot_style_bounds_hold_before_each_frame(
    frames: list[tuple[int, int, int]], chunk_bytes: int, chunk_ns: int
) -> None:
    chunks = run_snapshot_style(frames, chunk_bytes, chunk_ns)
    assert sum(len(c) for c in chunks) == len(frames)
    for chunk in chunks:
        assert chunk
        t0 = chunk[0][1]
        for size, t in chunk[1:]:  # each later frame joined a chunk within both bounds
            assert size < chunk_bytes
            assert abs(t - t0) < chunk_ns
    assert run_snapshot_style(frames, chunk_bytes, chunk_ns) == chunks


@settings(max_examples=150, deadline=None)
@given(
    chunks=st.lists(
        st.tuples(st.integers(1, 10_000), st.integers(0, 300 * MS), st.integers(0, 300 * MS)),
        min_size=1,
        max_size=80,
    ),
    split_bytes=st.none() | st.integers(1, 50_000),
    split_ns=st.none() | st.integers(1, 3000 * MS),
)
def test_parts_split_at_chunk_boundaries_within_their_bounds(
    chunks: list[tuple[int, int, int]], split_bytes: int | None, split_ns: int | None
) -> None:
    policy = SealPolicy(chunk_bytes=1, split_bytes=split_bytes, split_ns=split_ns)
    assert policy.splits == (split_bytes is not None or split_ns is not None)
    header = 40
    parts: list[list[tuple[int, int, int]]] = [[]]
    part_bytes, t = header, 0
    policy.part_opened()
    for nbytes, gap, span in chunks:
        t += gap
        part_bytes += nbytes
        parts[-1].append((part_bytes, t, t + span))
        if policy.written(part_bytes, t, t + span):
            parts.append([])
            part_bytes = header
            policy.part_opened()
        t += span
    if not parts[-1]:
        parts.pop()
    for part in parts:
        assert part
        t0 = part[0][1]
        for at, _start, end in part[:-1]:
            assert split_bytes is None or at < split_bytes
            assert split_ns is None or end - t0 < split_ns
    if split_bytes is None and split_ns is None:
        assert len(parts) == 1


def test_a_bad_bound_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chunk_bytes"):
        SealPolicy(chunk_bytes=0)
    with pytest.raises(ConfigError, match="chunk_ns"):
        SealPolicy(chunk_bytes=1, chunk_ns=-1)


def mixed_frames(n: int) -> list[Frame]:
    """An IMU at 200 Hz beside a 'camera' whose payload size varies, in time order."""
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        if i % 7 == 3:
            out.append(
                Frame(
                    "cam", i, i * 5 * MS, rng.integers(0, 255, int(rng.integers(1, 9000)), np.uint8)
                )
            )
        else:
            out.append(Frame("imu", i, i * 5 * MS, rng.normal(size=6)))
    return out


def expected_counts_after(frames: list[Frame], chunk_bytes: int, chunk_ns: int) -> list[int]:
    """Frames per chunk as the policy seals them, the builder measuring sizes."""
    policy, builder = SealPolicy(chunk_bytes=chunk_bytes, chunk_ns=chunk_ns), ChunkBuilder()
    counts = []
    for frame in frames:
        if policy.add(builder.add(frame), frame.t) & FULL:
            counts.append(builder.seal().meta.count)
            policy.sealed()
    if builder.count:
        counts.append(builder.count)
    return counts


def test_the_recorder_seals_where_the_policy_says(tmp_path: Path) -> None:
    frames = mixed_frames(1500)
    path = tmp_path / "p.hfr"
    with Recorder(
        path, chunk_bytes=20_000, chunk_duration=0.4, flush_interval=None, wall_clock=False
    ) as rec:
        for f in frames:
            rec.write(f)
    with open_recording(path) as log:
        got = [c.count for c in log.chunks]
        assert sum(1 for _ in log.frames()) == len(frames)
    assert got == expected_counts_after(frames, 20_000, 400 * MS)
    assert len(got) > 5


def test_the_snapshot_recorder_seals_where_the_policy_says(tmp_path: Path) -> None:
    frames = mixed_frames(900)
    policy, builder = SealPolicy(chunk_bytes=20_000, chunk_ns=300 * MS), ChunkBuilder()
    want = []
    for frame in frames:
        if policy.full_before(builder.size, frame.t):
            want.append(builder.seal().meta.count)
            policy.sealed()
        policy.add(builder.add(frame), frame.t)
    rec = SnapshotRecorder(
        tmp_path / "s.hfr",
        keep=100.0,
        max_bytes=64 << 20,
        chunk_bytes=20_000,
        chunk_seconds=0.3,
        wall_clock=False,
    )
    for f in frames:
        rec.write(f)
    assert [h.meta.count for h in rec._ring.chunks] == want
    path = rec.trigger("all").wait(10)
    rec.close()
    with open_recording(path) as log:
        assert sum(1 for _ in log.frames()) == len(frames)
