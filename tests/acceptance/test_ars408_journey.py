"""A live ARS408 on loopback: a sender process sends cluster and object cycles (random
payloads, 14 cycles a second as the sensor does) through python-can's ``udp_multicast``
interface, ``hyperframes record`` reads the bus with a TOML ``type = "radar"``,
``model = "ars408"`` source in a pseudo-terminal, Ctrl-C; then ``info --json`` and
``replay`` on the recording, and every recorded list equals the sender's own log of
what it sent decoded as a file.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from adapters.radar import RadarSource
from fusion._frames import Frame
from recordings import open_recording
from tests.acceptance.live_helpers import ROOT, Recording, env, free_port, hyperframes, info_json

pytestmark = [pytest.mark.timeout(120), pytest.mark.serial]

CYCLES = 20

SENDER = """
import os, random, sys, time
sys.path.insert(0, sys.argv[5])
import can
from tests.adapters.ars408_testdata import Cycle, cycle_messages
group, port, cycles, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(7)
def b(n):
    return bytes(rng.randrange(256) for _ in range(n))
bus = can.Bus(interface="udp_multicast", channel=group, port=port)
sent = []
start = time.monotonic()
for k in range(cycles):
    cycle = Cycle(k, clusters=[(b(8), b(5)) for _ in range(rng.randrange(1, 30))],
                  objects=[(b(8), b(7), b(8)) for _ in range(rng.randrange(0, 10))],
                  state=b(8))
    for m in cycle_messages(cycle, time.time()):
        bus.send(m)
        sent.append(m)
    time.sleep(max(0.0, start + (k + 1) / 14 - time.monotonic()))
bus.shutdown()
with can.Logger(log) as out:
    for m in sent:
        out.on_message_received(m)
print("sent", len(sent), flush=True)
"""


def test_a_live_ars408_records_its_lists_as_the_sent_frames_decode(tmp_path: Path) -> None:
    group = f"239.{random.randint(1, 250)}.{random.randint(1, 250)}.{random.randint(1, 250)}"
    port = free_port()
    config = tmp_path / "ars408.toml"
    config.write_text(
        '[[sources]]\ntype = "radar"\nmodel = "ars408"\nname = "front"\n'
        f'interface = "udp_multicast"\nchannel = "{group}"\nbus_options = {{ port = {port} }}\n'
        'clock = "online"\n\n[sync]\npolicy = "nearest"\nreference = "front_detections"\n'
        'sensors = ["front_detections"]\n'
    )
    out, log = tmp_path / "ars408.hfr", tmp_path / "sent.log"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to", timeout=60)
    time.sleep(1.0)  # the bus joins the group after "recording to"
    sender = subprocess.run(
        [sys.executable, "-c", SENDER, group, str(port), str(CYCLES), str(log), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(),
    )
    assert sender.stdout.startswith("sent "), sender.stderr
    sent = int(sender.stdout.split()[1])
    time.sleep(1.0)
    code, _ = rec.stop(signal.SIGINT)
    assert code == 0, rec.text[-3000:]

    async def decode_file() -> list[Frame]:
        return [f async for f in RadarSource(log=log, model="ars408", name="front").frames()]

    offline = anyio.run(decode_file)
    assert len(offline) == 2 * CYCLES
    doc = info_json(out)
    ledgers = doc["ledger"]
    # every frame sent arrived; the last list of each kind is still open at Ctrl-C
    assert sum(ledgers[s]["received"] for s in ("front_detections", "front_objects")) == sent
    last = {f.sensor: f for f in offline}
    for sensor in ("front_detections", "front_objects"):
        assert doc["sensors"][sensor]["frames"] == CYCLES - 1
        assert doc["sensors"][sensor]["kind"] == "radar"
        stats = ledgers[sensor]
        assert stats["received"] == stats["emitted"] + stats["lost_total"]
        # the open list's frames: its status and entries (clusters: general + quality;
        # objects: general + quality + extended)
        entries = len(last[sensor].data)
        per = 2 if sensor == "front_detections" else 3
        assert stats["lost"]["incomplete"] == 1 + per * entries
    assert ledgers["front_detections"]["lost"]["unused"] == CYCLES  # RadarState frames
    assert ledgers["front_objects"]["lost"] == {
        "incomplete": 1 + 3 * len(last["front_objects"].data)
    }
    with open_recording(out) as recording:
        recorded = list(recording.frames())
    expected = [f for f in offline if f is not last[f.sensor]]
    key = lambda f: (f.sensor, f.meta["measurement_counter"])  # noqa: E731
    assert sorted(map(key, recorded)) == sorted(map(key, expected))
    for live, file in zip(sorted(recorded, key=key), sorted(expected, key=key), strict=True):
        assert live.data.dtype == file.data.dtype
        assert live.data.tobytes() == file.data.tobytes()
        assert live.meta["radar_state"] == file.meta["radar_state"]
        assert live.t_arrival is not None
    replay = hyperframes("replay", str(out), "--fast")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"replayed {len(recorded)} frames" in replay.stdout
