"""A GNSS receiver served over TCP that is reset mid-stream and restarted:
``hyperframes record`` in a pseudo-terminal reconnects, says so, and every sentence of
both runs ends as a frame or a counted loss (``info --json``).

Real input: pynmea2's own test log (../shared/data/real/timeseries/pynmea2_data.log:
a GGA, an RTE, a proprietary sentence, a line of noise, an MWV), served by a server in
the test on loopback; the server's count of what it sent is the reference.
"""

from __future__ import annotations

import signal
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from tests.acceptance.live_helpers import Recording, free_port, info_json

pytestmark = pytest.mark.timeout(120)

LOG = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "timeseries"
LINES = [line for line in (LOG / "pynmea2_data.log").read_bytes().splitlines() if line.strip()]
CYCLES = 4  # the log sent this many times per run


def restamped(line: bytes, second: int) -> bytes:
    """The log's GGA ``second`` seconds later, its checksum recomputed (a receiver's
    next fix: a new epoch, so each GGA makes its own fix)."""
    if not line.startswith(b"$GPGGA,"):
        return line
    fields = line[1 : line.index(b"*")].split(b",")
    hours, rest = divmod(18 * 3600 + 43 * 60 + 53 + second, 3600)  # the log's 18:43:53
    fields[1] = b"%02d%02d%02d.07" % (hours, *divmod(rest, 60))
    body = b",".join(fields)
    checksum = 0
    for byte in body:
        checksum ^= byte
    return b"$" + body + b"*%02X" % checksum


def serve_once(port: int, *, reset: bool, sent: list[int], first_second: int) -> None:
    """Accept one client, send the log CYCLES times; then either a cut sentence and a
    reset (RST, as a receiver that crashes), or a clean close."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(30)
    try:
        conn, _ = listener.accept()
    finally:
        listener.close()  # nobody listens while the receiver is down
    with conn:
        for cycle in range(CYCLES):
            for line in LINES:
                conn.sendall(restamped(line, first_second + cycle) + b"\r\n")
                sent[0] += 1
                time.sleep(0.01)
        if reset:
            conn.sendall(LINES[0][:20])  # half a GGA, then the crash
            sent[0] += 1
            time.sleep(0.3)  # read by the source before the reset
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_a_tcp_nmea_receiver_reset_mid_stream_is_reconnected_and_nothing_is_lost_unsaid(
    tmp_path: Path,
) -> None:
    port = free_port(socket.SOCK_STREAM)
    config = tmp_path / "gnss.toml"
    config.write_text(
        f'[[sources]]\ntype = "nmea"\nname = "gps"\nurl = "tcp://127.0.0.1:{port}"\n'
        "backoff_max_s = 0.2\n"
    )
    out = tmp_path / "gnss.hfr"
    sent = [0]
    first = threading.Thread(
        target=serve_once, args=(port,), kwargs={"reset": True, "sent": sent, "first_second": 0}
    )
    first.start()
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    try:
        rec.wait_for("recording to", timeout=60)
        first.join(30)
        time.sleep(0.6)  # the receiver is down: the source's attempts are refused
        serve_once(port, reset=False, sent=sent, first_second=10)  # back; then closes
        rec.wait_for("reconnected to tcp://", timeout=20)
        time.sleep(0.5)
        code, _ = rec.stop(signal.SIGINT)
    finally:
        if rec.proc.poll() is None:
            rec.proc.kill()
    assert code == 0, rec.text[-3000:]
    assert sent[0] == 2 * CYCLES * len(LINES) + 1
    text = rec.text
    assert "connection lost" in text  # the reset, said in a log line
    assert "reconnecting" in text

    ledger = info_json(out)["ledger"]["gps"]
    assert ledger["unit"] == "sentence"
    assert ledger["received"] == sent[0]  # every sentence of both runs, the cut one too
    assert ledger["received"] == ledger["emitted"] + sum(ledger["lost"].values())
    # per cycle: 3 sentence types it does not decode and the noise; the cut GGA once
    assert ledger["lost"] == {
        "unsupported_type": 2 * CYCLES * 3,
        "undecodable": 2 * CYCLES,
        "bad_checksum": 1,
    }, ledger
    assert ledger["emitted"] == ledger["frames"] == 2 * CYCLES  # each GGA a fix
