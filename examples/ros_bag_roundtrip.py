"""ROS bag in, ROS 2 / Foxglove MCAP out, with no ROS installation.

1. Writes a small ROS 2 bag (MCAP) of a camera, a LiDAR and an IMU with the
   ``rosbags`` library, as a robot's recorder would.
2. Replays it with :class:`adapters.BagSource` through a :class:`fusion.SyncHub`
   (ApproximateTime) and a :class:`fusion.BatchWorker` (an ONNX edge detector
   built in code), recording every group into a ``.hfr`` frame log.
3. Exports the recording to a ROS 2 CDR MCAP (``ros2 bag play``, Foxglove and
   Rerun open it) with a topic of sync-group markers, and to the Foxglove
   profile, then reads the ROS 2 file back with ``rosbags``.

Runs in a few seconds, offline; files go to a temporary folder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import numpy as np

from adapters import BagSource
from fusion import ApproximateTime, BatchWorker, FrameGroup, SyncHub
from fusion.workers._models import sobel_edges
from recordings import Recorder, open_recording
from recordings.outputs import export_recording

MS = 1_000_000
T0 = 1_700_000_000 * 1_000_000_000


def write_ros2_bag(path: Path, seconds: float = 2.0) -> None:
    """A ROS 2 MCAP bag: /camera/image_raw 15 Hz, /points 10 Hz, /imu 100 Hz."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types

    def header(t: int, frame_id: str) -> object:
        stamp = T["builtin_interfaces/msg/Time"](sec=t // 10**9, nanosec=t % 10**9)
        return T["std_msgs/msg/Header"](stamp=stamp, frame_id=frame_id)

    yy, xx = np.mgrid[0:48, 0:64]
    ring = np.zeros(360, [("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])
    angle = np.linspace(0, 2 * np.pi, 360, endpoint=False)
    field = T["sensor_msgs/msg/PointField"]
    V = T["geometry_msgs/msg/Vector3"]
    events = []
    for i in range(int(seconds * 15)):
        events.append((T0 + i * 66_666_667, "cam", i))
    for i in range(int(seconds * 10)):
        events.append((T0 + i * 100 * MS, "lidar", i))
    for i in range(int(seconds * 100)):
        events.append((T0 + i * 10 * MS, "imu", i))
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as bag:
        cam = bag.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=ts)
        pts = bag.add_connection("/points", "sensor_msgs/msg/PointCloud2", typestore=ts)
        imu = bag.add_connection("/imu", "sensor_msgs/msg/Imu", typestore=ts)
        for t, kind, i in sorted(events):
            if kind == "cam":
                image = np.stack([(xx * 4 + i * 3) % 256, yy * 5, np.full_like(xx, 80)], -1)
                msg = T["sensor_msgs/msg/Image"](
                    header=header(t, "camera"), height=48, width=64, encoding="rgb8",
                    is_bigendian=0, step=64 * 3, data=image.astype(np.uint8).reshape(-1),
                )  # fmt: skip
                bag.write(cam, t + 5 * MS, bytes(ts.serialize_cdr(msg, msg.__msgtype__)))
            elif kind == "lidar":
                ring["x"], ring["y"] = 8 * np.cos(angle + i * 0.01), 8 * np.sin(angle + i * 0.01)
                ring["intensity"] = i
                fields = [field(name=n, offset=4 * k, datatype=7, count=1)
                          for k, n in enumerate(ring.dtype.names or ())]  # fmt: skip
                msg = T["sensor_msgs/msg/PointCloud2"](
                    header=header(t, "lidar"), height=1, width=len(ring), fields=fields,
                    is_bigendian=False, point_step=16, row_step=16 * len(ring),
                    data=ring.view(np.uint8).reshape(-1), is_dense=True,
                )  # fmt: skip
                bag.write(pts, t + 2 * MS, bytes(ts.serialize_cdr(msg, msg.__msgtype__)))
            else:
                msg = T["sensor_msgs/msg/Imu"](
                    header=header(t, "imu"),
                    orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0),
                    orientation_covariance=np.zeros(9),
                    angular_velocity=V(x=0.0, y=0.0, z=0.1),
                    angular_velocity_covariance=np.zeros(9),
                    linear_acceleration=V(x=0.2 * np.sin(i / 10), y=0.0, z=9.81),
                    linear_acceleration_covariance=np.zeros(9),
                )
                bag.write(imu, t + MS, bytes(ts.serialize_cdr(msg, msg.__msgtype__)))


async def bag_to_recording(bag: Path, out: Path) -> tuple[int, float]:
    """Bag -> SyncHub -> BatchWorker -> Recorder; returns (groups, mean edge share)."""
    source = BagSource(bag, {"/camera/image_raw": "cam", "/points": "lidar", "/imu": "imu"})
    hub = SyncHub(ApproximateTime(["cam", "lidar", "imu"], queue_size=30))

    def preprocess(groups: list[FrameGroup]) -> np.ndarray:
        images = np.stack([g.frames["cam"].data for g in groups])  # type: ignore[union-attr]
        return images.transpose(0, 3, 1, 2).astype(np.float32) / 255.0

    def postprocess(groups: list[FrameGroup], outputs: list[np.ndarray]) -> list[float]:
        return [float((edges > 0.5).mean()) for edges in outputs[0]]

    worker = BatchWorker(
        sobel_edges(), preprocess=preprocess, postprocess=postprocess, max_batch=8, max_delay=0
    )
    shares = []
    async with (
        worker,
        Recorder(out, sensors=source.specs, metadata={"from_bag": bag.name}) as rec,
        hub.open([source]) as groups,
    ):
        async for result in worker.stream(groups):
            if result.error is None:
                shares.append(result.value)
            for frame in result.item.members():
                await rec.send(frame)
    return len(shares), float(np.mean(shares)) if shares else 0.0


def main() -> None:
    from rosbags.highlevel import AnyReader

    with tempfile.TemporaryDirectory(prefix="hyperframes-ros-") as tmp:
        folder = Path(tmp)
        bag = folder / "drive"
        write_ros2_bag(bag)
        groups, share = anyio.run(bag_to_recording, bag, folder / "drive.hfr")
        with open_recording(folder / "drive.hfr") as log:
            print(f"bag -> hub -> model -> recording: {groups} groups, "
                  f"{log.summary().count} frames, mean edge share {share:.3f}")  # fmt: skip

        ros2 = export_recording(folder / "drive.hfr", folder / "drive_ros2.mcap", to="ros2")
        fox = export_recording(folder / "drive.hfr", folder / "drive_fox.mcap", to="foxglove")
        n_ros2, n_fox = sum(ros2.written.values()), sum(fox.written.values())
        print(f"exported {n_ros2} ROS 2 messages ({ros2.groups} group markers), {n_fox} Foxglove")

        with AnyReader([folder / "drive_ros2.mcap"]) as reader:
            for name, info in sorted(reader.topics.items()):
                print(f"  {name:22} {info.msgtype:38} {info.msgcount:4} messages")


if __name__ == "__main__":
    main()
