"""What a bag holds, as ``ros2 bag info`` says it, read from its indexes only.

An MCAP file (ROS 2 or any other profile) is summarised from its own summary
section with the ``mcap`` reader, so nothing is decoded; ROS 1 bags, ROS 2
``.db3`` files and bag directories go through ``rosbags``' ``AnyReader``,
which reads only their indexes. Either way: topics, message types, counts and
the first and last log times (bag times are Unix-epoch ns when the recorder
ran on a wall clock, small numbers when it ran on a robot's own clock).

``hyperframes info`` prints a :class:`BagSummary`; nothing here formats text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATED_NS = 10**17
"""Log times above this (1973 on the Unix epoch) are wall-clock dates; smaller ones
count from a robot's own clock and are not dates."""


@dataclass(frozen=True, slots=True)
class BagTopicSummary:
    """One topic: its name, ROS message type (``-`` when the bag names none) and count."""

    name: str
    msgtype: str
    count: int


@dataclass(frozen=True, slots=True)
class BagSummary:
    """A bag's topics and time span, from its indexes."""

    path: Path
    storage: str
    """``mcap``, ``rosbag1`` or ``rosbag2`` (a ``.db3`` file or a bag directory)."""
    start_ns: int | None
    """First log time, inclusive; ``None`` when the bag holds no message."""
    end_ns: int | None
    """Last log time, inclusive; ``None`` when the bag holds no message."""
    messages: int
    topics: tuple[BagTopicSummary, ...] = ()
    """Sorted by topic name."""

    @property
    def duration_ns(self) -> int:
        """``end_ns - start_ns``, 0 for an empty bag."""
        if self.start_ns is None or self.end_ns is None:
            return 0
        return self.end_ns - self.start_ns

    @property
    def dated(self) -> bool:
        """Whether the log times are wall-clock dates (see :data:`DATED_NS`)."""
        return self.start_ns is not None and self.start_ns > DATED_NS


def read_bag_summary(path: Path) -> BagSummary:
    """Summarise ``path`` (an ``.mcap`` file, a ROS 1 bag, a ``.db3`` or a bag directory).

    Raises ``ValueError`` for an MCAP file without a summary section; the
    ``mcap`` and ``rosbags`` readers' own errors pass through unchanged.
    """
    if path.is_file() and path.suffix.lower() == ".mcap":
        return _mcap_summary(path)
    return _rosbags_summary(path)


def _mcap_summary(path: Path) -> BagSummary:
    from mcap.reader import make_reader

    with path.open("rb") as f:
        summary = make_reader(f).get_summary()
    if summary is None:
        raise ValueError(f"'{path}' is an MCAP file without a summary section (not closed?)")
    stats = summary.statistics
    counts = dict(stats.channel_message_counts) if stats is not None else {}
    topics: list[BagTopicSummary] = []
    for cid, channel in sorted(summary.channels.items(), key=lambda kv: kv[1].topic):
        schema = summary.schemas.get(channel.schema_id)
        topics.append(
            BagTopicSummary(channel.topic, schema.name if schema else "-", int(counts.get(cid, 0)))
        )
    return BagSummary(
        path=path,
        storage="mcap",
        start_ns=None if stats is None or not stats.message_count else stats.message_start_time,
        end_ns=None if stats is None or not stats.message_count else stats.message_end_time,
        messages=0 if stats is None else int(stats.message_count),
        topics=tuple(topics),
    )


def _rosbags_summary(path: Path) -> BagSummary:
    from rosbags.highlevel import AnyReader

    with AnyReader([path]) as reader:
        topics = tuple(
            BagTopicSummary(name, info.msgtype or "-", int(info.msgcount))
            for name, info in sorted(reader.topics.items())
        )
        messages = sum(t.count for t in topics)
        start = reader.start_time if messages else None
        end = reader.end_time - 1 if messages else None  # rosbags' end is exclusive
        storage = "rosbag1" if path.is_file() and path.suffix.lower() == ".bag" else "rosbag2"
    return BagSummary(path, storage, start, end, messages, topics)
