"""Velodyne sweeps to points: the per-model tables and the call into the kernel.

Points. Azimuth is interpolated per firing from the column's azimuth and the
gap to the next column (the last column of a packet reuses the previous gap;
a packet of one column, the VLS-128's dual-return one, uses the next
packet's; a gap over twice the packet's median, the edge of a limited field
of view, is taken as the median), rounded to 0.01° like VeloView and
velodyne_decoder. The laser's calibration is then applied as the ROS driver
does (see :mod:`adapters.lidar._calibration`); positions are in the manual's
frame (x right, y forward, z up). In dual-return packets each firing gives its
last and its strongest return; when both are the same echo, one point is kept
(the strongest block's, as velodyne_decoder does), with ``return`` = 3
(:data:`~adapters.lidar._velodyne_models.BOTH`).

The HDL-64E's corrections (the S3 manual's formulas, as the ROS driver and
velodyne_decoder apply them): with ``d`` the far distance correction and
``xx = |(r + d) cos(v) sin(a)|``, the x correction is
``d + (1 - (xx - 2.40) / (25.04 - 2.40)) (d_x - d)`` below 25.04 m, i.e.
``d + (25.04 - xx) g_x`` with the per-laser ``g_x = (d_x - d) / (25.04 - 2.40)``
(0 without a two-point calibration); likewise y; then the horizontal offset and
the focal-distance intensity correction, clipped to the laser's range.

The work per point is done by :mod:`adapters.lidar._velodyne_kernel`; this module
builds its tables once per model and layout and slices its output per sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adapters.lidar._points import VELODYNE_DTYPE
from adapters.lidar._velodyne_models import (
    BLOCKS,
    LAST,
    RETURN_LAST,
    RETURN_STRONGEST,
    SLOTS,
    STRONGEST,
    PacketLayout,
    VelodyneModel,
)


@dataclass(slots=True)
class RawSweep:
    """The packets of one rotation, not yet decoded.

    Blocks ``[first_block, 12)`` of the first packet through blocks
    ``[0, end_block)`` of the last belong to this sweep.
    """

    packets: np.ndarray
    """``(P, 1206)`` uint8: the packets' bytes."""
    stamps_us: np.ndarray
    """Unwrapped packet timestamps (µs since the top of the sensor's first hour), int64."""
    layout: PacketLayout
    mode: int = RETURN_STRONGEST
    """The packets' return-mode byte."""
    first_block: int = 0
    end_block: int = BLOCKS
    t_arrival: int | None = None
    """Arrival (or capture) time of the packet that completed the sweep."""
    partial: bool = False
    """True for a sweep that does not span a full rotation (first, last, after a gap)."""

    @property
    def t_sensor(self) -> int:
        """Sensor time (ns) of the sweep's first firing."""
        return int(self.stamps_us[0]) * 1000 + int(self.layout.time_ns[self.first_block, 0])

    @property
    def units(self) -> int:
        """Packets counted for this sweep in a ledger (a packet shared with the previous
        sweep, the one the cut angle split, counts there)."""
        return len(self.packets) - (self.first_block > 0)

    def decode(self, model: VelodyneModel) -> np.ndarray:
        """All non-zero returns of the sweep as a :data:`VELODYNE_DTYPE` array, in
        packet / block / slot order (:func:`decode_sweeps` decodes several at once)."""
        return decode_sweep(self, model)


_FAR, _NEAR_X, _NEAR_Y = 25.04, 2.40, 1.93  # m: the two-point calibration's points
FIXED = 16
"""Bits of the fixed-point interpolation fraction (the kernel's ``FIXED``)."""
INT_ROWS = ("fraction", "time_ns", "ring")
"""The rows of the kernel's ``itab``, per place (block x slot)."""
FLOAT_ROWS = ("cos_v", "sin_v", "unturn_re", "unturn_im", "v_off", "dist_correction_m",
              "horiz_offset_m", "gain_x", "gain_y", "focal_term", "focal_gain",
              "min_intensity", "max_intensity")  # fmt: skip
