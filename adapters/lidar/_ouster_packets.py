"""Ouster packets to scans and IMU samples, sans-I/O, at the layout Ouster documents.

Theory of operation. An Ouster sensor sends one UDP datagram per
``columns_per_packet`` columns of a scan (the *lidar packets*, port 7502) and
one per IMU measurement (port 7503). Their layout depends on the sensor, the
firmware and the UDP profile (``LEGACY``, ``RNG19_RFL8_SIG16_NIR16``,
``RNG15_RFL8_NIR8``, dual returns...), all of which the metadata JSON says
(read by :mod:`adapters.lidar._ouster_meta`). The byte layout of every profile
is :class:`~adapters.lidar._ouster_layout.PacketLayout`, the beam geometry
:mod:`adapters.lidar._ouster_geometry` (ouster-sdk's ``XYZLut`` tables, bit for
bit), neither needing ouster-sdk. A scan's packets are kept as bytes and
decoded at once by the compiled kernels of :mod:`adapters.lidar._ouster_kernel`
(the default: measured faster than ouster-sdk's own path, and equal to it point
for point, see BENCHMARKS.md) or numpy views; ``decoder="ouster-sdk"`` batches
them packet by packet with ouster-sdk's ``FrameBatcher`` instead (ouster-sdk
then must be installed). This module adds what a hyperframes source needs
around it:

* every datagram is checked first (size, sensor id, column numbers) against
  the metadata, and a bad one is reported through ``on_reject(reason,
  message, units)`` and never reaches a scan;
* :meth:`ScanAssembler.push` returns each finished scan as an
  :class:`OusterScan` (its packets or ``LidarFrame``, arrival time and packet
  count), :meth:`ScanAssembler.flush` the one in progress at the end;
* :meth:`ScanAssembler.decode` makes the scan's point array
  (:data:`OUSTER_DTYPE`): the valid returns of its valid columns, in firing
  order;
* :func:`imu_sample` decodes a LEGACY IMU packet into SI units.

A scan's time is that of its first valid column (``t_sensor``, ns on the
sensor's clock: since power-on, or PTP/GPS time if the sensor is set so);
each point's ``t`` is its column's time after that, in ns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from adapters.lidar import _ouster_layout
from adapters.lidar._ouster_fast import Columns, decode_packets, frame_columns
from adapters.lidar._ouster_layout import PacketLayout

if TYPE_CHECKING:
    from adapters.lidar._ouster_setup import Prepared

OUSTER_DTYPE = np.dtype(
    {
        "names": [
            "x",
            "y",
            "z",
            "intensity",
            "t",
            "range",
            "signal",
            "reflectivity",
            "near_ir",
            "ring",
            "column",
            "beam",
        ],
        "formats": ["<f4"] * 4 + ["<u4"] * 2 + ["<u2"] * 6,
    }
)  # fmt: skip  (36 bytes: every 4-byte field aligned, which makes filling it fast)
"""What :class:`~adapters.OusterSource` yields per point.

