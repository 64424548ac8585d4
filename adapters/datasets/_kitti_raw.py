"""KITTI raw drives as one session: cameras, Velodyne and OXTS with the dataset's own times.

A drive folder (``2011_09_26/2011_09_26_drive_0001_sync``) holds one folder per
sensor, each with ``data/`` (one file per frame, numbered from 0) and
``timestamps.txt`` (one line per file, ``2011-09-26 13:02:25.964389445``: UTC,
nanosecond fraction)::

    image_00/ image_01/   grey cameras, 8-bit PNG          -> cam0, cam1
    image_02/ image_03/   colour cameras, 8-bit RGB PNG    -> cam2, cam3
    velodyne_points/      .bin sweeps (x, y, z, reflectance float32) and
                          timestamps_start.txt / timestamps_end.txt   -> velodyne
    oxts/                 one text line of 30 numbers per packet,
                          dataformat.txt                   -> imu, gnss

The calibration files (``calib_cam_to_cam.txt``, ``calib_imu_to_velo.txt``,
``calib_velo_to_cam.txt``) sit one folder up, in the date folder; when present
they are parsed into every spec's ``meta["calibration"]`` (file stem minus
``calib_`` -> key -> list of floats, or the text when it is not numbers).

``timestamps.txt`` of the Velodyne is the instant the scanner faced forward
and triggered the cameras, so that is the sweep's ``t_sensor``; the sweep's
own start and end (``timestamps_start/end.txt``) are in ``meta`` as
``sweep_start_ns`` / ``sweep_end_ns``. ``sweep_time=True`` adds the per-point
``t_offset`` field (ns from ``t_sensor``, the convention of
:mod:`adapters.lidar._points`), interpolated over the sweep by azimuth: the
HDL-64E turns clockwise seen from above at a constant rate and the sweep
starts facing backwards, so facing forward is mid-sweep.

:class:`KittiRawSource` yields every sensor of the drive in time order from
one source (one channel into the hub: the order is kept); :func:`kitti_raw_sources`
gives one :class:`KittiSensorSource` per sensor instead. A frame whose file is
missing or does not decode is counted and skipped; a timestamps file whose
line count does not match the data files is a :class:`SourceOpenError`.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adapters._image_header import check_image_size
from adapters._side_files import (
    CALIBRATION_LIMIT,
    TIMESTAMPS_LIMIT,
    read_small,
    read_small_text,
)
from adapters._timeseries import parse_time_ns
from adapters.datasets._oxts import (
    GNSS_FIELDS,
    IMU_FIELDS,
    field_names,
    finite_half,
    gnss_frame,
    imu_frame,
    read_packet,
)
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar import read_bin
from fusion import Frame, SensorKind, SensorSpec, Source, current_clock
from fusion.errors import ConfigError, HyperframesError

SENSORS: tuple[str, ...] = ("cam0", "cam1", "cam2", "cam3", "velodyne", "imu", "gnss")
"""Every sensor of a KITTI raw drive, in the order frames with equal stamps are yielded."""

_FOLDERS = {
    "cam0": "image_00",
    "cam1": "image_01",
    "cam2": "image_02",
    "cam3": "image_03",
    "velodyne": "velodyne_points",
    "imu": "oxts",
    "gnss": "oxts",
}
_KINDS: dict[str, SensorKind] = {
    "velodyne": "lidar",
    "imu": "imu",
    "gnss": "gnss",
    **dict.fromkeys(("cam0", "cam1", "cam2", "cam3"), "camera"),
}
_SUFFIX = {"velodyne_points": ".bin", "oxts": ".txt"}
IMAGE_FILE_LIMIT = 256 << 20  # a KITTI PNG is about 0.9 MB
CALIBRATION_FILES = ("calib_cam_to_cam.txt", "calib_imu_to_velo.txt", "calib_velo_to_cam.txt")


def read_timestamps(path: Path) -> list[int]:
    """A KITTI ``timestamps*.txt`` as int ns (UTC), exactly (no float on the way)."""
    text = read_small_text(  # a regular file: /dev/zero or a FIFO is refused, not read
        path, "timestamps file", TIMESTAMPS_LIMIT, error=SourceOpenError, encoding="ascii",
        errors="strict",
    )  # fmt: skip
    lines = [ln for ln in text.splitlines() if ln.strip()]
    stamps = []
    for number, line in enumerate(lines, 1):
        try:
            stamps.append(parse_time_ns(line))
        except ValueError as err:
            raise SourceOpenError(f"{path}: line {number}: {err}") from None
    return stamps


def read_calibration(path: Path) -> dict[str, list[float] | str]:
    """A KITTI ``calib_*.txt``: ``key: numbers`` per line -> key -> floats (or the text)."""
    out: dict[str, list[float] | str] = {}
    text = read_small_text(path, "KITTI calibration", CALIBRATION_LIMIT, error=SourceOpenError)
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            continue
        try:
            out[key.strip()] = [float(v) for v in value.split()]
        except ValueError:
            out[key.strip()] = value.strip()
    return out


def read_png(path: Path) -> np.ndarray:
    """A PNG as ``(h, w)`` (grey) or ``(h, w, 3|4)`` uint8 (16-bit PNGs as uint16).

    Decoded by FFmpeg's PNG decoder through PyAV (already a dependency): as
    fast as Pillow and OpenCV on KITTI's 1242x375 frames (BENCHMARKS.md).
    """
    import av

    try:
        context = av.CodecContext.create("png", "r")
        data = read_small(path, "PNG file", IMAGE_FILE_LIMIT, error=DecodeError)
        check_image_size(data, "png", str(path))  # before the decoder allocates the picture
        frames = context.decode(av.Packet(data))
    except av.error.FFmpegError as err:
        raise DecodeError(f"{path}: not a PNG FFmpeg can decode: {err}") from err
    if not frames:
        raise DecodeError(f"{path}: the PNG decoder returned no picture")
    frame = frames[0]
    fmt = frame.format.name
    if fmt in ("gray", "rgb24", "rgba"):
        array: np.ndarray = frame.to_ndarray()
    elif fmt.startswith("gray16"):
        array = frame.to_ndarray(format="gray16le")
    elif fmt.startswith(("rgb48", "rgba64")):
        array = frame.to_ndarray(format="rgb48le")
    else:  # palette, grey + alpha ...
        array = frame.to_ndarray(format="rgb24")
    return array


@dataclass(slots=True)
class _Stream:
    """One sensor of the drive: its files, stamps and how a file becomes a payload."""

    sensor: str
    files: list[Path]
    stamps: list[int]
    read: Callable[[Path], Any]
    extra: list[dict[str, Any]] = field(default_factory=list)


def _natural_key(path: Path) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


class KittiRawDrive:
    """The sensors of one KITTI raw drive folder, found and checked, nothing decoded yet.

    ``sensors`` picks some of :data:`SENSORS` (default: every one whose folder
    exists); ``prefix`` is put before each sensor name (``"kitti/"`` ->
    ``kitti/cam2``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        sensors: Sequence[str] | None = None,
        prefix: str = "",
        sweep_time: bool = False,
    ) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise SourceOpenError(f"KITTI raw drive {str(self.path)!r} is not a folder")
        unknown = sorted(set(sensors or ()) - set(SENSORS))
        if unknown:
            raise ConfigError(
                f"KITTI raw drive: unknown sensors {unknown}; the sensors are {list(SENSORS)}"
            )
        present = [s for s in SENSORS if (self.path / _FOLDERS[s] / "data").is_dir()]
        if sensors is None:
            chosen = present
        else:
            missing = [s for s in sensors if s not in present]
            if missing:
                raise SourceOpenError(
                    f"KITTI raw drive {str(self.path)!r} has no "
                    + ", ".join(f"{_FOLDERS[s]}/data ({s})" for s in missing)
                )
            chosen = [s for s in SENSORS if s in sensors]
        if not chosen:
            raise SourceOpenError(
                f"{str(self.path)!r} holds none of "
                f"{', '.join(sorted(set(_FOLDERS.values())))} with a data/ folder: "
                "not a KITTI raw drive"
            )
        self.prefix = prefix
        self.sweep_time = sweep_time
        self.calibration = self._calibration()
        self.date = self.path.parent.name
        self._oxts_names = field_names(self.path / "oxts")
        self.streams = {prefix + s: self._stream(s) for s in chosen}

    def _calibration(self) -> dict[str, dict[str, list[float] | str]]:
        found = {}
        for name in CALIBRATION_FILES:
            for folder in (self.path.parent, self.path):
                if (folder / name).is_file():
                    found[name.removeprefix("calib_").removesuffix(".txt")] = read_calibration(
                        folder / name
                    )
                    break
        return found

    def _stream(self, sensor: str) -> _Stream:
        folder = self.path / _FOLDERS[sensor]
        suffix = _SUFFIX.get(folder.name, ".png")
        files = sorted((folder / "data").glob(f"*{suffix}"), key=_natural_key)
        stamps = read_timestamps(folder / "timestamps.txt")
        self._match(folder / "timestamps.txt", stamps, files)
        read: Callable[[Path], Any]
        extra: list[dict[str, Any]] = []
        if sensor == "velodyne":
            read = self._read_sweep
            bounds = []
            for which in ("start", "end"):
                stamp_file = folder / f"timestamps_{which}.txt"
                if stamp_file.is_file():
                    bounds.append(read_timestamps(stamp_file))
                    self._match(stamp_file, bounds[-1], files)
            if len(bounds) == 2:
                extra = [
                    {"sweep_start_ns": a, "sweep_end_ns": b}
                    for a, b in zip(bounds[0], bounds[1], strict=True)
                ]
        elif sensor in ("imu", "gnss"):
            names = self._oxts_names
            half, fields = (imu_frame, IMU_FIELDS) if sensor == "imu" else (gnss_frame, GNSS_FIELDS)

            def read_oxts(path: Path) -> Any:
                packet = read_packet(path, names)
                finite_half(packet, fields, path)
                return half(packet)

            read = read_oxts

        else:
            read = read_png
        return _Stream(self.prefix + sensor, files, stamps, read, extra)

    @staticmethod
    def _match(stamp_file: Path, stamps: list[int], files: list[Path]) -> None:
        if len(stamps) != len(files):
            raise SourceOpenError(
                f"{stamp_file}: {len(stamps)} timestamps for {len(files)} files in "
                f"{stamp_file.parent / 'data'}; KITTI pairs them line by line"
            )

    def _read_sweep(self, path: Path) -> np.ndarray:
        return read_bin(path, "kitti")

    def spec(self, sensor: str) -> SensorSpec:
        """The spec of one sensor (prefixed name), with the drive and calibration in ``meta``."""
        stream = self.streams[sensor]
        bare = sensor.removeprefix(self.prefix)
        rate = _rate(stream.stamps)
        meta: dict[str, Any] = {
            "dataset": "kitti_raw",
            "drive": self.path.name,
            "folder": _FOLDERS[bare],
        }
        if self.calibration:
            meta["calibration"] = self.calibration
        if bare in ("imu", "gnss"):
            meta["fields"] = list(IMU_FIELDS if bare == "imu" else GNSS_FIELDS)
        return SensorSpec(sensor, kind=_KINDS[bare], rate_hz=rate, meta=meta)

    def frame_parts(self, sensor: str, index: int) -> tuple[int, Any, dict[str, Any]]:
        """(t_sensor, payload, meta) of frame ``index`` of ``sensor`` (blocking: reads the file)."""
        stream = self.streams[sensor]
        path = stream.files[index]
        t = stream.stamps[index]
        data = stream.read(path)
        meta: dict[str, Any] = {"path": str(path)}
        if stream.extra:
            meta.update(stream.extra[index])
            if self.sweep_time:
                data = with_sweep_time(
                    data,
                    t,
                    stream.extra[index]["sweep_start_ns"],
                    stream.extra[index]["sweep_end_ns"],
                )
        return t, data, meta


