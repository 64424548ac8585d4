"""The AT128's binary angle correction (``.dat``) and the angles it gives each point.

File layout (Hesai's correction format 1.5, as tier4/nebula's ``HesaiCorrection``
reads it): ``EE FF``, version major and minor, channels, mirrors, fields
(frames), 8 bytes of frame configuration, a resolution byte; then little-endian
int32 start and end azimuths of each mirror field, the azimuth and elevation
of each channel, 180 signed bytes of azimuth and of elevation adjustment per
channel (one every 2° of block azimuth), and a SHA-256. Every value but the
adjustments is in 1/25600°, times ``resolution``; the adjustments are in 0.01°,
times ``resolution`` stored back into a signed byte (as nebula does).

Angles (nebula's ``AngleCorrectorCorrectionBased``, in the same integer and
float32 arithmetic): a block azimuth ``a`` (1/25600°) falls in the first field
``f`` with ``start[f] <= a <= end[f]`` (on the circle); channel ``c``'s azimuth
is ``2 (a - start[f]) - azimuth[c] + 256 adj_az(c, a)`` and its elevation
``elevation[c] + 256 adj_el(c, a)``, where ``adj`` interpolates the channel's
adjustment table linearly between the 2° steps and rounds half away from zero.
Sines and cosines are of the angle's index on the circle, as nebula's tables.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters._side_files import CALIBRATION_LIMIT, read_small
from adapters.errors import DecodeError

UNIT = 25600
"""Correction counts per degree."""
CIRCLE = 360 * UNIT
_STEP = 200 * 256  # the adjustment tables' step: 2° in 1/25600°
_PI_F = np.float32(math.pi)


@dataclass(frozen=True)
class HesaiCorrection:
    """A parsed ``.dat`` correction (values in 1/25600°, already times ``resolution``)."""

    version: tuple[int, int]
    channels: int
    start: npt.NDArray[np.int64]
    """Start azimuth of each mirror field used (``fields`` of them)."""
    end: npt.NDArray[np.int64]
    azimuth: npt.NDArray[np.int64]
    elevation: npt.NDArray[np.int64]
    azimuth_adjust: npt.NDArray[np.int8]
    """``channels * 180 + 1`` signed 0.01° steps (the last one 0, as nebula's zeroed array)."""
    elevation_adjust: npt.NDArray[np.int8]
    source: str

    @property
    def fields(self) -> int:
        return len(self.start)


def parse_correction(data: bytes, source: str) -> HesaiCorrection:
    """A ``.dat`` correction from its bytes (see the module docstring).

    Bytes before the first ``EE FF`` are skipped, as nebula does (the sensor's PTC
    answer starts there). Refused with :class:`DecodeError`: no ``EE FF``, a version
    other than 1.5, 0 or more than 128 channels, 0 or more than 8 mirrors, more
    fields than mirrors, a resolution of 0, or fewer bytes than the counts need."""
    at = data.find(b"\xee\xff")
    if at < 0:
        raise DecodeError(f"{source}: no EE FF start: not a Hesai angle correction (.dat)")
    if len(data) < at + 16:
        raise DecodeError(f"{source}: {len(data) - at} bytes from EE FF: the header needs 16")
    major, minor, channels, mirrors, fields = data[at + 2 : at + 7]
    resolution = data[at + 15]
    if (major, minor) != (1, 5):
        raise DecodeError(f"{source}: correction version {major}.{minor}; only 1.5 is read")
    if not 0 < channels <= 128:
        raise DecodeError(f"{source}: {channels} channels; expected 1..128")
    if not 0 < mirrors <= 8 or not 0 < fields <= mirrors:
        raise DecodeError(
            f"{source}: {mirrors} mirrors, {fields} fields; expected 1..8, <= mirrors"
        )
    if resolution == 0:
        raise DecodeError(f"{source}: resolution 0")
    need = 16 + 8 * mirrors + 8 * channels + 2 * 180 * channels
    if len(data) - at < need:
        raise DecodeError(
            f"{source}: {len(data) - at} bytes from EE FF; {channels} channels and "
            f"{mirrors} mirrors need {need}"
        )
    pos = at + 16

    def ints(n: int) -> npt.NDArray[np.int64]:
        nonlocal pos
        out = np.array(struct.unpack_from(f"<{n}i", data, pos), np.int64)
        pos += 4 * n
        return out

    start = ints(mirrors) & 0xFFFFFFFF  # nebula: uint32
    end = ints(mirrors) & 0xFFFFFFFF
    azimuth, elevation = ints(channels), ints(channels)

    def adjust() -> npt.NDArray[np.int8]:
        nonlocal pos
        raw = np.frombuffer(data, np.int8, 180 * channels, pos)
        pos += 180 * channels
        out = np.zeros(180 * channels + 1, np.int8)
        # int8 *= resolution in nebula: the product wraps to a signed byte
        out[:-1] = ((raw.astype(np.int64) * resolution + 128) % 256 - 128).astype(np.int8)
        return out

    az_adj, el_adj = adjust(), adjust()
    r = int(resolution)
    return HesaiCorrection(
        (major, minor), channels,
        ((start * r) & 0xFFFFFFFF)[:fields], ((end * r) & 0xFFFFFFFF)[:fields],
        azimuth * r, elevation * r, az_adj, el_adj, source,
    )  # fmt: skip


def read_correction(path: str | Path) -> HesaiCorrection:
    """The ``.dat`` correction at ``path`` (a regular file of at most 4 MiB)."""
    data = read_small(
        path, "Hesai angle correction", CALIBRATION_LIMIT,
        limit_name="a calibration file", error=DecodeError,
    )  # fmt: skip
    return parse_correction(data, str(path))


def looks_like_correction(data: bytes) -> bool:
    """Whether ``data`` starts (within its first 64 bytes) as a ``.dat`` correction."""
    return b"\xee\xff" in data[:64]


def _adjust(table: npt.NDArray[np.int8], channel: Any, raw: Any) -> Any:
    """nebula's ``get_*_adjust_v3``: float32 interpolation, rounded half away from zero,
    as a signed byte (vectorised over ``channel`` and ``raw``)."""
    step = np.float32(_STEP)
    i = np.floor(np.asarray(raw, np.float32) / step).astype(np.int64)
    k = (np.asarray(raw, np.int64) - i * _STEP).astype(np.float32) / step
    lo = table[channel * 180 + i].astype(np.float32)
    hi = table[channel * 180 + i + 1].astype(np.float32)
    v = (np.float32(1) - k) * lo + k * hi
    rounded = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    return ((rounded.astype(np.int64) + 128) % 256) - 128


def find_fields(corr: HesaiCorrection, raw: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The mirror field of each block azimuth (the first that holds it), -1 for none."""
    out = np.full(raw.shape, -1, np.int64)
    for f in range(corr.fields - 1, -1, -1):  # the first match wins
        s, e = int(corr.start[f]), int(corr.end[f])
        inside = ((raw <= e) | (s <= raw)) if e < s else ((s <= raw) & (raw <= e))
        out[inside] = f
    return out


def lut_sin_cos(index: Any) -> tuple[Any, Any]:
    """nebula's float32 sine and cosine tables at ``index`` (1/25600° on [0, 360))."""
    rad = (np.float32(2) * np.asarray(index, np.int64).astype(np.float32)) * _PI_F
    rad = (rad / np.float32(CIRCLE)).astype(np.float64)
    return np.sin(rad).astype(np.float32), np.cos(rad).astype(np.float32)


def corrected_angles(
    corr: HesaiCorrection, raw: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(azimuth, elevation) of every channel at each block azimuth: ``(N, C)`` integer
    1/25600°, the azimuth on [0, 360), the elevation as is (signed). Every ``raw``
    must lie in a field (see :func:`find_fields`)."""
    fields = find_fields(corr, raw)
    assert (fields >= 0).all()
    ch = np.arange(corr.channels)[None, :]
    r = raw[:, None]
    az = 2 * (r - corr.start[fields][:, None]) - corr.azimuth[None, :]
    az = az + _adjust(corr.azimuth_adjust, ch, r) * (UNIT // 100)
    el = corr.elevation[None, :] + _adjust(corr.elevation_adjust, ch, r) * (UNIT // 100)
    return az % CIRCLE, el


def azimuth_rad(az: Any) -> Any:
    """nebula's ``to_radians``: degrees in double, radians in float32."""
    return ((np.asarray(az, np.float64) / UNIT) * (math.pi / 180.0)).astype(np.float32)
