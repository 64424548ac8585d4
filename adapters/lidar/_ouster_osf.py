"""Ouster OSF files (Ouster's own recording format) through ouster-sdk's OSF reader.

An OSF file holds, per lidar, a ``LidarSensor`` metadata entry (the sensor's
metadata JSON) and a stream of ``LidarFrame`` messages (scans already batched
from packets, with the fields the writer kept: ``RANGE`` always, ``SIGNAL``,
``REFLECTIVITY``, ``NEAR_IR`` when kept; a sensor with the
``ACCEL32_GYRO32_NMEA`` IMU profile also ``IMU_ACC``/``IMU_GYRO``/``IMU_TIMESTAMP``
per scan). :func:`open_osf` reads the metadata (one :class:`OsfStream` per lidar
stream, without decoding more than each stream's first scan), :class:`OsfScans`
walks the messages in the file's order (``osf.Reader.messages()``: time order)
and makes frames of them with the same :class:`~adapters.lidar._ouster_packets.PointMaker`
the capture path uses, so a scan's points are the ones its packets would give.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapters.errors import SourceOpenError
from adapters.lidar._ouster_fast import frame_columns
from adapters.lidar._ouster_packets import PointMaker, missing_columns

OSF_INSTALL = "pip install --no-deps 'ouster-sdk>=1.0.1,<1.1'"
"""What to install to read OSF files (the test extra installs it)."""

_G = 9.80665  # the sensor reports acceleration in g ...
_DEG = np.pi / 180.0  # ... and angular velocity in deg/s (as the legacy IMU packet)
IMU_OSF_FIELDS = ("IMU_ACC", "IMU_GYRO", "IMU_TIMESTAMP")
"""The per-scan IMU fields of an ``ACCEL32_GYRO32_NMEA`` sensor's frames."""
_SCAN_STREAM = "/LidarScanStream"  # a lidar stream's metadata entry type (ouster/v1/os_sensor/...)
IMU_KEYS = ("ax", "ay", "az", "gx", "gy", "gz")


def import_osf(sensor: str) -> Any:
    """ouster-sdk's ``osf`` module, or a one-line SourceOpenError saying what to install."""
    try:
        from ouster.sdk import osf
    except ImportError as err:
        raise SourceOpenError(
            f"reading an Ouster OSF file needs ouster-sdk: {OSF_INSTALL} ({err})", sensor=sensor
        ) from err
    return osf


@dataclass(frozen=True)
class OsfStream:
    """One lidar stream of an OSF file."""

    stream_id: int
    sensor: str
    """The lidar's sensor name (``<name>``, then ``<name>_1``, ``<name>_2`` ...)."""
    info: Any
    """Its ``SensorInfo``."""
    imu: str | None
    """``<sensor>_imu`` when its scans carry IMU samples, else None."""
    messages: int
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class OsfContents:
    """What :func:`open_osf` found: the lidar streams and the file's time range."""

    path: Path
    streams: tuple[OsfStream, ...]
    start_ns: int
    end_ns: int
    other_messages: int
    """Messages of streams that are not lidar scans (the sensor-info stream ...)."""


def open_osf(path: str | Path, name: str = "lidar") -> OsfContents:
    """The lidar streams of the OSF file at ``path``, named from ``name``.

    Raises :class:`~adapters.errors.SourceOpenError` (one line) when ouster-sdk
    is missing, the file cannot be read as OSF or holds no lidar stream.
    """
    osf = import_osf(name)
    where = Path(path)
    if not where.is_file():
        raise SourceOpenError(f"OSF file {str(where)!r} does not exist", sensor=name)
    try:
        reader = osf.Reader(str(where))
        store = dict(reader.meta_store.items())
    except (RuntimeError, ValueError, OSError) as err:
        text = " ".join(str(err).split())[:300]
        raise SourceOpenError(
            f"{str(where)!r} is not a readable Ouster OSF file: {text}", sensor=name
        ) from err
    sensors = {k: v for k, v in store.items() if isinstance(v, osf.LidarSensor)}
    lidar = sorted(
        k
        for k, v in store.items()
        if str(v.type).endswith(_SCAN_STREAM) and getattr(v, "sensor_meta_id", None) in sensors
    )
    if not lidar:
        why = "its metadata names no lidar sensor (a cut or damaged file?)" if not sensors else ""
        raise SourceOpenError(
            f"OSF file {str(where)!r} holds no lidar stream" + (f": {why}" if why else ""),
            sensor=name,
        )
    stats: dict[int, Any] = {}
    for entry in store.values():
        if hasattr(entry, "stream_stats"):  # the StreamingInfo entry
            stats.update({int(k): v for k, v in entry.stream_stats})
    streams = []
    for index, stream_id in enumerate(lidar):
        sensor = name if index == 0 else f"{name}_{index}"
        info = sensors[store[stream_id].sensor_meta_id].info
        first = _first_frame(reader, stream_id)
        has_imu = first is not None and all(first.has_field(f) for f in IMU_OSF_FIELDS)
        stat = stats.get(stream_id)
        streams.append(
            OsfStream(
                stream_id,
                sensor,
                info,
                f"{sensor}_imu" if has_imu else None,
                int(stat.message_count) if stat is not None else 0,
                int(stat.start_ts) if stat is not None else 0,
                int(stat.end_ts) if stat is not None else 0,
            )
        )
    others = sum(int(v.message_count) for k, v in stats.items() if k not in lidar)
    return OsfContents(
        where,
        tuple(streams),
        int(reader.start_ts),
        int(reader.end_ts),
        others,
    )