def with_sweep_time(points: np.ndarray, t: int, start: int, end: int) -> np.ndarray:
    """``points`` plus ``t_offset`` (int32 ns from ``t``), by azimuth over [start, end].

    The sweep turns clockwise seen from above (azimuth decreasing) from facing
    backwards (azimuth ±180°) at ``start`` to backwards again at ``end``.
    """
    azimuth = np.arctan2(points["y"].astype(np.float64), points["x"].astype(np.float64))
    fraction = (math.pi - azimuth) / (2 * math.pi)
    offsets = np.rint(start - t + fraction * (end - start)).astype(np.int32)
    names = points.dtype.names or ()
    descr = [(n, points.dtype[n]) for n in names if n != "t_offset"] + [("t_offset", "<i4")]
    out = np.empty(len(points), np.dtype(descr))
    for name in names:
        if name != "t_offset":
            out[name] = points[name]
    out["t_offset"] = offsets
    return out


def _rate(stamps: list[int]) -> float | None:
    if len(stamps) < 2 or stamps[-1] <= stamps[0]:
        return None
    return round((len(stamps) - 1) * 1e9 / (stamps[-1] - stamps[0]), 3)


class _DriveSource(Source):
    """Shared by the merged and the per-sensor sources: reading, pacing, error counting.

    The ledger's unit is the file: each one ends as its sensor's frame or as that
    sensor's loss (an OXTS file feeds two sensors, imu and gnss, and is counted in
    both ledgers).
    """

    _ledger_unit = "file"

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return True

    drive: KittiRawDrive
    speed: float | None

    def _order(self, sensors: Iterable[str]) -> Iterator[tuple[int, int, str, int]]:
        """(t, rank, sensor, index) of every frame, by time; ties in :data:`SENSORS` order."""
        streams = self.drive.streams
        rank = {name: i for i, name in enumerate(streams)}

        def keyed(sensor: str) -> Iterator[tuple[int, int, str, int]]:
            for index, t in enumerate(streams[sensor].stamps):
                yield t, rank[sensor], sensor, index

        return heapq.merge(*(keyed(s) for s in sensors))

    async def _frames(self, sensors: Iterable[str]) -> AsyncIterator[Frame]:
        clock = current_clock()
        start: tuple[int, int] | None = None
        for t, _rank, sensor, index in self._order(sensors):
            try:
                t, data, meta = await self.run_blocking(self.drive.frame_parts, sensor, index)
            except (HyperframesError, OSError, ValueError) as err:
                path = self.drive.streams[sensor].files[index]
                message = str(err)
                self.count_error(
                    getattr(err, "reason", "bad_file"),
                    f"{sensor} frame {index}: "
                    + (message if str(path) in message else f"{path}: {message}"),
                    sensor=sensor,
                )
                continue
            if self.speed is not None:
                start = start or (clock.now(), t)
                await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
            yield self.make_frame(t, data, sensor=sensor, meta=meta)


