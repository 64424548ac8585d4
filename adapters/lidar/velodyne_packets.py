"""Velodyne data packets to sweeps, sans I/O.

Theory of operation. A data packet is 1206 bytes: 12 blocks of (flag 0xEEFF,
azimuth in 0.01°, 32 x (distance u16, intensity u8)), then a u32 timestamp in
microseconds past the top of the hour, a return-mode byte and a product-ID
byte. :class:`SweepAssembler` takes payloads one at a time and does only cheap
per-packet work in Python: validate the packet, unwrap its timestamp across
the hour, and find where the rotation crosses the cut angle (block by block,
like VeloView: a sweep ends where the azimuth, measured from the cut angle,
decreases). It returns :class:`RawSweep` objects that hold the packets'
bytes; :meth:`RawSweep.decode` turns all of a sweep's packets into points in
one numpy pass, without a per-point (or per-packet) Python loop. Sources run
that step in a worker thread.

Invariants: every accepted packet contributes each of its blocks to exactly
one sweep, in arrival order; a rejected packet is counted in
``SweepAssembler.rejected`` by reason and contributes nothing; ``push`` never
raises on any input bytes.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from adapters.lidar.calibration import VelodyneModel
from adapters.lidar.points import VELODYNE_DTYPE

PACKET_SIZE = 1206
BLOCKS = 12
BLOCK_FLAG = 0xEEFF
HOUR_US = 3_600_000_000
WRAP_PERIOD_NS = HOUR_US * 1000
"""Velodyne stamps wrap every hour: declared to clock models via ``SensorSpec.meta``."""

RETURN_STRONGEST, RETURN_LAST, RETURN_DUAL = 0x37, 0x38, 0x39
_SINGLE_RETURN_MODES = (RETURN_STRONGEST, RETURN_LAST, 0x00)  # 0: firmware that leaves it unset

PACKET_DTYPE = np.dtype(
    [
        (
            "blocks",
            np.dtype(
                [
                    ("flag", "<u2"),
                    ("azimuth", "<u2"),
                    ("returns", np.dtype([("distance", "<u2"), ("intensity", "u1")]), (32,)),
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

    packets: list[bytes] = field(default_factory=list)
    stamps_us: list[int] = field(default_factory=list)
    """Unwrapped packet timestamps (µs since the top of the sensor's first hour)."""
    first_block: int = 0
    end_block: int = BLOCKS
    t_arrival: int | None = None
    """Arrival (or capture) time of the packet that completed the sweep."""
    partial: bool = False
    """True for a sweep that does not span a full rotation (first, last, after a gap)."""

    @property
    def t_sensor(self) -> int:
        """Sensor time (ns) of the sweep's first firing."""
        return self.stamps_us[0] * 1000 + round(self.first_block * self._block_ns)

    _block_ns: float = 0.0

    def decode(self, model: VelodyneModel) -> np.ndarray:
        """All non-zero returns of the sweep as a :data:`VELODYNE_DTYPE` array.

        Points come in packet / block / slot order. Azimuth is interpolated
        per firing from the block's azimuth and the gap to the next block
        (the last block of a packet reuses the previous gap), and positions
        follow the manual's frame: x = r·cosω·sinα, y = r·cosω·cosα, z = r·sinω.
        """
        return decode_blocks(
            np.frombuffer(b"".join(self.packets), PACKET_DTYPE),
            np.asarray(self.stamps_us, np.int64),
            model,
            self.first_block,
            (len(self.packets) - 1) * BLOCKS + self.end_block,
            self.t_sensor,
        )


def decode_blocks(
    packets: np.ndarray,
    stamps_us: np.ndarray,
    model: VelodyneModel,
    start: int,
    stop: int,
    t0_ns: int,
) -> np.ndarray:
    """Decode blocks ``[start, stop)`` (counted over all packets) into points.

    ``t_offset`` of each point is its firing time minus ``t0_ns``.
    """
    tables = _tables(model)
    blocks = packets["blocks"]
    azimuth = blocks["azimuth"].astype(np.float32)  # (P, 12), 0.01°
    gap = np.empty_like(azimuth)
    gap[:, :-1] = np.diff(azimuth, axis=1)
    gap[:, -1] = gap[:, -2]
    gap %= 36000.0  # across the 0° crossing the raw difference is negative
    # Compute densely over (blocks, 32 slots), then keep the non-zero returns:
    # cheaper than gathering per point, since most slots hold a return.
    returns = blocks["returns"].reshape(-1, 32)[start:stop]
    distance = returns["distance"]
    mask = distance != 0
    az = (
        azimuth.reshape(-1)[start:stop, None]
        + gap.reshape(-1)[start:stop, None] * tables["fraction"]
    )
    if model.azimuth_offsets_deg:
        az += tables["az_offset"]
    az = az[mask]
    az *= np.float32(np.pi / 18000.0)
    r = distance[mask].astype(np.float32)
    r *= np.float32(model.distance_resolution_m)
    slot = np.broadcast_to(np.arange(32, dtype=np.intp), distance.shape)[mask]
    horizontal = r * tables["cos_el"][slot]
    out = np.empty(len(r), VELODYNE_DTYPE)
    out["x"] = horizontal * np.sin(az)
    out["y"] = horizontal * np.cos(az)
    out["z"] = r * tables["sin_el"][slot]
    out["intensity"] = returns["intensity"][mask]
    out["ring"] = tables["ring"][slot]
    packet_idx, block_in_packet = np.divmod(np.arange(start, stop), BLOCKS)
    block_ns = np.int64(round(model.block_period_us * 1000.0))
    block_t = stamps_us[packet_idx] * 1000 + block_in_packet * block_ns - t0_ns
    out["t_offset"] = (block_t[:, None] + tables["offset_ns"])[mask]
    return out


_TABLE_CACHE: dict[int, tuple[VelodyneModel, dict[str, np.ndarray]]] = {}


def _tables(model: VelodyneModel) -> dict[str, np.ndarray]:
    cached = _TABLE_CACHE.get(id(model))
    if cached is None or cached[0] is not model:
        cached = (model, model.slot_tables())
        _TABLE_CACHE[id(model)] = cached
    return cached[1]


class SweepAssembler:
    """Cut a stream of packets into rotations (sans I/O; never raises on input).

    ``cut_angle`` (degrees) is where one sweep ends and the next begins; the
    default 0° reproduces VeloView's frames. A sweep also ends early (marked
    ``partial``) when the next packet is more than ``max_gap_ns`` after the
    previous one, so a pause in the data never produces a sweep spanning it,
    and when it holds ``max_sweep_packets`` packets (default: twice a full
    rotation at 5 Hz, the slowest rate), so a stream whose azimuth never
    crosses the cut angle costs bounded memory: such a sweep is emitted as
    partial and counted (``sweep_too_long``, through ``on_reject``).
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
            raise ValueError(f"cut_angle must be in [0, 360) degrees, got {cut_angle}")
        self.model = model
        self.cut = round(cut_angle * 100)
        self.max_gap_us = max_gap_ns // 1000
        packet_us = model.block_period_us * BLOCKS
        self.max_sweep_packets = (
            max(1, max_sweep_packets)
            if max_sweep_packets is not None
            else math.ceil(2 * 200_000 / packet_us)  # two rotations' worth at 5 Hz
        )
        self.long_sweeps = 0
        """Sweeps cut at ``max_sweep_packets`` (the azimuth did not cross the cut angle)."""
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        """Packets dropped, by reason: bad_length, bad_block_flag, bad_azimuth,
        bad_timestamp, dual_return, bad_return_mode."""
        self.last_error: str | None = None
        self._on_reject = on_reject
        self.product_ids: Counter[int] = Counter()
        self._hours = 0
        self._last_ts: int | None = None
        self._last_shifted: int | None = None
        self._current: RawSweep | None = None
        self._block_ns = model.block_period_us * 1000.0

    def push(self, payload: bytes, t_arrival: int | None = None) -> list[RawSweep]:
        """Take one UDP payload; return the sweeps it completed (usually none)."""
        index = self.accepted + sum(self.rejected.values())
        if len(payload) != PACKET_SIZE:
            return self._reject(
                "bad_length",
                f"packet {index}: expected {PACKET_SIZE} bytes, got {len(payload)}",
            )
        fields = _HEADERS.unpack(payload)
        ts, mode, product = fields[-3:]
        for b in range(BLOCKS):
            if fields[2 * b] != BLOCK_FLAG:
                return self._reject(
                    "bad_block_flag",
                    f"packet {index}: block {b} flag is 0x{fields[2 * b]:04X} at byte "
                    f"{b * 100}, expected 0x{BLOCK_FLAG:04X} (bytes FF EE)",
                )
            if fields[2 * b + 1] > 36000:  # 36000 (= 0°) does occur in real captures
                return self._reject(
                    "bad_azimuth",
                    f"packet {index}: block {b} azimuth {fields[2 * b + 1]} is above 36000",
                )
        if ts >= HOUR_US:
            return self._reject(
                "bad_timestamp",
                f"packet {index}: timestamp {ts} µs is not within an hour (< {HOUR_US})",
            )
        if mode not in _SINGLE_RETURN_MODES:
            reason = "dual_return" if mode == RETURN_DUAL else "bad_return_mode"
            return self._reject(
                reason,
                f"packet {index}: return mode 0x{mode:02X} "
                + (
                    "(dual return) is not supported; set the sensor to Strongest or Last return"
                    if mode == RETURN_DUAL
                    else "is unknown (expected 0x37 strongest or 0x38 last)"
                ),
            )
        self.accepted += 1
        self.product_ids[product] += 1
        # Unwrap the hour: a stamp far below the previous one means the hour rolled over.
        if self._last_ts is not None and ts < self._last_ts - HOUR_US // 2:
            self._hours += 1
        stamp = self._hours * HOUR_US + ts
        done: list[RawSweep] = []
        current = self._current
        if current is not None and (
            stamp - current.stamps_us[-1] > self.max_gap_us or stamp < current.stamps_us[-1]
        ):
            current.partial = True
            done.append(current)
            current = None
            self._last_shifted = None
        self._last_ts = ts
        if current is None:
            current = self._new_sweep(partial=True)
        for b in range(BLOCKS):
            # Azimuth from the cut angle; 36000 stays 36000 when cut is 0, as VeloView sees it.
            shifted = fields[2 * b + 1] - self.cut
            if shifted < 0:
                shifted += 36000
            if self._last_shifted is not None and shifted < self._last_shifted:
                # The rotation crossed the cut angle before block b.
                if b > 0 or current.packets:
                    if b > 0:
                        current.packets.append(payload)
                        current.stamps_us.append(stamp)
                        current.end_block = b
                    current.t_arrival = t_arrival
                    done.append(current)
                current = self._new_sweep(partial=False)
                current.first_block = b
            self._last_shifted = shifted
        current.packets.append(payload)
        current.stamps_us.append(stamp)
        current.end_block = BLOCKS
        current.t_arrival = t_arrival
        if len(current.packets) >= self.max_sweep_packets:
            current.partial = True
            done.append(current)
            current = None
            self._last_shifted = None
            self.long_sweeps += 1
            self.last_error = (
                f"packet {index}: a sweep reached {self.max_sweep_packets} packets without the "
                "azimuth crossing the cut angle; emitted as partial"
            )
            if self._on_reject is not None:
                self._on_reject("sweep_too_long", self.last_error)
        self._current = current
        return done

    def flush(self) -> list[RawSweep]:
        """End of stream: the sweep in progress, marked partial (if it has packets)."""
        current, self._current = self._current, None
        self._last_shifted = None
        if current is None or not current.packets:
            return []
        current.partial = True
        return [current]

    def _new_sweep(self, *, partial: bool) -> RawSweep:
        sweep = RawSweep(partial=partial)
        sweep._block_ns = self._block_ns
        return sweep

    def _reject(self, reason: str, message: str) -> list[RawSweep]:
        self.rejected[reason] += 1
        self.last_error = message
        if self._on_reject is not None:
            self._on_reject(reason, message)
        return []
