"""An :class:`~adapters.nmea._source.NmeaSource`'s bytes as batches of units and events.

What an input delivered (a file's lines or chunks, a datagram, a TCP or serial
read) is cut into units (NMEA lines; with UBX, messages and garbage runs) and
decoded here; :class:`BatchDecoder` keeps the one piece of state a stream carries
across reads: the protocol a run of garbage is charged to. The source counts
what each batch says in its ledgers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Literal

from adapters.nmea._decoder import MAX_LINE, Event, LineSplitter, Loss, NmeaDecoder
from adapters.nmea._stream import Garbage, Sentence, StreamSplitter, Ubx
from adapters.nmea._ubx import UbxDecoder, UbxFrame, UbxRead

Protocol = Literal["auto", "nmea", "ubx"]


@dataclasses.dataclass(frozen=True, slots=True)
class UbxUnit:
    """A unit of the UBX stream that makes no frame: read past (``reason`` None) or lost."""

    sensor: str
    reason: str | None
    message: str


Batch = tuple[int, list[Event | UbxFrame | UbxUnit]]
"""Units that arrived on the fix sensor (non-blank lines; with UBX also UBX messages
read past, garbage runs) and the events they made (UBX frames count their own unit)."""


class BatchDecoder:
    """One source's units in, a :data:`Batch` out, through its NMEA and UBX decoders."""

    def __init__(
        self, name: str, protocol: Protocol, decoder: NmeaDecoder, ubx: UbxDecoder
    ) -> None:
        self.name, self.protocol, self.decoder, self.ubx = name, protocol, decoder, ubx
        self.last_ubx = protocol == "ubx"  # the protocol a garbage run is charged to

    def splitter(self) -> LineSplitter | StreamSplitter:
        """What cuts this source's bytes into units: lines, or UBX messages and sentences."""
        if self.protocol == "nmea":
            return LineSplitter()
        return StreamSplitter(nmea=self.protocol == "auto", ubx=True, max_line=MAX_LINE)

    def feed(
        self, splitter: LineSplitter | StreamSplitter, data: bytes | None, arrival: int, where: str
    ) -> Batch:
        """Decode what ``data`` completes (``None``: the stream ended, flush it)."""
        if isinstance(splitter, LineSplitter):
            lines = splitter.flush() if data is None else splitter.feed(data)
            return self.decode(lines, arrival, where)
        items = splitter.flush() if data is None else splitter.feed(data)
        return self.decode_stream(items, arrival, where)

    def decode_stream(
        self, items: Iterable[Any], arrival: int | None, where: str, *, final: bool = False
    ) -> Batch:
        """Decode the items of a mixed UBX + NMEA stream (:mod:`adapters.nmea._stream`).

        NMEA sentences are units of ``<name>``; UBX messages read past or lost, and a
        truncated one, units of ``<name>.pvt`` (the receiver's UBX stream); a run of
        garbage is charged to the protocol the stream resynchronised on after it."""
        received = 0
        events: list[Event | UbxFrame | UbxUnit] = []
        garbage: list[Garbage] = []
        ubx_ledger = f"{self.name}.pvt"

        def charge(to_ubx: bool) -> None:
            nonlocal received
            for item in garbage:
                bad = (
                    f" ({item.bad_checksum} UBX sync(s) with a bad checksum)"
                    if item.bad_checksum
                    else ""
                )
                message = f"{where}: {item.size} byte(s) neither UBX nor NMEA{bad}"
                if to_ubx:
                    events.append(UbxUnit(ubx_ledger, "garbage", message))
                else:
                    received += 1
                    events.append(Loss("garbage", message))
            garbage.clear()

        for item in items:
            if isinstance(item, Garbage):
                garbage.append(item)
                continue
            self.last_ubx = not isinstance(item, Sentence)
            charge(self.last_ubx)
            if isinstance(item, Sentence):
                received += 1
                events += self.decoder.push_line(item.text, arrival, where)
            elif isinstance(item, Ubx):
                event = self.ubx.push(item.raw, where)
                if isinstance(event, UbxFrame):
                    events.append(dataclasses.replace(event, t_arrival=arrival))
                elif isinstance(event, UbxRead):
                    events.append(UbxUnit(ubx_ledger, None, ""))
                else:
                    events.append(UbxUnit(ubx_ledger, event.reason, event.message))
            else:
                events.append(
                    UbxUnit(
                        ubx_ledger,
                        "truncated",
                        f"{where}: the stream ended inside a UBX message (class/id "
                        f"{item.identity}, {item.size} bytes of it)",
                    )
                )
        charge(self.last_ubx)
        if final:
            events += self.decoder.finish()
        return received, events

    def decode(
        self, lines: Iterable[bytes], arrival: int, where: str, *, final: bool = False
    ) -> Batch:
        received, events = 0, list[Event | UbxFrame | UbxUnit]()
        for line in lines:
            if line.strip():
                received += 1
                events += self.decoder.push_line(line, arrival, where)
        if final:
            events += self.decoder.finish()
        return received, events
