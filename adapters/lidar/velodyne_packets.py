"""Velodyne data packets to sweeps, sans I/O.

Theory of operation. :class:`SweepAssembler` takes packets in batches
(:meth:`~SweepAssembler.push_many`; :meth:`~SweepAssembler.push` is a batch
of one) and does its per-packet work in numpy over the whole batch: validate
every packet (length, block flags of the model's layout, azimuths, timestamp,
return mode), unwrap the timestamps across the hour, and find where the
rotation crosses the cut angle, column by column like VeloView (a sweep ends
where the azimuth, measured from the cut angle, decreases). It returns
:class:`RawSweep` objects holding the packets' bytes as one ``(P, 1206)``
array; :func:`decode_sweep` turns a sweep into points in one numpy pass over
all of its returns (no per-packet or per-point Python loop). Sources run that
step in a worker thread.

Points. Azimuth is interpolated per firing from the column's azimuth and the
gap to the next column (the last column of a packet reuses the previous gap;
a packet of one column, the VLS-128's dual-return one, uses the next
packet's; a gap over twice the packet's median, the edge of a limited field
of view, is taken as the median), rounded to 0.01° like VeloView and
velodyne_decoder. The laser's
calibration is then applied as the ROS driver does (see
:mod:`adapters.lidar.calibration`); positions are in the manual's frame
(x right, y forward, z up). In dual-return packets each firing gives its last
and its strongest return; when both are the same echo, one point is kept (the
strongest block's, as velodyne_decoder does), with ``return`` = 3
(:data:`~adapters.lidar.velodyne_models.BOTH`).

Invariants: every accepted packet contributes each of its blocks to exactly
one sweep, in arrival order (a packet the cut angle splits is in two sweeps,
its columns divided between them); a rejected packet is counted in
``SweepAssembler.rejected`` by reason and contributes nothing; ``push`` never
raises on any input bytes.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from adapters.lidar.points import VELODYNE_DTYPE
from adapters.lidar.velodyne_models import (
    BLOCKS,
    BOTH,
    HDL64E_LAYOUTS,
    HOUR_US,
    LAST,
    RETURN_DUAL,
    RETURN_LAST,
    RETURN_STRONGEST,
    SLOTS,
    STRONGEST,
    PacketLayout,
    VelodyneModel,
    packet_layout,
)
from fusion.errors import ConfigError

PACKET_SIZE = 1206
WRAP_PERIOD_NS = HOUR_US * 1000
"""Velodyne stamps wrap every hour: declared to clock models via ``SensorSpec.meta``."""

_MODE_OK = np.zeros(256, bool)
_MODE_OK[[RETURN_STRONGEST, RETURN_LAST, RETURN_DUAL, 0x00]] = True  # 0: firmware leaving it unset

PACKET_DTYPE = np.dtype(
    [
        (
            "blocks",
            np.dtype(
                [
                    ("flag", "<u2"),
                    ("azimuth", "<u2"),
                    ("returns", np.dtype([("distance", "<u2"), ("intensity", "u1")]), (SLOTS,)),
                ]
            ),
            (BLOCKS,),
        ),
        ("timestamp", "<u4"),
        ("return_mode", "u1"),
        ("product_id", "u1"),
    ]
)
assert PACKET_DTYPE.itemsize == PACKET_SIZE

# flags and azimuths of the 12 blocks, then timestamp, return mode, product ID
_HEADERS = struct.Struct("<" + "HH96x" * BLOCKS + "IBB")


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


# -- decoding ------------------------------------------------------------------------------

# cos/sin per 0.01° over two turns: an azimuth plus its interpolation step needs no modulo
_ANGLES = np.arange(72000, dtype=np.float64) * (np.pi / 18000.0)
_TURN = (np.cos(_ANGLES) + 1j * np.sin(_ANGLES)).astype(np.complex64)  # one gather: cos + i sin
_FIXED = 16  # bits of the fixed-point interpolation fraction


@dataclass(frozen=True, eq=False)
class _Tables:
    """Per-return constants of one model and layout, ``(12, 32)``: by block and slot."""

    cos_v: np.ndarray
    sin_v: np.ndarray
    unturn: np.ndarray | None
    """exp(-i rot): multiplying cos + i sin of the azimuth by it subtracts the correction."""
    v_off: np.ndarray | None
    ring: np.ndarray
    time_ns: np.ndarray
    fraction: np.ndarray
    """Fixed point (``_FIXED`` bits) share of the gap to the next column."""
    advanced: dict[str, np.ndarray] = field(default_factory=dict)


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
    v_off = cal.column("vert_offset_m")[laser]
    f32 = np.float32
    advanced = {}
    if cal.advanced:
        dist = cal.column("dist_correction_m")
        x, y = cal.column("dist_correction_x_m"), cal.column("dist_correction_y_m")
        two_point = (x != 0) & (y != 0)
        columns = {
            "dist_correction_m": dist,
            "horiz_offset_m": cal.column("horiz_offset_m"),
            "gain_x": np.where(two_point, (x - dist) / (_FAR - _NEAR_X), 0.0),
            "gain_y": np.where(two_point, (y - dist) / (_FAR - _NEAR_Y), 0.0),
            "focal_term": (1 - cal.column("focal_distance") / 131.0) ** 2,
            "focal_gain": 256.0 * cal.column("focal_slope"),
            "min_intensity": cal.column("min_intensity", 0.0),
            "max_intensity": cal.column("max_intensity", 255.0),
        }
        advanced = {name: values[laser].astype(f32) for name, values in columns.items()}
    tables = _Tables(
        cos_v=np.cos(vert).astype(f32),
        sin_v=np.sin(vert).astype(f32),
        unturn=np.exp(-1j * rot).astype(np.complex64) if rot.any() else None,
        v_off=v_off.astype(f32) if v_off.any() else None,
        ring=cal.rings[laser],
        time_ns=layout.time_ns.astype(np.int32),
        fraction=np.round(layout.fraction.astype(np.float64) * (1 << _FIXED)).astype(np.int32),
        advanced=advanced,
    )
    _TABLE_CACHE[key] = (model, layout, tables)
    return tables


def decode_sweep(sweep: RawSweep, model: VelodyneModel) -> np.ndarray:
    """Decode a sweep's returns into points (see the module docstring)."""
    return decode_sweeps([sweep], model)[0]