def _first_frame(reader: Any, stream_id: int) -> Any:
    for message in reader.messages([stream_id]):
        return message.decode()
    return None


class Ledger:
    """What :class:`OsfScans` tells its source: ``received(units, sensor)``,
    ``lost(reason, message, units, sensor)``, ``frame(t_sensor, data, sensor, t_arrival,
    meta, units)`` (returns the frame)."""

    def __init__(
        self,
        received: Callable[[int, str], None],
        lost: Callable[[str, str, int, str], None],
        frame: Callable[..., Any],
    ) -> None:
        self.received, self.lost, self.frame = received, lost, frame


class OsfScans:
    """The frames of an OSF file's lidar streams, message by message (blocking: a worker
    thread calls :meth:`batch`).

    A lidar message counts one unit received on its lidar; it ends as a frame, or as
    ``undecodable`` (ouster-sdk cannot decode it, or it lacks ``RANGE``) or
    ``incomplete`` (no valid column; a partial scan with ``partial_scans=False``).
    IMU samples count one unit each on ``<lidar>_imu`` (a scan's IMU slots without a
    timestamp hold no sample). Messages of other streams are counted in
    :attr:`other_messages`, not in a ledger (they are no sensor's data).
    """

    def __init__(
        self, contents: OsfContents, ledger: Ledger, *, partial_scans: bool = True
    ) -> None:
        self.contents = contents
        self.ledger = ledger
        self.partial_scans = partial_scans
        self._streams = {s.stream_id: s for s in contents.streams}
        self._points = {s.stream_id: PointMaker(s.info) for s in contents.streams}
        self._messages: Iterator[Any] | None = None
        self._reader: Any = None
        self.other_messages = 0
        self.missing_columns = 0

    def batch(self, scans: int) -> tuple[list[Any], bool]:
        """Frames of up to ``scans`` lidar messages; ``(frames, the file's end)``."""
        if self._messages is None:
            osf = import_osf(self.contents.streams[0].sensor)
            self._reader = osf.Reader(str(self.contents.path))
            self._messages = iter(self._reader.messages())
        out: list[Any] = []
        done = 0
        for message in self._messages:
            stream = self._streams.get(int(message.id))
            if stream is None:
                self.other_messages += 1
                continue
            out += self._scan(stream, message)
            done += 1
            if done >= scans:
                return out, False
        return out, True

    def _scan(self, stream: OsfStream, message: Any) -> list[Any]:
        ledger, sensor = self.ledger, stream.sensor
        ledger.received(1, sensor)
        where = f"{self.contents.path}: {sensor} message at {int(message.ts)} ns"
        try:
            frame = message.decode()
        except (RuntimeError, ValueError) as err:
            ledger.lost("undecodable", f"{where}: {' '.join(str(err).split())[:200]}", 1, sensor)
            return []
        if frame is None or not frame.has_field("RANGE"):
            what = "not a lidar frame" if frame is None else "a scan without RANGE"
            ledger.lost("undecodable", f"{where}: {what}", 1, sensor)
            return []
        arrival = int(frame.get_last_valid_packet_timestamp()) or int(message.ts)
        out = self._imu(stream, frame, arrival) if stream.imu is not None else []
        columns = frame_columns(frame)
        width = int(stream.info.format.columns_per_frame)
        lo, hi = stream.info.format.column_window
        holes = missing_columns(columns.ids, width, (int(lo), int(hi)))
        if not len(columns.ids) or (holes and not self.partial_scans):
            why = "partial scan dropped" if len(columns.ids) else "scan without a valid column"
            ledger.lost("incomplete", f"{where}: {why}", 1, sensor)
            return out
        if holes:
            self.missing_columns += sum(b - a for a, b in holes)
        t_sensor, points = self._points[stream.stream_id](columns)
        meta = {
            "partial": bool(holes),
            "packets": int(np.count_nonzero(np.asarray(frame.packet_timestamp))),
            "valid_columns": len(columns.ids),
            "missing_columns": holes,
            "scan_id": int(frame.frame_id),
        }
        out.append(ledger.frame(t_sensor, points, sensor, arrival, meta, 1))
        return out

    def _imu(self, stream: OsfStream, frame: Any, arrival: int) -> list[Any]:
        """One frame per IMU sample the scan holds (its slots without a time are empty)."""
        assert stream.imu is not None
        acc = np.asarray(frame.field("IMU_ACC"), np.float64).reshape(-1, 3)
        gyro = np.asarray(frame.field("IMU_GYRO"), np.float64).reshape(-1, 3)
        stamps = np.asarray(frame.field("IMU_TIMESTAMP"), np.int64).reshape(-1)
        n = min(len(acc), len(gyro), len(stamps))
        filled = np.flatnonzero(stamps[:n])
        self.ledger.received(len(filled), stream.imu)
        out = []
        for i in filled:
            accel, rate = acc[i] * _G, gyro[i] * _DEG
            data: dict[str, Any] = {
                key: float(v)
                for key, v in zip(IMU_KEYS, (*accel.tolist(), *rate.tolist()), strict=True)
            }
            data["accel"], data["gyro"] = accel, rate
            out.append(self.ledger.frame(int(stamps[i]), data, stream.imu, arrival, None, 1))
        return out

    def close(self) -> None:
        self._messages = None
        self._reader = None
