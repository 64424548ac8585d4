"""IP fragments in captures: the real Ouster OS-1-32 capture with every datagram cut into
MTU-sized IPv4 (and IPv6) fragments decodes to the same scans as the capture itself;
a datagram missing a fragment is counted once, the others are kept; a hypothesis
property checks the reassembler against the datagram for any order and duplication."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.lidar import OusterSource
from adapters.lidar._ipfrag import Reassembler
from adapters.lidar._pcap import PcapReader, read_udp

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "lidar"
PCAP = DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"
META = DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.json"
SRC = bytes([10, 5, 5, 87])
DST = bytes([10, 5, 5, 1])
SRC6 = bytes.fromhex("fe800000000000000000000000000087")
DST6 = bytes.fromhex("fe800000000000000000000000000001")


def record(t_ns: int, frame: bytes) -> bytes:
    sec, usec = divmod(t_ns // 1000, 1_000_000)
    return struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame


def ipv4_fragments(ident: int, udp: bytes, mtu: int = 1500) -> list[bytes]:
    """Ethernet frames of ``udp`` (header and data) cut as a host with this MTU cuts it."""
    step = (mtu - 20) // 8 * 8
    frames = []
    for off in range(0, len(udp), step):
        piece = udp[off : off + step]
        more = off + step < len(udp)
        ip = struct.pack(
            ">BBHHHBBH4s4s", 0x45, 0, 20 + len(piece), ident,
            (0x2000 if more else 0) | (off // 8), 64, 17, 0, SRC, DST,
        )  # fmt: skip
        frames.append(b"\xff" * 6 + b"\x00" * 6 + b"\x08\x00" + ip + piece)
    return frames


def ipv6_fragments(ident: int, udp: bytes, mtu: int = 1500) -> list[bytes]:
    step = (mtu - 48) // 8 * 8
    frames = []
    for off in range(0, len(udp), step):
        piece = udp[off : off + step]
        more = off + step < len(udp)
        head = struct.pack(">IHBB16s16s", 6 << 28, 8 + len(piece), 44, 64, SRC6, DST6)
        frag = struct.pack(">BBHI", 17, 0, off | int(more), ident)
        frames.append(b"\xff" * 6 + b"\x00" * 6 + b"\x86\xdd" + head + frag + piece)
    return frames


def fragmented(
    path: Path, *, ipv6: bool = False, drop: frozenset[int] = frozenset(), shuffle: bool = False
) -> int:
    """The real capture rewritten with each datagram fragmented; ``drop``: indexes of
    datagrams that lose their second fragment. Returns the fragment records written."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    n = 0
    rng = random.Random(7)
    for i, d in enumerate(read_udp(PCAP)):
        udp = struct.pack(">HHHH", d.src_port, d.dst_port, 8 + len(d.payload), 0) + d.payload
        frames = (ipv6_fragments if ipv6 else ipv4_fragments)(i + 1, udp)
        if i in drop:
            del frames[1]
        if shuffle:
            rng.shuffle(frames)
        out += [record(d.t_capture, f) for f in frames]
        n += len(frames)
    path.write_bytes(b"".join(out))
    return n


def scans(pcap: Path) -> tuple[list[np.ndarray], OusterSource]:
    source = OusterSource(pcap, metadata=META, name="os")
    found: list[np.ndarray] = []

    async def run() -> None:
        async with source:
            async for frame in source.frames():
                if frame.sensor == "os":
                    found.append(frame.data)

    anyio.run(run)
    return found, source


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
def test_a_fragmented_capture_decodes_to_the_scans_of_the_unfragmented_one(
    tmp_path: Path, ipv6: bool
) -> None:
    path = tmp_path / "frag.pcap"
    records = fragmented(path, ipv6=ipv6, shuffle=True)
    original = read_udp(PCAP)
    with PcapReader(path) as reader:
        again = list(reader)
        assert reader.fragments.fragments == records > 4 * len(original)
        assert reader.fragments.reassembled == len(original)
        assert not reader.skipped
    assert [d.payload for d in again] == [d.payload for d in original]
    assert [d.dst_port for d in again] == [d.dst_port for d in original]
    want, _ = scans(PCAP)
    got, source = scans(path)
    assert len(got) == len(want) >= 1
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert source.ledgers()["os"].received == len(original)


def test_a_datagram_missing_a_fragment_is_counted_once_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "holes.pcap"
    fragmented(path, drop=frozenset({5, 40}))
    with PcapReader(path) as reader:
        kept = list(reader)
        assert reader.skipped == {"missing_fragment": 2}
    assert len(kept) == len(read_udp(PCAP)) - 2
    _, source = scans(path)
    ledger = source.ledgers()["os"]
    assert ledger.lost["missing_fragment"] == 2
    assert ledger.received == len(read_udp(PCAP))
    assert "missing_fragment" in source.error_messages
    (message, *_) = source.error_messages["missing_fragment"]
    assert "missing fragment" in message


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 9000),
    step=st.sampled_from([8, 64, 1480]),
    order=st.randoms(use_true_random=False),
    repeat=st.booleans(),
)
def test_the_reassembler_gives_back_the_datagram_in_any_order(
    size: int, step: int, order: random.Random, repeat: bool
) -> None:
    data = bytes(order.getrandbits(8) for _ in range(size))
    pieces = [(off, off + step < size, data[off : off + step]) for off in range(0, size, step)]
    if repeat:
        pieces.append(pieces[0])
    order.shuffle(pieces)
    lost: list[tuple[str, int]] = []
    r = Reassembler(lambda reason, at: lost.append((reason, at)))
    outs = [r.push((b"a", b"b", 1, 4), off, more, piece, 0) for off, more, piece in pieces]
    done = [o for o in outs if o is not None]
    assert done[0] == data
    r.flush()
    assert lost == [] or (repeat and len(done) == 1)
