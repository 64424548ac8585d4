"""``VelodyneSource``: Velodyne sweeps, live from UDP or offline from a pcap.

The packet work is done by the sans-I/O :class:`SweepAssembler`; this module
only moves bytes. Offline, packets are read, assembled and decoded in a worker
thread in batches; live, datagrams are received on the event loop (cheap) and
each finished sweep is decoded in a worker thread.

Time. ``t_sensor`` of a sweep is the firing time of its first point, from the
packet stamps: microseconds past the top of the hour, unwrapped so it keeps
increasing when the hour rolls over (it starts in "hour 0" unless
``hour_base_ns`` says which hour the sensor clock is in). A sensor stamp is thus
only known modulo one hour; the spec declares this as
``spec.meta["wrap_period_ns"] == 3_600_000_000_000`` so a clock model can
account for it. ``t_arrival`` is the host receive time (live) or the capture
time of the packet that completed the sweep (pcap, Unix-epoch ns).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from adapters._side_files import refuse_special
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar._calibration import Calibration, read_calibration
from adapters.lidar._packet_source import PacketLidarSource
from adapters.lidar._pcap import LEDGER_REASONS, PcapReader, UdpDatagram, address_text
from adapters.lidar._points import VELODYNE_DTYPE
from adapters.lidar._velodyne_assembler import SweepAssembler
from adapters.lidar._velodyne_decode import RawSweep, decode_sweeps, warm
from adapters.lidar._velodyne_models import (
    Evidence,
    ModelDetector,
    VelodyneModel,
    compatible,
    get_model,
    needs_calibration,
)
from adapters.lidar._velodyne_packets import PACKET_SIZE, WRAP_PERIOD_NS
from adapters.net import DEFAULT_SENDER_TIMEOUT, SenderFilter, parse_sender
from fusion import Frame, Overflow
from fusion.clock import ClockModel
from fusion.errors import ConfigError

log = logging.getLogger("hyperframes.lidar")

DEFAULT_PORT = 2368
POSITION_PORT = 8308
_BATCH = 512  # packets per worker-thread round trip when reading a pcap
_MAX_WAITING = 4096  # packets held at most while the model is told from them
OUSTER_PORTS = (7502, 7503)
_OUSTER_SIZES = {6464, 12608, 24896, 3392, 6720, 13312, 26368, 48}


class VelodyneSource(PacketLidarSource):
    """Sweeps of any Velodyne (VLP-16, Puck Hi-Res, HDL-32E, VLP-32C, HDL-64E S2/S3,
    VLS-128, Alpha Prime) (contract).

    ``VelodyneSource(pcap="x.pcap")`` decodes a capture;
    ``VelodyneSource(port=2368)`` listens live (``port=0`` picks a free port;
    :meth:`wait_listening` returns it). ``model="auto"`` (the default) tells
    the model from the first packets: their product byte, block flags and
    cadence (:class:`~adapters.lidar._velodyne_models.ModelDetector`). A
    declared ``model`` (a name from :data:`adapters.lidar.MODELS` or your own
    :class:`VelodyneModel`) is checked against the same evidence: packets that
    say another model end the source with a :class:`DecodeError` naming what
    they say. ``calibration`` is a YAML (ROS, velodyne_decoder) or ``db.xml``
    (Velodyne, VeloView) file of the unit's per-laser corrections, or a
    :class:`Calibration`; the HDL-64E needs one.

    Each frame's ``data`` is a :data:`VELODYNE_DTYPE` array of one rotation's
    non-zero returns, cut where the azimuth crosses ``cut_angle`` degrees;
    dual-return packets give both echoes (``return``: 1 strongest, 2 last,
    3 both). The first sweep, the last one of a pcap and any sweep interrupted
    by a gap in the packets carry ``meta["partial"] = True``;
    ``partial_sweeps=False`` drops them (their packets are counted lost,
    ``partial_sweep``). The ledger's unit is the data packet: each ends in a
    sweep or lost by reason (``bad_length``, ``bad_block_flag``...).
    ``speed`` paces a pcap at its capture timing (``None``: as fast as the
    consumer takes frames).

    Live, a sensor that goes silent and comes back is reported with the gap's
    length (``meta["gap_ns"]``), and sweeps whose stamps jump by more than
    ``jump_threshold`` seconds against their arrival (a rebooted sensor, a
    capture replayed again) start a new segment (``meta["segment_start"]``,
    which restarts the clock model); see :mod:`fusion._continuity`.
    """

    def __init__(
        self,
        pcap: str | Path | None = None,
        *,
        model: str | VelodyneModel = "auto",
        calibration: str | Path | Calibration | None = None,
        port: int | None = None,
        host: str = "0.0.0.0",
        data_port: int = DEFAULT_PORT,
        name: str = "lidar",
        cut_angle: float = 0.0,
        partial_sweeps: bool = True,
        speed: float | None = None,
        hour_base_ns: int = 0,
        recv_buffer: int | None = 8 * 1024 * 1024,
        sender: str | None = None,
        sender_timeout: float | None = DEFAULT_SENDER_TIMEOUT,
        clock: ClockModel | None = None,
        capacity: int = 8,
        overflow: Overflow | None = None,
        jump_threshold: float = 1.0,
    ) -> None:
        if pcap is not None and port is not None:
            raise ConfigError("give either pcap= (offline) or port= (live), not both")
        if not 0.0 <= cut_angle < 360.0:
            raise ConfigError(f"cut_angle must be in [0, 360) degrees, got {cut_angle}")
        auto = isinstance(model, str) and model.strip().lower() == "auto"
        self.declared: VelodyneModel | None = None if auto else get_model(model)
        """The model given (None for ``"auto"``)."""
        self.calibration: Calibration | None = _read_calibration(calibration, name)
        if self.declared is not None and self.calibration is not None:
            self.declared = _calibrated(self.declared, self.calibration, name)
        self.model: VelodyneModel | None = None
        """The model the packets are decoded as (known once the first packets are in)."""
        self.evidence: Evidence | None = None
        """What the packets said about their sensor."""
        self.pcap = None if pcap is None else Path(pcap)
        if self.pcap is not None and not self.pcap.is_file():
            refuse_special(self.pcap, "pcap file", lambda m: SourceOpenError(m, sensor=name))
            raise SourceOpenError(f"pcap file {str(self.pcap)!r} does not exist", sensor=name)
        self.port = DEFAULT_PORT if pcap is None and port is None else port
        self.host = host
        self.data_port = data_port
        self.cut_angle = cut_angle
        self.partial_sweeps = partial_sweeps
        self.hour_base_ns = hour_base_ns
        self.recv_buffer = recv_buffer
        if sender is not None:
            parse_sender(sender)  # an IPv4 address (a ConfigError naming it otherwise)
        self.sender = sender
        self.sender_timeout = sender_timeout
        super().__init__(
            name=name,
            live=self.pcap is None,
            meta={
                "model": "auto" if self.declared is None else self.declared.name,
                "cut_angle_deg": cut_angle,
                "wrap_period_ns": WRAP_PERIOD_NS,
                "fields": list(VELODYNE_DTYPE.names or ()),
                "frame": "x right, y forward, z up (Velodyne manual)",
            },
            speed=speed,
            clock=clock,
            capacity=capacity,
            overflow=overflow,
            jump_threshold=jump_threshold,
        )
        self.assembler: SweepAssembler | None = None
        self._ports = _PcapPorts(data_port, self.other_datagrams, sender)
        self._product: int | None = None  # the product byte of the stream's packets
        self._detector = ModelDetector()
        self._waiting: list[tuple[bytes, int | None, str]] = []
        self._wheres: list[str] = []  # where each packet of the batch being pushed came from
        self._base = 0  # assembler index of that batch's first packet

    def _rejected(self, reason: str, message: str) -> None:
        where = ""
        if self.assembler is not None:
            offset = self.assembler.last_index - self._base
            where = self._wheres[offset] if 0 <= offset < len(self._wheres) else ""
        # a sweep cut for length is a warning: its packets still make a (partial) sweep
        self.count_error(reason, where + message, units=0 if reason == "sweep_too_long" else 1)

    @property
    def ignored_datagrams(self) -> int:
        """Datagrams of a pcap to the position port (8308): telemetry, not decoded."""
        return self._ports.position

    def _input_text(self) -> str | None:
        return None if self.pcap is None else f"pcap={str(self.pcap)!r}"

    def frames(self) -> AsyncIterator[Frame]:
        return self._pcap_frames() if self.pcap is not None else self._live_frames()

    # -- packets to sweeps (both paths) --------------------------------------------------

    def _take(self, packets: list[tuple[bytes, int | None, str]]) -> list[RawSweep]:
        """Data-port payloads (payload, arrival, where) in; finished sweeps out."""
        self.count_received(len(packets))
        if self.assembler is None:
            for payload, _t, _where in packets:
                self._detector.add(payload)  # it looks at 1206-byte packets only
            self._waiting += packets
            if not self._detector.ready and len(self._waiting) < _MAX_WAITING:
                return []
            if not self._decide():
                return []
            packets, self._waiting = self._waiting, []
        return self._push(packets) if packets else []

    def _push(self, packets: list[tuple[bytes, int | None, str]]) -> list[RawSweep]:
        assembler = self.assembler
        assert assembler is not None
        product = self._product
        if product is not None and any(_other_device(p, product) for p, _t, _w in packets):
            packets = self._same_device(packets, product)
            if not packets:
                return []
        self._wheres = [where for _p, _t, where in packets]
        self._base = assembler.accepted + sum(assembler.rejected.values())
        if len(packets) == 1:  # live: one datagram at a time
            return assembler.push(packets[0][0], packets[0][1])
        return assembler.push_many([p for p, _t, _w in packets], [t for _p, t, _w in packets])

    def _same_device(
        self, packets: list[tuple[bytes, int | None, str]], product: int
    ) -> list[tuple[bytes, int | None, str]]:
        """``packets`` without those whose product byte is not the stream's: another
        model's packets on the port (counted ``foreign_sender``)."""
        kept = [packet for packet in packets if not _other_device(packet[0], product)]
        for payload, _t, where in packets:
            if _other_device(payload, product):
                self.count_error(
                    "foreign_sender",
                    f"{where}product byte 0x{payload[-1]:02X}, the stream's is "
                    f"0x{product:02X}: another device's packet",
                )
        return kept

    def _decide(self) -> bool:
        """Choose the model from the packets held; False (and those packets counted as
        bad_length) when none of them is a data packet."""
        if self._detector.seen == 0:
            hesai = _hesai_said([p for p, _t, _w in self._waiting[:8]])
            if hesai is not None:
                self._give_up(hesai)
            for payload, _t, where in self._waiting:
                self.count_error(
                    "bad_length", f"{where}expected {PACKET_SIZE} bytes, got {len(payload)}"
                )
            self._waiting = []
            return False
        self._choose_model()
        return True

    def _choose_model(self) -> None:
        """Decide the model from the packets seen so far (raises DecodeError on a conflict)."""
        evidence = self.evidence = self._detector.evidence()
        declared = self.declared
        model = _model_for(declared, evidence, self.calibration)
        if isinstance(model, str):
            self._give_up(model)
        assert not isinstance(model, str)
        self.model = model
        if model.product_id is not None and self._detector.products:
            # the stream's signature: packets of another product byte are another device's
            # (the HDL-64E has none: its byte 1205 is a status value that cycles)
            self._product = self._detector.products.most_common(1)[0][0]
        self._meta["model"] = model.name  # the spec's meta: it says what was decoded
        self._meta["model_evidence"] = evidence.said
        if declared is None:
            log.info("%s: %s (%s)", self.name, model.name, evidence.said)
        self.assembler = SweepAssembler(model, cut_angle=self.cut_angle, on_reject=self._rejected)

    def _give_up(self, message: str) -> None:
        waiting, self._waiting = len(self._waiting), []
        if waiting:
            self.count_error("unsupported_device", message, units=waiting)
        where = f"{self.pcap}: " if self.pcap is not None else ""
        raise DecodeError(f"{self.name}: {where}{message}")

    def _flush(self) -> list[RawSweep]:
        """End of stream: decide from what came (if few packets did), then the last sweep."""
        sweeps: list[RawSweep] = []
        if self.assembler is None and self._waiting and self._decide():
            packets, self._waiting = self._waiting, []
            sweeps = self._push(packets)
        return sweeps + (self.assembler.flush() if self.assembler is not None else [])

    # -- offline -------------------------------------------------------------------------

    async def _pcap_frames(self) -> AsyncIterator[Frame]:
        assert self.pcap is not None
        self.assembler, self.model, self._detector = None, None, ModelDetector()
        self.other_datagrams = Counter()
        self._ports = _PcapPorts(self.data_port, self.other_datagrams, self.sender)
        self._product = None
        reader = await self.run_blocking(self._open_pcap, self.pcap)
        datagrams = iter(reader)
        made = 0
        try:
            async for frame in self._paced(
                lambda: self._pcap_batch(datagrams),
                lambda item: item[0].t_arrival,
                lambda item: self._frame(*item),
            ):
                made += 1
                yield frame
        finally:
            reader.close()
        if self._ports.data:  # (else they say what the capture is: _nothing_decoded)
            self._count_other_ports()
        if not made:
            self._nothing_decoded()

    def _open_pcap(self, path: Path) -> PcapReader:
        return PcapReader(path, on_skip=self._skipped_record)

    def _skipped_record(self, reason: str, offset: int) -> None:
        """A capture record that held no datagram (not UDP, cut, damaged): received, lost."""
        self.count_received()
        self.count_error(
            LEDGER_REASONS.get(reason, "undecodable"),
            f"{self.pcap}: record at byte {offset}: {reason.replace('_', ' ')}",
        )

    def _count_other_ports(self) -> None:
        """Datagrams of a pcap to neither the data nor the position port: another
        device's traffic, received and lost as ``wrong_port`` (one message a port and size)."""
        for count, message in self._ports.wrong_ports():
            self.count_received(count)
            self.count_error("wrong_port", f"{self.pcap}: {message}", units=count)

    def _pcap_batch(self, datagrams: Any) -> list[tuple[RawSweep, Any]] | None:
        """Read up to _BATCH data packets, assemble, decode (worker thread)."""
        taken: list[tuple[bytes, int | None, str]] = []
        ended = True
        for datagram in datagrams:
            assert isinstance(datagram, UdpDatagram)
            if not self._ports.is_data(datagram):
                continue
            refused = self._ports.refused(datagram)
            if refused is not None:  # a second device on the port
                self.count_received()
                self.count_error("foreign_sender", f"{self.pcap}: record at byte {refused}")
                continue
            taken.append(
                (
                    datagram.payload,
                    datagram.t_capture,
                    f"{self.pcap}: record at byte {datagram.offset}: ",
                )
            )
            if len(taken) >= _BATCH:
                ended = False
                break
        sweeps = self._take(taken) if taken else []
        if ended:
            sweeps += self._flush()
            if not sweeps:
                return None
        return self._decode(sweeps)

    def _decode(self, sweeps: list[RawSweep]) -> list[tuple[RawSweep, Any]]:
        wanted = [raw for raw in sweeps if self._wanted(raw)]
        if not wanted:
            return []
        assert self.model is not None
        return list(zip(wanted, decode_sweeps(wanted, self.model), strict=True))

    def _nothing_decoded(self) -> None:
        """A pcap that gave no sweep: say what it held instead (and count it)."""
        stats = self.ledger().statistics()
        if self._ports.data:
            message = self._no_sweep(self._ports.data, f" on port {self.data_port}")
            raise DecodeError(f"{self.name}: {self.pcap}: {message}")
        if self.other_datagrams:
            total, message = self._ports.not_velodyne()
            self.count_received(total)
            self.count_error("unsupported_device", message, units=total)
            raise DecodeError(f"{self.name}: {self.pcap}: {message}")
        if self.ignored_datagrams:
            raise DecodeError(
                f"{self.name}: {self.pcap}: no data packets on port {self.data_port}, only "
                f"{self.ignored_datagrams:,} position packets (port {POSITION_PORT})"
            )
        if stats.received:  # records that held no datagram (not UDP, damaged)
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(stats.lost.items()))
            raise DecodeError(
                f"{self.name}: {self.pcap}: no data packets on port {self.data_port}, only "
                f"{stats.received:,} records that held no UDP datagram ({reasons}); "
                f"last: {self.last_error}"
            )

    # -- live ----------------------------------------------------------------------------

    async def _live_frames(self) -> AsyncIterator[Frame]:
        assert self.port is not None
        self.assembler, self.model, self._detector = None, None, ModelDetector()
        receiver = self._receiver(
            self.host, self.port, self.sender, self.recv_buffer, self.sender_timeout
        )
        await self.run_blocking(warm)  # the kernels' compile (first run) before we listen
        async with receiver:
            self._bound(receiver)
            while True:
                payload, address, arrival = await receiver.receive()
                where = f"datagram from {address[0]}:{address[1]}: "
                for raw in self._take([(payload, arrival, where)]):
                    if self._wanted(raw):
                        assert self.model is not None
                        points = await self.run_blocking(raw.decode, self.model)
                        frame = self._frame(raw, points)
                        self.watch.check(frame)
                        yield frame

    # -- shared --------------------------------------------------------------------------

    def _frame(self, raw: RawSweep, points: Any) -> Frame:
        return self.make_frame(
            self.hour_base_ns + raw.t_sensor,
            points,
            t_arrival=raw.t_arrival,
            meta={
                "partial": raw.partial,
                "packets": len(raw.packets),
                "shared_first": raw.first_block > 0,  # that packet is counted in the sweep before
                "dual": raw.layout.dual,
            },
            units=raw.units,
        )

    def statistics(self) -> dict[str, Any]:
        assembler = self.assembler
        stats = self._statistics(
            None if self.model is None else self.model.name,
            0 if assembler is None else assembler.accepted,
            0 if assembler is None else assembler.dual_packets,
        )
        stats.update(
            rejected={} if assembler is None else dict(assembler.rejected),
            ignored_datagrams=self.ignored_datagrams,
        )
        return stats

    def __repr__(self) -> str:
        return self._repr(self.port, "auto" if self.declared is None else self.declared.name)


