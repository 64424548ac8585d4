"""Where a :class:`~adapters.lidar._hesai.HesaiSource`'s packets and angles come from.

Offline, packets are a pcap's datagrams to the data port or the packets of a
bag's one topic of Hesai packet messages; with ``calibration="sensor"`` the
angles are asked of the sensor over PTC before the stream starts. Each
packet travels as ``(payload, arrival, where)``, ``where`` prefixing the
one-line message of a packet lost.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar._hesai_correction import HesaiCorrection
from adapters.lidar._hesai_models import HesaiAngles
from adapters.lidar._hesai_packets import PACKET_TYPES, BadMessage, bag_packets
from adapters.net import parse_sender
from fusion.errors import ConfigError

log = logging.getLogger("hyperframes.lidar")

Packet = tuple[bytes, int | None, str]  # payload, arrival, where (for messages)


def pcap_packets(pcap: Path, data_port: int, other: Counter[tuple[int, int]]) -> Iterator[Packet]:
    """The datagrams to ``data_port``; the others counted in ``other`` by (port, length)."""
    from adapters.lidar._pcap import PcapReader

    with PcapReader(pcap) as reader:
        for d in reader:
            if d.dst_port != data_port:
                other[(d.dst_port, len(d.payload))] += 1
                continue
            yield d.payload, d.t_capture, f"{pcap}: record at byte {d.offset}: "


def bag_packets_of(
    bag: Path, topic: str | None, sensor: str, bad_message: Callable[[str], None]
) -> Iterator[Packet]:
    """The packets of ``bag``'s one topic of Hesai packets (``topic`` picks one of
    several); a message that holds none is said to ``bad_message`` and skipped."""
    from adapters.bags import BagReader, decompress_message

    with BagReader(bag) as reader:
        topic, msgtype = packet_topic(reader, bag, topic, sensor)
        conns = reader.topics[topic].connections
        for number, (_conn, t, data) in enumerate(reader.messages(conns)):
            raw = decompress_message(data) if reader.message_compression else data
            try:
                payloads = bag_packets(raw, msgtype, cdr=reader.is2)
            except BadMessage as err:
                bad_message(f"{bag}: {topic} message {number}: {err}")
                continue
            where = f"{bag}: {topic} message {number}: packet "
            for i, payload in enumerate(payloads):
                yield payload, t, f"{where}{i}: "


def packet_topic(reader: Any, bag: Path, topic: str | None, sensor: str) -> tuple[str, str]:
    """The topic of Hesai packets to read and its message type; one that is not there,
    holds no packets, or a choice among several left open is a :class:`SourceOpenError`."""
    topics = {
        t: i.msgtype
        for t, i in reader.topics.items()
        if i.msgtype is not None and _packet_type(i.msgtype)
    }
    if topic is not None:
        if topic not in reader.topics:
            raise SourceOpenError(
                f"{bag}: no topic {topic!r} (topics: {', '.join(reader.topics)})",
                sensor=sensor,
            )
        if topic not in topics:
            raise SourceOpenError(
                f"{bag}: topic {topic!r} is {reader.topics[topic].msgtype}, "
                f"not one of {', '.join(PACKET_TYPES)}",
                sensor=sensor,
            )
        topics = {topic: topics[topic]}
    if len(topics) != 1:
        what = ", ".join(topics) if topics else "none"
        raise SourceOpenError(
            f"{bag}: {len(topics)} topics of Hesai packets ({what}); "
            f"{'give topic=' if topics else 'expected ' + ' or '.join(PACKET_TYPES)}",
            sensor=sensor,
        )
    ((found, msgtype),) = topics.items()
    return found, msgtype


def _packet_type(msgtype: str) -> bool:
    plain = msgtype.replace("/msg/", "/")
    return any(plain == t.replace("/msg/", "/") for t in PACKET_TYPES)


@dataclass(frozen=True)
class SensorAngles:
    """``calibration="sensor"``: where the sensor answers PTC, how long to wait, and
    whether the built-in angles stand in when it does not (``fallback``)."""

    ptc: tuple[str, int]
    timeout: float
    fallback: bool

    @classmethod
    def checked(
        cls,
        ptc_host: str | None,
        ptc_port: int,
        timeout: float,
        fallback: bool,
        sender: str | None,
    ) -> SensorAngles:
        """The options checked; ``ptc_host`` defaults to ``sender``'s address."""
        ptc = (_ptc_host(ptc_host, sender), ptc_port)
        if not 0 < ptc_port <= 65535 or not 0 < timeout <= 60:
            raise ConfigError(
                f"ptc_port must be 1..65535 and ptc_timeout in (0, 60] s, "
                f"got {ptc_port} and {timeout}"
            )
        return cls(ptc, timeout, fallback)

    async def fetch(
        self, sensor: str, fell_back: Callable[[str], None]
    ) -> HesaiAngles | HesaiCorrection | None:
        """The sensor's own angle correction; ``None`` (said to ``fell_back``) when it
        cannot be had and ``fallback`` allows the built-in angles, else the error."""
        from adapters.lidar._hesai_ptc_client import fetch_angles

        host, port = self.ptc
        try:
            angles = await fetch_angles(host, port, wait_s=self.timeout)
        except (SourceOpenError, DecodeError) as err:
            message = f"the sensor's angle correction: {err}"
            if not self.fallback:
                raise type(err)(message, sensor=sensor) from None
            message = f"{sensor}: {message}; the built-in angles are used (calibration_fallback)"
            log.warning("%s", message)
            fell_back(message)
            return None
        log.info("%s: angles from the sensor at %s:%d (PTC)", sensor, host, port)
        return angles


def _ptc_host(ptc_host: str | None, sender: str | None) -> str:
    if ptc_host is not None:
        if not ptc_host.strip():
            raise ConfigError("ptc_host is empty: give the sensor's address")
        return ptc_host.strip()
    if sender is not None:
        return parse_sender(sender)[0]
    raise ConfigError(
        "calibration='sensor' asks the sensor over PTC: give ptc_host= (its address, "
        "192.168.1.201 from the factory) or sender="
    )
