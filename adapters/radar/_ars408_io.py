"""The ARS408's CAN frames in, its lists as frames out: a CAN log or a live bus read
through the CAN adapter (python-can), decoded with the packaged database (cantools,
:class:`adapters.can.CanDecoder`) and assembled by :mod:`adapters.radar._ars408`.

A log is read and assembled in a worker thread a batch at a time; a live bus is
polled in a worker thread with a short timeout (as :class:`adapters.CanSource`
does), so cancelling takes at most that. When a live source stops, the CAN frames
of the lists still open are lost as ``incomplete``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from adapters.radar import _ars408
from fusion import Frame, current_clock
from fusion.errors import SourceError

if TYPE_CHECKING:
    from adapters.radar._source import RadarSource

_POLL_S = 0.2

Items = list["_ars408.Scan | _ars408.Lost"]


def _pipeline(source: RadarSource) -> tuple[Any, _ars408.Assembler]:
    from adapters.can import CanDecoder

    prefix = f"{source.name}_can"
    decoder = CanDecoder(prefix, database=_ars408.load(), unknown="count", raw=False)
    return decoder, _ars408.Assembler(prefix)


def _sensor(source: RadarSource, kind: str) -> str:
    return source.objects if kind == "objects" else source.detections


def _account(source: RadarSource, item: _ars408.Scan | _ars408.Lost) -> Frame | None:
    sensor = _sensor(source, item.kind)
    source.count_received(item.units, sensor=sensor)
    if isinstance(item, _ars408.Lost):
        source.count_error(
            item.reason, f"{sensor}: {item.message}", units=item.units, sensor=sensor
        )
        return None
    return source.make_frame(
        item.t_sensor,
        item.data,
        sensor=sensor,
        t_arrival=item.t_arrival,
        meta=item.meta,
        units=item.units,
    )


async def ars408_frames(source: RadarSource) -> AsyncIterator[Frame]:
    """Every list of the source's CAN log or bus as a frame (losses counted)."""
    if source.log is not None:
        async for frame in _log_frames(source):
            yield frame
    else:
        async for frame in _bus_frames(source):
            yield frame


async def _log_frames(source: RadarSource) -> AsyncIterator[Frame]:
    from adapters.can import log_batches

    assert source.log is not None
    path, name = source.log, source.name
    decoder, assembler = _pipeline(source)

    def batches() -> Iterator[Items]:
        for messages in log_batches(path, name):
            yield assembler.push(decoder.push(messages, None, f"{path.name}: "), "")
        yield assembler.flush()

    iterator = batches()
    clock = current_clock()
    start: tuple[int, int] | None = None
    made = 0
    while True:
        with clock.busy():
            items = await anyio.to_thread.run_sync(next, iterator, None)
        if items is None:
            break
        for item in items:
            frame = _account(source, item)
            if frame is None:
                continue
            if source.speed is not None:
                start = start or (clock.now(), frame.t_sensor)
                due = start[0] + round((frame.t_sensor - start[1]) / source.speed)
                await clock.sleep_until(due)
            made += 1
            yield frame
    if not made:
        source._nothing_decoded()


async def _bus_frames(source: RadarSource) -> AsyncIterator[Frame]:
    from adapters.can import BUS_ERRORS_IN_A_ROW, bus_batch, open_bus

    decoder, assembler = _pipeline(source)
    options = dict(source.bus_options)
    bus = await source.run_blocking(
        open_bus, source.interface, source.channel, options, source.name
    )
    source.bus = bus
    source._listening.set()
    clock = current_clock()
    where = f"{source.interface}:{source.channel}: "
    try:
        while True:
            messages, arrivals, errors = await source.run_blocking(
                bus_batch, bus, clock.now, _POLL_S
            )
            for message in errors:
                source.count_received(1, sensor=source.detections)
                source.count_error("bus_error", f"{where}{message}", sensor=source.detections)
            if len(errors) >= BUS_ERRORS_IN_A_ROW and not messages:
                raise SourceError(
                    f"CAN interface {source.interface!r} channel {source.channel!r} failed "
                    f"{len(errors)} times in a row: {errors[-1]}",
                    sensor=source.name,
                )
            if not messages:
                continue
            for item in assembler.push(decoder.push(messages, arrivals, where), ""):
                frame = _account(source, item)
                if frame is not None:
                    yield frame
    finally:
        for kind, held in assembler.held.items():
            if held:
                sensor = _sensor(source, kind)
                source.count_received(held, sensor=sensor)  # counted when their list ends
                source.count_error(
                    "incomplete",
                    f"{sensor}: {held} CAN frames of the {kind} list open when the source stopped",
                    units=held,
                    sensor=sensor,
                )
        assembler.open = {"clusters": None, "objects": None}
        with anyio.CancelScope(shield=True):
            await source.run_blocking(bus.shutdown)
