"""A ROS 2 publisher without ROS, for the tests: a bag's messages on DDS as a ROS 2 node sends them.

Run as a process: ``python ros2_publisher.py --domain 17 --bag BAG --topic /imu/data ...``.
It is written against ``cyclonedds`` directly and shares no code with
``adapters.ros``: the DDS topic names follow the ros2/design article
(``rt/<topic>``), the types are written out by hand from the ROS 2 ``.msg``
files (``<pkg>::msg::dds_::<Type>_``, fields in order) and the payloads are
rosbags' CDR (a ROS 2 bag's bytes as stored; a ROS 1 bag's converted by
rosbags' ``ros1_to_cdr``). Both ends being Cyclone DDS, each announces its
type's XTypes information, so a reader whose type differs from these by a
field does not match: the hand-written types are an independent check of the
types ``adapters.ros`` builds.

It waits until every writer has ``--subscribers`` matched readers, prints
``matched``, publishes at the messages' log-time pace (``--speed``), writes
``<topic> <log time ns>`` to ``--log`` after each message (unbuffered, so a
SIGKILL loses no line), prints ``done <count>`` (or SIGKILLs itself after
``--kill-after`` messages) and stays ``--hold-s`` seconds (a transient-local
reader may still be catching up) or until SIGTERM.
"""

# No "from __future__ import annotations": cyclonedds resolves the field types at runtime.
# mypy: disable-error-code="type-arg, valid-type"
import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import (
    array,
    float32,
    float64,
    int8,
    int32,
    sequence,
    uint8,
    uint16,
    uint32,
)
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic

LOOPBACK = (
    '<CycloneDDS><Domain id="any"><General><Interfaces><NetworkInterface address="127.0.0.1"/>'
    "</Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery>"
    "<ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>31</MaxAutoParticipantIndex>"
    '<Peers><Peer address="127.0.0.1"/></Peers></Discovery></Domain></CycloneDDS>'
)


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time
    frame_id: str


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64
    y: float64
    z: float64
    w: float64


@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64
    y: float64
    z: float64


