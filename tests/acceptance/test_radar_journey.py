"""A live ARS548 on loopback: a capture of its lists replayed over UDP at its captured rate
(senders.py pcap), ``hyperframes record`` listening in a pseudo-terminal, Ctrl-C, then
``info --json`` and ``replay`` on the recording, compared with the capture decoded as a file.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import anyio
import pytest

from adapters.radar import RadarSource
from fusion._frames import Frame
from tests.acceptance.live_helpers import (
    Recording,
    free_port,
    hyperframes,
    info_json,
    python_sender,
    sent_count,
    wait_udp_bound,
)
from tests.adapters.radar_testdata import scan_capture

pytestmark = [pytest.mark.timeout(120), pytest.mark.serial]

SCANS = 30  # 1.5 s of 20 Hz cycles, two lists each


def test_a_live_ars548_records_every_list_and_replays_as_the_file_decodes(tmp_path: Path) -> None:
    pcap = tmp_path / "ars548.pcap"
    scan_capture(pcap, SCANS)
    port = free_port()
    config = tmp_path / "radar.toml"
    config.write_text(
        f'[[sources]]\ntype = "radar"\nname = "front"\nport = {port}\nhost = "127.0.0.1"\n'
        'clock = "online"\n\n[sync]\npolicy = "nearest"\nreference = "front_detections"\n'
        'sensors = ["front_detections"]\n'
    )
    out = tmp_path / "radar.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to")
    wait_udp_bound(port)
    sender = python_sender("pcap", str(port), str(pcap), "--data-port", "42102")
    out_text, _ = sender.proc.communicate(timeout=60)  # it ends after one pass
    assert sent_count(out_text) == 2 * SCANS
    time.sleep(0.5)
    code, _ = rec.stop(signal.SIGINT)
    assert code == 0, rec.text[-3000:]

    doc = info_json(out)
    for sensor in ("front_detections", "front_objects"):
        assert doc["sensors"][sensor]["frames"] == SCANS
        assert doc["sensors"][sensor]["kind"] == "radar"
        ledger = doc["ledger"][sensor]
        assert ledger["received"] == ledger["emitted"] == SCANS

    async def decode_file() -> list[Frame]:
        return [f async for f in RadarSource(pcap, name="front").frames()]

    offline = anyio.run(decode_file)
    from recordings import open_recording

    with open_recording(out) as recording:
        recorded = list(recording.frames())
    assert len(recorded) == len(offline) == 2 * SCANS

    def key(f: Frame) -> tuple[str, int]:
        return f.sensor, f.seq

    for live, file in zip(sorted(recorded, key=key), sorted(offline, key=key), strict=True):
        assert (live.sensor, live.seq, live.t_sensor) == (file.sensor, file.seq, file.t_sensor)
        assert live.data.tobytes() == file.data.tobytes()
        assert live.t_arrival is not None
    replay = hyperframes("replay", str(out), "--fast")
    assert replay.returncode == 0, replay.stdout + replay.stderr
