"""FoxgloveServer in process: a pipeline sink whose every frame is sent, unwatched or
dropped, and counted; a real WebSocket client gets what was sent, in order."""

from __future__ import annotations

import json
import re
import selectors
import struct
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import SensorTiming, SyntheticCamera, SyntheticImu, SyntheticLidar, synthetic_timeline
from fusion import Frame, FrameGroup, Nearest, Pipeline, VirtualClock, WorkerError
from fusion._frames import SensorSpec
from fusion.errors import UsageError
from hyperframes.cli._serve import print_served
from recordings.outputs.live import _websocket
from recordings.outputs.live._foxglove_server import FoxgloveServer, result_json
from recordings.outputs.live._relay_upstream import Upstream
from tests.interop.foxglove_client import MESSAGE_DATA, Decoder, LiveClient, connect

MS = 1_000_000


def _settled(server: FoxgloveServer, published: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        s = server.statistics()
        if sum(s.frames.values()) + s.unwatched + s.dropped_total >= published:
            return
        time.sleep(0.01)
    raise AssertionError(f"never settled: {server.statistics()}")


def _written(server: FoxgloveServer) -> Any:
    """The statistics once no client has anything queued (10 s at most)."""
    deadline = time.monotonic() + 10
    stats = server.statistics()
    while any(c.queued for c in stats.traffic) and time.monotonic() < deadline:
        time.sleep(0.01)
        stats = server.statistics()
    return stats


def _address(ws: Any) -> str:
    host, port = ws.local_address[:2]
    return f"{host}:{port}"


async def test_every_frame_is_sent_unwatched_or_dropped_and_the_client_gets_the_sent_ones() -> None:
    server = FoxgloveServer(
        port=0,
        dating=None,
        backlog=4,  # the encoder's queue: a burst overflows it
        client_backlog=1024,  # the SDK's per-client queue: holds the whole burst
        sensors=[SensorSpec("cam", "camera")],
    )
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (120, 160, 3), np.uint8) for _ in range(64)]

    def image(i: int) -> np.ndarray:
        return images[i % len(images)]

    got: list[int] = []
    with server:
        server.publish(Frame("cam", 0, 1_000, image(0)))  # creates and advertises /cam
        _settled(server, 1)  # a client connects to a running server, as Foxglove does
        async with connect(server.url) as ws:
            client = LiveClient(ws)
            await client.wait_topics({"/cam"})
            await client.subscribe({"/cam"})
            decode = Decoder(client.topics()["/cam"])
            seq = 1
            deadline = time.monotonic() + 20
            while not got:  # until the subscription is live on the server
                assert time.monotonic() < deadline, f"never received: {server.statistics()}"
                server.publish(Frame("cam", seq, 1_000 + seq, image(seq)))
                seq += 1
                with anyio.move_on_after(0.05):
                    message = await client.receive()
                    if message is not None:
                        got.append(decode(message.payload).timestamp.nanos - 1_000)
            published = seq + 250
            for i in range(seq, published):  # a burst: the encoder falls behind
                server.publish(Frame("cam", i, 1_000 + i, image(i)))
            _settled(server, published)
            stats = server.statistics()
            assert stats.clients == 1
            assert stats.describe().startswith(f"foxglove {server.url}: 1 client, ")
            with anyio.move_on_after(2):
                while len(got) < stats.frames["cam"]:
                    message = await client.receive()
                    if message is not None:
                        decoded = decode(message.payload)
                        i = decoded.timestamp.nanos - 1_000
                        assert decoded.data == image(i).tobytes()
                        got.append(i)
    # each frame published was sent, unwatched (no subscriber yet) or dropped: counted
    assert sum(stats.frames.values()) + stats.unwatched + stats.dropped_total == published
    assert stats.dropped_total > 0  # the burst overflowed the encoder's queue, and it says so
    assert got == sorted(set(got))  # in order, no duplicates
    assert len(got) == stats.frames["cam"]  # every frame sent reached the reading client
    assert server.statistics().url == server.url  # the port stays known after close


