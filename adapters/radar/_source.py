"""``RadarSource``: automotive radar scans as frames, from captures, bags, live UDP or CAN.

This module moves bytes; the decoding is sans-I/O: :mod:`adapters.radar._ars548`
(one UDP payload -> one detection or object list) and, for the CAN-bus ARS408,
:mod:`adapters.radar._ars408` (CAN frames -> cluster and object lists, read
through the CAN adapter by :mod:`adapters.radar._ars408_io`).

Each radar gives two sensors, ``<name>_detections`` and ``<name>_objects``
(kind ``radar``), one frame per list the sensor sends. The ledger's unit is the
datagram: it is received on the ledger of the list
it says it is (a datagram no list claims, on the detections sensor's) and ends
as that frame or lost by reason. Offline the datagrams are read and decoded in
a worker thread in batches; live, each is decoded as it arrives (a list is
one ``frombuffer``, tens of microseconds).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar import LEDGER_REASONS, PcapReader, address_text
from adapters.net import DEFAULT_SENDER_TIMEOUT, SenderFilter, UdpReceiver, parse_sender
from adapters.radar import _ars408, _ars548, _nebula
from fusion import Frame, Overflow, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, UsageError

log = logging.getLogger("adapters.radar")

MODELS = ("ars548", "ars408")
"""The radars :class:`RadarSource` decodes."""
_BATCH = 256  # datagrams per worker-thread round trip offline
_LIVE_BATCH = 64


@dataclass(frozen=True, slots=True)
class _Lost:
    """Units lost before any decoding (a capture record, a sender, a port), counted by
    the event loop's side (the worker thread only reads and decodes)."""

    sensor: str
    reason: str
    message: str
    units: int = 1


# one unit's outcome: (ledger sensor, scan or rejection, arrival ns, where), or a loss
_Outcome = tuple[str, "_ars548.Scan | _ars548.Rejected", "int | None", str] | _Lost


