"""``BagSource``: ROS 1 and ROS 2 bags as a source of frames, no ROS install needed.

Theory of operation. The bag is opened with :class:`~adapters.bags._reader.BagReader`
(``rosbags``' readers, made to open every bag rosbag2 writes: sqlite3 or MCAP,
the bare storage file or the bag directory, file- or message-compressed, with
or without stored type definitions, QoS metadata that disagrees with the
storage) and ROS 1 ``.bag`` files. Types come from the definitions stored in
the bag, else from the default type store of ``ros_distro`` (the newest ROS 2
LTS release rosbags ships, by default). Each mapped topic becomes one sensor.

Messages come out in log-time order, the order the bag recorder received
them. They are read, decoded and made frames in a worker thread, in batches of
up to 2048 messages or 8 MB, so the event loop only hands frames on (one thread
hop per batch). The standard sensor types (``Image``, ``CompressedImage``,
``PointCloud2``, ``Imu``, ``NavSatFix``) are decoded straight from their bytes
(:mod:`adapters.ros._rawdecode`) when the bag defines them the standard way;
every other type is deserialised by rosbags and then decoded
(:mod:`adapters.ros._messages`). That makes an import of a sensor bag cheaper
than deserialising it with ``rosbags`` alone. Frame times:

* ``t_sensor`` (and ``t``) is the message's ``header.stamp``; messages without
  a header (or with a zero stamp) use the log time, and ``meta["stamp"]`` says
  ``"log_time"``;
* ``t_arrival`` is the log time.

Each frame also keeps its message's serialised bytes (``meta["ros_message"]``)
and each sensor spec the type's full definition (``meta["msgdef"]``, once per
sensor), so an export writes the original messages back without a ROS
install (:mod:`adapters.ros._passthrough`); ``keep_messages=False`` drops them.
What is a bag is decided by content (:mod:`adapters.bags._detect`): a ROS 2
directory by its ``metadata.yaml`` whatever its name, a ROS 1 file by its
``#ROSBAG V2.0`` header whatever its suffix.

The ledger's unit is the **message**. Every message read ends as a frame or
as a loss of its topic's sensor: ``undecodable`` (bytes that do not
deserialise or decompress; the message consumes its ``seq``, so a gap in
``seq`` is a message lost). Read without a time window, every topic is
checked against the bag's index (``metadata.yaml``, the MCAP summary, the ROS
1 index): messages it promised that were never read are lost as
``missing``. A topic that cannot be read at all (no type, a definition that
does not parse) is listed in :attr:`BagSource.unsupported` and its indexed
messages are lost as ``unsupported_type`` under the sensor it would have had;
asking for one by name is an error that names its type.

A damaged chunk of a ROS 1 bag or an MCAP costs that chunk: reading goes on
after it, and each is reported (``damaged_chunk``, a warning) with its
log-time range and about how many messages it held
(:attr:`BagSource.lost_messages`); the messages themselves are the topics'
``missing``. A bag without chunk indexes (sqlite3) stops at the damage
(``damaged``), never with a traceback.

Which topics are read is decided before a message is (:mod:`adapters.bags._selection`,
pure); each topic's spec and converter, one converter per type
(:mod:`adapters.bags._routes`); the per-topic ledger counts (:mod:`adapters.bags._tally`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.bags._reader import BagReader, decompress_message
from adapters.bags._resilient import read_resilient
from adapters.bags._routes import route_topics
from adapters.bags._selection import BagTopic, select_topics, summarise
from adapters.bags._tally import TopicTally
from adapters.errors import DecodeError, SourceOpenError
from adapters.ros import message_frame
from fusion import Frame, Source, current_clock
from fusion.errors import ConfigError, UsageError

_BATCH_MESSAGES = 2048
_BATCH_BYTES = 8 << 20
_MAX_REPORTS = 1000


class BagSource(Source):
    """Frames of the topics of a ROS 1 or ROS 2 bag (contract).

    ``BagSource("drive.mcap", topics={"/camera/image_raw": "cam"})`` maps
    topics to sensor names; a list of topics names sensors after them
    (:func:`sensor_name`); ``None`` reads every readable topic. ``speed``
    paces frames at their log times on the runtime clock (1.0 real time,
    ``None`` as fast as consumed); ``start``/``end`` select log times (ns,
    half-open). ``decode_images=False`` keeps compressed images as bytes.
    ``keep_messages`` keeps each message's bytes in ``meta["ros_message"]``
    and its type's definition in the spec (:mod:`adapters.ros._passthrough`),
    so an export writes the same messages back; ``False`` saves that space.
    ``ros_distro`` (``"humble"``, ``"jazzy"``...) picks the type store for
    ROS 2 bags that store no type definitions; ``None`` is
    :func:`~adapters.ros._typestore.default_ros_distro`.
    """

    _ledger_unit = "message"

    def __init__(
        self,
        path: str | os.PathLike[str],
        topics: Mapping[str, str] | Sequence[str] | None = None,
        *,
        speed: float | None = None,
        start: int | None = None,
        end: int | None = None,
        decode_images: bool = True,
        keep_messages: bool = True,
        capacity: int = 64,
        ros_distro: str | None = None,
    ) -> None:
        if speed is not None and not speed > 0:
            raise ConfigError(f"speed must be > 0 or None (as fast as possible), got {speed}")
        self.path = Path(path)
        self.keep_messages = keep_messages
        if not self.path.exists():
            raise SourceOpenError(f"bag '{self.path}' does not exist")
        try:
            self._reader: BagReader | None = BagReader(self.path, ros_distro=ros_distro)
        except (SourceOpenError, ValueError):
            raise
        except Exception as err:  # rosbags raises several unrelated types here
            raise SourceOpenError(f"cannot open bag '{self.path}': {err}") from err
        reader = self._reader
        self.ros_distro = reader.ros_distro
        """The ROS distribution of the default and reference types."""
        self.types = reader.types
        """Where the message types came from (the bag, or the ROS distribution's store)."""
        self._notes = list(reader.notes)
        try:
            self._topics = summarise(reader)
            self._span = (reader.start_time, reader.end_time)
            chosen = select_topics(self._topics, topics, f"bag '{self.path}'")
            routing = route_topics(
                reader,
                chosen.wanted,
                {t.topic: t for t in self._topics},
                self.path,
                decode_images=decode_images,
                keep_messages=keep_messages,
                capacity=capacity,
            )
        except BaseException:
            reader.close()
            self._reader = None
            raise
        self.unsupported = chosen.unsupported
        """Topics that cannot be read, with their type and the reason."""
        self.raw_decoded = routing.raw_decoded
        """Topics decoded straight from their bytes (:mod:`adapters.ros._rawdecode`)."""
        self.flat_decoded = routing.flat_decoded
        """Generic topics decoded straight from their bytes (:mod:`adapters.ros._flatdecode`)."""
        self._wanted = chosen.wanted
        self._skipped = chosen.skipped
        self._connections = routing.connections
        self._routes = routing.routes
        super().__init__(specs=tuple(routing.specs))
        self.reports: list[str] = []
        """Every loss and warning's message, in order (the first 1000)."""
        self.lost_messages = 0
        """Messages in damaged chunks, skipped (an estimate from the chunk index)."""
        self._ahead: dict[str, int] = dict.fromkeys(self._wanted.values(), 0)
        """The next ``seq`` per sensor of the reading thread (ahead of what was yielded)."""
        self.speed = speed
        self.start = start
        self.end = end

    # -- topics -------------------------------------------------------------------------

    def inspect(self) -> list[BagTopic]:
        """Every topic of the bag with its type, message count and decoder (or why none).

        Read when the bag opens, so it stays available after :meth:`close`.
        """
        return list(self._topics)

    @property
    def start_time(self) -> int:
        """Log time of the bag's first message, ns."""
        return self._span[0]

    @property
    def end_time(self) -> int:
        """Log time just after the bag's last message, ns."""
        return self._span[1]

    # -- frames -------------------------------------------------------------------------

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return True

    async def frames(self) -> AsyncIterator[Frame]:
        """Yield the mapped topics' messages as frames, in log-time order."""
        reader = self._reader
        if reader is None:
            raise UsageError(f"bag '{self.path}' is closed")
        whole = self.start is None and self.end is None
        self._count_skipped(whole)
        messages = self._messages(reader)
        clock = current_clock()
        started = False
        base_clock = base_log = 0
        tally = TopicTally({name: self.ledger(name) for name in self._wanted.values()})
        seqs = self._next_seq
        for name in tally.ledgers:
            seqs.setdefault(name, 0)
        # The worker thread numbers and builds the frames (it runs only while this
        # loop awaits it); seq and the ledger's emitted count follow what was yielded.
        self._ahead = dict(seqs)
        paced = self.speed is not None
        try:
            ended = False
            while not ended:
                batch, counts, ended = await self.run_blocking(self._read_batch, messages)
                tally.receive(counts)
                for item in batch:
                    if isinstance(item, tuple):  # (sensor, seq, DecodeError)
                        self._skip(*item)
                        continue
                    # Unpaced, the batch's thread hop is this loop's checkpoint: one
                    # per message would cost more than decoding a small message.
                    if paced:
                        assert self.speed is not None
                        assert item.t_arrival is not None
                        if not started:
                            base_clock, base_log, started = clock.now(), item.t_arrival, True
                        await clock.sleep_until(
                            base_clock + int((item.t_arrival - base_log) / self.speed)
                        )
                    seqs[item.sensor] = item.seq + 1
                    tally.emitted(item.sensor)
                    yield item
                tally.flush()
        finally:
            tally.flush()
            messages.close()
        if whole:
            self._check_counts(reader, tally)

    def _count_skipped(self, whole: bool) -> None:
        """Topics not read (every readable one was asked for), and definitions replaced."""
        for topic, (sensor, count, reason) in self._skipped.items():
            self.count_error(
                "unsupported_type",
                f"bag '{self.path}': topic {topic!r} ({count} messages) is not read: {reason}",
                units=count if whole else 0,
                sensor=sensor,
                arrived=False,
            )
        self._skipped = {}
        for note in self._notes:  # a stored definition replaced by the standard type
            self.count_error("definition_replaced", f"bag '{self.path}': {note}", units=0)
        self._notes = []

    def _check_counts(self, reader: BagReader, tally: TopicTally) -> None:
        """Messages the index promised per topic and that were never read: ``missing``."""
        promised = {topic: reader.topics[topic].count for topic in self._wanted}
        for topic, sensor, count, read in tally.shortfalls(self._wanted, promised):
            short = count - read
            self.count_error(
                "missing",
                f"bag '{self.path}': topic {topic!r}: its index says {count} messages, "
                f"{read} were read ({short} missing)",
                units=short,
                sensor=sensor,
                arrived=False,
            )

    def _messages(self, reader: BagReader) -> Generator[tuple[Any, int, bytes], None, None]:
        """The mapped topics' messages, a damaged chunk skipped and reported."""
        return read_resilient(reader, self._connections, self.start, self.end, self._damage)

    def _damage(self, reason: str, message: str, lost: int) -> None:
        self.lost_messages += lost
        # A warning: the messages are counted per topic as missing at the end.
        self.count_error(reason, message, units=0)

    def _read_batch(
        self, messages: Iterator[tuple[Any, int, bytes]]
    ) -> tuple[list[Frame | tuple[str, int, DecodeError]], dict[str, int], bool]:
        """Read, decode and build the next batch of frames (runs in a worker thread).

        Returns the batch (a frame, or ``(sensor, seq, DecodeError)`` for a
        message that does not decode), how many messages of each sensor it
        read, and whether the messages ended (no need to ask again); every
        message takes the next ``seq`` of its sensor. Standard
        types are decoded from their bytes (:mod:`adapters.ros._rawdecode`);
        every other type, and bytes the raw decoder cannot parse, go through
        rosbags' ``deserialize`` and the type's decoder.
        """
        out: list[Frame | tuple[str, int, DecodeError]] = []
        ahead = self._ahead
        before = dict(ahead)
        size = 0
        routes = self._routes
        keep = self.keep_messages
        reader = self._reader
        assert reader is not None
        compressed = reader.message_compression
        append = out.append
        left = _BATCH_MESSAGES
        ended = False
        for conn, log_time, raw in messages:
            sensor, topic, convert = routes[id(conn)]
            seq = ahead[sensor]
            ahead[sensor] = seq + 1
            size += len(raw)
            left -= 1
            try:
                if compressed:
                    raw = _decompress(raw, conn.msgtype)
                converted = convert(raw)
            except DecodeError as err:
                append((sensor, seq, err))
            else:
                append(
                    message_frame(
                        sensor,
                        seq,
                        topic,
                        converted,
                        raw,
                        log_time,
                        keep=keep,
                        received_name="log_time",
                    )
                )
            if not left or size >= _BATCH_BYTES:
                break
        else:
            ended = True
        return (
            out,
            {name: n - before[name] for name, n in ahead.items() if n != before[name]},
            ended,
        )

    def count_error(
        self,
        reason: str,
        message: str,
        *,
        units: int = 1,
        sensor: str | None = None,
        arrived: bool = True,
    ) -> None:
        """:meth:`Source.count_error`, the message also kept in :attr:`reports`."""
        super().count_error(reason, message, units=units, sensor=sensor, arrived=arrived)
        if len(self.reports) < _MAX_REPORTS:
            self.reports.append(message)

    def _skip(self, sensor: str, seq: int, err: DecodeError) -> None:
        self._next_seq[sensor] = seq + 1
        err.sensor, err.seq = sensor, seq
        self.count_error("undecodable", str(err), sensor=sensor)

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the bag (sync). Frames already yielded stay valid."""
        if getattr(self, "_reader", None) is not None:
            assert self._reader is not None
            self._reader.close()
            self._reader = None
        self._closed = True

    async def aclose(self) -> None:
        self.close()
        await super().aclose()

    def __del__(self) -> None:
        if getattr(self, "_reader", None) is not None and not self._closed:
            self._warn_unclosed()

    def __repr__(self) -> str:
        names = ", ".join(f"{s.meta['topic']}={s.name}" for s in self.specs)
        return f"BagSource('{self.path}', {names})"


def _decompress(raw: bytes, msgtype: str) -> bytes:
    """One per-message-compressed message's bytes, or a DecodeError saying why not."""
    try:
        return decompress_message(raw)
    except Exception as err:  # zstandard.ZstdError, or bytes that are no frame at all
        raise DecodeError(f"{msgtype} message does not decompress (zstd): {err}") from err
