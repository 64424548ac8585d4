"""``NmeaSource``: GNSS fixes from NMEA 0183, read from a file, a serial port, UDP or TCP.

This module only moves bytes; :class:`~adapters.nmea._decoder.NmeaDecoder`
turns lines into fixes and losses. A file is read and decoded in a worker
thread in batches of lines; a serial port is read in a worker thread
(pyserial, a short timeout so cancelling takes at most that); UDP datagrams
and a TCP stream are received on the event loop. Each frame's ``data`` is a
one-row :data:`~adapters.nmea._decoder.GNSS_DTYPE` array, ``t_sensor`` the
fix's UTC time (Unix ns) and ``t_arrival`` the host time its epoch's first
sentence arrived (live inputs), so an ``online`` clock model learns the
receiver's offset from the host.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from adapters._side_files import refuse_special
from adapters.errors import SourceOpenError
from adapters.net import UdpReceiver, parse_sender
from adapters.nmea._batch import Batch, BatchDecoder, Protocol, UbxUnit
from adapters.nmea._decoder import (
    GNSS_DTYPE,
    Event,
    Joined,
    LineSplitter,
    Loss,
    NmeaDecoder,
)
from adapters.nmea._ubx import UbxDecoder, UbxFrame, ubx_sensors
from fusion import Frame, InputLedger, Overflow, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, SourceError

log = logging.getLogger("adapters.nmea")

DEFAULT_BAUD = 4800
"""NMEA 0183's own rate; many receivers are set to 9600 or 115200."""

_BATCH_LINES = 4096  # lines of a file per worker-thread round trip
_READ_TIMEOUT = 0.2  # s: a serial read returns at least this often, so cancelling is prompt


PROTOCOLS = ("auto", "nmea", "ubx")