class RadarSource(Source):
    """Detection and object lists of an automotive radar (kind ``radar``).

    Exactly one input. The **Continental ARS548** (``model="ars548"``, the
    default) sends its lists over Ethernet/UDP: ``pcap`` reads a capture (pcap
    or pcapng) of its datagrams to ``data_port`` (42102); ``bag`` a ROS 1/2 bag
    of its packets as tier4/nebula records them (``nebula_msgs/msg/NebulaPackets``
    on ``topic``, default the bag's only such topic); ``port`` listens live
    (``port=0`` picks a free one, :meth:`wait_listening` says which; ``group``
    joins a multicast group, the sensor's factory setting is ``224.0.2.2``).
    The **Continental ARS408** (``model="ars408"``) sends cluster and object lists
    over CAN: ``log`` reads a CAN log python-can reads (candump ``-l``, ASC, BLF,
    TRC ...), ``interface`` a live python-can bus (``channel``, ``bitrate``,
    ``bus_options`` as :class:`adapters.CanSource` takes them); the signals are
    decoded with the ARS408 database packaged here (cantools). Clusters go to
    ``<name>_detections`` (:data:`~adapters.radar.ARS408_CLUSTER_DTYPE`), objects
    to ``<name>_objects`` (:data:`~adapters.radar.ARS408_OBJECT_DTYPE`), one frame
    per complete list, stamped with its status frame's CAN stamp; the ledger's
    unit is then the CAN frame (:mod:`adapters.radar._ars408`).

    Sensors: ``<name>_detections`` (rows of :data:`~adapters.radar.DETECTION_DTYPE`)
    and ``<name>_objects`` (:data:`~adapters.radar.OBJECT_DTYPE`). Each frame's ``t_sensor`` is
    the list's own stamp (the radar's clock), ``t_arrival`` the capture time
    (pcap), the time nebula received the packet (bag) or the host receive time
    (live); the list's header fields (sync status, sensor origin...) are in
    ``meta``. ``speed`` paces a file at its recorded timing (``None``: as fast
    as the consumer takes frames). Losses (docs/radar.md): ``bad_length``,
    ``unknown_id``, ``undecodable``, ``bad_time``, ``unused`` (status datagrams),
    ``foreign_sender``, ``wrong_port``, and the UDP receiver's.
    """

    _ledger_unit = "datagram"

    # long: 20 documented keyword options (inputs, model, ports, sender, pacing, queue), each
    #   checked and kept
    def __init__(
        self,
        pcap: str | Path | None = None,
        *,
        bag: str | Path | None = None,
        topic: str | None = None,
        port: int | None = None,
        host: str = "0.0.0.0",
        group: str | None = None,
        data_port: int = _ars548.DEFAULT_PORT,
        model: str = "ars548",
        log: str | Path | None = None,
        interface: str | None = None,
        channel: str | int | None = None,
        bitrate: int | None = None,
        bus_options: Mapping[str, Any] | None = None,
        name: str = "radar",
        speed: float | None = None,
        sender: str | None = None,
        sender_timeout: float | None = DEFAULT_SENDER_TIMEOUT,
        recv_buffer: int | None = 8 * 1024 * 1024,
        clock: ClockModel | None = None,
        capacity: int = 16,
        overflow: Overflow | None = None,
    ) -> None:
        model = model.strip().lower()
        if model not in MODELS:
            raise ConfigError(f"radar model {model!r} is not one of {', '.join(MODELS)}")
        if model == "ars408":
            inputs: dict[str, Any] = {"log": log, "interface": interface}
            wanted = "log= (a CAN log) or interface= (a python-can bus)"
            others = {"pcap": pcap, "bag": bag, "port": port}
        else:
            inputs = {"pcap": pcap, "bag": bag, "port": port}
            wanted = "pcap= (a capture), bag= (nebula's packets) or port= (live UDP)"
            others = {"log": log, "interface": interface}
        given = [k for k, v in inputs.items() if v is not None]
        if len(given) != 1:
            raise ConfigError(
                f"RadarSource (model {model}) needs exactly one of {wanted}, "
                f"got {', '.join(given) or 'none'}"
            )
        stray = [k for k, v in others.items() if v is not None]
        if stray:
            raise ConfigError(f"{', '.join(stray)}= is not an input of the {model}")
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        if sender is not None:
            parse_sender(sender)
        self.model = model
        self.pcap = None if pcap is None else Path(pcap)
        self.bag = None if bag is None else Path(bag)
        self.log = None if log is None else Path(log)
        self.interface, self.channel = interface, channel
        self.bus_options: dict[str, Any] = dict(bus_options or {})
        if bitrate is not None:
            self.bus_options["bitrate"] = bitrate
        self.bus: Any = None
        """The live python-can bus (ARS408), once open."""
        for what, path in (("pcap file", self.pcap), ("bag", self.bag), ("CAN log", self.log)):
            if path is not None and not path.exists():
                raise SourceOpenError(f"{what} {str(path)!r} does not exist", sensor=name)
        self.topic = topic
        self.port = port
        self.host = host
        self.group = group
        self.data_port = data_port
        self.speed = speed
        self.sender = sender
        self.sender_timeout = sender_timeout
        self.recv_buffer = recv_buffer
        self.detections = f"{name}_detections"
        """The detections' (ARS408: clusters') sensor name."""
        self.objects = f"{name}_objects"
        """The objects' sensor name."""
        self.udp: UdpReceiver | None = None
        """The live socket's receiver (kernel drops, foreign senders), once listening."""
        self._listening = anyio.Event()
        live = port is not None or interface is not None
        if model == "ars408":
            self._ledger_unit = "can_frame"
            fields = {
                self.detections: list(_ars408.CLUSTER_DTYPE.names or ()),
                self.objects: list(_ars408.OBJECT_DTYPE.names or ()),
            }
        else:
            fields = {
                self.detections: list(_ars548.DETECTION_DTYPE.names or ()),
                self.objects: list(_ars548.OBJECT_DTYPE.names or ()),
            }
        input_ = next(str(v) for v in inputs.values() if v is not None)
        super().__init__(
            specs=tuple(
                SensorSpec(
                    sensor,
                    kind="radar",
                    clock=clock,
                    capacity=capacity,
                    overflow=overflow or ("drop_oldest" if live else "block"),
                    meta={
                        "model": model,
                        "list": sensor.rsplit("_", 1)[1],
                        "input": input_,
                        "fields": names,
                        "frame": "x forward, y left, z up (the sensor's frame), metres",
                    },
                )
                for sensor, names in fields.items()
            )
        )

    # -- what each unit becomes ----------------------------------------------------------

    def _outcome(self, payload: bytes, t_arrival: int | None, where: str) -> _Outcome:
        result = _ars548.decode(payload)
        kind = result.kind
        sensor = self.objects if kind == "objects" else self.detections
        return sensor, result, t_arrival, where

    def _frame_or_loss(self, outcome: _Outcome) -> Frame | None:
        if isinstance(outcome, _Lost):
            self.count_received(outcome.units, sensor=outcome.sensor)
            self.count_error(
                outcome.reason, outcome.message, units=outcome.units, sensor=outcome.sensor
            )
            return None
        sensor, result, t_arrival, where = outcome
        self.count_received(sensor=sensor)
        if isinstance(result, _ars548.Rejected):
            self.count_error(result.reason, f"{sensor}: {where}{result.message}", sensor=sensor)
            return None
        return self.make_frame(
            result.t_sensor, result.data, sensor=sensor, t_arrival=t_arrival, meta=result.meta
        )

    async def frames(self) -> AsyncIterator[Frame]:
        if self.model == "ars408":
            from adapters.radar._ars408_io import ars408_frames

            async for scan in ars408_frames(self):
                yield scan
            return
        if self.port is not None:
            async for live in self._live_frames():
                yield live
            return
        batches = _pcap_batches(self) if self.pcap is not None else self._bag_batches()
        clock = current_clock()
        start: tuple[int, int] | None = None
        made = 0
        async for outcomes in self._in_thread(batches):
            for outcome in outcomes:
                t_arrival = None if isinstance(outcome, _Lost) else outcome[2]
                if self.speed is not None and t_arrival is not None:
                    start = start or (clock.now(), t_arrival)
                    await clock.sleep_until(start[0] + round((t_arrival - start[1]) / self.speed))
                frame = self._frame_or_loss(outcome)
                if frame is not None:
                    made += 1
                    yield frame
        if not made:
            self._nothing_decoded()

    async def frame_batches(self) -> AsyncIterator[list[Frame]]:
        """A file's frames a batch at a time; a paced or live source's one at a time."""
        if self.port is not None or self.interface is not None or self.speed is not None:
            async for frames in super().frame_batches():
                yield frames
            return
        batch: list[Frame] = []
        async for frame in self.frames():
            batch.append(frame)
            if len(batch) >= 64:
                yield batch
                batch = []
        if batch:
            yield batch

    @staticmethod
    async def _in_thread(batches: Iterator[list[_Outcome]]) -> AsyncIterator[list[_Outcome]]:
        clock = current_clock()
        try:
            while True:
                with clock.busy():
                    batch = await anyio.to_thread.run_sync(next, batches, None)
                if batch is None:
                    return
                yield batch
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    def _nothing_decoded(self) -> None:
        stats = self.ledgers()
        received = sum(s.received for s in stats.values())
        where = self.pcap or self.bag or self.log
        if self.log is not None:
            counts: dict[str, int] = {}
            for s in stats.values():
                for reason, n in s.lost.items():
                    counts[reason] = counts.get(reason, 0) + n
            said = ", ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "no CAN frame"
            raise DecodeError(
                f"{self.name}: {where}: {received} CAN frame(s) gave no ARS408 list ({said})"
                + (f"; last: {self.last_error}" if self.last_error else "")
            )
        if not received:
            what = (
                f"no UDP datagram to port {self.data_port}"
                if self.pcap is not None
                else f"no {_nebula.MSGTYPE} message"
            )
            raise DecodeError(f"{self.name}: {where}: {what}")
        lost: dict[str, int] = {}
        for s in stats.values():
            for reason, n in s.lost.items():
                lost[reason] = lost.get(reason, 0) + n
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(lost.items()))
        raise DecodeError(
            f"{self.name}: {where}: {received} datagram(s) gave no radar list ({reasons}); "
            f"last: {self.last_error}"
        )

    # -- a bag ---------------------------------------------------------------------------

    def _bag_batches(self) -> Iterator[list[_Outcome]]:
        from adapters.bags import BagReader, decompress_message

        assert self.bag is not None
        with BagReader(self.bag) as reader:
            topics = [t for t in reader.topics.values() if t.msgtype in _nebula.MSGTYPES]
            if self.topic is not None:
                topics = [t for t in topics if t.topic == self.topic]
            if len(topics) != 1:
                found = (
                    ", ".join(f"{t.topic} ({t.msgtype})" for t in reader.topics.values())
                    or "no topics"
                )
                which = f"topic {self.topic!r} of type" if self.topic else "one topic of type"
                raise SourceOpenError(
                    f"bag {str(self.bag)!r}: expected {which} {_nebula.MSGTYPE}; it has {found}"
                    + ("" if self.topic or not topics else " (topic= chooses)"),
                    sensor=self.name,
                )
            chosen = topics[0]
            compressed = reader.message_compression
            batch: list[_Outcome] = []
            for _conn, t_log, raw in reader.messages(chosen.connections):
                where = f"{self.bag}: {chosen.topic} at {t_log}: "
                try:
                    message = _nebula.parse(decompress_message(raw) if compressed else raw)
                except Exception as err:  # any bad message (or its zstd) costs only itself
                    said = f"{self.detections}: {where}not a NebulaPackets message: {err}"
                    batch.append(_Lost(self.detections, "undecodable", said))
                    continue
                for i, (stamp, payload) in enumerate(message.packets):
                    batch.append(self._outcome(payload, stamp, f"{where}packet {i}: "))
                if len(batch) >= _BATCH:
                    yield batch
                    batch = []
            if batch:
                yield batch

    # -- live ----------------------------------------------------------------------------

    async def wait_listening(self) -> int:
        """Wait until the live socket is bound; return its UDP port."""
        if self.port is None:
            raise UsageError("wait_listening() is for live sources (port=...)")
        await self._listening.wait()
        assert self.udp is not None
        return self.udp.port

    async def _live_frames(self) -> AsyncIterator[Frame]:
        assert self.port is not None
        receiver = UdpReceiver(
            self,
            host=self.host,
            port=self.port,
            sender=self.sender,
            recv_buffer=self.recv_buffer,
            sender_timeout=self.sender_timeout,
            sensor=self.detections,
            counts_admitted=False,  # counted on the ledger of the list each one is
            group=self.group,
        )
        async with receiver:
            self.udp = receiver
            self._listening.set()
            while True:
                for payload, address, arrival in await receiver.receive_many(_LIVE_BATCH):
                    where = f"datagram from {address[0]}:{address[1]}: "
                    frame = self._frame_or_loss(self._outcome(payload, arrival, where))
                    if frame is not None:
                        yield frame

    def statistics(self) -> Mapping[str, Any]:
        stats = dict(super().statistics())
        if self.udp is not None:
            stats["udp"] = self.udp.statistics().as_dict()
        return stats

    def __repr__(self) -> str:
        for key in ("pcap", "bag", "port", "log", "interface"):
            value = getattr(self, key)
            if value is not None:
                return f"RadarSource({key}={str(value)!r}, model={self.model!r})"
        return f"RadarSource(model={self.model!r}, name={self.name!r})"


