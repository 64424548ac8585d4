"""VelodyneSource on real captures made worse: damaged records, another device's traffic,
ARP frames, a second Velodyne on the data port. Every record ends in a sweep or in the
ledger with its reason; a second sender (in a capture or live) is counted foreign, never
decoded as the first.

Real input: the VLP-16 and HDL-32E captures of ../shared/data/lidar, edited record by
record. Reference: dpkt, which reads the edited capture independently; its count of
records by kind (data packets of the first sender, of another sender, datagrams to other
ports, records that are not UDP) is what the ledger must show.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections import Counter
from pathlib import Path

import anyio
import anyio.to_thread
import dpkt
import numpy as np
import pytest
from lidar_testdata import MONTEREY, VLP16, data_packets

from adapters import VelodyneSource
from adapters.lidar import PcapReader
from fusion._frames import Frame

Record = tuple[bytes, bytes]  # (16-byte record header, link-layer frame)
ARP = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes.fromhex("0001080006040001") + b"\x00" * 20


def read_records(path: Path) -> tuple[bytes, list[Record]]:
    """The global header and the records of a little-endian classic pcap."""
    raw = path.read_bytes()
    out, pos = [], 24
    while pos < len(raw):
        incl = struct.unpack_from("<I", raw, pos + 8)[0]
        out.append((raw[pos : pos + 16], raw[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    return raw[:24], out


def record(header: bytes, frame: bytes) -> Record:
    """``frame`` under ``header``'s capture time, its lengths set to the frame's."""
    return header[:8] + struct.pack("<II", len(frame), len(frame)), frame


def write(path: Path, head: bytes, records: list[Record]) -> Path:
    path.write_bytes(head + b"".join(h + f for h, f in records))
    return path


def dpkt_kinds(path: Path) -> Counter[str]:
    """Records by kind, as dpkt reads them (the first data sender is "ours")."""
    kinds: Counter[str] = Counter()
    ours = None
    with path.open("rb") as file:
        head = file.read(4)
        file.seek(0)
        reader = dpkt.pcapng.Reader(file) if head == b"\x0a\x0d\x0d\x0a" else dpkt.pcap.Reader(file)
        for _ts, buf in reader:
            ip = dpkt.ethernet.Ethernet(buf).data
            if not (isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP)):
                kinds["not_udp"] += 1
                continue
            udp = ip.data
            if udp.dport == 8308:
                kinds["position"] += 1
            elif udp.dport != 2368:
                kinds["other_port"] += 1
            else:
                ours = ours or (ip.src, udp.sport)
                kinds["data" if (ip.src, udp.sport) == ours else "other_sender"] += 1
    return kinds


def worse_capture(tmp_path: Path) -> tuple[Path, Path, int, int]:
    """The VLP-16 capture with another device's traffic and damage mixed in: a file
    dpkt reads whole, the same with one record's length broken (dpkt stops there), the
    index of that record and the data packet whose block flag is broken."""
    head, records = read_records(VLP16)
    _mhead, monterey = read_records(MONTEREY)
    hdl32 = [f for _h, f in monterey if len(f) == 1248 and f[36:38] == b"\x09\x40"]
    data = [i for i, (_h, f) in enumerate(records) if f[36:38] == b"\x09\x40"]
    out: list[Record] = []
    bad_flag = data[500]
    for i, (h, f) in enumerate(records):
        if i == data[400]:  # a data packet's IP protocol byte says TCP: not UDP
            f = f[:23] + b"\x06" + f[24:]
        if i == bad_flag:  # block 3's flag zeroed
            f = f[: 42 + 300] + b"\0\0" + f[42 + 302 :]
        out.append((h, f))
        if i in (100, 700):  # another device's datagram to port 9999
            out.append(record(h, f[:36] + b"\x27\x0f" + f[38:]))
        if i in (200, 1200, 2000):
            out.append(record(h, ARP))
        if i in data[300:1800:100]:  # a second Velodyne (192.168.1.201) on port 2368
            out.append(record(h, hdl32[i % len(hdl32)]))
    whole = write(tmp_path / "worse.pcap", head, out)
    damaged_at = next(k for k, (_h, f) in enumerate(out) if f is records[data[1500]][1])
    broken = list(out)
    h, f = broken[damaged_at]
    broken[damaged_at] = (h[:8] + struct.pack("<II", 0x7FFFFFFF, len(f)), f)
    return whole, write(tmp_path / "damaged.pcap", head, broken), damaged_at, bad_flag


async def collect(source: VelodyneSource) -> list[Frame]:
    async with source:
        return [frame async for frame in source.frames()]


def expected_lost(kinds: Counter[str]) -> dict[str, int]:
    return {
        "foreign_sender": kinds["other_sender"],
        "wrong_port": kinds["other_port"],
        "unsupported_type": kinds["not_udp"],
        "bad_block_flag": 1,
    }


async def test_every_record_of_a_worse_capture_is_a_sweep_or_a_counted_loss(
    tmp_path: Path,
) -> None:
    whole, damaged, damaged_at, _ = worse_capture(tmp_path)
    kinds = dpkt_kinds(whole)
    assert kinds == {
        "data": 1902 - 1, "position": 367, "other_port": 2, "not_udp": 3 + 1, "other_sender": 15
    }  # fmt: skip
    clean = await collect(VelodyneSource(pcap=VLP16))
    source = VelodyneSource(pcap=whole)
    frames = await collect(source)
    ledger = source.ledgers()["lidar"]
    assert dict(ledger.lost) == expected_lost(kinds)
    assert ledger.received == sum(kinds.values()) - kinds["position"]
    assert ledger.received == ledger.emitted + ledger.lost_total
    assert len(frames) == len(clean) == 52
    assert source.statistics()["ignored_datagrams"] == kinds["position"]
    foreign = source.error_messages["foreign_sender"]
    assert any("data packet from 192.168.1.201:2368; the stream follows 192.168.1.200:2368"
               in m for m in foreign)  # fmt: skip
    assert source.model is not None
    assert source.model.name == "VLP-16"

    # dpkt takes the rest of the file as the broken record and stops there; the reader
    # counts that record and goes on at the next one
    assert sum(dpkt_kinds(damaged).values()) == damaged_at + 1
    source = VelodyneSource(pcap=damaged)
    frames = await collect(source)
    ledger = source.ledgers()["lidar"]
    assert dict(ledger.lost) == {**expected_lost(kinds), "bad_length": 1}
    assert ledger.received == sum(kinds.values()) - kinds["position"]
    assert ledger.received == ledger.emitted + ledger.lost_total
    assert len(frames) == 52
    (message,) = source.error_messages["bad_length"]
    assert message.endswith("damaged record")
    assert f"{damaged}: record at byte " in message
    with PcapReader(damaged) as reader:
        assert sum(1 for _ in reader) == sum(kinds.values()) - kinds["not_udp"] - 1
        assert reader.skipped == {"not_udp": 4, "damaged_record": 1}


async def test_a_pcapng_of_it_counts_the_arp_frames_too(tmp_path: Path) -> None:
    whole, _damaged, _at, _flag = worse_capture(tmp_path)
    ng = tmp_path / "worse.pcapng"
    await anyio.run_process(["editcap", "-F", "pcapng", str(whole), str(ng)])
    kinds = dpkt_kinds(ng)
    assert kinds == dpkt_kinds(whole)
    source = VelodyneSource(pcap=ng)
    frames = await collect(source)
    ledger = source.ledgers()["lidar"]
    assert dict(ledger.lost) == expected_lost(kinds)
    assert ledger.received == ledger.emitted + ledger.lost_total == 1902 + 2 + 3 + 15
    assert len(frames) == 52


def interleaved(tmp_path: Path) -> Path:
    """The VLP-16 (192.168.1.200) and HDL-32E (192.168.1.201) captures as one capture of
    two sensors on port 2368, records interleaved in time (the VLP-16 speaks first)."""
    head, vlp = read_records(VLP16)
    _h, hdl = read_records(MONTEREY)
    t0v = struct.unpack_from("<II", vlp[0][0])
    t0h = struct.unpack_from("<II", hdl[0][0])

    def stamp(h: bytes, t0: tuple[int, int]) -> int:
        sec, usec = struct.unpack_from("<II", h)
        return int((sec - t0[0]) * 1_000_000 + usec - t0[1])

    timed = [(stamp(h, t0v), 0, h, f) for h, f in vlp]
    timed += [(stamp(h, t0h) + 1, 1, vlp[0][0][:8] + h[8:], f) for h, f in hdl]
    timed.sort(key=lambda r: (r[0], r[1]))
    return write(tmp_path / "two.pcap", head, [(h, f) for _t, _k, h, f in timed])


async def test_a_second_velodyne_in_a_capture_is_foreign_not_decoded_as_the_first(
    tmp_path: Path,
) -> None:
    two = interleaved(tmp_path)
    alone_vlp = await collect(VelodyneSource(pcap=VLP16))
    alone_hdl = await collect(VelodyneSource(pcap=MONTEREY))
    for sender, alone, other, model in (
        (None, alone_vlp, 2702, "VLP-16"),
        ("192.168.1.201", alone_hdl, 1902, "HDL-32E"),
    ):
        source = VelodyneSource(pcap=two, sender=sender)
        frames = await collect(source)
        assert source.model is not None
        assert source.model.name == model
        assert [f.t_sensor for f in frames] == [f.t_sensor for f in alone]
        for got, want in zip(frames, alone, strict=True):
            np.testing.assert_array_equal(got.data, want.data)
        ledger = source.ledgers()["lidar"]
        assert dict(ledger.lost) == {"foreign_sender": other}
        assert ledger.received == ledger.emitted + other


async def test_a_packet_of_another_model_on_the_followed_address_is_foreign(
    tmp_path: Path,
) -> None:
    head, records = read_records(VLP16)
    out = []
    for i, (h, f) in enumerate(records):
        if f[36:38] == b"\x09\x40" and i % 50 == 7:  # a VLP-32C's product byte (0x28)
            out.append(record(h, f[:-1] + b"\x28"))
        else:
            out.append((h, f))
    source = VelodyneSource(pcap=write(tmp_path / "mixed.pcap", head, out))
    frames = await collect(source)
    marked = sum(1 for i, (_h, f) in enumerate(records) if f[36:38] == b"\x09\x40" and i % 50 == 7)
    ledger = source.ledgers()["lidar"]
    assert dict(ledger.lost) == {"foreign_sender": marked}
    assert marked > 30
    assert len(frames) == 52
    assert "product byte 0x28, the stream's is 0x21" in (source.last_error or "")


SPEED = 4.0


def send_two(port: int, ours: list[tuple[int, bytes]], theirs: list[tuple[int, bytes]]) -> None:
    """Two sensors from two sockets (two source ports) at once: ours at its capture
    timing / SPEED, theirs spread over the same span; ours speaks first."""
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b,
    ):
        t0, start, sent = ours[0][0], time.monotonic_ns(), 0
        for i, (t_capture, payload) in enumerate(ours):
            delay = (start + (t_capture - t0) / SPEED - time.monotonic_ns()) / 1e9
            if delay > 0.001:
                time.sleep(delay)
            a.sendto(payload, ("127.0.0.1", port))
            if i == 0:
                time.sleep(0.05)  # ours is heard first
            while sent < len(theirs) * (i + 1) // len(ours):
                b.sendto(theirs[sent][1], ("127.0.0.1", port))
                sent += 1


@pytest.mark.serial
async def test_two_velodynes_live_on_one_port_the_second_is_counted_foreign() -> None:
    ours, theirs = data_packets(VLP16), data_packets(MONTEREY)
    expected = (await collect(VelodyneSource(pcap=VLP16)))[:-1]  # the last: flushed at the end
    live = VelodyneSource(port=0, host="127.0.0.1", recv_buffer=4 << 20)
    received: list[Frame] = []
    with anyio.fail_after(30):
        async with live, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in live.frames():
                    received.append(frame)

            tg.start_soon(consume)
            port = await live.wait_listening()
            await anyio.to_thread.run_sync(send_two, port, ours, theirs)
            ledger, held = live.ledgers()["lidar"], 0
            # theirs after ours stopped are held (ours may have restarted as them) until
            # the stream stops: counted then
            while ledger.received + held < len(ours) + len(theirs):
                stats = live.udp.statistics() if live.udp is not None else None
                if (stats is not None and stats.kernel_drops) or ledger.lost.get("kernel_overflow"):
                    break
                await anyio.sleep(0.01)
                ledger = live.ledgers()["lidar"]
                held = stats.held if stats is not None else 0
            await anyio.sleep(0.1)
            tg.cancel_scope.cancel()
    ledger = live.ledgers()["lidar"]
    assert live.model is not None
    assert live.model.name == "VLP-16"
    assert ledger.lost == {"foreign_sender": len(theirs)}, ledger
    assert ledger.received == len(ours) + len(theirs)
    assert [f.t_sensor for f in received] == [f.t_sensor for f in expected]
    for got, want in zip(received, expected, strict=True):
        np.testing.assert_array_equal(got.data, want.data)


def test_record_of_the_damaged_capture_says_what_was_lost_and_why(tmp_path: Path) -> None:
    """The journey: ``hyperframes record`` of the damaged capture in a terminal, then
    ``info --json``: every sweep recorded, the losses by reason in the file's ledger."""
    from tests.terminal import plain, run_in_terminal, run_piped

    whole, damaged, _at, _flag = worse_capture(tmp_path)
    kinds = dpkt_kinds(whole)
    config = tmp_path / "lidar.toml"
    config.write_text(f'[[sources]]\ntype = "velodyne"\nname = "lidar"\npcap = "{damaged}"\n')
    out = tmp_path / "lidar.hfr"
    code, screen = run_in_terminal("record", str(config), "-o", str(out), cwd=tmp_path)
    text = plain(screen)
    assert code == 0, text[-3000:]  # frames were recorded: losses alone are no failure
    assert "recorded 52 frames" in text
    lost = {**expected_lost(kinds), "bad_length": 1}
    received = sum(kinds.values()) - kinds["position"]
    assert (
        f"lidar: lost {sum(lost.values())} of {received:,} packets (foreign_sender 15, "
        "unsupported_type 4, wrong_port 2, bad_block_flag 1, bad_length 1)"
    ) in text
    info = run_piped("info", str(out), "--json")
    assert info.returncode == 0, info.stderr
    ledger = json.loads(info.stdout)["ledger"]["lidar"]
    assert ledger["lost"] == lost
    assert ledger["received"] == ledger["emitted"] + sum(lost.values())
    assert ledger["frames"] == 52
