"""docs/recipes.md, run as written: real sender processes, the CLI, the files it writes."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import websockets
from rosbags.highlevel import AnyReader

from recordings import open_recording
from tests.acceptance.live_helpers import wait_udp_bound
from tests.interop.foxglove_client import Decoder, LiveClient, connect

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def hyperframes(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def test_recipe_1_records_a_live_camera_lidar_and_imu(tmp_path: Path) -> None:
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg, "ffmpeg is not on PATH: run make (it installs it)"
    out = tmp_path / "live.hfr"
    # The camera streams first, as a running camera does (the source waits for its
    # next key frame); the LiDAR and IMU senders start once the recorder listens on
    # their ports, so a slow first start of the recorder cannot eat the 8 s window.
    senders: list[subprocess.Popen[bytes]] = [
        subprocess.Popen(
            [ffmpeg, "-loglevel", "error", "-re", "-f", "lavfi",
             "-i", "testsrc2=size=320x240:rate=25", "-t", "14", "-c:v", "libx264", "-g", "25",
             "-f", "mpegts", "udp://127.0.0.1:5600"],
            stdout=subprocess.DEVNULL,
        ),
    ]  # fmt: skip
    serve = free_tcp_port()
    record = subprocess.Popen(
        [sys.executable, "-m", "hyperframes", "record",
         "examples/configs/live_camera_lidar_imu.toml", "-o", str(out), "--duration", "8",
         "--serve", f"127.0.0.1:{serve}"],
        cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for port in (2368, 5601):  # lidar, imu (the example config's ports)
            wait_udp_bound(port)
        senders.append(
            subprocess.Popen(
                [sys.executable, "examples/send_sensors.py", "--seconds", "14"],
                cwd=ROOT,
                env=ENV,
                stdout=subprocess.DEVNULL,
            )
        )
        # Foxglove's view of the run: every sensor a channel, messages that decode
        seen = asyncio.run(watch_live(f"ws://127.0.0.1:{serve}", {"/cam", "/lidar", "/imu"}))
        stdout, stderr = record.communicate(timeout=120)
        done = subprocess.CompletedProcess(record.args, record.returncode, stdout, stderr)
    finally:
        if record.poll() is None:
            record.kill()
            record.communicate()
        for proc in senders:
            proc.terminate()
            proc.wait(timeout=20)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open_recording(out) as log:
        summary = log.summary()
        lidar = list(log.frames(sensors=["lidar"]))
    counts = {n: s.count for n, s in summary.sensors.items()}
    assert counts["lidar"] >= 50, counts  # the capture turns at 20 Hz
    assert counts["cam"] >= 50, counts
    assert counts["imu"] >= 800, counts
    assert all(len(f.data) > 1000 for f in lidar[1:-1])
    assert summary.utc_start is not None  # live recordings are dated
    assert "input ledger" in hyperframes("info", str(out)).stdout
    assert set(seen) == {"/cam", "/lidar", "/imu"}, seen
    assert seen["/lidar"] > 1000  # points in a served sweep, decoded with its schema
    assert f"at ws://127.0.0.1:{serve}" in done.stdout  # record says what it served


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def watch_live(url: str, topics: set[str]) -> dict[str, int]:
    """Subscribe to ``topics`` of a running ``--serve`` as Foxglove does; each topic's
    first message decoded with its advertised schema: {topic: its size (points, rows)}."""
    deadline = time.monotonic() + 60
    while True:
        try:
            ws = await connect(url)
            break
        except (OSError, websockets.InvalidHandshake):
            assert time.monotonic() < deadline, f"nothing served at {url}"
            await asyncio.sleep(0.1)
    client = LiveClient(ws)
    sizes: dict[str, int] = {}
    try:
        await client.wait_topics(topics)
        await client.subscribe(topics)
        decoders = {t: Decoder(c) for t, c in client.topics().items() if t in topics}
        while set(sizes) != topics and time.monotonic() < deadline:
            message = await asyncio.wait_for(client.receive(), 30)
            if message is not None and message.topic not in sizes:
                decoded = decoders[message.topic](message.payload)
                sizes[message.topic] = len(getattr(decoded, "data", b"")) // max(
                    1, int(getattr(decoded, "point_stride", 0) or 1)
                )
    finally:
        await ws.close()
    return sizes


def test_recipe_2_turns_a_bag_into_synced_parquet(tmp_path: Path) -> None:
    rec = tmp_path / "jackal.hfr"
    groups = tmp_path / "groups.parquet"
    made = hyperframes("record", "examples/configs/bag_imu_odom.toml", "-o", str(rec))
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    synced = hyperframes(
        "sync", str(rec), "--policy", "nearest", "--reference", "odom", "--tolerance", "20ms",
        "-o", str(groups),
    )  # fmt: skip
    assert synced.returncode == 0, synced.stdout[-2000:] + synced.stderr[-2000:]
    table = pq.read_table(groups).to_pydict()
    bag = ROOT / "examples/data/robot_localization_test2.bag"
    with AnyReader([bag]) as reader:  # the independent reference
        odom = sorted(
            reader.deserialize(raw, c.msgtype).header.stamp.sec * 10**9
            + reader.deserialize(raw, c.msgtype).header.stamp.nanosec
            for c, _, raw in reader.messages(
                [c for c in reader.connections if c.topic == "/jackal_velocity_controller/odom"]
            )
        )
    assert len(table["t"]) == len(odom) == 3060
    assert sorted(table["odom_t"]) == odom
    assert all(
        i is None or abs(i - o) <= 20_000_000
        for i, o in zip(table["imu_t"], table["odom_t"], strict=True)
    )