``x, y, z`` metres in the sensor frame (ouster-sdk's ``XYZLut``); ``intensity``
is ``signal`` as float32 (the XYZI convention of :mod:`adapters.lidar._points`,
and what ouster-ros calls intensity); ``t`` ns from the scan's ``t_sensor`` to
the point's column; ``range`` mm; ``signal``, ``reflectivity``, ``near_ir`` as
the sensor sends them; ``ring`` the beam ranked by elevation (0 = lowest);
``column`` the measurement id (0 .. columns_per_frame - 1); ``beam`` the beam's index in
the metadata's beam tables (0 = the first, the top beam on most sensors)."""

IMU_FIELDS = ("ax", "ay", "az", "gx", "gy", "gz")
_G = 9.80665  # the sensor reports acceleration in g ...
_DEG = math.pi / 180.0  # ... and angular velocity in deg/s
_MISMATCH_AFTER = 8  # this many misfits in a row: the metadata is not this stream's
DECODERS = ("numba", "numpy", "ouster-sdk")
"""``OusterSource(decoder=)``: compiled whole-scan (the default), numpy whole-scan, or
ouster-sdk's ``FrameBatcher`` packet by packet; all give the same points."""


class MetadataMismatch(Exception):
    """The packets do not fit the metadata (raised by :meth:`ScanAssembler.push`)."""


class Decoded(NamedTuple):
    """A decoded scan: its valid columns' ids (ascending), its time, its point array."""

    ids: np.ndarray
    t_sensor: int
    points: np.ndarray | None
    """None when the scan has no valid column (then ``t_sensor`` is 0)."""


@dataclass
class OusterScan:
    """One finished (or, at the end, unfinished) scan, decoded on demand."""

    frame_id: int
    t_arrival: int | None
    packets: int
    first: bool
    """The first scan of the stream (it may lack leading columns: not a loss)."""
    raw: Any
    """Its packets' payloads (numpy decodes them) or an ouster-sdk ``LidarFrame``."""


def describe(info: Any) -> str:
    """One line naming a sensor's metadata, for messages."""
    fmt = info.format
    return (
        f"{info.prod_line} sn {info.sn}, {info.config.lidar_mode}, "
        f"{fmt.pixels_per_column} beams, {fmt.columns_per_packet} columns per packet, "
        f"profile {fmt.udp_profile_lidar}"
    )


class ScanAssembler:
    """Checks lidar packets against the metadata and batches them into scans.

    Packets are kept as bytes per scan (a scan ends at its window's last column
    or at the first packet of another scan) and decoded at once, by the compiled
    kernels of :mod:`adapters.lidar._ouster_kernel` (``decoder="numba"``) or numpy
    views (``"numpy"``), at the profile's
    :class:`~adapters.lidar._ouster_layout.PacketLayout`; with
    ``decoder="ouster-sdk"`` ouster-sdk's ``FrameBatcher`` batches them (``info``
    then must carry its JSON, as :class:`~adapters.lidar._ouster_meta.OusterInfo`
    does, or be ouster-sdk's own ``SensorInfo``).
    """

    def __init__(
        self,
        info: Any,
        *,
        on_reject: Callable[[str, str, int], None],
        decoder: str = "numba",
        prepared: Prepared | None = None,
    ) -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}; got {decoder!r}")
        self.info = info
        # the layout of the packets' headers (and, unless ouster-sdk decodes, of their pixels)
        self.packets = prepared.layout if prepared is not None else PacketLayout(info)
        self.packet_size = self.packets.size
        self.imu_packet_size = self.packets.imu_size
        self.imu_profile = str(info.format.udp_profile_imu)
        self.columns = int(info.format.columns_per_frame)
        lo, hi = info.format.column_window
        self.window = (int(lo), int(hi))
        self._on_reject = on_reject
        self.layout: PacketLayout | None = None if decoder == "ouster-sdk" else self.packets
        """The packets' byte layout, or None: ouster-sdk batches packet by packet."""
        self._views: Any = None  # the compiled path: an ouster_kernel.ScanViews
        if self.layout is not None and decoder == "numba":
            if prepared is not None:
                self._views = prepared.views(OUSTER_DTYPE)
            else:
                from adapters.lidar import _ouster_kernel as ouster_kernel

                self._views = ouster_kernel.ScanViews(self.layout)
                ouster_kernel.warm(self._views, OUSTER_DTYPE)  # numba's cache, or a compile
        self.decoder = decoder
        """The decoder in use."""
        self._check_ids = self.packets.has_ids  # sensor ids in the header
        self._batcher: Any = None  # the ouster-sdk path's FrameBatcher and scan in progress
        self._frame: Any = None
        self._core: Any = None
        if self.layout is None:
            from ouster.sdk import core  # only this decoder needs ouster-sdk

            self._core = core
            self._vendor_info = vendor_info(info)
            self._vendor_format = core.PacketFormat(self._vendor_info)
            self._batcher = core.FrameBatcher(self._vendor_info)
            self._batcher.set_max_cache_size(1)  # a scan ends at the first packet of the next
            self._frame = core.LidarFrame(self._vendor_info)
        self._counts: Counter[int] = Counter()  # accepted packets by scan (frame id)
        self._payloads: list[bytes] = []  # numpy path: the scan in progress
        self._frame_id: int | None = None
        self._done_id: int | None = None
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

    def _misfit(self, payload: bytes) -> bool:
        """Check one datagram against the metadata; True (and reported) if it misfits."""
        if len(payload) != self.packet_size:
            fmt = self.info.format
            self._reject(
                "bad_length",
                f"lidar packet of {len(payload)} bytes; the metadata's {fmt.pixels_per_column} "
                f"beams x {fmt.columns_per_packet} columns ({fmt.udp_profile_lidar}) "
                f"make {self.packet_size}-byte packets (packet size mismatch)",
            )
            return True
        if self._check_ids:
            init_id, sn = self.packets.sensor_ids(payload)
            if (init_id, sn) != (int(self.info.init_id), int(self.info.sn)):
                self._reject(
                    "foreign_sender",
                    f"lidar packet from sensor sn {sn} init_id {init_id}; the metadata is of "
                    f"sn {self.info.sn} init_id {self.info.init_id} (sensor id mismatch: "
                    "metadata of another sensor?)",
                )
                return True
        if self.layout is not None:
            top = max(self.layout.header(payload)[:2])
        else:  # any column's id (ouster-sdk reads what a column says, in any order)
            top = int(self.packets.ids(payload).max())
        if top >= self.columns:
            self._reject(
                "undecodable",
                f"lidar packet with column {top}; the metadata's lidar mode "
                f"{self.info.config.lidar_mode} has {self.columns} columns (lidar mode mismatch)",
            )
            return True
        self.accepted += 1
        self._misfits.clear()
        return False

    def push(self, payload: bytes, t_arrival: int | None) -> list[OusterScan]:
        """Add one lidar datagram; return the scans it finished (usually none)."""
        layout = self.layout
        if layout is not None and not self._check_ids and len(payload) == self.packet_size:
            # the usual LEGACY packet, checked here at once (the same checks as _misfit)
            first, last, frame_id = layout.header(payload)
            if first < self.columns and last < self.columns:
                self.accepted += 1
                if self._misfits:
                    self._misfits.clear()
                return self._batch(payload, t_arrival, frame_id, last)
        if self._misfit(payload):
            return []
        if layout is None:
            return self._push_vendor(payload, t_arrival)
        _, last, frame_id = layout.header(payload)
        return self._batch(payload, t_arrival, frame_id, last)

    def _batch(
        self, payload: bytes, t_arrival: int | None, frame_id: int, last: int
    ) -> list[OusterScan]:
        """Keep an accepted packet in its scan; return the scans that ended."""
        done: list[OusterScan] = []
        if frame_id != self._frame_id:
            if frame_id == self._done_id:
                self._stale(frame_id)
                return []
            done += self._finish(t_arrival)
            self._frame_id = frame_id
        self._payloads.append(payload)
        lo, hi = self.window
        if lo <= hi and last == hi:
            done += self._finish(t_arrival)
        return done

    def _stale(self, frame_id: int) -> None:
        self._on_reject(
            "stale",
            f"lidar packet of scan {frame_id} after that scan was done "
            "(late, or the sensor's frame counter went back)",
            1,
        )

    def _finish(self, t_arrival: int | None) -> list[OusterScan]:
        if not self._payloads:
            return []
        assert self._frame_id is not None
        scan = OusterScan(
            self._frame_id, t_arrival, len(self._payloads), self._first, self._payloads
        )
        self._first = False
        self._done_id, self._frame_id, self._payloads = self._frame_id, None, []
        return [scan]

    def _push_vendor(self, payload: bytes, t_arrival: int | None) -> list[OusterScan]:
        packet = self._core.LidarPacket(self._vendor_format)
        buf = np.frombuffer(payload, np.uint8)
        packet.buf[:] = buf
        packet.host_timestamp = 0 if t_arrival is None else t_arrival
        dropped = self._batcher.dropped_packets()
        finished = self._batcher.batch(packet, self._frame)
        frame_id = self.packets.frame_id(payload)
        if self._batcher.dropped_packets() > dropped:
            self._stale(frame_id)
        else:
            self._counts[frame_id] += 1
        if not finished:
            return []
        # The scan is done, by its last column or by this packet starting the next one
        # (which the batcher then holds for the next frame).
        frame, self._frame = self._frame, self._core.LidarFrame(self._vendor_info)
        packets = self._counts.pop(int(frame.frame_id), 0)
        scan = OusterScan(int(frame.frame_id), t_arrival, packets, self._first, frame)
        self._first = False
        return [scan]

    def flush(self, t_arrival: int | None) -> list[OusterScan]:
        """The scan in progress, if it has any column (the stream ended).

        Packets held that are in no scan (a last packet the batcher kept for a
        next scan that never came) are reported as ``incomplete``.
        """
        if self.layout is not None:
            done = self._finish(t_arrival)
            self._first, self._done_id = True, None
            return done
        frame = self._frame
        self._frame = self._core.LidarFrame(self._vendor_info)
        first, self._first = self._first, True
        valid = ((np.asarray(frame.status) & 1) != 0).any()
        packets = self._counts.pop(int(frame.frame_id), 0) if valid else 0
        held = sum(self._counts.values())
        self._counts.clear()
        self._batcher = self._core.FrameBatcher(self._vendor_info)
        self._batcher.set_max_cache_size(1)
        if held:
            self._on_reject("incomplete", f"{held} lidar packets held when the stream ended", held)
        return (
            [OusterScan(int(frame.frame_id), t_arrival, packets, first, frame)] if packets else []
        )

    def pending(self) -> int:
        """Packets held in the scan in progress."""
        return len(self._payloads) + sum(self._counts.values())

    def decode(self, scan: OusterScan, points: PointMaker) -> Decoded:
        """Decode a scan into ``points``' array (in a worker thread: this is the CPU work)."""
        if isinstance(scan.raw, list):
            if self._views is not None:
                return points.from_packets(self._views, scan.raw)
            assert self.layout is not None
            columns = decode_packets(self.layout, scan.raw, self.columns)
        else:
            columns = frame_columns(scan.raw)
        if not len(columns.ids):
            return Decoded(columns.ids, 0, None)
        return Decoded(columns.ids, *points(columns))


