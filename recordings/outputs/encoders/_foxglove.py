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

from fusion import Frame, FrameGroup, SensorSpec
from recordings.outputs.encoders._can import (
    CAN_FRAME_JSON_SCHEMA,
    can_kind,
    frame_json,
    frame_rows,
    signal_rows,
)
from recordings.outputs.encoders._foxglove_messages import (
    MESSAGES,
    ODOMETRY_TYPE,
    VIDEO_TYPE,
    frame_id_of,
    imu_record,
    odometry_cdr,
    record_schema,
    row_message,
    series_record,
    signal_record,
    video_cdr,
)
from recordings.outputs.encoders._generic import json_record, json_schema
from recordings.outputs.encoders._groups import GROUP_JSON_SCHEMA, GROUP_TOPIC, group_json
from recordings.outputs.encoders._kinds import classify, is_internal, typed_shape
from recordings.outputs.encoders._ros2 import ros2_typestore
from recordings.outputs.encoders._sensors import SensorMap, one_type_per_topic
from recordings.outputs.encoders._shapes import Shape

_WRITTEN = frozenset(
    {"image", "encoded_image", "video", "points", "gnss", "imu", "odometry", "pose", "series"}
    | {"record"}
)
"""Payload kinds the profile writes; any other frame is skipped with its kind as the reason."""
_ROWS = ("imu", "gnss", "odometry", "pose")
"""Kinds whose array frames are written one message per row (:mod:`._shapes`)."""


class FoxgloveMcapWriter:
    """Writes frames and groups as Foxglove messages into one MCAP file.

    ``path=None`` with a ``context`` writes no file: the messages go to that
    context's sinks (a WebSocket server) only. The messages themselves are made by
    :mod:`._foxglove_messages`; this class opens the channels, dates and counts them.
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

    def _store(self) -> Any:
        """The ROS 2 typestore of the CDR channels (made on first use)."""
        if self._ros2 is None:
            self._ros2 = ros2_typestore()
        return self._ros2

    def _ros_channel(self, topic: str, msgtype: str, msgdef: str | None = None) -> Any:
        """A ROS 2 CDR channel with a ``ros2msg`` schema (Foxglove reads those natively);
        ``msgdef`` defaults to the typestore's definition of ``msgtype``."""
        known = self._channels.get(topic)
        if known is not None:
            one_type_per_topic(topic, known[1], msgtype)
            return known[0]
        if msgdef is None:
            msgdef = self._store().generate_msgdef(msgtype, ros_version=2)[0]
        schema = self._fg.Schema(name=msgtype, encoding="ros2msg", data=msgdef.encode())
        channel = self._fg.Channel(
            topic, schema=schema, message_encoding="cdr", context=self._context
        )
        self._channels[topic] = (channel, msgtype)
        return channel

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
            return self._wrote(topic, frame.sensor)
        sensor_kind = self.sensors.kind(frame.sensor, sensor_kind)
        forced = self.sensors.forced(frame.sensor)
        can = can_kind(frame.data, sensor_kind) if forced is None else None
        if can is not None:
            return self._write_can(frame, can, log_time)
        kind = classify(frame, sensor_kind, forced)
        if kind not in _WRITTEN:
            self.skipped[(frame.sensor, kind)] += 1
            return False
        topic = self.topic_for(frame.sensor)
        if kind in _ROWS and isinstance(frame.data, np.ndarray):
            self._write_rows(frame, topic, sensor_kind, forced, log_time)
            self.frames[frame.sensor] += 1
            return True
        if not self._write_one(frame, kind, topic, log_time):
            return False
        return self._wrote(topic, frame.sensor)

    def _wrote(self, topic: str, sensor: str) -> bool:
        """Count one message on ``topic`` and one frame of ``sensor``."""
        self.counts[topic] += 1
        self.frames[sensor] += 1
        return True

    def _write_one(self, frame: Frame, kind: str, topic: str, log_time: int) -> bool:
        """A frame of a written ``kind`` as one message; ``False`` (counted) if it has none."""
        if kind == "record":
            record = json_record(frame.t, frame.data)
            title = f"hyperframes.{frame.sensor}"
            self._channel(topic, kind, json_schema(title, record)).log(record, log_time=log_time)
            self.generic[frame.sensor] = title
        elif kind == "video":
            payload, fmt = self.sensors.video_payload(frame, self.skipped)
            if payload is None:
                return False
            cdr = video_cdr(self._store(), frame, payload, fmt)
            log_time = self.sensors.video_log_time(frame.sensor, log_time)
            self._ros_channel(topic, VIDEO_TYPE).log(cdr, log_time=log_time)
        elif kind in ("imu", "series"):
            record = series_record(frame)
            schema = record_schema(f"hyperframes.{kind}", record)
            self._channel(topic, kind, schema).log(record, log_time=log_time)
        else:
            msg = MESSAGES[kind](frame)
            if msg is None:
                if kind == "points":
                    self.skipped[(frame.sensor, "point array without numeric fields")] += 1
                return False
            self._channel(topic, kind).log(msg, log_time=log_time)
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
                record = signal_record(stamp, values)
                if channel is None:
                    schema = record_schema(f"hyperframes.{frame.sensor}", record)
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
        shape = typed_shape(frame.data.dtype.names, sensor_kind, forced)
        assert isinstance(shape, Shape)
        frame_id = frame_id_of(frame)
        for t, values in shape.rows(frame.data, frame.t):
            at = log_time + t - frame.t
            if shape.kind == "imu":
                record = imu_record(t, values)
                schema = record_schema("hyperframes.imu", record)
                self._channel(topic, "imu", schema).log(record, log_time=at)
            elif shape.kind in ("gnss", "pose"):
                msg = row_message(shape.kind, t, frame_id, values)
                self._channel(topic, shape.kind).log(msg, log_time=at)
            else:
                cdr = odometry_cdr(self._store(), t, frame_id, values)
                self._ros_channel(topic, ODOMETRY_TYPE).log(cdr, log_time=at)
            self.counts[topic] += 1

    def write_group(self, group: FrameGroup) -> None:
        """Write one sync group as a JSON marker on :data:`GROUP_TOPIC`."""
        channel = self._channel(GROUP_TOPIC, "group", GROUP_JSON_SCHEMA)
        channel.log(group_json(group), log_time=group.t)
        self.counts[GROUP_TOPIC] += 1

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
