"""Pooled frame buffers start on 64-byte boundaries (what SIMD and DMA code wants)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import VideoSource
from adapters.video._convert import BufferPool
from fusion import Frame
from fusion._buffers import ALIGNMENT, aligned_empty, is_aligned
from recordings import Recorder, open_recording
from recordings.hfr._format import BLOB_ALIGN

CLIP = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"
CLIP = CLIP / "androidx_h265_bframes.mp4"


@settings(deadline=None)
@given(
    shape=st.lists(st.integers(0, 37), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from([np.uint8, np.float32, np.int16, np.float64]),
)
def test_aligned_empty_starts_on_a_64_byte_boundary(shape: tuple[int, ...], dtype: Any) -> None:
    a = aligned_empty(shape, dtype)
    assert a.shape == shape
    assert a.dtype == dtype
    assert a.flags.c_contiguous
    assert a.ctypes.data % ALIGNMENT == 0
    a[...] = 1  # writable, and the whole shape is backed
    assert int(a.sum()) == a.size


def test_buffer_pool_hands_out_aligned_buffers_also_when_full() -> None:
    pool = BufferPool((7, 5, 3), max_buffers=2)
    held = [pool.acquire() for _ in range(3)]  # the third is a miss: not kept
    assert pool.misses == 1
    assert all(is_aligned(b) for b in held)


@pytest.mark.parametrize(
    "options",
    [{}, {"reuse_buffers": True}, {"size": (224, 224)}, {"pixel_format": "gray"}],
    ids=["decoder pool", "numpy pool", "resized", "gray"],
)
async def test_video_frames_start_on_64_byte_boundaries(options: dict[str, Any]) -> None:
    seen = 0
    with anyio.fail_after(30):
        async with VideoSource(CLIP, threads=1, **options) as source:
            async for frame in source.frames():
                assert is_aligned(frame.data)  # type: ignore[arg-type]
                seen += 1
                if seen == 12:
                    break
    assert seen == 12


def test_recorded_arrays_come_back_aligned(tmp_path: Path) -> None:
    with Recorder(tmp_path / "s.hfr") as rec:
        for i in range(5):
            rec.write(Frame("cam", i, i, np.full((48, 64, 3), i, np.uint8)))
    assert BLOB_ALIGN == ALIGNMENT
    with open_recording(tmp_path / "s.hfr") as log:
        frames = list(log.frames())
    assert [int(f.data[0, 0, 0]) for f in frames] == list(range(5))  # type: ignore[index]
    assert all(is_aligned(f.data) for f in frames)  # type: ignore[arg-type]
