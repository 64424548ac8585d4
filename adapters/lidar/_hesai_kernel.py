"""The compiled kernel that turns Hesai packets into points (numba, imported lazily).

One loop nest walks the packets of a batch, block group by block group, channel
by channel, echo by echo, and writes each kept point straight into its columns:
the same float32 arithmetic, cut and filters as :func:`adapters.lidar._hesai_decode.decode_numpy`
(the plain numpy path, which allocates a (P, G, C, r) temporary per step), in
nebula's order. The kernel releases the GIL. :mod:`adapters.lidar._hesai_decode`
imports this module on the first decode, so ``import adapters`` stays light;
the compiled code is cached next to this module when that is writable.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from adapters.lidar._hesai_geometry import Columns, CutState, Geometry, initial_sweeps
from adapters.lidar._hesai_models import HesaiModel
from adapters.lidar._hesai_packets import Batch, time_table

TWO_PI_F = float(np.float32(2 * np.pi))


@numba.njit(inline="always", cache=True)
def _cut_step(last: Any, sweep: Any, cut: Any, c: int, az: Any) -> Any:  # pragma: no cover
    """Channel ``c`` fires at ``az``: a new sweep when it passes ``cut``; its sweep index."""
    prev = last[c]
    if prev != az:
        wraps = az < prev
        inside = (cut <= az or prev <= cut) if wraps else (prev <= cut <= az)
        if inside and cut != az:
            sweep[c] += 1
    last[c] = az
    return sweep[c]


@numba.njit(inline="always", cache=True)
def _read_echoes(  # pragma: no cover - compiled
    raw: Any, p: int, first: int, step: int, r: int, du: Any, draw: Any, refl: Any, dist: Any
) -> None:
    """The ``r`` echoes of one firing: raw distance, reflectivity, metres."""
    for j in range(r):
        u = first + j * step
        draw[j] = np.int64(raw[p, u]) | (np.int64(raw[p, u + 1]) << 8)
        refl[j] = raw[p, u + 2]
        dist[j] = np.float32(draw[j] * du)


@numba.njit(inline="always", cache=True)
def _kept(  # pragma: no cover - compiled
    j: int, r: int, draw: Any, refl: Any, dist: Any, lo: Any, hi: Any, thr: Any
) -> bool:
    """Echo ``j`` is a point: in range, and (unless the last) not the same as another
    echo nor within the dual-return threshold of one (nebula's rules)."""
    if draw[j] == 0 or dist[j] < lo or dist[j] > hi:
        return False
    if j != r - 1:
        for q in range(r):
            if q == j:
                continue
            if draw[q] == draw[j] and refl[q] == refl[j]:
                return False
            if abs(dist[q] - dist[j]) < thr:
                return False
    return True


@numba.njit(nogil=True, cache=True, boundscheck=False)
def _decode(  # pragma: no cover - compiled
    raw: Any, ints: Any, dis: Any, stamps: Any, tkey: Any, ttab: Any,
    offset: Any, block_rad: Any, cos_el: Any, sin_el: Any, lims: Any,
    last: Any, sweep: Any, cut: Any,
    ox: Any, oy: Any, oz: Any, oi: Any, oc: Any, ot: Any, orr: Any, osw: Any, psw: Any,
) -> int:  # fmt: skip
    P = raw.shape[0]
    r, G, C = ints[0], ints[1], ints[2]
    header, bsize, az_at, usize = ints[3], ints[4], ints[5], ints[6]
    lo, hi, thr = lims[0], lims[1], lims[2]
    two_pi = TWO_PI_F
    n = 0
    dist = np.empty(3, np.float32)
    draw = np.empty(3, np.int64)
    refl = np.empty(3, np.int64)
    for p in range(P):
        du = dis[p]
        for g in range(G):
            b0 = header + g * r * bsize
            a = np.int64(raw[p, b0 + az_at]) | (np.int64(raw[p, b0 + az_at + 1]) << 8)
            brad = block_rad[a]
            first_sweep = np.int64(1) << 62
            for c in range(C):
                spatial = np.float32(brad + offset[c])
                d = np.float64(spatial)
                az = np.float32(d - math.floor(d / two_pi) * two_pi)
                k = _cut_step(last, sweep, cut, c, az)
                if k < first_sweep:
                    first_sweep = k
                first = header + g * r * bsize + az_at + 2 + c * usize
                _read_echoes(raw, p, first, bsize, r, du, draw, refl, dist)
                for j in range(r):
                    if not _kept(j, r, draw, refl, dist, lo, hi, thr):
                        continue
                    xy = np.float32(dist[j] * cos_el[c])
                    ox[n] = np.float32(xy * np.float32(math.sin(spatial)))
                    oy[n] = np.float32(xy * np.float32(math.cos(spatial)))
                    oz[n] = np.float32(dist[j] * sin_el[c])
                    oi[n] = refl[j]
                    oc[n] = c
                    ot[n] = stamps[p] + ttab[tkey[p], g * r + j, c]
                    orr[n] = j + 1
                    osw[n] = k
                    n += 1
            if g == 0:
                psw[p] = first_sweep
    return n


@numba.njit(nogil=True, cache=True, boundscheck=False)
def _decode_tabled(  # pragma: no cover - compiled
    raw: Any, ints: Any, dis: Any, stamps: Any, ttab: Any,
    chan_az: Any, sa: Any, ca: Any, se: Any, ce: Any, fov: Any, lims: Any,
    last: Any, sweep: Any, cut: Any,
    ox: Any, oy: Any, oz: Any, oi: Any, oc: Any, ot: Any, orr: Any, osw: Any, psw: Any,
) -> int:  # fmt: skip
    """The AT128 loop: the angles of every (packet x group, channel) are given."""
    P = raw.shape[0]
    r, G, C = ints[0], ints[1], ints[2]
    header, bsize, units_at, usize = ints[3], ints[4], ints[5], ints[6]
    lo, hi, thr = lims[0], lims[1], lims[2]
    fov_on, fov_lo, fov_hi = fov[0] != 0.0, np.float32(fov[1]), np.float32(fov[2])
    n = 0
    dist = np.empty(3, np.float32)
    draw = np.empty(3, np.int64)
    refl = np.empty(3, np.int64)
    for p in range(P):
        du = dis[p]
        for g in range(G):
            pg = p * G + g
            first_sweep = np.int64(1) << 62
            for c in range(C):
                az = chan_az[pg, c]
                k = _cut_step(last, sweep, cut, c, az)
                if k < first_sweep:
                    first_sweep = k
                if fov_on:
                    if fov_hi < fov_lo:
                        if not (az <= fov_hi or fov_lo <= az):
                            continue
                    elif not (fov_lo <= az <= fov_hi):
                        continue
                first = header + g * r * bsize + units_at + c * usize
                _read_echoes(raw, p, first, bsize, r, du, draw, refl, dist)
                for j in range(r):
                    if not _kept(j, r, draw, refl, dist, lo, hi, thr):
                        continue
                    xy = np.float32(dist[j] * ce[pg, c])
                    ox[n] = np.float32(xy * sa[pg, c])
                    oy[n] = np.float32(xy * ca[pg, c])
                    oz[n] = np.float32(dist[j] * se[pg, c])
                    oi[n] = refl[j]
                    oc[n] = c
                    ot[n] = stamps[p] + ttab[g * r + j, c]
                    orr[n] = j + 1
                    osw[n] = k
                    n += 1
            if g == 0:
                psw[p] = first_sweep
    return n


def _decode_corrected(
    model: HesaiModel,
    batch: Batch,
    geo: Geometry,
    state: CutState,
    limits: tuple[float, float, float],
) -> Columns:
    """AT128: angles per block in numpy (:mod:`adapters.lidar._hesai_correction`), the loop
    compiled."""
    from adapters.lidar._hesai_correction import (
        CIRCLE,
        azimuth_rad,
        corrected_angles,
        lut_sin_cos,
    )
    from adapters.lidar._hesai_packets import block_azimuths

    assert geo.correction is not None
    r = int(batch.returns[0])
    P, C, G = len(batch.raw), model.channels, model.blocks // r
    az = np.stack([block_azimuths(model, batch.raw, g * r) for g in range(G)], axis=1)
    az_i, el_i = corrected_angles(geo.correction, az.reshape(-1))
    chan_az = azimuth_rad(az_i)
    sa, ca = lut_sin_cos(az_i)
    se, ce = lut_sin_cos(el_i % CIRCLE)
    if not state.started:
        state.sweep[:] = initial_sweeps(chan_az[0], geo.cut, geo)
        state.last[:] = chan_az[0]
        state.started = True
    keys = np.unique(batch.time_key)
    assert len(keys) == 1  # the AT128's firing times depend on the return count only
    ttab = time_table(model, r, int(keys[0])).astype(np.int64)
    ints = np.array([r, G, C, model.header, model.block_size, model.units_at, model.unit], np.int64)
    fov = np.zeros(3, np.float32)
    if geo.fov is not None:
        fov[:] = (1.0, geo.fov[0], geo.fov[1])
    out = _outputs(P * G * C * r, P)
    n = _decode_tabled(
        batch.raw, ints, batch.dis_unit, batch.stamps, ttab,
        chan_az, sa, ca, se, ce, fov, np.array(limits, np.float64),
        state.last, state.sweep, geo.cut, *out,
    )  # fmt: skip
    return _columns(out, n)


def _outputs(cap: int, packets: int) -> tuple[Any, ...]:
    """The kernels' output columns for at most ``cap`` points (x, y, z, intensity,
    channel, time, return, sweep) and each packet's first sweep."""
    f32, i64 = np.float32, np.int64
    kinds = (f32, f32, f32, np.uint8, np.uint16, i64, np.uint8, i64)
    return (*(np.empty(cap, kind) for kind in kinds), np.empty(packets, i64))


def _columns(out: tuple[Any, ...], n: int) -> Columns:
    """The first ``n`` points of the kernels' output columns."""
    x, y, z, intensity, channel, t_abs, ret, sweep, packet_sweep = out
    return Columns(
        x[:n], y[:n], z[:n], intensity[:n], channel[:n], t_abs[:n], ret[:n], sweep[:n],
        packet_sweep,
    )  # fmt: skip


def decode_kernel(
    model: HesaiModel,
    batch: Batch,
    geo: Geometry,
    state: CutState,
    limits: tuple[float, float, float],
) -> Columns:
    """Points of ``batch`` (one return count throughout), updating ``state`` (compiled)."""
    if geo.correction is not None:
        return _decode_corrected(model, batch, geo, state, limits)
    r = int(batch.returns[0])
    P, C, G = len(batch.raw), model.channels, model.blocks // r
    if not state.started:
        b0 = model.block_offset(0) + model.azimuth_at
        a = int(batch.raw[0, b0]) | (int(batch.raw[0, b0 + 1]) << 8)
        spatial = (geo.block_rad[a] + geo.offset).astype(np.float32)
        d = spatial.astype(np.float64)
        az = (d - np.floor(d / TWO_PI_F) * TWO_PI_F).astype(np.float32)
        state.sweep[:] = initial_sweeps(az, geo.cut, geo)
        state.last[:] = az
        state.started = True
    keys, tkey = np.unique(batch.time_key, return_inverse=True)
    ttab = np.stack([time_table(model, r, int(k)) for k in keys]).astype(np.int64)
    ints = np.array(
        [r, G, C, model.header, model.block_size, model.azimuth_at, model.unit], np.int64
    )
    lims = np.array(limits, np.float64)
    out = _outputs(P * G * C * r, P)
    n = _decode(
        batch.raw, ints, batch.dis_unit, batch.stamps, tkey.astype(np.int64).reshape(-1), ttab,
        geo.offset, geo.block_rad, geo.cos_el, geo.sin_el, lims,
        state.last, state.sweep, geo.cut, *out,
    )  # fmt: skip
    return _columns(out, n)


def warm() -> None:
    """Compile (or load the cached) kernel before the first live packet."""
    from adapters.lidar._hesai_models import MODELS, default_angles

    model = MODELS["PandarXT16"]
    geo = Geometry(model, default_angles(model), 0.0)
    raw = np.zeros((1, model.size), np.uint8)
    raw[0, :2] = (0xEE, 0xFF)
    batch = Batch(
        raw, np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1, np.int64),
        np.full(1, 0x37, np.uint8), np.full(1, 0.004), np.zeros(1, np.int64),
    )  # fmt: skip
    decode_kernel(model, batch, geo, CutState(model.channels), (0.1, 100.0, 0.1))
