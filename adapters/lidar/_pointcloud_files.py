"""``PointCloudFiles``: a directory or glob of point-cloud files as a source.

Each file is one sweep. Readers by suffix: ``.pcd`` (ascii, binary,
binary_compressed), ``.ply`` and headerless ``.bin`` in a declared ``layout``
(:mod:`adapters.lidar._layouts`: ``"kitti"``, ``"nuscenes"``... or a numpy
dtype; without one the name decides where it can, ``*.pcd.bin`` being
nuScenes, and values are checked). Timestamps come from
exactly one of: a fixed ``rate_hz`` (frame i at ``start_ns + i / rate``), a
timestamps file (one stamp per line: a number in ``time_unit`` or an ISO
date-time, as KITTI's ``timestamps.txt``), ``timestamps="names"`` (the last
number in each file name, in ``time_unit``), or an explicit sequence of ns.
A count mismatch between files and stamps is a :class:`ConfigError` before
the first frame; a file that does not decode is counted (``bad_file``) and
skipped with a message naming it and what was expected; the others are read.
"""

from __future__ import annotations

import functools
import glob
import re
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adapters._side_files import TIMESTAMPS_LIMIT, read_small_text
from adapters._timeseries import parse_time_ns
from adapters.errors import SourceOpenError
from adapters.lidar._layouts import (
    MAX_COORDINATE,
    LayoutLike,
    describe_layout,
    read_bin,
    resolve_layout,
)
from adapters.lidar._pcd import read_pcd_with_meta
from adapters.lidar._ply import read_ply
from fusion import Frame, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, HyperframesError

Reader = Callable[[Path], "np.ndarray | tuple[np.ndarray, dict[str, Any]]"]