class NmeaSource(Source):
    """GNSS fixes (kind ``gnss``) from NMEA 0183 sentences (GGA, RMC, VTG, HDT, ZDA).

    Exactly one input: ``path`` (a log file, one sentence a line), ``port``
    (a serial device such as ``"/dev/ttyUSB0"`` at ``baud``, through pyserial),
    or ``url``: ``"udp://HOST:PORT"`` listens for datagrams of sentences,
    ``"tcp://HOST:PORT"`` connects to a receiver that serves them. The fields,
    the time of each fix (and what happens before the first RMC), and what is
    counted are described in :mod:`adapters.nmea._decoder`. ``date``
    (``"YYYY-MM-DD"``) dates fixes no sentence dates; ``speed`` paces a file
    at its fixes' own timing (``None``: as fast as they are consumed).
    ``udp://`` receives through :class:`adapters.net._udp.UdpReceiver`:
    ``sender`` (an IPv4 address, optionally ``:port``) is the only sender taken
    (default: the first one heard), ``recv_buffer`` the socket's buffer.
    ``tcp://`` reconnects, as live video does: a connection that cannot be made,
    is reset or is closed by the receiver is tried again after ``backoff[0]``
    seconds, doubling up to ``backoff[1]``, at most ``max_reconnects`` times in a
    row (``None``: until cancelled; ``0`` or ``reconnect=False``: a closed
    connection ends the source, a refused first one raises
    :class:`~adapters.errors.SourceOpenError`). Each drop is logged and counted
    (``disconnect``, each failed attempt ``open_failed``: warnings, no unit lost);
    ``statistics()`` has ``connections`` and ``disconnects``. A sentence cut by
    the drop is counted with the rest (``bad_checksum``...).

    ``protocol``: ``"nmea"`` reads lines of NMEA sentences (binary bytes before a
    sentence's ``$`` in a line are skipped and counted ``garbage``, a warning);
    ``"ubx"`` reads u-blox UBX binary messages (NMEA bytes are garbage) and
    ``"auto"`` both, mixed on one stream (:mod:`adapters.nmea._stream`): NAV-PVT,
    NAV-HPPOSLLH, NAV-SAT and ESF-MEAS/ESF-RAW become frames of ``<name>.pvt``,
    ``<name>.hpposllh``, ``<name>.sat`` and ``<name>.esf``
    (:mod:`adapters.nmea._ubx`: fields, GPS time as ``t_sensor``, what is counted),
    NMEA fixes stay on ``<name>``. Each UBX message is a unit: a frame, read past
    (other identities, counted in ``statistics()["ubx"]``) or lost by reason
    (``undated``, ``undecodable``, ``truncated``); each run of bytes that starts
    neither is one unit lost as ``garbage``.
    """

    _ledger_unit = "sentence"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        port: str | None = None,
        baud: int = DEFAULT_BAUD,
        url: str | None = None,
        name: str = "gnss",
        date: str | dt.date | None = None,
        speed: float | None = None,
        sender: str | None = None,
        recv_buffer: int | None = None,
        reconnect: bool = True,
        backoff: tuple[float, float] = (0.1, 5.0),
        max_reconnects: int | None = None,
        protocol: Protocol = "nmea",
        clock: ClockModel | None = None,
        capacity: int = 64,
        overflow: Overflow | None = None,
    ) -> None:
        given = [k for k, v in (("path", path), ("port", port), ("url", url)) if v is not None]
        if len(given) != 1:
            raise ConfigError(
                "NmeaSource needs exactly one of path= (a file), port= (a serial device) or "
                f"url= (udp:// or tcp://), got {', '.join(given) or 'none'}"
            )
        _check_options(speed, protocol, baud, backoff, max_reconnects)
        self.protocol: Protocol = protocol
        self.reconnect = reconnect
        self.backoff = backoff
        self.max_reconnects = max_reconnects if reconnect else 0
        self.connections = 0
        """``tcp://``: connections made (1 + reconnects)."""
        self.disconnects = 0
        """``tcp://``: connections that were reset or closed by the receiver."""
        self.path = None if path is None else Path(path)
        if self.path is not None and not self.path.is_file():
            refuse_special(self.path, "NMEA file", lambda m: SourceOpenError(m, sensor=name))
            raise SourceOpenError(f"NMEA file {str(self.path)!r} does not exist", sensor=name)
        self.port = port
        self.baud = baud
        self.url = url
        self._address = _parse_url(url) if url is not None else None
        self.date = dt.date.fromisoformat(date) if isinstance(date, str) else date
        self.speed = speed
        live = self.path is None
        input_ = str(self.path) if self.path is not None else port or url
        overflow = overflow or ("drop_oldest" if live else "block")
        specs = _specs(name, protocol, input_, clock, capacity, overflow)
        super().__init__(specs=specs)
        self.decoder = NmeaDecoder(live=live, date=self.date)
        self.ubx = UbxDecoder(name)
        """The UBX decoder (its ``identities`` count the UBX messages read)."""
        self._esf = f"{name}.esf"
        self._batches = BatchDecoder(name, protocol, self.decoder, self.ubx)
        self.undated: str | None = None
        """Why fixes were stamped on the fallback date (no RMC or ZDA dated them), if so."""
        self._listening = anyio.Event()
        self._bound_port: int | None = None
        if sender is not None:
            parse_sender(sender)  # an IPv4 address (a ConfigError naming it otherwise)
        self.sender = sender
        self.recv_buffer = recv_buffer
        self.udp: UdpReceiver | None = None
        """The ``udp://`` receiver (kernel drops, foreign senders), once listening."""

    def ledger(self, sensor: str | None = None) -> InputLedger:
        """As :meth:`Source.ledger`; the UBX sensors count UBX messages (unit ``message``)."""
        name = self.name if sensor is None else sensor
        if name != self.name and name not in self._ledgers:
            self._ledgers[name] = InputLedger("message")
        return super().ledger(sensor)

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the well-formed sentences read, by type (and, for
        ``udp://``, the receiver's counters)."""
        stats = {**super().statistics(), "sentences": dict(self.decoder.types)}
        if self.protocol != "nmea":
            stats["ubx"] = dict(self.ubx.identities)
        if self._address is not None and self._address[0] == "tcp":
            stats.update(connections=self.connections, disconnects=self.disconnects)
        if self.udp is not None:
            stats["udp"] = self.udp.statistics().as_dict()
        return stats

    async def wait_listening(self) -> int:
        """Wait until a ``udp://`` source is bound; return its port (``udp://HOST:0`` picks one)."""
        await self._listening.wait()
        assert self._bound_port is not None
        return self._bound_port

    async def frames(self) -> AsyncIterator[Frame]:
        if self.path is not None:
            batches = self._file_batches()
        elif self.port is not None:
            batches = self._serial_batches()
        else:
            assert self._address is not None
            scheme, host, port = self._address
            batches = (
                self._udp_batches(host, port) if scheme == "udp" else self._tcp_batches(host, port)
            )
        clock = current_clock()
        start: tuple[int, int] | None = None
        try:
            async for received, events in batches:
                if received:
                    self.count_received(received)
                for event in events:
                    if isinstance(event, UbxUnit):
                        self.count_received(1, sensor=event.sensor)
                        if event.reason is None:
                            self.ledger(event.sensor).emit(1, frames=0)
                        else:
                            self.count_error(event.reason, event.message, sensor=event.sensor)
                    elif isinstance(event, UbxFrame):
                        self.count_received(1, sensor=event.sensor)
                        if event.warning is not None:
                            self.undated = self.undated or event.warning
                            self.count_error("undated", event.warning, units=0)
                            log.warning("%s: %s", self.name, event.warning)
                        if self.speed is not None and event.sensor != self._esf:
                            start = start or (clock.now(), event.t)
                            await clock.sleep_until(
                                start[0] + round((event.t - start[1]) / self.speed)
                            )
                        yield self.make_frame(
                            event.t, event.rows, sensor=event.sensor, t_arrival=event.t_arrival
                        )
                    elif isinstance(event, Joined):  # into a fix that already went out
                        self.ledger().emit(event.units, frames=0)
                    elif isinstance(event, Loss) and event.reason == "undated":
                        self.undated = event.message  # a warning: nothing is lost
                        log.warning("%s: %s", self.name, event.message)
                    elif isinstance(event, Loss):
                        self.count_error(event.reason, event.message, units=event.units)
                    else:
                        t = int(event.row["t"][0])
                        if self.speed is not None:
                            start = start or (clock.now(), t)
                            await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
                        yield self.make_frame(
                            t, event.row, t_arrival=event.t_arrival, units=event.units
                        )
        finally:
            # Stopped mid-epoch (Ctrl-C, a live input cancelled): its sentences are lost.
            pending = self.decoder.pending()
            if pending:
                self.count_error(
                    "incomplete",
                    f"{pending} sentence(s) of an epoch not finished when the input stopped",
                    units=pending,
                )

    # -- inputs --------------------------------------------------------------------------

    async def _file_batches(self) -> AsyncIterator[Batch]:
        assert self.path is not None
        path, decoder = self.path, self.decoder

        if self.protocol != "nmea":
            where = path.name

            def chunks() -> Iterator[Batch]:
                splitter = self._batches.splitter()
                with path.open("rb") as f:
                    while chunk := f.read(1 << 16):
                        yield self._batches.decode_stream(splitter.feed(chunk), None, where)
                yield self._batches.decode_stream(splitter.flush(), None, where, final=True)

            async for batch in _in_thread(chunks):
                yield batch
            return

        def batches() -> Iterator[Batch]:
            with path.open("rb") as f:
                received, events = 0, list[Event | UbxFrame | UbxUnit]()
                for number, line in enumerate(_bounded_lines(f), 1):
                    if line.strip():
                        received += 1
                        events += decoder.push_line(line, None, f"{path.name} line {number}")
                    if received >= _BATCH_LINES:
                        yield received, events
                        received, events = 0, list[Event | UbxFrame | UbxUnit]()
                events += decoder.finish()
                yield received, events

        async for batch in _in_thread(batches):
            yield batch

    async def _serial_batches(self) -> AsyncIterator[Batch]:
        import serial  # pyserial, only when a serial port is read

        assert self.port is not None
        try:
            device = serial.Serial(self.port, self.baud, timeout=_READ_TIMEOUT)
        except (serial.SerialException, ValueError, OSError) as err:
            raise SourceOpenError(
                f"cannot open serial port {self.port!r} at {self.baud} baud: {err}",
                sensor=self.name,
            ) from err
        clock = current_clock()

        def read() -> tuple[bytes, int]:
            waiting = device.in_waiting
            data = device.read(waiting or 1)
            return data, clock.now()

        splitter = self._batches.splitter()
        try:
            while True:
                try:
                    data, arrival = await self.run_blocking(read)
                except (serial.SerialException, OSError) as err:
                    raise SourceError(
                        f"serial port {self.port!r} failed: {err}", sensor=self.name
                    ) from err
                if data:
                    yield self._batches.feed(splitter, data, arrival, self.port)
        finally:
            device.close()

    async def _udp_batches(self, host: str, port: int) -> AsyncIterator[Batch]:
        # The receiver counts foreign datagrams and kernel drops (one unit each: a
        # datagram lost unread holds an unknown number of sentences); the sentences of
        # the datagrams it returns are counted as they are decoded.
        receiver = UdpReceiver(
            self,
            host=host,
            port=port,
            sender=self.sender,
            recv_buffer=self.recv_buffer,
            counts_admitted=False,
        )
        async with receiver:
            self.udp = receiver
            self._bound_port = receiver.port
            self._listening.set()
            splitter = self._batches.splitter()
            while True:
                payload, (peer, peer_port), arrival = await receiver.receive()
                where = f"udp from {peer}:{peer_port}"
                if self.protocol == "nmea":
                    yield self._batches.decode(payload.splitlines(), arrival, where)
                else:  # a UBX message may span datagrams (a serial-to-UDP bridge)
                    yield self._batches.feed(splitter, payload, arrival, where)

    async def _tcp_batches(self, host: str, port: int) -> AsyncIterator[Batch]:
        where = f"tcp://{host}:{port}"
        attempt = 0  # failed attempts in a row
        while True:
            try:
                stream = await anyio.connect_tcp(host, port)
            except OSError as err:
                reason = f"cannot connect to {where}: {err}"
                if not self.reconnect:
                    raise SourceOpenError(reason, sensor=self.name) from err
                self.count_error("open_failed", reason, units=0)
                if attempt == 0:
                    log.warning("%s: %s (retrying until it answers)", self.name, reason)
                await self._wait_to_retry(attempt, reason)
                attempt += 1
                continue
            self.connections += 1
            if self.connections > 1:
                log.warning("%s: reconnected to %s", self.name, where)
            attempt = 0
            splitter = self._batches.splitter()
            why = "the receiver closed the connection"
            async with stream:
                while True:
                    try:
                        data = await stream.receive()
                    except anyio.EndOfStream:
                        break
                    except (anyio.BrokenResourceError, OSError) as err:
                        why = f"connection lost: {err or type(err).__name__}"
                        break
                    yield self._batches.feed(splitter, data, current_clock().now(), where)
            # a sentence the drop cut is a unit too: counted with its fault
            yield self._batches.feed(splitter, None, current_clock().now(), where)
            self.disconnects += 1
            self.count_error("disconnect", f"{where}: {why}", units=0)
            if self.max_reconnects == 0:
                break
            log.warning("%s: %s: %s; reconnecting", self.name, where, why)
            await self._wait_to_retry(0, why)
            attempt = 1
        yield self._batches.decode([], current_clock().now(), where, final=True)

    async def _wait_to_retry(self, attempt: int, reason: str) -> None:
        """Sleep before reconnect ``attempt`` (0: the first of a run); a SourceError when
        ``max_reconnects`` are spent. Real time on purpose, as the sockets' timeouts."""
        if self.max_reconnects is not None and attempt >= self.max_reconnects:
            raise SourceError(
                f"{self.url}: gave up after {attempt} reconnects: {reason}", sensor=self.name
            )
        await anyio.sleep(min(self.backoff[1], self.backoff[0] * 2**attempt))


_SENTENCE = re.compile(rb"^[$!][A-Z0-9]{3,8},")


def _check_options(
    speed: float | None,
    protocol: str,
    baud: int,
    backoff: tuple[float, float],
    max_reconnects: int | None,
) -> None:
    """The pacing, protocol, serial and reconnect options in their bounds, else a ConfigError."""
    if speed is not None and speed <= 0:
        raise ConfigError(f"speed must be > 0 or None, got {speed}")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if baud <= 0:
        raise ConfigError(f"baud must be > 0, got {baud}")
    if backoff[0] <= 0 or backoff[1] < backoff[0]:
        raise ConfigError(f"backoff must be (initial > 0, max >= initial), got {backoff!r}")
    if max_reconnects is not None and max_reconnects < 0:
        raise ConfigError(f"max_reconnects must be >= 0 or None, got {max_reconnects}")


def _specs(
    name: str,
    protocol: Protocol,
    input_: str | None,
    clock: ClockModel | None,
    capacity: int,
    overflow: Overflow,
) -> tuple[SensorSpec, ...]:
    """The fix sensor ``name``; with UBX also its sensors (``<name>.pvt``...), optional."""
    specs = [
        SensorSpec(
            name,
            kind="gnss",
            clock=clock,
            capacity=capacity,
            optional=protocol != "nmea",
            overflow=overflow,
            meta={"input": input_, "fields": list(GNSS_DTYPE.names or ()), "format": "nmea"},
        )
    ]
    if protocol != "nmea":
        specs += [
            SensorSpec(
                sensor,
                kind=kind,
                clock=clock,
                capacity=capacity,
                optional=True,
                overflow=overflow,
                meta={"input": input_, "fields": fields, "format": "ubx"},
            )
            for sensor, kind, fields in ubx_sensors(name)
        ]
    return tuple(specs)


def looks_like_nmea(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an NMEA 0183 log: a file whose first non-blank line (in its first
    4 KiB) starts like a sentence, ``$GPGGA,`` or ``!AIVDM,``."""
    p = Path(path)
    if not p.is_file():
        return False
    with p.open("rb") as f:
        head = f.read(4096)
    first = next((line.strip() for line in head.splitlines() if line.strip()), b"")
    return _SENTENCE.match(first) is not None


def _bounded_lines(f: Any) -> Iterator[bytes]:
    """Lines of a binary file, none held longer than the decoder's limit (+1 to say so)."""
    splitter = LineSplitter()
    while chunk := f.read(1 << 16):
        yield from splitter.feed(chunk)
    yield from splitter.flush()


async def _in_thread(batches: Callable[[], Iterator[Batch]]) -> AsyncIterator[Batch]:
    """Run a blocking batch generator in a worker thread, one batch per round trip."""
    iterator = batches()
    clock = current_clock()
    while True:
        with clock.busy():
            batch = await anyio.to_thread.run_sync(next, iterator, None)
        if batch is None:
            return
        yield batch


def _parse_url(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("udp", "tcp") or not parts.hostname or parts.port is None:
        raise ConfigError(
            f"url must be udp://HOST:PORT (listen) or tcp://HOST:PORT (connect), got {url!r}"
        )
    return parts.scheme, parts.hostname, parts.port
