"""The capture reader: classic pcap (µs and ns) and pcapng, checked against editcap's
conversions of the real captures and against dpkt, and on pcapng files with several
sections and interfaces, other link types, non-UDP records and cut blocks."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lidar_testdata import LIDAR_DATA

from adapters.lidar._pcap import PcapReader

CAPTURES = sorted(LIDAR_DATA.glob("*.pcap"))


def datagrams(path: Path) -> list[tuple[int, int, int, bytes]]:
    with PcapReader(path) as reader:
        return [(d.t_capture, d.src_port, d.dst_port, d.payload) for d in reader]


def dpkt_datagrams(path: Path) -> list[tuple[int, int, int, bytes]]:
    """The same through dpkt (its readers give float seconds: compared to the µs)."""
    out = []
    with open(path, "rb") as file:
        head = file.read(4)
        file.seek(0)
        reader = dpkt.pcapng.Reader(file) if head == b"\x0a\x0d\x0d\x0a" else dpkt.pcap.Reader(file)
        for ts, buf in reader:
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP):
                udp = ip.data
                out.append((round(float(ts) * 1e6), udp.sport, udp.dport, bytes(udp.data)))
    return out


def editcap(src: Path, dst: Path, fmt: str) -> Path:
    tool = shutil.which("editcap")
    assert tool is not None, "editcap (wireshark-common) is installed by `make system-deps`"
    subprocess.run([tool, "-F", fmt, str(src), str(dst)], check=True)
    return dst


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.stem for c in CAPTURES])
def test_pcapng_and_nanosecond_pcap_of_a_capture_read_the_same_datagrams(
    capture: Path, tmp_path: Path
) -> None:
    want = datagrams(capture)
    assert len(want) in (64, 976, 2269, 3001)
    ng = editcap(capture, tmp_path / "c.pcapng", "pcapng")
    ns = editcap(capture, tmp_path / "c.ns.pcap", "nsecpcap")
    assert ng.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    assert ns.read_bytes()[:4] == b"\x4d\x3c\xb2\xa1"
    assert datagrams(ng) == want
    assert datagrams(ns) == want
    with PcapReader(ng) as reader:
        assert (reader.format, sum(1 for _ in reader), reader.skipped) == ("pcapng", len(want), {})
    micro = [(t // 1000, *rest) for t, *rest in want]
    assert dpkt_datagrams(capture) == micro
    assert dpkt_datagrams(ng) == micro


# -- pcapng built block by block (the IETF draft's layout) ------------------------------


def _block(kind: int, body: bytes, endian: str = "<") -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(endian + "II", kind, length) + body + struct.pack(endian + "I", length)


def _option(code: int, value: bytes, endian: str = "<") -> bytes:
    return struct.pack(endian + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def shb(endian: str = "<") -> bytes:
    return _block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1), endian)


def idb(link: int, tsresol: int | None = None, offset_s: int = 0, endian: str = "<") -> bytes:
    opts = b""
    if tsresol is not None:
        opts += _option(9, bytes([tsresol]), endian)
    if offset_s:
        opts += _option(14, struct.pack(endian + "q", offset_s), endian)
    if opts:
        opts += _option(0, b"", endian)
    return _block(1, struct.pack(endian + "HHI", link, 0, 65535) + opts, endian)


def epb(iface: int, ticks: int, frame: bytes, endian: str = "<") -> bytes:
    head = struct.pack(
        endian + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)
    )
    return _block(6, head + frame, endian)


def udp_ip(port: int, payload: bytes, proto: int = 17) -> bytes:
    udp = struct.pack(">HHHH", 4000, port, 8 + len(payload), 0) + payload
    return (
        struct.pack(
            ">BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(udp),
            0,
            0,
            64,
            proto,
            0,
            b"\x7f\0\0\1",
            b"\x7f\0\0\1",
        )
        + udp
    )


def ether(port: int, payload: bytes, proto: int = 17) -> bytes:
    return b"\xff" * 6 + b"\x00" * 6 + b"\x08\x00" + udp_ip(port, payload, proto)


def sll(port: int, payload: bytes) -> bytes:
    return struct.pack(">HHH8sH", 0, 1, 6, b"\0" * 8, 0x0800) + udp_ip(port, payload)


def test_a_pcapng_with_several_sections_and_interfaces_reads_each_at_its_resolution(
    tmp_path: Path,
) -> None:
    t = 1_624_323_701_543_631_789  # ns
    ticks = ((t - 1_600_000_000 * 10**9) << 20) // 10**9  # 2**-20 s after the offset
    blocks = [
        shb(),
        idb(1),  # Ethernet, default µs
        idb(113, tsresol=9),  # Linux SLL, ns
        idb(105),  # 802.11: not read
        idb(101, tsresol=0x80 | 20, offset_s=1_600_000_000),  # raw IP, 2**-20 s, offset
        _block(4, b"\0" * 8),  # a name resolution block: skipped
        epb(0, t // 1000, ether(7502, b"a")),
        epb(1, t, sll(7503, b"b")),
        epb(2, t, b"\x00" * 40),
        epb(0, t // 1000, ether(7502, b"tcp", proto=6)),
        epb(3, ticks, udp_ip(7502, b"c")),
        epb(7, t, ether(7502, b"nobody")),  # an interface never described
        _block(3, struct.pack("<I", 60) + ether(2368, b"d" * 18)),  # simple packet block
        _block(0x40000BAD, b"custom"),
        shb(">"),  # a big-endian section: its own interfaces, numbered from 0 again
        idb(1, tsresol=3, endian=">"),  # ms
        epb(0, t // 1_000_000, ether(7502, b"e"), endian=">"),
    ]
    (tmp_path / "multi.pcapng").write_bytes(b"".join(blocks))
    reasons: list[str] = []
    with PcapReader(tmp_path / "multi.pcapng", on_skip=lambda r, offset: reasons.append(r)) as r:
        got = [(d.t_capture, d.dst_port, d.payload) for d in r]
    assert got == [
        (t // 1000 * 1000, 7502, b"a"),
        (t, 7503, b"b"),
        (1_600_000_000 * 10**9 + (ticks * 10**9 >> 20), 7502, b"c"),  # within 954 ns
        (0, 2368, b"d" * 18),  # a simple packet block has no time
        (t // 1_000_000 * 1_000_000, 7502, b"e"),
    ]
    assert abs(got[2][0] - t) < 954
    assert reasons == ["unsupported_link", "not_udp", "unknown_interface"]
    assert r.skipped == {"unsupported_link": 1, "not_udp": 1, "unknown_interface": 1}
    assert r.records == 8


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=400), flip=st.integers(min_value=0, max_value=399))
def test_a_cut_or_corrupted_pcapng_never_raises_and_keeps_what_came_before(
    tmp_path_factory: pytest.TempPathFactory, cut: int, flip: int
) -> None:
    blocks = [shb(), idb(1, tsresol=9)] + [
        epb(0, 10**18 + i, ether(7502, bytes([i]) * 20)) for i in range(5)
    ]
    raw = b"".join(blocks)
    path = tmp_path_factory.mktemp("cut") / "c.pcapng"
    path.write_bytes(raw[: len(raw) - cut])
    with PcapReader(path) as reader:
        got = [d.payload for d in reader]
    assert got == [bytes([i]) * 20 for i in range(len(got))]
    ends = {sum(len(b) for b in blocks[:k]) for k in range(len(blocks) + 1)}
    at_a_boundary = len(raw) - cut in ends
    assert reader.skipped == ({} if at_a_boundary else {"truncated_file": 1})
    assert len(got) == sum(
        1 for k in range(2, len(blocks)) if sum(map(len, blocks[: k + 1])) <= len(raw) - cut
    )
    corrupt = bytearray(raw)
    corrupt[4 + flip % (len(raw) - 4)] ^= 0xFF  # (a bad magic number is refused at open)
    path.write_bytes(bytes(corrupt))
    with PcapReader(path) as reader:
        assert len(list(reader)) <= 5  # any mix of records and skips, never an exception


async def test_velodyne_and_ouster_sources_read_a_pcapng_as_its_pcap(tmp_path: Path) -> None:
    from adapters import OusterSource, VelodyneSource

    vlp16 = LIDAR_DATA / "vlp-16-test-90deg-1-50-frames.pcap"
    ng = editcap(vlp16, tmp_path / "v.pcapng", "pcapng")

    async def sweeps(path: Path) -> list[tuple[int, int, bytes]]:
        async with VelodyneSource(pcap=path, model="VLP-16") as source:
            return [(f.t_sensor, f.t_arrival or 0, f.data.tobytes()) async for f in source.frames()]

    want = await sweeps(vlp16)
    assert len(want) > 40
    assert await sweeps(ng) == want
    ouster = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"
    meta = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.json"
    ng = editcap(ouster, tmp_path / "o.pcapng", "pcapng")
    for path in (ouster, ng):
        async with OusterSource(path, metadata=meta) as source:
            (scan,) = [f async for f in source.frames()]
        assert len(scan.data) == 27310
