"""u-blox UBX (and UBX + NMEA mixed on one stream) through NmeaSource(protocol="auto"|"ubx"),
on pyubx2's own test logs (tests/data/ubx, PROVENANCE.md), each checked in the same test
against pyubx2 reading the same file (every NAV-PVT, NAV-HPPOSLLH, NAV-SAT, ESF-MEAS field)
and pynmea2 parsing the NMEA sentences pyubx2 finds; a hypothesis property of the UBX
framing (checksums, resync after garbage, truncation counted)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pynmea2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyubx2 import NMEA_PROTOCOL, UBX_PROTOCOL, UBXReader
from pyubx2.exceptions import UBXMessageError, UBXTypeError

from adapters import NmeaSource
from adapters.nmea import StreamSplitter, UbxDecoder
from adapters.nmea._stream import Garbage, Sentence, Truncated, Ubx, checksum
from adapters.nmea._ubx import UbxFrame, UbxLoss
from fusion.errors import ConfigError

DATA = Path(__file__).resolve().parents[1] / "data" / "ubx"
LOGS = [
    "pygpsdata-MIXED.log",
    "pygpsdata-MIXED2.log",
    "pygpsdata-NAV-ZED-X20P.log",
    "pygpsdata-ESF.log",
    "pygpsdata-NAVHPPOS.log",
    "pygpsdata-MIXED3BADCK.log",
    "pygpsdata-BADCK2.log",
]


def read_all(source: NmeaSource) -> list[Any]:
    frames: list[Any] = []

    async def main() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    anyio.run(main)
    return frames


def reference(path: Path) -> list[tuple[bytes, Any]]:
    """Every UBX message and NMEA sentence pyubx2 finds, checksums validated, errors skipped."""
    with path.open("rb") as stream:
        reader = UBXReader(stream, protfilter=NMEA_PROTOCOL | UBX_PROTOCOL, quitonerror=0)
        return [(raw, msg) for raw, msg in reader if msg is not None]


def balanced(source: NmeaSource) -> None:
    for sensor, ledger in source.ledgers().items():
        assert ledger.received == ledger.emitted + sum(ledger.lost.values()), sensor


@pytest.mark.parametrize("name", LOGS)
def test_every_ubx_navigation_message_equals_pyubx2_reading_the_same_log(name: str) -> None:
    path = DATA / name
    expected = reference(path)
    source = NmeaSource(path, protocol="auto")
    frames = read_all(source)
    by_sensor: dict[str, list[Any]] = {}
    for frame in frames:
        by_sensor.setdefault(frame.sensor, []).append(frame)
    ubx = [m for _, m in expected if hasattr(m, "identity") and not hasattr(m, "talker")]
    pvts = [m for m in ubx if m.identity == "NAV-PVT"]
    hps = [m for m in ubx if m.identity == "NAV-HPPOSLLH"]
    sats = [m for m in ubx if m.identity == "NAV-SAT"]
    esfs = [m for m in ubx if m.identity == "ESF-MEAS"]
    # every UBX message pyubx2 reads is read here, counted by identity
    counted = dict(source.statistics()["ubx"])
    assert sum(counted.values()) == len(ubx)
    got = by_sensor.get("gnss.pvt", [])
    assert len(got) == len(pvts)
    for frame, m in zip(got, pvts, strict=True):
        row = frame.data[0]
        assert int(row["itow_ms"]) == m.iTOW
        assert row["lat"] == pytest.approx(m.lat, abs=1e-9)
        assert row["lon"] == pytest.approx(m.lon, abs=1e-9)
        assert row["height"] == pytest.approx(m.height / 1e3)
        assert row["hmsl"] == pytest.approx(m.hMSL / 1e3)
        assert int(row["num_sv"]) == m.numSV
        assert int(row["fix_type"]) == m.fixType
        assert row["vel_d"] == pytest.approx(m.velD / 1e3)
        assert row["p_dop"] == pytest.approx(m.pDOP)
        if m.validDate and m.validTime:  # GPS time of week + week = the receiver's UTC time
            utc = dt.datetime(m.year, m.month, m.day, m.hour, m.min, m.second, tzinfo=dt.UTC)
            t_utc = int(utc.timestamp()) * 10**9 + m.nano
            assert abs(frame.t_sensor - t_utc) < 10**9 // 100, (frame.t_sensor, t_utc)
    for frame, m in zip(by_sensor.get("gnss.hpposllh", []), hps, strict=True):
        row = frame.data[0]
        assert row["lat"] == pytest.approx(m.lat, abs=1e-12)
        assert row["lon"] == pytest.approx(m.lon, abs=1e-12)
        assert row["height"] == pytest.approx(m.height / 1e3)
        assert row["h_acc"] == pytest.approx(m.hAcc / 1e3)
    got_sats = by_sensor.get("gnss.sat", [])
    for frame, m in zip(got_sats, sats, strict=True):
        rows = frame.data
        assert len(rows) == m.numSvs
        for k, row in enumerate(rows, 1):
            assert int(row["sv_id"]) == getattr(m, f"svId_{k:02d}")
            assert int(row["cno"]) == getattr(m, f"cno_{k:02d}")
            assert int(row["gnss_id"]) == getattr(m, f"gnssId_{k:02d}")
            assert float(row["pr_res"]) == pytest.approx(getattr(m, f"prRes_{k:02d}"), abs=1e-6)
    esf_rows = [row for f in by_sensor.get("gnss.esf", []) for row in f.data]
    assert len(esf_rows) == sum(m.numMeas for m in esfs)
    k = 0
    for m in esfs:
        for j in range(1, m.numMeas + 1):
            row = esf_rows[k]
            k += 1
            assert int(row["data_type"]) == getattr(m, f"dataType_{j:02d}")
            assert int(row["raw"]) & 0xFFFFFF == getattr(m, f"dataField_{j:02d}")
            assert int(row["time_tag"]) == m.timeTag
    # NMEA sentences pyubx2 finds, parsed by pynmea2: the GGA positions are the fixes'
    ggas: list[float] = []
    for raw, m in expected:
        if hasattr(m, "talker") and getattr(m, "msgID", "") == "GGA":
            gga = pynmea2.parse(raw.decode("ascii").strip())
            if gga.latitude or gga.longitude:
                ggas += [gga.latitude, gga.longitude]
    fixes = [float(f.data[k][0]) for f in by_sensor.get("gnss", []) for k in ("lat", "lon")]
    assert fixes == pytest.approx(ggas)
    # messages before anything gave the GPS week are kept, stamped in GPS week 0 (1980)
    undated = sum(
        _undated(x, ubx, i)
        for x, i in ((pvts, "NAV-PVT"), (hps, "NAV-HPPOSLLH"), (sats, "NAV-SAT"))
    )
    assert source.ubx.undated == undated
    assert source.errors.get("undated", 0) == (1 if undated else 0)
    navigation = [
        f for s in ("gnss.pvt", "gnss.hpposllh", "gnss.sat") for f in by_sensor.get(s, [])
    ]
    early = sum(1 for f in navigation if f.t_sensor < 10**18)  # before 2001
    assert early == undated
    balanced(source)


def _undated(messages: list[Any], ubx: list[Any], identity: str) -> int:
    """How many of ``messages`` come before anything gave the GPS week (NAV-TIMEGPS with a
    valid week and leap seconds, or NAV-PVT with a valid date and time)."""
    n = 0
    for m in ubx:
        if m.identity == "NAV-TIMEGPS" and m.weekValid and m.leapSValid:
            return n
        if m.identity == "NAV-PVT" and m.validDate and m.validTime:
            return n
        if m.identity == identity:
            n += 1
    return n


def test_binary_bytes_before_a_dollar_cost_only_those_bytes() -> None:
    """The gpsd-style case: UBX right before the '$' of a GGA on the same 'line'. Read as NMEA
    only, the sentences pynmea2 parses are fixes; the UBX bytes are a warning, no unit."""
    path = DATA / "pygpsdata-MIXED3BADCK.log"
    sentences = [
        pynmea2.parse(raw.decode("ascii").strip())
        for raw, m in reference(path)
        if hasattr(m, "talker") and m.msgID == "GGA"
    ]
    assert len(sentences) == 2
    source = NmeaSource(path, protocol="nmea")
    frames = read_all(source)
    assert [float(f.data["lat"][0]) for f in frames] == pytest.approx(
        [s.latitude for s in sentences]
    )
    assert source.errors["garbage"] == 2
    balanced(source)
    # read as UBX + NMEA: the sound NAV-PVT is a frame, the one with a bad checksum garbage
    mixed = NmeaSource(path, protocol="auto")
    frames = read_all(mixed)
    assert sorted(f.sensor for f in frames) == ["gnss", "gnss", "gnss.pvt"]
    assert "UBX sync(s) with a bad checksum" in str(mixed.error_messages["garbage"])
    balanced(mixed)


def test_ubx_only_counts_nmea_as_garbage_and_protocol_is_checked() -> None:
    source = NmeaSource(DATA / "pygpsdata-MIXED2.log", protocol="ubx")
    frames = read_all(source)
    assert {f.sensor for f in frames} == {"gnss.pvt", "gnss.sat"}
    # the NMEA bytes are garbage of the UBX stream (units of gnss.pvt, unit "message")
    assert source.ledgers()["gnss.pvt"].lost["garbage"] >= 1
    assert source.ledgers()["gnss.pvt"].unit == "message"
    assert source.ledgers()["gnss"].received == 0
    balanced(source)
    with pytest.raises(ConfigError, match="protocol must be one of"):
        NmeaSource(DATA / "pygpsdata-MIXED2.log", protocol="rtcm")  # type: ignore[arg-type]


# -- the framing, as a property -----------------------------------------------------------


def ubx_message(cls: int, ident: int, payload: bytes) -> bytes:
    body = bytes((cls, ident)) + len(payload).to_bytes(2, "little") + payload
    return b"\xb5\x62" + body + checksum(body)


def nmea_sentence(body: str) -> bytes:
    return f"${body}*{pynmea2.NMEASentence.checksum(body):02X}\r\n".encode()


ITEM = st.one_of(
    st.tuples(st.just("ubx"), st.integers(0, 255), st.integers(0, 255), st.binary(max_size=300)),
    st.tuples(
        st.just("nmea"),
        st.builds(
            lambda address, fields: f"{address},{fields}",
            st.text("ABCDEFGPZ0123456789", min_size=3, max_size=8),
            st.text("ABCDEFGPZ0123456789,.-", max_size=70),
        ),
    ),
    # garbage: bytes that start nothing (no sync, no '$' or '!', nothing printable)
    st.tuples(
        st.just("garbage"),
        st.binary(min_size=1, max_size=40).map(
            lambda b: (
                bytes(
                    x for x in b if x not in (0xB5, 0x24, 0x21, 0x0D, 0x0A) and not 0x20 <= x < 0x7F
                )
                or b"\x00"
            )
        ),
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(ITEM, max_size=25),
    st.lists(st.integers(1, 400), min_size=1, max_size=10),
    st.data(),
)
def test_ubx_framing_resyncs_after_garbage_and_bad_checksums_and_counts_truncation(
    items: list[tuple[Any, ...]], cuts: list[int], data: st.DataObject
) -> None:
    stream = b""
    expected: list[tuple[str, Any]] = []
    for item in items:
        if item[0] == "ubx":
            raw = ubx_message(item[1], item[2], item[3])
            starts = any(b in (0xB5, 0x24, 0x21) for b in raw[1:])
            if not starts and data.draw(st.integers(0, 4)) == 0:
                # a damaged checksum: its bytes (none starting anything) are garbage
                raw = raw[:-1] + bytes([raw[-1] ^ 0xFF])
                expected.append(("garbage", len(raw)))
            else:
                expected.append(("ubx", raw))
            stream += raw
        elif item[0] == "nmea":
            raw = nmea_sentence(item[1])
            expected.append(("nmea", raw.rstrip(b"\r\n")))
            stream += raw
        else:
            expected.append(("garbage", len(item[1])))
            stream += item[1]
    truncated = data.draw(st.booleans())
    if truncated:
        tail = ubx_message(1, 7, bytes(40))[: data.draw(st.integers(6, 47))]
        stream += tail
    # fed in arbitrary chunks
    splitter = StreamSplitter()
    out: list[Any] = []
    at = 0
    for size in cuts * (len(stream) // max(1, sum(cuts)) + 1):
        if at >= len(stream):
            break
        out += splitter.feed(stream[at : at + size])
        at += size
    out += splitter.feed(stream[at:])
    out += splitter.flush()
    got: list[tuple[str, Any]] = []
    for item in out:
        if isinstance(item, Ubx):
            got.append(("ubx", item.raw))
        elif isinstance(item, Sentence):
            assert not item.cut
            got.append(("nmea", item.text))
        elif isinstance(item, Garbage):
            if got and got[-1][0] == "garbage":  # runs next to each other: one run
                got[-1] = ("garbage", got[-1][1] + item.size)
            else:
                got.append(("garbage", item.size))
        else:
            assert isinstance(item, Truncated)
            got.append(("truncated", item.size))
    merged: list[tuple[str, Any]] = []
    for kind, value in expected:
        if kind == "garbage" and merged and merged[-1][0] == "garbage":
            merged[-1] = ("garbage", merged[-1][1] + value)
        else:
            merged.append((kind, value))
    if truncated:
        merged.append(("truncated", len(tail)))
    assert got == merged
    # every byte accounted for, and pyubx2 reads each message the splitter gives: it
    # parses it, or says it has no table for its class (e.g. 0xF5), or its tables cannot
    # read that payload (random bytes for CFG-VALGET name an undocumented key pyubx2's
    # helper fails on: UBXTypeError); then the decoder counts it lost, nothing more
    for kind, value in got:
        if kind == "ubx":
            failure: Exception | None = None
            try:
                UBXReader.parse(value, validate=1)
            except (UBXMessageError, UBXTypeError) as err:
                failure = err
            if isinstance(failure, UBXMessageError):  # its checksum passed first (a bad
                assert "Unknown message type" in str(failure)  # one is a parse error)
            if failure is not None:
                event = UbxDecoder("gnss").push(value)
                assert isinstance(event, UbxLoss)
                assert event.reason == "undecodable"
                assert f"class 0x{value[2]:02X} id 0x{value[3]:02X}" in event.message


def test_a_message_pyubx2_cannot_read_is_counted_lost_not_raised() -> None:
    """Found by the property above on a fresh clone (2026-12-05): a CFG-VALGET whose
    random payload names an undocumented configuration key whose size nibble is over 9
    makes pyubx2's own helper fail (UBXTypeError). The decoder counts it, and goes on."""
    raw = ubx_message(6, 139, b"\x00\x00\x00\x00\x00\x00Z\xb9\xc8_\xe2")
    with pytest.raises(UBXTypeError):
        UBXReader.parse(raw, validate=1)
    decoder = UbxDecoder("gnss")
    event = decoder.push(raw)
    assert isinstance(event, UbxLoss)
    assert event.reason == "undecodable"
    assert event.message.startswith("UBX class 0x06 id 0x8B (19 bytes) does not parse: ")


