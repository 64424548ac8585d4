"""What the segment tests share: per-frame functions the worker processes import, the
clip they run on, and result comparison."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from adapters.video._synth import write_video

MS = 1_000_000


def write_clip(path: Path) -> Path:
    """5 s of H.264 at 30 fps, a key frame every half second (every 495 ms)."""
    write_video(path, [i * 33 for i in range(150)], size=(160, 120), gop=15)
    return path


def features(image: np.ndarray) -> np.ndarray:
    """A per-frame feature: mean and spread per channel, and a coarse histogram."""
    flat = image.reshape(-1, image.shape[-1]).astype(np.float32)
    hist = np.bincount(image[::4, ::4, 0].ravel() >> 4, minlength=16)
    return np.concatenate([flat.mean(0), flat.std(0), hist.astype(np.float32)])


def slow_features(image: np.ndarray) -> np.ndarray:
    """``features``, 5 ms slower a frame."""
    time.sleep(0.005)
    return features(image)


def fails_on_dark(image: np.ndarray) -> np.ndarray:
    if image.mean() < 0:
        raise AssertionError("unreachable")
    raise ValueError("the model broke")


def same(a: list[tuple[int, Any]], b: list[tuple[int, Any]]) -> bool:
    return len(a) == len(b) and all(
        x[0] == y[0] and np.array_equal(x[1], y[1]) for x, y in zip(a, b, strict=True)
    )


def very_slow_features(image: np.ndarray) -> np.ndarray:
    """``features``, 100 ms slower a frame: a run that outlives a test's kill."""
    time.sleep(0.1)
    return features(image)