async def test_a_reading_client_loses_nothing_when_the_relay_falls_behind() -> None:
    """The relay's thread descheduled (a loaded machine: here it waits on its own lock)
    while the SDK sends a burst ten times the client's backlog: the relay then reads the
    whole burst in one turn, and a client whose socket takes it loses none of it (the
    outbox is written before its oldest would be dropped)."""
    server = FoxgloveServer(
        port=0, dating=None, client_backlog=4, sensors=[SensorSpec("cam", "camera")]
    )
    image = np.zeros((8, 8, 3), np.uint8)
    got: list[int] = []
    with server, anyio.fail_after(60):
        server.publish(Frame("cam", 0, 1_000, image))
        _settled(server, 1)
        async with connect(server.url) as ws:
            client = LiveClient(ws)
            await client.wait_topics({"/cam"})
            await client.subscribe({"/cam"})
            decode = Decoder(client.topics()["/cam"])
            seq = 1
            while not got or got[-1] == 0:  # until the SDK serves the subscription (frame 0
                server.publish(Frame("cam", seq, 1_000 + seq, image))  # is the relay's kept one)
                seq += 1
                with anyio.move_on_after(0.05):
                    message = await client.receive()
                    if message is not None:
                        got.append(decode(message.payload).timestamp.nanos - 1_000)
            relay = server._relay
            assert relay is not None
            burst = seq + 40
            with relay._lock:  # the relay stops at its next message; the SDK keeps sending
                for i in range(seq, burst):
                    server.publish(Frame("cam", i, 1_000 + i, image))
                await anyio.sleep(0.5)
            _settled(server, burst)
            with anyio.move_on_after(10):  # the burst arrives (its last one is never dropped)
                while got[-1] < burst - 1:
                    message = await client.receive()
                    if message is not None:
                        got.append(decode(message.payload).timestamp.nanos - 1_000)
            stats = _written(server)  # the relay counts a write after the socket took it
    (traffic,) = stats.traffic
    assert stats.dropped_total == 0  # the encoder kept up: every frame went to the relay
    assert traffic.dropped == 0, traffic
    assert traffic.received == traffic.sent == len(got)
    assert got == sorted(set(got))  # in order, no duplicates
    assert got[-1] == burst - 1  # the whole burst


async def test_a_pipeline_sink_sees_every_frame_and_group() -> None:
    clock = VirtualClock()
    server = FoxgloveServer(port=0, dating=None)
    pipeline = Pipeline(
        [
            SyntheticLidar(duration_s=1.0, points=256, seed=1),
            SyntheticCamera(
                duration_s=1.0,
                width=16,
                height=12,
                seed=2,
                timing=SensorTiming(delay_ns=5 * MS, jitter_mean_ns=2 * MS),
            ),
            SyntheticImu(duration_s=1.0, seed=3),
        ],
        Nearest(
            "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
        ),
        max_latency=200 * MS,
        sinks=[server],
        clock=clock,
    )
    with server, anyio.fail_after(30):
        async with clock.autojump():
            stats = await pipeline.run()
        _settled(server, stats.hub.frames_in)
        live = server.statistics()
    # nobody watched: every frame the hub took (grouped or not) was counted as unwatched
    assert live.unwatched + sum(live.frames.values()) + live.dropped_total == stats.hub.frames_in
    assert sum(live.frames.values()) == live.messages == live.clients == 0
    assert live.groups + live.dropped.get("groups", 0) == stats.groups_out == 10


def test_worker_results_become_json_and_bad_sizes_are_refused() -> None:
    assert result_json(np.arange(3)) == {"value": [0, 1, 2]}
    assert result_json({"score": np.float32(0.5)}) == {"value": {"score": 0.5}}
    assert result_json(ValueError("bad frame")) == {"error": "bad frame"}
    big = result_json(np.zeros((300, 300)))
    assert big == {"value": {"dtype": "float64", "shape": [300, 300], "values": "omitted"}}
    with pytest.raises(UsageError, match="backlog and client_backlog must be >= 1"):
        FoxgloveServer(backlog=0)


def test_the_serve_options_set_the_servers_limits() -> None:
    """``--serve-backlog`` (and the other ``--serve-*``) reach the server and its relay."""
    import argparse

    from hyperframes.cli._serve import add_serve_argument, open_server, serve_limits

    parser = argparse.ArgumentParser()
    add_serve_argument(parser)
    args = parser.parse_args(
        ["--serve", "127.0.0.1:0", "--serve-backlog", "5000", "--serve-budget", "8"]
    )
    server = open_server(args.serve, (), limits=serve_limits(args))
    try:
        assert (server.client_backlog, server.budget) == (5000, 8 << 20)
        assert server._relay.backlog == 5000
    finally:
        server.close()
    with pytest.raises(SystemExit):
        parser.parse_args(["--serve-backlog", "0"])


