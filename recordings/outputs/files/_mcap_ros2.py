"""The ``ros2`` export profile written to a file: a ROS 2 CDR MCAP (or bag directory) that
``ros2 bag play``, Foxglove and Rerun open; the messages are :class:`Ros2Messages`'.

The MCAP is written with the ``mcap`` package: profile ``ros2``, schemas in
``ros2msg`` encoding with their full dependency text, channels carrying
``offered_qos_profiles`` and the type hash, and the ``rosbag2`` metadata
record rosbag2's MCAP plugin reads, so the bare file plays without a
``metadata.yaml``. When the output path has no ``.mcap`` suffix a bag
directory is written instead (``OUT/OUT.mcap`` plus ``OUT/metadata.yaml``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recordings.outputs.encoders._ros2 import Ros2Messages
from recordings.outputs.encoders._sensors import one_type_per_topic


class Ros2McapWriter(Ros2Messages):
    """Writes frames and groups as ROS 2 messages into one MCAP file (or bag directory)
    (see :class:`Ros2Messages`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        topic_prefix: str = "/",
        types: Mapping[str, str] | None = None,
    ) -> None:
        from mcap.writer import CompressionType, Writer

        super().__init__(topic_prefix=topic_prefix, types=types)
        target = Path(path)
        self.bag_dir: Path | None = None
        if target.suffix != ".mcap":
            if target.exists():
                raise FileExistsError(f"'{target}' exists; not overwriting a bag directory")
            target.mkdir(parents=True)
            self.bag_dir = target
            target = target / f"{target.name}.mcap"
        self.path = target
        self._stream = open(target, "wb")  # noqa: SIM115 - closed in close()
        self._mcap = Writer(self._stream, compression=CompressionType.ZSTD)
        self._mcap.start(profile="ros2", library="hyperframes")
        self._schemas: dict[tuple[str, str], int] = {}
        self._channels: dict[str, tuple[int, str, str]] = {}  # topic -> (id, type, hash)
        self._t_min = 2**63 - 1
        self._t_max = 0
        self._closed = False

    def _channel(
        self,
        topic: str,
        msgtype: str,
        msgdef: str | None = None,
        type_hash: str | None = None,
        store: Any = None,
    ) -> int:
        known = self._channels.get(topic)
        if known is not None:
            one_type_per_topic(topic, known[1], msgtype)
            return known[0]
        if msgdef is None:
            msgdef, _ = self.store.generate_msgdef(msgtype, ros_version=2)
        if type_hash is None:
            type_hash = self.store.hash_rihs01(msgtype)
        schema = self._schemas.get((msgtype, msgdef))
        if schema is None:
            schema = self._mcap.register_schema(msgtype, "ros2msg", msgdef.encode())
            self._schemas[(msgtype, msgdef)] = schema
        channel = self._mcap.register_channel(
            topic,
            "cdr",
            schema,
            {"offered_qos_profiles": "[]", "topic_type_hash": type_hash},
        )
        self._channels[topic] = (channel, msgtype, type_hash)
        return channel

    def _add(self, channel: Any, topic: str, data: bytes, log_time: int, seq: int) -> None:
        self._mcap.add_message(channel, log_time, data, log_time, seq & 0xFFFFFFFF)
        self.counts[topic] += 1
        self._t_min = min(self._t_min, log_time)
        self._t_max = max(self._t_max, log_time)

    # -- closing ------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The rosbag2 bag description (``metadata.yaml``'s ``rosbag2_bagfile_information``)."""
        start = 0 if not self.counts else self._t_min
        duration = 0 if not self.counts else self._t_max - self._t_min
        total = sum(self.counts.values())
        return {
            "version": 9,
            "storage_identifier": "mcap",
            "relative_file_paths": [self.path.name],
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": total,
            "topics_with_message_count": [
                {
                    "topic_metadata": {
                        "name": topic,
                        "type": msgtype,
                        "serialization_format": "cdr",
                        "offered_qos_profiles": [],
                        "type_description_hash": type_hash,
                    },
                    "message_count": self.counts[topic],
                }
                for topic, (_, msgtype, type_hash) in self._channels.items()
            ],
            "compression_format": "",
            "compression_mode": "",
            "files": [
                {
                    "path": self.path.name,
                    "starting_time": {"nanoseconds_since_epoch": start},
                    "duration": {"nanoseconds": duration},
                    "message_count": total,
                }
            ],
            "custom_data": {"written_by": "hyperframes"},
            "ros_distro": "humble",
        }

    def close(self) -> None:
        """Write the rosbag2 metadata record, the MCAP summary and (for a directory) the yaml."""
        if self._closed:
            return
        self._closed = True
        # JSON is YAML: rosbag2 (yaml-cpp) and rosbags (ruamel) both read it.
        info = json.dumps(self.metadata())
        self._mcap.add_metadata("rosbag2", {"serialized_metadata": info})
        self._mcap.finish()  # type: ignore[no-untyped-call]
        self._stream.close()
        if self.bag_dir is not None:
            text = json.dumps({"rosbag2_bagfile_information": self.metadata()}, indent=1)
            (self.bag_dir / "metadata.yaml").write_text(text + "\n", "utf8")

    def __enter__(self) -> Ros2McapWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
