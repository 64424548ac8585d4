"""``CanSource``: CAN bus frames from a log file or a live bus (python-can), decoded
with a database (cantools) when one is given.

This module moves frames; :class:`~adapters.can._decoder.CanDecoder` names the
sensors and turns python-can messages into rows and counted losses. A log is
read and decoded in a worker thread in batches; a live bus is polled in a
worker thread with a short timeout, so cancelling takes at most that.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from adapters.can._decoder import CanDecoder, Event, Loss, Unknown, load_database
from adapters.can._io import BUS_ERRORS_IN_A_ROW, bus_batch, log_batches, open_bus
from adapters.errors import SourceOpenError
from fusion.clock import ClockModel
from fusion.errors import ConfigError, SourceError
from fusion.frames import Frame, Overflow, SensorSpec
from fusion.source import Source
from fusion.timing import current_clock

log = logging.getLogger("adapters.can")

_POLL_S = 0.2  # a live bus is polled this often, so cancelling is prompt

Batch = list[Event | Loss]


class CanSource(Source):
    """CAN frames (kind ``can``) from a log python-can reads or a live python-can bus.

    Exactly one input: ``path`` (a candump ``-l`` ``.log``, Vector ``.asc`` or
    ``.blf``, PEAK ``.trc``, ``.csv``, ``.mf4`` where asammdf is installed; any
    of them ``.gz``) or ``interface`` (a python-can interface name:
    ``"socketcan"``, ``"pcan"``, ``"kvaser"``, ``"vector"``, ``"udp_multicast"``,
    ``"socketcand"``, ``"virtual"`` ...) with its ``channel``, ``bitrate``,
    ``fd`` and further ``bus_options`` (passed to ``can.Bus``).

    Sensors (:mod:`adapters.can._decoder`): ``name`` holds raw frames
    (:data:`~adapters.can.RAW_DTYPE` rows); each id of ``ids`` gets
    ``<name>.0x<ID>``; with a ``database`` (DBC, KCD, ARXML, SYM; a path or a
    cantools database) each of its messages gets ``<name>.<Message>`` whose
    rows are ``t`` and the decoded signals (units, scaling and choices in the
    sensor's ``meta["signals"]``). ``unknown="count"`` counts ids the database
    does not know instead of keeping them raw; ``raw=False`` keeps no raw copy
    of a database message's frames.

    Stamps: ``t_sensor`` is the log's or the interface's stamp of each frame
    (hardware or kernel time for a live bus), ``t_arrival`` the host time it
    was received (live only), so an ``online`` clock model learns the offset.
    ``speed`` paces a log at its own timing (``None``: as fast as consumed).
    """

    _ledger_unit = "can_frame"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        interface: str | None = None,
        channel: str | int | None = None,
        bitrate: int | None = None,
        fd: bool = False,
        bus_options: Mapping[str, Any] | None = None,
        database: str | Path | Any = None,
        ids: Sequence[int] = (),
        unknown: Unknown = "raw",
        raw: bool = True,
        name: str = "can",
        speed: float | None = None,
        clock: ClockModel | None = None,
        capacity: int = 1024,
        overflow: Overflow | None = None,
    ) -> None:
        if (path is None) == (interface is None):
            raise ConfigError(
                "CanSource needs exactly one of path= (a CAN log) or interface= (a python-can "
                f"bus), got {'both' if path is not None else 'neither'}"
            )
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        self.path = None if path is None else Path(path)
        if self.path is not None and not self.path.is_file():
            raise SourceOpenError(f"CAN log {str(self.path)!r} does not exist", sensor=name)
        self.interface = interface
        self.channel = channel
        self.bus_options: dict[str, Any] = dict(bus_options or {})
        if bitrate is not None:
            self.bus_options["bitrate"] = bitrate
        if fd:
            self.bus_options["fd"] = True
        self.speed = speed
        if isinstance(database, (str, Path)):
            self.database_path: str | None = str(database)
            database = load_database(database)
        else:
            self.database_path = None
        self.decoder = CanDecoder(name, database=database, ids=ids, unknown=unknown, raw=raw)
        live = self.path is None
        input_ = str(self.path) if self.path is not None else f"{interface}:{channel}"
        specs = []
        for sensor, meta in self.decoder.sensors():
            quiet = sensor == name and not raw and unknown == "count" and database is not None
            specs.append(
                SensorSpec(
                    sensor,
                    kind="can",
                    clock=clock,
                    capacity=capacity,
                    optional=quiet,
                    overflow=overflow or ("drop_oldest" if live else "block"),
                    meta={"input": input_, "database": self.database_path, **meta},
                )
            )
        super().__init__(specs=tuple(specs))
        self.bus_errors = 0
        """Errors the live bus reported (each counted as ``bus_error``)."""

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the CAN frames read and the live bus's errors."""
        return {
            **super().statistics(),
            "can_frames": self.decoder.frames_seen,
            "bus_errors": self.bus_errors,
        }

    async def frames(self) -> AsyncIterator[Frame]:
        batches = self._log_batches() if self.path is not None else self._bus_batches()
        clock = current_clock()
        start: tuple[int, int] | None = None
        async for events in batches:
            for event in events:
                if isinstance(event, Loss):
                    if event.units:
                        self.count_received(event.units, sensor=event.sensor)
                    self.count_error(
                        event.reason, event.message, units=event.units, sensor=event.sensor
                    )
                    continue
                if event.units:
                    self.count_received(event.units, sensor=event.sensor)
                if self.speed is not None:
                    start = start or (clock.now(), event.t_sensor)
                    await clock.sleep_until(
                        start[0] + round((event.t_sensor - start[1]) / self.speed)
                    )
                yield self.make_frame(
                    event.t_sensor,
                    event.row,
                    sensor=event.sensor,
                    t_arrival=event.t_arrival,
                    meta=event.meta,
                    units=event.units,
                )

    async def frame_batches(self) -> AsyncIterator[list[Frame]]:
        """A log's frames a batch at a time (one trip through the event loop per batch);
        a paced or live source's one at a time."""
        if self.path is None or self.speed is not None:
            async for frames in super().frame_batches():
                yield frames
            return
        batch: list[Frame] = []
        async for frame in self.frames():
            batch.append(frame)
            if len(batch) >= 256:
                yield batch
                batch = []
        if batch:
            yield batch

    async def _log_batches(self) -> AsyncIterator[Batch]:
        assert self.path is not None
        path, decoder, name = self.path, self.decoder, self.name

        def batches() -> Iterator[Batch]:
            for messages in log_batches(path, name):
                yield decoder.push(messages, None, f"{path.name}: ")

        iterator = batches()
        clock = current_clock()
        while True:
            with clock.busy():
                batch = await anyio.to_thread.run_sync(next, iterator, None)
            if batch is None:
                return
            yield batch

    async def _bus_batches(self) -> AsyncIterator[Batch]:
        assert self.interface is not None
        bus = await self.run_blocking(
            open_bus, self.interface, self.channel, self.bus_options, self.name
        )
        clock = current_clock()
        where = f"{self.interface}:{self.channel}: "
        try:
            while True:
                messages, arrivals, errors = await self.run_blocking(
                    bus_batch, bus, clock.now, _POLL_S
                )
                for message in errors:
                    self.bus_errors += 1
                    self.count_received(1)
                    self.count_error("bus_error", f"{where}{message}")
                if len(errors) >= BUS_ERRORS_IN_A_ROW and not messages:
                    raise SourceError(
                        f"CAN interface {self.interface!r} channel {self.channel!r} failed "
                        f"{len(errors)} times in a row: {errors[-1]}",
                        sensor=self.name,
                    )
                if messages:
                    yield self.decoder.push(messages, arrivals, where)
        finally:
            with anyio.CancelScope(shield=True):
                await self.run_blocking(bus.shutdown)
