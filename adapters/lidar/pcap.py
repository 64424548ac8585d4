"""A small reader for classic libpcap files, just enough to get UDP payloads out.

Velodyne logs are almost always ``.pcap`` captures of the sensor's broadcast
UDP traffic. We need three things from them: each datagram's payload, its
destination port (2368 data, 8308 position) and the capture timestamp, so a
twenty-line walk down Ethernet / VLAN / IPv4 / IPv6 / UDP headers does, and
avoids a dependency on dpkt or scapy.

Supported: microsecond and nanosecond classic pcap in either byte order, link
types Ethernet (1), raw IP (101, 12), Linux cooked capture (113) and BSD
loopback (0). pcapng files are refused with a message saying how to convert
them. Records that are not UDP over IP, or IP fragments, are skipped and
counted, never fatal; a file cut short ends the iteration and is counted too.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from adapters.errors import SourceOpenError

_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000),  # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),  # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_LINK_ETHERNET, _LINK_NULL, _LINK_RAW, _LINK_RAW_BSD, _LINK_SLL = 1, 0, 101, 12, 113
_MAX_RECORD = 256 * 1024  # larger than any snaplen we accept; guards a corrupt length


@dataclass(frozen=True, slots=True)
class UdpDatagram:
    """One UDP payload found in a capture."""

    t_capture: int
    """Capture time, ns since the Unix epoch (the capturing host's clock)."""
    src_port: int
    dst_port: int
    payload: bytes
    offset: int
    """Byte offset of the pcap record in the file, for error messages."""


class PcapReader:
    """Iterate the UDP datagrams of a classic pcap file, in file order.

    ``skipped`` counts records passed over, by reason (``not_udp``,
    ``fragment``, ``truncated_record``, ``truncated_file``).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.skipped: Counter[str] = Counter()
        try:
            self._file: BinaryIO = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as err:
            raise SourceOpenError(f"cannot open pcap file {str(self.path)!r}: {err}") from err
        header = self._file.read(24)
        magic = header[:4]
        if magic == _PCAPNG_MAGIC:
            self._file.close()
            raise SourceOpenError(
                f"{str(self.path)!r} is a pcapng file; only classic pcap is read. "
                "Convert it with: editcap -F pcap in.pcapng out.pcap"
            )
        if len(header) < 24 or magic not in _MAGICS:
            self._file.close()
            raise SourceOpenError(
                f"{str(self.path)!r} is not a pcap file (byte 0: expected a pcap magic "
                f"number, found {magic.hex() or 'end of file'})"
            )
        self._endian, self._tick_ns = _MAGICS[magic]
        self.linktype = struct.unpack(self._endian + "I", header[20:24])[0] & 0x0FFFFFFF
        if self.linktype not in (_LINK_ETHERNET, _LINK_NULL, _LINK_RAW, _LINK_RAW_BSD, _LINK_SLL):
            self._file.close()
            raise SourceOpenError(
                f"{str(self.path)!r}: link type {self.linktype} is not supported "
                "(expected Ethernet, raw IP, Linux SLL or BSD loopback)"
            )

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PcapReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[UdpDatagram]:
        record = struct.Struct(self._endian + "IIII")
        read = self._file.read
        offset = 24
        while True:
            head = read(16)
            if not head:
                return
            if len(head) < 16:
                self.skipped["truncated_file"] += 1
                return
            sec, frac, incl_len, _orig_len = record.unpack(head)
            if incl_len > _MAX_RECORD:
                self.skipped["truncated_file"] += 1  # corrupt length: nothing after is trustworthy
                return
            frame = read(incl_len)
            if len(frame) < incl_len:
                self.skipped["truncated_file"] += 1
                return
            datagram = self._udp(frame)
            if datagram is not None:
                src, dst, payload = datagram
                yield UdpDatagram(
                    sec * 1_000_000_000 + frac * self._tick_ns, src, dst, payload, offset
                )
            offset += 16 + incl_len

    def _udp(self, frame: bytes) -> tuple[int, int, bytes] | None:
        """Peel link, IP and UDP headers off one record; None (and a count) if not UDP."""
        link = self.linktype
        if link == _LINK_ETHERNET:
            pos, ethertype = 14, frame[12:14]
            while ethertype in (b"\x81\x00", b"\x88\xa8") and len(frame) >= pos + 4:  # VLAN tags
                ethertype, pos = frame[pos + 2 : pos + 4], pos + 4
        elif link == _LINK_SLL:
            pos, ethertype = 16, frame[14:16]
        elif link == _LINK_NULL:
            pos = 4
            ethertype = (
                b"\x08\x00" if frame[:1] == b"\x02" or frame[3:4] == b"\x02" else b"\x86\xdd"
            )
        else:
            pos = 0
            ethertype = b"\x08\x00" if frame[:1] and frame[0] >> 4 == 4 else b"\x86\xdd"
        if ethertype == b"\x08\x00" and len(frame) >= pos + 20:
            ihl = (frame[pos] & 0x0F) * 4
            if frame[pos + 9] != 17:
                self.skipped["not_udp"] += 1
                return None
            flags_frag = (frame[pos + 6] << 8) | frame[pos + 7]
            if flags_frag & 0x3FFF:  # more-fragments bit or a fragment offset
                self.skipped["fragment"] += 1
                return None
            pos += ihl
        elif ethertype == b"\x86\xdd" and len(frame) >= pos + 40:
            if frame[pos + 6] != 17:  # extension headers are not walked
                self.skipped["not_udp"] += 1
                return None
            pos += 40
        else:
            self.skipped["not_udp"] += 1
            return None
        if len(frame) < pos + 8:
            self.skipped["truncated_record"] += 1
            return None
        src, dst, length = struct.unpack_from(">HHH", frame, pos)
        end = pos + length
        if length < 8 or end > len(frame):
            self.skipped["truncated_record"] += 1
            return None
        return src, dst, frame[pos + 8 : end]


def read_udp(path: str | Path, *, dst_port: int | None = None) -> list[UdpDatagram]:
    """All UDP datagrams of a capture (optionally only those sent to ``dst_port``)."""
    with PcapReader(path) as reader:
        return [d for d in reader if dst_port is None or d.dst_port == dst_port]
