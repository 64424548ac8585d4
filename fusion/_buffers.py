"""Arrays that start on 64-byte boundaries, for pooled buffers handed to accelerators.

numpy aligns its allocations to 16 bytes. SIMD kernels (AVX-512 loads), DMA
engines and CUDA's pinned-memory copies want 64 (one cache line, and what
FFmpeg's ``av_malloc`` uses): some slow down on an unaligned start, some copy
it first. Pooled buffers are allocated once and reused, so over-allocating by
up to 63 bytes to align them costs nothing per frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ALIGNMENT = 64
"""Bytes; the start of every pooled buffer is a multiple of this."""


def aligned_empty(shape: int | tuple[int, ...], dtype: Any = np.uint8) -> np.ndarray[Any, Any]:
    """An uninitialised C-contiguous array whose data starts on an :data:`ALIGNMENT` boundary."""
    dt = np.dtype(dtype)
    shape_t = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape_t, dtype=np.int64)) * dt.itemsize
    raw = np.empty(max(nbytes, dt.itemsize) + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    # At least one item is kept backing the view: numpy may move an empty view's pointer.
    items = raw[start : start + max(nbytes, dt.itemsize)].view(dt)
    if nbytes == 0:
        empty: np.ndarray[Any, Any] = np.lib.stride_tricks.as_strided(
            items[:1], shape_t, (0,) * len(shape_t)
        )
        return empty
    shaped: np.ndarray[Any, Any] = items.reshape(shape_t)
    return shaped


def is_aligned(array: np.ndarray[Any, Any], alignment: int = ALIGNMENT) -> bool:
    """Whether ``array``'s data starts on an ``alignment``-byte boundary."""
    return array.ctypes.data % alignment == 0
