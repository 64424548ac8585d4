"""The geometry Hesai decoding shares: nebula's float32 angle tables, the per-channel cut state.

Used by both decoders (:mod:`adapters.lidar._hesai_decode`'s numpy path and
:mod:`adapters.lidar._hesai_kernel`), so neither imports the other's module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters.lidar._hesai_correction import HesaiCorrection
from adapters.lidar._hesai_models import HesaiAngles, HesaiModel

TWO_PI_F = float(np.float32(2 * np.pi))
DEG2RAD_F = np.float32(np.pi / 180.0)


@dataclass
class Columns:
    """Points of a batch as columns, each with its sweep number and absolute time."""

    x: npt.NDArray[np.float32]
    y: npt.NDArray[np.float32]
    z: npt.NDArray[np.float32]
    intensity: npt.NDArray[np.uint8]
    channel: npt.NDArray[np.uint16]
    t_abs: npt.NDArray[np.int64]
    ret: npt.NDArray[np.uint8]
    sweep: npt.NDArray[np.int64]
    packet_sweep: npt.NDArray[np.int64]
    """Per packet: the sweep it counts in (the oldest open at its first block)."""


@dataclass
class CutState:
    """Per channel: the last corrected azimuth (float32 rad) and the sweep it is in."""

    channels: int
    last: npt.NDArray[np.float32] = field(init=False)
    sweep: npt.NDArray[np.int64] = field(init=False)
    started: bool = False

    def __post_init__(self) -> None:
        self.last = np.zeros(self.channels, np.float32)
        self.sweep = np.zeros(self.channels, np.int64)


class Geometry:
    """The float32 angle tables nebula precomputes, for one model and angle file.

    An AT128 takes a ``.dat`` correction (``self.correction``; its angles are
    computed per block, :mod:`adapters.lidar._hesai_correction`), every other
    model an angle CSV. ``fov`` (degrees, nebula's ``cloud_min_angle`` and
    ``cloud_max_angle``, both kept) drops points outside it; equal ends or None:
    the whole circle."""

    def __init__(
        self,
        model: HesaiModel,
        angles: HesaiAngles | HesaiCorrection,
        cut_angle_deg: float,
        fov: tuple[int, int] | None = None,
    ) -> None:
        if angles.channels != model.channels:
            raise ValueError(
                f"{angles.source} has {angles.channels} channels, {model.name} has {model.channels}"
            )
        cut = np.float32(math.radians(cut_angle_deg))
        self.cut = np.float32(cut - math.floor(cut / TWO_PI_F) * TWO_PI_F)
        self.fov: tuple[np.float32, np.float32] | None = None
        if fov is not None and fov[0] != fov[1]:
            lo, hi = (np.float32(d * (math.pi / 180.0)) for d in fov)
            self.fov = (lo, hi)
        self.correction: HesaiCorrection | None = None
        if isinstance(angles, HesaiCorrection):
            if not model.corrected:
                raise ValueError(f"{angles.source} is a .dat correction; {model.name} takes a CSV")
            self.correction = angles
            return
        if model.corrected:
            raise ValueError(f"{model.name} takes a .dat correction; {angles.source} is a CSV")
        self.elev = (angles.elevation * DEG2RAD_F).astype(np.float32)
        self.offset = (angles.azimuth * DEG2RAD_F).astype(np.float32)
        self.cos_el = np.cos(self.elev).astype(np.float32)
        self.sin_el = np.sin(self.elev).astype(np.float32)
        # block azimuth (0.01°) -> float32 rad, as deg2rad<double>(a / 100.0)
        self.block_rad = (np.arange(36000) / 100.0 * (math.pi / 180.0)).astype(np.float32)

    def in_fov(self, az: Any) -> Any:
        """Which float32 corrected azimuths the FoV keeps (all when it is the circle)."""
        if self.fov is None:
            return np.ones(np.shape(az), bool)
        return _between_inclusive(self.fov[0], self.fov[1], az)


def normalize(a: Any) -> Any:
    """nebula's normalize_angle(float, 2 pi as float): in double, back to float32."""
    d = np.asarray(a, np.float64)
    return (d - np.floor(d / TWO_PI_F) * TWO_PI_F).astype(np.float32)


def between_exclusive_end(start: Any, end: Any, angle: Any) -> Any:
    """nebula's angle_is_between(start, end, angle, true, false), start != end."""
    wraps = end < start
    inside = np.where(wraps, (angle <= end) | (start <= angle), (start <= angle) & (angle <= end))
    return inside & (angle != end)


def initial_sweeps(az: Any, cut: Any, geo: Geometry) -> Any:
    """nebula's first block: all in sweep 0 unless it straddles the cut, then those after it
    (``cut < az <= cut + pi``) start in sweep 1. The channels of least and most
    correction: the angle file's (CSV), the block's own (AT128)."""
    half = normalize(np.float32(cut + np.float32(np.pi)))
    after = _between_open_start(cut, half, az)
    quarter = np.float32(np.pi / 2)
    low, high = normalize(cut - quarter), normalize(cut + quarter)
    if geo.correction is not None:
        i_min, i_max = int(np.argmin(az)), int(np.argmax(az))
    else:
        i_min, i_max = int(np.argmin(geo.offset)), int(np.argmax(geo.offset))
    ends = az[[i_min, i_max]]
    near = _between_inclusive(low, high, ends).all()
    straddles = bool(near) and int(after[[i_min, i_max]].sum()) == 1
    return after.astype(np.int64) if straddles else np.zeros(len(az), np.int64)


def _between_inclusive(start: Any, end: Any, angle: Any) -> Any:
    if end < start:
        return (angle <= end) | (start <= angle)
    return (start <= angle) & (angle <= end)


def _between_open_start(start: Any, end: Any, angle: Any) -> Any:
    return _between_inclusive(start, end, angle) & (angle != start)