def missing_columns(ids: np.ndarray, width: int, window: tuple[int, int]) -> list[list[int]]:
    """The ``[start, stop)`` runs of columns of the column window not in ``ids``."""
    lo, hi = window
    if lo <= hi and len(ids) == hi - lo + 1 and len(ids) and ids[0] == lo and ids[-1] == hi:
        return []  # the usual scan: every column of the window (ids are ascending, unique)
    valid = np.zeros(width, bool)
    valid[ids] = True
    wanted = np.zeros_like(valid)
    if lo <= hi:
        wanted[lo : hi + 1] = True
    else:  # a window that wraps past the last column
        wanted[lo:] = True
        wanted[: hi + 1] = True
    hole = wanted & ~valid
    edges = np.flatnonzero(np.diff(np.concatenate(([0], hole.view(np.int8), [0]))))
    return [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]


class PointMaker:
    """Turns decoded scans into :data:`OUSTER_DTYPE` arrays (the tables made once)."""

    def __init__(self, info: Any, tables: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        from adapters.lidar._ouster_geometry import beam_tables

        self._width = int(info.format.columns_per_frame)
        # XYZLut's tables, column-major (one column's beams side by side, so a scan's
        # columns are one gather) and float32 like the output (within a few µm of
        # XYZLut's float64 at 100 m); computed in numpy, equal to XYZLut's bit for bit;
        # ``tables``: the same, made already (ouster_setup.Prepared)
        self._direction, self._offset = beam_tables(info) if tables is None else tables
        altitudes = np.asarray(info.beam_altitude_angles, np.float64)
        order = np.argsort(altitudes, kind="stable")
        self._ring = np.empty(len(order), np.uint16)
        self._ring[order] = np.arange(len(order), dtype=np.uint16)
        self._beam = np.arange(len(order), dtype=np.uint16)

    def from_packets(self, views: Any, payloads: list[bytes]) -> Decoded:
        """A scan decoded from its packets by the compiled kernels (``views``: an
        :class:`~adapters.lidar._ouster_kernel.ScanViews` of their layout)."""
        from adapters.lidar._ouster_kernel import fill, select

        mid, status, stamps, rng, *fields = views(b"".join(payloads))
        slot = np.empty(self._width, np.int64)
        ids = np.empty(self._width, np.int64)
        n_cols, n_points = select(mid, status, rng, views.masks[0], slot, ids)
        if not n_cols:
            return Decoded(ids[:0], 0, None)
        out = np.empty(n_points, OUSTER_DTYPE)
        t0 = fill(
            slot, ids, n_cols, stamps, rng, *fields, views.masks,
            views.shifts, self._direction, self._offset, self._ring, out,
        )  # fmt: skip
        return Decoded(ids[:n_cols], int(t0), out)

    def __call__(self, columns: Columns) -> tuple[int, np.ndarray]:
        """``(t_sensor, points)`` of a scan with at least one valid column."""
        values, ids = columns.values, columns.ids
        rng = values["RANGE"]  # (n, beams)
        grid = np.empty(rng.shape, OUSTER_DTYPE)  # every pixel, then the valid ones at once
        metres = rng.astype(np.float32)[:, :, None]
        xyz = metres * self._direction[ids] + self._offset[ids]  # XYZLut's formula
        grid["x"], grid["y"], grid["z"] = xyz[..., 0], xyz[..., 1], xyz[..., 2]
        grid["range"] = rng
        for name, key in (
            ("signal", "SIGNAL"),
            ("reflectivity", "REFLECTIVITY"),
            ("near_ir", "NEAR_IR"),
        ):
            grid[name] = values.get(key, 0)
        grid["intensity"] = grid["signal"]
        t0 = int(columns.stamps[0])
        grid["t"] = (columns.stamps - t0)[:, None]
        grid["ring"] = self._ring[None, :]
        grid["beam"] = self._beam[None, :]
        grid["column"] = ids[:, None]
        # the valid pixels, column by column (firing order); take() on plain words is
        # several times faster than a boolean index of a structured array
        words = grid.reshape(-1).view(np.uint32).reshape(grid.size, -1)
        return t0, np.take(words, np.flatnonzero(rng), axis=0).view(OUSTER_DTYPE).reshape(-1)


def imu_sample(payload: bytes) -> tuple[int, dict[str, Any]]:
    """``(t_sensor, data)`` of a LEGACY-profile IMU packet (48 bytes): m/s² and rad/s.

    ``t_sensor`` is the gyroscope's time (the clock the lidar columns use).
    """
    t_gyro, values, t_accel = _ouster_layout.imu_sample(payload)
    accel = np.array(values[:3], np.float64) * _G  # the f32 values, as float64
    gyro = np.array(values[3:], np.float64) * _DEG
    data: dict[str, Any] = dict(zip(IMU_FIELDS, (*accel.tolist(), *gyro.tolist()), strict=True))
    data["accel"], data["gyro"] = accel, gyro
    data["accel_ts"] = int(t_accel)
    return int(t_gyro), data


def vendor_info(info: Any) -> Any:
    """ouster-sdk's ``SensorInfo`` of ``info`` (ours: parsed again from its JSON)."""
    from ouster.sdk import core

    text = getattr(info, "text", None)
    return info if text is None else core.SensorInfo(text)