"""The rows of the kernel's ``ftab``, per place; the kernel reads them by index."""

# cos/sin per 0.01° over two turns: an azimuth plus its interpolation step needs no modulo
_ANGLES = np.arange(72000, dtype=np.float64) * (np.pi / 18000.0)
_TURN = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)]).astype(np.float32)


@dataclass(frozen=True, eq=False)
class _Tables:
    """The kernel's constants for one model and layout (see the kernel's docstring)."""

    ints: np.ndarray
    blocks: np.ndarray
    itab: np.ndarray
    ftab: np.ndarray
    params: np.ndarray


_TABLE_CACHE: dict[tuple[int, int], tuple[VelodyneModel, PacketLayout, _Tables]] = {}


def _tables(model: VelodyneModel, layout: PacketLayout) -> _Tables:
    key = (id(model), id(layout))
    cached = _TABLE_CACHE.get(key)
    if cached is not None and cached[0] is model and cached[1] is layout:
        return cached[2]
    cal = model.calibration
    laser = layout.laser  # (12, 32)
    vert = np.deg2rad(cal.column("vert_deg"))[laser]
    rot = np.deg2rad(cal.column("rot_deg"))[laser]
    unturn = np.exp(-1j * rot).astype(np.complex64)  # exp(-i rot): subtracts the correction
    v_off = cal.column("vert_offset_m")[laser]
    rows = {
        "cos_v": np.cos(vert),
        "sin_v": np.sin(vert),
        "unturn_re": unturn.real,
        "unturn_im": unturn.imag,
        "v_off": v_off,
    }
    if cal.advanced:
        dist = cal.column("dist_correction_m")
        x, y = cal.column("dist_correction_x_m"), cal.column("dist_correction_y_m")
        two_point = (x != 0) & (y != 0)
        per_laser = {
            "dist_correction_m": dist,
            "horiz_offset_m": cal.column("horiz_offset_m"),
            "gain_x": np.where(two_point, (x - dist) / (_FAR - _NEAR_X), 0.0),
            "gain_y": np.where(two_point, (y - dist) / (_FAR - _NEAR_Y), 0.0),
            "focal_term": (1 - cal.column("focal_distance") / 131.0) ** 2,
            "focal_gain": 256.0 * cal.column("focal_slope"),
            "min_intensity": cal.column("min_intensity", 0.0),
            "max_intensity": cal.column("max_intensity", 255.0),
        }
        rows.update({name: values[laser] for name, values in per_laser.items()})
    ftab = np.zeros((len(FLOAT_ROWS), BLOCKS * SLOTS), np.float32)
    for i, name in enumerate(FLOAT_ROWS):
        if name in rows:
            ftab[i] = np.asarray(rows[name], np.float32).reshape(-1)
    fraction = np.round(layout.fraction.astype(np.float64) * (1 << FIXED))
    ints = {"fraction": fraction, "time_ns": layout.time_ns, "ring": cal.rings[laser]}
    itab = np.stack([np.asarray(ints[name]).reshape(-1) for name in INT_ROWS]).astype(np.int32)
    blocks = np.full((3, BLOCKS), -1, np.int64)
    blocks[0] = layout.block_return
    blocks[2] = 0
    for last, strongest in layout.pairs:
        blocks[1, last], blocks[1, strongest] = strongest, last
        blocks[2, last] = 1
    tables = _Tables(
        ints=np.zeros(8, np.int64),  # the per-call part is filled in by _call
        blocks=blocks,
        itab=np.ascontiguousarray(itab),
        ftab=ftab,
        params=np.array([model.distance_resolution_m, _FAR], np.float32),
    )
    tables.ints[:] = [layout.used_blocks, layout.blocks_per_group, layout.groups, layout.dual,
                      0, cal.advanced, bool(rot.any()), bool(v_off.any())]  # fmt: skip
    _TABLE_CACHE[key] = (model, layout, tables)
    return tables