def test_a_decoder_dates_navigation_messages_only_once_it_knows_the_gps_week() -> None:
    decoder = UbxDecoder("gnss")
    messages = [
        raw for raw, m in reference(DATA / "pygpsdata-NAV-ZED-X20P.log") if hasattr(m, "identity")
    ]
    events = [decoder.push(raw) for raw in messages]
    assert decoder.week == 2381
    assert decoder.leap_s == 18
    assert not any(getattr(e, "reason", None) == "undated" for e in events)
    assert np.all(np.array([e.t for e in events if isinstance(e, UbxFrame)]) > 1.7e18)


def test_udp_datagrams_that_cut_ubx_messages_anywhere_are_joined() -> None:
    """A serial-to-UDP bridge cuts the stream at any byte: the real ZED-X20P log sent on
    loopback in datagrams of 1 to 300 bytes gives the frames of the file."""
    import socket

    path = DATA / "pygpsdata-NAV-ZED-X20P.log"
    payload = path.read_bytes()
    expected = Counter(f.sensor for f in read_all(NmeaSource(path, protocol="ubx")))
    source = NmeaSource(url="udp://127.0.0.1:0", protocol="ubx")
    got: list[Any] = []

    async def main() -> None:
        with anyio.fail_after(20):
            async with source, anyio.create_task_group() as tg:

                async def consume() -> None:
                    async for frame in source.frames():
                        got.append(frame)
                        if len(got) == sum(expected.values()):
                            tg.cancel_scope.cancel()

                tg.start_soon(consume)
                port = await source.wait_listening()
                sizes = [1, 300, 7, 64, 2, 150]
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                    at, k = 0, 0
                    while at < len(payload):
                        sock.sendto(payload[at : at + sizes[k % 6]], ("127.0.0.1", port))
                        at += sizes[k % 6]
                        k += 1
                        await anyio.sleep(0.001)

    anyio.run(main)
    assert Counter(f.sensor for f in got) == expected
    assert [f.t_sensor for f in got if f.sensor == "gnss.pvt"] == [
        f.t_sensor for f in read_all(NmeaSource(path, protocol="ubx")) if f.sensor == "gnss.pvt"
    ]


