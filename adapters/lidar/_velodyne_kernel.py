"""The compiled kernel that turns Velodyne packets into points.

Why compiled: in numpy a packet batch costs some eighty array passes (masks,
gathers, the HDL-64E's thirty correction passes), each a trip through memory and
a fixed call cost; on small sweeps and sparse (dual-return) packets that fixed
cost dominates and velodyne_decoder's C++ is 2-7x faster. Here one loop nest
walks every sweep of a batch, packet by packet, block by block, slot by slot,
and writes each kept return straight into the :data:`VELODYNE_DTYPE` output: no
temporaries, no per-packet Python. The arithmetic is the numpy decoder's it
replaced (float32 throughout, the same 0.01° cos/sin tables, the same
fixed-point interpolation and the same corrections, in the same order), so its
points are those velodyne_decoder's tests compare against.

One pass: the caller gives an output with room for every return of the packets
(``P * 384``); the kernel writes the kept ones from its start, sweep after sweep,
and says how many each sweep got; the caller then shrinks the output in place
(counting first would read every packet twice, which costs more).
The kernel releases the GIL, so the event loop runs while a worker thread decodes.

This module imports numba; :mod:`adapters.lidar._velodyne_decode` imports it on
the first decode (``import adapters`` stays light). The compiled code is cached
on disk next to this module when that is writable, so later processes load it
instead of compiling it (see BENCHMARKS.md for both costs).

Inputs, all with fixed dtypes so there is one signature:

* ``packets`` ``(P, 1206)`` uint8; ``stamps`` ``(P,)`` int64 µs, unwrapped;
* ``sweeps`` ``(S, 5)`` int64: first row, end row, first block, end block, t_sensor ns;
* ``ints`` int64: used blocks, blocks per column, columns per packet, dual,
  the single-return ``return`` value, advanced corrections, rotation, vertical offset;
* ``blocks`` ``(3, 12)`` int64: each block's ``return`` value (dual), its pair
  partner (-1: none), whether it is the pair's *last* block;
* ``itab`` ``(3, 384)`` int32 and ``ftab`` ``(13, 384)`` float32: per-place (block x
  slot) tables, see :data:`INT_ROWS` and :data:`FLOAT_ROWS`;
* ``turn`` ``(2, 72000)`` float32: cos and sin per 0.01° over two turns;
* ``params`` float32: distance resolution (m), the two-point calibration's far point.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

FIXED = 16
"""Bits of the fixed-point interpolation fraction."""
BOTH = 3
_HALF = 1 << (FIXED - 1)
f32 = np.float32
U = np.uint64


@numba.njit(nogil=True, cache=True, boundscheck=False)
def upper_median(values: Any, n: int, scratch: Any) -> Any:  # pragma: no cover - compiled
    """``np.sort(values[:n])[n // 2]`` by insertion sort into ``scratch``: ``n`` is a
    packet's columns or a sweep's packets, and np.sort would add seconds to the compile."""
    for i in range(n):
        v = values[i]
        j = i
        while j > 0 and scratch[j - 1] > v:
            scratch[j] = scratch[j - 1]
            j -= 1
        scratch[j] = v
    return scratch[n // 2]


@numba.njit(nogil=True, cache=True, boundscheck=False)
def gaps_of_sweep(packets: Any, first: int, end: int, out: Any,
                  scratch: Any) -> None:  # fmt: skip  # pragma: no cover
    """One-column packets (VLS-128 dual return): the gap to the next packet's azimuth,
    the last packet reusing the one before; jumps replaced by the sweep's median."""
    count = end - first
    for p in range(count):
        if count == 1:
            out[p] = 0
            continue
        q = p if p < count - 1 else p - 1
        a = packets[first + q, 2] | (packets[first + q, 3] << 8)
        b = packets[first + q + 1, 2] | (packets[first + q + 1, 3] << 8)
        out[p] = (np.int64(b) - np.int64(a)) % 36000
    low = out[:count].min()
    if (out[:count] > 2 * low + 20).any():
        typical = upper_median(out, count, scratch)
        for p in range(count):
            if out[p] > 2 * typical + 20:
                out[p] = typical


# long: a numba kernel, one compiled loop over sweeps, packets, blocks and laser slots
#   (azimuth gaps, echo choice and point writes share loop state; a call per step costs)
@numba.njit(nogil=True, cache=True, boundscheck=False)
def decode(packets: Any, stamps: Any, sweeps: Any, ints: Any, blocks: Any, itab: Any,
           ftab: Any, turn: Any, params: Any, counts: Any,
           out: Any) -> int:  # fmt: skip  # pragma: no cover - compiled
    used, per, groups, dual = ints[0], ints[1], ints[2], ints[3]
    single_return, advanced, rotated, offset = ints[4], ints[5], ints[6], ints[7]
    resolution, far = params[0], params[1]
    gap = np.zeros(12, np.int64)
    block_gap = np.zeros(12, np.int64)
    longest = 1
    for s in range(sweeps.shape[0]):
        longest = max(longest, sweeps[s, 1] - sweeps[s, 0])
    chain = np.zeros(longest, np.int64)
    scratch = np.zeros(max(longest, 12), np.int64)
    packet_t = np.int64(0)
    chosen = np.zeros(32, np.int64)  # a block's kept slots (bit 8: the twin's echo too)
    k = 0
    for s in range(sweeps.shape[0]):
        first, end = sweeps[s, 0], sweeps[s, 1]
        first_block, end_block, t_sensor = sweeps[s, 2], sweeps[s, 3], sweeps[s, 4]
        start = k
        if groups == 1:
            gaps_of_sweep(packets, first, end, chain, scratch)
        for p in range(first, end):
            row = packets[p]
            lo = first_block if p == first else 0
            hi = end_block if p == end - 1 else 12
            if hi > used:
                hi = used
            # the gap (0.01°) from each column to the next
            if groups > 1:
                for c in range(groups):
                    q = c if c < groups - 1 else c - 1
                    a = row[q * per * 100 + 2] | (row[q * per * 100 + 3] << 8)
                    b = row[(q + 1) * per * 100 + 2] | (row[(q + 1) * per * 100 + 3] << 8)
                    gap[c] = (np.int64(b) - np.int64(a)) % 36000
                low = gap[0]
                for c in range(1, groups):
                    low = min(low, gap[c])
                jump = False
                for c in range(groups):
                    jump |= gap[c] > 2 * low + 20
                if jump:  # a limited field of view's edge: the packet's median gap
                    typical = upper_median(gap, groups, scratch)
                    for c in range(groups):
                        if gap[c] > 2 * typical + 20:
                            gap[c] = typical
            else:
                gap[0] = chain[p - first]
            for b in range(used):
                block_gap[b] = gap[b // per]
            packet_t = stamps[p] * 1000 - t_sensor
            for b in range(lo, hi):
                # Indices are unsigned from here: numba then skips its negative-index
                # wraparound on each access (a third of this loop's instructions).
                base = U(b * 100 + 4)
                azimuth = np.int64(row[U(b * 100 + 2)] | (row[U(b * 100 + 3)] << 8))
                gap_b = block_gap[b]
                partner, is_last, kind_b = blocks[1, b], blocks[2, b] == 1, blocks[0, b]
                # The slots to keep, listed without a branch: whether a return is zero
                # (or, in dual-return packets, the echo its twin block repeats) follows
                # the scene, so a branch on it mispredicts for a quarter of the slots.
                kept = 0
                if partner >= 0:
                    twin = U(partner * 100 + 4)
                    for slot in range(32):
                        at = base + U(3 * slot)
                        other = twin + U(3 * slot)
                        raw = row[at] | (row[at + U(1)] << 8)
                        same = raw == (row[other] | (row[other + U(1)] << 8))
                        chosen[U(kept)] = slot | (np.int64(same) << 8)
                        # one echo: kept once, as the strongest (``return`` BOTH)
                        kept += (raw != 0) & ~(same & is_last)
                else:
                    for slot in range(32):
                        at = base + U(3 * slot)
                        chosen[U(kept)] = slot
                        kept += (row[at] | row[at + U(1)]) != 0
                for i in range(kept):
                    slot = chosen[U(i)] & 255
                    at = base + U(3 * slot)
                    raw = row[at] | (row[at + U(1)] << 8)
                    kind = single_return if not dual else (BOTH if chosen[U(i)] > 255 else kind_b)
                    place = U(b * 32 + slot)
                    step = (gap_b * itab[0, place] + _HALF) >> FIXED
                    step += azimuth
                    if step >= 72000:
                        step -= 36000
                    elif step < 0:
                        step += 36000
                    cos_a, sin_a = turn[0, U(step)], turn[1, U(step)]
                    if rotated:  # azimuth - rotational correction: (cos + i sin) * exp(-i rot)
                        ur, ui = ftab[2, place], ftab[3, place]
                        cos_a, sin_a = cos_a * ur - sin_a * ui, cos_a * ui + sin_a * ur
                    r = f32(raw) * resolution
                    cos_v, sin_v = ftab[0, place], ftab[1, place]
                    point = out[U(k)]
                    if advanced:
                        dist = ftab[5, place]
                        xy = (r + dist) * cos_v
                        near = f32(1.0) if r < far else f32(0.0)
                        corr_x = (far - abs(xy * sin_a)) * ftab[7, place] * near + dist
                        corr_y = (far - abs(xy * cos_a)) * ftab[8, place] * near + dist
                        horiz = ftab[6, place]
                        point.x = (corr_x + r) * cos_v * sin_a - horiz * cos_a
                        point.y = (corr_y + r) * cos_v * cos_a + horiz * sin_a
                        z = ((corr_x + corr_y) * f32(0.5) + r) * sin_v
                        value = f32(raw) * f32(-1.0 / 65535.0) + f32(1.0)
                        value = abs(value * value - ftab[9, place]) * ftab[10, place]
                        value += f32(row[at + U(2)])
                        value = max(value, ftab[11, place])
                        point.intensity = min(value, ftab[12, place])
                    else:
                        horizontal = r * cos_v
                        point.x = horizontal * sin_a
                        point.y = horizontal * cos_a
                        z = r * sin_v
                        point.intensity = f32(row[at + U(2)])
                    if offset:
                        z += ftab[4, place]
                    point.z = z
                    point.ring = itab[2, place]
                    point.t_offset = packet_t + itab[1, place]
                    point["return"] = kind
                    k += 1
        counts[s] = k - start
    return k


_HOUR_US = 3_600_000_000


@numba.njit(nogil=True, cache=True, boundscheck=False)
def check(packets: Any, expected: Any, used: Any, mode_ok: Any, hdl64e: bool, codes: Any,
          where: Any, stamps: Any, dual: Any) -> int:  # fmt: skip  # pragma: no cover
    """The SweepAssembler's checks of a batch in one pass: each packet's ``dual`` flag
    and timestamp, and in ``codes`` 0 (good) or what is wrong first: 1 a block flag,
    2 an azimuth above 36000, 3 a timestamp past the hour, 4 an unknown return mode
    (not on the HDL-64E, which has none), the block in ``where``. Returns the bad count."""
    bad = 0
    for p in range(packets.shape[0]):
        row = packets[p]
        mode = row[U(1204)]
        is_dual = ((row[U(2)] == row[U(202)]) & (row[U(3)] == row[U(203)])) if hdl64e \
            else mode == 0x39  # fmt: skip
        dual[p] = is_dual
        stamp = np.int64(row[U(1200)]) | (np.int64(row[U(1201)]) << 8) | \
            (np.int64(row[U(1202)]) << 16) | (np.int64(row[U(1203)]) << 24)  # fmt: skip
        stamps[p] = stamp
        kind = 1 if is_dual else 0
        code, block = 0, 0
        for b in range(used[kind]):
            at = U(b * 100)
            if (row[at] | (row[at + U(1)] << 8)) != expected[kind, b]:
                code, block = 1, b
                break
        if code == 0:
            for b in range(used[kind]):
                at = U(b * 100 + 2)
                if (row[at] | (row[at + U(1)] << 8)) > 36000:
                    code, block = 2, b
                    break
        if code == 0 and stamp >= _HOUR_US:
            code = 3
        if code == 0 and not hdl64e and not mode_ok[mode]:
            code = 4
        codes[p] = code
        where[p] = block
        bad += code != 0
    return bad
