"""A u-blox receiver served over TCP, UBX and NMEA mixed on one stream: ``hyperframes record``
in a pseudo-terminal (``type = "gnss"``, protocol auto) reads it from a server on loopback,
Ctrl-C, then ``info --json`` on the output.

Real input: pyubx2's own logs of u-blox receivers (tests/data/ubx: PROVENANCE.md), written
to the socket in uneven pieces (a UBX message or a sentence split across reads). The
reference for what was sent: pyubx2 reading the same bytes.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from pyubx2 import NMEA_PROTOCOL, UBX_PROTOCOL, UBXReader

from tests.acceptance.live_helpers import Recording, free_port, info_json

pytestmark = pytest.mark.timeout(120)

DATA = Path(__file__).resolve().parents[1] / "data" / "ubx"
LOGS = ["pygpsdata-MIXED.log", "pygpsdata-MIXED2.log", "pygpsdata-NAV-ZED-X20P.log"]


def next_burst() -> bytes:
    """MIXED2's NMEA burst one second later (its time fields moved, checksums recomputed):
    the receiver's next epoch, which closes the first one so it becomes a fix."""
    lines = (DATA / "pygpsdata-MIXED2.log").read_bytes().split(b"\r\n")
    out = []
    for line in lines:
        if not line.startswith(b"$GN") or b"*" not in line:
            continue
        body = line[1 : line.index(b"*")].replace(b"090802.00", b"090803.00")
        checksum = 0
        for byte in body:
            checksum ^= byte
        out.append(b"$" + body + b"*%02X\r\n" % checksum)
    return b"".join(out)


def serve(port: int, payload: bytes, sent: threading.Event, done: threading.Event) -> None:
    """Accept one client and send ``payload`` in pieces of 1 to 700 bytes (``sent`` then),
    then hold the connection open until ``done`` (a receiver does not hang up)."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(30)
    try:
        conn, _ = listener.accept()
    finally:
        listener.close()
    sizes = [1, 7, 700, 33, 2, 150, 64, 5]
    with conn:
        at, k = 0, 0
        while at < len(payload):
            size = sizes[k % len(sizes)]
            conn.sendall(payload[at : at + size])
            at += size
            k += 1
            time.sleep(0.002)
        sent.set()
        done.wait(30)


def test_a_ubx_and_nmea_receiver_over_tcp_records_every_message_or_counts_it(
    tmp_path: Path,
) -> None:
    payload = b"".join((DATA / name).read_bytes() for name in LOGS) + next_burst()
    expected = []  # pyubx2 reads each piece on its own (it stops on a sentence cut by UBX)
    for name, piece in [*((n, (DATA / n).read_bytes()) for n in LOGS), ("next", next_burst())]:
        (tmp_path / name).write_bytes(piece)
        with (tmp_path / name).open("rb") as f:
            reader = UBXReader(f, protfilter=NMEA_PROTOCOL | UBX_PROTOCOL, quitonerror=0)
            expected += [m for _, m in reader if m is not None]
    ubx = Counter(m.identity for m in expected if not hasattr(m, "talker"))
    port = free_port(socket.SOCK_STREAM)
    config = tmp_path / "gnss.toml"
    config.write_text(
        f'[[sources]]\ntype = "gnss"\nname = "gps"\nurl = "tcp://127.0.0.1:{port}"\n'
        "max_reconnects = 0\n"
    )
    out = tmp_path / "gnss.hfr"
    sent, done = threading.Event(), threading.Event()
    server = threading.Thread(target=serve, args=(port, payload, sent, done), daemon=True)
    server.start()
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    try:
        rec.wait_for("recording to", timeout=60)
        assert sent.wait(30)
        time.sleep(1.5)  # the last pieces read
        code, _ = rec.stop(signal.SIGINT)
    finally:
        done.set()
        if rec.proc.poll() is None:
            rec.proc.kill()
    assert code == 0, rec.text[-3000:]
    doc = info_json(out)
    sensors = doc["sensors"]
    # every NAV-PVT and NAV-SAT pyubx2 reads in the sent bytes is a frame; HPPOSLLH too
    assert sensors["gps.pvt"]["frames"] == ubx["NAV-PVT"]
    assert sensors["gps.sat"]["frames"] == ubx["NAV-SAT"]
    assert sensors["gps.hpposllh"]["frames"] == ubx["NAV-HPPOSLLH"]
    assert sensors["gps"]["frames"] == 1  # MIXED2's NMEA burst is a fix (the next one open)
    for name, ledger in doc["ledger"].items():
        if name.startswith("gps"):
            assert ledger["received"] == ledger["emitted"] + sum(ledger["lost"].values()), name
    # every unit pyubx2 reads is a unit here: sentences on gps, UBX messages on gps.pvt
    # (NAV-SAT and NAV-HPPOSLLH on their own sensors); garbage runs beside them
    gps, pvt = doc["ledger"]["gps"], doc["ledger"]["gps.pvt"]
    assert pvt["unit"] == "message"
    sentences = sum(1 for m in expected if hasattr(m, "talker"))
    # + 1: MIXED2's file ends in a sentence with no CR LF, which pyubx2 leaves unread at
    # the end of that file; in the stream UBX bytes follow it, and here it is read
    assert gps["received"] - gps["lost"].get("garbage", 0) == sentences + 1
    others = sum(ubx.values()) - ubx["NAV-SAT"] - ubx["NAV-HPPOSLLH"]
    assert pvt["received"] - pvt["lost"].get("garbage", 0) == others
    assert set(gps["lost"]) <= {"garbage", "incomplete", "unsupported_type"}, gps
    assert gps["lost"]["incomplete"] > 0  # the last epoch, open at Ctrl-C, is said lost
