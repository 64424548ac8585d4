"""What a bag holds, as ``ros2 bag info`` says it, and whether its contents say the same.

A ROS bag (ROS 1 ``.bag``, a rosbag2 directory whatever its name, an ``.mcap``
or ``.db3`` storage file) is opened with :class:`~adapters.bags._reader.BagReader`,
the reader :class:`~adapters.bags.BagSource` uses, so ``info`` opens every bag
the source reads: topics, message types, the counts the bag's index or
``metadata.yaml`` gives, the first and last log times (Unix-epoch ns when the
recorder ran on a wall clock, small numbers when it ran on a robot's own
clock), the storage and its compression, where the message types come from
(the bag, or the ROS distribution's type store), and each topic that cannot
be read with the reason.

With ``check=True`` (the default) every message is also read, not
deserialised, and counted per topic: a topic the index promises more
messages than were read has them ``missing`` (a zeroed chunk, a truncated
file), and each damaged chunk is named. An MCAP file of another profile
(a Foxglove export, profile ``""``) is read with
:class:`~adapters.bags._mcapfile.McapFile`: through its summary section when
that indexes everything, else by scanning its records (:attr:`BagSummary.index`
says which and why); without a Statistics record the counts are the data's.

``hyperframes info`` prints a :class:`BagSummary`; nothing here formats text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATED_NS = 10**17
"""Log times above this (1973 on the Unix epoch) are wall-clock dates; smaller ones
count from a robot's own clock and are not dates."""


@dataclass(frozen=True, slots=True)
class BagTopicSummary:
    """One topic: its name, ROS message type (``-`` when the bag names none) and count."""

    name: str
    msgtype: str
    count: int
    """Messages the index (or ``metadata.yaml``) says the topic holds."""
    read: int | None = None
    """Messages found when the contents were checked; ``None`` when they were not."""
    problem: str | None = None
    """Why the topic cannot be read (no type, a definition that does not parse), else ``None``."""

    @property
    def missing(self) -> int:
        """Messages the index promised that the contents do not hold (0 when unchecked)."""
        return max(0, self.count - self.read) if self.read is not None else 0


@dataclass(frozen=True, slots=True)
class BagSummary:
    """A bag's topics and time span, from its indexes, checked against its contents."""

    path: Path
    storage: str
    """``mcap`` (an MCAP file), ``rosbag1`` or ``rosbag2`` (a ``.db3`` file or a bag directory)."""
    start_ns: int | None
    """First log time, inclusive; ``None`` when the bag holds no message."""
    end_ns: int | None
    """Last log time, inclusive; ``None`` when the bag holds no message."""
    messages: int
    topics: tuple[BagTopicSummary, ...] = ()
    """Sorted by topic name."""
    plugin: str | None = None
    """rosbag2's storage plugin (``mcap``, ``sqlite3``); ``None`` for ROS 1 and other MCAP."""
    compression: str | None = None
    """rosbag2's bag compression (``zstd (file)``, ``zstd (message)``), else ``None``."""
    types: str | None = None
    """Where the message types come from (the bag, or a ROS distribution's types)."""
    ros_distro: str | None = None
    """The ROS distribution whose type store fills in what the bag does not define."""
    checked: bool = False
    """Whether every message was read and counted (``read`` per topic)."""
    damage: tuple[str, ...] = ()
    """One line per damaged chunk (or damaged storage) met while checking."""
    profile: str | None = None
    """An MCAP file's profile (``ros2``, ``foxglove``, ``""``...); ``None`` for other bags."""
    index: str | None = None
    """How an MCAP file of a profile other than ``ros2`` was read: ``indexed (summary
    section)``, or ``scanned: <why>`` when its summary does not index everything."""
    attachments: tuple[str, ...] = ()
    """The names of an MCAP file's attachments."""
    metadata: tuple[str, ...] = ()
    """The names of an MCAP file's metadata records."""
    notes: tuple[str, ...] = ()
    """Warnings about the bag (a stored definition that cannot describe its messages,
    replaced by the standard type of that name)."""

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

    @property
    def missing(self) -> int:
        """Messages the index promised that the contents do not hold."""
        return sum(t.missing for t in self.topics)


def read_bag_summary(
    path: Path, *, ros_distro: str | None = None, check: bool = True
) -> BagSummary:
    """Summarise ``path`` (an ``.mcap`` file, a ROS 1 bag, a ``.db3`` or a bag directory).

    ``check`` reads every message (not deserialised) to count what is really
    there. ``ros_distro`` is :class:`~adapters.bags._reader.BagReader`'s. An
    MCAP file of a profile other than ``ros2`` is read by
    :class:`~adapters.bags._mcapfile.McapFile` (a file without a summary section
    is scanned, and :attr:`BagSummary.index` says so); the readers' own errors
    (and :class:`~adapters.errors.SourceOpenError` for what is no bag) pass through.
    """
    profile = _mcap_profile(path) if path.is_file() else None
    if profile is not None and (profile != "ros2" or _cut_short(path)):
        return _mcap_summary(path, check)  # a ros2 file cut short: the scan names the damage
    return _ros_summary(path, ros_distro, check)


