"""A PX4 ULog read through pyulog: topics as structured arrays, dropouts, the GPS anchor.

pyulog parses the whole file at once (its ``ULog`` class keeps every message
in memory, about the file's size again), so :func:`read_ulog` checks the
file's size against ``max_bytes`` before it asks pyulog. Each logged topic
instance (``name``, ``multi_id``) becomes one :class:`Topic`: a structured
array whose first field ``t`` is the message's ``timestamp`` in int64 ns (the
autopilot's boot clock) and whose other fields are the message's, in the
log's order and types (arrays flattened by pyulog: ``accelerometer_m_s2[0]``).

The wall-clock anchor is the offset UTC minus boot time, from the GPS topics
(``vehicle_gps_position``, ``sensor_gps``: ``time_utc_usec`` against
``timestamp``), the median over the fixes that carry a UTC time, so one bad fix
does not move it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adapters.errors import SourceOpenError

MAX_BYTES = 4 << 30
"""Largest log read by default (pyulog holds all of it in memory)."""

GPS_TOPICS = ("vehicle_gps_position", "sensor_gps")
"""Topics whose ``time_utc_usec`` anchors the boot clock to UTC."""

ULOG_MAGIC = b"ULog\x01\x12\x35"


@dataclass(frozen=True)
class Topic:
    """One topic instance of a log: its rows, ``t`` (ns) first."""

    name: str
    multi_id: int
    rows: np.ndarray
    types: dict[str, str] = field(default_factory=dict)
    """Each field's ULog type (``float``, ``uint64_t`` ...)."""

    @property
    def sensor_suffix(self) -> str:
        """``name`` for instance 0, ``name.<multi_id>`` for the others."""
        return self.name if self.multi_id == 0 else f"{self.name}.{self.multi_id}"


@dataclass(frozen=True)
class Dropout:
    """A stretch the logger could not write (its buffer was full)."""

    t_ns: int
    duration_ms: int


@dataclass(frozen=True)
class UlogContent:
    """What :func:`read_ulog` found."""

    path: Path
    topics: list[Topic]
    dropouts: list[Dropout]
    utc_offset_ns: int | None
    """UTC minus the log's boot clock (ns), from GPS; ``None`` without a fix."""
    info: dict[str, Any]
    """The log's information messages (``sys_name``, ``ver_hw``, ``ver_sw`` ...)."""
    start_ns: int
    end_ns: int
    corrupt: bool
    """pyulog skipped damaged bytes."""
    available: list[str]
    """Every topic instance the log holds (sensor suffixes), chosen or not."""


def looks_like_ulog(path: str | Path) -> bool:
    """Whether ``path`` is a file that begins with the ULog magic bytes."""
    try:
        with open(path, "rb") as f:
            return f.read(len(ULOG_MAGIC) - 1) == ULOG_MAGIC[:-1]
    except OSError:
        return False


def read_ulog(
    path: str | Path,
    topics: Sequence[str] | None = None,
    *,
    sensor: str = "ulog",
    max_bytes: int = MAX_BYTES,
) -> UlogContent:
    """Parse ``path`` with pyulog, keeping ``topics`` (names or ``name.<multi_id>``;
    ``None``: all).

    Raises :class:`~adapters.errors.SourceOpenError` naming the file for a
    missing, oversized or unreadable log, and for a chosen topic the log lacks.
    """
    from pyulog import ULog
    from pyulog.exceptions import ULogException

    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise SourceOpenError(f"ULog {str(path)!r}: {err.strerror}", sensor=sensor) from err
    if size > max_bytes:
        raise SourceOpenError(
            f"ULog {str(path)!r} is {size:,} bytes, above max_bytes={max_bytes:,} "
            "(pyulog reads a log whole); raise max_bytes to read it",
            sensor=sensor,
        )
    if not looks_like_ulog(path):
        raise SourceOpenError(
            f"{str(path)!r} is not a PX4 ULog: it does not begin with the bytes 'ULog' 01 12",
            sensor=sensor,
        )
    try:
        with open(path, "rb") as f:  # ours to close: pyulog leaves its own open on an error
            log = ULog(f)
    except (ULogException, ValueError, IndexError, struct.error) as err:
        raise SourceOpenError(f"ULog {str(path)!r} cannot be read: {err}", sensor=sensor) from err
    every = [_topic(d) for d in log.data_list]
    every.sort(key=lambda t: (t.name, t.multi_id))
    available = [t.sensor_suffix for t in every]
    if topics is None:
        chosen = every
    else:
        wanted = list(dict.fromkeys(topics))
        unknown = [w for w in wanted if w not in available and w not in {t.name for t in every}]
        if unknown:
            raise SourceOpenError(
                f"ULog {str(path)!r} has no topic {', '.join(map(repr, unknown))}; it has "
                f"{', '.join(available) or 'none'}",
                sensor=sensor,
            )
        chosen = [t for t in every if t.sensor_suffix in wanted or t.name in wanted]
    return UlogContent(
        path=path,
        topics=chosen,
        dropouts=[Dropout(int(d.timestamp) * 1000, int(d.duration)) for d in log.dropouts],
        utc_offset_ns=utc_offset(every),
        info={k: v for k, v in log.msg_info_dict.items() if isinstance(v, (str, int, float))},
        start_ns=int(log.start_timestamp) * 1000,
        end_ns=int(log.last_timestamp) * 1000,
        corrupt=bool(log.file_corruption),
        available=available,
    )


def _topic(data: Any) -> Topic:
    names = [f.field_name for f in data.field_data]
    types = {f.field_name: f.type_str for f in data.field_data}
    columns = [n for n in names if n != "timestamp" and n in data.data]
    dtype = [("t", "<i8")] + [(n, data.data[n].dtype.newbyteorder("<")) for n in columns]
    stamps = np.asarray(data.data["timestamp"], dtype=np.uint64)
    rows = np.empty(len(stamps), dtype=dtype)
    rows["t"] = stamps.astype(np.int64) * 1000
    for n in columns:
        rows[n] = data.data[n]
    return Topic(data.name, int(data.multi_id), rows, types)


def utc_offset(topics: Sequence[Topic]) -> int | None:
    """UTC minus boot time (ns): the median of ``time_utc_usec - timestamp`` over GPS
    fixes that carry a UTC time; ``None`` when none does."""
    offsets: list[np.ndarray] = []
    for topic in topics:
        if topic.name in GPS_TOPICS and "time_utc_usec" in (topic.rows.dtype.names or ()):
            utc = topic.rows["time_utc_usec"].astype(np.int64)
            ok = utc > 0
            offsets.append(utc[ok] * 1000 - topic.rows["t"][ok])
    joined = np.concatenate(offsets) if offsets else np.empty(0, np.int64)
    return int(np.median(joined)) if len(joined) else None


def merged_order(topics: Sequence[Topic]) -> tuple[np.ndarray, np.ndarray]:
    """(topic index, row index) of every message of ``topics`` in time order (ties:
    topic order, then row order)."""
    if not topics:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    which = np.concatenate([np.full(len(t.rows), i, np.int64) for i, t in enumerate(topics)])
    rows = np.concatenate([np.arange(len(t.rows), dtype=np.int64) for t in topics])
    stamps = np.concatenate([t.rows["t"] for t in topics])
    order = np.lexsort((rows, which, stamps))
    return which[order], rows[order]
