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
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from adapters.errors import SourceOpenError
from adapters.lidar.calibration import VelodyneModel, get_model
from adapters.lidar.pcap import PcapReader, UdpDatagram
from adapters.lidar.points import VELODYNE_DTYPE
from adapters.lidar.velodyne_packets import WRAP_PERIOD_NS, RawSweep, SweepAssembler
from adapters.net.udp import DEFAULT_SENDER_TIMEOUT, UdpReceiver
from fusion.clock import ClockModel
from fusion.continuity import StreamWatch
from fusion.frames import Frame, Overflow, SensorSpec
from fusion.source import Source
from fusion.timing import current_clock

log = logging.getLogger("hyperframes.lidar")

DEFAULT_PORT = 2368
_BATCH = 256  # packets per worker-thread round trip when reading a pcap


class VelodyneSource(Source):
    """Sweeps of a Velodyne VLP-16 / HDL-32E (contract).

    ``VelodyneSource(pcap="x.pcap", model="VLP-16")`` decodes a capture;
    ``VelodyneSource(port=2368, model="HDL-32E")`` listens live (``port=0``
    picks a free port; :meth:`wait_listening` returns it). ``model`` is
    required: a name from :data:`adapters.lidar.MODELS` or your own
    :class:`VelodyneModel`. The packet's product-ID byte is never trusted.

    Each frame's ``data`` is a :data:`VELODYNE_DTYPE` array of one rotation's
    non-zero returns, cut where the azimuth crosses ``cut_angle`` degrees.
    The first sweep, the last one of a pcap and any sweep interrupted by a gap
    in the packets carry ``meta["partial"] = True``; ``partial_sweeps=False``
    drops them. Malformed packets are dropped and counted in ``errors``, and
    so are dual-return packets (return mode 0x39, ``dual_return``): decoding
    supports single return, so a sensor set to dual return yields nothing but
    a warning saying how to fix it, and the rest of a pipeline goes on.
    ``speed`` paces a pcap at its capture timing (``None``: as fast as the
    consumer takes frames).

    Live, a sensor that goes silent and comes back is reported with the gap's
    length (``meta["gap_ns"]``), and sweeps whose stamps jump by more than
    ``jump_threshold`` seconds against their arrival (a rebooted sensor, a
    capture replayed again) start a new segment (``meta["segment_start"]``,
    which restarts the clock model); see :mod:`fusion.continuity`.
    """

    _ledger_unit = "packet"

    def __init__(
        self,
        pcap: str | Path | None = None,
        *,
        model: str | VelodyneModel,
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
            raise ValueError("give either pcap= (offline) or port= (live), not both")
        if speed is not None and speed <= 0:
            raise ValueError(f"speed must be > 0 or None, got {speed}")
        self.model = get_model(model)
        self.pcap = None if pcap is None else Path(pcap)
        if self.pcap is not None and not self.pcap.is_file():
            raise SourceOpenError(f"pcap file {str(self.pcap)!r} does not exist", sensor=name)
        self.port = DEFAULT_PORT if pcap is None and port is None else port
        self.host = host
        self.data_port = data_port
        self.cut_angle = cut_angle
        self.partial_sweeps = partial_sweeps
        self.speed = speed
        self.hour_base_ns = hour_base_ns
        self.recv_buffer = recv_buffer
        self.sender = sender
        self.sender_timeout = sender_timeout
        self.udp: UdpReceiver | None = None
        """The live socket's receiver (kernel drops, foreign senders), once listening."""
        live = self.pcap is None
        super().__init__(
            SensorSpec(
                name,
                kind="lidar",
                clock=clock,
                capacity=capacity,
                overflow=overflow or ("drop_oldest" if live else "block"),
                meta={
                    "model": self.model.name,
                    "cut_angle_deg": cut_angle,
                    "wrap_period_ns": WRAP_PERIOD_NS,
                    "fields": list(VELODYNE_DTYPE.names or ()),
                    "frame": "x right, y forward, z up (Velodyne manual)",
                },
            )
        )
        self.assembler = self._new_assembler()
        self.watch = StreamWatch(name, int(jump_threshold * 1e9), log)
        """Segments and gaps of the live stream."""
        self.ignored_datagrams = 0
        """Datagrams of a pcap not sent to ``data_port`` (position packets, other traffic)."""
        self._listening = anyio.Event()
        self._bound_port: int | None = None
        self._where = ""  # where the packet being pushed came from, for error messages
        self._warned_dual = False

    def _new_assembler(self) -> SweepAssembler:
        return SweepAssembler(self.model, cut_angle=self.cut_angle, on_reject=self._rejected)

    def _rejected(self, reason: str, message: str) -> None:
        self.count_error(reason, self._where + message)

    async def wait_listening(self) -> int:
        """Wait until the live socket is bound; return its UDP port."""
        if self.pcap is not None:
            raise RuntimeError("wait_listening() is for live sources (port=...), not pcap")
        await self._listening.wait()
        assert self._bound_port is not None
        return self._bound_port

    def frames(self) -> AsyncIterator[Frame]:
        return self._pcap_frames() if self.pcap is not None else self._live_frames()

    # -- offline -------------------------------------------------------------------------

    async def _pcap_frames(self) -> AsyncIterator[Frame]:
        assert self.pcap is not None
        self.assembler = self._new_assembler()
        reader = await self.run_blocking(PcapReader, self.pcap)
        datagrams = iter(reader)
        clock = current_clock()
        start: tuple[int, int] | None = None  # (host now, capture time) of the first frame
        try:
            while True:
                batch = await self.run_blocking(self._pcap_batch, datagrams)
                if batch is None:
                    return
                for raw, points in batch:
                    if self.speed is not None and raw.t_arrival is not None:
                        if start is None:
                            start = (clock.now(), raw.t_arrival)
                        due = start[0] + round((raw.t_arrival - start[1]) / self.speed)
                        await clock.sleep_until(due)
                    yield self._frame(raw, points)
        finally:
            reader.close()

    def _pcap_batch(self, datagrams: Any) -> list[tuple[RawSweep, Any]] | None:
        """Read up to _BATCH data packets, assemble, decode (worker thread)."""
        sweeps: list[RawSweep] = []
        taken = 0
        for datagram in datagrams:
            assert isinstance(datagram, UdpDatagram)
            if datagram.dst_port != self.data_port:
                self.ignored_datagrams += 1
                continue
            self._where = f"{self.pcap}: record at byte {datagram.offset}: "
            sweeps += self.assembler.push(datagram.payload, datagram.t_capture)
            self._refuse_dual_return()
            taken += 1
            if taken >= _BATCH:
                break
        if taken == 0:
            sweeps = self.assembler.flush()
            if not sweeps:
                return None
        return [(raw, raw.decode(self.model)) for raw in sweeps if self._wanted(raw)] or (
            [] if taken else None
        )

    # -- live ----------------------------------------------------------------------------

    async def _live_frames(self) -> AsyncIterator[Frame]:
        assert self.port is not None
        self.assembler = self._new_assembler()
        receiver = UdpReceiver(
            self,
            host=self.host,
            port=self.port,
            sender=self.sender,
            recv_buffer=self.recv_buffer,
            sender_timeout=self.sender_timeout,
            counts_admitted=False,  # counted below, as the packets they are
        )
        async with receiver:
            self.udp = receiver
            self._bound_port = receiver.port
            self._listening.set()
            while True:
                payload, address, arrival = await receiver.receive()
                self.count_received()
                self._where = f"datagram from {address[0]}:{address[1]}: "
                sweeps = self.assembler.push(payload, arrival)
                self._refuse_dual_return()
                for raw in sweeps:
                    if self._wanted(raw):
                        points = await self.run_blocking(raw.decode, self.model)
                        frame = self._frame(raw, points)
                        self.watch.check(frame)
                        yield frame

    # -- shared --------------------------------------------------------------------------

    def _wanted(self, raw: RawSweep) -> bool:
        if self.partial_sweeps or not raw.partial:
            return True
        self.ledger().lose("partial_sweep", len(raw.packets))
        return False

    def _refuse_dual_return(self) -> None:
        if self.assembler.rejected["dual_return"] and not self._warned_dual:
            self._warned_dual = True
            log.warning(
                "%s: the sensor sends dual-return packets (return mode 0x39); %s decoding "
                "supports single return only, so they are counted and skipped. Set the "
                "sensor's return type to Strongest or Last.",
                self.name,
                self.model.name,
            )

    def _frame(self, raw: RawSweep, points: Any) -> Frame:
        return self.make_frame(
            self.hour_base_ns + raw.t_sensor,
            points,
            t_arrival=raw.t_arrival,
            meta={"partial": raw.partial, "packets": len(raw.packets)},
            units=len(raw.packets),
        )

    def statistics(self) -> dict[str, Any]:
        stats = dict(super().statistics())
        stats.update(
            packets=self.assembler.accepted,
            rejected=dict(self.assembler.rejected),
            ignored_datagrams=self.ignored_datagrams,
            **self.watch.as_dict(),
        )
        if self.udp is not None:
            stats["udp"] = self.udp.statistics().as_dict()
        return stats

    def __repr__(self) -> str:
        where = f"pcap={str(self.pcap)!r}" if self.pcap is not None else f"port={self.port}"
        return f"VelodyneSource({where}, model={self.model.name!r}, name={self.name!r})"