@dataclass
class Point(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float64
    y: float64
    z: float64


@dataclass
class Pose(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point
    orientation: Quaternion


@dataclass
class PoseWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovariance_"):
    pose: Pose
    covariance: array[float64, 36]


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3
    angular: Vector3


@dataclass
class TwistWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovariance_"):
    twist: Twist
    covariance: array[float64, 36]


@dataclass
class Transform(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3
    rotation: Quaternion


@dataclass
class TransformStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header
    child_frame_id: str
    transform: Transform


@dataclass
class TFMessage(IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: sequence[TransformStamped]


@dataclass
class Imu(IdlStruct, typename="sensor_msgs::msg::dds_::Imu_"):
    header: Header
    orientation: Quaternion
    orientation_covariance: array[float64, 9]
    angular_velocity: Vector3
    angular_velocity_covariance: array[float64, 9]
    linear_acceleration: Vector3
    linear_acceleration_covariance: array[float64, 9]


@dataclass
class Odometry(IdlStruct, typename="nav_msgs::msg::dds_::Odometry_"):
    header: Header
    child_frame_id: str
    pose: PoseWithCovariance
    twist: TwistWithCovariance


@dataclass
class NavSatStatus(IdlStruct, typename="sensor_msgs::msg::dds_::NavSatStatus_"):
    status: int8
    service: uint16


@dataclass
class NavSatFix(IdlStruct, typename="sensor_msgs::msg::dds_::NavSatFix_"):
    header: Header
    status: NavSatStatus
    latitude: float64
    longitude: float64
    altitude: float64
    position_covariance: array[float64, 9]
    position_covariance_type: uint8


@dataclass
class PointField(IdlStruct, typename="sensor_msgs::msg::dds_::PointField_"):
    name: str
    offset: uint32
    datatype: uint8
    count: uint32


@dataclass
class PointCloud2(IdlStruct, typename="sensor_msgs::msg::dds_::PointCloud2_"):
    header: Header
    height: uint32
    width: uint32
    fields: sequence[PointField]
    is_bigendian: bool
    point_step: uint32
    row_step: uint32
    data: sequence[uint8]
    is_dense: bool


@dataclass
class Image(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    header: Header
    height: uint32
    width: uint32
    encoding: str
    is_bigendian: uint8
    step: uint32
    data: sequence[uint8]


@dataclass
class CompressedImage(IdlStruct, typename="sensor_msgs::msg::dds_::CompressedImage_"):
    header: Header
    format: str
    data: sequence[uint8]


@dataclass
class Range(IdlStruct, typename="sensor_msgs::msg::dds_::Range_"):
    header: Header
    radiation_type: uint8
    field_of_view: float32
    min_range: float32
    max_range: float32
    range: float32


TYPES: dict[str, type] = {
    "sensor_msgs/msg/Imu": Imu,
    "nav_msgs/msg/Odometry": Odometry,
    "sensor_msgs/msg/NavSatFix": NavSatFix,
    "sensor_msgs/msg/PointCloud2": PointCloud2,
    "sensor_msgs/msg/Image": Image,
    "sensor_msgs/msg/CompressedImage": CompressedImage,
    "tf2_msgs/msg/TFMessage": TFMessage,
    "sensor_msgs/msg/Range": Range,
}


class Wire:
    """A sample of a hand-written type that carries rosbags' CDR bytes instead of fields."""

    wire: ClassVar[bytes]


def sample(cls: type, cdr: bytes) -> Any:
    """An instance of ``cls`` whose serialisation is ``cdr``, padded to 4 bytes with the
    padding recorded in the encapsulation options (XTypes 1.3, 7.6.3.1.2)."""
    pad = -len(cdr) % 4
    wire = cdr[:3] + bytes([cdr[3] | pad]) + cdr[4:] + b"\0" * pad if pad else cdr
    obj: Any = object.__new__(cls)
    obj.__dict__["_wire"] = wire
    return obj


def _serialize(self: Any, **_: Any) -> bytes:
    wire: bytes = self.__dict__["_wire"]
    return wire


for _cls in TYPES.values():
    _cls.serialize = _serialize  # type: ignore[attr-defined]


def messages(bag: Path, topics: list[str]) -> tuple[list[tuple[str, str, int, bytes]], Any]:
    """``(topic, type, log time, CDR bytes)`` of the topics, in log-time order (rosbags)."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    ros2 = get_typestore(Stores.ROS2_HUMBLE)
    out = []
    with AnyReader([bag], default_typestore=ros2) as reader:
        conns = [c for c in reader.connections if c.topic in topics]
        for conn, log_time, raw in reader.messages(connections=conns):
            cdr = bytes(raw) if reader.is2 else bytes(ros2.ros1_to_cdr(raw, conn.msgtype))
            out.append((conn.topic, conn.msgtype, log_time, cdr))
    return out, ros2


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--domain", type=int, required=True)
    ap.add_argument("--bag", type=Path, required=True)
    ap.add_argument("--topic", action="append", required=True)
    ap.add_argument("--after-ns", type=int, default=-1, help="only log times > this")
    ap.add_argument("--until-ns", type=int, default=1 << 62, help="only log times < this")
    ap.add_argument("--speed", type=float, default=0.0, help="0: as fast as possible")
    ap.add_argument("--reliable", action="store_true")
    ap.add_argument("--transient-local", action="store_true")
    ap.add_argument("--subscribers", type=int, default=1)
    ap.add_argument("--log", type=Path)
    ap.add_argument("--hold-s", type=float, default=0.0)
    ap.add_argument("--type-of", action="append", default=[], help="TOPIC=pkg/msg/Type override")
    ap.add_argument("--kill-after", type=int, default=0, help="SIGKILL itself after N messages")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    todo, _ = messages(args.bag, args.topic)
    todo = [m for m in todo if args.after_ns < m[2] < args.until_ns]
    override = dict(item.split("=", 1) for item in args.type_of)
    domain = Domain(args.domain, LOOPBACK)
    participant = DomainParticipant(args.domain)
    qos = Qos(
        Policy.Reliability.Reliable(max_blocking_time=10**9)
        if args.reliable
        else Policy.Reliability.BestEffort,
        Policy.Durability.TransientLocal if args.transient_local else Policy.Durability.Volatile,
        Policy.History.KeepLast(1000),
        Policy.DataRepresentation(use_cdrv0_representation=True),
    )
    writers: dict[str, tuple[Any, type]] = {}
    for topic in args.topic:
        msgtype = override.get(topic) or next(m[1] for m in todo if m[0] == topic)
        cls = TYPES[msgtype]
        writers[topic] = (DataWriter(participant, Topic(participant, "rt" + topic, cls), qos), cls)
    deadline = time.monotonic() + 30
    while any(
        w.get_publication_matched_status().current_count < args.subscribers
        for w, _ in writers.values()
    ):
        if time.monotonic() > deadline:
            print("no subscriber matched", flush=True)
            return 1
        time.sleep(0.01)
    print("matched", flush=True)
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT) if args.log else -1
    start = time.monotonic()
    first = todo[0][2] if todo else 0
    for sent, (topic, _, log_time, cdr) in enumerate(todo, 1):
        if args.speed > 0:
            due = start + (log_time - first) / 1e9 / args.speed
            time.sleep(max(0.0, due - time.monotonic()))
        writer, cls = writers[topic]
        writer.write(sample(cls, cdr))
        if log >= 0:
            os.write(log, f"{topic} {log_time}\n".encode())
        if sent == args.kill_after:  # mid-run, no goodbye on DDS: as a crash would end it
            os.kill(os.getpid(), signal.SIGKILL)
    print(f"done {len(todo)}", flush=True)
    time.sleep(args.hold_s)
    del domain
    return 0


if __name__ == "__main__":
    sys.exit(main())
