"""Hesai's PTC: the sans-I/O codec, the client, and ``HesaiSource(calibration="sensor")``.

The independent peer is tier4/nebula's own mock Hesai sensor (``MockHesaiSensor`` of its
``test_hesai_hw_interface.cpp``, compiled unchanged: ``tests/peers/nebula_hesai/ptc``),
which answers command 0x05 with ``"mock_calibration_data"`` framed as nebula frames a
reply; the bytes of nebula's request (``send_receive``) are written out below. Real
angle files are served by a loopback server of this test's (``hesai_ptc_server``):
nebula's PandarXT32.csv (with its real XT32 packets) and PandarAT128.dat.
"""

from __future__ import annotations

import itertools
import logging
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import HesaiSource
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar._hesai_ptc import (
    GET_CALIBRATION,
    HEADER,
    PtcError,
    PtcReply,
    ReplyReader,
    encode_request,
    parse_reply,
)
from adapters.lidar._hesai_ptc_client import fetch_angles, ptc_request
from fusion.errors import ConfigError
from tests.adapters.hesai_ptc_server import PtcServer, ptc_server
from tests.adapters.hesai_synthetic import at128_packets
from tests.adapters.hesai_testdata import SHARED, sensor_timed_pcap, write_pcap
from tests.peers.nebula_hesai.nebula_peer import nebula_ptc_mock

CALIBRATION = resources.files("adapters.lidar") / "hesai_calibration"
# nebula's mock sensor's reply to 0x05, byte for byte (test_hesai_hw_interface.cpp)
MOCK_REPLY = b"\x47\x74\x05\x00\x00\x00\x00\x15" + b"mock_calibration_data"


async def _frames(source: HesaiSource) -> list[Any]:
    return [f async for f in source.frames()]


# -- the codec -------------------------------------------------------------------------


def test_request_bytes_are_nebulas() -> None:
    """nebula's send_receive: 47 74, command, 00, u32 big-endian length, payload."""
    assert encode_request(GET_CALIBRATION) == b"\x47\x74\x05\x00\x00\x00\x00\x00"
    assert encode_request(0x06, b"\x01") == b"\x47\x74\x06\x00\x00\x00\x00\x01\x01"


def test_the_mocks_reply_parses_whole_and_byte_by_byte() -> None:
    assert parse_reply(MOCK_REPLY, GET_CALIBRATION).payload == b"mock_calibration_data"
    reader = ReplyReader(GET_CALIBRATION)
    got = [reader.feed(MOCK_REPLY[i : i + 1]) for i in range(len(MOCK_REPLY))]
    assert got[:-1] == [None] * (len(MOCK_REPLY) - 1)
    assert got[-1] is not None
    assert got[-1].payload == b"mock_calibration_data"


def test_a_length_over_the_limit_is_refused_from_the_header_alone() -> None:
    reader = ReplyReader(GET_CALIBRATION, limit=1 << 20)
    with pytest.raises(PtcError, match=r"a payload of 4,294,967,295 bytes, over the 1,048,576"):
        reader.feed(b"\x47\x74\x05\x00\xff\xff\xff\xff")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"HTTP/1.1 200 OK\r\n", r"starts 48 54, not 47 74"),
        (b"\x47\x74\x07\x00\x00\x00\x00\x00", r"reply to 0x07 \(get inventory\), but 0x05"),
        (MOCK_REPLY[:5], r"closed after 5 of the 8 header bytes"),
        (MOCK_REPLY[:-3], r"closed after 18 of the 21 payload bytes"),
        (MOCK_REPLY + b"\x00", r"1 bytes after its 21-byte payload"),
    ],
)
def test_malformed_replies_say_what_was_expected(data: bytes, message: str) -> None:
    with pytest.raises(PtcError, match=message):
        parse_reply(data, GET_CALIBRATION)


