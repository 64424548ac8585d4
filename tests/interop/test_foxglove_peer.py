"""Foxglove's own client library against ``record --serve`` and ``replay --serve``.

The client is ``@foxglove/ws-protocol``'s ``FoxgloveClient`` under Node
(tests/peers/foxglove_client.mjs), offering only the subprotocol the library itself
exports (``foxglove.websocket.v1``); every message is decoded as the Foxglove app
decodes it: ROS 2 CDR with ``@foxglove/rosmsg`` (its ROS 2 grammar) and
``@foxglove/rosmsg2-serialization``, protobuf with protobufjs from the advertised
descriptor set, JSON with ``JSON.parse``. The reference is independent: ``rosbags``
reading the same bag, or the recording the process wrote.

* every real ROS 1 bag of ../shared/data (CameraInfo, IMU, odometry, turtlesim, a
  Marker) and ROS 2 bags (rosbag2's test bag, rosbags-rs' 94 standard types), replayed
  paused, subscribed, then played through Foxglove's playback control: every message
  decodes and equals rosbags' reading, field by field;
* a synthetic live session (``record --serve``): images, clouds, IMU records and sync
  groups equal the recording; every JSON value survives ``JSON.parse``, live and in the
  ``foxglove`` MCAP export of that recording (epoch nanoseconds are beyond 2^53);
* late subscription: a client connected from the start gets each topic's first
  message, one subscribing seconds later still gets ``/tf_static``;
* playback control: pause stops frames and time, play resumes, a seek jumps, a speed
  changes the pace.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adapters.ros._ros1to2 import ros2_name
from tests.interop.rosmsgs import BAGS
from tests.interop.test_mcap_conformance import PEERS

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
CLIENT = PEERS / "foxglove_client.mjs"
JSON_CHECK = PEERS / "json_parse.mjs"
MAX_SAFE = 2**53 - 1


# -- running the peer ------------------------------------------------------------------------


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (PEERS / "node_modules" / "@foxglove" / "ws-protocol").is_dir():
        pytest.fail(
            "the Node peers are not installed (node, tests/peers/node_modules/@foxglove/"
            "ws-protocol): run `make test` (npm ci in tests/peers; Node.js 18+ with npm)"
        )
    return node


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"  # a server that does not stop dumps its threads (below)
    return env


def _serve(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=ROOT,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_listening(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(f"the server ended: {proc.communicate()[0]}") from None
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)


def foxglove_client(port: int, **options: Any) -> list[dict[str, Any]]:
    """Run Foxglove's client library against ``ws://127.0.0.1:PORT``; its JSON lines."""
    run = subprocess.run(
        [_node(), str(CLIENT), f"ws://127.0.0.1:{port}", json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=options.get("timeout_ms", 30_000) / 1000 + 30,
        cwd=PEERS,
    )
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def _finish(proc: subprocess.Popen[str], interrupt: bool = False, wait: float = 0) -> str:
    """The process's output once it ended: by itself within ``wait`` s, else by Ctrl-C
    (``interrupt``) or on its own."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait)
    if interrupt and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack, then it ends
        out, _ = proc.communicate(timeout=30)
        raise AssertionError(f"the server did not stop within 60 s; its threads:\n{out}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
    return out


def replayed(bag: Path, *args: str, **options: Any) -> tuple[list[dict[str, Any]], str]:
    """``replay BAG --serve --start-paused``: the client subscribes to every channel (a
    bag's are advertised before their first message), then plays it through Foxglove's
    playback control (for a bag, timed from its subscriptions, which reach the server
    first); what it received and the replay's output."""
    port = _free_port()
    proc = _serve(["replay", str(bag), "--serve", f"127.0.0.1:{port}", "--start-paused", *args])
    try:
        _wait_listening(port, proc)
        rate = next((float(r) for k, r in itertools.pairwise(args) if k == "-r"), 1.0)
        # Foxglove's play carries its speed: the replay's rate
        options.setdefault("commands", [{"at_ms": 1500, "command": "play", "speed": rate}])
        # a bag's channels are advertised at once: play only after subscribing to them
        options.setdefault("after_subscribe", bag.suffix != ".hfr")
        records = foxglove_client(port, **options)
    finally:
        out = _finish(proc, interrupt=True, wait=20)  # a replay ends by itself
    return records, out


# -- comparing with rosbags -------------------------------------------------------------------


def _bytes(data: bytes) -> dict[str, Any]:
    return {"$bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def assert_decoded(want: Any, got: Any, where: str) -> None:
    """``got`` (Foxglove's decoding, printed as JSON) holds ``want`` (rosbags' message):
    every field under its ROS 2 name, arrays element for element, bytes by SHA-256,
    64-bit integers as decimal strings (BigInt), NaN as null."""
    if dataclasses.is_dataclass(want):
        assert isinstance(got, dict), f"{where}: {got!r}"
        names = [f.name for f in dataclasses.fields(want) if not str(f.type).startswith("ClassVar")]
        if getattr(want, "__msgtype__", "") == "std_msgs/msg/Header":
            names = [n for n in names if n != "seq"]
        # rosbags' name for the byte CDR gives an empty message; Foxglove reads it as {}
        names = [n for n in names if n != "structure_needs_at_least_one_member"]
        for name in names:
            key = ros2_name(name)
            assert key in got, f"{where}: no field {key} in {sorted(got)}"
            assert_decoded(getattr(want, name), got[key], f"{where}.{key}")
    elif isinstance(want, np.ndarray):
        if want.dtype in (np.uint8, np.int8):
            assert got == _bytes(want.tobytes()), f"{where}: bytes differ"
        else:
            assert isinstance(got, list), f"{where}: {got!r}"
            assert len(got) == len(want), f"{where}: {len(got)} != {len(want)} elements"
            for i, (a, b) in enumerate(zip(want.tolist(), got, strict=True)):
                assert_decoded(a, b, f"{where}[{i}]")
    elif isinstance(want, list):
        assert isinstance(got, list), f"{where}: {got!r}"
        assert len(got) == len(want), f"{where}: {len(got)} != {len(want)} elements"
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            assert_decoded(a, b, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got is None if np.isnan(want) else got == want, f"{where}: {got!r} != {want!r}"
    elif isinstance(want, bool):
        assert got == want, f"{where}: {got!r} != {want!r}"
    elif isinstance(want, int):
        assert got in (want, str(want)), f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def bag_messages(path: Path) -> dict[str, list[tuple[int, Any]]]:
    """Per topic, ``(log time, message)`` as rosbags reads the bag (its own types)."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    out: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        for conn, log_time, raw in reader.messages():
            out[conn.topic].append((log_time, reader.deserialize(raw, conn.msgtype)))
    return out


def received(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["kind"] == "message":
            out[r["topic"]].append(r)
    return out


BAG_CASES = [
    # name, replay options, what the case shows
    pytest.param("fiducials_aruco_images.bag", ["-r", "0.5"], id="ros1-camera_info"),
    pytest.param(
        "robot_localization_test2.bag", ["-r", "4", "--duration", "15"], id="ros1-imu-odom"
    ),
    pytest.param("rosbagjs_example-bz2.bag", ["-r", "4", "--duration", "10"], id="ros1-turtlesim"),
    pytest.param("webviz_only-a-cube.bag", [], id="ros1-marker"),
    pytest.param("embag_test.bag", ["-r", "2"], id="ros1-cloud-scan"),
    pytest.param("rosbag2_cdr_test_0.mcap", [], id="ros2-mcap-test-types"),
    pytest.param("rosbags_rs_test_bag_sqlite3", ["-r", "4"], id="ros2-sqlite3-94-types"),
]


@pytest.mark.parametrize(("name", "args"), BAG_CASES)
def test_every_message_of_a_real_bag_decodes_in_foxglove_as_rosbags_reads_it(
    name: str, args: list[str]
) -> None:
    bag = BAGS / name
    want = bag_messages(bag)
    # An outbox that holds the whole replay: this client decodes each message as the app
    # does, and a loaded machine stalls it past the default 128 messages (the relay then
    # drops its oldest and says so, as test_foxglove_live shows); what is compared here is
    # every message, not the slow-client policy.
    backlog = ["--serve-backlog", "1000000"]
    records, out = replayed(bag, *args, *backlog, idle_ms=10_000, timeout_ms=60_000)
    # the server says what it dropped (encoder behind, slow clients): checked first, by name
    assert "dropped" not in out, [line for line in out.splitlines() if "dropped" in line]
    ended = [r for r in records if r["kind"] == "playbackState" and r["status"] == "ended"]
    assert ended, records[-3:]  # the replay said it reached its end, after its last frames
    # Messages BagSource cannot decode (rosbags-rs' 10-byte "JPEG"s) are lost, counted.
    lost = {
        m[1]: (int(m[2]), int(m[3]))
        for m in re.finditer(r"lost: (\S+): lost (\d+) of (\d+) messages", out)
    }
    assert records[0] == {"kind": "open", "protocol": "foxglove.websocket.v1"}, records[0]
    got = received(records)
    errors = Counter((r["topic"], r["error"]) for rs in got.values() for r in rs if "error" in r)
    assert not errors, errors  # e.g. "Invalid field name: D" of a ROS 1 CameraInfo
    advertised = {c["topic"]: c for r in records if r["kind"] == "advertise" for c in r["channels"]}
    assert {c["schemaEncoding"] for c in advertised.values()} == {"ros2msg"}
    assert set(want) <= set(advertised), set(want) - set(advertised)
    # e.g. "Unknown channel ID: 94": the SDK refused the relay's subscribe (the relay retries)
    assert not [r for r in records if r["kind"] == "status" and r["level"] >= 2], [
        r for r in records if r["kind"] == "status"
    ]
    duration = next((float(a) for k, a in itertools.pairwise(args) if k == "--duration"), None)
    compared = 0
    start = min(t for ts in want.values() for t, _ in ts)
    for topic, messages in want.items():
        expected = [
            (t, m) for t, m in messages if duration is None or t < start + int(duration * 1e9)
        ]
        mine = got.get(topic, [])
        sensor = topic.strip("/").replace("/", "_")
        if sensor in lost:  # what was not lost arrived
            assert len(mine) == lost[sensor][1] - lost[sensor][0], topic
            times = dict(expected)
            for record in mine:
                assert_decoded(times[int(record["log_time"])], record["value"], topic)
                compared += 1
            continue
        assert [int(r["log_time"]) for r in mine] == [t for t, _ in expected], topic
        for (_, msg), record in zip(expected, mine, strict=True):
            assert_decoded(msg, record["value"], topic)
            compared += 1
    assert compared == sum(len(v) for v in got.values())


def test_a_ros1_camera_info_is_advertised_with_ros2s_definition() -> None:
    records, _ = replayed(BAGS / "fiducials_aruco_images.bag", "-r", "0.5", idle_ms=3000)
    (channel,) = [
        c
        for r in records
        if r["kind"] == "advertise"
        for c in r["channels"]
        if c["topic"] == "/raspicam_node/camera_info"
    ]
    from rosbags.typesys import Stores, get_typestore

    humble = get_typestore(Stores.ROS2_HUMBLE)
    assert channel["schema"] == humble.generate_msgdef("sensor_msgs/msg/CameraInfo", 2)[0]
    first = next(r for r in records if r.get("topic") == "/raspicam_node/camera_info")
    assert {"d", "k", "r", "p", "binning_x", "roi"} <= set(first["value"])


# -- a live session --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """``record --serve`` of the built-in synthetic camera, LiDAR and IMU with sync groups,
    watched by Foxglove's client for 6 s, then Ctrl-C."""
    out = tmp_path_factory.mktemp("fox-live") / "live.hfr"
    port = _free_port()
    proc = _serve(["record", "--duration", "60", "-o", str(out), "--serve", f"127.0.0.1:{port}"])
    try:
        _wait_listening(port, proc)
        records = foxglove_client(port, timeout_ms=6000, idle_ms=6000, raw_json=True)
    finally:
        text = _finish(proc, interrupt=True)
    assert proc.returncode == 0, text
    return out, records


def test_a_live_session_decodes_in_foxglove_equal_to_the_recording(
    live: tuple[Path, list[dict[str, Any]]],
) -> None:
    from tests.interop.test_foxglove_live import LIVE_TOLERANCE_NS, _recorded_frames

    path, records = live
    frames, wall = _recorded_frames(path)
    stamps = {s: np.array([wall.to_utc(f.t) for f in fs]) for s, fs in frames.items()}
    got = received(records)
    assert not [r for rs in got.values() for r in rs if "error" in r]
    matched: Counter[str] = Counter()
    for topic in ("/cam", "/lidar", "/imu"):
        sensor = topic[1:]
        for r in got[topic]:
            value = r["value"]
            if sensor == "imu":
                value = value["parsed"]
                stamp = value["timestamp"]["sec"] * 10**9 + value["timestamp"]["nsec"]
            else:
                ts = value["timestamp"]
                stamp = int(ts["seconds"]) * 10**9 + int(ts["nanos"])
            i = int(np.argmin(np.abs(stamps[sensor] - stamp)))
            assert abs(int(stamps[sensor][i]) - stamp) <= LIVE_TOLERANCE_NS, (topic, stamp)
            frame = frames[sensor][i]
            if sensor == "imu":
                for key in ("accel", "gyro"):
                    assert value[key] == np.asarray(frame.data[key], np.float64).tolist()
            else:
                assert value["data"] == _bytes(np.asarray(frame.data).tobytes()), topic
            matched[sensor] += 1
    assert matched["cam"] >= 30, matched
    assert matched["lidar"] >= 10, matched
    assert matched["imu"] >= 200, matched
    groups = [r["value"]["parsed"] for r in got["/hyperframes/groups"]]
    assert len(groups) >= 10
    keys = {(f.sensor, f.seq): f for fs in frames.values() for f in fs}
    for group in groups:
        for member in group["members"]:
            frame = keys[(member["sensor"], member["seq"])]
            t = member["t"]["sec"] * 10**9 + member["t"]["nsec"]
            assert abs(t - wall.to_utc(frame.t)) <= LIVE_TOLERANCE_NS


def _integers(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [i for v in value for i in _integers(v)]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _integers(v)]
    return []


def test_every_live_json_value_survives_javascripts_json_parse(
    live: tuple[Path, list[dict[str, Any]]],
) -> None:
    _, records = live
    raws = [r["value"] for rs in received(records).values() for r in rs if "raw" in r["value"]]
    assert len(raws) >= 200
    values = 0
    for r in raws:
        exact = json.loads(r["raw"])  # Python keeps every integer
        assert r["parsed"] == exact  # what JavaScript's JSON.parse made of it
        values += len(_integers(exact))
        assert all(abs(i) <= MAX_SAFE for i in _integers(exact))
    assert values >= 1000


def test_every_json_value_of_the_foxglove_export_survives_json_parse(
    live: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """The live recording exported with sync groups: each JSON message's text through
    Node's JSON.parse and back equals what Python reads (tests/peers/json_parse.mjs)."""
    from mcap.reader import make_reader

    from recordings.outputs._export import export_recording

    path, _ = live
    out = tmp_path / "live.mcap"
    assert export_recording(path, out, to="foxglove", groups="nearest:lidar:50").complete
    texts: list[str] = []
    with out.open("rb") as f:
        for _schema, channel, message in make_reader(f).iter_messages():
            if channel.message_encoding == "json":
                texts.append(message.data.decode())
    topics = {json.loads(t).get("members") is not None for t in texts}
    assert topics == {True, False}  # groups and IMU records
    run = subprocess.run(
        [_node(), str(JSON_CHECK)],
        input="\n".join(texts),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PEERS,
    )
    assert run.returncode == 0, run.stderr
    parsed = [json.loads(line) for line in run.stdout.splitlines()]
    exact = [json.loads(t) for t in texts]
    assert len(parsed) == len(exact)
    changed = sum(a != b for a, b in zip(parsed, exact, strict=True))
    values = sum(len(_integers(e)) for e in exact)
    assert changed == 0, f"{changed} of {len(exact)} messages changed by JSON.parse"
    assert values > 1000, values


# -- late subscribers --------------------------------------------------------------------------


def test_a_late_subscriber_gets_the_first_message_and_tf_static() -> None:
    """The turtlesim bag, not paused, at a quarter of its pace: a client connected from
    the start gets /turtle2/cmd_vel's first message (0.94 s into the bag, 3.8 s of wall
    time; held for it if it subscribes later, up to the second message at 5.4 s: Node's
    start on a loaded machine took over a second) and /tf_static's only one (0.2 s in,
    perhaps before it subscribed); one that subscribes 2.5 s in still gets /tf_static."""
    bag = BAGS / "rosbagjs_example-bz2.bag"
    want = bag_messages(bag)
    port = _free_port()
    proc = _serve(
        ["replay", str(bag), "--serve", f"127.0.0.1:{port}", "-r", "0.25", "--duration", "1.6"]
    )
    try:
        _wait_listening(port, proc)
        late = subprocess.Popen(
            [
                _node(),
                str(CLIENT),
                f"ws://127.0.0.1:{port}",
                json.dumps({"subscribe_after_ms": 2500, "idle_ms": 8000, "timeout_ms": 8000}),
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=PEERS,
        )
        early = foxglove_client(port, idle_ms=3000, timeout_ms=8000)
        late_out, _ = late.communicate(timeout=60)
    finally:
        _finish(proc)
    got = received(early)
    for topic in ("/turtle2/cmd_vel", "/tf_static"):
        first = got[topic][0]
        assert int(first["log_time"]) == want[topic][0][0], topic
        assert_decoded(want[topic][0][1], first["value"], topic)
    late_got = received([json.loads(x) for x in late_out.splitlines()])
    (static,) = late_got["/tf_static"]
    assert_decoded(want["/tf_static"][0][1], static["value"], "/tf_static")


# -- playback control ----------------------------------------------------------------------------


@pytest.mark.serial  # it watches the replay's pace
def test_playback_control_pauses_resumes_seeks_and_changes_speed() -> None:
    """robot_localization_test2.bag (61 s, IMU and odometry at 50 Hz), played at 1x:
    pause at 1.5 s (frames and time stop), play at 3 s, seek to 40 s into the bag at 4 s
    (the next messages are from there, as rosbags reads them), speed 3 at 5.5 s (time goes
    3x as fast)."""
    bag = BAGS / "robot_localization_test2.bag"
    want = bag_messages(bag)
    records, _ = replayed(
        bag,
        idle_ms=5000,
        timeout_ms=8000,
        commands=[
            {"at_ms": 500, "command": "play"},
            {"at_ms": 1500, "command": "pause"},
            {"at_ms": 3000, "command": "play"},
            {"at_ms": 4000, "command": "play", "seek_offset": "40000000000"},
            {"at_ms": 5500, "command": "play", "speed": 3.0},
        ],
    )
    info = next(r for r in records if r["kind"] == "serverInfo")
    assert {"time", "playbackControl"} <= set(info["capabilities"])
    start = info["dataStartTime"]["sec"] * 10**9 + info["dataStartTime"]["nsec"]
    assert start == min(t for ts in want.values() for t, _ in ts)
    states = {r["request_id"]: r for r in records if r["kind"] == "playbackState"}
    sent = {r["request_id"]: r["at_ms"] for r in records if r["kind"] == "sent"}
    assert [states[f"request-{i}"]["status"] for i in range(5)] == [
        "playing",
        "paused",
        "playing",
        "playing",
        "playing",
    ]
    assert states["request-3"]["did_seek"]
    assert int(states["request-3"]["current_time"]) == start + 40 * 10**9
    assert states["request-4"]["speed"] == 3.0

    def between(kind: str, a: float, b: float) -> list[dict[str, Any]]:
        return [r for r in records if r["kind"] == kind and a <= r["at_ms"] < b]

    # Paused: nothing after the state came back (allow what was already in flight, 100 ms).
    paused_at, resumed_at = states["request-1"]["at_ms"], sent["request-2"]
    assert not between("message", paused_at + 100, resumed_at)
    assert not between("time", paused_at + 100, resumed_at)
    assert between("message", resumed_at, sent["request-3"])
    # The seek: the first message after it is the bag's first at or after 40 s in.
    after = [
        r
        for r in between("message", states["request-3"]["at_ms"], 10**9)
        if int(r["log_time"]) >= start + 40 * 10**9
    ]
    assert after
    first = after[0]
    imu = [(t, m) for t, m in want[first["topic"]] if t >= start + 40 * 10**9]
    assert int(first["log_time"]) == imu[0][0]
    assert_decoded(imu[0][1], first["value"], first["topic"])
    # Speed: recording time per wall second, before and after the change.

    def pace(a: float, b: float) -> float:
        times = [(r["at_ms"], int(r["t"])) for r in between("time", a, b)]
        (w0, t0), (w1, t1) = times[0], times[-1]
        return float((t1 - t0) / 1e6 / (w1 - w0))

    slow = pace(states["request-3"]["at_ms"] + 200, sent["request-4"])
    fast = pace(states["request-4"]["at_ms"] + 200, states["request-4"]["at_ms"] + 2200)
    assert 0.5 < slow < 1.5, slow  # recording seconds per wall second, loosely
    assert fast > 2 * slow, (slow, fast)


def test_serve_hold_keeps_a_finished_replay_for_a_seek_back() -> None:
    """``--serve-hold``: at its end the replay says so and waits; a seek back to the start
    plays the bag again (the webviz cube: /tf and a Marker), until Ctrl-C."""
    bag = BAGS / "webviz_only-a-cube.bag"
    want = bag_messages(bag)
    port = _free_port()
    proc = _serve(
        ["replay", str(bag), "--serve", f"127.0.0.1:{port}", "--start-paused", "--serve-hold"]
    )
    try:
        _wait_listening(port, proc)
        records = foxglove_client(
            port,
            stay=True,
            idle_ms=4000,
            timeout_ms=8000,
            commands=[
                {"at_ms": 1000, "command": "play"},
                {"at_ms": 2500, "command": "play", "seek_offset": "0"},
            ],
        )
        assert proc.poll() is None  # still there, held
    finally:
        out = _finish(proc, interrupt=True)
    assert proc.returncode in (0, 130), out
    states = [(r["status"], r["request_id"]) for r in records if r["kind"] == "playbackState"]
    assert states[:3] == [("playing", "request-0"), ("ended", ""), ("playing", "request-1")]
    got = received(records)
    for topic, messages in want.items():
        assert [int(r["log_time"]) for r in got[topic]] == [t for t, _ in messages] * 2, topic
        for (_, msg), record in zip(messages * 2, got[topic], strict=True):
            assert_decoded(msg, record["value"], topic)


# -- the MCAP exports, as the Foxglove app reads them ---------------------------------------


ROS1_BAGS = [
    "fiducials_aruco_images.bag",
    "robot_localization_test2.bag",
    "rosbagjs_example-bz2.bag",
    "webviz_only-a-cube.bag",
    "embag_test.bag",
]


@pytest.mark.parametrize("profile", ["ros2", "foxglove"])
@pytest.mark.parametrize("name", ROS1_BAGS)
def test_a_ros1_bags_export_decodes_in_foxglove_as_rosbags_reads_it(
    name: str, profile: str, tmp_path: Path
) -> None:
    """A real ROS 1 bag recorded, then exported: ``@mcap/core`` finds every message and
    Foxglove's ROS 2 decoders read each with its schema (tests/peers/mcap_decode.mjs),
    equal to rosbags' reading of the bag (ROS 2 names: CameraInfo's d, k, r, p)."""
    import anyio

    from adapters import BagSource
    from recordings import Recorder
    from recordings.outputs._export import export_recording

    bag = BAGS / name
    hfr, out = tmp_path / "bag.hfr", tmp_path / "out.mcap"

    async def capture() -> None:
        source = BagSource(bag)
        with Recorder(hfr, sensors=source.specs) as rec:
            async with source:
                async for frame in source.frames():
                    rec.write(frame)

    anyio.run(capture)
    report = export_recording(hfr, out, to=profile, groups="none")  # type: ignore[arg-type]
    assert report.skipped == {}
    run = subprocess.run(
        [_node(), str(PEERS / "mcap_decode.mjs"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PEERS,
    )
    assert run.returncode == 0, run.stderr
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in run.stdout.splitlines():
        record = json.loads(line)
        assert "error" not in record, record
        assert record["encoding"] == "cdr", record
        got[record["topic"]].append(record)
    want = bag_messages(bag)
    assert set(got) == set(want)
    for topic, messages in want.items():
        assert [int(r["log_time"]) for r in got[topic]] == [t for t, _ in messages], topic
        for (_, msg), record in zip(messages, got[topic], strict=True):
            assert_decoded(msg, record["value"], topic)


def test_a_recordings_replay_seeks_in_its_dated_time(
    live: tuple[Path, list[dict[str, Any]]],
) -> None:
    """``replay REC.hfr --serve``: the data range is the recording's span dated by its wall
    clock (as ``export`` dates it); a seek 2 s in plays on from the recording's first frame
    at or after that time."""
    from tests.interop.test_foxglove_live import _recorded_frames

    path, _ = live
    frames, wall = _recorded_frames(path)
    t0 = min(f.t for fs in frames.values() for f in fs)
    records, _ = replayed(
        path,
        idle_ms=3000,
        timeout_ms=4000,
        commands=[
            {"at_ms": 1000, "command": "play"},
            {"at_ms": 1600, "command": "play", "seek_offset": "2000000000"},
        ],
    )
    info = next(r for r in records if r["kind"] == "serverInfo")
    start = info["dataStartTime"]["sec"] * 10**9 + info["dataStartTime"]["nsec"]
    assert start == wall.to_utc(t0)
    (state,) = [r for r in records if r.get("request_id") == "request-1"][1:]
    assert state["did_seek"]
    after = [
        r["value"]["timestamp"]
        for r in records
        if r["kind"] == "message" and r["topic"] == "/imu" and r["at_ms"] >= state["at_ms"]
    ]
    stamps = [ts["sec"] * 10**9 + ts["nsec"] for ts in after]
    # Frames already on their way when the seek came (0.6 s were played) may still
    # arrive; nothing from the skipped span does, and the first after it is the target.
    assert not [t for t in stamps if start + 12 * 10**8 < t < start + 2 * 10**9]
    want = min(f.t for f in frames["imu"] if f.t >= wall.from_utc(start + 2 * 10**9))
    assert next(t for t in stamps if t >= start + 2 * 10**9) == wall.to_utc(want)
