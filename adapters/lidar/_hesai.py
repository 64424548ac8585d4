"""``HesaiSource``: Hesai sweeps, live from UDP or offline from a pcap or a bag of packets.

The packet work is :mod:`adapters.lidar._hesai_packets` (checks) and
:class:`~adapters.lidar._hesai_decode.HesaiDecoder` (points, sweeps); this module
only moves bytes. Offline, packets are read, checked and decoded in a worker
thread in batches; live, datagrams are received on the event loop and decoded
in a worker thread a few at a time.

Time. ``t_sensor`` of a sweep is the firing time of its earliest point from the
packet stamps (the sensor's UTC date and time, ns since the Unix epoch, as
nebula reads them); each point's ``t_offset`` is from there. ``t_arrival`` is
the host receive time (live), the capture time (pcap) or the bag's log time of
the message that completed the sweep.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar._hesai_correction import HesaiCorrection, find_fields
from adapters.lidar._hesai_decode import HESAI_DTYPE, HesaiDecoder, HesaiSweep
from adapters.lidar._hesai_inputs import Packet, SensorAngles, bag_packets_of, pcap_packets
from adapters.lidar._hesai_models import (
    RETURN_MODES,
    HesaiAngles,
    HesaiModel,
    default_angles,
    get_model,
    identify,
    read_any_angles,
)
from adapters.lidar._hesai_packets import prepare
from adapters.lidar._hesai_ptc import PTC_PORT
from adapters.lidar._packet_source import PacketLidarSource
from adapters.net import DEFAULT_SENDER_TIMEOUT
from fusion import Frame, Overflow
from fusion.clock import ClockModel
from fusion.errors import ConfigError

log = logging.getLogger("hyperframes.lidar")

DEFAULT_PORT = 2368
_BATCH = 512
_MAX_WAITING = 4096


class HesaiSource(PacketLidarSource):
    """Sweeps of a Hesai LiDAR: Pandar40P, Pandar64, QT64, QT128, XT16, XT32, XT32M, OT128,
    AT128 (contract name).

    Exactly one input: ``pcap=`` (pcap or pcapng: UDP datagrams to ``data_port``),
    ``bag=`` (a ROS 1/2 bag of ``pandar_msgs/PandarScan`` or
    ``nebula_msgs/NebulaPackets``; ``topic`` picks one when several hold packets)
    or ``port=`` (live UDP; ``port=0`` picks a free one, see :meth:`wait_listening`).
    ``model="auto"`` tells the model from the packets' header (nebula's layouts,
    :mod:`adapters.lidar._hesai_models`); a declared model refuses packets of
    another (``bad_header``). ``calibration`` is the sensor's angle CSV (the
    AT128: its binary ``.dat`` angle correction); without one the model's default
    angles (nebula's files) are used, which are only nominal for a given unit.
    ``calibration="sensor"`` asks the sensor for its own over PTC (TCP,
    ``ptc_host``:``ptc_port``; ``ptc_host`` defaults to ``sender``'s address)
    when the stream starts, within ``ptc_timeout`` seconds; a failure ends the
    source with one :class:`SourceOpenError` or :class:`DecodeError` saying why,
    unless ``calibration_fallback=True``: then the built-in angles are used, with
    a log warning and a ``calibration_fallback`` warning counted (no packet lost).

    Each frame's ``data`` is a :data:`HESAI_DTYPE` array of one rotation, cut
    channel by channel where its corrected azimuth crosses ``cut_angle`` degrees
    (as nebula cuts; None: the model's, 150° for the AT128, else 0°); ``fov``
    (degrees, both ends kept) drops points whose corrected azimuth is outside it
    (None: the model's, 30-150° for the AT128, else the whole circle).
    ``min_range``/``max_range`` narrow the sensor's own range;
    ``dual_return_distance_threshold`` (m) drops a non-last echo that close to
    another (nebula's default 0.1). The first sweep and the sweeps still open at
    the end are ``meta["partial"]``; ``partial_sweeps=False`` drops them (their
    packets lost as ``partial_sweep``). The ledger's unit is the packet: each ends
    in a sweep or is lost by reason (``bad_length``, ``bad_header``, ``bad_crc``,
    ``bad_return_mode``, ``bad_azimuth``, ``bad_message``, ``unsupported_model``; live
    also ``foreign_sender`` and ``incomplete``: the packets of the sweeps still open
    when the stream is stopped).
    """

    # long: 31 documented keyword options (inputs, model, angles, PTC, cut, range, live socket),
    #   each checked and kept here; the checks of a group are in helpers
    def __init__(
        self,
        pcap: str | Path | None = None,
        *,
        bag: str | Path | None = None,
        topic: str | None = None,
        port: int | None = None,
        model: str | HesaiModel = "auto",
        calibration: str | Path | HesaiAngles | HesaiCorrection | None = None,
        host: str = "0.0.0.0",
        data_port: int = DEFAULT_PORT,
        name: str = "lidar",
        cut_angle: float | None = None,
        fov: tuple[int, int] | None = None,
        min_range: float | None = None,
        max_range: float | None = None,
        dual_return_distance_threshold: float = 0.1,
        ptc_host: str | None = None,
        ptc_port: int = PTC_PORT,
        ptc_timeout: float = 5.0,
        calibration_fallback: bool = False,
        check_crc: bool = True,
        partial_sweeps: bool = True,
        speed: float | None = None,
        recv_buffer: int | None = 8 * 1024 * 1024,
        sender: str | None = None,
        sender_timeout: float | None = DEFAULT_SENDER_TIMEOUT,
        clock: ClockModel | None = None,
        capacity: int = 8,
        overflow: Overflow | None = None,
        jump_threshold: float = 1.0,
        kernel: bool = True,
    ) -> None:
        given = [x for x in (pcap, bag, port) if x is not None]
        if len(given) > 1:
            raise ConfigError("give one of pcap= or bag= (offline) or port= (live)")
        _check_geometry(cut_angle, fov, min_range, max_range, dual_return_distance_threshold)
        auto = isinstance(model, str) and model.strip().lower() == "auto"
        try:
            self.declared: HesaiModel | None = None if auto else get_model(model)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        self.from_sensor = isinstance(calibration, str) and calibration.strip() == "sensor"
        self.sensor_angles: SensorAngles | None = None
        """Where and how the angles are asked of the sensor (``calibration="sensor"``)."""
        if self.from_sensor:
            calibration = None
            self.sensor_angles = SensorAngles.checked(
                ptc_host, ptc_port, ptc_timeout, calibration_fallback, sender
            )
        elif ptc_host is not None or calibration_fallback:
            raise ConfigError("ptc_host and calibration_fallback are for calibration='sensor'")
        self.ptc_timeout, self.calibration_fallback = ptc_timeout, calibration_fallback
        if isinstance(calibration, (str, Path)):
            try:
                calibration = read_any_angles(calibration)
            except DecodeError as err:
                raise SourceOpenError(str(err), sensor=name) from err
        self.calibration: HesaiAngles | HesaiCorrection | None = calibration
        self.pcap = _existing(pcap, "pcap file", name)
        self.bag = _existing(bag, "bag", name)
        self.topic = topic
        self.port = DEFAULT_PORT if not given else port
        self.host, self.data_port = host, data_port
        self.cut_angle, self.min_range, self.max_range = cut_angle, min_range, max_range
        self.fov = fov
        self.threshold = dual_return_distance_threshold
        self.check_crc, self.partial_sweeps = check_crc, partial_sweeps
        self.recv_buffer, self.sender, self.sender_timeout = recv_buffer, sender, sender_timeout
        self.kernel = kernel
        self.model: HesaiModel | None = None
        """The model the packets are decoded as (known once one has arrived)."""
        self.decoder: HesaiDecoder | None = None
        super().__init__(
            name=name,
            live=self.pcap is None and self.bag is None,
            meta={
                "model": "auto" if self.declared is None else self.declared.name,
                "vendor": "Hesai",
                "cut_angle_deg": cut_angle,
                "fov_deg": fov,
                "fields": list(HESAI_DTYPE.names or ()),
                "frame": "x = r cos(el) sin(az), y = r cos(el) cos(az), z up (nebula)",
            },
            speed=speed,
            clock=clock,
            capacity=capacity,
            overflow=overflow,
            jump_threshold=jump_threshold,
        )
        self._waiting: list[Packet] = []
        self._fields: Any = None

    @property
    def ptc(self) -> tuple[str, int] | None:
        """The sensor's PTC address, when the angles are asked of it."""
        return None if self.sensor_angles is None else self.sensor_angles.ptc

    async def _angles_from_sensor(self) -> None:
        """The sensor's own angle correction, asked over PTC before the stream starts."""
        if self.sensor_angles is None:
            return

        def fell_back(message: str) -> None:
            self.count_error("calibration_fallback", message, units=0)

        self.calibration = await self.sensor_angles.fetch(self.name, fell_back)

    # -- packets to sweeps ---------------------------------------------------------------

    def _take(self, packets: list[Packet]) -> list[HesaiSweep]:
        """Payloads in (each counted received); finished sweeps out."""
        self.count_received(len(packets))
        if self.decoder is None:
            self._waiting += packets
            if not self._choose() and len(self._waiting) < _MAX_WAITING:
                return []
            if self.decoder is None:
                self._give_up()
            packets, self._waiting = self._waiting, []
        return self._push(packets)

    def _choose(self) -> bool:
        """Pick the model from the packets held; False while none has said."""
        for payload, _t, _where in self._waiting:
            found, said = identify(payload)
            if found is None and said.startswith("Hesai"):
                self._give_up(said)
            if found is None:
                continue
            if self.declared is not None and self.declared is not found:
                continue  # refused one by one as bad_header
            self._start(self.declared or found, said)
            return True
        return False

    def _start(self, model: HesaiModel, said: str) -> None:
        angles = self.calibration or default_angles(model)
        try:
            self.decoder = HesaiDecoder(
                model,
                angles,
                cut_angle=self.cut_angle,
                fov=self.fov,
                min_range=self.min_range,
                max_range=self.max_range,
                dual_return_distance_threshold=self.threshold,
                kernel=self.kernel,
            )
        except ValueError as err:
            self._give_up(f"the packets say {model.name}, but {err}")
        self.model = model
        assert self.decoder is not None
        geo = self.decoder.geometry
        self._meta.update(
            model=model.name,
            model_evidence=said,
            angles=angles.source,
            cut_angle_deg=model.default_cut if self.cut_angle is None else self.cut_angle,
            fov_deg=self.fov if self.fov is not None else model.fov,
        )
        corr = geo.correction
        self._fields = None if corr is None else (lambda az: find_fields(corr, az))
        if self.declared is None:
            log.info("%s: %s (%s; angles %s)", self.name, model.name, said, angles.source)

    def _give_up(self, said: str | None = None) -> None:
        if said is None:
            said = _unknown_model(self._waiting, self.declared)
        waiting, self._waiting = len(self._waiting), []
        if waiting:
            self.count_error("unsupported_model", said, units=waiting)
        where = self.pcap or self.bag
        raise DecodeError(f"{self.name}: {str(where) + ': ' if where else ''}{said}")

    def _push(self, packets: list[Packet]) -> list[HesaiSweep]:
        decoder = self.decoder
        assert decoder is not None
        batch, rejected = prepare(
            decoder.model,
            [p for p, _t, _w in packets],
            check_crc=self.check_crc,
            fields=self._fields,
        )
        for i, reason, message in rejected:
            self.count_error(reason, f"{packets[i][2]}{message}")
        arrivals = [packets[i][1] for i in batch.index.tolist()]
        return decoder.push(batch, arrivals)

    def _flush(self) -> list[HesaiSweep]:
        sweeps: list[HesaiSweep] = []
        if self.decoder is None and self._waiting:
            if not self._choose():
                self._give_up()
            packets, self._waiting = self._waiting, []
            sweeps = self._push(packets)
        return sweeps + (self.decoder.flush() if self.decoder is not None else [])

    def _frame(self, sweep: HesaiSweep) -> Frame:
        modes = self.decoder.dual_packets if self.decoder is not None else 0
        return self.make_frame(
            sweep.t_sensor,
            sweep.points,
            t_arrival=sweep.t_arrival,
            meta={"partial": sweep.partial, "packets": sweep.units, "dual": modes > 0},
            units=sweep.units,
        )

    # -- offline -------------------------------------------------------------------------

    def _input_text(self) -> str | None:
        if self.pcap is not None:
            return f"pcap={str(self.pcap)!r}"
        return None if self.bag is None else f"bag={str(self.bag)!r}"

    def frames(self) -> AsyncIterator[Frame]:
        if self.pcap is None and self.bag is None:
            return self._live_frames()
        return self._offline_frames()

    async def _offline_frames(self) -> AsyncIterator[Frame]:
        self.decoder, self.model, self._waiting = None, None, []
        await self._angles_from_sensor()
        packets = await self.run_blocking(self._open_offline)
        made = 0
        try:
            async for frame in self._paced(
                lambda: self._offline_batch(packets),
                lambda sweep: sweep.t_arrival,
                self._frame,
            ):
                made += 1
                yield frame
        finally:
            close = getattr(packets, "close", None)
            if close is not None:
                close()
        if not made:
            self._nothing_decoded()

    def _open_offline(self) -> Iterator[Packet]:
        if self.pcap is not None:
            return self._pcap_packets()
        return self._bag_packets()

    def _pcap_packets(self) -> Iterator[Packet]:
        assert self.pcap is not None
        return pcap_packets(self.pcap, self.data_port, self.other_datagrams)

    def _bag_packets(self) -> Iterator[Packet]:
        assert self.bag is not None

        def bad_message(message: str) -> None:
            self.count_received(1)
            self.count_error("bad_message", message)

        return bag_packets_of(self.bag, self.topic, self.name, bad_message)

    def _offline_batch(self, packets: Iterator[Packet]) -> list[HesaiSweep] | None:
        taken: list[Packet] = []
        ended = True
        for packet in packets:
            taken.append(packet)
            if len(taken) >= _BATCH:
                ended = False
                break
        sweeps = self._take(taken) if taken else []
        if ended:
            sweeps += self._flush()
            if not sweeps:
                return None
        return [s for s in sweeps if self._wanted(s)]

    def _nothing_decoded(self) -> None:
        stats = self.ledger().statistics()
        where = self.pcap or self.bag
        if stats.received:
            raise DecodeError(f"{self.name}: {where}: {self._no_sweep(stats.received, '')}")
        if self.other_datagrams:
            (port, size), count = self.other_datagrams.most_common(1)[0]
            raise DecodeError(
                f"{self.name}: {where}: no datagram to port {self.data_port}; "
                f"{count:,} of {size:,} bytes to port {port} (give data_port={port}?)"
            )
        raise DecodeError(f"{self.name}: {where}: no Hesai packets")

    # -- live ----------------------------------------------------------------------------

    async def _live_frames(self) -> AsyncIterator[Frame]:
        assert self.port is not None
        self.decoder, self.model, self._waiting = None, None, []
        await self._angles_from_sensor()
        receiver = self._receiver(
            self.host, self.port, self.sender, self.recv_buffer, self.sender_timeout
        )
        if self.kernel:
            from adapters.lidar._hesai_kernel import warm

            await self.run_blocking(warm)
        async with receiver:
            self._bound(receiver)
            try:
                while True:
                    got = await receiver.receive_many(64)
                    packets = [(p, t, f"datagram from {a[0]}:{a[1]}: ") for p, a, t in got]
                    for sweep in await self.run_blocking(self._take, packets):
                        if self._wanted(sweep):
                            frame = self._frame(sweep)
                            self.watch.check(frame)
                            yield frame
            finally:
                self._count_held_at_stop()

    def _count_held_at_stop(self) -> None:
        """A live stream stopped: the packets of the sweep in progress (and any held
        before the model was known) are lost as ``incomplete``, none left pending."""
        held = len(self._waiting) + (0 if self.decoder is None else self.decoder.held)
        self._waiting = []
        if self.decoder is not None:
            self.decoder.flush()  # those packets are counted here, not emitted
        if held:
            self.count_error(
                "incomplete",
                f"{self.name}: {held} packets of the sweeps in progress when the source stopped",
                units=held,
            )

    def statistics(self) -> dict[str, Any]:
        decoder = self.decoder
        return self._statistics(
            None if self.model is None else self.model.name,
            0 if decoder is None else decoder.packets,
            0 if decoder is None else decoder.dual_packets,
        )

    def __repr__(self) -> str:
        return self._repr(self.port, "auto" if self.declared is None else self.declared.name)


def _existing(path: str | Path | None, what: str, sensor: str) -> Path | None:
    """An input file given, as a ``Path``; one that does not exist is a SourceOpenError."""
    if path is None:
        return None
    if not Path(path).exists():
        raise SourceOpenError(f"{what} {str(path)!r} does not exist", sensor=sensor)
    return Path(path)


def _unknown_model(waiting: list[Packet], declared: HesaiModel | None) -> str:
    """Why no model could be chosen for the packets held: what the first ones are."""
    whats = Counter(identify(p)[1] for p, _t, _w in waiting[:64])
    said = "no Hesai packet: " + "; ".join(f"{n} x {w}" for w, n in whats.most_common(3))
    if declared is not None:
        said = f"none of {len(waiting)} packets is a {declared.name}: {said}"
    return said


def _check_geometry(
    cut_angle: float | None,
    fov: tuple[int, int] | None,
    min_range: float | None,
    max_range: float | None,
    threshold: float,
) -> None:
    """The cut, field of view, range and echo options in their bounds, else a ConfigError."""
    if cut_angle is not None and not 0.0 <= cut_angle < 360.0:
        raise ConfigError(f"cut_angle must be in [0, 360) degrees, got {cut_angle}")
    if fov is not None and not all(0 <= a <= 360 for a in fov):
        raise ConfigError(f"fov must be two angles in [0, 360] degrees, got {fov}")
    if threshold < 0:
        raise ConfigError("dual_return_distance_threshold must be >= 0 metres")
    if min_range is not None and max_range is not None and min_range >= max_range:
        raise ConfigError(f"min_range {min_range} must be below max_range {max_range}")


__all__ = ["DEFAULT_PORT", "HESAI_DTYPE", "RETURN_MODES", "HesaiSource"]
