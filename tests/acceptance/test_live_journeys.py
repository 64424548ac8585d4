"""An operator's live sessions, run as processes: real senders on loopback, ``hyperframes
record`` in a pseudo-terminal and without one, senders restarted, SIGINT and SIGTERM, then
``info --json``, ``replay``, ``check`` and ``export`` on what was recorded.

Documented loss the bounds allow for: a receiver (re)joining an H.264 stream waits for
its next key frame (the senders send one every 0.2 s); MPEG-TS holds a stream's last
frame until more data comes; datagrams sent before a socket is bound are not received.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from recordings import open_recording
from tests.acceptance.live_helpers import (
    FPS,
    VLP16,
    Recording,
    ffmpeg_sender,
    free_port,
    hyperframes,
    info_json,
    mcap_log_times,
    need_ffmpeg,
    python_sender,
    sent_count,
    stopping,
    wait_udp_bound,
)

pytestmark = pytest.mark.timeout(120)

SWEEPS_PER_LOOP = 51  # the VLP-16 capture's whole sweeps, ../shared/data/lidar/expected.json


def write_config(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


def check_results(out: Path, doc: dict[str, Any], window: tuple[int, int], tmp: Path) -> None:
    """What every journey's recording must satisfy downstream: dates, replay, check, export."""
    lo, hi = window
    assert doc["wall_clock"] is not None
    assert doc["wall_clock"]["steps"] == []
    # The first frame comes after the senders start (ffmpeg and Python take a moment).
    assert lo - 1_000_000_000 <= doc["start_utc_ns"] <= lo + 5_000_000_000, (doc["start_utc"], lo)
    assert abs(doc["end_utc_ns"] - hi) < 1_500_000_000, (doc["end_utc"], hi)
    replay = hyperframes("replay", str(out), "-r", "max")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"replayed {doc['frames']} frames" in replay.stdout
    check = hyperframes("check", str(out))
    assert check.returncode == 0, check.stdout
    assert "every CRC checks out" in check.stdout
    mcap = tmp / "out.mcap"
    export = hyperframes("export", str(out), "-o", str(mcap), "--groups", "none")
    assert export.returncode == 0, export.stdout + export.stderr
    for topic, times in mcap_log_times(mcap).items():  # epoch stamps, not 1970
        assert lo - 2_000_000_000 <= min(times), topic
        assert max(times) <= hi + 2_000_000_000, topic


def test_udp_camera_and_imu_in_a_terminal_survive_sender_restarts_and_ctrl_c(
    tmp_path: Path,
) -> None:
    need_ffmpeg()
    cam_port, imu_port = free_port(), free_port()
    config = write_config(
        tmp_path / "live.toml",
        f"""
[pipeline]
max_latency_ms = 300

[sync]
policy = "nearest"
reference = "cam"
tolerance_ms = 40
optional = ["imu"]
windows_ms = {{ imu = [20, 20] }}

[[sources]]
type = "video"
name = "cam"
url = "udp://127.0.0.1:{cam_port}"
clock = "online"
read_timeout_s = 3

[[sources]]
type = "timeseries_udp"
name = "imu"
kind = "imu"
port = {imu_port}
clock = "online"
""",
    )
    out = tmp_path / "live.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to")
    first = time.time_ns()
    cam = ffmpeg_sender(f"udp://127.0.0.1:{cam_port}?pkt_size=1316")
    imu = python_sender("imu", str(imu_port), "--rate", "100")
    with stopping(cam, imu):
        time.sleep(7.0)  # a segment long enough for a skew estimate (ffmpeg -re wobbles)
        cam.stop()  # both senders restart within the 3 s read timeout ...
        imu_sent = sent_count(imu.stop())
        time.sleep(1.0)
        cam2 = ffmpeg_sender(f"udp://127.0.0.1:{cam_port}?pkt_size=1316")
        imu2 = python_sender("imu", str(imu_port), "--rate", "100")
        with stopping(cam2, imu2):
            time.sleep(2.0)
            cam2.stop()
            imu_sent += sent_count(imu2.stop())
            last = time.time_ns()
    time.sleep(0.3)
    code, took = rec.stop(signal.SIGINT)  # ... and Ctrl-C while the camera waits for data
    screen = rec.text
    assert code == 0, screen[-3000:]
    assert took < 10
    assert "Traceback" not in screen
    assert "offset" in screen  # the live table showed the clock estimates
    assert "cam: stream restarted, timestamps jumped back" in screen
    assert "imu: stream restarted, timestamps jumped back" in screen
    assert "recorded " in screen

    doc = info_json(out)
    cam_info, imu_info = doc["sensors"]["cam"], doc["sensors"]["imu"]
    cam_sent = FPS * (cam.seconds + cam2.seconds)
    assert 0.7 * cam_sent <= cam_info["frames"] <= cam_sent + FPS
    assert 0.95 * imu_sent <= imu_info["frames"] <= imu_sent
    assert cam_info["segments"] == 2
    assert imu_info["segments"] == 2
    assert abs(cam_info["skew_ppm"]) < 500, cam_info
    assert abs(imu_info["skew_ppm"]) < 500, imu_info
    with open_recording(out) as log:  # each sample dated within a second of when it was sent
        wall = log.wall_clock
        assert wall is not None
        errors = [wall.to_utc(f.t) - int(f.data["w"][0]) for f in log.frames(sensors=["imu"])]
    assert max(abs(e) for e in errors) < 1_000_000_000, (min(errors), max(errors))
    check_results(out, doc, (first, last), tmp_path)