def _cut_short(path: Path) -> bool:
    """Whether an MCAP file lacks its closing magic (a writer that never closed it)."""
    from adapters.bags._detect import MCAP_MAGIC

    with path.open("rb") as f:
        size = f.seek(0, 2)
        if size < 2 * len(MCAP_MAGIC):
            return True
        f.seek(size - len(MCAP_MAGIC))
        return f.read(len(MCAP_MAGIC)) != MCAP_MAGIC


def _mcap_profile(path: Path) -> str | None:
    """The profile of an MCAP file, ``None`` if ``path`` is not one (``""`` if unreadable)."""
    from adapters.bags._detect import MCAP_MAGIC
    from adapters.bags._mcapfile import mcap_profile

    with path.open("rb") as f:
        if f.read(len(MCAP_MAGIC)) != MCAP_MAGIC:
            return None
    return mcap_profile(path) or ""


def _ros_summary(path: Path, ros_distro: str | None, check: bool) -> BagSummary:
    from adapters.bags._reader import BagReader
    from adapters.bags._resilient import read_resilient

    with BagReader(path, ros_distro=ros_distro) as reader:
        read: dict[str, int] | None = None
        damage: list[str] = []
        if check:
            read = dict.fromkeys(reader.topics, 0)
            for conn, _, _ in read_resilient(
                reader, reader.connections, None, None, lambda _r, msg, _n: damage.append(msg)
            ):
                read[conn.topic] += 1
        topics = tuple(
            BagTopicSummary(
                name,
                info.msgtype or "-",
                info.count,
                None if read is None else read[name],
                reader.unreadable.get(name)
                or (None if info.msgtype else "its connections disagree on the type"),
            )
            for name, info in reader.topics.items()
        )
        messages = sum(t.count for t in topics)
        start = reader.start_time if messages else None
        end = reader.end_time - 1 if messages else None  # rosbags' end is exclusive
        if not reader.is2:
            storage, plugin = "rosbag1", None
        elif path.is_file() and path.suffix.lower() == ".mcap":
            storage, plugin = "mcap", "mcap"
        else:
            storage, plugin = "rosbag2", reader.storage
        return BagSummary(
            path,
            storage,
            start,
            end,
            messages,
            topics,
            plugin=plugin,
            compression=reader.compression,
            types=reader.types,
            ros_distro=reader.ros_distro,
            checked=check,
            damage=tuple(damage),
            notes=tuple(reader.notes),
        )


def _mcap_summary(path: Path, check: bool) -> BagSummary:
    """An MCAP file of any profile (:class:`~adapters.bags._mcapfile.McapFile`): from its
    summary section when that indexes everything, else from a scan of its records."""
    from adapters.bags._mcapfile import McapFile

    with McapFile(path) as mcap:
        read, damage = _mcap_contents(mcap) if check else (None, [])
        topics: list[BagTopicSummary] = []
        for cid, channel in sorted(mcap.channels.items(), key=lambda kv: (kv[1].topic, kv[0])):
            schema = mcap.schemas.get(channel.schema_id)
            topics.append(
                BagTopicSummary(
                    channel.topic,
                    schema.name if schema and schema.name else "-",
                    int(mcap.counts.get(cid, 0)),
                    None if read is None else read.get(cid, 0),
                )
            )
        return BagSummary(
            path=path,
            storage="mcap",
            start_ns=mcap.start_time,
            end_ns=mcap.end_time,
            messages=mcap.message_count,
            topics=tuple(topics),
            checked=check,
            damage=tuple(mcap.damage) + tuple(damage),
            profile=mcap.profile,
            index=mcap.how,
            attachments=tuple(a.name for a in mcap.attachments),
            metadata=tuple(m.name for m in mcap.metadata),
        )


def _mcap_contents(mcap: Any) -> tuple[dict[int, int], list[str]]:
    """Messages per channel id found in the file, chunk by chunk; one line per bad chunk."""
    from adapters.bags._mcapchunks import DamagedChunk
    from adapters.bags._mcapfile import McapFormatError

    read: dict[int, int] = {}
    damage: list[str] = []
    for seg in mcap.segments:
        try:
            messages = mcap.segment_messages(seg)
        except (DamagedChunk, McapFormatError) as err:
            damage.append(f"the chunk of log time {seg.start}..{seg.end} ns is damaged ({err})")
            continue
        for m in messages:
            read[m.channel_id] = read.get(m.channel_id, 0) + 1
    return read, damage
