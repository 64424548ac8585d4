"""Frame skipping for video: run the model only when the picture changed.

Most frames of a fixed camera look like the one before. :class:`ChangeGate`
scores each frame against the last frame that *was* run, on a small grayscale
thumbnail (block means of a strided view, a few hundred microseconds for
720p), and lets through only frames whose mean absolute difference exceeds
``threshold`` (in units of full scale, 0..1). Skipped frames reuse the last
result, marked ``reused`` by :class:`BatchWorker`.

Comparing with the last *run* frame, not the previous frame, means a slow
drift accumulates until it crosses the threshold instead of hiding below it
frame after frame. To bound staleness anyway, a keyframe is forced every
``keyframe_every`` frames or ``keyframe_interval`` ns of frame time (``t``),
whichever comes first. Frame time, not wall time, keeps replays deterministic.

The gate is a plain synchronous object: ``check(frame)`` in, decision out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fusion._frames import Frame, FrameGroup
from fusion.errors import ConfigError, FrameFormatError

GateReason = Literal["first", "keyframe", "changed", "static"]


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether to run the model on a frame, and why."""

    run: bool
    score: float
    """Mean absolute difference to the last run frame's thumbnail, 0..1."""
    reason: GateReason


@dataclass(frozen=True, slots=True)
class GateStatistics:
    frames: int
    """Frames checked."""
    run: int
    """Frames let through (first + keyframes + changed)."""
    keyframes: int
    """Frames run only because a keyframe was due."""
    skipped: int
    """Frames that skipped inference."""

    @property
    def saved(self) -> float:
        """Fraction of model runs saved."""
        return self.skipped / self.frames if self.frames else 0.0


class ChangeGate:
    """Decide per frame whether inference is needed (see the module docstring).

    ``size`` is the thumbnail's (height, width). For groups, ``sensor`` names
    the member whose picture is gated (default: the group's first member).
    """

    def __init__(
        self,
        threshold: float = 0.02,
        *,
        keyframe_every: int | None = 30,
        keyframe_interval: int | None = 1_000_000_000,
        size: tuple[int, int] = (36, 64),
        sensor: str | None = None,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"threshold is a fraction of full scale in [0, 1], got {threshold}")
        if keyframe_every is not None and keyframe_every < 1:
            raise ConfigError(f"keyframe_every must be >= 1, got {keyframe_every}")
        self.threshold = threshold
        self.keyframe_every = keyframe_every
        self.keyframe_interval = keyframe_interval
        self.size = size
        self.sensor = sensor
        self._ref: np.ndarray | None = None
        self._since_run = 0
        self._last_run_t = 0
        self._frames = self._run = self._keyframes = 0

    def check(self, item: Frame | FrameGroup) -> GateDecision:
        """Score ``item`` and decide; a frame that runs becomes the new reference."""
        frame = self._frame(item)
        thumb = thumbnail(frame.data, self.size, sensor=frame.sensor, seq=frame.seq)
        self._frames += 1
        if self._ref is None or self._ref.shape != thumb.shape:
            return self._accept(thumb, frame.t, 1.0, "first")
        score = float(np.mean(np.abs(thumb - self._ref)))
        if score > self.threshold:
            return self._accept(thumb, frame.t, score, "changed")
        self._since_run += 1
        due = (self.keyframe_every is not None and self._since_run >= self.keyframe_every) or (
            self.keyframe_interval is not None
            and frame.t - self._last_run_t >= self.keyframe_interval
        )
        if due:
            self._keyframes += 1
            return self._accept(thumb, frame.t, score, "keyframe")
        return GateDecision(False, score, "static")

    def reset(self) -> None:
        """Forget the reference: the next frame runs."""
        self._ref = None

    def statistics(self) -> GateStatistics:
        return GateStatistics(
            frames=self._frames,
            run=self._run,
            keyframes=self._keyframes,
            skipped=self._frames - self._run,
        )

    def _accept(self, thumb: np.ndarray, t: int, score: float, reason: GateReason) -> GateDecision:
        self._ref = thumb
        self._since_run = 0
        self._last_run_t = t
        self._run += 1
        return GateDecision(True, score, reason)

    def _frame(self, item: Frame | FrameGroup) -> Frame:
        if isinstance(item, Frame):
            return item
        if self.sensor is not None:
            member = item.frames.get(self.sensor)
            if isinstance(member, Frame):
                return member
            raise FrameFormatError(
                sensor=self.sensor,
                seq=None,
                expected="a single frame of this sensor in every group",
                found="none" if member is None else "a window list",
            )
        members = item.members()
        if not members:
            raise FrameFormatError(
                sensor=None, seq=None, expected="a group with a frame", found="empty group"
            )
        return members[0]


def thumbnail(
    data: Any, size: tuple[int, int], *, sensor: str | None = None, seq: int | None = None
) -> np.ndarray:
    """A float32 grayscale thumbnail in [0, 1] of an image ``(H, W)`` or ``(H, W, C)``."""
    arr = np.asarray(data)
    if arr.ndim == 3:
        pass
    elif arr.ndim == 2:
        arr = arr[:, :, None]
    else:
        raise FrameFormatError(
            sensor=sensor, seq=seq, expected="an image (H, W) or (H, W, C)", found=f"{arr.shape}"
        )
    h, w = size
    height, width = arr.shape[:2]
    # Stride down to about 4x the thumbnail, then average 4x4 blocks (cheap anti-aliasing).
    sy, sx = max(1, height // (4 * h)), max(1, width // (4 * w))
    view = arr[::sy, ::sx]
    by, bx = max(1, view.shape[0] // h), max(1, view.shape[1] // w)
    hh, ww = min(h, view.shape[0] // by), min(w, view.shape[1] // bx)
    view = view[: hh * by, : ww * bx].astype(np.float32)
    blocks = view.reshape(hh, by, ww, bx, -1).mean(axis=(1, 3, 4))
    scale = 255.0 if np.issubdtype(arr.dtype, np.integer) else 1.0
    thumb: np.ndarray = (blocks / scale).astype(np.float32)
    return thumb