class _PcapPorts:
    """A capture's datagrams by destination port: the data port's, the position port's
    (8308: telemetry, not decoded) and other devices' traffic, counted per (port, size)
    in ``other`` with the byte offset of the first of each."""

    def __init__(self, data_port: int, other: Counter[tuple[int, int]], sender: str | None) -> None:
        self.data_port = data_port
        self.data = 0
        self.position = 0
        self.other = other
        self._first: dict[tuple[int, int], int] = {}
        self._senders = SenderFilter(sender)  # the configured sender, else the first heard
        self._admitted: tuple[bytes, int] | None = None  # the last (address, port) admitted

    def refused(self, datagram: UdpDatagram) -> str | None:
        """None when a data packet comes from the stream's sender (the configured one,
        else the first heard); else where and why it is another device's."""
        sender = (datagram.src_addr, datagram.src_port)
        if sender == self._admitted:
            return None
        host, port = address_text(sender[0]), sender[1]
        if self._senders.admit((host, port), 0):
            self._admitted = sender
            return None
        return (
            f"{datagram.offset}: data packet from {host}:{port}; "
            f"{self._senders.describe()} (sender= chooses)"
        )

    def is_data(self, datagram: UdpDatagram) -> bool:
        """Whether ``datagram`` goes to the data port; the others are counted."""
        if datagram.dst_port == self.data_port:
            self.data += 1
            return True
        if datagram.dst_port == POSITION_PORT:
            self.position += 1
        else:
            key = (datagram.dst_port, len(datagram.payload))
            self.other[key] += 1
            self._first.setdefault(key, datagram.offset)
        return False

    def wrong_ports(self) -> Iterator[tuple[int, str]]:
        """``(count, message)`` for each port and size of other traffic, in order."""
        for (port, size), count in sorted(self.other.items()):
            yield (
                count,
                (
                    f"record at byte {self._first[(port, size)]}: "
                    f"{count:,} datagram(s) of {size:,} bytes to port {port}; data packets go to "
                    f"port {self.data_port}"
                ),
            )

    def not_velodyne(self) -> tuple[int, str]:
        """A capture of other traffic only: how many datagrams, and what they look like."""
        (port, size), count = self.other.most_common(1)[0]
        total = sum(self.other.values())
        ouster = port in OUSTER_PORTS or size in _OUSTER_SIZES
        what = (
            "this looks like an Ouster sensor, not a Velodyne"
            if ouster
            else f"not Velodyne data (1206-byte packets to port {self.data_port})"
        )
        message = f"{count:,} datagrams of {size:,} bytes on port {port}: {what}"
        if total > count:
            message += f" (and {total - count:,} other datagrams)"
        return total, message