def test_a_serial_port_of_ubx_and_nmea_gives_the_frames_of_the_file() -> None:
    """A pseudo-terminal stands for the receiver's serial port (raw mode, as a UART):
    the real mixed log written into it in pieces gives the frames of the file."""
    import os
    import tty

    path = DATA / "pygpsdata-MIXED2.log"
    payload = path.read_bytes()
    expected = Counter(f.sensor for f in read_all(NmeaSource(path, protocol="auto")))
    expected["gnss"] -= 1  # the file's last epoch is sent at its end; live, it stays open
    master, slave = os.openpty()
    tty.setraw(slave)
    source = NmeaSource(port=os.ttyname(slave), baud=115200, protocol="auto")
    got: list[Any] = []

    async def main() -> None:
        complete = anyio.Event()
        with anyio.fail_after(20):
            async with source, anyio.create_task_group() as tg:

                async def consume() -> None:
                    async for frame in source.frames():
                        got.append(frame)
                        if Counter(f.sensor for f in got) == +expected:
                            complete.set()

                tg.start_soon(consume)
                await anyio.sleep(0.3)
                for at in range(0, len(payload), 97):
                    os.write(master, payload[at : at + 97])
                    await anyio.sleep(0.002)
                with anyio.move_on_after(5):
                    await complete.wait()
                tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        os.close(master)
        os.close(slave)
    assert Counter(f.sensor for f in got) == +expected


def test_a_dollar_that_ends_the_stream_is_garbage_not_a_sentence() -> None:
    # found by the property above on CI: a damaged checksum whose last byte became '$'
    raw = ubx_message(0, 0, b"n\x08\\]\xa4")
    damaged = raw[:-1] + bytes([raw[-1] ^ 0xFF])
    assert damaged.endswith(b"$")
    splitter = StreamSplitter()
    out = splitter.feed(damaged[:1]) + splitter.feed(damaged[1:]) + splitter.flush()
    assert out == [Garbage(len(damaged), 1)]
    # an address with no ',' or '*' before the end is no sentence either; one with it is
    tail = StreamSplitter()
    assert tail.feed(b"$GPGGA") == []
    assert tail.flush() == [Garbage(6, 0)]
    whole = StreamSplitter()
    assert whole.feed(b"$GPGGA,1") == []
    assert whole.flush() == [Sentence(b"$GPGGA,1")]