def test_a_replay_waits_for_room_in_the_encoder_queue_instead_of_dropping() -> None:
    """``has_room``/``wait_room``: a producer that can wait (a replay of a file) waits while
    the queue is full and publishes once the encoder took an item: nothing dropped."""
    import threading

    from recordings.outputs.live._sink import LiveSink

    class Slow(LiveSink):
        def start(self) -> Slow:
            self._thread = threading.Thread(target=lambda: None)  # taken by the test
            return self

        def close(self) -> None:
            self._close_queue()

    sink = Slow(backlog=2, sensors=(), dating=None, dated=None).start()
    for seq in range(2):
        sink.publish(Frame("imu", seq, seq, None))
    assert not sink.has_room()
    assert not sink.wait_room(0.05)  # nobody took one: still full, bounded
    threading.Timer(0.1, sink._take).start()  # the encoder takes one, later
    assert sink.wait_room(10)
    sink.publish(Frame("imu", 2, 2, None))
    assert not sink._dropped
    sink.close()
    assert sink.has_room()  # closed: nothing to wait for
    assert sink.wait_room(0)


def test_a_taken_port_is_an_os_error() -> None:
    with (
        FoxgloveServer(port=0) as first,
        pytest.raises(OSError, match=f"cannot serve Foxglove on 127.0.0.1:{first.port}"),
    ):
        FoxgloveServer(port=first.port).start()


async def test_worker_results_and_groups_reach_a_client_as_the_pipeline_made_them() -> None:
    from tests.fusion.test_pipeline import policy, sensors, workers

    seen: list[FrameGroup] = []
    server = FoxgloveServer(port=0, dating=None)
    pipeline = Pipeline(
        sensors(3.0),
        policy(False),
        max_latency=300 * MS,
        workers=workers(),
        sinks=[seen.append, server],
    )
    wanted = {"/hyperframes/groups", "/hyperframes/results/brightness"}
    got: list[tuple[str, dict[str, Any]]] = []
    with server, anyio.fail_after(60):
        async with connect(server.url) as ws, anyio.create_task_group() as tg:
            tg.start_soon(pipeline.run)
            client = LiveClient(ws)
            await client.wait_topics(wanted)
            await client.subscribe(wanted)
            decoders = {t: Decoder(client.topics()[t]) for t in wanted}
            with anyio.move_on_after(30):
                while len(seen) < 30 or len(got) < 20:  # the 3 s session's 30 groups
                    message = await client.receive()
                    if message is not None:
                        got.append((message.topic, decoders[message.topic](message.payload)))
    by_t = {g.t: g for g in seen}
    results = [m for topic, m in got if topic.startswith("/hyperframes/results/")]
    markers = [m for topic, m in got if topic == "/hyperframes/groups"]
    assert len(results) >= 10
    assert len(markers) >= 10
    errors = 0
    for record in results:
        group = by_t[record["timestamp"]["sec"] * 1_000_000_000 + record["timestamp"]["nsec"]]
        value = group.results["brightness"]
        if isinstance(value, WorkerError):
            assert record["error"] == str(value)
            errors += 1
        else:
            assert record["value"] == value
    assert errors >= 1  # every 7th sweep's model call fails: its error is served

    def ns(time: dict[str, int]) -> int:  # {sec, nsec}: JavaScript keeps epoch ns
        return time["sec"] * 1_000_000_000 + time["nsec"]

    for marker in markers:
        group = by_t[ns(marker["t"])]
        members = [(f.sensor, f.seq, f.t) for f in group.members()]
        assert [(m["sensor"], m["seq"], ns(m["t"])) for m in marker["members"]] == members


