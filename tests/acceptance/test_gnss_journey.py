"""A GNSS receiver on a serial port: a sender process writes NMEA into a pseudo-terminal,
``hyperframes record`` reads the other end as a serial port, Ctrl-C, then ``info --json``,
``replay``, ``sync`` and ``export`` to an MCAP whose fixes rosbags reads as NavSatFix.

The reference for what was sent: the sender's own log, parsed by pynmea2.
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import termios
import time
import tty
from pathlib import Path

import pynmea2
import pytest

from tests.acceptance.live_helpers import Recording, hyperframes, info_json, nmea_sender, sent_count

pytestmark = pytest.mark.timeout(120)


def unread(fd: int) -> int:
    """Bytes written into the pty that its reader has not read yet."""
    count: int = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    return count


def test_an_nmea_receiver_on_a_serial_port_records_and_exports_as_navsatfix(
    tmp_path: Path,
) -> None:
    master, slave = os.openpty()
    tty.setraw(slave)  # a serial line: no echo, no line editing
    config = tmp_path / "gnss.toml"
    config.write_text(
        f'[[sources]]\ntype = "nmea"\nname = "gps"\nport = "{os.ttyname(slave)}"\n'
        'baud = 115200\nclock = "online"\n'
    )
    out, log = tmp_path / "gnss.hfr", tmp_path / "sent.nmea"
    try:
        rec = Recording([str(config), "-o", str(out)], terminal=True)
        rec.wait_for("recording to")
        sender = nmea_sender(master, log, rate=10)
        time.sleep(3.0)
        sent = sent_count(sender.stop())
        deadline = time.monotonic() + 10
        while unread(slave) and time.monotonic() < deadline:  # record reads the last burst
            time.sleep(0.05)
        time.sleep(0.3)
        code, _ = rec.stop(signal.SIGINT)
    finally:
        os.close(master)
        os.close(slave)
    assert code == 0, rec.text[-3000:]
    assert "recorded " in rec.text
    ggas = []
    for line in log.read_text(encoding="latin-1").splitlines():
        try:
            msg = pynmea2.parse(line, check=True)
        except pynmea2.ParseError:
            continue
        if isinstance(msg, pynmea2.GGA):
            ggas.append(msg)
    assert len(ggas) == sent >= 25

    doc = info_json(out)
    gps = doc["sensors"]["gps"]
    assert gps["frames"] == sent  # the pty loses nothing: one fix per burst
    bad = sent // 20
    ledger = doc["ledger"]["gps"]  # a sentence a unit: RMC, VTG, GGA, GSV, noise, bad GGA
    assert ledger["unit"] == "sentence"
    assert ledger["lost"] == {"bad_checksum": bad, "undecodable": bad}, ledger
    assert ledger["received"] == 4 * sent + 2 * bad
    assert ledger["emitted"] == 4 * sent
    # the clock model learned the receiver's offset: its UTC against the host's clock
    utc_minus_host = doc["wall_clock"]["utc_minus_reference_ns"]
    assert abs(gps["offset_ns"] + utc_minus_host) < 100_000_000, gps

    replay = hyperframes("replay", str(out), "-r", "max")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"replayed {sent} frames" in replay.stdout
    sync = hyperframes("sync", str(out), "--reference", "gps")
    assert sync.returncode == 0, sync.stdout + sync.stderr

    mcap = tmp_path / "gnss.mcap"
    export = hyperframes("export", str(out), "-o", str(mcap), "--groups", "none")
    assert export.returncode == 0, export.stdout + export.stderr
    from rosbags.highlevel import AnyReader

    with AnyReader([mcap]) as reader:
        (conn,) = [c for c in reader.connections if c.topic == "/gps"]
        assert conn.msgtype == "sensor_msgs/msg/NavSatFix"
        fixes = [reader.deserialize(raw, conn.msgtype) for _, _, raw in reader.messages([conn])]
    assert len(fixes) == len(ggas)
    for fix, gga in zip(fixes, ggas, strict=True):
        assert fix.latitude == pytest.approx(gga.latitude, abs=1e-9)
        assert fix.longitude == pytest.approx(gga.longitude, abs=1e-9)
        assert fix.altitude == pytest.approx(gga.altitude + float(gga.geo_sep))
        assert fix.status.status == 0
        assert fix.header.frame_id == "gps"
        # stamped on the host's clock, dated: within a second of the receiver's UTC
        stamp = fix.header.stamp.sec + fix.header.stamp.nanosec / 1e9
        tod = gga.timestamp
        sent_tod = tod.hour * 3600 + tod.minute * 60 + tod.second + tod.microsecond / 1e6
        assert abs((stamp % 86400) - sent_tod) < 1.0
