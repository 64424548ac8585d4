"""Live ROS 2 against an implementation the project did not write: Fast DDS 2.9 (Debian).

The robot is ``tests/peers/fastdds/peer.cpp``: C++ on Debian's ``libfastrtps-dev``
set up as ``rmw_fastrtps_cpp`` sets up a node with ``ROS_LOCALHOST_ONLY=1``
(``rt/`` topics, ``dds_`` type names, XCDR1, no type information, ROS 2's
default QoS), publishing or subscribing a real drive's messages as CDR bytes.
The references: the bag's own bytes (rosbags), and what the peer says it sent
and received.
"""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from adapters.bags.passthrough import MSGTYPE
from adapters.ros2 import Ros2Source, TopicQos, loopback_config
from recordings import open_recording
from tests.acceptance.live_helpers import Recording
from tests.adapters.ros2.ros2_helpers import DRIVE_BAG, free_domain
from tests.adapters.ros2.ros2_publisher import messages
from tests.peers.fastdds.fastdds_peer import Peer, read_records, write_records
from tests.terminal import plain

pytestmark = pytest.mark.timeout(120)

IMU = "/imu/data"
IMU_TYPE = "sensor_msgs/msg/Imu"


def _imu(n: int) -> list[bytes]:
    """The first ``n`` IMU messages of the drive, as CDR (rosbags)."""
    found, _ = messages(DRIVE_BAG, [IMU])
    return [cdr for _, _, _, cdr in found[:n]]


def test_a_fast_dds_node_s_messages_are_read_byte_for_byte(tmp_path: Path) -> None:
    domain = free_domain()
    sent = _imu(100)
    data = tmp_path / "imu.rec"
    write_records(data, [(IMU, cdr) for cdr in sent])

    async def read() -> list[bytes]:
        source = Ros2Source(
            {IMU: "imu"},
            domain_id=domain,
            config=loopback_config(),
            qos={IMU: TopicQos("reliable", "volatile", 100)},
            discover_s=20,  # the type comes from the Fast DDS node's announcement
        )
        got = []
        async with source:
            assert source.specs[0].meta[MSGTYPE] == IMU_TYPE
            with anyio.move_on_after(30):
                async for frame in source.frames():
                    got.append(frame.meta["ros_message"])
                    if len(got) == len(sent):
                        break
        return got

    peer = Peer("pub", domain, {IMU: IMU_TYPE}, "--data", str(data), "--rate", "200")
    try:
        got = anyio.run(read)
        peer.wait_line("sent 100")
    finally:
        peer.stop()
    assert got == sent


def _config(path: Path, domain: int) -> Path:
    path.write_text(
        f"""
[[sources]]
type = "ros2"
domain_id = {domain}
loopback = true
discover_s = 0
topics = {{ "{IMU}" = "imu" }}
types = {{ "{IMU}" = "{IMU_TYPE}" }}
qos."{IMU}" = {{ reliability = "reliable", depth = 200 }}

[sync]
policy = "nearest"
reference = "imu"
tolerance_ms = 20
"""
    )
    return path


def test_record_to_ros2_on_the_robot_s_domain_is_no_echo_loop(tmp_path: Path) -> None:
    """``record --to-ros2`` reading and republishing the same topic on the same domain, with
    ``loopback = true``: 100 messages from the Fast DDS node are 100 frames, and another Fast
    DDS subscriber gets each message twice (the node's and hyperframes' copy), no more."""
    domain = free_domain()
    sent = _imu(100)
    data, heard = tmp_path / "imu.rec", tmp_path / "heard.rec"
    write_records(data, [(IMU, cdr) for cdr in sent])
    out = tmp_path / "live.hfr"
    listener = Peer("sub", domain, {IMU: IMU_TYPE}, "--out", str(heard), "--idle-s", "3")
    rec = Recording(
        [
            str(_config(tmp_path / "ros2.toml", domain)),
            "-o",
            str(out),
            "--to-ros2",
            "--ros2-domain",
            str(domain),
            "--ros2-subscribers",
            "1",
        ],  # the listener
        terminal=True,
    )
    robot = None
    try:
        listener.wait_line("ready")
        rec.wait_for("recording to")
        # the robot waits for two subscribers: the listener and the recorder
        robot = Peer(
            "pub", domain, {IMU: IMU_TYPE}, "--data", str(data), "--rate", "200",
            "--subscribers", "2",
        )  # fmt: skip
        robot.wait_line("sent 100")
        listener.wait_line("got ", timeout=30)  # 3 s without a message: all came
        rec.proc.send_signal(signal.SIGINT)
        code, _ = rec.stop(0)
    finally:
        for peer in (robot, listener):
            if peer is not None:
                peer.stop()
        if rec.proc.poll() is None:
            rec.stop(signal.SIGKILL)
    text = plain(bytes(rec.output))
    assert code == 0, text[-3000:]
    assert "PRECONDITION_NOT_MET" not in text
    assert "Traceback" not in text
    with open_recording(out) as recording:
        frames = [f for f in recording.frames() if f.sensor == "imu"]
    assert [f.meta["ros_message"] for f in frames] == sent  # each once, in order
    copies = [cdr for topic, _, cdr in read_records(heard) if topic == IMU]
    assert len(copies) == 2 * len(sent), (len(copies), text[-5000:])
    assert sorted(copies) == sorted(sent + sent)  # byte-equal: the node's and ours
    assert "frames published" in text


def test_the_fast_dds_node_hears_nothing_twice_without_a_subscriber_of_ours(
    tmp_path: Path,
) -> None:
    """The control: the same run without ``--to-ros2``, the listener hears each message once."""
    domain = free_domain()
    sent = _imu(20)
    data, heard = tmp_path / "imu.rec", tmp_path / "heard.rec"
    write_records(data, [(IMU, cdr) for cdr in sent])
    listener = Peer("sub", domain, {IMU: IMU_TYPE}, "--out", str(heard), "--idle-s", "2")
    robot = None
    try:
        listener.wait_line("ready")
        robot = Peer("pub", domain, {IMU: IMU_TYPE}, "--data", str(data), "--rate", "200")
        robot.wait_line("sent 20")
        listener.finish()
    finally:
        for peer in (robot, listener):
            if peer is not None:
                peer.stop()
    assert [cdr for _, _, cdr in read_records(heard)] == sent
