"""The ``ros1`` export: a recording as a ROS 1 bag (format 2.0), written by ``rosbags``.

Frames become messages exactly as in the ``ros2`` profile
(:class:`~recordings.outputs.encoders._ros2.Ros2Messages` picks the type and builds the
message), and each message is then written as
ROS 1 by ``rosbags.rosbag1.Writer``: connection records with the type's
``md5sum`` and full ``message_definition``, chunks (bz2 or lz4 when asked),
per-chunk index records and the chunk info records ``rosbag`` reads.

Which ROS 1 type a topic carries:

* a frame that came from a **ROS 1 bag** with its original message
  (:mod:`adapters.ros._passthrough`) is written byte for byte, with its stored
  definition and that definition's MD5: the bag's own type, ``Header.seq`` included;
* a type **ROS 1 Noetic defines** under the same name (``sensor_msgs/Imu``,
  ``sensor_msgs/Image``, ``sensor_msgs/CameraInfo``...) is written as Noetic's,
  so ``rosbag`` and every ROS 1 tool know its MD5: the ROS 2 message is mapped
  field by field (ROS 2's lower-case ``d, k, r, p`` of ``CameraInfo`` to ROS
  1's ``D, K, R, P``; ``Header.seq`` is the frame's ``seq``);
* any other type (``foxglove_msgs/CompressedVideo``, the types made for a
  recording's records, a ROS 2 type Noetic lacks) keeps its ROS 2 definition,
  written as ROS 1 text with its MD5, so the bytes are what the definition says.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from adapters.ros import (
    MSGDEF,
    MSGTYPE,
    RAW,
    SERIALIZATION,
    noetic_fits,
    ros1_definition,
    to_noetic,
    type_store,
)
from fusion import Frame, SensorSpec
from recordings.outputs.encoders._kinds import is_internal
from recordings.outputs.encoders._ros2 import Ros2Messages

COMPRESSIONS = ("none", "bz2", "lz4")

_Channel = tuple[Any, Callable[[bytes, int], bytes]]
"""``(rosbags connection, CDR bytes and seq -> ROS 1 bytes)``."""


class Ros1BagWriter(Ros2Messages):
    """Writes frames and groups into one ROS 1 bag file (see the module docstring).

    ``compression``: ``"none"`` (default), ``"bz2"`` or ``"lz4"`` chunks.
    Refuses an existing path (``FileExistsError``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        topic_prefix: str = "/",
        types: Mapping[str, str] | None = None,
        compression: str = "none",
    ) -> None:
        from rosbags.rosbag1 import Writer

        if compression not in COMPRESSIONS:
            raise ValueError(f"compression {compression!r}: expected one of {COMPRESSIONS}")
        super().__init__(topic_prefix=topic_prefix, types=types)
        self.path = Path(path)
        if self.path.exists():
            raise FileExistsError(f"'{self.path}' exists; not overwriting a bag")
        self.noetic = type_store("noetic")
        self._bag = Writer(self.path)
        if compression != "none":
            self._bag.set_compression(Writer.CompressionFormat[compression.upper()])
        if compression == "lz4":
            # ROS 1's roslz4 reads LZ4 frames as it writes them: 4 MB independent
            # blocks, a content checksum, no content size ("malformed data" else).
            import lz4.frame  # type: ignore[import-untyped]

            self._bag.compressor = lambda data: lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX4MB,
                block_linked=False,
                store_size=False,
                content_checksum=True,
            )
        self._bag.open()
        self._channels: dict[str, tuple[str, _Channel]] = {}
        self._specs: dict[str, SensorSpec] = {}
        self._closed = False

    # -- the ROS 1 originals of a ROS 1 bag ---------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        super().declare(spec)
        self._specs[spec.name] = spec

    def write(self, frame: Frame, sensor_kind: str | None = None) -> bool:
        """Write one frame as a ROS 1 message; ``False`` if skipped (and counted)."""
        spec = self._specs.get(frame.sensor)
        raw = frame.meta.get(RAW)
        if (
            spec is not None
            and spec.meta.get(SERIALIZATION) == "ros1"
            and isinstance(raw, bytes | bytearray | memoryview)
            and isinstance(spec.meta.get(MSGDEF), str)
            and not is_internal(frame.sensor)
        ):
            try:
                channel = self._original(frame.sensor, spec)
            except ValueError as err:
                self.notes.append(f"{frame.sensor}: {err}; written from its decoded frames")
            else:
                log_time = frame.t if frame.t_arrival is None else frame.t_arrival
                self._put(channel, self.topic_for(frame.sensor), bytes(raw), log_time, frame.seq)
                self.frames[frame.sensor] += 1
                return True
        return super().write(frame, sensor_kind)

    def _original(self, sensor: str, spec: SensorSpec) -> _Channel:
        """The channel of a sensor from a ROS 1 bag: its stored type, bytes as they are."""
        topic = self.topic_for(sensor)
        msgtype, msgdef = str(spec.meta[MSGTYPE]), str(spec.meta[MSGDEF])
        known = self._channels.get(topic)
        if known is not None:
            return known[1]
        try:
            text, md5 = ros1_definition(msgtype, msgdef)
        except Exception as err:  # rosbags' parser errors have no common base
            raise ValueError(f"its stored ROS 1 definition of {msgtype} does not parse") from err
        conn = self._bag.add_connection(topic, msgtype, msgdef=text, md5sum=md5)
        channel: _Channel = (conn, lambda data, _seq: data)
        self._channels[topic] = (msgtype, channel)
        return channel

    # -- Ros2Messages' output -----------------------------------------------------------

    def _channel(
        self,
        topic: str,
        msgtype: str,
        msgdef: str | None = None,
        type_hash: str | None = None,
        store: Any = None,
    ) -> _Channel:
        from recordings.outputs.encoders._sensors import one_type_per_topic

        known = self._channels.get(topic)
        if known is not None:
            one_type_per_topic(topic, known[0], msgtype)
            return known[1]
        store = store if store is not None else self.store
        if msgtype in self.noetic.fielddefs and noetic_fits(msgtype, store, self.noetic):
            noetic = self.noetic

            def convert(cdr: bytes, seq: int) -> bytes:
                msg = store.deserialize_cdr(cdr, msgtype)
                return bytes(noetic.serialize_ros1(to_noetic(msg, msgtype, noetic, seq), msgtype))

            conn = self._bag.add_connection(topic, msgtype, typestore=noetic)
        else:
            text, md5 = store.generate_msgdef(msgtype, ros_version=1)

            def convert(cdr: bytes, seq: int) -> bytes:
                return bytes(store.cdr_to_ros1(cdr, msgtype))

            conn = self._bag.add_connection(topic, msgtype, msgdef=text, md5sum=md5)
        channel: _Channel = (conn, convert)
        self._channels[topic] = (msgtype, channel)
        return channel

    def _add(self, channel: Any, topic: str, data: bytes, log_time: int, seq: int) -> None:
        _conn, convert = channel
        self._put(channel, topic, convert(data, seq), log_time, seq)

    def _put(self, channel: _Channel, topic: str, data: bytes, log_time: int, seq: int) -> None:
        self._bag.write(channel[0], log_time, data)
        self.counts[topic] += 1

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Write the index (connection and chunk info records) and close the bag."""
        if self._closed:
            return
        self._closed = True
        self._bag.close()

    def __enter__(self) -> Ros1BagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
