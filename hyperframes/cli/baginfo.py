"""``hyperframes info`` on an MCAP file or a ROS bag: the summary ``ros2 bag info`` prints.

An MCAP file (ROS 2 or any other profile) is summarised from its own summary
section with the ``mcap`` reader, so nothing is decoded; ROS 1 bags, ROS 2
``.db3`` files and bag directories go through ``rosbags``' ``AnyReader``,
which reads only their indexes. Either way: topics, message types, counts,
duration and start/end dates (bag times are Unix-epoch ns when the recorder
ran on a wall clock, small numbers when it ran on a robot's own clock).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class BagTopicInfo:
    name: str
    msgtype: str
    count: int


@dataclass(slots=True)
class BagInfo:
    path: Path
    storage: str
    """``mcap``, ``rosbag1``, ``sqlite3``..."""
    start_ns: int | None
    end_ns: int | None
    messages: int
    topics: list[BagTopicInfo] = field(default_factory=list)

    @property
    def duration_ns(self) -> int:
        if self.start_ns is None or self.end_ns is None:
            return 0
        return self.end_ns - self.start_ns

    def as_dict(self) -> dict[str, Any]:
        from hyperframes.cli.info import iso_utc

        dated = self.start_ns is not None and self.start_ns > 10**17
        return {
            "path": str(self.path),
            "storage": self.storage,
            "duration_s": self.duration_ns / 1e9,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "start_utc": iso_utc(self.start_ns) if dated else None,
            "end_utc": iso_utc(self.end_ns) if dated else None,
            "messages": self.messages,
            "topics": [{"topic": t.name, "type": t.msgtype, "count": t.count} for t in self.topics],
        }


def read_bag_info(path: Path) -> BagInfo:
    """Summarise ``path`` (an ``.mcap`` file, a ROS 1 bag, a ``.db3`` or a bag directory)."""
    if path.is_file() and path.suffix.lower() == ".mcap":
        return _mcap_info(path)
    return _rosbags_info(path)


def _mcap_info(path: Path) -> BagInfo:
    from mcap.reader import make_reader

    with path.open("rb") as f:
        summary = make_reader(f).get_summary()
    if summary is None:
        raise ValueError(f"'{path}' is an MCAP file without a summary section (not closed?)")
    stats = summary.statistics
    counts = dict(stats.channel_message_counts) if stats is not None else {}
    topics = []
    for cid, channel in sorted(summary.channels.items(), key=lambda kv: kv[1].topic):
        schema = summary.schemas.get(channel.schema_id)
        topics.append(
            BagTopicInfo(channel.topic, schema.name if schema else "-", int(counts.get(cid, 0)))
        )
    return BagInfo(
        path=path,
        storage="mcap",
        start_ns=None if stats is None or not stats.message_count else stats.message_start_time,
        end_ns=None if stats is None or not stats.message_count else stats.message_end_time,
        messages=0 if stats is None else int(stats.message_count),
        topics=topics,
    )


def _rosbags_info(path: Path) -> BagInfo:
    from rosbags.highlevel import AnyReader

    with AnyReader([path]) as reader:
        topics = [
            BagTopicInfo(name, info.msgtype or "-", int(info.msgcount))
            for name, info in sorted(reader.topics.items())
        ]
        messages = sum(t.count for t in topics)
        start = reader.start_time if messages else None
        end = reader.end_time - 1 if messages else None  # rosbags' end is exclusive
        storage = "rosbag1" if path.is_file() and path.suffix.lower() == ".bag" else "rosbag2"
    return BagInfo(path, storage, start, end, messages, topics)


def bag_tables(info: BagInfo) -> list[Any]:
    """What ``info`` prints: the file facts, then one row per topic."""
    from rich.table import Table

    from hyperframes.cli.info import human_ns, stamp

    head = Table(show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    head.add_row("path", str(info.path))
    head.add_row("storage", info.storage)
    head.add_row("duration", human_ns(info.duration_ns))
    head.add_row("start", _bag_stamp(info.start_ns, stamp))
    head.add_row("end", _bag_stamp(info.end_ns, stamp))
    head.add_row("messages", str(info.messages))
    table = Table(title="topics")
    for col in ("topic", "type", "count"):
        table.add_column(col, justify="right" if col == "count" else "left")
    for t in info.topics:
        table.add_row(t.name, t.msgtype, str(t.count))
    return [head, table]


def _bag_stamp(ns: int | None, stamp: Any) -> str:
    if ns is None:
        return "-"
    if ns > 10**17:
        return str(stamp(ns, ns))
    return f"{ns / 1e9:.6f} s (the recorder's own clock, not a date)"