_RUN_PACKETS = 96
"""Sweeps are decoded together up to this many packets: enough to spread a pass's fixed
cost (some eighty numpy calls) over small sweeps, few enough that its temporaries stay
in the CPU's cache (one pass over a 512-packet batch is several times slower)."""


def decode_sweeps(sweeps: Sequence[RawSweep], model: VelodyneModel) -> list[np.ndarray]:
    """Decode several sweeps (a pcap batch's) together, in runs of one return mode and
    at most ``_RUN_PACKETS`` packets. The same points as :func:`decode_sweep` on each."""
    out: list[np.ndarray] = []
    i = 0
    while i < len(sweeps):
        first, j = sweeps[i], i + 1
        if first.layout.groups > 1:  # one-column packets interpolate across packets
            size = len(first.packets)
            while (j < len(sweeps) and sweeps[j].layout is first.layout
                   and sweeps[j].mode == first.mode
                   and size + len(sweeps[j].packets) <= _RUN_PACKETS):  # fmt: skip
                size += len(sweeps[j].packets)
                j += 1
        out += _decode_run(sweeps[i:j], model)
        i = j
    return out


def _decode_run(run: Sequence[RawSweep], model: VelodyneModel) -> list[np.ndarray]:
    """The returns to keep are chosen on the ``(packets, 12, 32)`` grid; every
    input (distance, per-place tables, per-block azimuth and gap) is then taken
    at the kept returns only, and all arithmetic runs over the points, so the
    cost follows the points, not the grid (dual-return and sparse packets)."""
    layout = run[0].layout
    sizes = np.array([len(s.packets) for s in run])
    ends = np.cumsum(sizes)
    starts = ends - sizes
    packets = np.ascontiguousarray(
        run[0].packets if len(run) == 1 else np.concatenate([s.packets for s in run])
    )
    count = len(packets)
    if count == 0:
        return [np.empty(0, VELODYNE_DTYPE) for _ in run]
    tables = _tables(model, layout)
    blocks = packets.reshape(-1).view(PACKET_DTYPE)["blocks"]  # (P, 12)
    returns = blocks["returns"]
    distance = returns["distance"]  # (P, 12, 32), strided
    azimuth = blocks["azimuth"].astype(np.int32)
    per = layout.blocks_per_group
    columns = azimuth[:, 0 : layout.used_blocks : per]
    gap = np.zeros_like(columns)
    if columns.shape[1] > 1:
        gap[:, :-1] = columns[:, 1:] - columns[:, :-1]
        gap[:, -1] = gap[:, -2]
    elif count > 1:
        gap[:-1, 0] = columns[1:, 0] - columns[:-1, 0]
        gap[-1, 0] = gap[-2, 0]
    gap %= 36000
    # A jump (the edge of a limited field of view, lost columns) is no rotation to
    # interpolate across: such a gap is replaced by the packet's typical one.
    axis = 1 if gap.shape[1] > 1 else None
    if (gap > 2 * gap.min(axis=axis, keepdims=True) + 20).any():  # cheap test first
        ordered: np.ndarray = np.sort(gap, axis=axis).reshape(gap.shape if axis else (1, -1))
        middle = ordered.shape[1] // 2
        typical = ordered[:, middle : middle + 1]  # the median of each packet's gaps
        gap = np.where(gap > 2 * typical + 20, typical, gap)
    block_gap = np.zeros((count, BLOCKS), np.int32)
    block_gap[:, : layout.used_blocks] = np.repeat(gap, per, axis=1)

    keep = distance != 0
    for sweep, start, end in zip(run, starts.tolist(), ends.tolist(), strict=True):
        keep[start, : sweep.first_block] = False
        keep[end - 1, sweep.end_block :] = False
    keep[:, layout.used_blocks :] = False
    same = None
    if layout.dual:
        same = np.zeros((count, BLOCKS, SLOTS), bool)
        for last, strongest in layout.pairs:
            one = distance[:, last] == distance[:, strongest]  # one echo: kept once
            keep[:, last] &= ~one
            same[:, strongest] = one
    # Indices of the kept returns (intp: numpy converts any other index type on each use):
    # in the grid, their packet, their block, their place in the packet (block * 32 + slot).
    selected = np.flatnonzero(keep)
    n = len(selected)
    per_packet = keep.reshape(count, -1).sum(axis=1)
    packet = np.repeat(np.arange(count), per_packet)
    place = selected - packet * (BLOCKS * SLOTS)
    block = selected >> 5

    def at(table: np.ndarray) -> np.ndarray:
        """A per-place (12 x 32) table at the kept returns: a gather from a tiny table
        (cheaper than a boolean mask, which branches on every slot of the grid)."""
        picked: np.ndarray = table.reshape(-1)[place]
        return picked

    # azimuth in 0.01°: the block's plus its share of the gap to the next column
    step = block_gap.reshape(-1)[block] * at(tables.fraction)
    step += 1 << (_FIXED - 1)
    step >>= _FIXED
    step += azimuth.reshape(-1)[block]
    turn = _TURN[step]
    if tables.unturn is not None:  # azimuth - rotational correction, one complex product
        turn *= at(tables.unturn)
    cos_a, sin_a = turn.real, turn.imag
    raw = np.ascontiguousarray(distance).reshape(-1)[selected]
    r = raw.astype(np.float32)
    r *= np.float32(model.distance_resolution_m)
    out = np.empty(n, VELODYNE_DTYPE)
    intensity = np.ascontiguousarray(returns["intensity"]).reshape(-1)[selected]
    if tables.advanced:
        _advanced(out, r, raw, intensity, cos_a, sin_a, tables, at)
    else:
        horizontal = r * at(tables.cos_v)
        out["x"] = horizontal * sin_a
        out["y"] = horizontal * cos_a
        r *= at(tables.sin_v)
        if tables.v_off is not None:
            r += at(tables.v_off)
        out["z"] = r
        out["intensity"] = intensity
    out["ring"] = at(tables.ring)
    packet_t = np.concatenate(
        [s.stamps_us.astype(np.int64) * 1000 - s.t_sensor for s in run]
    ).astype(np.int32)  # each packet's time from the start of its sweep
    t = packet_t[packet]
    t += at(tables.time_ns)
    out["t_offset"] = t
    if same is not None:
        kind = at(np.broadcast_to(layout.block_return[:, None], (BLOCKS, SLOTS)).copy())
        kind[same.reshape(-1)[selected]] = BOTH
        out["return"] = kind
    else:
        out["return"] = LAST if run[0].mode == RETURN_LAST else STRONGEST
    if len(run) == 1:
        return [out]
    return np.split(out, np.cumsum(np.add.reduceat(per_packet, starts))[:-1])


