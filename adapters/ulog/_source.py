"""``UlogSource``: a PX4 flight log (ULog) as one time-series sensor per topic.

The log is parsed once, when the source is made (:mod:`adapters.ulog._log`,
through pyulog), so its sensors are known before the run; ``frames()`` then
hands out every message of the chosen topics in time order, one frame per
message, in batches on the event loop (the arrays are already in memory).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.ulog._log import MAX_BYTES, Topic, merged_order, read_ulog
from fusion import Frame, Overflow, SensorKind, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError

log = logging.getLogger("adapters.ulog")

_BATCH = 512

_KINDS: dict[str, SensorKind] = {
    "sensor_combined": "imu",
    "vehicle_imu": "imu",
    "sensor_accel": "imu",
    "sensor_gyro": "imu",
    "vehicle_gps_position": "gnss",
    "sensor_gps": "gnss",
}


def ulog_sensor(name: str, topic: Topic) -> str:
    """The sensor of ``topic`` in a source named ``name``: ``<name>.<topic>`` (instance 0)
    or ``<name>.<topic>.<multi_id>``."""
    return f"{name}.{topic.sensor_suffix}"


class UlogSource(Source):
    """Every topic of a PX4 ULog (or the chosen ``topics``) as a time-series sensor.

    ``topics``: topic names (every instance) or ``name.<multi_id>`` (one
    instance); ``None`` keeps all. Each instance is the sensor
    ``<name>.<topic>`` (``<name>.<topic>.<multi_id>`` for instances past 0)
    whose frames hold one message as a one-row structured array: ``t`` (int64
    ns) then the message's fields in the log's types (arrays flattened as
    pyulog names them, ``gyro_rad[0]``). Kinds: ``imu`` for the IMU topics,
    ``gnss`` for GPS, ``timeseries`` for the rest.

    Stamps: ``t_sensor`` is the message's ``timestamp`` (the autopilot's boot
    clock, µs made ns). The GPS topics' UTC time anchors that clock
    (``utc_offset_ns``, also in every sensor's ``meta``); ``utc=True`` adds it
    so ``t_sensor`` is a UTC date (a log without a GPS fix is then refused).

    Losses: the logger's dropouts (its buffer was full; the log says when and
    for how many ms, not how many messages) are counted as ``dropout`` errors
    with their time and length, and listed in :meth:`statistics`. pyulog
    reads the log whole: a file above ``max_bytes`` is refused before it is
    read. ``speed`` paces the log at its own timing (``None``: as fast as
    consumed).
    """

    _ledger_unit = "message"

    def __init__(
        self,
        path: str | Path,
        *,
        topics: Sequence[str] | None = None,
        name: str = "ulog",
        utc: bool = False,
        speed: float | None = None,
        max_bytes: int = MAX_BYTES,
        clock: ClockModel | None = None,
        capacity: int = 1024,
        overflow: Overflow | None = None,
    ) -> None:
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        if topics is not None and isinstance(topics, str):
            raise ConfigError(f"topics must be a list of topic names, got the string {topics!r}")
        self.path = Path(path)
        self.speed = speed
        self.content = read_ulog(self.path, topics, sensor=name, max_bytes=max_bytes)
        if not self.content.topics:
            raise ConfigError(f"ULog {str(self.path)!r} holds no logged topic")
        self.utc_offset_ns = self.content.utc_offset_ns
        if utc and self.utc_offset_ns is None:
            raise ConfigError(
                f"ULog {str(self.path)!r}: utc=True needs a GPS fix with a UTC time "
                f"(topics {', '.join(('vehicle_gps_position', 'sensor_gps'))}); it has none"
            )
        self._shift = self.utc_offset_ns if utc and self.utc_offset_ns is not None else 0
        self._sensors = [ulog_sensor(name, t) for t in self.content.topics]
        specs = []
        for topic, sensor in zip(self.content.topics, self._sensors, strict=True):
            rows = topic.rows
            span = (int(rows["t"][-1]) - int(rows["t"][0])) if len(rows) > 1 else 0
            rate = (len(rows) - 1) / (span / 1e9) if span > 0 else None
            specs.append(
                SensorSpec(
                    sensor,
                    kind=_KINDS.get(topic.name, "timeseries"),
                    rate_hz=rate,
                    clock=clock,
                    capacity=capacity,
                    overflow=overflow or "block",
                    meta={
                        "input": str(self.path),
                        "format": "ulog",
                        "topic": topic.name,
                        "multi_id": topic.multi_id,
                        "fields": list(rows.dtype.names or ())[1:],
                        "types": topic.types,
                        "utc_offset_ns": self.utc_offset_ns,
                        "t_sensor_clock": "utc" if utc else "boot",
                    },
                )
            )
        super().__init__(specs=tuple(specs))

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the log's dropouts (time ns, length ms) and anchor."""
        return {
            **super().statistics(),
            "dropouts": [(d.t_ns, d.duration_ms) for d in self.content.dropouts],
            "utc_offset_ns": self.utc_offset_ns,
        }

    def expected_frames(self) -> int | None:
        return sum(len(t.rows) for t in self.content.topics)

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return True

    async def frames(self) -> AsyncIterator[Frame]:
        async for batch in self.frame_batches():
            for frame in batch:
                yield frame

    async def frame_batches(self) -> AsyncIterator[list[Frame]]:
        """The log's messages in time order, a batch at a time (one per message when paced)."""
        content = self.content
        first = self._sensors[0]
        for dropout in content.dropouts:
            self.count_error(
                "dropout",
                f"{content.path.name}: the logger dropped {dropout.duration_ms} ms of messages "
                f"at t={dropout.t_ns / 1e9:.6f} s",
                units=0,
                sensor=first,
            )
        if content.corrupt:
            self.count_error(
                "corrupt",
                f"{content.path.name}: pyulog skipped damaged bytes (messages there are lost "
                "uncounted)",
                units=0,
                sensor=first,
            )
        which, index = merged_order(content.topics)
        clock = current_clock()
        start: tuple[int, int] | None = None
        batch: list[Frame] = []
        for k in range(len(which)):
            topic = content.topics[which[k]]
            i = int(index[k])
            sensor = self._sensors[which[k]]
            row = topic.rows[i : i + 1]
            t = int(row["t"][0]) + self._shift
            self.count_received(1, sensor=sensor)
            frame = self.make_frame(t, row, sensor=sensor)
            if self.speed is not None:
                start = start or (clock.now(), t)
                await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
                yield [frame]
                continue
            batch.append(frame)
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        if batch:
            yield batch