async def test_a_client_that_stops_reading_loses_counted_messages_and_slows_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real-time pipeline serves two real clients: one reads everything, one subscribes
    and stops reading. The pipeline keeps its rate; the stalled client's drops are counted
    (received = sent + dropped + queued), the reading client loses nothing."""
    duration = 2.5
    server = FoxgloveServer(port=0, dating=None, client_backlog=16)

    def kinds(seconds: float) -> list[Any]:
        return [
            SyntheticCamera(duration_s=seconds, width=320, height=240, seed=1),  # 230 kB frames
            SyntheticLidar(duration_s=seconds, points=2048, seed=2),
            SyntheticImu(duration_s=seconds, seed=3),
        ]

    pipeline = Pipeline(
        kinds(duration), Nearest("lidar", ["lidar", "cam"], tolerance=20 * MS), sinks=[server]
    )
    topics = {"/cam", "/lidar", "/imu"}
    got: list[str] = []
    with server, anyio.fail_after(60):
        # the channels exist before anyone connects (a client meets a running server)
        firsts = {f.sensor: f for f in reversed(synthetic_timeline(kinds(0.1)))}
        for frame in firsts.values():
            server.publish(frame)
        _settled(server, 3)
        async with (
            connect(server.url) as reading_ws,
            connect(server.url, max_queue=1, close_timeout=0.2) as stalled_ws,
            anyio.create_task_group() as tg,
        ):
            reading, stalled = LiveClient(reading_ws), LiveClient(stalled_ws)
            for client in (reading, stalled):
                await client.wait_topics(topics)
                await client.subscribe(topics)

            want: list[int] = []  # how many the reader must get, once known
            enough = anyio.Event()

            async def read_all() -> None:
                while True:
                    message = await reading.receive()
                    if message is not None:
                        got.append(message.topic)
                    if want and len(got) >= want[0]:
                        enough.set()

            tg.start_soon(read_all)
            stats = await pipeline.run()  # the stalled client never reads again
            _settled(server, 3 + stats.hub.frames_in)
            live = server.statistics()
            by_address = {c.address: c for c in live.traffic}
            late = by_address[_address(reading_ws)]
            want.append(late.received)
            if len(got) >= late.received:
                enough.set()
            with anyio.move_on_after(10):  # what was queued for the reader arrives
                await enough.wait()
            tg.cancel_scope.cancel()
        stuck = by_address[_address(stalled_ws)]
    # the pipeline kept its rate: every frame on time, none lost to a full channel
    assert stats.elapsed_s < duration + 1.5, stats.elapsed_s
    assert pipeline.channel_drops() == {}
    assert stats.hub.frames_in >= 0.95 * duration * (30 + 10 + 200)
    # the stalled client: its drops are counted, every message it was sent accounted for
    assert stuck.exact
    assert stuck.dropped > 0
    assert stuck.received == stuck.sent + stuck.dropped + stuck.queued
    assert stuck.queued <= 16 + 1  # its outbox, and the one message being written
    assert stuck.received >= 0.9 * live.messages - 3
    # the reading client lost nothing and got every message sent to it
    assert late.dropped == 0
    assert late.received == late.sent == len(got)
    assert live.client_dropped_total == stuck.dropped
    assert f"{stuck.address}: {stuck.dropped} dropped" in live.describe()  # the live screen
    print_served(server)  # the final summary line of record/replay --serve
    # its own snapshot: the stalled client's outbox may have dropped a few more since
    line = capsys.readouterr().out
    served = f"served {sum(live.frames.values())} frames ({live.messages} messages) at {server.url}"
    found = re.fullmatch(
        re.escape(served)
        + r"(?:; \d+ held frames sent to late subscribers)?"
        + r"; (\d+) messages dropped for slow clients \("
        + re.escape(stuck.address)
        + r": (\d+) dropped\)\n"
        + r"live clients: 2 clients in all \(left: 2 closed by the client\)\n",
        line,
    )
    assert found is not None, line
    assert int(found[1]) == int(found[2]) >= stuck.dropped


async def test_an_sdk_overflow_record_for_the_relay_makes_the_counts_a_lower_bound() -> None:
    """foxglove-sdk's only trace of its own drops is ``outbox for client ADDR full`` (INFO,
    send_lossy.rs, through pyo3-log): for the relay's address towards the SDK, every client's
    count is no longer exact, and the screen says 'at least'."""
    import logging

    from recordings.outputs.live._compat_foxglove import DROP_LOGGER as SDK_DROP_LOGGER

    with FoxgloveServer(port=0, dating=None) as server:
        async with connect(server.url) as ws:
            await LiveClient(ws).wait_topics(set())  # connected: the relay has its link
            (client,) = server.statistics().traffic
            assert client.exact
            logging.getLogger(SDK_DROP_LOGGER).info("outbox for client 127.0.0.1:1 full")
            assert server.statistics().traffic[0].exact  # another client's record
            via = server.statistics().relay.via
            logging.getLogger(SDK_DROP_LOGGER).info("outbox for client %s full", via)
            (client,) = server.statistics().traffic
            assert not client.exact
            line = server.statistics().describe()
            assert f"at least 1 messages dropped for slow clients ({client.address}: at" in line


async def test_a_replay_server_tells_its_time_to_a_client_of_either_subprotocol() -> None:
    """``playback_time``: serverInfo lists the protocol's ``time`` capability and binary
    time messages (opcode 0x02, u64 ns) follow the frames' ``t``; a client offering only
    ``foxglove.websocket.v1`` (older Foxglove apps) is served as one offering only
    ``foxglove.sdk.v1``."""
    import json
    import struct

    import websockets
    from websockets.typing import Subprotocol

    with FoxgloveServer(port=0, dating=None, playback_time=True) as server:
        for protocol in ("foxglove.websocket.v1", "foxglove.sdk.v1"):
            offer = [Subprotocol(protocol)]
            async with websockets.connect(
                server.url, subprotocols=offer, proxy=None, max_size=None
            ) as ws:
                assert ws.subprotocol == protocol
                info = json.loads(await ws.recv())
                assert info["op"] == "serverInfo"
                assert "time" in info["capabilities"]
                base = 1_000_000_000 * (1 if protocol.endswith("websocket.v1") else 10)
                times: list[int] = []
                with anyio.fail_after(20):
                    i = 0
                    while base + 1_000_000_000 not in times:
                        server.publish(Frame("imu", i, base + i * 100_000_000, np.zeros(3)))
                        i += 1
                        with anyio.move_on_after(0.05):
                            message = await ws.recv()
                            if isinstance(message, bytes) and message[0] == 0x02:
                                times.append(struct.unpack_from("<Q", message, 1)[0])
                assert times == sorted(times)
                assert all((t - base) % 100_000_000 == 0 for t in times)


async def test_a_late_subscriber_gets_every_held_message_of_a_latched_topic() -> None:
    """A ROS 2 topic whose QoS is transient_local keeps every message for a late
    subscriber (as foxglove_bridge does); any other topic keeps its last."""
    qos = {"ros2": {"qos": "reliable, transient_local, depth 1"}}
    specs = [SensorSpec("map", "generic", meta=qos), SensorSpec("imu", "imu")]
    with FoxgloveServer(port=0, dating=None, sensors=specs) as server:
        for i in range(3):
            server.publish(Frame("map", i, 1_000 + i, {"v": np.array([float(i)])}))
            server.publish(Frame("imu", i, 1_000 + i, {"accel": np.zeros(3) + i}))
        _settled(server, 6)
        got: dict[str, list[int]] = {"/map": [], "/imu": []}
        async with connect(server.url) as ws:
            client = LiveClient(ws)
            await client.wait_topics({"/map", "/imu"})
            await client.subscribe({"/map", "/imu"})
            with anyio.move_on_after(5):
                while len(got["/map"]) < 3 or not got["/imu"]:
                    message = await client.receive()
                    if message is not None:
                        got[message.topic].append(message.log_time - 1_000)
        assert server.statistics().late == 4
    assert got == {"/map": [0, 1, 2], "/imu": [2]}


def test_a_client_that_subscribes_as_channels_appear_gets_each_first_frame() -> None:
    """Foxglove subscribes to a channel the moment it is advertised. foxglove-sdk 0.30
    advertises a channel before it takes subscriptions to it and drops a subscribe that
    comes that soon (status ``Unknown channel ID``; 29 runs in 30 lost one of 30 channels
    created 3 ms apart): the relay subscribes again, so every sensor's first frame, held
    while nobody watched, reaches a client that subscribes on the advertise, and no error
    status does. The client is a bare WebSocket connection read in this thread, as fast as
    Foxglove's own client (the websockets package answers too late to meet the race)."""
    sensors = [f"s{i:02d}" for i in range(40)]
    got: dict[str, int] = {}
    statuses: list[str] = []
    topics: dict[int, str] = {}
    info: list[dict[str, Any]] = []
    client = Upstream()  # a client of the relay, as the relay is one of the SDK

    def handle(message: _websocket.Message) -> None:
        if message.opcode == _websocket.TEXT:
            body = json.loads(bytes(message.payload))
            if body["op"] == "serverInfo":
                info.append(body)
            elif body["op"] == "status":
                statuses.append(body["message"])
            elif body["op"] == "advertise":
                for channel in body["channels"]:  # subscribed at once, as Foxglove does
                    topics[channel["id"]] = channel["topic"]
                    sub = {"id": channel["id"], "channelId": channel["id"]}
                    request = {"op": "subscribe", "subscriptions": [sub]}
                    client.send(_websocket.masked(_websocket.TEXT, json.dumps(request).encode()))
        elif message.opcode == _websocket.BINARY and message.payload[0] == MESSAGE_DATA:
            sid, log_time = struct.unpack_from("<IQ", message.payload, 1)
            got[topics[sid]] = log_time

    def publish(server: FoxgloveServer) -> None:
        for i, sensor in enumerate(sensors):  # each one's first frame
            server.publish(Frame(sensor, 0, 1_000 + i, {"value": float(i)}))
            time.sleep(0.003)

    with FoxgloveServer(port=0, dating=None) as server:
        client.connect(("127.0.0.1", server.port), handle, lambda: bool(info))
        sel = selectors.DefaultSelector()
        client.register(sel)
        publisher = threading.Thread(target=publish, args=(server,))
        publisher.start()
        deadline = time.monotonic() + 30
        while len(got) < len(sensors) and time.monotonic() < deadline:
            sel.select(0.05)
            for message in client.read():
                handle(message)
        publisher.join()
        client.close()
        stats = server.statistics()
    assert got == {f"/{s}": 1_000 + i for i, s in enumerate(sensors)}
    assert not statuses, statuses
    assert stats.late == len(sensors) - sum(stats.frames.values())  # held, then sent


