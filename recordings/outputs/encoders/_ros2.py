"""The ``ros2`` export profile: a ROS 2 CDR MCAP that ``ros2 bag play``, Foxglove and Rerun open.

Theory of operation. A frame that came from a bag with its original message
(:mod:`adapters.ros._passthrough`) is written as that message: on its
original topic, with its type and the type's stored definition as the
schema, its bytes unchanged (ROS 2 bags) or converted to CDR (ROS 1 bags),
header stamps and all. Every other sensor becomes a topic (``/<sensor>``)
whose type is chosen from the payload (:mod:`recordings.outputs.encoders._kinds`):

==============  ========================================
payload         ROS 2 type
==============  ========================================
image           ``sensor_msgs/msg/Image`` (encoding from dtype and channels)
encoded_image   ``sensor_msgs/msg/CompressedImage``
video           ``foxglove_msgs/msg/CompressedVideo`` (recorded packets, not re-encoded)
points          ``sensor_msgs/msg/PointCloud2`` (the array's bytes, fields by name)
imu             ``sensor_msgs/msg/Imu``
gnss            ``sensor_msgs/msg/NavSatFix``
odometry        ``nav_msgs/msg/Odometry``
pose            ``geometry_msgs/msg/PoseStamped``
record          ``hyperframes_msgs/msg/<Sensor>Record``, made for the sensor
                (every key, strings included: :mod:`recordings.outputs.encoders._generic`)
series          ``std_msgs/msg/Float64MultiArray`` (one dimension per field, labelled)
CAN (raw)       ``can_msgs/msg/Frame``, one per CAN frame (:mod:`recordings.outputs.encoders._can`)
CAN (signals)   ``hyperframes_msgs/msg/<Sensor>Record``, one per CAN frame, a typed field
                per signal
audio           ``audio_common_msgs/msg/AudioDataStamped`` (an ``audio`` sensor's float32
                samples interleaved, ``F32LE``), its ``AudioInfo`` once on
                ``/<sensor>/audio_info`` (:data:`AUDIO_MSGDEFS`)
==============  ========================================

A structured array (a time series) is ``imu``, ``gnss``, ``odometry`` or
``pose`` when its field names fit (:mod:`recordings.outputs.encoders._shapes`), one
message per row with its own stamp; ``types=`` (``--type SENSOR=TYPE``)
forces a sensor's type.

Messages are serialised with ``rosbags`` (CDR, the Humble type definitions)
and written with the ``mcap`` package: profile ``ros2``, schemas in
``ros2msg`` encoding with their full dependency text, channels carrying
``offered_qos_profiles`` and the type hash, and the ``rosbag2`` metadata
record rosbag2's MCAP plugin reads, so the bare file plays without a
``metadata.yaml``. When the output path has no ``.mcap`` suffix a bag
directory is written instead (``OUT/OUT.mcap`` plus ``OUT/metadata.yaml``).

``header.stamp`` is the frame's ``t`` (the reference clock the hub aligned
sensors to, so a viewer lines them up); the MCAP log time is ``t_arrival``
(``t`` when unknown), as a ROS recorder would have logged it. Sync groups go
to ``/hyperframes/groups`` as ``diagnostic_msgs/msg/DiagnosticArray``, one
status per group whose values list each member's ``seq@t``, the spread and the
missing sensors: a standard type, so ``ros2 bag play`` needs no custom package.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from adapters.ros import encoding_for, pointcloud2_fields
from fusion import Frame, FrameGroup, SensorSpec
from recordings.outputs.encoders._can import (
    CAN_FRAME_MSGDEF,
    CAN_FRAME_TYPE,
    can_kind,
    frame_rows,
    signal_rows,
)
from recordings.outputs.encoders._generic import RecordLayout
from recordings.outputs.encoders._groups import GROUP_TOPIC, group_record
from recordings.outputs.encoders._kinds import (
    classify,
    image_format,
    is_internal,
    series_values,
    typed_shape,
)
from recordings.outputs.encoders._sensors import SensorMap
from recordings.outputs.encoders._shapes import Shape, ellipsoid_altitude, navsat_status
from recordings.outputs.files._audio import is_audio

_VIDEO_MSGDEF = """builtin_interfaces/Time timestamp
string frame_id
uint8[] data
string format
"""

AUDIO_MSGDEFS = {
    "audio_common_msgs/msg/AudioData": "uint8[] data\n",
    "audio_common_msgs/msg/AudioInfo": (
        "uint8 channels\nuint32 sample_rate\nstring sample_format\nuint32 bitrate\n"
        "string coding_format\n"
    ),
    "audio_common_msgs/msg/AudioDataStamped": (
        "std_msgs/Header header\naudio_common_msgs/AudioData audio\n"
    ),
}
"""``audio_common_msgs`` as ros-drivers/audio_common's ROS 2 branch (Humble on) defines them."""

