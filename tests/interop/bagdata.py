"""Writes small but complete ROS bags with rosbags, for the interop tests.

One "drive" of a camera (raw RGB and JPEG), a LiDAR, an IMU, a GNSS receiver
and a pose topic (decoded by the generic decoder), written as a ROS 2 MCAP bag,
a ROS 2 sqlite3 bag or a ROS 1 bag. Header stamps are the log time minus a
per-topic latency, so tests can tell ``t_sensor`` from ``t_arrival``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np

MS = 1_000_000
T0 = 1_700_000_000 * 1_000_000_000  # a 2023 epoch stamp, as real bags have
LATENCY = {
    "/cam/image": 7 * MS,
    "/cam/jpeg": 9 * MS,
    "/lidar": 3 * MS,
    "/imu": 1 * MS,
    "/gps": 20 * MS,
    "/pose": 2 * MS,
}
TYPES = {
    "/cam/image": "sensor_msgs/msg/Image",
    "/cam/jpeg": "sensor_msgs/msg/CompressedImage",
    "/lidar": "sensor_msgs/msg/PointCloud2",
    "/imu": "sensor_msgs/msg/Imu",
    "/gps": "sensor_msgs/msg/NavSatFix",
    "/pose": "geometry_msgs/msg/PoseStamped",
}
RATES = {"/cam/image": 10, "/cam/jpeg": 5, "/lidar": 10, "/imu": 100, "/gps": 5, "/pose": 20}


@dataclass
class Written:
    """What a bag holds: per topic, (stamp, log_time, payload) in log order."""

    path: Path
    messages: dict[str, list[tuple[int, int, Any]]] = field(default_factory=dict)

    def count(self, topic: str) -> int:
        return len(self.messages[topic])


def image(i: int, h: int = 24, w: int = 32) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([(xx * 8 + i) % 256, (yy * 10) % 256, np.full_like(xx, 40 + i)], -1).astype(
        np.uint8
    )


def points(i: int, n: int = 500) -> np.ndarray:
    rng = np.random.default_rng(i)
    dtype = np.dtype(
        [
            ("x", "<f4"),
            ("y", "<f4"),
            ("z", "<f4"),
            ("intensity", "<f4"),
            ("ring", "<u2"),
            ("time", "<f4"),
        ]
    )
    out = np.zeros(n, dtype)
    for name in ("x", "y", "z"):
        out[name] = rng.normal(0, 10, n)
    out["intensity"] = rng.uniform(0, 100, n)
    out["ring"] = np.arange(n) % 16
    out["time"] = np.linspace(0, 0.1, n)
    return out


def jpeg(array: np.ndarray) -> bytes:
    ctx = av.CodecContext.create("mjpeg", "w")
    ctx.width, ctx.height = array.shape[1], array.shape[0]
    ctx.pix_fmt = "yuvj444p"
    ctx.time_base = av.time_base if False else __import__("fractions").Fraction(1, 25)
    frame = av.VideoFrame.from_ndarray(array, format="rgb24").reformat(format="yuvj444p")
    packets = ctx.encode(frame) + ctx.encode(None)
    return b"".join(bytes(p) for p in packets)


class Builder:
    """Message constructors for one typestore (ROS 1 headers have a ``seq``)."""

    def __init__(self, typestore: Any) -> None:
        self.ts = typestore
        self.T = typestore.types
        self.ros1 = "seq" in inspect.signature(self.T["std_msgs/msg/Header"]).parameters

    def header(self, stamp: int, frame_id: str) -> Any:
        t = self.T["builtin_interfaces/msg/Time"](sec=stamp // 10**9, nanosec=stamp % 10**9)
        if self.ros1:
            return self.T["std_msgs/msg/Header"](seq=0, stamp=t, frame_id=frame_id)
        return self.T["std_msgs/msg/Header"](stamp=t, frame_id=frame_id)

    def make(self, topic: str, stamp: int, payload: Any) -> Any:
        T, h = self.T, self.header(stamp, topic.strip("/").replace("/", "_"))
        if topic == "/cam/image":
            hh, ww = payload.shape[:2]
            return T["sensor_msgs/msg/Image"](
                header=h,
                height=hh,
                width=ww,
                encoding="rgb8",
                is_bigendian=0,
                step=ww * 3,
                data=payload.reshape(-1),
            )
        if topic == "/cam/jpeg":
            return T["sensor_msgs/msg/CompressedImage"](
                header=h, format="jpeg", data=np.frombuffer(jpeg(payload), np.uint8)
            )
        if topic == "/lidar":
            PF = T["sensor_msgs/msg/PointField"]
            fields = [
                PF(
                    name=n,
                    offset=payload.dtype.fields[n][1],
                    datatype={"<f4": 7, "<u2": 4}[payload.dtype.fields[n][0].str],
                    count=1,
                )
                for n in payload.dtype.names
            ]
            return T["sensor_msgs/msg/PointCloud2"](
                header=h,
                height=1,
                width=len(payload),
                fields=fields,
                is_bigendian=False,
                point_step=payload.dtype.itemsize,
                row_step=payload.nbytes,
                data=payload.view(np.uint8).reshape(-1),
                is_dense=True,
            )
        V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
        if topic == "/imu":
            a, g = payload["accel"], payload["gyro"]
            return T["sensor_msgs/msg/Imu"](
                header=h,
                orientation=Q(x=0.0, y=0.0, z=0.0, w=1.0),
                orientation_covariance=np.zeros(9),
                angular_velocity=V(x=g[0], y=g[1], z=g[2]),
                angular_velocity_covariance=np.zeros(9),
                linear_acceleration=V(x=a[0], y=a[1], z=a[2]),
                linear_acceleration_covariance=np.eye(3).reshape(-1) * 0.01,
            )
        if topic == "/gps":
            st = T["sensor_msgs/msg/NavSatStatus"](status=0, service=1)
            return T["sensor_msgs/msg/NavSatFix"](
                header=h,
                status=st,
                latitude=payload[0],
                longitude=payload[1],
                altitude=payload[2],
                position_covariance=np.ones(9),
                position_covariance_type=2,
            )
        if topic == "/pose":
            P = T["geometry_msgs/msg/Point"]
            pose = T["geometry_msgs/msg/Pose"](
                position=P(x=payload, y=0.0, z=0.0), orientation=Q(x=0.0, y=0.0, z=0.0, w=1.0)
            )
            return T["geometry_msgs/msg/PoseStamped"](header=h, pose=pose)
        raise KeyError(topic)

    def serialize(self, msg: Any) -> bytes:
        if self.ros1:
            return bytes(self.ts.serialize_ros1(msg, msg.__msgtype__))
        return bytes(self.ts.serialize_cdr(msg, msg.__msgtype__))


def payload(topic: str, i: int) -> Any:
    if topic in ("/cam/image", "/cam/jpeg"):
        return image(i)
    if topic == "/lidar":
        return points(i)
    if topic == "/imu":
        return {"accel": np.array([0.1 * i, 0.0, 9.81]), "gyro": np.array([0.0, 0.01 * i, 0.0])}
    if topic == "/gps":
        return (48.1 + i * 1e-6, 11.5, 520.0 + i)
    return float(i)


def schedule(seconds: float, topics: tuple[str, ...]) -> list[tuple[int, str, int]]:
    """(log_time, topic, index) in log order."""
    out = []
    for topic in topics:
        period = 10**9 // RATES[topic]
        for i in range(int(seconds * RATES[topic])):
            out.append((T0 + i * period + LATENCY[topic] + 500_000, topic, i))
    out.sort()
    return out


def write_bag(
    path: Path, kind: str, seconds: float = 1.0, topics: tuple[str, ...] = tuple(TYPES)
) -> Written:
    """Write a bag: ``kind`` is ``"mcap"``, ``"sqlite3"`` or ``"ros1"``."""
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2
    from rosbags.typesys import Stores, get_typestore

    if kind == "ros1":
        ts = get_typestore(Stores.ROS1_NOETIC)
        writer: Any = Writer1(path)
    else:
        ts = get_typestore(Stores.ROS2_HUMBLE)
        plugin = StoragePlugin.MCAP if kind == "mcap" else StoragePlugin.SQLITE3
        writer = Writer2(path, version=9, storage_plugin=plugin)
    b = Builder(ts)
    out = Written(path)
    with writer:
        conns = {t: writer.add_connection(t, TYPES[t], typestore=ts) for t in topics}
        for log_time, topic, i in schedule(seconds, topics):
            stamp = log_time - LATENCY[topic]
            data = payload(topic, i)
            writer.write(conns[topic], log_time, b.serialize(b.make(topic, stamp, data)))
            out.messages.setdefault(topic, []).append((stamp, log_time, data))
    return out