def _hesai_said(payloads: list[bytes]) -> str | None:
    """What to say when the first packets are all Hesai's (None when they are not)."""
    from adapters.lidar._hesai_models import hesai_signature

    hesai = [hesai_signature(p) for p in payloads]
    if hesai and all(hesai):
        return (
            f"these are Hesai packets, not Velodyne ({hesai[0]}): "
            'use HesaiSource (TOML type = "hesai")'
        )
    return None


def _read_calibration(
    calibration: str | Path | Calibration | None, sensor: str
) -> Calibration | None:
    """A calibration given as a file, read (a bad one is a SourceOpenError)."""
    if not isinstance(calibration, (str, Path)):
        return calibration
    try:
        return read_calibration(calibration)
    except DecodeError as err:
        raise SourceOpenError(str(err), sensor=sensor) from err


def _calibrated(model: VelodyneModel, calibration: Calibration, sensor: str) -> VelodyneModel:
    """A declared model with the unit's calibration (one that does not fit: SourceOpenError)."""
    try:
        return model.with_calibration(calibration)
    except ValueError as err:
        raise SourceOpenError(f"calibration {calibration.source!r}: {err}", sensor=sensor) from err


def _model_for(
    declared: VelodyneModel | None, evidence: Evidence, calibration: Calibration | None
) -> VelodyneModel | str:
    """The model to decode as, from the one declared, what the packets said and the
    calibration; or why none can be (the message the source gives up with)."""
    found = evidence.model
    if found is None and declared is None:
        return (
            f"cannot tell which Velodyne sent these packets: {evidence.said}: "
            f"{evidence.problem}; give model= (one of {', '.join(_names())})"
        )
    if declared is not None and found is not None and not compatible(declared, found):
        return (
            f"model {declared.name!r} was given, but the packets say {found.name}: "
            f"{evidence.said}; use model='auto' or model={found.name!r}"
        )
    model = declared or found
    assert model is not None
    if declared is None and calibration is not None:
        try:
            model = model.with_calibration(calibration)
        except ValueError as err:
            return (
                f"the packets say {model.name}, and calibration "
                f"{calibration.source!r} does not fit it: {err}"
            )
    if needs_calibration(model):
        return (
            f"the packets say {model.name} ({evidence.said}); an HDL-64E has no default "
            "angles, give its calibration file: calibration='db.xml' (or the ROS YAML)"
        )
    return model


def _other_device(payload: bytes, product: int) -> bool:
    """A well-formed data packet (its first block flag right) of another product byte;
    a damaged packet is left to the assembler, which says what is wrong with it."""
    return len(payload) == PACKET_SIZE and payload[-1] != product and payload[:2] == b"\xff\xee"


def _names() -> list[str]:
    from adapters.lidar._velodyne_models import MODELS

    return list(MODELS)
