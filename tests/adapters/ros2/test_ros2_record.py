"""``hyperframes record`` of live ROS 2 topics in a terminal: a publisher process sends a
real drive's IMU and odometry at their rate, is killed (SIGKILL) and restarted mid-run,
a third topic has no publisher at all, then Ctrl-C.

The reference: :class:`~adapters.BagSource` reading the same messages of the same bag
(which ones were sent is the publishers' own log, written before SIGKILL can cut it).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import anyio
import pytest

from adapters import BagSource
from adapters.ros._passthrough import RAW
from fusion._frames import Frame
from recordings import open_recording
from tests.acceptance.live_helpers import Recording
from tests.adapters.ros2.ros2_helpers import DRIVE_BAG, Publisher, free_domain, same_data
from tests.terminal import plain

pytestmark = pytest.mark.timeout(90)

TOPICS = {"/imu/data": "imu", "/jackal_velocity_controller/odom": "odom"}
START, END = 50_000_000_000, 52_000_000_000  # 2 s of the drive: 100 messages a topic


def _config(path: Path, domain: int) -> Path:
    path.write_text(
        f"""
[[sources]]
type = "ros2"
domain_id = {domain}
loopback = true
discover_s = 0
topics = {{ "/imu/data" = "imu", "/jackal_velocity_controller/odom" = "odom", "/gps/fix" = "gps" }}
qos."/imu/data" = {{ reliability = "reliable", depth = 200 }}
qos."/jackal_velocity_controller/odom" = {{ reliability = "reliable", depth = 200 }}

[sources.types]
"/imu/data" = "sensor_msgs/msg/Imu"
"/jackal_velocity_controller/odom" = "nav_msgs/msg/Odometry"
"/gps/fix" = "sensor_msgs/msg/NavSatFix"

[sync]
policy = "nearest"
reference = "imu"
tolerance_ms = 20
optional = ["odom", "gps"]
"""
    )
    return path


def _sent(log: Path) -> list[tuple[str, int]]:
    return [(t, int(n)) for t, n in (line.split() for line in log.read_text().splitlines())]


def test_a_drive_recorded_live_equals_the_bag_across_a_killed_publisher(tmp_path: Path) -> None:
    domain = free_domain()
    out, log = tmp_path / "live.hfr", tmp_path / "sent.log"
    pace = ("--reliable", "--speed", "1", "--log", str(log), "--until-ns", str(END))
    rec = Recording([str(_config(tmp_path / "ros2.toml", domain)), "-o", str(out)], terminal=True)
    try:
        rec.wait_for("recording to")
        crash = ("--after-ns", str(START - 1), "--kill-after", "80")
        first = Publisher(domain, DRIVE_BAG, list(TOPICS), *pace, *crash)
        assert first.proc.wait(timeout=30) == -signal.SIGKILL  # mid-run, no goodbye on DDS
        first.kill()
        last = _sent(log)[-1][1]
        time.sleep(1.0)  # the robot is down a while
        second = Publisher(domain, DRIVE_BAG, list(TOPICS), *pace, "--after-ns", str(last))
        second.wait_line("done")
        second.kill(signal.SIGTERM)
        time.sleep(0.5)  # the last samples cross loopback and reach the recorder
        stopped = time.monotonic()
        rec.proc.send_signal(signal.SIGINT)  # Ctrl-C
        while "recorded " not in rec.text and time.monotonic() < stopped + 10:
            time.sleep(0.01)
        ended = time.monotonic() - stopped  # sources stopped, file closed, summary printed
        code, took = rec.stop(0)  # no second signal (a second Ctrl-C does not wait): just wait
        took += ended
    finally:
        if rec.proc.poll() is None:
            rec.stop(signal.SIGKILL)
    text = plain(bytes(rec.output))
    # the topic nobody published fails the run, and says why; the others are whole
    assert code == 1, text[-3000:]
    assert "gps produced no frame for the whole run: no publisher" in text
    assert "Traceback" not in text
    assert ended < 1.0, f"Ctrl-C took {ended:.2f} s to close the recording"
    assert took < 5, f"the process exited {took:.2f} s after Ctrl-C"
    print(f"Ctrl-C: recording closed after {ended:.2f} s, process gone after {took:.2f} s")
    assert "no publisher for" in text  # the live table's silence note for /gps/fix

    sent = _sent(log)
    assert len(sent) == 200  # two runs, a gap between them, each message once
    assert len({n for t, n in sent if t == "/imu/data"}) == sum(t == "/imu/data" for t, _ in sent)

    async def read() -> list[Frame]:
        async with BagSource(DRIVE_BAG, TOPICS, start=START, end=END) as bag:
            return [f async for f in bag.frames()]

    reference = anyio.run(read)
    wanted = {(TOPICS[t], n) for t, n in sent}
    expected = [f for f in reference if (f.sensor, f.t_arrival) in wanted]
    assert len(expected) == len(sent)

    with open_recording(out) as recording:
        frames = list(recording.frames())
        ledgers = recording.summary().ledgers
    for sensor in TOPICS.values():
        ours = [f for f in frames if f.sensor == sensor]
        theirs = [f for f in expected if f.sensor == sensor]
        assert len(ours) == len(theirs), sensor
        assert [f.seq for f in ours] == list(range(len(ours)))  # nothing lost on the way
        for a, b in zip(ours, theirs, strict=True):
            assert a.t_sensor == b.t_sensor
            assert same_data(a.data, b.data), (sensor, a.seq)
            assert a.meta[RAW]
            assert a.meta["topic"] == b.meta["topic"]
        # the first message of the restarted publisher says how long the topic was silent
        index = next(i for i, f in enumerate(theirs) if (f.t_arrival or 0) > last)
        restart = ours[index]
        assert restart.meta.get("gap_ns", 0) > 1_000_000_000, restart.meta.get("gap_ns")
        ledger = ledgers[sensor]
        assert ledger.source.received == ledger.source.emitted == len(ours)
        assert not ledger.lost_total
    assert "gps" not in {f.sensor for f in frames}