def _advanced(out: np.ndarray, r: np.ndarray, raw: np.ndarray, intensity: np.ndarray,
              cos_a: np.ndarray, sin_a: np.ndarray, tables: _Tables,
              at: Callable[[np.ndarray], np.ndarray]) -> None:  # fmt: skip
    """The HDL-64E's corrections: two-point distance, horizontal offset, intensity
    (the HDL-64E S3 manual's formulas, as the ROS driver and velodyne_decoder apply them).

    With ``d`` the far distance correction and ``xx = |(r + d) cos(v) sin(a)|``, the
    x correction is ``d + (1 - (xx - 2.40) / (25.04 - 2.40)) (d_x - d)`` below 25.04 m:
    ``d + (25.04 - xx) g_x`` with the per-laser ``g_x = (d_x - d) / (25.04 - 2.40)``
    (0 without a two-point calibration); likewise y. In place, to spare temporaries.
    """
    a = tables.advanced
    far = np.float32(_FAR)
    dist, cos_v, sin_v = at(a["dist_correction_m"]), at(tables.cos_v), at(tables.sin_v)
    xy = r + dist
    xy *= cos_v
    near = (r < far).astype(np.float32)
    corrections = []
    for trig, gain in ((sin_a, "gain_x"), (cos_a, "gain_y")):
        c = xy * trig
        np.abs(c, out=c)
        np.subtract(far, c, out=c)
        c *= at(a[gain])
        c *= near
        c += dist
        corrections.append(c)
    corr_x, corr_y = corrections
    horiz = at(a["horiz_offset_m"])
    x = corr_x + r
    x *= cos_v
    x *= sin_a
    x -= horiz * cos_a
    out["x"] = x
    y = corr_y + r
    y *= cos_v
    y *= cos_a
    y += horiz * sin_a
    out["y"] = y
    z = corr_x + corr_y
    z *= np.float32(0.5)
    z += r
    z *= sin_v
    if tables.v_off is not None:
        z += at(tables.v_off)
    out["z"] = z
    value = raw.astype(np.float32)
    value *= np.float32(-1.0 / 65535.0)
    value += 1
    value *= value
    value -= at(a["focal_term"])
    np.abs(value, out=value)
    value *= at(a["focal_gain"])
    value += intensity
    out["intensity"] = np.clip(value, at(a["min_intensity"]), at(a["max_intensity"]))


