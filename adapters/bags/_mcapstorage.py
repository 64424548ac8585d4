"""An MCAP file of any profile as a storage :class:`~adapters.bags._reader.BagReader` reads.

``rosbags`` opens only ``ros2``-profile MCAP files. Every other file (a
Foxglove export, ``mcap convert`` output, the conformance suite's files of
profile ``""``) is read with :class:`~adapters.bags._mcapfile.McapFile` and
offered to the bag reader with the interface of ``rosbags``' reader: its
channels as ``rosbags`` connections, its messages as ``(connection, log
time, bytes)`` in log-time order.

A channel of ROS 2 CDR with a ``ros2msg``/``ros2idl`` schema is a ROS
connection like a rosbag2 one, typed and decoded as such. Every other
channel (JSON, protobuf, flatbuffers, any encoding) is **raw**: its type is
the schema's name, its messages are not deserialised but handed on as
:class:`McapBytes`, which carry the message's ``sequence`` and
``publish_time`` beside the bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.bags._mcapfile import Channel, McapFile

ROS2_SCHEMAS = {"ros2msg": "MSG", "ros2idl": "IDL", "omgidl": "IDL"}


class McapBytes(bytes):
    """A message's bytes, with the MCAP record's ``sequence`` and ``publish_time``."""

    sequence: int
    publish_time: int


@dataclass(frozen=True, slots=True)
class _Meta:
    """What the bag reader asks of rosbag2's metadata: nothing to say here."""

    compression_mode: str | None = None
    compression_format: str | None = None
    ros_distro: str | None = None


@dataclass(frozen=True, slots=True)
class _ChunkSpan:
    message_start_time: int
    message_end_time: int
    channel_count: dict[int, int]


def is_ros2_channel(channel: Channel, schema_encoding: str | None) -> bool:
    """Whether a channel holds ROS 2 CDR messages of a ROS 2 type definition."""
    return channel.message_encoding == "cdr" and schema_encoding in ROS2_SCHEMAS


class McapAnyReader:
    """``rosbags``' reader interface over :class:`McapFile` (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: McapFile | None = None
        self.connections: list[Any] = []
        self.raw: set[int] = set()
        """Ids of the channels read as raw bytes (not ROS 2 CDR)."""
        self.metadata = _Meta()
        self.chunks: list[_ChunkSpan] = []
        self.bio = None  # no rosbags chunk fast path
        self.start_time = 0
        self.end_time = 0

    @property
    def storage(self) -> McapAnyReader:
        return self

    def open(self) -> None:
        """Open the file and list its channels as ``rosbags`` connections."""
        from rosbags.interfaces import (
            Connection,
            ConnectionExtRosbag2,
            MessageDefinition,
            MessageDefinitionFormat,
        )

        self.file = mcap = McapFile(self.path)
        for cid, channel in sorted(mcap.channels.items()):
            schema = mcap.schemas.get(channel.schema_id)
            encoding = schema.encoding if schema else None
            if schema is not None and is_ros2_channel(channel, encoding):
                fmt = MessageDefinitionFormat[ROS2_SCHEMAS[schema.encoding]]
                msgdef = MessageDefinition(fmt, schema.data.decode("utf-8", "replace"))
            else:
                msgdef = MessageDefinition(MessageDefinitionFormat.NONE, "")
                self.raw.add(cid)
            self.connections.append(
                Connection(
                    cid,
                    channel.topic,
                    schema.name if schema else "",
                    msgdef,
                    "",
                    mcap.counts.get(cid, 0),
                    ConnectionExtRosbag2(channel.message_encoding, []),
                    self,
                )
            )
        self.chunks = [_ChunkSpan(s.start, s.end, dict(s.counts)) for s in mcap.segments if s.chunk]
        if mcap.start_time is not None and mcap.end_time is not None:
            self.start_time, self.end_time = mcap.start_time, mcap.end_time + 1

    def messages(
        self, connections: Collection[Any], start: int | None = None, stop: int | None = None
    ) -> Generator[tuple[Any, int, bytes], None, None]:
        """``(connection, log time, bytes)`` in log-time order (bytes as :class:`McapBytes`)."""
        assert self.file is not None, "open() first"
        by_id = {c.id: c for c in connections}
        for m in self.file.messages(by_id, start, stop):
            data = McapBytes(m.data)
            data.sequence, data.publish_time = m.sequence, m.publish_time
            yield by_id[m.channel_id], m.log_time, data

    def close(self) -> None:
        """Close the file."""
        if self.file is not None:
            self.file.close()
            self.file = None


class RawConverter:
    """A raw channel's message as a frame payload: its bytes, unchanged.

    Meta: ``encoding`` (the channel's message encoding) and, read from an
    MCAP file, the record's ``sequence`` and ``publish_time``. Called as
    :class:`~adapters.ros._convert.MessageConverter` is.
    """

    __slots__ = ("encoding",)
    standard = False
    fast = None

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding

    def __call__(self, raw: Any) -> tuple[None, None, bytes, dict[str, Any]]:
        meta: dict[str, Any] = {"encoding": self.encoding}
        if isinstance(raw, McapBytes):
            meta["sequence"], meta["publish_time"] = raw.sequence, raw.publish_time
        return None, None, bytes(raw), meta
