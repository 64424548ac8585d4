"""Hesai packets to points and sweeps: nebula's arithmetic, its per-channel azimuth cut.

Theory of operation. Each block group (one block, or the 2-3 blocks of a
multi-return firing) gives every channel a corrected azimuth: the block's
azimuth plus the channel's offset from the angle file, in float32 radians as
nebula computes it. A channel moves on to the next sweep when its corrected
azimuth crosses ``cut_angle`` (``last <= cut < now``, on the circle), so a
sweep holds exactly the points nebula's ``ScanCutter`` puts in one scan; sweep
``k`` is complete once every channel has moved past it. A point is kept as
nebula keeps it: non-zero distance within the sensor's and the configured
range, and in a multi-return group an echo that is not the last is dropped
when it repeats another echo (same distance and reflectivity) or lies within
``dual_return_distance_threshold`` of one. Positions are nebula's
(``x = r cos(el) sin(az)``, ``y = r cos(el) cos(az)``, ``z = r sin(el)``, float32).

:class:`HesaiDecoder` is the sans-I/O state (the last azimuth and sweep of each
channel, the sweeps still open); :func:`decode_numpy` is the plain numpy path,
:mod:`adapters.lidar._hesai_kernel` the compiled one (the default, the same
points); ``benchmarks/bench_hesai.py`` compares the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters.lidar._hesai_correction import (
    CIRCLE,
    HesaiCorrection,
    azimuth_rad,
    corrected_angles,
    lut_sin_cos,
)
from adapters.lidar._hesai_geometry import (
    Columns,
    CutState,
    Geometry,
    between_exclusive_end,
    initial_sweeps,
    normalize,
)
from adapters.lidar._hesai_models import HesaiAngles, HesaiModel
from adapters.lidar._hesai_packets import Batch, block_azimuths, time_table

HESAI_DTYPE = np.dtype(
    [
        ("x", "<f4"),
        ("y", "<f4"),
        ("z", "<f4"),
        ("intensity", "<f4"),
        ("channel", "<u2"),
        ("t_offset", "<i4"),
        ("return", "u1"),
    ]
)
"""What :class:`~adapters.HesaiSource` yields: XYZI, the laser channel (0 = the first row
of the angle file), the firing time from the sweep's ``t_sensor`` (ns) and the echo
(1, 2, 3: the block of the multi-return group it came from; 1 in single return)."""


def decode_numpy(
    model: HesaiModel,
    batch: Batch,
    geo: Geometry,
    state: CutState,
    limits: tuple[float, float, float],
) -> Columns:
    """Points of ``batch`` (one return count throughout), updating ``state`` (plain numpy)."""
    r = int(batch.returns[0])
    P, C, G = len(batch.raw), model.channels, model.blocks // r
    raw = batch.raw
    az = np.stack([block_azimuths(model, raw, g * r) for g in range(G)], axis=1)  # (P, G)
    corrected = None
    if geo.correction is not None:
        az_i, el_i = corrected_angles(geo.correction, az.reshape(-1))  # (P*G, C)
        chan_az = azimuth_rad(az_i)
        corrected = (az_i, el_i)
    else:
        brad = geo.block_rad[az]  # (P, G) float32
        spatial = (brad[:, :, None] + geo.offset[None, None, :]).astype(np.float32)
        chan_az = normalize(spatial).reshape(P * G, C)
    # the cut, channel by channel
    cut = geo.cut
    prev = np.concatenate([state.last[None, :], chan_az[:-1]])
    crossed = between_exclusive_end(prev, chan_az, cut) & (prev != chan_az)
    if not state.started:
        crossed[0] = False
        state.sweep[:] = initial_sweeps(chan_az[0], cut, geo)
        state.started = True
    sweep_of_group = state.sweep[None, :] + np.cumsum(crossed, axis=0)  # (P*G, C)
    state.last = chan_az[-1].copy()
    state.sweep = sweep_of_group[-1].copy()
    packet_sweep = sweep_of_group.reshape(P, G, C)[:, 0, :].min(axis=1)
    # the units: (P, G, C, r) distance and reflectivity
    unit_base = np.array(
        [[model.block_offset(g * r + j) + model.units_at for j in range(r)] for g in range(G)]
    )  # (G, r)
    cols = unit_base[:, None, :] + (np.arange(C) * model.unit)[None, :, None]  # (G, C, r)
    dist_raw = raw[:, cols].astype(np.int64) | (raw[:, cols + 1].astype(np.int64) << 8)
    refl = raw[:, cols + 2]
    dist = (dist_raw * batch.dis_unit[:, None, None, None]).astype(np.float32)
    lo, hi, threshold = limits
    valid = (dist_raw != 0) & ~(dist < lo) & ~(dist > hi)
    valid &= geo.in_fov(chan_az).reshape(P, G, C)[..., None]
    if r > 1:
        _drop_echo_repeats(valid, dist_raw, refl, dist, threshold)
    t_abs = batch.stamps[:, None, None, None] + _firing_offsets(model, batch, r)
    sel = np.nonzero(valid.reshape(-1))[0]
    d = dist.reshape(-1)[sel]
    pg = sel // (C * r)  # packet * G + group
    c = (sel // r) % C
    echo = sel % r
    if corrected is not None:
        sin_az, cos_az = lut_sin_cos(corrected[0][pg, c])
        sin_el, cos_el = lut_sin_cos(corrected[1][pg, c] % CIRCLE)
    else:
        sp = spatial.reshape(P * G, C)[pg, c]
        sin_az, cos_az = np.sin(sp), np.cos(sp)
        sin_el, cos_el = geo.sin_el[c], geo.cos_el[c]
    xy = (d * cos_el).astype(np.float32)
    return Columns(
        x=(xy * sin_az).astype(np.float32),
        y=(xy * cos_az).astype(np.float32),
        z=(d * sin_el).astype(np.float32),
        intensity=refl.reshape(-1)[sel],
        channel=c.astype(np.uint16),
        t_abs=t_abs.reshape(-1)[sel],
        ret=(echo + 1).astype(np.uint8),
        sweep=sweep_of_group[pg, c],
        packet_sweep=packet_sweep,
    )


def _drop_echo_repeats(valid: Any, dist_raw: Any, refl: Any, dist: Any, threshold: float) -> None:
    """Clear ``valid`` (P, G, C, r) for a non-last echo equal to another (distance and
    reflectivity) or within ``threshold`` metres of one, as nebula does."""
    r = valid.shape[3]
    for j in range(r - 1):
        dup = np.zeros(valid.shape[:3], bool)
        near = np.zeros(valid.shape[:3], bool)
        for k in range(r):
            if k == j:
                continue
            dup |= (dist_raw[..., k] == dist_raw[..., j]) & (refl[..., k] == refl[..., j])
            near |= np.abs(dist[..., k] - dist[..., j]) < threshold
        valid[..., j] &= ~dup & ~near


def _firing_offsets(model: HesaiModel, batch: Batch, r: int) -> Any:
    """(P, G, C, r) firing-time offsets (ns) from each packet's stamp, by its timing key."""
    P, G = len(batch.raw), model.blocks // r
    t_rel = np.empty((P, G, model.channels, r), np.int64)
    for key in np.unique(batch.time_key):
        table = time_table(model, r, int(key)).reshape(G, r, model.channels).transpose(0, 2, 1)
        rows = batch.time_key == key
        t_rel[rows] = table[None]
    return t_rel