# -- a capture ---------------------------------------------------------------------------


def _pcap_batches(source: RadarSource) -> Iterator[list[_Outcome]]:
    """A capture's datagrams to the data port as outcomes in batches; those to other ports,
    from a foreign sender or in a damaged record as losses with their byte offset."""
    assert source.pcap is not None
    path, detections = source.pcap, source.detections
    batch: list[_Outcome] = []

    def skipped(reason: str, offset: int) -> None:
        message = f"{detections}: {path}: record at byte {offset}: {reason.replace('_', ' ')}"
        batch.append(_Lost(detections, LEDGER_REASONS.get(reason, "undecodable"), message))

    senders = SenderFilter(source.sender)
    other: dict[int, list[int]] = {}  # port -> [datagrams, first offset]
    with PcapReader(path, on_skip=skipped) as reader:
        for d in reader:
            if d.dst_port != source.data_port:
                seen = other.setdefault(d.dst_port, [0, d.offset])
                seen[0] += 1
                continue
            where = f"{path}: record at byte {d.offset}: "
            host = address_text(d.src_addr)
            if not senders.admit((host, d.src_port), 0):
                message = (
                    f"{detections}: {where}datagram from {host}:{d.src_port}; "
                    f"{senders.describe()} (sender= chooses)"
                )
                batch.append(_Lost(detections, "foreign_sender", message))
                continue
            batch.append(source._outcome(d.payload, d.t_capture, where))
            if len(batch) >= _BATCH:
                yield batch
                batch = []
    for port, (count, first) in sorted(other.items()):
        message = (
            f"{detections}: {path}: record at byte {first}: {count:,} datagram(s) to port "
            f"{port}; the radar's go to port {source.data_port} (data_port= chooses)"
        )
        batch.append(_Lost(detections, "wrong_port", message, count))
    if batch:
        yield batch