def _read_only(packets: np.ndarray) -> np.ndarray:
    """Packets as the kernels always see them: numba compiles a read-only array (a
    batch's bytes) and a writeable one (sweeps joined) as two signatures."""
    if packets.flags.writeable:
        packets = packets.view()
        packets.flags.writeable = False
    return packets


def warm() -> None:
    """Compile the kernels now (or load them from numba's cache): a live source calls this
    before it listens, so its first sweep does not wait seconds for the compiler."""
    from adapters.lidar._velodyne_kernel import check, decode

    packets = _read_only(np.zeros((0, BLOCKS * 100 + 6), np.uint8))
    i8, none = np.int64, np.zeros(0, np.int64)
    check(packets, np.zeros((2, BLOCKS), i8), np.zeros(2, i8), np.zeros(256, np.bool_), False,
          np.zeros(0, np.int8), none, none, np.zeros(0, np.bool_))  # fmt: skip
    decode(packets, none, np.zeros((0, 5), i8), np.zeros(8, i8), np.zeros((3, BLOCKS), i8),
           np.zeros((3, BLOCKS * SLOTS), np.int32),
           np.zeros((len(FLOAT_ROWS), BLOCKS * SLOTS), np.float32), _TURN,
           np.zeros(2, np.float32), none, np.zeros(0, VELODYNE_DTYPE))  # fmt: skip


def decode_sweep(sweep: RawSweep, model: VelodyneModel) -> np.ndarray:
    """Decode a sweep's returns into points (see the module docstring)."""
    return decode_sweeps([sweep], model)[0]


def decode_sweeps(sweeps: Sequence[RawSweep], model: VelodyneModel) -> list[np.ndarray]:
    """All non-zero returns of each sweep as a :data:`VELODYNE_DTYPE` array, in packet /
    block / slot order: one kernel call per run of sweeps of one layout and return mode
    (nearly always the whole batch). The arrays are views of one array per run."""
    out: list[np.ndarray] = []
    i = 0
    while i < len(sweeps):
        first, j = sweeps[i], i + 1
        while j < len(sweeps) and sweeps[j].layout is first.layout and sweeps[j].mode == first.mode:
            j += 1
        out += _decode_run(sweeps[i:j], model)
        i = j
    return out


def _decode_run(run: Sequence[RawSweep], model: VelodyneModel) -> list[np.ndarray]:
    layout = run[0].layout
    if len(run) == 1:
        packets, stamps = run[0].packets, run[0].stamps_us
    else:
        packets = np.concatenate([s.packets for s in run])
        stamps = np.concatenate([s.stamps_us for s in run])
    packets = _read_only(np.ascontiguousarray(packets, np.uint8))
    stamps = np.ascontiguousarray(stamps, np.int64)
    sizes = [len(s.packets) for s in run]
    bounds = np.empty((len(run), 5), np.int64)
    ends = np.cumsum(sizes)
    bounds[:, 0] = ends - sizes
    bounds[:, 1] = ends
    bounds[:, 2] = [s.first_block for s in run]
    bounds[:, 3] = [s.end_block for s in run]
    bounds[:, 4] = [s.t_sensor for s in run]
    tables = _tables(model, layout)
    ints = tables.ints.copy()
    ints[4] = LAST if run[0].mode == RETURN_LAST else STRONGEST
    counts = np.zeros(len(run), np.int64)
    from adapters.lidar._velodyne_kernel import decode  # numba: imported on first use

    args = (packets, stamps, bounds, ints, tables.blocks, tables.itab, tables.ftab, _TURN,
            tables.params, counts)  # fmt: skip
    points = np.empty(len(packets) * BLOCKS * SLOTS, VELODYNE_DTYPE)  # room for every return
    total = decode(*args, points)
    points.resize((total,), refcheck=False)  # realloc: shrinks in place, no copy, no view yet
    if len(run) == 1:
        return [points]
    return np.split(points, np.cumsum(counts)[:-1])