@dataclass
class HesaiSweep:
    """One finished sweep: its points and what the ledger needs."""

    points: npt.NDArray[Any]
    t_sensor: int
    units: int
    partial: bool
    t_arrival: int | None
    number: int


@dataclass
class _Open:
    chunks: list[Columns] = field(default_factory=list)
    units: int = 0
    t_arrival: int | None = None
    first_packet: int | None = None


class HesaiDecoder:
    """Sans-I/O: prepared packet batches in, finished sweeps out (see the module docstring).

    ``kernel=True`` decodes with the compiled kernel (numba), else with numpy.
    """

    def __init__(
        self,
        model: HesaiModel,
        angles: HesaiAngles | HesaiCorrection,
        *,
        cut_angle: float | None = None,
        fov: tuple[int, int] | None = None,
        min_range: float | None = None,
        max_range: float | None = None,
        dual_return_distance_threshold: float = 0.1,
        kernel: bool = True,
    ) -> None:
        self.model = model
        cut = model.default_cut if cut_angle is None else cut_angle
        self.geometry = Geometry(model, angles, cut, model.fov if fov is None else fov)
        lo = float(np.float32(model.min_range))
        hi = float(np.float32(model.max_range))
        if min_range is not None:
            lo = max(lo, min_range)
        if max_range is not None:
            hi = min(hi, max_range)
        self.limits = (lo, hi, float(dual_return_distance_threshold))
        self.state = CutState(model.channels)
        self.kernel = kernel
        self._open: dict[int, _Open] = {}
        self._emitted = 0  # sweeps numbered below this are out
        self.packets = 0
        self.dual_packets = 0
        self._last_arrival: int | None = None

    def push(self, batch: Batch, arrivals: list[int | None]) -> list[HesaiSweep]:
        """Decode ``batch`` (``arrivals[i]``: host time of its row ``i``); the sweeps it ended."""
        n = len(batch.raw)
        if n == 0:
            return []
        self.packets += n
        self.dual_packets += int((batch.returns > 1).sum())
        # runs of one return count (a sensor switched mode mid-stream)
        cuts = np.flatnonzero(np.diff(batch.returns)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, n], strict=True):
            part = _rows(batch, slice(int(a), int(b)))
            cols = self._decode(part)
            self._collect(cols, arrivals[int(a) : int(b)])
        return self._finished(int(self.state.sweep.min()))

    def flush(self) -> list[HesaiSweep]:
        """End of stream: every sweep still open, as partial sweeps."""
        return self._finished(None)

    @property
    def held(self) -> int:
        """Packets pushed into sweeps not yet returned (0 after :meth:`flush`)."""
        return sum(entry.units for entry in self._open.values())

    def _decode(self, batch: Batch) -> Columns:
        if self.kernel:
            from adapters.lidar._hesai_kernel import decode_kernel

            return decode_kernel(self.model, batch, self.geometry, self.state, self.limits)
        return decode_numpy(self.model, batch, self.geometry, self.state, self.limits)

    def _collect(self, cols: Columns, arrivals: list[int | None]) -> None:
        order = np.argsort(cols.sweep, kind="stable")
        sweeps = cols.sweep[order]
        bounds = np.flatnonzero(np.diff(sweeps)) + 1
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(order)], strict=True):
            if a == b:
                continue
            k = int(sweeps[a])
            rows = order[a:b]
            part = Columns(
                cols.x[rows], cols.y[rows], cols.z[rows], cols.intensity[rows],
                cols.channel[rows], cols.t_abs[rows], cols.ret[rows], cols.sweep[rows],
                cols.packet_sweep[:0],
            )  # fmt: skip
            self._open.setdefault(k, _Open()).chunks.append(part)
        for i, k in enumerate(cols.packet_sweep.tolist()):
            entry = self._open.setdefault(max(k, self._emitted), _Open())
            entry.units += 1
            if arrivals[i] is not None:
                entry.t_arrival = self._last_arrival = arrivals[i]

    def _finished(self, below: int | None) -> list[HesaiSweep]:
        out = []
        for k in sorted(self._open):
            if below is not None and k >= below:
                break
            entry = self._open.pop(k)
            sweep = _assemble(entry, k)
            sweep.partial = k == 0 or below is None
            if sweep.t_arrival is None:
                sweep.t_arrival = self._last_arrival
            self._emitted = k + 1
            if len(sweep.points) or sweep.units:
                out.append(sweep)
        return out


def _rows(batch: Batch, rows: Any) -> Batch:
    return Batch(
        batch.raw[rows], batch.index[rows], batch.stamps[rows], batch.returns[rows],
        batch.modes[rows], batch.dis_unit[rows], batch.time_key[rows],
    )  # fmt: skip


def _assemble(entry: _Open, number: int) -> HesaiSweep:
    chunks = entry.chunks
    n = sum(len(c.x) for c in chunks)
    points = np.empty(n, HESAI_DTYPE)
    if n == 0:
        return HesaiSweep(points, 0, entry.units, True, entry.t_arrival, number)
    t_abs = np.concatenate([c.t_abs for c in chunks])
    t0 = int(t_abs.min())
    for name, attr in (("x", "x"), ("y", "y"), ("z", "z"), ("intensity", "intensity")):
        points[name] = np.concatenate([getattr(c, attr) for c in chunks])
    points["channel"] = np.concatenate([c.channel for c in chunks])
    points["return"] = np.concatenate([c.ret for c in chunks])
    points["t_offset"] = t_abs - t0
    return HesaiSweep(points, t0, entry.units, False, entry.t_arrival, number)
