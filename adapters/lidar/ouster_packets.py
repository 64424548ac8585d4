"""Ouster packets to scans and IMU samples, sans-I/O, decoded by ouster-sdk.

Theory of operation. An Ouster sensor sends one UDP datagram per
``columns_per_packet`` columns of a scan (the *lidar packets*, port 7502) and
one per IMU measurement (port 7503). Their layout depends on the sensor, the
firmware and the UDP profile (``LEGACY``, ``RNG19_RFL8_SIG16_NIR16``,
``RNG15_RFL8_NIR8``, dual returns...), all of which the metadata JSON says,
so the bytes are decoded by the vendor's library, ouster-sdk:
:class:`ouster.sdk.core.FrameBatcher` fills a ``LidarFrame`` packet by packet
and says when one is done, :class:`~ouster.sdk.core.XYZLut` turns ranges into
points. This module adds what a hyperframes source needs around it:

* every datagram is checked first (size, sensor id, column numbers) against
  the metadata, and a bad one is reported through ``on_reject(reason,
  message, units)`` and never reaches the batcher;
* :meth:`ScanAssembler.push` returns each finished scan as an
  :class:`OusterScan` (its ``LidarFrame``, arrival time and packet count),
  :meth:`ScanAssembler.flush` the one in progress at the end;
* :func:`scan_points` makes the scan's point array (:data:`OUSTER_DTYPE`):
  the valid returns of its valid columns, in firing order;
* :func:`imu_sample` decodes an IMU packet into SI units.

A scan's time is that of its first valid column (``t_sensor``, ns on the
sensor's clock: since power-on, or PTP/GPS time if the sensor is set so);
each point's ``t`` is its column's time after that, in ns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

OUSTER_DTYPE = np.dtype(
    [
        ("x", "<f4"),
        ("y", "<f4"),
        ("z", "<f4"),
        ("intensity", "<f4"),
        ("t", "<u4"),
        ("range", "<u4"),
        ("signal", "<u2"),
        ("reflectivity", "<u2"),
        ("near_ir", "<u2"),
        ("ring", "<u2"),
        ("column", "<u2"),
    ]
)
"""What :class:`~adapters.OusterSource` yields per point.

