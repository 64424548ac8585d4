"""``record --serve`` and ``replay --serve``: a real Foxglove WebSocket client on loopback.

One ``hyperframes record`` subprocess (the built-in synthetic camera, LiDAR and IMU)
serves while it records; a client written from the protocol spec subscribes, decodes
every message with the advertised schema and compares it field for field with the
recording the process wrote. A second client subscribes to everything and then stops
reading: the recording must still be complete. Ctrl-C stops the server.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import websockets

from fusion._frames import Frame
from recordings import open_recording
from tests.interop.foxglove_client import Decoder, LiveClient, Received, connect

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
TOPICS = {"/cam", "/lidar", "/imu", "/hyperframes/groups"}
LIVE_TOLERANCE_NS = 1_000_000  # live stamps use the server's own wall anchor (docs/foxglove.md)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _connect(url: str, proc: subprocess.Popen[str], **options: Any) -> Any:
    deadline = time.monotonic() + 60
    while True:
        try:
            return await connect(url, **options)
        except (OSError, websockets.InvalidHandshake):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"server never came up: {proc.communicate()}") from None
            await asyncio.sleep(0.1)


@dataclasses.dataclass
class Session:
    received: list[Received]
    channels: dict[str, dict[str, Any]]
    closed_after_s: float
    stdout: str
    returncode: int
    times: list[int] = dataclasses.field(default_factory=list)
    server_info: dict[str, Any] = dataclasses.field(default_factory=dict)


async def _watch(
    proc: subprocess.Popen[str], port: int, wanted: dict[str, int], stall: bool
) -> tuple[list[Received], LiveClient, float]:
    url = f"ws://127.0.0.1:{port}"
    ws = await _connect(url, proc)
    stalled = None
    client = LiveClient(ws)
    try:
        await client.wait_topics(set(wanted))
        if stall:  # a second client that subscribes to everything, then stops reading
            # close_timeout: closing a client that never read waits for a close frame
            # behind everything it left unread (websockets' default: 10 s)
            stalled = LiveClient(await _connect(url, proc, max_queue=1, close_timeout=0.2))
            await stalled.wait_topics(set(wanted))
            await stalled.subscribe(set(stalled.topics()))
        await client.subscribe(set(wanted))
        got: list[Received] = []
        counts: dict[str, int] = defaultdict(int)
        deadline = time.monotonic() + 60
        while any(counts[t] < n for t, n in wanted.items()) and time.monotonic() < deadline:
            message = await asyncio.wait_for(client.receive(), 30)
            if message is not None:
                got.append(message)
                counts[message.topic] += 1
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        stopped = time.monotonic()
        with pytest.raises(websockets.ConnectionClosed):
            await _drain(client, got)
        return got, client, time.monotonic() - stopped
    finally:
        await ws.close()
        if stalled is not None:
            await stalled.ws.close()


async def _drain(client: LiveClient, got: list[Received]) -> None:
    """Keep what arrives until the server closes the connection."""
    while True:
        message = await asyncio.wait_for(client.receive(), 30)
        if message is not None:
            got.append(message)


def _run(args: list[str], cwd: Path, wanted: dict[str, int], stall: bool = False) -> Session:
    port = _free_port()
    proc = _start([*args, "--serve", f"127.0.0.1:{port}"], cwd)
    try:
        got, client, closed = asyncio.run(_watch(proc, port, wanted, stall))
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    return Session(
        got, client.topics(), closed, stdout, proc.returncode, client.times, client.server_info
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Session]:
    tmp = tmp_path_factory.mktemp("live")
    out = tmp / "live.hfr"
    wanted = {"/cam": 45, "/lidar": 15, "/imu": 300, "/hyperframes/groups": 15}
    session = _run(["record", "--duration", "60", "-o", str(out)], tmp, wanted, stall=True)
    return out, session


def _recorded_frames(path: Path, dated: bool = True) -> tuple[dict[str, list[Frame]], Any]:
    with open_recording(path) as log:
        summary = log.summary()
        frames: dict[str, list[Frame]] = defaultdict(list)
        for frame in log.frames():
            frames[frame.sensor].append(frame)
    assert summary.wall_clock is not None
    assert summary.dated == {"cam", "lidar", "imu"}
    return frames, summary.wall_clock


def _export(path: Path, out: Path) -> dict[str, Any]:
    """``hyperframes export --profile foxglove``'s schemas and messages, read with ``mcap``."""
    from mcap.reader import make_reader

    from recordings.outputs._export import export_recording

    assert export_recording(path, out, to="foxglove", groups="none").complete
    schemas: dict[str, tuple[str, str, bytes]] = {}
    messages: dict[tuple[str, int], bytes] = {}
    with out.open("rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            assert schema is not None
            schemas[channel.topic] = (schema.name, schema.encoding, schema.data)
            messages[(channel.topic, message.log_time)] = message.data
    return {"schemas": schemas, "messages": messages}


def _stamp(message: Any) -> int:
    if isinstance(message, dict):
        return int(message["timestamp"]["sec"]) * 1_000_000_000 + int(message["timestamp"]["nsec"])
    return int(message.timestamp.seconds) * 1_000_000_000 + int(message.timestamp.nanos)


def _check(
    session: Session, frames: dict[str, list[Frame]], utc: Any, tolerance: int
) -> dict[str, int]:
    """Every message decodes with its advertised schema and equals a recorded frame."""
    decoders = {topic: Decoder(ch) for topic, ch in session.channels.items()}
    assert session.channels["/cam"]["schemaName"] == "foxglove.RawImage"
    assert session.channels["/lidar"]["schemaName"] == "foxglove.PointCloud"
    assert session.channels["/imu"]["encoding"] == "json"
    by_time = {s: np.array([utc(f.t) for f in fs]) for s, fs in frames.items()}
    keys = {(f.sensor, f.seq): f for fs in frames.values() for f in fs}
    matched: dict[str, int] = defaultdict(int)

    def recorded(sensor: str, stamp: int) -> Frame:
        i = int(np.argmin(np.abs(by_time[sensor] - stamp)))
        assert abs(int(by_time[sensor][i]) - stamp) <= tolerance, (sensor, stamp)
        return frames[sensor][i]

    for message in session.received:
        decoded = decoders[message.topic](message.payload)
        if message.topic == "/hyperframes/groups":
            for member in decoded["members"]:
                frame = keys[(member["sensor"], member["seq"])]
                t_sensor = member["t_sensor"]  # {sec, nsec}: JavaScript keeps epoch ns
                assert frame.t_sensor == (t_sensor and t_sensor["sec"] * 10**9 + t_sensor["nsec"])
                assert (
                    abs(member["t"]["sec"] * 10**9 + member["t"]["nsec"] - utc(frame.t))
                    <= tolerance
                )
            matched["groups"] += 1
            continue
        sensor = message.topic.removeprefix("/")
        frame = recorded(sensor, _stamp(decoded))
        assert frame.t_arrival is not None
        assert abs(message.log_time - utc(frame.t_arrival)) <= tolerance
        if sensor == "cam":
            image = np.asarray(frame.data)
            assert (decoded.height, decoded.width) == image.shape[:2]
            assert decoded.encoding == "rgb8"
            assert decoded.step == image.strides[0]
            assert decoded.frame_id == "cam"
            assert decoded.data == image.tobytes()
        elif sensor == "lidar":
            points = np.asarray(frame.data)
            assert [f.name for f in decoded.fields] == list(points.dtype.names or ())
            assert [f.offset for f in decoded.fields] == [
                points.dtype.fields[n][1]  # type: ignore[index]
                for n in points.dtype.names or ()
            ]
            assert decoded.point_stride == points.dtype.itemsize
            assert decoded.data == points.tobytes()
        else:
            for key in ("accel", "gyro"):
                assert decoded[key] == np.asarray(frame.data[key], np.float64).tolist()
        matched[sensor] += 1
    return matched


def test_record_serves_every_sensor_equal_to_the_recording(recorded: tuple[Path, Session]) -> None:
    path, session = recorded
    frames, wall = _recorded_frames(path)
    matched = _check(session, frames, wall.to_utc, LIVE_TOLERANCE_NS)
    assert matched["cam"] >= 45
    assert matched["lidar"] >= 15
    assert matched["imu"] >= 300
    assert matched["groups"] >= 15
    # Ctrl-C: the server went away with the process, and the run said what it served.
    assert session.closed_after_s < 10
    served = re.search(
        r"served (\d+) frames \((\d+) messages\) at ws://127.0.0.1:\d+(;.*)?$", session.stdout, re.M
    )
    assert served is not None, session.stdout
    late = re.search(r"; (\d+) held frames sent to late subscribers", session.stdout)
    late_frames = int(late[1]) if late else 0  # each sensor's first frame, held for a subscriber
    assert int(served[1]) + late_frames >= matched["cam"] + matched["lidar"] + matched["imu"]


def test_a_client_that_stops_reading_does_not_slow_the_recording(
    recorded: tuple[Path, Session],
) -> None:
    path, _ = recorded
    with open_recording(path) as log:
        summary = log.summary()
        ledgers = summary.ledgers
    for name, rate in (("cam", 30), ("lidar", 10), ("imu", 200)):
        s = summary.sensors[name]
        assert s.t_start is not None
        assert s.t_end is not None
        span_s = (s.t_end - s.t_start) / 1e9
        assert s.count >= 0.95 * rate * span_s, (name, s.count, span_s)
        assert ledgers[name].lost_total == 0  # nothing lost, nothing dropped (overflow)


def test_replay_serves_the_recording_with_its_own_dates(
    recorded: tuple[Path, Session], tmp_path: Path
) -> None:
    path, _ = recorded
    frames, wall = _recorded_frames(path)
    # --loop keeps it playing until the client has what it wants; later passes are
    # shifted in time and left out below.
    wanted = {"/cam": 20, "/lidar": 7, "/imu": 100}
    session = _run(["replay", str(path), "--loop"], tmp_path, wanted)
    last = {f"/{s}": wall.to_utc(fs[-1].t) for s, fs in frames.items()}
    decoders = {t: Decoder(c) for t, c in session.channels.items()}
    session.received = [
        m
        for m in session.received
        if m.topic in last and _stamp(decoders[m.topic](m.payload)) <= last[m.topic]
    ]
    matched = _check(session, frames, wall.to_utc, 0)  # the export's dates, exactly
    assert sum(matched.values()) >= 50
    # The live view and the file agree: same schemas, byte-identical messages.
    exported = _export(path, tmp_path / "live.fox.mcap")
    for topic, channel in session.channels.items():
        schema = exported["schemas"][topic]
        assert (channel["schemaName"], channel["schemaEncoding"]) == schema[:2]
        data = schema[2] if channel["schemaEncoding"] != "protobuf" else base64.b64encode(schema[2])
        assert channel["schema"].encode() == data
    for message in session.received:
        assert exported["messages"][(message.topic, message.log_time)] == message.payload
    assert "/hyperframes/groups" not in session.channels  # no pipeline: no groups
    # the protocol's time capability: the replay's clock, the recording's dated times
    assert "time" in session.server_info["capabilities"]
    first = min(wall.to_utc(fs[0].t) for fs in frames.values())
    end = max(last.values())
    assert len(session.times) >= 5
    assert all(first <= t <= end for t in session.times[:5]), (session.times[:5], first, end)