def test_tcp_camera_and_a_replayed_velodyne_without_a_terminal_survive_outages_and_sigterm(
    tmp_path: Path,
) -> None:
    need_ffmpeg()
    cam_port, lidar_port = free_port(), free_port()
    config = write_config(
        tmp_path / "live.toml",
        f"""
[pipeline]
max_latency_ms = 300

[sync]
policy = "nearest"
reference = "lidar"
tolerance_ms = 40
optional = ["cam"]

[[sources]]
type = "video"
name = "cam"
url = "tcp://127.0.0.1:{cam_port}"
clock = "online"
read_timeout_s = 1
backoff_max_s = 0.5

[[sources]]
type = "velodyne"
name = "lidar"
model = "VLP-16"
port = {lidar_port}
clock = "online"
""",
    )
    out = tmp_path / "tcp.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=False)
    wait_udp_bound(lidar_port)  # the recorder is up (a loaded machine starts it slowly) ...
    time.sleep(1.0)  # ... and the camera is not there yet: the source retries, quietly
    first = time.time_ns()
    cam = ffmpeg_sender(f"tcp://127.0.0.1:{cam_port}?listen=1")
    lidar = python_sender("pcap", str(lidar_port), str(VLP16), "--loops", "2")
    with stopping(cam, lidar):
        time.sleep(6.0)
        cam.stop()  # the camera drops off for longer than the 1 s read timeout
        time.sleep(2.0)
        cam2 = ffmpeg_sender(f"tcp://127.0.0.1:{cam_port}?listen=1")
        with stopping(cam2):
            time.sleep(2.0)
            cam2.stop()
            lidar_sent = sent_count(lidar.stop())
            last = time.time_ns()
    code, took = rec.stop(signal.SIGTERM)
    log = rec.text
    assert code == 0, log[-3000:]
    assert took < 10
    assert "Traceback" not in log
    assert "SIGTERM: stopping sources" in log
    assert "cam: reconnected, no data for" in log

    doc = info_json(out)
    cam_info, lidar_info = doc["sensors"]["cam"], doc["sensors"]["lidar"]
    assert lidar_sent == 2 * 1902  # every data packet of both loops went out
    assert 2 * SWEEPS_PER_LOOP - 4 <= lidar_info["frames"] <= 2 * (SWEEPS_PER_LOOP + 1)
    assert lidar_info["segments"] == 2  # the capture's second loop jumps back 2.5 s
    cam_sent = FPS * (cam.seconds + cam2.seconds)
    assert 0.6 * cam_sent <= cam_info["frames"] <= cam_sent + FPS
    assert cam_info["segments"] == 2
    assert any(g > 1_500_000_000 for g in cam_info["gaps_ns"]), cam_info["gaps_ns"]
    assert abs(cam_info["skew_ppm"]) < 500, cam_info
    assert abs(lidar_info["skew_ppm"]) < 500, lidar_info
    assert "reconnected" in log
    check_results(out, doc, (first, last), tmp_path)