TYPES = {
    "image": "sensor_msgs/msg/Image",
    "encoded_image": "sensor_msgs/msg/CompressedImage",
    "video": "foxglove_msgs/msg/CompressedVideo",
    "points": "sensor_msgs/msg/PointCloud2",
    "imu": "sensor_msgs/msg/Imu",
    "gnss": "sensor_msgs/msg/NavSatFix",
    "odometry": "nav_msgs/msg/Odometry",
    "pose": "geometry_msgs/msg/PoseStamped",
    "series": "std_msgs/msg/Float64MultiArray",
    "group": "diagnostic_msgs/msg/DiagnosticArray",
    "audio": "audio_common_msgs/msg/AudioDataStamped",
    "audio_info": "audio_common_msgs/msg/AudioInfo",
}
"""ROS 2 message type written for each payload kind (and for sync groups)."""

_TYPED = ("imu", "gnss", "odometry", "pose")


def ros2_typestore() -> Any:
    """The Humble type store plus ``foxglove_msgs/msg/CompressedVideo`` and
    ``audio_common_msgs`` (:data:`AUDIO_MSGDEFS`)."""
    from adapters.ros import fresh_type_store, register_msg

    store = fresh_type_store("humble")
    register_msg(store, TYPES["video"], _VIDEO_MSGDEF)
    for name, msgdef in AUDIO_MSGDEFS.items():
        register_msg(store, name, msgdef)
    if CAN_FRAME_TYPE not in store.types:
        register_msg(store, CAN_FRAME_TYPE, CAN_FRAME_MSGDEF)
    return store