@settings(max_examples=300, deadline=None)
@given(
    data=st.one_of(
        st.binary(max_size=64),
        st.builds(
            lambda head, rest: b"\x47\x74" + head + rest,
            st.binary(min_size=6, max_size=6),
            st.binary(max_size=64),
        ),
        st.builds(
            lambda n, body: b"\x47\x74\x05" + bytes([n % 8]) + len(body).to_bytes(4, "big") + body,
            st.integers(0, 255),
            st.binary(max_size=64),
        ),
    ),
    cuts=st.lists(st.integers(0, 80), max_size=6),
)
def test_any_bytes_parse_or_give_a_precise_error(data: bytes, cuts: list[int]) -> None:
    """Whole or in any chunks: the same reply, or a PtcError naming the reply's fault."""
    try:
        whole: PtcReply | str = parse_reply(data, GET_CALIBRATION, limit=48)
    except PtcError as err:
        whole = str(err)
        assert whole.startswith("PTC reply")
    else:
        assert isinstance(whole, PtcReply)
        assert len(data) == HEADER + int.from_bytes(data[4:8], "big") <= HEADER + 48
        assert whole.command == GET_CALIBRATION
        assert whole.payload == data[HEADER:]
        assert whole.code == data[3]
    reader = ReplyReader(GET_CALIBRATION, limit=48)
    points = sorted({c for c in cuts if c < len(data)} | {0, len(data)})
    chunked: Any = None
    try:
        for a, b in itertools.pairwise(points):
            got = reader.feed(data[a:b])
            if got is not None:
                chunked = got
                assert b == len(data)  # whole only at the very end
    except PtcError as err:
        chunked = str(err)
    if chunked is None:
        chunked = f"PTC reply to 0x05 (get angle correction): {reader.ended()}"
    assert chunked == whole


# -- the client against nebula's mock sensor -------------------------------------------


def test_the_client_against_nebulas_mock_sensor() -> None:
    with nebula_ptc_mock() as port:
        assert anyio.run(ptc_request, "127.0.0.1", port, GET_CALIBRATION) == (
            b"mock_calibration_data"
        )
        assert anyio.run(ptc_request, "127.0.0.1", port, 0x07) == bytes(2048)  # inventory
        with pytest.raises(DecodeError) as caught:
            anyio.run(fetch_angles, "127.0.0.1", port)
    assert str(caught.value) == (
        f"sensor 127.0.0.1:{port} (PTC 0x05): no 'id,elevation,azimuth' rows (a Hesai angle "
        "CSV) (the reply's 21 bytes: b'mock_calibration_data')"
    )


def test_a_source_asking_nebulas_mock_fails_in_one_line_or_falls_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pcap = sensor_timed_pcap("xt32", "PandarXT32", tmp_path)
    with nebula_ptc_mock() as port:
        source = HesaiSource(pcap, calibration="sensor", ptc_host="127.0.0.1", ptc_port=port)
        with pytest.raises(DecodeError) as caught:
            anyio.run(_frames, source)
        assert str(caught.value).startswith(
            f"sensor 'lidar': the sensor's angle correction: sensor 127.0.0.1:{port} (PTC 0x05): "
            "no 'id,elevation,azimuth' rows"
        )
        assert "\n" not in str(caught.value)
        fallback = HesaiSource(
            pcap, calibration="sensor", ptc_host="127.0.0.1", ptc_port=port,
            calibration_fallback=True,
        )  # fmt: skip
        with caplog.at_level(logging.WARNING, "hyperframes.lidar"):
            frames = anyio.run(_frames, fallback)
    plain = anyio.run(_frames, HesaiSource(pcap))
    assert [f.data.tobytes() for f in frames] == [f.data.tobytes() for f in plain]
    assert fallback.spec.meta["angles"] == "built-in PandarXT32.csv"
    assert fallback.errors["calibration_fallback"] == 1
    stats = fallback.ledger().statistics()
    assert stats.received == stats.emitted == 2000
    assert stats.lost == {}
    assert "the built-in angles are used (calibration_fallback)" in caplog.text


# -- real angle files served over PTC --------------------------------------------------


