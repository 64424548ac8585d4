"""The ``foxglove`` export profile: Foxglove schemas written with the ``foxglove-sdk`` package.

A frame that came from a bag with its original message
(:mod:`adapters.ros._passthrough`) is written as that message, in ROS 2 CDR
with its ``ros2msg`` schema, on its original topic, exactly as in the ``ros2``
profile (Foxglove reads those natively). Every other frame:

==============  =====================================================
payload         Foxglove message (protobuf) or JSON channel
==============  =====================================================
image           ``foxglove.RawImage``
encoded_image   ``foxglove.CompressedImage``
video           ``foxglove_msgs/msg/CompressedVideo`` in ROS 2 CDR, as in the ``ros2``
                profile (recorded packets, not re-encoded)
points          ``foxglove.PointCloud`` (the array's bytes, one field per column)
gnss            ``foxglove.LocationFix``
pose            ``foxglove.PoseInFrame``
odometry        ``nav_msgs/msg/Odometry`` in ROS 2 CDR (Foxglove has no odometry
                schema; it reads this one natively)
imu, series     JSON with a JSON schema, one number (or array) per field: Plot-panel ready
CAN             JSON, one message per CAN frame: raw frames (id, flags, dlc, channel, data
                bytes) or decoded signals (one number per signal; :mod:`._can`)
record          JSON with a JSON schema listing every key, strings included
==============  =====================================================

Time series whose fields fit a standard shape (:mod:`recordings.outputs.encoders._shapes`)
are written one message per row as the kind they fit: an IMU's rows as
``accel``/``gyro`` (``orientation``) JSON records, like a bag's IMU.

``timestamp`` is the frame's ``t``, the MCAP log time its ``t_arrival``
(``t`` when unknown), as in the ``ros2`` profile. Groups go to
``/hyperframes/groups`` as JSON (:data:`~recordings.outputs.encoders._groups.GROUP_JSON_SCHEMA`).
The writer uses its own ``foxglove.Context``, so it never logs to (or
receives from) channels a user opened on the SDK's global context. Given a
``context`` and no path it writes no file: its channels go to whatever that
context feeds (the live WebSocket server, :mod:`recordings.outputs.live._foxglove_server`), so a
live view and an export carry the same channels, schemas and messages.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from adapters.ros import encoding_for
from fusion import Frame, FrameGroup, SensorSpec
from recordings.outputs.encoders._can import (
    CAN_FRAME_JSON_SCHEMA,
    can_kind,
    frame_json,
    frame_rows,
    signal_rows,
)
from recordings.outputs.encoders._generic import js_safe, json_record, json_schema, json_value
from recordings.outputs.encoders._groups import GROUP_JSON_SCHEMA, GROUP_TOPIC, group_json
from recordings.outputs.encoders._kinds import (
    classify,
    image_format,
    is_internal,
    series_values,
    typed_shape,
)
from recordings.outputs.encoders._ros2 import TYPES, odometry_message, ros2_typestore
from recordings.outputs.encoders._sensors import SensorMap, one_type_per_topic
from recordings.outputs.encoders._shapes import Shape, ellipsoid_altitude

VIDEO_TYPE = TYPES["video"]

_NUMERIC = {"u1": "Uint8", "i1": "Int8", "u2": "Uint16", "i2": "Int16", "u4": "Uint32"}
_NUMERIC |= {"i4": "Int32", "f4": "Float32", "f8": "Float64"}


# long: one encoder per Foxglove schema (images, point clouds, IMU, GNSS, radar, series) over one
#   MCAP writer
class FoxgloveMcapWriter:
    """Writes frames and groups as Foxglove messages into one MCAP file.

    ``path=None`` with a ``context`` writes no file: the messages go to that
    context's sinks (a WebSocket server) only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        topic_prefix: str = "/",
        types: Mapping[str, str] | None = None,
        context: Any = None,
    ) -> None:
        import foxglove
        from foxglove.mcap import MCAPWriteOptions

        self.path = None if path is None else Path(path)
        self.prefix = topic_prefix
        self._fg = foxglove
        self._context = foxglove.Context() if context is None else context
        self._writer = None
        if self.path is not None:
            self._writer = foxglove.open_mcap(
                self.path,
                allow_overwrite=True,
                context=self._context,
                writer_options=MCAPWriteOptions(profile=""),
            )
        self._channels: dict[str, tuple[Any, str]] = {}
        self.sensors = SensorMap(topic_prefix, types)
        self.counts: Counter[str] = Counter()
        """Messages written per topic."""
        self.frames: Counter[str] = Counter()
        """Frames written per sensor."""
        self.skipped: Counter[tuple[str, str]] = Counter()
        """Frames not written, by ``(sensor, reason)``."""
        self.generic: dict[str, str] = {}
        """Sensors written with a schema made for them (``record`` payloads), and its title."""
        self.notes = self.sensors.notes
        """Things the export could not do as asked, one line each."""
        self._ros2: Any = None
        self._closed = False

    def declare(self, spec: SensorSpec) -> None:
        """Know ``spec``: a sensor from a bag keeps its topic and its messages' type."""
        self.sensors.declare(spec)

    def declare_video(self, sensor: str, key_meta: dict[str, Any]) -> None:
        """Know a video sensor's codec before its first key packet (a window's start)."""
        self.sensors.declare_video(sensor, key_meta)

    def topic_for(self, sensor: str) -> str:
        """``/<sensor>``, or the original topic of a sensor that came from a bag."""
        return self.sensors.topic_for(sensor)

    def unwatched(self, topic: str) -> bool:
        """Whether ``topic``'s channel exists and no sink takes its messages (a live
        server nobody subscribed to): encoding a frame for it would be wasted work."""
        known = self._channels.get(topic)
        return known is not None and not known[0].has_sinks()

    def _ros_channel(self, topic: str, msgtype: str, msgdef: str) -> Any:
        """A ROS 2 CDR channel with a ``ros2msg`` schema (Foxglove reads those natively)."""
        known = self._channels.get(topic)
        if known is not None:
            one_type_per_topic(topic, known[1], msgtype)
            return known[0]
        schema = self._fg.Schema(name=msgtype, encoding="ros2msg", data=msgdef.encode())
        channel = self._fg.Channel(
            topic, schema=schema, message_encoding="cdr", context=self._context
        )
        self._channels[topic] = (channel, msgtype)
        return channel

    def _video_cdr(self, frame: Frame) -> bytes | None:
        """A video frame as ``foxglove_msgs/msg/CompressedVideo`` CDR, as in the ros2 profile."""
        payload, fmt = self.sensors.video_payload(frame, self.skipped)
        if payload is None:
            return None
        if self._ros2 is None:
            self._ros2 = ros2_typestore()
        T, t = self._ros2.types, frame.t
        msg = T[VIDEO_TYPE](
            timestamp=T["builtin_interfaces/msg/Time"](
                sec=t // 1_000_000_000, nanosec=t % 1_000_000_000
            ),
            frame_id=str(frame.meta.get("frame_id", frame.sensor)),
            data=np.frombuffer(payload, np.uint8),
            format=fmt,
        )
        return bytes(self._ros2.serialize_cdr(msg, VIDEO_TYPE))

    def _channel(self, topic: str, kind: str, schema: dict[str, Any] | None = None) -> Any:
        known = self._channels.get(topic)
        if known is not None:
            one_type_per_topic(topic, f"{known[1]} payloads", f"{kind} payloads")
            return known[0]
        from foxglove import channels

        classes = {
            "image": channels.RawImageChannel,
            "encoded_image": channels.CompressedImageChannel,
            "points": channels.PointCloudChannel,
            "gnss": channels.LocationFixChannel,
            "pose": channels.PoseInFrameChannel,
        }
        if kind in classes:
            channel = classes[kind](topic, context=self._context)
        else:
            fg_schema = self._fg.Schema(
                name=str((schema or {}).get("title", kind)),
                encoding="jsonschema",
                data=json.dumps(schema or {"type": "object"}).encode(),
            )
            channel = self._fg.Channel(
                topic, schema=fg_schema, message_encoding="json", context=self._context
            )
        self._channels[topic] = (channel, kind)
        return channel

    def advertise(self, sensor: str) -> bool:
        """Open ``sensor``'s channel before its first frame when its schema is known without
        one (a bag's original message type): the live view advertises it at once, so a
        client can subscribe before the first message. ``False`` if it is not known."""
        ptype = self.sensors.passthrough.get(sensor)
        if ptype is None:
            return False
        self._ros_channel(self.topic_for(sensor), ptype.name, ptype.msgdef)
        return True

    def write(self, frame: Frame, sensor_kind: str | None = None) -> bool:
        """Write one frame on its topic; ``False`` (and counted) if it has no mapping."""
        if is_internal(frame.sensor):
            return False
        log_time = frame.t if frame.t_arrival is None else frame.t_arrival
        original = self.sensors.original_cdr(frame, self.skipped)
        if original is not None:
            ptype, data = original
            if data is None:
                return False
            topic = self.topic_for(frame.sensor)
            self._ros_channel(topic, ptype.name, ptype.msgdef).log(data, log_time=log_time)
            self.counts[topic] += 1
            self.frames[frame.sensor] += 1
            return True
        sensor_kind = self.sensors.kind(frame.sensor, sensor_kind)
        forced = self.sensors.forced(frame.sensor)
        can = can_kind(frame.data, sensor_kind) if forced is None else None
        if can is not None:
            return self._write_can(frame, can, log_time)
        kind = classify(frame, sensor_kind, forced)
        if kind not in (
            "image",
            "encoded_image",
            "video",
            "points",
            "gnss",
            "imu",
            "odometry",
            "pose",
            "series",
            "record",
        ):
            self.skipped[(frame.sensor, kind)] += 1
            return False
        topic = self.topic_for(frame.sensor)
        if kind in ("imu", "gnss", "odometry", "pose") and isinstance(frame.data, np.ndarray):
            self._write_rows(frame, topic, sensor_kind, forced, log_time)
            self.frames[frame.sensor] += 1
            return True
        if kind == "record":
            record = json_record(frame.t, frame.data)
            title = f"hyperframes.{frame.sensor}"
            self._channel(topic, kind, json_schema(title, record)).log(record, log_time=log_time)
            self.generic[frame.sensor] = title
        elif kind == "video":
            cdr = self._video_cdr(frame)
            if cdr is None:
                return False
            log_time = self.sensors.video_log_time(frame.sensor, log_time)
            assert self._ros2 is not None
            msgdef = self._ros2.generate_msgdef(VIDEO_TYPE, ros_version=2)[0]
            self._ros_channel(topic, VIDEO_TYPE, msgdef).log(cdr, log_time=log_time)
        elif kind in ("imu", "series"):
            record = self._json_record(frame)
            schema = _json_schema(f"hyperframes.{kind}", record)
            self._channel(topic, kind, schema).log(record, log_time=log_time)
        else:
            points = None
            if kind == "points":
                points = np.ascontiguousarray(frame.data)
            msg = self._message(kind, frame, points)
            if msg is None:
                if kind == "points":
                    self.skipped[(frame.sensor, "point array without numeric fields")] += 1
                return False
            self._channel(topic, kind).log(msg, log_time=log_time)
        self.counts[topic] += 1
        self.frames[frame.sensor] += 1
        return True

    def _write_can(self, frame: Frame, kind: str, log_time: int) -> bool:
        """A CAN sensor's rows as JSON, one message each (:mod:`._can`)."""
        topic = self.topic_for(frame.sensor)
        rows = frame.data
        written = 0
        if kind == "can_frame":
            channel = self._channel(topic, "can_frame", CAN_FRAME_JSON_SCHEMA)
            for k, (stamp, fields) in enumerate(frame_rows(rows, frame.t)):
                if isinstance(fields, str):
                    self.skipped[(frame.sensor, fields)] += 1
                    continue
                channel.log(frame_json(stamp, fields, rows, k), log_time=log_time + stamp - frame.t)
                written += 1
        else:
            channel = None
            for stamp, values in signal_rows(rows, frame.t):
                record: dict[str, Any] = {
                    "timestamp": {"sec": stamp // 1_000_000_000, "nsec": stamp % 1_000_000_000}
                }
                for name, value in values.items():
                    number = value.item()
                    record[name] = None if number != number else js_safe(number)  # NaN: absent
                if channel is None:
                    schema = _json_schema(f"hyperframes.{frame.sensor}", record)
                    channel = self._channel(topic, "can_signals", schema)
                channel.log(record, log_time=log_time + stamp - frame.t)
                written += 1
        self.counts[topic] += written
        if written:
            self.frames[frame.sensor] += 1
        return written > 0

    def _write_rows(
        self, frame: Frame, topic: str, sensor_kind: str, forced: str | None, log_time: int
    ) -> None:
        """A time series as typed messages, one per row (:mod:`._shapes`)."""
        from foxglove import messages as m

        shape = typed_shape(frame.data.dtype.names, sensor_kind, forced)
        assert isinstance(shape, Shape)
        frame_id = str(frame.meta.get("frame_id", frame.sensor))
        for t, values in shape.rows(frame.data, frame.t):
            at = log_time + t - frame.t
            stamp = m.Timestamp(t // 1_000_000_000, t % 1_000_000_000)
            if shape.kind == "imu":
                record: dict[str, Any] = {"timestamp": {"sec": stamp.sec, "nsec": stamp.nsec}}
                for key in ("accel", "gyro", "orientation"):
                    if key in values:
                        record[key] = values[key].tolist()
                schema = _json_schema("hyperframes.imu", record)
                self._channel(topic, "imu", schema).log(record, log_time=at)
            elif shape.kind == "gnss":
                fix = m.LocationFix(
                    timestamp=stamp,
                    frame_id=frame_id,
                    latitude=float(values["lat"][0]),
                    longitude=float(values["lon"][0]),
                    altitude=ellipsoid_altitude(values),
                )
                self._channel(topic, "gnss").log(fix, log_time=at)
            elif shape.kind == "pose":
                p, q = values["position"], values["orientation"]
                pose = m.PoseInFrame(
                    timestamp=stamp,
                    frame_id=frame_id,
                    pose=m.Pose(
                        position=m.Vector3(x=p[0], y=p[1], z=p[2]),
                        orientation=m.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
                    ),
                )
                self._channel(topic, "pose").log(pose, log_time=at)
            else:
                self._log_odometry(topic, t, frame_id, values, at)
            self.counts[topic] += 1

    def _log_odometry(
        self, topic: str, t: int, frame_id: str, values: dict[str, Any], at: int
    ) -> None:
        if self._ros2 is None:
            self._ros2 = ros2_typestore()
        T, msgtype = self._ros2.types, TYPES["odometry"]
        header = T["std_msgs/msg/Header"](
            stamp=T["builtin_interfaces/msg/Time"](
                sec=t // 1_000_000_000, nanosec=t % 1_000_000_000
            ),
            frame_id=frame_id,
        )
        cdr = bytes(self._ros2.serialize_cdr(odometry_message(T, header, values), msgtype))
        msgdef = self._ros2.generate_msgdef(msgtype, ros_version=2)[0]
        self._ros_channel(topic, msgtype, msgdef).log(cdr, log_time=at)

    def write_group(self, group: FrameGroup) -> None:
        """Write one sync group as a JSON marker on :data:`GROUP_TOPIC`."""
        channel = self._channel(GROUP_TOPIC, "group", GROUP_JSON_SCHEMA)
        channel.log(group_json(group), log_time=group.t)
        self.counts[GROUP_TOPIC] += 1

    def _message(self, kind: str, frame: Frame, points: np.ndarray | None) -> Any:
        from foxglove import messages as m

        t = frame.t
        stamp = m.Timestamp(t // 1_000_000_000, t % 1_000_000_000)
        frame_id = str(frame.meta.get("frame_id", frame.sensor))
        data = frame.data
        if kind == "image":
            image = np.ascontiguousarray(data)
            return m.RawImage(
                timestamp=stamp,
                frame_id=frame_id,
                width=image.shape[1],
                height=image.shape[0],
                encoding=str(frame.meta.get("encoding") or encoding_for(image)),
                step=image.strides[0],
                data=image.tobytes(),
            )
        if kind == "encoded_image":
            return m.CompressedImage(
                timestamp=stamp, frame_id=frame_id, data=bytes(data), format=image_format(frame)
            )
        if kind == "gnss":
            return m.LocationFix(
                timestamp=stamp,
                frame_id=frame_id,
                latitude=float(data["latitude"]),
                longitude=float(data["longitude"]),
                altitude=float(data.get("altitude", 0.0)),
            )
        assert points is not None
        fields = []
        for name in points.dtype.names or ():
            sub, offset = points.dtype.fields[name][:2]  # type: ignore[index]
            numeric = _NUMERIC.get(sub.str[1:]) if sub.subdtype is None else None
            if numeric is not None and sub.byteorder != ">":
                numeric_type = getattr(m.PackedElementFieldNumericType, numeric)
                fields.append(
                    m.PackedElementField(name=name, offset=int(offset), type=numeric_type)
                )
        if not fields:
            return None
        return m.PointCloud(
            timestamp=stamp,
            frame_id=frame_id,
            pose=m.Pose(
                position=m.Vector3(x=0.0, y=0.0, z=0.0),
                orientation=m.Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
            ),
            point_stride=points.dtype.itemsize,
            fields=fields,
            data=points.tobytes(),
        )

    @staticmethod
    def _json_record(frame: Frame) -> dict[str, Any]:
        t = frame.t
        record: dict[str, Any] = {
            "timestamp": {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000}
        }
        for name, values in series_values(frame.data):
            record[name] = float(values[0]) if values.size == 1 else json_value(values)
        return record

    def close(self) -> None:
        """Finish the MCAP file (summary and indexes)."""
        if not self._closed:
            self._closed = True
            if self._writer is not None:
                self._writer.close()

    def __enter__(self) -> FoxgloveMcapWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _json_schema(title: str, record: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema for a record (numbers and arrays of numbers, plus ``timestamp``)."""
    props: dict[str, Any] = {
        "timestamp": {
            "type": "object",
            "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
        }
    }
    for key, value in record.items():
        if key != "timestamp":
            props[key] = (
                {"type": "array", "items": {"type": "number"}}
                if isinstance(value, list)
                else {"type": "number"}
            )
    return {"title": title, "type": "object", "properties": props}