class Ros2Messages:
    """Frames and groups as ROS 2 messages, to whatever output a subclass writes them.

    The encoding of the ``ros2`` profile, shared by the MCAP writer
    (:class:`Ros2McapWriter`) and the live DDS publisher
    (:class:`~recordings.outputs.live._ros2_publisher.Ros2Publisher`): a subclass
    implements :meth:`_channel` (a topic with its type, opened once) and
    :meth:`_add` (one serialised message on it). ``declare(spec)`` tells it a
    sensor's spec (what makes a bag's frames go out as their original
    messages); ``write(frame)`` returns whether it wrote the frame; frames it
    cannot map are counted in :attr:`skipped` by ``(sensor, reason)``.
    """

    def __init__(self, *, topic_prefix: str = "/", types: Mapping[str, str] | None = None) -> None:
        self.prefix = topic_prefix
        self.store = ros2_typestore()
        self.sensors = SensorMap(topic_prefix, types)
        self._records: dict[str, RecordLayout] = {}
        self._audio_info: set[str] = set()
        self.counts: Counter[str] = Counter()
        """Messages written per topic."""
        self.frames: Counter[str] = Counter()
        """Frames written per sensor."""
        self.skipped: Counter[tuple[str, str]] = Counter()
        """Frames not written, by ``(sensor, reason)``."""
        self.generic: dict[str, str] = {}
        """Sensors written with a type made for them (``record`` payloads), and that type."""
        self.notes = self.sensors.notes
        """Things the export could not do as asked, one line each."""

    # -- output (a subclass's) ------------------------------------------------------------

    def _channel(
        self,
        topic: str,
        msgtype: str,
        msgdef: str | None = None,
        type_hash: str | None = None,
        store: Any = None,
    ) -> Any:
        """The output's handle of ``topic`` carrying ``msgtype`` (defined in ``store``, else
        in :attr:`store`), opened on first use."""
        raise NotImplementedError

    def _add(self, channel: Any, topic: str, data: bytes, log_time: int, seq: int) -> None:
        """Write one message's CDR ``data`` on ``channel`` and count it."""
        raise NotImplementedError

    # -- sensors ------------------------------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Know ``spec``: a sensor from a bag keeps its topic and its messages' type."""
        self.sensors.declare(spec)

    def declare_video(self, sensor: str, key_meta: dict[str, Any]) -> None:
        """Know a video sensor's codec before its first key packet (a window's start)."""
        self.sensors.declare_video(sensor, key_meta)

    def topic_for(self, sensor: str) -> str:
        """``/<sensor>``, or the original topic of a sensor that came from a bag."""
        return self.sensors.topic_for(sensor)

    # -- writing ------------------------------------------------------------------------

    def write(self, frame: Frame, sensor_kind: str | None = None) -> bool:
        """Write one frame as a ROS 2 message; ``False`` if skipped (and counted)."""
        if is_internal(frame.sensor):
            return False
        log_time = frame.t if frame.t_arrival is None else frame.t_arrival
        original = self.sensors.original_cdr(frame, self.skipped)
        if original is not None:
            ptype, data = original
            if data is None:
                return False
            topic = self.topic_for(frame.sensor)
            channel = self._channel(topic, ptype.name, ptype.msgdef, ptype.type_hash, ptype.store)
            self._add(channel, topic, data, log_time, frame.seq)
            self.frames[frame.sensor] += 1
            return True
        sensor_kind = self.sensors.kind(frame.sensor, sensor_kind)
        if is_audio(frame, sensor_kind):
            return self._write_audio(frame, log_time)
        forced = self.sensors.forced(frame.sensor)
        can = can_kind(frame.data, sensor_kind) if forced is None else None
        if can is not None:
            return self._write_can(frame, can, log_time)
        kind = classify(frame, sensor_kind, forced)
        if kind == "record":
            return self._write_record(frame, log_time)
        if kind in _TYPED and isinstance(frame.data, np.ndarray):
            return self._write_rows(frame, sensor_kind, forced, log_time)
        if kind not in TYPES:
            self.skipped[(frame.sensor, kind)] += 1
            return False
        msg = self._message(kind, frame)
        if msg is None:
            return False
        if kind == "video":
            log_time = self.sensors.video_log_time(frame.sensor, log_time)
        self._emit(self.topic_for(frame.sensor), TYPES[kind], msg, log_time, frame.seq)
        self.frames[frame.sensor] += 1
        return True

    def _write_rows(
        self, frame: Frame, sensor_kind: str, forced: str | None, log_time: int
    ) -> bool:
        """A time series as typed messages, one per row (:mod:`._shapes`)."""
        shape = typed_shape(frame.data.dtype.names, sensor_kind, forced)
        assert isinstance(shape, Shape)
        topic, msgtype = self.topic_for(frame.sensor), TYPES[shape.kind]
        frame_id = str(frame.meta.get("frame_id", frame.sensor))
        for stamp, values in shape.rows(frame.data, frame.t):
            msg = self._typed(shape.kind, self._header(stamp, frame_id), values)
            self._emit(topic, msgtype, msg, log_time + stamp - frame.t, frame.seq)
        self.frames[frame.sensor] += 1
        return True

    def _write_can(self, frame: Frame, kind: str, log_time: int) -> bool:
        """A CAN sensor's rows, one message each (:mod:`._can`): raw frames
        as ``can_msgs/msg/Frame``, decoded signals as the sensor's typed record."""
        topic = self.topic_for(frame.sensor)
        frame_id = str(frame.meta.get("frame_id", frame.sensor))
        written = 0
        if kind == "can_frame":
            T = self.store.types
            for stamp, fields in frame_rows(frame.data, frame.t):
                if isinstance(fields, str):
                    self.skipped[(frame.sensor, fields)] += 1
                    continue
                msg = T[CAN_FRAME_TYPE](header=self._header(stamp, frame_id), **fields)
                self._emit(topic, CAN_FRAME_TYPE, msg, log_time + stamp - frame.t, frame.seq)
                written += 1
        else:
            before = self.frames[frame.sensor]
            for stamp, values in signal_rows(frame.data, frame.t):
                row = dataclasses.replace(frame, t=stamp, data=values)
                written += self._write_record(row, log_time + stamp - frame.t)
            self.frames[frame.sensor] = before
        if written:
            self.frames[frame.sensor] += 1
        return written > 0

    def _write_audio(self, frame: Frame, log_time: int) -> bool:
        """An audio frame as ``AudioDataStamped`` (float32 samples interleaved, ``F32LE``);
        the sensor's ``AudioInfo`` on ``<topic>/audio_info`` before its first frame."""
        T = self.store.types
        pcm = np.ascontiguousarray(frame.data, np.float32)
        rate, channels = int(frame.meta["rate"]), pcm.shape[0]
        topic = self.topic_for(frame.sensor)
        if frame.sensor not in self._audio_info:
            self._audio_info.add(frame.sensor)
            info = T[TYPES["audio_info"]](
                channels=channels,
                sample_rate=rate,
                sample_format="F32LE",
                bitrate=rate * channels * 32,
                coding_format="wave",
            )
            self._emit(f"{topic}/audio_info", TYPES["audio_info"], info, log_time, 0)
        data = pcm.T.reshape(-1).astype("<f4").view(np.uint8)
        header = self._header(frame.t, str(frame.meta.get("frame_id", frame.sensor)))
        msg = T[TYPES["audio"]](
            header=header, audio=T["audio_common_msgs/msg/AudioData"](data=data)
        )
        self._emit(topic, TYPES["audio"], msg, log_time, frame.seq)
        self.frames[frame.sensor] += 1
        return True

    def _typed(self, kind: str, header: Any, values: Mapping[str, Any]) -> Any:
        T = self.store.types
        if kind == "imu":
            return self._imu(header, dict(values))
        if kind == "gnss":
            fix = {
                "latitude": values["lat"][0],
                "longitude": values["lon"][0],
                "altitude": ellipsoid_altitude(values),
                "status": navsat_status(values),
            }
            return self._navsatfix(header, fix)
        if kind == "pose":
            return T[TYPES["pose"]](header=header, pose=pose_message(T, values))
        return odometry_message(T, header, values)

    def _write_record(self, frame: Frame, log_time: int) -> bool:
        layout = self._records.get(frame.sensor)
        if layout is None:
            from adapters.ros import register_msg

            try:
                layout = RecordLayout.from_data(frame.sensor, frame.data)
                register_msg(self.store, layout.msgtype, layout.msgdef())
            except Exception as err:  # a key rosbags refuses as a field name
                self.skipped[(frame.sensor, f"no ROS 2 type fits its dict: {err}")] += 1
                return False
            self._records[frame.sensor] = layout
            self.generic[frame.sensor] = layout.msgtype
        why = layout.mismatch(frame.data)
        if why is not None:
            self.skipped[(frame.sensor, why)] += 1
            return False
        header = self._header(frame.t, str(frame.meta.get("frame_id", frame.sensor)))
        msg = layout.message(self.store.types[layout.msgtype], header, frame.data)
        self._emit(self.topic_for(frame.sensor), layout.msgtype, msg, log_time, frame.seq)
        self.frames[frame.sensor] += 1
        return True

    def write_group(self, group: FrameGroup) -> None:
        """Write one sync group as a marker on :data:`GROUP_TOPIC`."""
        T = self.store.types
        record = group_record(group)
        values = [T["diagnostic_msgs/msg/KeyValue"](key=k, value=v) for k, v in record.items()]
        status = T["diagnostic_msgs/msg/DiagnosticStatus"](
            level=0,
            name="hyperframes/group",
            message=f"{len(group.members())} frames, spread {group.spread} ns",
            hardware_id="",
            values=values,
        )
        msg = T[TYPES["group"]](header=self._header(group.t, "hyperframes"), status=[status])
        self._emit(GROUP_TOPIC, TYPES["group"], msg, group.t, 0)

    def _emit(self, topic: str, msgtype: str, msg: Any, log_time: int, seq: int) -> None:
        channel = self._channel(topic, msgtype)
        data = self.store.serialize_cdr(msg, msgtype)
        self._add(channel, topic, bytes(data), log_time, seq)

    def _header(self, t: int, frame_id: str) -> Any:
        T = self.store.types
        stamp = T["builtin_interfaces/msg/Time"](sec=t // 1_000_000_000, nanosec=t % 1_000_000_000)
        return T["std_msgs/msg/Header"](stamp=stamp, frame_id=frame_id)

    def _message(self, kind: str, frame: Frame) -> Any:
        T = self.store.types
        data = frame.data
        frame_id = str(frame.meta.get("frame_id", frame.sensor))
        header = self._header(frame.t, frame_id)
        if kind == "image":
            image = np.ascontiguousarray(data)
            height, width = image.shape[:2]
            return T[TYPES["image"]](
                header=header,
                height=height,
                width=width,
                encoding=str(frame.meta.get("encoding") or encoding_for(image)),
                is_bigendian=0,
                step=image.strides[0],
                data=image.reshape(-1).view(np.uint8),
            )
        if kind == "encoded_image":
            return T[TYPES["encoded_image"]](
                header=header, format=image_format(frame), data=np.frombuffer(data, np.uint8)
            )
        if kind == "video":
            payload, fmt = self.sensors.video_payload(frame, self.skipped)
            if payload is None:
                return None
            return T[TYPES["video"]](
                timestamp=header.stamp,
                frame_id=frame_id,
                data=np.frombuffer(payload, np.uint8),
                format=fmt,
            )
        if kind == "points":
            return self._pointcloud(header, np.ascontiguousarray(data))
        if kind == "imu":
            return self._imu(header, data)
        if kind == "gnss":
            return self._navsatfix(header, data)
        return self._series(data)

    def _pointcloud(self, header: Any, points: np.ndarray) -> Any:
        T = self.store.types
        fields, step = pointcloud2_fields(points)
        return T[TYPES["points"]](
            header=header,
            height=1,
            width=len(points),
            fields=[
                T["sensor_msgs/msg/PointField"](name=n, offset=o, datatype=d, count=c)
                for n, o, d, c in fields
            ],
            is_bigendian=False,
            point_step=step,
            row_step=step * len(points),
            data=points.view(np.uint8).reshape(-1),
            is_dense=False,
        )

    def _imu(self, header: Any, data: dict[str, Any]) -> Any:
        T = self.store.types
        V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
        a = np.asarray(data["accel"], np.float64).reshape(-1)
        g = np.asarray(data["gyro"], np.float64).reshape(-1)
        q = np.asarray(data.get("orientation", (0.0, 0.0, 0.0, 1.0)), np.float64).reshape(-1)
        unknown = np.zeros(9)
        unknown[0] = -1.0  # REP 145: orientation not provided
        return T[TYPES["imu"]](
            header=header,
            orientation=Q(x=q[0], y=q[1], z=q[2], w=q[3]),
            orientation_covariance=_cov(data, "orientation_covariance")
            if "orientation" in data
            else unknown,
            angular_velocity=V(x=g[0], y=g[1], z=g[2]),
            angular_velocity_covariance=_cov(data, "gyro_covariance"),
            linear_acceleration=V(x=a[0], y=a[1], z=a[2]),
            linear_acceleration_covariance=_cov(data, "accel_covariance"),
        )

    def _navsatfix(self, header: Any, data: dict[str, Any]) -> Any:
        T = self.store.types
        status = T["sensor_msgs/msg/NavSatStatus"](
            status=int(data.get("status", 0)), service=int(data.get("service", 1))
        )
        return T[TYPES["gnss"]](
            header=header,
            status=status,
            latitude=float(data["latitude"]),
            longitude=float(data["longitude"]),
            altitude=float(data.get("altitude", np.nan)),
            position_covariance=_cov(data, "position_covariance"),
            position_covariance_type=int(data.get("covariance_type", 0)),
        )

    def _series(self, data: Any) -> Any:
        T = self.store.types
        dims, parts = [], []
        for name, values in series_values(data):
            dims.append(
                T["std_msgs/msg/MultiArrayDimension"](label=name, size=values.size, stride=1)
            )
            parts.append(values)
        layout = T["std_msgs/msg/MultiArrayLayout"](dim=dims, data_offset=0)
        flat = np.concatenate(parts) if parts else np.empty(0)
        return T[TYPES["series"]](layout=layout, data=flat)


def pose_message(T: Any, values: Mapping[str, Any]) -> Any:
    """``geometry_msgs/msg/Pose`` of a typed row's position and (x, y, z, w) orientation."""
    p, q = values["position"], values["orientation"]
    return T["geometry_msgs/msg/Pose"](
        position=T["geometry_msgs/msg/Point"](x=p[0], y=p[1], z=p[2]),
        orientation=T["geometry_msgs/msg/Quaternion"](x=q[0], y=q[1], z=q[2], w=q[3]),
    )


def odometry_message(T: Any, header: Any, values: Mapping[str, Any]) -> Any:
    """``nav_msgs/msg/Odometry`` of a typed row (angular velocity 0 when it has none;
    covariances unknown: zeros)."""
    V = T["geometry_msgs/msg/Vector3"]
    v, w = values["velocity"], values.get("gyro", np.zeros(3))
    twist = T["geometry_msgs/msg/Twist"](
        linear=V(x=v[0], y=v[1], z=v[2]), angular=V(x=w[0], y=w[1], z=w[2])
    )
    return T[TYPES["odometry"]](
        header=header,
        child_frame_id="",
        pose=T["geometry_msgs/msg/PoseWithCovariance"](
            pose=pose_message(T, values), covariance=np.zeros(36)
        ),
        twist=T["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=np.zeros(36)),
    )


def _cov(data: dict[str, Any], key: str, default: np.ndarray | None = None) -> np.ndarray:
    value = data.get(key)
    if value is None:
        return np.zeros(9) if default is None else default
    return np.asarray(value, np.float64).reshape(-1)[:9]
