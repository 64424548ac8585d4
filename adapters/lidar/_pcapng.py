"""The pcapng block walk: link-layer records with their interface and time, in file order.

Wireshark and ``dumpcap`` write pcapng by default. A file is one or more
sections, each a Section Header Block (SHB, which fixes the byte order of
what follows) and then Interface Description Blocks (IDB: link type and
timestamp resolution of interface *n*, numbered from 0 in the order they
appear in the section) and packet blocks: Enhanced Packet Blocks (EPB, the
usual one), Simple Packet Blocks (SPB: interface 0, no timestamp) and the
obsolete Packet Block. Everything else (name resolution, statistics,
decryption secrets, custom blocks) is skipped by its length without being read.

Time. An interface's ``if_tsresol`` option gives its tick: ``10**-v`` s, or
``2**-v`` s when the top bit is set (default: microseconds); ``if_tsoffset``
adds whole seconds. Ticks become integer nanoseconds since the Unix epoch
(exact for every decimal resolution down to 1 ns; binary ones round down).

Limits: every block length is checked against the bytes left in its block,
so a corrupt length stops the walk (counted as ``truncated_file``) instead of
reading gigabytes; a packet larger than ``max_record`` is skipped and counted.
Follows the IETF draft "PCAP Next Generation (pcapng) Capture File Format".
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

SHB = 0x0A0D0D0A
_IDB, _PB, _SPB, _EPB = 1, 2, 3, 6
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_TSRESOL, _OPT_TSOFFSET = 9, 14
_MAX_BLOCK = 16 * 1024 * 1024  # no legal block of a UDP capture is near this


@dataclass(frozen=True, slots=True)
class Interface:
    """One capture interface of a section (its IDB)."""

    linktype: int
    snaplen: int
    to_ns: Callable[[int], int]
    """Timestamp ticks to nanoseconds since the Unix epoch."""


@dataclass(frozen=True, slots=True)
class Record:
    """One captured link-layer frame."""

    interface: int
    linktype: int
    t_ns: int
    """Capture time, ns since the Unix epoch (0 for a Simple Packet Block)."""
    data: bytes
    offset: int
    """Byte offset of the block in the file."""


def _tick_converter(tsresol: int, offset_s: int) -> Callable[[int], int]:
    base = offset_s * 1_000_000_000
    exponent = tsresol & 0x7F
    if tsresol & 0x80:  # 2**-exponent seconds per tick
        return lambda ticks: base + ((ticks * 1_000_000_000) >> exponent)
    if exponent <= 9:
        scale = 10 ** (9 - exponent)
        return lambda ticks: base + ticks * scale
    divisor = 10 ** (exponent - 9)
    return lambda ticks: base + ticks // divisor


def _options(body: bytes, start: int, endian: str) -> dict[int, bytes]:
    """The options of a block body from ``start`` (first value of each code kept)."""
    found: dict[int, bytes] = {}
    pos, end = start, len(body)
    header = struct.Struct(endian + "HH")
    while pos + 4 <= end:
        code, length = header.unpack_from(body, pos)
        if code == 0:  # opt_endofopt
            break
        value = body[pos + 4 : pos + 4 + length]
        found.setdefault(code, value)
        pos += 4 + ((length + 3) & ~3)
    return found


def _interface(body: bytes, endian: str) -> Interface:
    linktype, _reserved, snaplen = struct.unpack_from(endian + "HHI", body, 0)
    opts = _options(body, 8, endian)
    tsresol = opts.get(_OPT_TSRESOL, b"\x06")[:1] or b"\x06"
    raw_offset = opts.get(_OPT_TSOFFSET, b"")
    offset_s = struct.unpack(endian + "q", raw_offset)[0] if len(raw_offset) == 8 else 0
    return Interface(linktype, snaplen, _tick_converter(tsresol[0], offset_s))


def walk(file: BinaryIO, skip: Callable[[str, int], None], *, max_record: int) -> Iterator[Record]:
    """The packet records of a pcapng file opened at byte 0, in file order.

    ``skip(reason, offset)`` is called for each block passed over that held or
    may have held a packet: ``unknown_interface``, ``oversized_record``,
    ``truncated_file``.
    """
    read = file.read
    offset = 0
    endian = "<"
    interfaces: list[Interface] = []
    while True:
        head = read(8)
        if not head:
            return
        if len(head) < 8:
            skip("truncated_file", offset)
            return
        kind = struct.unpack("<I", head[:4])[0]  # the SHB type reads the same either way
        if kind == SHB:
            magic = read(4)
            endian = "<" if magic == b"\x4d\x3c\x2b\x1a" else ">"
            if len(magic) < 4 or struct.unpack(endian + "I", magic)[0] != _BYTE_ORDER_MAGIC:
                skip("truncated_file", offset)  # not a section header after all
                return
            interfaces = []
            rest = struct.unpack(endian + "I", head[4:])[0] - 12
        else:
            kind = struct.unpack(endian + "I", head[:4])[0]
            rest = struct.unpack(endian + "I", head[4:])[0] - 8
        length = rest + (12 if kind == SHB else 8)
        if length < 12 or length % 4 or length > _MAX_BLOCK:
            skip("truncated_file", offset)
            return
        if kind not in (_IDB, _EPB, _SPB, _PB):
            file.seek(rest, 1)  # section options, statistics, names...: not needed
            offset += length
            continue
        body = read(rest)
        if len(body) < rest:
            skip("truncated_file", offset)
            return
        body = body[:-4]  # the trailing copy of the block length
        if kind == _IDB:
            if len(body) >= 8:
                interfaces.append(_interface(body, endian))
        else:
            record = _packet(kind, body, endian, interfaces, offset, skip, max_record)
            if record is not None:
                yield record
        offset += length


def _packet(
    kind: int,
    body: bytes,
    endian: str,
    interfaces: list[Interface],
    offset: int,
    skip: Callable[[str, int], None],
    max_record: int,
) -> Record | None:
    if kind == _EPB and len(body) >= 20:
        iface, hi, lo, cap_len, _orig = struct.unpack_from(endian + "IIIII", body, 0)
        start = 20
    elif kind == _PB and len(body) >= 20:
        iface, _drops, hi, lo, cap_len, _orig = struct.unpack_from(endian + "HHIIII", body, 0)
        start = 20
    elif kind == _SPB and len(body) >= 4:
        iface, hi, lo, start = 0, 0, 0, 4
        (orig_len,) = struct.unpack_from(endian + "I", body, 0)
        cap_len = min(orig_len, len(body) - 4)
        if interfaces and interfaces[0].snaplen:
            cap_len = min(cap_len, interfaces[0].snaplen)
    else:
        skip("truncated_record", offset)
        return None
    if iface >= len(interfaces):
        skip("unknown_interface", offset)
        return None
    if cap_len > max_record:
        skip("oversized_record", offset)
        return None
    if start + cap_len > len(body):
        skip("truncated_record", offset)
        return None
    info = interfaces[iface]
    t_ns = 0 if kind == _SPB else info.to_ns((hi << 32) | lo)
    return Record(iface, info.linktype, t_ns, body[start : start + cap_len], offset)
