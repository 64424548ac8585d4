"""The read limits: one frozen ReadLimits from the readers' arguments down to every check."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest

from fusion._frames import Frame
from recordings import LimitExceeded, ReadLimits, Recorder, Replay, open_recording, read_stream
from recordings.hfr._limits import DEFAULT_LIMITS


@pytest.fixture(scope="module")
def two_chunks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Chunk 0: three small frames; chunk 1: one 800 kB frame of zeros (stored in ~100 B)."""
    path = tmp_path_factory.mktemp("limits") / "two.hfr"
    with Recorder(path, flush_interval=None) as rec:
        for i in range(3):
            rec.write(Frame("gps", i, i * 1000, {"lat": 48.0 + i}))
        rec.flush()
        rec.write(Frame("cam", 0, 10_000, np.zeros(100_000)))
    return path


def test_the_loose_keyword_arguments_map_to_one_read_limits(two_chunks: Path) -> None:
    with open_recording(two_chunks) as log:
        assert log.limits == ReadLimits() == DEFAULT_LIMITS
    with open_recording(two_chunks, max_chunk_bytes=5_000, max_chunk_frames=9) as log:
        assert log.limits == ReadLimits(max_chunk_bytes=5_000, max_chunk_frames=9)
    base = ReadLimits(max_meta_bytes=1 << 20, max_decoded_bytes=1 << 25)
    with open_recording(two_chunks, limits=base, max_decoded_bytes=1 << 24) as log:
        assert log.limits == ReadLimits(max_meta_bytes=1 << 20, max_decoded_bytes=1 << 24)
    stream = read_stream(io.BytesIO(two_chunks.read_bytes()), limits=base, max_chunk_frames=2)
    assert stream.limits == dataclasses.replace(base, max_chunk_frames=2)


def test_read_limits_are_frozen_and_replace_changes_only_what_is_given() -> None:
    limits = ReadLimits(max_chunk_bytes=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_chunk_bytes = 20  # type: ignore[misc]
    assert limits.replace() is limits
    assert limits.replace(max_meta_bytes=None, max_chunk_frames=3) == ReadLimits(
        max_chunk_bytes=10, max_chunk_frames=3
    )


def test_a_chunk_declaring_too_many_decompressed_bytes_is_refused_unread(two_chunks: Path) -> None:
    with open_recording(two_chunks, max_chunk_bytes=100_000) as log:
        big = log.chunks[1]
        assert big.stored_size < 100_000 < big.raw_size  # only the declared size is over
        frames = list(log.frames())
        assert [f.sensor for f in frames] == ["gps"] * 3
        (damage,) = log.damage
    assert isinstance(damage, LimitExceeded)
    assert damage.offset == big.offset
    assert (
        f"declares {big.raw_size} decompressed bytes, over the limit of 100000; "
        "refusing to decompress it"
    ) in str(damage)
    with (
        open_recording(two_chunks, limits=ReadLimits(max_chunk_bytes=100_000), strict=True) as log,
        pytest.raises(LimitExceeded, match=r"decompressed bytes, over the limit of 100000"),
    ):
        list(log.frames())


def test_the_stream_reader_refuses_the_same_chunk(two_chunks: Path) -> None:
    stream = read_stream(io.BytesIO(two_chunks.read_bytes()), max_chunk_bytes=100_000)
    assert [f.seq for f in stream.frames()] == [0, 1, 2]
    (damage,) = stream.damage
    assert isinstance(damage, LimitExceeded)
    assert "over the limit of 100000; skipping it unread" in str(damage)


def test_the_record_meta_limit_reaches_the_parser(two_chunks: Path) -> None:
    with open_recording(two_chunks, limits=ReadLimits(max_meta_bytes=64), use_index=False) as log:
        assert log.chunks == []
        assert any("is over the limit of 64" in str(err) for err in log.damage)


async def test_replay_opens_its_recording_with_the_limits_given(two_chunks: Path) -> None:
    replay = Replay(two_chunks, speed=None, limits=ReadLimits(max_chunk_bytes=100_000))
    async with replay:
        got = [f.sensor async for f in replay.frames()]
    assert got == ["gps"] * 3
    assert replay.errors["damaged"] == 1
