"""NmeaSource: the real pynmea2 log, epochs and dates, bad input, serial (pty), UDP and TCP."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import socket
import threading
import tty
from pathlib import Path

import anyio
import numpy as np
import pynmea2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import NmeaSource
from adapters.errors import SourceOpenError
from adapters.nmea import GNSS_DTYPE, LineSplitter, NmeaDecoder
from adapters.nmea._decoder import DAY, KNOT, MAX_LINE, Fix, Joined, Loss
from fusion._frames import Frame
from fusion.errors import ConfigError
from tests.adapters.nmea_lines import gga, gsv, hdt, hms, render, rmc, vtg

REAL_LOG = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "timeseries"
REAL_LOG = REAL_LOG / "pynmea2_data.log"
MIDNIGHT_1994_03_23 = (dt.date(1994, 3, 23) - dt.date(1970, 1, 1)).days * DAY


async def collect(source: NmeaSource) -> list[Frame]:
    async with source:
        return [f async for f in source.frames()]


def balanced(source: NmeaSource) -> None:
    stats = source.ledgers()[source.name]
    assert stats.unit == "sentence"
    assert stats.received == stats.emitted + stats.lost_total, stats


async def test_the_real_pynmea2_log_reads_as_pynmea2_reads_it() -> None:
    lines = [line for line in REAL_LOG.read_text().splitlines() if line.strip()]
    parsed: list[pynmea2.NMEASentence | None] = []
    for line in lines:  # the reference: pynmea2 on its own
        try:
            parsed.append(pynmea2.parse(line, check=True))
        except pynmea2.ParseError:
            parsed.append(None)
    ggas = [m for m in parsed if isinstance(m, pynmea2.GGA)]
    others = [m for m in parsed if m is not None and not isinstance(m, pynmea2.GGA)]
    source = NmeaSource(REAL_LOG)
    frames = await collect(source)
    assert len(frames) == len(ggas) == 1
    row, ref = frames[0].data[0], ggas[0]
    assert frames[0].data.dtype == GNSS_DTYPE
    assert row["lat"] == pytest.approx(ref.latitude, abs=1e-9)
    assert row["lon"] == pytest.approx(ref.longitude, abs=1e-9)
    assert row["lat"] < 0  # 1929.045,S
    assert row["alt"] == ref.altitude
    assert row["quality"] == ref.gps_qual
    assert row["num_sats"] == int(ref.num_sats)
    assert row["hdop"] == float(ref.horizontal_dil)
    assert row["geoid_sep"] == float(ref.geo_sep)
    assert math.isnan(row["speed"])
    assert math.isnan(row["heading"])
    # no RMC dates it: the time of day on 1970-01-01, and a warning that says so
    stamp = ref.timestamp
    tod = ((stamp.hour * 60 + stamp.minute) * 60 + stamp.second) * 10**9 + stamp.microsecond * 1000
    assert frames[0].t == frames[0].t_sensor == tod
    assert frames[0].t_arrival is None
    stats = source.ledgers()["gnss"]
    assert stats.received == len(lines) == 5
    # RTE, R00 (routes) and MWV (wind) are not a GNSS receiver's: counted, not read
    assert stats.lost == {"unsupported_type": len(others), "undecodable": parsed.count(None)}
    assert source.statistics()["sentences"] == {"GGA": 1}
    assert source.undated is not None
    assert "1970-01-01" in source.undated
    assert "undated" not in source.errors  # a warning, not a loss
    balanced(source)


def session(seconds: int, start: float, date: str = "230394") -> list[str]:
    """A u-blox style burst each second: RMC, VTG, GGA, GSV (HDT every other second)."""
    lines = []
    for i in range(seconds):
        tod = (start + i) % 86400
        lat, lon = 48.1 + i * 1e-5, 11.5 - i * 1e-5
        lines += [rmc(tod, date, lat, lon, 10 + i, 90 + i), vtg(90 + i, 10 + i)]
        lines += [gga(tod, lat, lon, 500 + i), gsv()]
        if i % 2:
            lines.append(hdt(180 + i))
    return lines


async def test_each_epoch_becomes_one_fix_with_speed_course_and_heading(tmp_path: Path) -> None:
    path = tmp_path / "drive.nmea"
    path.write_text("\r\n".join(session(5, 3600.0)) + "\r\n")
    source = NmeaSource(path, name="gps")
    frames = await collect(source)
    assert [f.seq for f in frames] == [0, 1, 2, 3, 4]
    assert [f.t for f in frames] == [MIDNIGHT_1994_03_23 + (3600 + i) * 10**9 for i in range(5)]
    for i, frame in enumerate(frames):
        row = frame.data[0]
        assert row["lat"] == pytest.approx(48.1 + i * 1e-5, abs=1e-7)
        assert row["alt"] == 500 + i
        assert row["quality"] == 1
        assert row["num_sats"] == 9
        assert row["speed"] == pytest.approx(round((10 + i) * 1.852, 2) / 3.6)  # VTG's km/h
        assert row["course"] == 90 + i
    # HDT comes every other epoch: no burst repeats, so each fix waits for its epoch's end
    assert [float(f.data["heading"][0]) for f in frames[1::2]] == [181.0, 183.0]
    assert np.isnan([f.data["heading"][0] for f in frames[::2]]).all()
    stats = source.ledgers()["gps"]
    assert stats.lost == {}
    assert stats.emitted == 5 * 4 + 2  # RMC, VTG, GGA, GSV each second, and two HDT
    assert source.statistics()["sentences"] == {"RMC": 5, "VTG": 5, "GGA": 5, "GSV": 5, "HDT": 2}
    balanced(source)


def test_a_fix_goes_out_as_soon_as_its_epoch_repeats_the_last_bursts() -> None:
    decoder = NmeaDecoder()
    lines = session(4, 100.0)  # RMC VTG GGA GSV, and HDT on odd seconds
    out = [(line, decoder.push_line(line)) for line in lines]
    fix_after = [line[3:6] for line, events in out if any(isinstance(e, Fix) for e in events)]
    # until two bursts agree, a fix goes out when the next epoch's RMC closes its epoch
    assert fix_after == ["RMC", "RMC", "RMC"]
    decoder = NmeaDecoder()
    lines = [line for line in session(4, 100.0) if "HDT" not in line]
    out = [(line, decoder.push_line(line)) for line in lines]
    fix_after = [line[3:6] for line, events in out if any(isinstance(e, Fix) for e in events)]
    # epochs 0 and 1 had RMC, VTG, GGA: epoch 2's fix goes out at its GGA, and so does 3's
    assert fix_after == ["RMC", "RMC", "GGA", "GGA"]
    assert decoder.finish() == []


def test_the_date_rolls_over_at_midnight_and_held_fixes_are_dated_backwards() -> None:
    decoder = NmeaDecoder()
    lines = [gga(86398.0, 1, 1, 1), gga(86399.0, 1, 1, 1), rmc(0.0, "240394", 1, 1, 0, 0)]
    lines += [gga(0.0, 1, 1, 1), gga(1.0, 1, 1, 1), gga(2.0, 1, 1, 1)]
    events = [e for line in lines for e in decoder.push_line(line)] + decoder.finish()
    stamps = [int(e.row["t"][0]) for e in events if isinstance(e, Fix)]
    day = MIDNIGHT_1994_03_23 + DAY  # 24 March
    assert stamps == [day - 2 * 10**9, day - 10**9, day, day + 10**9, day + 2 * 10**9]
    assert not [e for e in events if isinstance(e, Loss)]
    # dated by an RMC, a fix after midnight goes to the next day
    decoder = NmeaDecoder()
    lines = [rmc(86399.0, "230394", 1, 1, 0, 0), gga(86399.0, 1, 1, 1), gga(0.5, 1, 1, 1)]
    events = [e for line in lines for e in decoder.push_line(line)] + decoder.finish()
    stamps = [int(e.row["t"][0]) for e in events if isinstance(e, Fix)]
    assert stamps == [MIDNIGHT_1994_03_23 + 86399 * 10**9, MIDNIGHT_1994_03_23 + DAY + 5 * 10**8]


def test_a_live_input_dates_fixes_before_the_first_rmc_with_the_host_day() -> None:
    now = MIDNIGHT_1994_03_23 + 5 * 10**9  # the host: 00:00:05 on 23 March
    decoder = NmeaDecoder(live=True, wall_clock=lambda: now)
    events = [gga(86399.0, 1, 1, 1), gga(3.0, 1, 1, 1)]  # 23:59:59 is still the day before
    fixes = [e for line in events for e in decoder.push_line(line, arrival=7)] + decoder.finish()
    assert [int(f.row["t"][0]) for f in fixes if isinstance(f, Fix)] == [
        MIDNIGHT_1994_03_23 - 10**9,
        MIDNIGHT_1994_03_23 + 3 * 10**9,
    ]
    assert all(f.t_arrival == 7 for f in fixes if isinstance(f, Fix))


def test_a_receiver_without_a_fix_yet_costs_those_sentences_as_bad_time() -> None:
    decoder = NmeaDecoder()
    empty = render("GGA", ("", "", "", "", "", "0", "00", "99.99", "", "", "", "", "", ""))
    events = decoder.push_line(empty, where="gps line 1")
    assert events == [Loss("bad_time", "gps line 1: GGA without a UTC time: it cannot be placed")]
    no_fix = render(
        "GGA", (hms(10.0), "", "", "", "", "0", "00", "99.99", "", "M", "", "M", "", "")
    )
    fixes = [e for e in decoder.push_line(no_fix) + decoder.finish() if isinstance(e, Fix)]
    assert len(fixes) == 1  # a time and no position: a fix of quality 0, NaN position
    assert fixes[0].row["quality"][0] == 0
    assert np.isnan(fixes[0].row["lat"][0])


def test_a_date_option_dates_an_undated_file() -> None:
    decoder = NmeaDecoder(date=dt.date(2024, 5, 1))
    fixes = decoder.push_line(gga(60.0, 1, 1, 1)) + decoder.finish()
    midnight = (dt.date(2024, 5, 1) - dt.date(1970, 1, 1)).days * DAY
    assert [int(f.row["t"][0]) for f in fixes if isinstance(f, Fix)] == [midnight + 60 * 10**9]
    assert [f.reason for f in fixes if isinstance(f, Loss)] == ["undated"]


async def test_bad_input_costs_that_line_only_and_says_which(tmp_path: Path) -> None:
    good = session(3, 10.0)
    bad_checksum = good[2][:-2] + ("00" if not good[2].endswith("00") else "11")
    unknown = f"$GPZZZ,1*{pynmea2.NMEASentence.checksum('GPZZZ,1'):02X}"
    lines = [
        good[0],
        good[1],
        bad_checksum,  # epoch 0's GGA: its fix has RMC's position only
        "garbage from a serial line at the wrong baud \x01\x02",
        good[2].rsplit("*", 1)[0],  # no checksum
        "$GPZZZ,1,2",
        unknown,
        "$" + "A" * (MAX_LINE + 10),
        *good[4:],
    ]
    path = tmp_path / "bad.nmea"
    path.write_bytes("\n".join(lines).encode() + b"\n\xff\xfe$GPGGA\n")
    source = NmeaSource(path)
    frames = await collect(source)
    assert [f.t % DAY for f in frames] == [10 * 10**9, 11 * 10**9, 12 * 10**9]
    assert frames[0].data["quality"][0] == -1
    assert math.isnan(frames[0].data["alt"][0])
    assert frames[0].data["lat"][0] == pytest.approx(48.1)
    assert [f.data["quality"][0] for f in frames[1:]] == [1, 1]  # the next GGAs are kept
    stats = source.ledgers()["gnss"]
    assert stats.lost == {
        "bad_checksum": 3,
        "undecodable": 2,  # the garbage line and the last one's '$GPGGA' (read from its '$')
        "bad_length": 1,
        "unsupported_type": 1,
    }
    balanced(source)
    assert source.last_error is not None
    assert "bad.nmea line 18: '$GPGGA': ('could not parse data'" in source.last_error
    # the two bytes before its '$' cost only those bytes: a warning, no unit
    assert source.errors["garbage"] == 1
    assert "line 18: 2 byte(s) before the sentence's '$' skipped" in str(
        source.error_messages["garbage"]
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([*session(3, 50.0), "$GPGGA,1*00", "foo", "", "$"]),
            st.binary(max_size=90),
        ),
        max_size=40,
    )
)
def test_every_line_ends_as_a_fix_or_a_counted_loss(lines: list[str | bytes]) -> None:
    decoder = NmeaDecoder()
    splitter = LineSplitter()
    received, emitted, lost = 0, 0, 0
    data = b"".join(
        (x.encode() if isinstance(x, str) else x.replace(b"\n", b"")) + b"\n" for x in lines
    )
    for line in splitter.feed(data) + splitter.flush():
        received += bool(line.strip())
        for event in decoder.push_line(line):
            if isinstance(event, Fix):
                emitted += event.units
                assert event.row.dtype == GNSS_DTYPE
            elif isinstance(event, Joined):
                emitted += event.units
            else:
                lost += event.units
    for event in decoder.finish():
        emitted += event.units if isinstance(event, Fix) else 0
        lost += event.units if isinstance(event, Loss) else 0
    assert received == emitted + lost


def test_the_splitter_bounds_a_line_without_end() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"$GP" + b"x" * 2000) == [b"$GP" + b"x" * (MAX_LINE - 2)]
    assert splitter.feed(b"yyy\n$GPA") == []  # the rest of the long line is dropped
    assert splitter.feed(b"B\n") == [b"$GPAB"]
    assert splitter.flush() == []


def test_wrong_arguments_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of path"):
        NmeaSource(tmp_path / "x.nmea", port="/dev/ttyUSB0")
    with pytest.raises(ConfigError, match="exactly one of path"):
        NmeaSource()
    with pytest.raises(SourceOpenError, match="does not exist"):
        NmeaSource(tmp_path / "missing.nmea")
    with pytest.raises(ConfigError, match="udp://HOST:PORT"):
        NmeaSource(url="http://x:1")


async def test_a_serial_port_that_cannot_open_is_one_clear_error() -> None:
    source = NmeaSource(port="/dev/nonexistent-tty", baud=9600)
    with pytest.raises(SourceOpenError, match="cannot open serial port '/dev/nonexistent-tty'"):
        await collect(source)


async def live(source: NmeaSource, count: int, send: object) -> list[Frame]:
    got: list[Frame] = []
    with anyio.fail_after(10):
        async with source, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in source.frames():
                    got.append(frame)
                    if len(got) == count:
                        tg.cancel_scope.cancel()

            tg.start_soon(consume)
            await send()  # type: ignore[operator]
    return got


async def test_a_serial_port_reads_a_pseudo_terminal() -> None:
    master, slave = os.openpty()
    tty.setraw(slave)  # as pyserial sets it, before anything is written
    lines = session(4, 7200.0)

    def write() -> None:
        for line in lines:
            os.write(master, (line + "\r\n").encode())

    # joined before the terminal closes: the source may have its 3 frames while the
    # thread still writes the rest (EBADF in the thread, blamed on the next test)
    writer = threading.Thread(target=write, daemon=True)
    try:
        source = NmeaSource(port=os.ttyname(slave), baud=115200)

        async def send() -> None:
            await anyio.sleep(0.2)
            writer.start()

        got = await live(source, 3, send)
    finally:
        if writer.is_alive():
            writer.join(10)
        os.close(master)
        os.close(slave)
    assert [f.t - MIDNIGHT_1994_03_23 for f in got] == [(7200 + i) * 10**9 for i in range(3)]
    assert all(f.t_arrival is not None for f in got)
    assert source.spec.overflow == "drop_oldest"


async def test_udp_datagrams_of_several_sentences() -> None:
    source = NmeaSource(url="udp://127.0.0.1:0")
    lines = session(3, 0.0)

    async def send() -> None:
        port = await source.wait_listening()
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other,
        ):
            sock.sendto("\r\n".join(lines[:6]).encode(), ("127.0.0.1", port))
            sock.sendto(b"not nmea", ("127.0.0.1", port))
            other.sendto("\r\n".join(lines).encode(), ("127.0.0.1", port))  # a second sender
            sock.sendto("\r\n".join(lines[6:]).encode(), ("127.0.0.1", port))

    got = await live(source, 2, send)
    assert [f.t - MIDNIGHT_1994_03_23 for f in got] == [0, 10**9]
    ledger = source.ledgers()["gnss"]
    assert ledger.lost["undecodable"] == 1
    assert ledger.lost["foreign_sender"] == 1  # its datagram never reached the decoder
    assert source.statistics()["udp"]["foreign"] == 1


async def test_tcp_stream_from_a_receiver_that_serves_nmea() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    data = ("\r\n".join(session(3, 30.0)) + "\r\n").encode()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            for i in range(0, len(data), 7):  # sentences split across segments
                conn.sendall(data[i : i + 7])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        source = NmeaSource(url=f"tcp://127.0.0.1:{port}", max_reconnects=0)
        frames = await collect(source)
    finally:
        thread.join(5)
        listener.close()
    assert [f.t - MIDNIGHT_1994_03_23 for f in frames] == [30 * 10**9, 31 * 10**9, 32 * 10**9]
    balanced(source)
    assert np.all(np.isfinite([f.data["speed"][0] for f in frames]))


async def test_a_tcp_receiver_that_resets_is_reconnected_until_max_reconnects() -> None:
    import struct

    from fusion.errors import SourceError

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runs = [session(3, 30.0), session(3, 40.0)]

    def serve_with_reset() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(("\r\n".join(runs[0]) + "\r\n").encode())
            conn.settimeout(0.3)
            with contextlib.suppress(TimeoutError):  # the source reads what came
                conn.recv(1)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn, _ = listener.accept()
        with conn:
            conn.sendall(("\r\n".join(runs[1]) + "\r\n").encode())
        listener.close()

    thread = threading.Thread(target=serve_with_reset, daemon=True)
    thread.start()
    source = NmeaSource(url=f"tcp://127.0.0.1:{port}", max_reconnects=2, backoff=(0.01, 0.02))
    frames: list[Frame] = []

    async def read() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    with anyio.fail_after(10), pytest.raises(SourceError, match="gave up after 2 reconnects"):
        await read()
    thread.join(5)
    seconds = [(f.t - MIDNIGHT_1994_03_23) // 10**9 for f in frames]
    assert seconds == [30, 31, 32, 40, 41, 42]
    stats = source.statistics()
    assert (stats["connections"], stats["disconnects"]) == (2, 2)
    assert source.errors["disconnect"] == 2
    assert source.errors["open_failed"] == 2  # the two attempts max_reconnects allows
    ledger = source.ledgers()["gnss"]
    assert ledger.received == sum(len(r) for r in runs)
    assert ledger.received == ledger.emitted + ledger.lost_total


def test_a_knot_is_what_pynmea2_and_the_nmea_standard_say() -> None:
    assert pytest.approx(0.514444, abs=1e-6) == KNOT


def test_a_toml_nmea_source_records_its_fixes(tmp_path: Path) -> None:
    from fusion import VirtualClock, use_clock
    from hyperframes.config import build_pipeline, load_config
    from recordings import open_recording

    log = tmp_path / "drive.nmea"
    log.write_text("\n".join([*session(6, 43200.0), "$GPGGA,broken*00"]) + "\n")
    config = tmp_path / "gnss.toml"
    config.write_text(f'[[sources]]\ntype = "nmea"\nname = "gps"\npath = "{log}"\n')
    pipeline = build_pipeline(load_config(config), recorder_path=tmp_path / "gps.hfr")
    assert type(pipeline.sources[0]).__name__ == "NmeaSource"

    async def run() -> object:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await pipeline.run()

    anyio.run(run)
    with open_recording(tmp_path / "gps.hfr") as rec:
        frames = list(rec.frames())
        summary = rec.summary()
    assert summary.sensors["gps"].spec.kind == "gnss"
    assert [f.t_sensor - MIDNIGHT_1994_03_23 for f in frames] == [
        (43200 + i) * 10**9 for i in range(6)
    ]
    assert frames[5].data["alt"][0] == 505.0


@pytest.mark.parametrize(
    ("keys", "problem"),
    [
        ('path = "a.nmea"\nport = "/dev/ttyUSB0"', "exactly one of 'path'"),
        ('url = "http://receiver:80"', "url"),
        ('port = "/dev/ttyUSB0"\ndate = "May 1st"', "date"),
    ],
)
def test_a_toml_nmea_source_is_validated(tmp_path: Path, keys: str, problem: str) -> None:
    from hyperframes.config import load_config

    config = tmp_path / "gnss.toml"
    config.write_text(f'[[sources]]\ntype = "nmea"\nname = "gps"\n{keys}\n')
    with pytest.raises(ConfigError, match=problem):
        load_config(config)


async def test_open_source_reads_an_nmea_log_whole(tmp_path: Path) -> None:
    from recordings._open import open_source

    source = open_source(REAL_LOG, speed=None)
    assert isinstance(source, NmeaSource)
    assert len(await collect(source)) == 1
    with pytest.raises(ValueError, match="is an NMEA log: it is read whole"):
        open_source(REAL_LOG, sensors=["gnss"])
    not_nmea = tmp_path / "x.nmea"
    not_nmea.write_text("hello\n$GPGGA,1*00\n")
    with pytest.raises(SourceOpenError, match="or an NMEA log"):
        open_source(not_nmea)


def test_info_and_replay_on_an_nmea_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from hyperframes.cli import main as cli

    log = tmp_path / "drive.nmea"
    log.write_text("\n".join([*session(3, 120.0), "garbage"]) + "\n")
    assert cli(["info", str(log), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["frames"] == doc["with_position"] == 3
    assert doc["quality"] == {"1": 3}
    assert doc["start_utc"] == "1994-03-23T00:02:00.000000000Z"
    assert doc["duration_s"] == 2.0
    assert doc["ledger"]["gnss"]["lost"] == {"undecodable": 1}
    assert not doc["undated"]
    assert cli(["info", str(log)]) == 0
    assert "lost 1 of 14 sentences (undecodable 1)" in capsys.readouterr().out
    assert cli(["replay", str(log), "-r", "max"]) == 1  # the garbage line was lost
    assert "replayed 3 frames" in capsys.readouterr().out
    log.write_text("\n".join(session(3, 120.0)) + "\n")
    assert cli(["replay", str(log), "-r", "max"]) == 0


async def test_a_configured_udp_sender_keeps_other_senders_out() -> None:
    with pytest.raises(ConfigError, match="sender must be an IPv4 address"):
        NmeaSource(url="udp://127.0.0.1:0", sender="gps.local")
    source = NmeaSource(url="udp://127.0.0.1:0", sender="127.0.0.2", recv_buffer=65536)
    lines = session(3, 0.0)
    got: list[Frame] = []
    with anyio.fail_after(10):
        async with source, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in source.frames():
                    got.append(frame)

            tg.start_soon(consume)
            port = await source.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for _ in range(3):
                    sock.sendto("\r\n".join(lines).encode(), ("127.0.0.1", port))
            while source.ledgers()["gnss"].received < 3:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    assert got == []
    assert source.ledgers()["gnss"].lost == {"foreign_sender": 3}
    assert source.statistics()["udp"]["recv_buffer_requested"] == 65536