def test_the_sensors_csv_decodes_as_that_file(tmp_path: Path) -> None:
    """nebula's real XT32 packets with an angle CSV served over PTC (nebula's XT32 file,
    every elevation raised 0.25 degrees so it is not the built-in one): the sweeps of
    ``calibration=<that file>``, point for point."""
    rows = (SHARED / "PandarXT32.csv").read_text().splitlines()
    served = [rows[0]] + [
        f"{c[0]},{float(c[1]) + 0.25:.3f},{c[2]}" for c in (r.split(",") for r in rows[1:] if r)
    ]
    text = "\n".join(served) + "\n"
    csv = tmp_path / "unit.csv"
    csv.write_text(text)
    pcap = sensor_timed_pcap("xt32", "PandarXT32", tmp_path)
    with ptc_server(PtcServer(payload=text.encode())) as server:
        source = HesaiSource(pcap, calibration="sensor", ptc_host="127.0.0.1", ptc_port=server.port)
        live = anyio.run(_frames, source)
    assert server.requests == [(0x05, 0, b"")]
    assert source.spec.meta["angles"] == f"sensor 127.0.0.1:{server.port} (PTC 0x05)"
    from_file = anyio.run(_frames, HesaiSource(pcap, calibration=csv))
    default = anyio.run(_frames, HesaiSource(pcap))
    assert len(live) == len(from_file) == 5
    for a, b, c in zip(live, from_file, default, strict=True):
        assert a.data.tobytes() == b.data.tobytes()
        assert not np.array_equal(a.data["z"], c.data["z"])


def test_the_sensors_dat_decodes_as_that_file(tmp_path: Path) -> None:
    """An AT128 serves its binary .dat correction: nebula's PandarAT128.dat over PTC."""
    dat = CALIBRATION / "PandarAT128.dat"
    packets = at128_packets(3000, dual=False, seed=11)
    pcap = tmp_path / "at128.pcap"
    write_pcap(pcap, [(10**18 + i * 80_000, p) for i, p in enumerate(packets)])
    with ptc_server(PtcServer(payload=dat.read_bytes())) as server:
        source = HesaiSource(pcap, calibration="sensor", ptc_host="127.0.0.1", ptc_port=server.port)
        live = anyio.run(_frames, source)
    from_file = anyio.run(_frames, HesaiSource(pcap, calibration=str(dat)))
    assert len(live) == len(from_file) >= 2
    assert [f.data.tobytes() for f in live] == [f.data.tobytes() for f in from_file]


@pytest.mark.parametrize(
    ("server", "error", "message"),
    [
        (PtcServer(code=0x05), PtcError, r"refused 0x05 \(get angle correction\): return code "
         r"0x05 \(unsupported command\)$"),
        (PtcServer(raw=MOCK_REPLY[:3]), SourceOpenError, r"closed after 3 of the 8 header bytes$"),
        (PtcServer(silent=True), SourceOpenError, r"no reply within 0.3 s$"),
        (PtcServer(raw=b"\x47\x74\x05\x00\x7f\xff\xff\xff"), PtcError,
         r"a payload of 2,147,483,647 bytes, over the 4,194,304-byte limit$"),
    ],
)  # fmt: skip
def test_a_sensor_that_does_not_give_its_angles(
    server: PtcServer, error: type[Exception], message: str, tmp_path: Path
) -> None:
    pcap = tmp_path / "at128.pcap"
    write_pcap(pcap, [(10**18, p) for p in at128_packets(3, dual=False)])
    with ptc_server(server):
        source = HesaiSource(
            pcap, calibration="sensor", ptc_host="127.0.0.1", ptc_port=server.port,
            ptc_timeout=0.3,
        )  # fmt: skip
        with pytest.raises(error, match=message) as caught:
            anyio.run(_frames, source)
    assert type(caught.value) is error
    assert f"PTC 0x05 (get angle correction) to 127.0.0.1:{server.port}: " in str(caught.value)
    assert source.ledger().statistics().received == 0  # nothing was read


def test_nobody_listening_is_one_line() -> None:
    with pytest.raises(SourceOpenError, match=r"to 127\.0\.0\.1:1: .*(refused|failed)"):
        anyio.run(ptc_request, "127.0.0.1", 1, GET_CALIBRATION)


def test_sensor_options_checked() -> None:
    with pytest.raises(ConfigError, match="give ptc_host="):
        HesaiSource(port=0, calibration="sensor")
    with pytest.raises(ConfigError, match="for calibration='sensor'"):
        HesaiSource(port=0, ptc_host="10.0.0.5")
    source = HesaiSource(port=0, calibration="sensor", sender="10.0.0.5:2368")
    assert source.ptc == ("10.0.0.5", 9347)