_FAR, _NEAR_X, _NEAR_Y = 25.04, 2.40, 1.93  # m: the two-point calibration's points


# -- assembling ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Builder:
    """The sweep in progress: row ranges of batch arrays, not yet joined."""

    layout: PacketLayout
    mode: int
    partial: bool
    first_block: int = 0
    end_block: int = BLOCKS
    chunks: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    rows: int = 0
    t_arrival: int | None = None

    def sweep(self) -> RawSweep:
        if len(self.chunks) == 1:
            packets, stamps = self.chunks[0]
        else:
            packets = np.concatenate([c[0] for c in self.chunks])
            stamps = np.concatenate([c[1] for c in self.chunks])
        return RawSweep(
            packets,
            stamps,
            self.layout,
            self.mode,
            self.first_block,
            self.end_block,
            self.t_arrival,
            self.partial,
        )


class SweepAssembler:
    """Cut a stream of packets into rotations (sans I/O; never raises on input).

    ``cut_angle`` (degrees) is where one sweep ends and the next begins; the
    default 0° reproduces VeloView's frames. A sweep also ends early (marked
    ``partial``) when the next packet is more than ``max_gap_ns`` after the
    previous one, so a pause in the data never produces a sweep spanning it,
    when the return mode changes, and when it holds ``max_sweep_packets``
    packets (default: twice a full rotation at 5 Hz, the slowest rate), so a
    stream whose azimuth never crosses the cut angle costs bounded memory:
    such a sweep is emitted as partial and counted (``sweep_too_long``,
    through ``on_reject``, which is told every rejected packet too).
    """

    def __init__(
        self,
        model: VelodyneModel,
        *,
        cut_angle: float = 0.0,
        max_gap_ns: int = 100_000_000,
        max_sweep_packets: int | None = None,
        on_reject: Callable[[str, str], None] | None = None,
    ) -> None:
        if not 0.0 <= cut_angle < 360.0:
            raise ConfigError(f"cut_angle must be in [0, 360) degrees, got {cut_angle}")
        self.model = model
        self.cut = round(cut_angle * 100)
        self.max_gap_us = max_gap_ns // 1000
        self.max_sweep_packets = (
            max(1, max_sweep_packets)
            if max_sweep_packets is not None
            else math.ceil(2 * 200_000 / model.packet_us())  # two rotations' worth at 5 Hz
        )
        self.long_sweeps = 0
        """Sweeps cut at ``max_sweep_packets`` (the azimuth did not cross the cut angle)."""
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        """Packets dropped, by reason: bad_length, bad_block_flag, bad_azimuth,
        bad_timestamp, bad_return_mode."""
        self.last_error: str | None = None
        self.product_ids: Counter[int] = Counter()
        self.dual_packets = 0
        self.last_index = -1
        """Index (in arrival order) of the packet last rejected."""
        self._on_reject = on_reject
        self._hdl64e = model.layout in HDL64E_LAYOUTS
        self._single = packet_layout(model, False)
        self._dual = packet_layout(model, True)
        expected = [np.zeros(BLOCKS, np.int64), np.zeros(BLOCKS, np.int64)]
        for i, lay in enumerate((self._single, self._dual)):
            expected[i][: lay.used_blocks] = lay.flags
        self._flags = np.stack(expected)  # (2, 12): single, dual
        self._flag_tuples = (self._single.flags, self._dual.flags)
        self._used = np.stack(
            [np.arange(BLOCKS) < lay.used_blocks for lay in (self._single, self._dual)]
        )
        self._hours = 0
        self._last_ts: int | None = None
        self._last_stamp: int | None = None
        self._last_shifted: int | None = None
        self._last_kind: tuple[bool, int] | None = None
        self._current: _Builder | None = None

    # -- input -----------------------------------------------------------------------------

    def push(self, payload: bytes, t_arrival: int | None = None) -> list[RawSweep]:
        """Take one UDP payload; return the sweeps it completed (usually none).

        The same rules as :meth:`push_many` in plain Python: a live packet at a
        time costs microseconds, not the fixed cost of a dozen numpy calls.
        """
        index = self.accepted + sum(self.rejected.values())
        if len(payload) != PACKET_SIZE:
            self._reject(
                "bad_length",
                f"packet {index}: expected {PACKET_SIZE} bytes, got {len(payload)}",
                index,
            )
            return []
        fields = _HEADERS.unpack(payload)
        flags, azimuth = fields[0:24:2], fields[1:24:2]
        ts, mode, product = fields[24:]
        dual = azimuth[0] == azimuth[2] if self._hdl64e else mode == RETURN_DUAL
        layout = self._dual if dual else self._single
        expected = self._flag_tuples[dual]
        problem = None
        for b in range(layout.used_blocks):
            if flags[b] != expected[b]:
                want = expected[b]
                problem = (
                    "bad_block_flag",
                    f"block {b} flag is 0x{flags[b]:04X} at byte {b * 100}, "
                    f"expected 0x{want:04X} (bytes {want & 0xFF:02X} {want >> 8:02X})",
                )
                break
        else:
            for b in range(layout.used_blocks):
                if azimuth[b] > 36000:
                    problem = ("bad_azimuth", f"block {b} azimuth {azimuth[b]} is above 36000")
                    break
        if problem is None and ts >= HOUR_US:
            problem = ("bad_timestamp", f"timestamp {ts} µs is not within an hour (< {HOUR_US})")
        if problem is None and not self._hdl64e and not _MODE_OK[mode]:
            problem = (
                "bad_return_mode",
                f"return mode 0x{mode:02X} is unknown "
                "(expected 0x37 strongest, 0x38 last or 0x39 dual)",
            )
        if problem is not None:
            self._reject(problem[0], f"packet {index}: {problem[1]}", index)
            return []
        self.accepted += 1
        self.product_ids[product] += 1
        self.dual_packets += dual
        if self._hdl64e:
            mode = RETURN_DUAL if dual else RETURN_STRONGEST
        if self._last_ts is not None and ts < self._last_ts - HOUR_US // 2:
            self._hours += 1
        self._last_ts = ts
        stamp = self._hours * HOUR_US + ts
        last = self._last_stamp
        broken = last is not None and (stamp - last > self.max_gap_us or stamp < last)
        broken |= self._last_kind is not None and self._last_kind != (dual, mode)
        self._last_stamp, self._last_kind = stamp, (dual, mode)
        per = layout.blocks_per_group
        events: list[tuple[int, str]] = [(0, "break")] if broken else []
        previous = None if broken else self._last_shifted
        for g in range(layout.groups):
            shifted = azimuth[g * per] - self.cut
            if shifted < 0:
                shifted += 36000  # 36000 stays 36000 when cut is 0, as VeloView sees it
            if previous is not None and shifted < previous:
                events.append((g, "cut"))
            previous = shifted
        self._last_shifted = previous
        done: list[RawSweep] = []
        row = np.frombuffer(payload, np.uint8).reshape(1, PACKET_SIZE)
        self._emit(row, np.array([stamp], np.int64), [t_arrival], events, layout, mode, done)
        return done

    def push_many(
        self, payloads: Sequence[bytes], arrivals: Sequence[int | None] | None = None
    ) -> list[RawSweep]:
        """Take a batch of payloads in arrival order; return the sweeps they completed."""
        base = self.accepted + sum(self.rejected.values())
        if arrivals is None:
            arrivals = [None] * len(payloads)
        problems: list[tuple[int, str, str]] = []
        good = [i for i, p in enumerate(payloads) if len(p) == PACKET_SIZE]
        if len(good) < len(payloads):
            for i, p in enumerate(payloads):
                if len(p) != PACKET_SIZE:
                    problems.append(
                        (i, "bad_length", f"expected {PACKET_SIZE} bytes, got {len(p)}")
                    )
        done: list[RawSweep] = []
        if good:
            joined = b"".join(
                payloads if len(good) == len(payloads) else [payloads[i] for i in good]
            )
            raw = np.frombuffer(joined, np.uint8)
            packets = raw.reshape(len(good), PACKET_SIZE)
            ok = self._validate(packets, good, problems)
            if not ok.all():
                packets = packets[ok]
                good = [g for g, k in zip(good, ok.tolist(), strict=True) if k]
            if len(good):
                done = self._assemble(packets, [arrivals[i] for i in good])
        for i, reason, message in sorted(problems):
            self._reject(reason, f"packet {base + i}: {message}", base + i)
        return done

    def _validate(self, packets: np.ndarray, where: list[int],
                  problems: list[tuple[int, str, str]]) -> np.ndarray:  # fmt: skip
        """Mask of the packets to keep; the others are added to ``problems``."""
        words = packets[:, :1200].reshape(-1, BLOCKS, 50, 2)
        flags = words[:, :, 0, 0].astype(np.int64) | (words[:, :, 0, 1].astype(np.int64) << 8)
        azimuth = words[:, :, 1, 0].astype(np.int64) | (words[:, :, 1, 1].astype(np.int64) << 8)
        footer = np.ascontiguousarray(packets[:, 1200:1204]).view("<u4")[:, 0]
        mode = packets[:, 1204]
        dual = (azimuth[:, 0] == azimuth[:, 2]) if self._hdl64e else (mode == RETURN_DUAL)
        kind = dual.astype(np.intp)
        used = self._used[kind]
        bad_flag = ((flags != self._flags[kind]) & used).any(axis=1)
        bad_azimuth = ((azimuth > 36000) & used).any(axis=1)
        bad_stamp = footer >= HOUR_US
        bad_mode = np.zeros_like(bad_stamp) if self._hdl64e else ~_MODE_OK[mode]
        ok: np.ndarray = ~(bad_flag | bad_azimuth | bad_stamp | bad_mode)
        if ok.all():
            return ok
        for row in np.flatnonzero(~ok).tolist():
            i = where[row]
            if bad_flag[row]:
                b = int(np.flatnonzero((flags[row] != self._flags[kind[row]]) & used[row])[0])
                want = int(self._flags[kind[row], b])
                problems.append(
                    (
                        i,
                        "bad_block_flag",
                        f"block {b} flag is 0x{int(flags[row, b]):04X} at byte {b * 100}, "
                        f"expected 0x{want:04X} (bytes {want & 0xFF:02X} {want >> 8:02X})",
                    )
                )
            elif bad_azimuth[row]:
                b = int(np.flatnonzero(azimuth[row] > 36000)[0])
                problems.append(
                    (i, "bad_azimuth", f"block {b} azimuth {int(azimuth[row, b])} is above 36000")
                )
            elif bad_stamp[row]:
                problems.append(
                    (
                        i,
                        "bad_timestamp",
                        f"timestamp {int(footer[row])} µs is not within an hour (< {HOUR_US})",
                    )
                )
            else:
                problems.append(
                    (
                        i,
                        "bad_return_mode",
                        f"return mode 0x{int(mode[row]):02X} is unknown "
                        "(expected 0x37 strongest, 0x38 last or 0x39 dual)",
                    )
                )
        return ok

    def _assemble(self, packets: np.ndarray, arrivals: list[int | None]) -> list[RawSweep]:
        n = len(packets)
        self.accepted += n
        if n == 1:
            self.product_ids[int(packets[0, 1205])] += 1
        else:
            products, counts = np.unique(packets[:, 1205], return_counts=True)
            self.product_ids.update(dict(zip(products.tolist(), counts.tolist(), strict=True)))
        words = packets[:, :1200].reshape(n, BLOCKS, 50, 2)
        azimuth = words[:, :, 1, 0].astype(np.int64) | (words[:, :, 1, 1].astype(np.int64) << 8)
        ts = np.ascontiguousarray(packets[:, 1200:1204]).view("<u4")[:, 0].astype(np.int64)
        # Unwrap the hour: a stamp far below the previous one means the hour rolled over.
        previous = np.empty(n, np.int64)
        previous[0] = ts[0] if self._last_ts is None else self._last_ts
        previous[1:] = ts[:-1]
        hours = self._hours + np.cumsum(ts < previous - HOUR_US // 2)
        stamps = hours * HOUR_US + ts
        self._hours, self._last_ts = int(hours[-1]), int(ts[-1])
        mode = packets[:, 1204].astype(np.int64)
        dual = (azimuth[:, 0] == azimuth[:, 2]) if self._hdl64e else (mode == RETURN_DUAL)
        if self._hdl64e:
            mode = np.where(dual, RETURN_DUAL, RETURN_STRONGEST)
        self.dual_packets += int(dual.sum())
        # Breaks: a gap in time, time going back, or another return mode than the packet before.
        before = np.empty(n, np.int64)
        before[0] = stamps[0] if self._last_stamp is None else self._last_stamp
        before[1:] = stamps[:-1]
        step = stamps - before
        kind_change = np.zeros(n, bool)
        kind_change[1:] = mode[1:] != mode[:-1]
        if self._last_kind is not None:
            kind_change[0] = self._last_kind != (bool(dual[0]), int(mode[0]))
        breaks = (step > self.max_gap_us) | (step < 0) | kind_change
        self._last_stamp = int(stamps[-1])
        self._last_kind = (bool(dual[-1]), int(mode[-1]))
        done: list[RawSweep] = []
        # Runs of one return mode (nearly always the whole batch).
        starts = sorted({0, *(np.flatnonzero(mode[1:] != mode[:-1]) + 1).tolist()})
        for a, b in zip(starts, [*starts[1:], n], strict=True):
            layout = self._dual if dual[a] else self._single
            self._run(
                packets[a:b],
                stamps[a:b],
                azimuth[a:b],
                breaks[a:b],
                arrivals[a:b],
                layout,
                int(mode[a]),
                done,
            )
        return done

    def _run(self, packets: np.ndarray, stamps: np.ndarray, azimuth: np.ndarray,
             breaks: np.ndarray, arrivals: list[int | None], layout: PacketLayout,
             mode: int, done: list[RawSweep]) -> None:  # fmt: skip
        """Cut packets of one layout into sweeps, appending finished ones to ``done``."""
        per = layout.blocks_per_group
        groups = layout.groups
        shifted = azimuth[:, 0 : layout.used_blocks : per].reshape(-1) - self.cut
        shifted[shifted < 0] += 36000  # 36000 stays 36000 when cut is 0, as VeloView sees it
        previous = np.empty_like(shifted)
        previous[1:] = shifted[:-1]
        previous[0] = shifted[0] if self._last_shifted is None else self._last_shifted
        crossed = shifted < previous
        heads = np.flatnonzero(breaks) * groups
        crossed[heads] = False  # no crossing is looked for across a break
        self._last_shifted = int(shifted[-1])
        events = sorted(
            [(int(k), "cut") for k in np.flatnonzero(crossed)] + [(int(k), "break") for k in heads]
        )
        self._emit(packets, stamps, arrivals, events, layout, mode, done)

    def _emit(self, packets: np.ndarray, stamps: np.ndarray, arrivals: list[int | None],
              events: list[tuple[int, str]], layout: PacketLayout, mode: int,
              done: list[RawSweep]) -> None:  # fmt: skip
        """Append the run's columns to sweeps, ending one at each cut or break."""
        position = 0
        total = len(packets) * layout.groups
        for k, what in events:
            self._append(packets, stamps, arrivals, position, k, layout, mode, done)
            current = self._current
            if what == "break":
                if current is not None and current.rows:
                    current.partial = True
                    done.append(current.sweep())
                self._current = _Builder(layout, mode, partial=True)
            else:
                if current is not None and current.rows:
                    done.append(current.sweep())
                self._current = _Builder(layout, mode, partial=False)
            position = k
        self._append(packets, stamps, arrivals, position, total, layout, mode, done)

    def _append(self, packets: np.ndarray, stamps: np.ndarray, arrivals: list[int | None],
                start: int, stop: int, layout: PacketLayout, mode: int,
                done: list[RawSweep]) -> None:  # fmt: skip
        """Add columns ``[start, stop)`` of the run to the sweep in progress."""
        if stop <= start:
            return
        groups, per = layout.groups, layout.blocks_per_group
        full = groups * per  # the blocks of a whole packet (8 in a VLS-128 dual-return one)
        first_row, last_row = start // groups, (stop - 1) // groups
        current = self._current
        if current is None or current.layout is not layout or current.mode != mode:
            if current is not None and current.rows:
                current.partial = True
                done.append(current.sweep())
            current = self._current = _Builder(layout, mode, partial=True)
        if not current.rows:
            current.first_block = (start % groups) * per
        elif current.end_block < full:  # this packet is already in the sweep (a cut split it)
            first_row += 1
        row = first_row
        while row <= last_row:
            room = self.max_sweep_packets - current.rows
            take = min(last_row + 1 - row, room)
            current.chunks.append((packets[row : row + take], stamps[row : row + take]))
            current.rows += take
            row += take
            current.t_arrival = arrivals[row - 1]
            current.end_block = ((stop - 1) % groups + 1) * per if row > last_row else full
            if current.rows >= self.max_sweep_packets:
                current.end_block = full if row <= last_row else current.end_block
                current.partial = True
                done.append(current.sweep())
                self.long_sweeps += 1
                self.last_error = (
                    f"a sweep reached {self.max_sweep_packets} packets without the azimuth "
                    "crossing the cut angle; emitted as partial"
                )
                if self._on_reject is not None:
                    self._on_reject("sweep_too_long", self.last_error)
                current = self._current = _Builder(layout, mode, partial=True)
                self._last_shifted = None

    def flush(self) -> list[RawSweep]:
        """End of stream: the sweep in progress, marked partial (if it has packets)."""
        current, self._current = self._current, None
        self._last_shifted = None
        if current is None or not current.rows:
            return []
        current.partial = True
        return [current.sweep()]

    def _reject(self, reason: str, message: str, index: int) -> None:
        self.rejected[reason] += 1
        self.last_error = message
        self.last_index = index
        if self._on_reject is not None:
            self._on_reject(reason, message)