READERS: dict[str, Reader] = {
    ".pcd": read_pcd_with_meta,
    ".ply": read_ply,
    ".bin": read_bin,
}
"""Reader per file suffix; add to it to teach :class:`PointCloudFiles` a format. A
reader returns the points, or (points, meta for the frame)."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _natural_key(path: Path) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


def find_files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    """Expand a directory, a glob pattern or a list into point-cloud files, naturally sorted."""
    if isinstance(paths, (str, Path)):
        root = Path(paths)
        if root.is_dir():
            found = [p for p in root.iterdir() if p.suffix.lower() in READERS]
        elif root.is_file():
            found = [root]
        else:
            found = [Path(p) for p in glob.glob(str(paths))]
        return sorted(found, key=_natural_key)
    return [Path(p) for p in paths]


class PointCloudFiles(Source):
    """Point-cloud files, one sweep per file, in natural file-name order (contract).

    ``PointCloudFiles("scans/*.pcd", rate_hz=10)`` or
    ``PointCloudFiles("scans/", timestamps="times.txt")``. ``speed`` paces
    frames at their stamps on the runtime clock (``None``: as fast as taken).
    ``layout`` declares the records of ``.bin`` files (a preset of
    :data:`~adapters.lidar._layouts.LAYOUTS` or a numpy structured dtype);
    ``max_coordinate`` (m) bounds their plausible coordinates.
    :attr:`description` says which layout is used and why.
    """

    def __init__(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        rate_hz: float | None = None,
        timestamps: str | Path | Sequence[int] | None = None,
        time_unit: str = "s",
        start_ns: int = 0,
        name: str = "lidar",
        speed: float | None = None,
        clock: ClockModel | None = None,
        capacity: int = 8,
        layout: LayoutLike | None = None,
        max_coordinate: float = MAX_COORDINATE,
    ) -> None:
        self.files = find_files(paths)
        if not self.files:
            raise SourceOpenError(f"no point-cloud files found at {str(paths)!r}", sensor=name)
        unknown = sorted({p.suffix for p in self.files if p.suffix.lower() not in READERS})
        if unknown:
            raise SourceOpenError(
                f"no reader for {', '.join(unknown)} files (known: {', '.join(READERS)})",
                sensor=name,
            )
        if (rate_hz is None) == (timestamps is None):
            raise ConfigError(
                f"PointCloudFiles {name!r}: give exactly one of rate_hz= or timestamps= "
                "(a file, 'names', or a list of ns)"
            )
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        self.stamps = self._stamps(rate_hz, timestamps, time_unit, start_ns, name)
        self.speed = speed
        try:
            self.layout = None if layout is None else resolve_layout(layout)
        except ValueError as err:
            raise ConfigError(f"PointCloudFiles {name!r}: {err}") from err
        self.max_coordinate = max_coordinate
        meta: dict[str, Any] = {}
        bins = [p for p in self.files if p.suffix.lower() == ".bin"]
        if bins:
            meta["layout"] = describe_layout(self.layout, bins)
        self.description = f"{len(self.files)} point-cloud files" + (
            f", .bin layout {meta['layout']}" if bins else ""
        )
        """What is read and how, for humans (``hyperframes info``, logs)."""
        super().__init__(
            SensorSpec(
                name, kind="lidar", rate_hz=rate_hz, clock=clock, capacity=capacity, meta=meta
            )
        )

    def _stamps(
        self,
        rate_hz: float | None,
        timestamps: str | Path | Sequence[int] | None,
        unit: str,
        start_ns: int,
        name: str,
    ) -> list[int]:
        n = len(self.files)
        if rate_hz is not None:
            if rate_hz <= 0:
                raise ConfigError(f"PointCloudFiles {name!r}: rate_hz must be > 0, got {rate_hz}")
            return [start_ns + round(i * 1e9 / rate_hz) for i in range(n)]
        if isinstance(timestamps, str) and timestamps == "names":
            stamps = []
            for path in self.files:
                numbers = _NUMBER.findall(path.stem)
                if not numbers:
                    raise ConfigError(f"file name {path.name!r} holds no number to use as a stamp")
                stamps.append(parse_time_ns(numbers[-1], unit))
            return stamps
        if isinstance(timestamps, (str, Path)):
            source = Path(timestamps)
            text = read_small_text(  # a regular file: /dev/zero or a FIFO is refused
                source, "timestamps file", TIMESTAMPS_LIMIT, error=SourceOpenError
            )
            lines = [ln for ln in text.splitlines() if ln.strip()]
            try:
                stamps = [parse_time_ns(line, unit) for line in lines]
            except ValueError as err:
                raise ConfigError(f"timestamps file {str(source)!r}: {err}") from err
            where = f"timestamps file {str(source)!r}"
        else:
            stamps = [int(t) for t in timestamps or ()]
            where = "timestamps"
        if len(stamps) != n:
            raise ConfigError(
                f"PointCloudFiles {name!r}: {where} has {len(stamps)} stamps but there are "
                f"{n} point-cloud files; they must match one to one"
            )
        return stamps

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return True

    async def frames(self) -> AsyncIterator[Frame]:
        clock = current_clock()
        start: tuple[int, int] | None = None
        for path, t in zip(self.files, self.stamps, strict=True):
            try:
                result = await self.run_blocking(self._reader(path), path)
            except (HyperframesError, OSError, ValueError) as err:
                message = str(err)
                self.count_error("bad_file", message if str(path) in message else f"{path}: {err}")
                continue
            points, extra = result if isinstance(result, tuple) else (result, {})
            if "trailing" in extra:  # read as PCL reads it; the rest of the file is a warning
                self.count_error("trailing_bytes", f"{path}: {extra['trailing']}", units=0)
            if self.speed is not None:
                start = start or (clock.now(), t)
                await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
            yield self.make_frame(t, points, meta={"path": str(path), **extra})

    def _reader(self, path: Path) -> Reader:
        reader = READERS[path.suffix.lower()]
        if reader is read_bin:
            return functools.partial(
                read_bin, layout=self.layout, max_coordinate=self.max_coordinate
            )
        return reader
