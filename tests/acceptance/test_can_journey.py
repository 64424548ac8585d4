"""A live CAN bus on loopback: a sender process sends motohawk frames through python-can's
``udp_multicast`` interface, ``hyperframes record`` reads the bus in a pseudo-terminal
with the DBC, Ctrl-C, then ``info --json`` and ``replay`` on the recording.

The reference for what was sent: the sender's own log of payloads, decoded by cantools.
(SocketCAN is not exercised: this machine has no ``vcan`` module; see docs/can.md.)
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cantools
import pytest

from tests.acceptance.live_helpers import Recording, env, free_port, hyperframes, info_json

pytestmark = [pytest.mark.timeout(120), pytest.mark.serial]

DBC = Path(__file__).resolve().parents[1] / "data" / "can" / "motohawk.dbc"

SENDER = """
import can, json, sys, time
group, port, count, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bus = can.Bus(interface="udp_multicast", channel=group, port=port)
sent = []
for k in range(count):
    data = bytes([(k * 37 + i * 11) % 256 for i in range(8)])
    bus.send(can.Message(arbitration_id=0x1F0, is_extended_id=False, data=data))
    sent.append(data.hex())
    time.sleep(0.01)
bus.send(can.Message(arbitration_id=0x7AB, is_extended_id=False, data=b"\\x01\\x02"))
bus.shutdown()
open(log, "w").write(json.dumps(sent))
print("sent", count + 1, flush=True)
"""


def test_a_live_can_bus_records_decoded_signals_and_replays(tmp_path: Path) -> None:
    group = f"239.{random.randint(1, 250)}.{random.randint(1, 250)}.{random.randint(1, 250)}"
    port = free_port()
    config = tmp_path / "can.toml"
    config.write_text(
        '[[sources]]\ntype = "can"\nname = "bus"\ninterface = "udp_multicast"\n'
        f'channel = "{group}"\nbus_options = {{ port = {port} }}\ndatabase = "{DBC}"\n'
        'clock = "online"\n\n[sync]\npolicy = "nearest"\nreference = "bus.ExampleMessage"\n'
        'sensors = ["bus.ExampleMessage"]\n'
    )
    out, log = tmp_path / "can.hfr", tmp_path / "sent.json"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to")
    time.sleep(1.0)  # the bus joins the group after "recording to"
    sender = subprocess.run(
        [sys.executable, "-c", SENDER, group, str(port), "150", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(),
    )
    assert sender.stdout.strip() == "sent 151", sender.stderr
    time.sleep(1.0)
    code, _ = rec.stop(signal.SIGINT)
    assert code == 0, rec.text[-3000:]

    doc = info_json(out)
    sensors = doc["sensors"]
    assert sensors["bus.ExampleMessage"]["frames"] == 150
    assert sensors["bus"]["frames"] == 151  # every frame raw, the unknown 0x7AB included
    assert sensors["bus.ExampleMessage"]["kind"] == "can"
    assert doc["ledger"]["bus"]["received"] == 151
    assert doc["ledger"]["bus"]["emitted"] == 151

    from recordings import open_recording

    db: Any = cantools.database.load_file(str(DBC))
    message = db.get_message_by_frame_id(0x1F0)
    payloads = [bytes.fromhex(h) for h in json.loads(log.read_text())]
    with open_recording(out) as recording:
        frames = list(recording.frames(sensors=["bus.ExampleMessage"]))
        assert len(frames) == len(payloads)
        for frame, payload in zip(frames, payloads, strict=True):
            expected: dict[str, Any] = message.decode(payload, decode_choices=False)
            for name, value in expected.items():
                assert abs(float(frame.data[0][name]) - float(value)) <= 1e-9 * max(
                    1.0, abs(float(value))
                )
            assert frame.t_arrival is not None
    replay = hyperframes("replay", str(out), "--fast")
    assert replay.returncode == 0, replay.stdout + replay.stderr