class KittiRawSource(_DriveSource):
    """Every sensor of a KITTI raw drive from one source, frames in time order.

    ``KittiRawSource("2011_09_26/2011_09_26_drive_0001_sync")`` yields
    ``cam0``..``cam3``, ``velodyne``, ``imu`` and ``gnss`` frames (those present,
    or ``sensors=``). ``speed`` paces them at their stamps (``None``: as fast
    as they are read). See the module docstring for payloads and ``meta``.
    """

    def __init__(
        self,
        path: str | Path | KittiRawDrive,
        *,
        sensors: Sequence[str] | None = None,
        prefix: str = "",
        sweep_time: bool = False,
        speed: float | None = None,
        capacity: int = 16,
    ) -> None:
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        self.drive = (
            path
            if isinstance(path, KittiRawDrive)
            else KittiRawDrive(path, sensors=sensors, prefix=prefix, sweep_time=sweep_time)
        )
        self.speed = speed
        specs = []
        for sensor in self.drive.streams:
            spec = self.drive.spec(sensor)
            specs.append(SensorSpec(**{**_fields(spec), "capacity": capacity}))
        super().__init__(specs=tuple(specs))

    def frames(self) -> AsyncIterator[Frame]:
        return self._frames(self.drive.streams)

    def sources(self) -> list[KittiSensorSource]:
        """The same drive as one source per sensor."""
        return [KittiSensorSource(self.drive, s, speed=self.speed) for s in self.drive.streams]


class KittiSensorSource(_DriveSource):
    """One sensor of a KITTI raw drive (see :func:`kitti_raw_sources`)."""

    def __init__(self, drive: KittiRawDrive, sensor: str, *, speed: float | None = None) -> None:
        self.drive = drive
        self.speed = speed
        super().__init__(drive.spec(sensor))

    def frames(self) -> AsyncIterator[Frame]:
        return self._frames([self.name])


def kitti_raw_sources(
    path: str | Path,
    *,
    sensors: Sequence[str] | None = None,
    prefix: str = "",
    sweep_time: bool = False,
    speed: float | None = None,
) -> list[KittiSensorSource]:
    """One :class:`~fusion.Source` per sensor of a KITTI raw drive, the dataset's stamps on each."""
    drive = KittiRawDrive(path, sensors=sensors, prefix=prefix, sweep_time=sweep_time)
    return [KittiSensorSource(drive, s, speed=speed) for s in drive.streams]


def _fields(spec: SensorSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in SensorSpec.__dataclass_fields__}
