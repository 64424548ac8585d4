"""A small reader for pcap and pcapng captures, just enough to get UDP payloads out.

LiDAR logs (Velodyne, Ouster) are almost always captures of the sensor's UDP
traffic. We need three things from them: each datagram's payload, its
destination port (2368 data, 8308 position; 7502 lidar, 7503 IMU) and the
capture timestamp, so a twenty-line walk down Ethernet / VLAN / IPv4 / IPv6 /
UDP headers does. It reads the captures of this project's benchmarks faster
than dpkt (``benchmarks/bench_lidar.py``, "pcap read") and the tests check it
against dpkt record for record.

Supported: classic pcap at microsecond and nanosecond resolution in either
byte order, and pcapng (see :mod:`adapters.lidar._pcapng`: several sections and
interfaces, each with its own link type and ``if_tsresol``). Link types
Ethernet (1), raw IP (101, 12), Linux cooked capture (113) and BSD loopback
(0). IPv4 and IPv6 fragments are reassembled (:mod:`adapters.lidar._ipfrag`:
the datagram comes out with the record that completed it; one whose pieces
never all arrive is counted once as ``missing_fragment``). Records that are
not UDP over IP and records of an
interface with another link type are skipped and counted (``skipped``, and
``on_skip`` for a source's ledger, as :data:`LEDGER_REASONS` says), never fatal;
a file cut short ends the iteration and is counted too. A classic pcap record
whose header cannot be right (longer than the snapshot length or than the packet
it says it captured, a fraction of a second over one, running past the end of
the file) is counted as ``damaged_record`` and the reader goes on at the next
sound record header (the next one whose fields fit, within a day of the last,
followed by another or by the end of the file); only when none follows within
4 MiB is the file taken as cut there.
"""

from __future__ import annotations

import mmap
import socket
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from adapters.errors import SourceOpenError
from adapters.lidar._ipfrag import Reassembler
from adapters.lidar._pcapng import walk as walk_pcapng

_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000),  # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),  # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_LINK_ETHERNET, _LINK_NULL, _LINK_RAW, _LINK_RAW_BSD, _LINK_SLL = 1, 0, 101, 12, 113
LINK_TYPES = (_LINK_ETHERNET, _LINK_NULL, _LINK_RAW, _LINK_RAW_BSD, _LINK_SLL)
SKIP_REASONS = {
    "not_udp": "a record that is not UDP over IPv4/IPv6",
    "missing_fragment": "a datagram whose IP fragments did not all arrive (counted once, at "
    "its first fragment's record)",
    "truncated_record": "a record shorter than its headers say",
    "truncated_file": "the file ends (or its lengths break) inside a record",
    "damaged_record": "a record whose header cannot be right (a length beyond the snapshot "
    "length, a fraction of a second over one); the reader goes on at the next sound record",
    "oversized_record": "a record longer than any UDP datagram",
    "unsupported_link": "a record of an interface whose link type is not read",
    "unknown_interface": "a pcapng packet naming an interface never described",
}
"""Why a capture record yields no datagram."""
LEDGER_REASONS = {
    "not_udp": "unsupported_type",
    "missing_fragment": "missing_fragment",
    "unsupported_link": "unsupported_type",
    "unknown_interface": "unsupported_type",
    "truncated_record": "bad_length",
    "oversized_record": "bad_length",
    "truncated_file": "bad_length",
    "damaged_record": "bad_length",
}
"""The ledger reason (docs/ledger.md) a source counts each skip reason as."""
_MAX_RECORD = 256 * 1024  # larger than any snaplen we accept; guards a corrupt length
_MAX_RESYNC = 4 * 1024 * 1024  # bytes searched for the next sound record after a damaged one
_DAY_S = 86_400  # a record more than this from the one before is not believed
_BLOCK = 1 << 20
_UDP_HEAD = struct.Struct(">HHH")
# an Ethernet frame's ethertype, then IPv4's version/IHL, flags and fragment bytes,
# protocol, source address, then UDP's ports and length (42 bytes), read at once
_PLAIN_UDP = struct.Struct(">12x2sB5xBBxB2x4s4xHHH")