``x, y, z`` metres in the sensor frame (ouster-sdk's ``XYZLut``); ``intensity``
is ``signal`` as float32 (the XYZI convention of :mod:`adapters.lidar.points`,
and what ouster-ros calls intensity); ``t`` ns from the scan's ``t_sensor`` to
the point's column; ``range`` mm; ``signal``, ``reflectivity``, ``near_ir`` as
the sensor sends them; ``ring`` the beam ranked by elevation (0 = lowest);
``column`` the measurement id (0 .. columns_per_frame - 1)."""

IMU_FIELDS = ("ax", "ay", "az", "gx", "gy", "gz")
_G = 9.80665  # the sensor reports acceleration in g ...
_DEG = math.pi / 180.0  # ... and angular velocity in deg/s
_MISMATCH_AFTER = 8  # this many misfits in a row: the metadata is not this stream's


class MetadataMismatch(Exception):
    """The packets do not fit the metadata (raised by :meth:`ScanAssembler.push`)."""


@dataclass
class OusterScan:
    """One finished (or, at the end, unfinished) scan."""

    frame: Any
    """The ``ouster.sdk.core.LidarFrame`` (staggered fields, per-column headers)."""
    t_arrival: int | None
    packets: int
    first: bool
    """The first scan of the stream (it may lack leading columns: not a loss)."""


def describe(info: Any) -> str:
    """One line naming a sensor's metadata, for messages."""
    fmt = info.format
    return (
        f"{info.prod_line} sn {info.sn}, {info.config.lidar_mode}, "
        f"{fmt.pixels_per_column} beams, {fmt.columns_per_packet} columns per packet, "
        f"profile {fmt.udp_profile_lidar}"
    )


class ScanAssembler:
    """Checks lidar packets against the metadata and batches them into scans."""

    def __init__(self, info: Any, *, on_reject: Callable[[str, str, int], None]) -> None:
        from ouster.sdk import core

        self._core = core
        self.info = info
        self.format = core.PacketFormat(info)
        self.packet_size = int(self.format.lidar_packet_size)
        self.imu_packet_size = int(self.format.imu_packet_size)
        self.columns = int(info.format.columns_per_frame)
        lo, hi = info.format.column_window
        self.window = (int(lo), int(hi))
        self._on_reject = on_reject
        self._batcher = core.FrameBatcher(info)
        self._batcher.set_max_cache_size(1)  # a scan ends at the first packet of the next
        self._frame = core.LidarFrame(info)
        self._counts: Counter[int] = Counter()  # accepted packets by scan (frame id)
        self._first = True
        self.accepted = 0
        self._misfits: list[str] = []  # rejections since the last good packet

    def _reject(self, reason: str, message: str) -> None:
        self._on_reject(reason, message, 1)
        self._misfits.append(message)
        if len(self._misfits) >= _MISMATCH_AFTER:
            raise MetadataMismatch(
                f"{len(self._misfits)} lidar packets in a row do not match the metadata "
                f"({describe(self.info)}): {self._misfits[0]}"
            )

    def push(self, payload: bytes, t_arrival: int | None) -> list[OusterScan]:
        """Add one lidar datagram; return the scans it finished (usually none)."""
        if len(payload) != self.packet_size:
            fmt = self.info.format
            self._reject(
                "bad_length",
                f"lidar packet of {len(payload)} bytes; the metadata's {fmt.pixels_per_column} "
                f"beams x {fmt.columns_per_packet} columns ({fmt.udp_profile_lidar}) "
                f"make {self.packet_size}-byte packets (packet size mismatch)",
            )
            return []
        packet = self._core.LidarPacket(self.format)
        buf = np.frombuffer(payload, np.uint8)
        packet.buf[:] = buf
        packet.host_timestamp = 0 if t_arrival is None else t_arrival
        if packet.validate(self.info, self.format) != self._core.PacketValidationFailure.NONE:
            self._reject(
                "foreign_sender",
                f"lidar packet from sensor init_id {self.format.init_id(buf)} sn "
                f"{self.format.prod_sn(buf)}; the metadata is of sn {self.info.sn} init_id "
                f"{self.info.init_id} (sensor id mismatch: metadata of another sensor?)",
            )
            return []
        ids = self.format.packet_header(self._core.ColHeader.MEASUREMENT_ID, buf)
        top = int(ids.max())
        if top >= self.columns:
            self._reject(
                "undecodable",
                f"lidar packet with column {top}; the metadata's lidar mode "
                f"{self.info.config.lidar_mode} has {self.columns} columns (lidar mode mismatch)",
            )
            return []
        self.accepted += 1
        self._misfits.clear()
        dropped = self._batcher.dropped_packets()
        finished = self._batcher.batch(packet, self._frame)
        frame_id = int(self.format.frame_id(buf))
        if self._batcher.dropped_packets() > dropped:
            self._on_reject(
                "stale",
                f"lidar packet of scan {frame_id} after that scan was done "
                "(late, or the sensor's frame counter went back)",
                1,
            )
        else:
            self._counts[frame_id] += 1
        if not finished:
            return []
        # The scan is done, by its last column or by this packet starting the next one
        # (which the batcher then holds for the next frame).
        scan = OusterScan(
            self._frame, t_arrival, self._counts.pop(int(self._frame.frame_id), 0), self._first
        )
        self._first = False
        self._frame = self._core.LidarFrame(self.info)
        return [scan]

    def flush(self, t_arrival: int | None) -> list[OusterScan]:
        """The scan in progress, if it has any column (the stream ended).

        Packets held that are in no scan (a last packet the batcher kept for a
        next scan that never came) are reported as ``incomplete``.
        """
        frame = self._frame
        self._frame = self._core.LidarFrame(self.info)
        first, self._first = self._first, True
        packets = self._counts.pop(int(frame.frame_id), 0) if _valid_columns(frame).any() else 0
        held = sum(self._counts.values())
        self._counts.clear()
        self._batcher = self._core.FrameBatcher(self.info)
        self._batcher.set_max_cache_size(1)
        if held:
            self._on_reject("incomplete", f"{held} lidar packets held when the stream ended", held)
        return [OusterScan(frame, t_arrival, packets, first)] if packets else []

    def pending(self) -> int:
        """Packets held in the scan in progress."""
        return sum(self._counts.values())


def _valid_columns(frame: Any) -> np.ndarray:
    return (np.asarray(frame.status) & 1).astype(bool)


def missing_columns(scan: OusterScan, window: tuple[int, int]) -> list[list[int]]:
    """The ``[start, stop)`` runs of columns of the column window that the scan lacks."""
    valid = _valid_columns(scan.frame)
    wanted = np.zeros_like(valid)
    lo, hi = window
    if lo <= hi:
        wanted[lo : hi + 1] = True
    else:  # a window that wraps past the last column
        wanted[lo:] = True
        wanted[: hi + 1] = True
    hole = wanted & ~valid
    edges = np.flatnonzero(np.diff(np.concatenate(([0], hole.view(np.int8), [0]))))
    return [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]


class PointMaker:
    """Turns scans into :data:`OUSTER_DTYPE` arrays (the look-up tables made once)."""

    def __init__(self, info: Any) -> None:
        from ouster.sdk import core

        self._lut = core.XYZLut(info)
        altitudes = np.asarray(info.beam_altitude_angles, np.float64)
        order = np.argsort(altitudes, kind="stable")
        self._ring = np.empty(len(order), np.uint16)
        self._ring[order] = np.arange(len(order), dtype=np.uint16)
        self._chan = core.ChanField

    def __call__(self, scan: OusterScan) -> tuple[int, np.ndarray]:
        """``(t_sensor, points)`` of a scan with at least one valid column."""
        frame = scan.frame
        valid = _valid_columns(frame)
        stamps = np.asarray(frame.timestamp, np.int64)
        t0 = int(stamps[valid][0])
        rng = frame.field(self._chan.RANGE)
        mask = (rng != 0) & valid[None, :]
        cols, rows = np.nonzero(mask.T)  # firing order: column by column
        xyz = self._lut(rng)
        out = np.empty(len(cols), OUSTER_DTYPE)
        out["x"] = xyz[rows, cols, 0]
        out["y"] = xyz[rows, cols, 1]
        out["z"] = xyz[rows, cols, 2]
        out["range"] = rng[rows, cols]
        for name, chan in (
            ("signal", self._chan.SIGNAL),
            ("reflectivity", self._chan.REFLECTIVITY),
            ("near_ir", self._chan.NEAR_IR),
        ):
            out[name] = frame.field(chan)[rows, cols] if frame.has_field(chan) else 0
        out["intensity"] = out["signal"]
        out["t"] = stamps[cols] - t0
        out["ring"] = self._ring[rows]
        out["column"] = cols
        return t0, out


def imu_sample(fmt: Any, payload: bytes) -> tuple[int, dict[str, Any]]:
    """``(t_sensor, data)`` of a LEGACY-profile IMU packet: m/s² and rad/s.

    ``t_sensor`` is the gyroscope's time (the clock the lidar columns use).
    """
    buf = np.frombuffer(payload, np.uint8)
    accel = np.array([fmt.imu_la_x(buf), fmt.imu_la_y(buf), fmt.imu_la_z(buf)]) * _G
    gyro = np.array([fmt.imu_av_x(buf), fmt.imu_av_y(buf), fmt.imu_av_z(buf)]) * _DEG
    data: dict[str, Any] = dict(zip(IMU_FIELDS, (*accel.tolist(), *gyro.tolist()), strict=True))
    data["accel"], data["gyro"] = accel, gyro
    data["accel_ts"] = int(fmt.imu_accel_ts(buf))
    return int(fmt.imu_gyro_ts(buf)), data
