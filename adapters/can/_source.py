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
import numpy as np

from adapters.can._decoder import Block, CanDecoder, Event, Loss, Unknown, load_database
from adapters.can._io import BUS_ERRORS_IN_A_ROW, bus_batch, log_batches, open_bus
from adapters.errors import SourceOpenError
from fusion import Frame, Overflow, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, SourceError

log = logging.getLogger("adapters.can")

_POLL_S = 0.2  # a live bus is polled this often, so cancelling is prompt

Batch = list[Event | Loss]
Blocks = list[Block | Loss]


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

    ``block`` rows per frame (default 1: a frame per CAN frame). With ``block > 1``
    a frame of a sensor holds up to ``block`` consecutive rows of it (``t_sensor``
    and ``t_arrival`` those of its first row): a log's frames hold exactly ``block``
    rows but the last of each sensor, a live bus's the rows one poll gathered. The
    frames of one sensor stay in order; those of different sensors come a batch of
    the log (4096 CAN frames) at a time. This is the fast path for long logs: no
    Python work per CAN frame beyond reading python-can's message, a frame per
    ``block`` rows (``benchmarks/bench_can.py``). A frame holding the first row of a
    named channel carries ``meta["channel_names"]`` (``{"0": "can0"}``).
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
        block: int = 1,
        clock: ClockModel | None = None,
        capacity: int = 1024,
        overflow: Overflow | None = None,
    ) -> None:
        if (path is None) == (interface is None):
            raise ConfigError(
                "CanSource needs exactly one of path= (a CAN log) or interface= (a python-can "
                f"bus), got {'both' if path is not None else 'neither'}"
            )
        if block < 1:
            raise ConfigError(f"block must be >= 1 row, got {block}")
        self.block = block
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
            # A database lists messages a bus may never send: their sensors are optional.
            quiet = quiet or meta.get("format") == "can_signals"
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
        if self.block > 1:
            async for frames in self._block_frames():
                for frame in frames:
                    yield frame
            return
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
        if self.block > 1 and self.speed is None:
            async for frames in self._block_frames():
                yield frames
            return
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

    async def _block_frames(self) -> AsyncIterator[list[Frame]]:
        """Frames of up to ``block`` rows, a list per batch of the log or poll of the bus."""
        live = self.path is None
        batches = self._bus_batches(blocks=True) if live else self._log_batches(blocks=True)
        pending: dict[str, Block] = {}
        clock = current_clock()
        start: tuple[int, int] | None = None
        async for items in batches:
            out: list[Frame] = []
            for item in items:
                if isinstance(item, Loss):
                    if item.units:
                        self.count_received(item.units, sensor=item.sensor)
                    self.count_error(
                        item.reason, item.message, units=item.units, sensor=item.sensor
                    )
                    continue
                if item.units_per_row:
                    self.count_received(len(item.rows) * item.units_per_row, sensor=item.sensor)
                held = pending.pop(item.sensor, None)
                if held is not None:
                    item = _joined(held, item)
                whole = len(item.rows) if live else len(item.rows) - len(item.rows) % self.block
                out += self._cut(item, whole)
                if whole < len(item.rows):
                    pending[item.sensor] = _rest(item, whole)
            if self.speed is not None:
                out.sort(key=lambda f: f.t_sensor)
                for frame in out:
                    start = start or (clock.now(), frame.t_sensor)
                    await clock.sleep_until(
                        start[0] + round((frame.t_sensor - start[1]) / self.speed)
                    )
                    yield [frame]
            elif out:
                yield out
        rest = [f for held in pending.values() for f in self._cut(held, len(held.rows))]
        if rest:
            yield rest

    def _cut(self, item: Block, whole: int) -> list[Frame]:
        """Frames of ``block`` rows of the first ``whole`` rows of ``item``."""
        frames = []
        rows, block = item.rows, self.block
        stamps = rows["t"][:whole:block].tolist()
        arrivals = None if item.arrivals is None else item.arrivals[:whole:block].tolist()
        names = dict(item.meta["channel_names"]) if item.meta else {}
        for k, i in enumerate(range(0, whole, block)):
            part = rows[i : i + block]
            meta = None
            if names:  # the names of the channels whose first frame is in this part
                present = set(np.unique(part["channel"]).tolist())
                found = {c: names.pop(c) for c in list(names) if int(c) in present}
                meta = {"channel_names": found} if found else None
            frames.append(
                self.make_frame(
                    stamps[k],
                    part,
                    sensor=item.sensor,
                    t_arrival=None if arrivals is None else arrivals[k],
                    meta=meta,
                    units=len(part) * item.units_per_row,
                )
            )
        return frames

    async def _log_batches(self, blocks: bool = False) -> AsyncIterator[Any]:
        assert self.path is not None
        path, decoder, name = self.path, self.decoder, self.name
        push = decoder.push_blocks if blocks else decoder.push

        def batches() -> Iterator[Any]:
            for messages in log_batches(path, name):
                yield push(messages, None, f"{path.name}: ")

        iterator = batches()
        clock = current_clock()
        while True:
            with clock.busy():
                batch = await anyio.to_thread.run_sync(next, iterator, None)
            if batch is None:
                return
            yield batch

    async def _bus_batches(self, blocks: bool = False) -> AsyncIterator[Any]:
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
                    push = self.decoder.push_blocks if blocks else self.decoder.push
                    yield push(messages, arrivals, where)
        finally:
            with anyio.CancelScope(shield=True):
                await self.run_blocking(bus.shutdown)


def _joined(held: Block, item: Block) -> Block:
    """``held`` rows of a sensor then ``item``'s (the first carries the channel names)."""
    arrivals = None
    if held.arrivals is not None and item.arrivals is not None:
        arrivals = np.concatenate([held.arrivals, item.arrivals])
    meta = held.meta if item.meta is None else {**(held.meta or {}), **item.meta}
    if held.meta and item.meta:
        meta = {"channel_names": {**held.meta["channel_names"], **item.meta["channel_names"]}}
    return Block(
        item.sensor, np.concatenate([held.rows, item.rows]), arrivals, item.units_per_row, meta
    )


def _rest(item: Block, whole: int) -> Block:
    """The rows of ``item`` from ``whole`` on, with the channel names not yet given."""
    arrivals = None if item.arrivals is None else item.arrivals[whole:]
    meta = item.meta
    if meta and whole:
        given = set(np.unique(item.rows["channel"][:whole]).tolist())
        left = {c: n for c, n in meta["channel_names"].items() if int(c) not in given}
        meta = {"channel_names": left} if left else None
    return Block(item.sensor, item.rows[whole:], arrivals, item.units_per_row, meta)