Datagram = tuple[int, int, int, bytes, int, bytes]
"""``(t_capture, src_port, dst_port, payload, offset, src_addr)``: a :class:`UdpDatagram`
as a plain tuple (:meth:`PcapReader.addressed`)."""


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
    src_addr: bytes = b""
    """The sender's IP address (4 bytes IPv4, 16 bytes IPv6; :func:`address_text`)."""


class PcapReader:
    """Iterate the UDP datagrams of a pcap or pcapng file, in file order.

    ``skipped`` counts records passed over, by reason (:data:`SKIP_REASONS`);
    ``on_skip(reason, offset)`` is called for each as it happens. ``format``
    is ``"pcap"`` or ``"pcapng"``; ``records`` counts every packet record read.
    """

    def __init__(
        self, path: str | Path, *, on_skip: Callable[[str, int], None] | None = None
    ) -> None:
        self.path = Path(path)
        self.skipped: Counter[str] = Counter()
        self.records = 0
        self._on_skip = on_skip
        self.fragments = Reassembler(self._skip)
        """IP fragments taken and datagrams made whole (``fragments.reassembled``)."""
        self._map: mmap.mmap | None = None
        try:
            self._file: BinaryIO = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as err:
            raise SourceOpenError(f"cannot open pcap file {str(self.path)!r}: {err}") from err
        header = self._file.read(24)
        magic = header[:4]
        self.format = "pcapng" if magic == _PCAPNG_MAGIC else "pcap"
        if self.format == "pcapng":
            self._file.seek(0)
            self.linktype = -1  # per interface
            return
        if len(header) < 24 or magic not in _MAGICS:
            self._file.close()
            raise SourceOpenError(
                f"{str(self.path)!r} is not a pcap file (byte 0: expected a pcap magic number "
                f"or pcapng's 0a0d0d0a, found {magic.hex() or 'end of file'})"
            )
        self._endian, self._tick_ns = _MAGICS[magic]
        self.linktype = struct.unpack(self._endian + "I", header[20:24])[0] & 0x0FFFFFFF
        snaplen = struct.unpack(self._endian + "I", header[16:20])[0]
        # a record longer than the file says it captured is a damaged header (0: unknown)
        self._snaplen = min(snaplen, _MAX_RECORD) if snaplen else _MAX_RECORD
        if self.linktype not in LINK_TYPES:
            self._file.close()
            raise SourceOpenError(
                f"{str(self.path)!r}: link type {self.linktype} is not supported "
                "(expected Ethernet, raw IP, Linux SLL or BSD loopback)"
            )

    def _skip(self, reason: str, offset: int) -> None:
        self.skipped[reason] += 1
        if self._on_skip is not None:
            self._on_skip(reason, offset)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        self._file.close()

    def __enter__(self) -> PcapReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[UdpDatagram]:
        for datagram in self.addressed():
            yield UdpDatagram(*datagram)

    def tuples(self) -> Iterator[tuple[int, int, int, bytes, int]]:
        """The same datagrams as plain ``(t_capture, src_port, dst_port, payload, offset)``
        tuples: no object per datagram, for a source's hot loop."""
        for datagram in self.addressed():
            yield datagram[:5]

    def addressed(self) -> Iterator[Datagram]:
        """The datagrams as :data:`Datagram` tuples, the sender's address last."""
        yield from self._pcapng() if self.format == "pcapng" else self._classic()
        self.fragments.flush()  # datagrams still missing a piece are lost

    def _classic(self) -> Iterator[Datagram]:
        record = struct.Struct(self._endian + "IIII").unpack_from
        plain = _PLAIN_UDP.unpack_from
        offset = 24
        link = self.linktype
        tick = self._tick_ns
        snaplen, ticks_per_s = self._snaplen, 1_000_000_000 // tick
        last_sec: int | None = None
        ethernet = link == _LINK_ETHERNET
        buf: bytes | mmap.mmap = b""
        pos = 0
        read: Callable[[int], bytes] = self._file.read
        try:  # the file mapped: each payload is copied once, straight from the page cache
            buf = self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            pos, read = 24, _nothing
        except (OSError, ValueError):  # not a plain file (or empty): 1 MiB blocks
            pass
        while True:
            if len(buf) - pos < 16:
                buf, pos = buf[pos:] + read(_BLOCK), 0
                if len(buf) == 0:
                    return
                if len(buf) < 16:
                    self._skip("truncated_file", offset)
                    return
            sec, frac, incl_len, orig_len = record(buf, pos)
            damaged = incl_len > snaplen or incl_len > orig_len or frac >= ticks_per_s
            if damaged or (read is _nothing and pos + 16 + incl_len > len(buf)):
                # a header that cannot be right, or one whose record runs past the end of
                # the file: go on at the next sound record if one follows (damage), else
                # the file was cut here
                found = self._resync(buf, pos + 1, last_sec) if read is _nothing else None
                if found is None:
                    self._skip("truncated_file", offset)
                    return
                self.records += 1
                self._skip("damaged_record", offset)
                offset += found - pos
                pos = found
                continue
            last_sec = sec
            start = pos + 16
            end = start + incl_len
            if end > len(buf):
                buf, pos = buf[pos:] + read(max(_BLOCK, incl_len + 16)), 0
                start, end = 16, 16 + incl_len
                if end > len(buf):
                    self._skip("truncated_file", offset)
                    return
            self.records += 1
            pos = end
            if ethernet and incl_len >= 42:  # the usual record: Ethernet, IPv4, UDP
                ethertype, version_ihl, flags, fragment, protocol, host, src, dst, length = plain(
                    buf, start
                )
                if (
                    ethertype == b"\x08\x00"
                    and version_ihl == 0x45  # IPv4 without options
                    and protocol == 17
                    and not (flags & 0x3F or fragment)  # not a fragment
                    and 8 <= length <= incl_len - 34
                ):
                    yield (
                        sec * 1_000_000_000 + frac * tick,
                        src,
                        dst,
                        buf[start + 42 : start + 34 + length],
                        offset,
                        host,
                    )
                    offset += 16 + incl_len
                    continue
            datagram = self._udp(buf[start:end], link, offset)
            if datagram is not None:
                src, dst, payload, host = datagram
                yield (sec * 1_000_000_000 + frac * tick, src, dst, payload, offset, host)
            offset += 16 + incl_len

    def _resync(self, buf: bytes | mmap.mmap, start: int, last_sec: int | None) -> int | None:
        """The position of the next sound record header from ``start`` (a mapped classic
        pcap), or None: one whose lengths and fraction fit, within a day of the last
        record read, followed by another such header or by the end of the file."""
        record = struct.Struct(self._endian + "IIII").unpack_from
        snaplen, ticks_per_s, size = self._snaplen, 1_000_000_000 // self._tick_ns, len(buf)

        def sound(at: int) -> bool:
            if at + 16 > size:
                return False
            sec, frac, incl_len, orig_len = record(buf, at)
            return (
                0 < incl_len <= min(snaplen, orig_len)
                and frac < ticks_per_s
                and at + 16 + incl_len <= size
                and (last_sec is None or abs(sec - last_sec) <= _DAY_S)
            )

        for at in range(start, min(size - 16, start + _MAX_RESYNC) + 1):
            if sound(at):
                after = at + 16 + record(buf, at)[2]
                if after == size or sound(after):
                    return at
        return None

    def _pcapng(self) -> Iterator[Datagram]:
        for rec in walk_pcapng(self._file, self._counted_skip, max_record=_MAX_RECORD):
            self.records += 1
            if rec.linktype not in LINK_TYPES:
                self._skip("unsupported_link", rec.offset)
                continue
            datagram = self._udp(rec.data, rec.linktype, rec.offset)
            if datagram is not None:
                src, dst, payload, host = datagram
                yield (rec.t_ns, src, dst, payload, rec.offset, host)

    def _counted_skip(self, reason: str, offset: int) -> None:
        if reason != "truncated_file":
            self.records += 1  # a packet block that was there but gave no record
        self._skip(reason, offset)

    def _udp(self, frame: bytes, link: int, offset: int) -> tuple[int, int, bytes, bytes] | None:
        """Peel link, IP and UDP headers off one record; None (and a count) if not UDP."""
        if (
            link == _LINK_ETHERNET
            and frame[12:14] == b"\x08\x00"
            and frame[14] == 0x45  # IPv4, no options
            and frame[23] == 17
            and not (frame[20] & 0x3F or frame[21])  # not a fragment
            and len(frame) >= 42
        ):
            src, dst, length = _UDP_HEAD.unpack_from(frame, 34)
            if 8 <= length <= len(frame) - 34:
                return src, dst, frame[42 : 34 + length], frame[26:30]
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
                self._skip("not_udp", offset)
                return None
            flags_frag = (frame[pos + 6] << 8) | frame[pos + 7]
            host = frame[pos + 12 : pos + 16]
            if flags_frag & 0x3FFF:  # more-fragments bit or a fragment offset
                total = (frame[pos + 2] << 8) | frame[pos + 3]
                key = (host, frame[pos + 16 : pos + 20], (frame[pos + 4] << 8) | frame[pos + 5], 4)
                piece = frame[pos + ihl : pos + total]
                more = bool(flags_frag & 0x2000)
                whole = self.fragments.push(key, (flags_frag & 0x1FFF) * 8, more, piece, offset)
                if whole is None:
                    return None
                frame, pos = whole, 0  # the reassembled UDP header and data
            else:
                pos += ihl
        elif ethertype == b"\x86\xdd" and len(frame) >= pos + 40:
            host = frame[pos + 8 : pos + 24]
            if frame[pos + 6] == 44 and len(frame) >= pos + 48:  # a fragment header
                if frame[pos + 40] != 17:
                    self._skip("not_udp", offset)
                    return None
                size = (frame[pos + 4] << 8) | frame[pos + 5]  # the fragment header included
                field = (frame[pos + 42] << 8) | frame[pos + 43]
                ident = int.from_bytes(frame[pos + 44 : pos + 48], "big")
                key = (host, frame[pos + 24 : pos + 40], ident, 6)
                piece = frame[pos + 48 : pos + 40 + size]
                whole = self.fragments.push(key, field & 0xFFF8, bool(field & 1), piece, offset)
                if whole is None:
                    return None
                frame, pos = whole, 0
            elif frame[pos + 6] != 17:  # other extension headers are not walked
                self._skip("not_udp", offset)
                return None
            else:
                pos += 40
        else:
            self._skip("not_udp", offset)
            return None
        if len(frame) < pos + 8:
            self._skip("truncated_record", offset)
            return None
        src, dst, length = struct.unpack_from(">HHH", frame, pos)
        end = pos + length
        if length < 8 or end > len(frame):
            self._skip("truncated_record", offset)
            return None
        return src, dst, frame[pos + 8 : end], host


def address_text(addr: bytes) -> str:
    """A datagram's ``src_addr`` as text (``"192.168.1.201"``, ``"fe80::1"``)."""
    family = socket.AF_INET if len(addr) == 4 else socket.AF_INET6
    try:
        return socket.inet_ntop(family, addr)
    except (ValueError, OSError):
        return addr.hex() or "unknown"


def _nothing(_size: int) -> bytes:
    """``read`` of a mapped file: everything is already in the buffer."""
    return b""


def read_udp(path: str | Path, *, dst_port: int | None = None) -> list[UdpDatagram]:
    """All UDP datagrams of a capture (optionally only those sent to ``dst_port``)."""
    with PcapReader(path) as reader:
        return [d for d in reader if dst_port is None or d.dst_port == dst_port]
