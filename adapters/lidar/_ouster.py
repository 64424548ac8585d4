"""``OusterSource``: Ouster OS0/OS1/OS2/OSDome scans and IMU, from a pcap(ng) or live UDP.

The metadata is read by :mod:`adapters.lidar._ouster_meta`, the packets checked
and batched by the sans-I/O :class:`~adapters.lidar._ouster_packets.ScanAssembler`
(compiled decoding at each UDP profile's documented layout; ouster-sdk is not
needed, except to read OSF files or with ``decoder="ouster-sdk"``);
this module moves bytes and keeps the ledger. Offline, a capture is read,
batched and decoded in a worker thread (a capture up to 1 MiB, a scan or two, on
the event loop: the round trip would cost more than the work); live, datagrams
are received on the event loop (:mod:`adapters.lidar._ouster_udp`) and each
finished scan is decoded in a worker thread. The packet layout and beam tables
come from :func:`~adapters.lidar._ouster_setup.prepare`, made once per metadata
content in a process.

Ledger (unit: datagram). Every record of a capture and every datagram
received counts once, on sensor ``<name>`` (lidar, and anything that is not
an IMU packet) or ``<name>_imu``. Lost reasons: ``bad_length`` (a packet of
the wrong size, a cut record), ``foreign_sender`` (another host, or a packet
naming another sensor), ``undecodable`` (columns the metadata's lidar mode does
not have), ``wrong_port`` (a datagram for neither port), ``unsupported_type``
(a capture record that is not UDP), ``stale`` (a packet of a scan already
emitted), ``incomplete`` (a partial scan dropped by ``partial_scans=False``,
or a last packet held for a scan that never came). Columns a scan lacks are
counted as ``missing`` in ``errors`` (a warning: those packets never arrived,
or arrived bad and were counted then) and in ``missing_columns``.

Ports. Ports not given come from the metadata (``config_params``:
``udp_port_lidar``, ``udp_port_imu``, written by firmware 2.0 and later); a
capture read with neither takes them from its own traffic (the port whose
datagrams have the metadata's lidar packet size, and the IMU's), as ouster-sdk
guesses them; 7502 and 7503 otherwise. The sensor's IP is not in the metadata
(it names the sensor's host name and ``udp_dest``, the receiving host's
address): ``host`` stays explicit.

The IMU. ``<name>_imu`` is optional unless ``require_imu=True``: a capture or
a sensor that sends no IMU packet (a capture filtered to the lidar port, an
IMU port nobody listens to) leaves it without a frame and the run does not
fail for it; asked for, its silence is an error as for any sensor.

Time. ``t_sensor`` of a scan is its first valid column's timestamp, of an IMU
sample its gyroscope timestamp: ns on the sensor's clock, which the clock
model maps to host time as for every sensor. ``t_arrival`` is the host
receive time (live) or the capture time of the packet that finished the scan.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from stat import S_ISREG
from typing import Any

import anyio

from adapters._side_files import METADATA_LIMIT, read_small, refuse_special
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar._ouster_layout import lidar_packet_size
from adapters.lidar._ouster_limits import metadata_problem
from adapters.lidar._ouster_meta import NotMetadata, OusterInfo, OutOfBounds, parse_metadata
from adapters.lidar._ouster_osf import OSF_INSTALL, Ledger, OsfContents, OsfScans, open_osf
from adapters.lidar._ouster_packets import (
    DECODERS,
    IMU_FIELDS,
    OUSTER_DTYPE,
    MetadataMismatch,
    OusterScan,
    PointMaker,
    ScanAssembler,
    imu_sample,
    missing_columns,
)
from adapters.lidar._ouster_setup import prepare
from adapters.lidar._ouster_udp import UdpPorts
from adapters.lidar._pcap import LEDGER_REASONS, Datagram, PcapReader
from adapters.net import parse_sender
from fusion import Frame, Overflow, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, UsageError

log = logging.getLogger("hyperframes.lidar")

LIDAR_PORT, IMU_PORT = 7502, 7503
_BATCH = 2048  # at most this many datagrams per worker-thread round trip reading a capture
# and this many scans: a few scans' arrays alive at once are reused by malloc, a batch of
# 30 (30 MB) went back to the system and came back as fresh pages (page faults: 0.3 ms a
# scan, more than the decoding)
_SCANS = 2
_MAX_METADATA = METADATA_LIMIT  # a sensor's metadata JSON is a few kB
# A capture up to this size (two 1024x32 scans, about 1 ms of work) is read on the event
# loop: handing it to a worker thread and back costs more than the work, in wall time.
_INLINE_BYTES = 1024 * 1024


class _Capture:
    """The capture being read: its reader and datagrams, opened by the first batch."""

    def __init__(self) -> None:
        self.reader: PcapReader | None = None
        self.datagrams: Iterator[Datagram] | None = None

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


def load_metadata(path: str | Path, *, sensor: str = "lidar") -> OusterInfo:
    """The sensor described by a metadata JSON (legacy or current layout), checked;
    a one-line :class:`~adapters.errors.SourceOpenError` naming what is wrong."""
    return _read_metadata(path, sensor)[1]


def _read_metadata(path: str | Path, sensor: str) -> tuple[bytes, OusterInfo]:
    """``(the file's bytes, its OusterInfo)``; a SourceOpenError naming what is wrong."""
    where = Path(path)

    def refused(message: str) -> SourceOpenError:
        return SourceOpenError(message, sensor=sensor)

    # A regular file of at most 4 MiB: /dev/zero or a FIFO is refused, not read.
    raw = read_small(where, "Ouster metadata", _MAX_METADATA, error=refused)
    try:
        info = parse_metadata(raw)
    except NotMetadata as err:
        first = " ".join(str(err).split())[:300]
        raise SourceOpenError(
            f"{str(where)!r} is not an Ouster sensor's metadata JSON: {first}", sensor=sensor
        ) from None
    except OutOfBounds as err:
        raise SourceOpenError(f"Ouster metadata {str(where)!r}: {err}", sensor=sensor) from None
    problem = metadata_problem(info)  # before any array is sized by it
    if problem is not None:
        raise SourceOpenError(f"Ouster metadata {str(where)!r}: {problem}", sensor=sensor)
    return raw, info


def read_osf(path: str | Path, name: str = "lidar") -> OsfContents:
    """What the OSF file at ``path`` holds (its lidar streams, named as
    ``OusterSource(osf=path, name=name)`` names them, and its time range), from its
    metadata; a one-line :class:`~adapters.errors.SourceOpenError` when it cannot be read."""
    return open_osf(path, name)


def osf_sensor_names(path: str | Path, name: str = "lidar") -> list[str]:
    """The sensors ``OusterSource(osf=path, name=name)`` produces (read from the file's
    metadata): each lidar stream's and, where its scans carry IMU samples, its IMU's."""
    names: list[str] = []
    for stream in open_osf(path, name).streams:
        names += [stream.sensor] if stream.imu is None else [stream.sensor, stream.imu]
    return names


def _lidar_meta(info: Any) -> dict[str, Any]:
    """A lidar sensor's spec meta, from its ``SensorInfo``."""
    fmt = info.format
    return {
        "model": str(info.prod_line),
        "serial": str(info.sn),
        "lidar_mode": str(info.config.lidar_mode),
        "udp_profile": str(fmt.udp_profile_lidar),
        "beams": int(fmt.pixels_per_column),
        "columns": int(fmt.columns_per_frame),
        "fields": list(OUSTER_DTYPE.names or ()),
        "frame": "Ouster sensor frame (as ouster-sdk's XYZLut), metres",
    }


_GUESS_DATAGRAMS = 4096  # a capture's first datagrams looked at to find its ports


def _ports_by_size(path: Path, sizes: dict[str, int], name: str) -> dict[str, int]:
    """The destination port most of a capture's first datagrams of each packet size go to
    (``{"lidar": 7502, "imu": 7503}``; a kind none has is left out)."""
    from collections import Counter

    counts: dict[str, Counter[int]] = {kind: Counter() for kind in sizes}
    with PcapReader(path) as reader:
        for i, (_t, _src, port, payload, _at, _host) in enumerate(reader.addressed()):
            for kind, size in sizes.items():
                if len(payload) == size:
                    counts[kind][port] += 1
            if i >= _GUESS_DATAGRAMS:
                break
    default = {"lidar": LIDAR_PORT, "imu": IMU_PORT}
    return {  # the usual port whenever it has such packets, else the one most have
        kind: default[kind] if c[default[kind]] else c.most_common(1)[0][0]
        for kind, c in counts.items()
        if c
    }


class OusterSource(Source):
    """Scans of an Ouster lidar and its IMU (contract).

    ``OusterSource(pcap="x.pcap", metadata="x.json")`` decodes a capture
    (pcap or pcapng); ``OusterSource(osf="x.osf")`` reads an OSF file (Ouster's
    own format, through ouster-sdk's OSF reader; see below);
    ``OusterSource(metadata="x.json", lidar_port=7502)`` listens live
    (``lidar_port=0`` / ``imu_port=0`` pick free ports; :meth:`wait_listening`
    returns them; ``host`` keeps only datagrams from that address). The
    metadata is the sensor's JSON (``ouster-cli source HOST save`` or the
    sensor's HTTP API), legacy or current layout. Ports not given come from
    the metadata, else (a capture) from the capture's traffic, else 7502/7503
    (``ports_from`` says which). ``require_imu=True`` makes a run without IMU
    packets fail; by default ``<name>_imu`` is optional.

    ``decoder="numba"`` (the default) decodes a scan's packets at once, straight
    into its point array, with compiled kernels (:mod:`adapters.lidar._ouster_kernel`)
    at the byte layout Ouster documents for the metadata's UDP profile (every
    profile ouster-sdk 1.0 knows; no ouster-sdk needed); ``decoder="numpy"`` does
    the same with numpy views (no JIT: nothing to compile or load on the first
    scan, 2-4x slower a scan); ``decoder="ouster-sdk"`` batches every packet with
    ouster-sdk's ``FrameBatcher`` (ouster-sdk must be installed). All give the
    same points.

    Frames of sensor ``name`` hold an :data:`OUSTER_DTYPE` array of one scan's
    valid returns; ``meta`` has ``partial``, ``packets``, ``valid_columns`` and
    ``missing_columns`` (``[start, stop)`` runs). Frames of ``<name>_imu``
    (kind ``imu``) hold ``ax, ay, az`` (m/s²), ``gx, gy, gz`` (rad/s) and the
    ``accel``/``gyro`` vectors. Packets that do not fit the metadata are
    counted and skipped; when the first packets all misfit, the metadata is
    of another sensor or mode and :meth:`frames` raises
    :class:`~fusion.DecodeError` naming the mismatch.

    An OSF file holds its sensors' metadata and their scans, already batched:
    one lidar sensor per lidar stream (``name``, then ``name_1`` ...), and
    ``<lidar>_imu`` only where the scans carry IMU samples (the
    ``ACCEL32_GYRO32_NMEA`` IMU profile, its fields kept). A scan's points,
    fields, ``t_sensor`` (its first valid column's timestamp) and meta are those
    the capture of its packets gives (fields the file did not keep are 0); its
    ``t_arrival`` the receive time of its last packet. The ledger's unit is
    an OSF message (an IMU sample on ``<lidar>_imu``).
    """

    _ledger_unit = "datagram"
    _scans: OsfScans | None  # an OSF source's scans, once read (_init_osf)

    # long: 15 documented keyword options over three inputs, each checked and kept
    def __init__(
        self,
        pcap: str | Path | None = None,
        *,
        metadata: str | Path | None = None,
        osf: str | Path | None = None,
        lidar_port: int | None = None,
        imu_port: int | None = None,
        require_imu: bool = False,
        host: str | None = None,
        bind: str = "0.0.0.0",
        name: str = "lidar",
        partial_scans: bool = True,
        decoder: str = "numba",
        speed: float | None = None,
        recv_buffer: int = 8 * 1024 * 1024,
        clock: ClockModel | None = None,
        capacity: int = 8,
        overflow: Overflow | None = None,
    ) -> None:
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        if decoder not in DECODERS:
            raise ConfigError(f"decoder must be one of {', '.join(DECODERS)}; got {decoder!r}")
        self.osf: Path | None = None
        """The OSF file read (``osf=``), else None."""
        self.osf_contents: OsfContents | None = None
        """What the OSF file holds (its lidar streams, time range), once opened."""
        if osf is not None:
            if pcap is not None or metadata is not None:
                raise ConfigError(
                    "OusterSource: give osf= alone (the OSF file holds its sensors' "
                    "metadata), or pcap= and metadata="
                )
            _init_osf(self, Path(osf), name, require_imu, partial_scans, speed, clock, capacity)
            return
        if metadata is None:
            raise ConfigError(
                "OusterSource needs metadata= (the sensor's JSON) for a capture or a live "
                "sensor, or osf= (an OSF file, which holds it)"
            )
        self.pcap = None if pcap is None else Path(pcap)
        self._pcap_size = 0
        if self.pcap is not None:
            try:
                stat = os.stat(self.pcap)
            except OSError:
                stat = None
            if stat is None or not S_ISREG(stat.st_mode):
                refuse_special(self.pcap, "pcap file", lambda m: SourceOpenError(m, sensor=name))
                raise SourceOpenError(f"pcap file {str(self.pcap)!r} does not exist", sensor=name)
            self._pcap_size = stat.st_size
        self.metadata: Path | None = Path(metadata)
        raw, self.info = _read_metadata(self.metadata, name)
        self.lidar_port, self.imu_port, self.ports_from = _ports(self, lidar_port, imu_port, name)
        if host is not None:
            parse_sender(host)  # an IPv4 address (a ConfigError naming it otherwise)
        self.host = host
        self.bind = bind
        self.udp: UdpPorts | None = None
        """The live ports' receivers (kernel drops, foreign senders), once listening."""
        self.partial_scans = partial_scans
        self.decoder = decoder
        self.speed = speed
        self.recv_buffer = recv_buffer
        self.imu_name = f"{name}_imu"
        live = self.pcap is None
        overflow = overflow or ("drop_oldest" if live else "block")
        super().__init__(
            specs=(
                SensorSpec(
                    name,
                    kind="lidar",
                    clock=clock,
                    capacity=capacity,
                    overflow=overflow,
                    meta=_lidar_meta(self.info),
                ),
                SensorSpec(
                    self.imu_name,
                    kind="imu",
                    optional=not require_imu,
                    clock=clock,
                    capacity=max(capacity, 64),
                    overflow=overflow,
                    meta={"fields": list(IMU_FIELDS), "units": "m/s^2, rad/s"},
                ),
            )
        )
        # the layout and beam tables, once per metadata content in a process (ouster_setup)
        self._prepared = prepare(raw, self.info)
        self.assembler = self._assembler()
        self.missing_columns = 0
        """Columns of the column window that scans lacked (holes, not stream edges)."""
        tables = self._prepared.direction, self._prepared.offset
        self._points = PointMaker(self.info, tables)
        self._at: int | tuple[str, int] = 0  # the datagram being read: byte offset or sender
        self._listening_ports: tuple[int, int] | None = None
        self._listening = anyio.Event()

    def _assembler(self) -> ScanAssembler:
        if self.decoder == "ouster-sdk":
            try:
                import ouster.sdk.core  # noqa: F401
            except ImportError as err:
                raise SourceOpenError(
                    f"decoder='ouster-sdk' needs ouster-sdk: {OSF_INSTALL} ({err}); the "
                    "default decoder does not",
                    sensor=self.name,
                ) from err
        return ScanAssembler(
            self.info, on_reject=self._rejected, decoder=self.decoder, prepared=self._prepared
        )

    def _new_assembler(self) -> ScanAssembler:
        if self.assembler.accepted or self.assembler.pending():
            return self._assembler()
        return self.assembler  # still fresh

    def _rejected(self, reason: str, message: str, units: int) -> None:
        self.count_error(reason, self._where() + message, units=units)

    def _where(self) -> str:
        """Where the datagram being read came from, for messages (built only for them)."""
        if isinstance(self._at, tuple):
            return f"datagram from {self._at[0]}:{self._at[1]}: "
        return f"{self.pcap}: record at byte {self._at}: "

    async def wait_listening(self) -> tuple[int, int]:
        """Wait until the live sockets are bound; return ``(lidar_port, imu_port)``."""
        if self.pcap is not None or self.osf is not None:
            raise UsageError("wait_listening() is for live sources, not a pcap or OSF file")
        await self._listening.wait()
        assert self._listening_ports is not None
        return self._listening_ports

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return self.pcap is not None or self.osf is not None

    def frames(self) -> AsyncIterator[Frame]:
        if self.osf is not None:
            return _osf_frames(self)
        return self._pcap_frames() if self.pcap is not None else self._live_frames()

    # -- OSF -----------------------------------------------------------------------------

    def expected_frames(self) -> int | None:
        if self.osf_contents is not None:
            return sum(s.messages for s in self.osf_contents.streams)
        return None

    # -- offline -------------------------------------------------------------------------

    async def _pcap_frames(self) -> AsyncIterator[Frame]:
        assert self.pcap is not None
        self.assembler = self._new_assembler()
        capture = _Capture()
        clock = current_clock()
        start: tuple[int, int] | None = None
        inline = self._pcap_size <= _INLINE_BYTES
        try:
            done = False
            while not done:  # one worker-thread round trip a batch (the first opens the file)
                if inline:  # a capture of a scan or two: less work than the round trip
                    await anyio.lowlevel.checkpoint()
                    batch, done = _pcap_batch(self, capture)
                else:
                    batch, done = await self.run_blocking(_pcap_batch, self, capture)
                for frame in batch:
                    if self.speed is not None and frame.t_arrival is not None:
                        if start is None:
                            start = (clock.now(), frame.t_arrival)
                        due = start[0] + round((frame.t_arrival - start[1]) / self.speed)
                        await clock.sleep_until(due)
                    yield frame
        finally:
            capture.close()

    def _open_pcap(self, path: Path) -> PcapReader:
        return PcapReader(path, on_skip=self._skipped_record)

    def _skipped_record(self, reason: str, offset: int) -> None:
        self.count_received()
        self.count_error(
            LEDGER_REASONS.get(reason, "undecodable"),
            f"{self.pcap}: record at byte {offset}: {reason.replace('_', ' ')}",
        )

    # -- live ----------------------------------------------------------------------------

    async def _live_frames(self) -> AsyncIterator[Frame]:
        self.assembler = self._new_assembler()
        ports = UdpPorts(
            self,
            self.bind,
            (self.lidar_port, self.imu_port),
            (self.name, self.imu_name),
            recv_buffer=self.recv_buffer,
            sender=self.host,
        )
        with ports:
            self.udp = ports
            lidar_port, imu_port = ports.bound
            self._listening_ports = (lidar_port, imu_port)
            self._listening.set()
            while True:
                received = await ports.receive()
                now = self.now()
                for index, payload, address in received:
                    kind = "lidar" if index == 0 else "imu"
                    self._at = (address[0], address[1])
                    for frame in self._datagram(kind, payload, now, decode=False):
                        if isinstance(frame, OusterScan):
                            for built in await self.run_blocking(self._scan_frames, [frame]):
                                yield built
                        else:
                            yield frame

    # -- shared --------------------------------------------------------------------------

    def _datagram(
        self, kind: str | int, payload: bytes, t: int | None, *, decode: bool = True
    ) -> Any:
        """Frames (or, ``decode=False``, finished scans to decode) made by one datagram
        for ``kind`` ``"lidar"``, ``"imu"`` or (a capture's other traffic) its port."""
        if kind == "imu":
            self.count_received(sensor=self.imu_name)
            size = self.assembler.imu_packet_size
            if len(payload) != size:
                self.count_error(
                    "bad_length",
                    f"{self._where()}IMU packet of {len(payload)} bytes, expected {size}",
                    sensor=self.imu_name,
                )
                return []
            if self.assembler.imu_profile != "LEGACY":
                self.count_error(
                    "undecodable",
                    f"{self._where()}IMU packet of profile {self.assembler.imu_profile}: "
                    "only LEGACY IMU packets are decoded",
                    sensor=self.imu_name,
                )
                return []
            t_sensor, data = imu_sample(payload)
            return [self.make_frame(t_sensor, data, sensor=self.imu_name, t_arrival=t)]
        self.count_received()
        if kind != "lidar":
            self.count_error(
                "wrong_port",
                f"{self._where()}datagram to port {kind}; lidar packets go to "
                f"{self.lidar_port}, IMU packets to {self.imu_port}",
            )
            return []
        try:
            scans = self.assembler.push(payload, t)
        except MetadataMismatch as err:
            raise DecodeError(f"{self.metadata}: {err}", sensor=self.name) from None
        return self._scan_frames(scans, last=False) if decode else scans

    def _scan_frames(self, scans: list[OusterScan], *, last: bool = False) -> list[Frame]:
        frames: list[Frame] = []
        window = self.assembler.window
        cpp = int(self.info.format.columns_per_packet)
        for scan in scans:
            decoded = self.assembler.decode(scan, self._points)
            holes = missing_columns(decoded.ids, self.assembler.columns, window)
            lost = 0
            for start, stop in holes:
                # A stream joined mid-scan lacks the first scan's leading columns, and a
                # capture cut mid-scan the last one's trailing columns: edges, not losses.
                edge = (scan.first and start == window[0]) or (last and stop == window[1] + 1)
                if not edge:
                    lost += stop - start
            if lost:
                # A warning, not ledger units: the packets never reached us (the network's
                # loss; the kernel's is counted by the receiver), or reached us bad and
                # were counted then.
                self.missing_columns += lost
                self.count_error(
                    "missing",
                    f"{self.name}: scan {scan.frame_id} lacks {lost} columns "
                    f"(about {-(-lost // cpp)} packets): {holes}",
                    units=0,
                )
            partial = bool(holes)
            if (partial and not self.partial_scans) or decoded.points is None:
                why = "partial scan dropped" if len(decoded.ids) else "scan without a valid column"
                self.count_error("incomplete", f"{self.name}: {why}", units=scan.packets)
                continue
            frames.append(
                self.make_frame(
                    decoded.t_sensor,
                    decoded.points,
                    t_arrival=scan.t_arrival,
                    units=scan.packets,
                    meta={
                        "partial": partial,
                        "packets": scan.packets,
                        "valid_columns": len(decoded.ids),
                        "missing_columns": holes,
                        "scan_id": scan.frame_id,
                    },
                )
            )
        return frames

    def statistics(self) -> dict[str, Any]:
        stats = dict(super().statistics())
        if self.osf is not None:
            scans = self._scans
            stats.update(
                missing_columns=scans.missing_columns if scans else 0,
                other_messages=scans.other_messages if scans else 0,
            )
            return stats
        stats.update(packets=self.assembler.accepted, missing_columns=self.missing_columns)
        if self.udp is not None:
            stats["udp"] = {r.sensor: r.statistics().as_dict() for r in self.udp.receivers}
        return stats

    def __repr__(self) -> str:
        if self.osf is not None:
            return f"OusterSource(osf={str(self.osf)!r}, name={self.name!r})"
        where = (
            f"pcap={str(self.pcap)!r}" if self.pcap is not None else f"lidar_port={self.lidar_port}"
        )
        return f"OusterSource({where}, metadata={str(self.metadata)!r}, name={self.name!r})"


def _init_osf(
    source: OusterSource,
    path: Path,
    name: str,
    require_imu: bool,
    partial_scans: bool,
    speed: float | None,
    clock: ClockModel | None,
    capacity: int,
) -> None:
    """An OSF file's source: one lidar sensor per lidar stream (``name``, then
    ``name_1`` ...), ``<lidar>_imu`` for a stream whose scans carry IMU samples."""
    contents = open_osf(path, name)
    source.osf, source.osf_contents = path, contents
    source.pcap, source._pcap_size, source.metadata = None, 0, None
    source.info = contents.streams[0].info
    source.lidar_port, source.imu_port, source.ports_from = LIDAR_PORT, IMU_PORT, {}
    source.host, source.bind, source.udp = None, "0.0.0.0", None
    source.partial_scans, source.decoder, source.speed = partial_scans, "ouster-sdk", speed
    source.recv_buffer = 0
    source.imu_name = f"{name}_imu"
    source.missing_columns = 0
    source._scans = None
    source._ledger_unit = "message"
    if require_imu and contents.streams[0].imu is None:
        raise SourceOpenError(
            f"{path}: require_imu=True, but the OSF file's scans carry no IMU samples "
            "(a sensor with the ACCEL32_GYRO32_NMEA IMU profile, IMU fields kept, has them)",
            sensor=name,
        )
    specs: list[SensorSpec] = []
    for stream in contents.streams:
        meta = {**_lidar_meta(stream.info), "osf_stream": stream.stream_id}
        specs.append(
            SensorSpec(
                stream.sensor,
                kind="lidar",
                clock=clock,
                capacity=capacity,
                overflow="block",
                meta=meta,
            )
        )
        if stream.imu is not None:
            specs.append(
                SensorSpec(
                    stream.imu,
                    kind="imu",
                    clock=clock,
                    capacity=max(capacity, 64),
                    overflow="block",
                    meta={"fields": list(IMU_FIELDS), "units": "m/s^2, rad/s"},
                )
            )
    Source.__init__(source, specs=tuple(specs))
    source._listening_ports = None
    source._listening = anyio.Event()


def _ports(
    source: OusterSource, lidar: int | None, imu: int | None, name: str
) -> tuple[int, int, dict[str, str]]:
    """The lidar and IMU ports, and where each came from (``"given"``, ``"metadata"``,
    ``"capture"``, ``"default"``)."""
    config = source.info.config
    found: dict[str, tuple[int | None, str]] = {}
    for key, given, stated in (
        ("lidar", lidar, config.udp_port_lidar),
        ("imu", imu, config.udp_port_imu),
    ):
        if given is not None:
            found[key] = (given, "given")
        elif stated:  # None or 0: the metadata does not say
            found[key] = (int(stated), "metadata")
        else:
            found[key] = (None, "default")
    if source.pcap is not None and any(p is None for p, _ in found.values()):
        from adapters.lidar._ouster_layout import imu_packet_size

        fmt = source.info.format
        sizes = {"lidar": lidar_packet_size(fmt), "imu": imu_packet_size(fmt)}
        seen = _ports_by_size(source.pcap, sizes, name)
        for key, (port, _) in found.items():
            if port is None and seen.get(key) is not None:
                found[key] = (seen[key], "capture")
    lidar_port = found["lidar"][0] or LIDAR_PORT
    imu_port = found["imu"][0] or IMU_PORT
    return lidar_port, imu_port, {k: v[1] for k, v in found.items()}


async def _osf_frames(source: OusterSource) -> AsyncIterator[Frame]:
    assert source.osf_contents is not None
    ledger = Ledger(
        lambda units, sensor: source.count_received(units, sensor=sensor),
        lambda reason, message, units, sensor: source.count_error(
            reason, message, units=units, sensor=sensor
        ),
        lambda t, data, sensor, arrival, meta, units: source.make_frame(
            t, data, sensor=sensor, t_arrival=arrival, meta=meta, units=units
        ),
    )
    scans = source._scans = OsfScans(
        source.osf_contents, ledger, partial_scans=source.partial_scans
    )
    clock = current_clock()
    start: tuple[int, int] | None = None
    try:
        done = False
        while not done:  # a few scans a worker-thread round trip (decoding is the work)
            batch, done = await source.run_blocking(scans.batch, _SCANS)
            for frame in batch:
                if source.speed is not None and frame.t_arrival is not None:
                    if start is None:
                        start = (clock.now(), frame.t_arrival)
                    due = start[0] + round((frame.t_arrival - start[1]) / source.speed)
                    await clock.sleep_until(due)
                yield frame
    finally:
        source.missing_columns = scans.missing_columns
        scans.close()


def _pcap_batch(source: OusterSource, capture: _Capture) -> tuple[list[Frame], bool]:
    """Read up to _BATCH datagrams, assemble, decode (worker thread); ``(frames, the
    capture's end)``. The first call opens the capture; the last flushes the scan
    in progress."""
    if capture.datagrams is None:
        assert source.pcap is not None
        capture.reader = source._open_pcap(source.pcap)
        capture.datagrams = capture.reader.addressed()
    out: list[Frame] = []
    taken = lidar = decoded = 0
    push, lidar_port, imu_port = source.assembler.push, source.lidar_port, source.imu_port
    try:
        for t, _src, port, payload, source._at, _host in capture.datagrams:
            taken += 1
            if port == lidar_port:  # the hot path: counted received after the loop
                lidar += 1
                scans = push(payload, t)
                if scans:
                    out += source._scan_frames(scans)
                    decoded += len(scans)
                    if decoded >= _SCANS:
                        return out, False
            else:
                kind = "imu" if port == imu_port else port
                out += source._datagram(kind, payload, t)
            if taken >= _BATCH:
                return out, False
    except MetadataMismatch as err:
        raise DecodeError(f"{source.metadata}: {err}", sensor=source.name) from None
    finally:
        source.count_received(lidar)
    # the end: the scan in progress (no packet finished it, so no arrival time)
    return out + source._scan_frames(source.assembler.flush(None), last=True), True