BAG2 = Path(__file__).resolve().parents[2].parent / "shared/data/real/bags/rosbag2_cdr_test_0.mcap"


@pytest.mark.skipif(not BAG2.exists(), reason="needs ../shared/data")
async def test_a_bags_transient_local_topics_reach_a_late_subscriber_in_full() -> None:
    """rosbag2's own test bag offers /test_topic (3 messages) and /array_topic (4)
    transient_local: a client that subscribes after the replay sent them all gets every
    one, byte for byte as rosbags reads them from the bag."""
    from rosbags.highlevel import AnyReader

    from hyperframes.cli._serve import bag_latched_topics
    from recordings import open_source

    with AnyReader([BAG2]) as reader:  # the reference
        raw: dict[str, list[bytes]] = {}
        for conn, _, data in reader.messages():
            raw.setdefault(conn.topic, []).append(bytes(data))
    latched = bag_latched_topics(BAG2)
    assert latched == {"/test_topic", "/array_topic"}
    source = open_source(BAG2, speed=None)
    with FoxgloveServer(port=0, dating=None, sensors=source.specs, latched=latched) as server:
        published = 0
        async with source:
            async for frame in source.frames():
                server.publish(frame)
                published += 1
        _settled(server, published)
        got: dict[str, list[bytes]] = {"/test_topic": [], "/array_topic": []}
        async with connect(server.url) as ws:
            client = LiveClient(ws)
            await client.wait_topics(set(got))
            await client.subscribe(set(got))
            with anyio.move_on_after(10):
                while len(got["/test_topic"]) < 3 or len(got["/array_topic"]) < 4:
                    message = await client.receive()
                    if message is not None:
                        got[message.topic].append(message.payload)
    assert got == {topic: raw[topic] for topic in got}


async def test_held_frames_of_a_latched_topic_stay_within_a_quarter_of_the_budget() -> None:
    """Ten 100 kB frames of a latched topic, nobody watching, a 1 MiB budget: the server
    holds the newest that fit in 256 kiB, and a late subscriber gets those, in order."""
    with FoxgloveServer(port=0, dating=None, budget=1 << 20, latched=["/big"]) as server:
        for i in range(10):
            server.publish(Frame("big", i, 1_000 + i, {"v": np.full(12_500, i, np.float64)}))
        _settled(server, 10)
        got: list[int] = []
        async with connect(server.url) as ws:
            client = LiveClient(ws)
            await client.wait_topics({"/big"})
            await client.subscribe({"/big"})
            with anyio.move_on_after(3):
                while True:
                    message = await client.receive()
                    if message is not None:
                        got.append(message.log_time - 1_000)
    assert got == [8, 9]  # 2 x 100 kB fit in 256 kiB, 3 do not
