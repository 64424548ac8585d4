"""``BagSource``: ROS 1 and ROS 2 bags as a source of frames, no ROS install needed.

Theory of operation. The bag is opened with ``rosbags``' ``AnyReader``, which
reads ROS 2 bags (MCAP or sqlite3, the bare storage file or the bag
directory) and ROS 1 ``.bag`` files, and deserialises messages from the type
definitions stored in the bag (the ROS 2 Humble or ROS 1 Noetic standard types
when a bag has none). Each mapped topic becomes one sensor.

Messages come out in log-time order, the order the bag recorder received
them. They are read and decoded in a worker thread in batches of a few hundred
messages or a few MB, so the event loop only builds frames. The standard
sensor types (``Image``, ``CompressedImage``, ``PointCloud2``, ``Imu``,
``NavSatFix``) are decoded straight from their bytes
(:mod:`adapters.bags.rawdecode`) when the bag defines them the standard way;
every other type is deserialised by rosbags and then decoded
(:mod:`adapters.bags.messages`). That makes an import of a sensor bag cheaper
than deserialising it with ``rosbags`` alone. Frame times:

* ``t_sensor`` (and ``t``) is the message's ``header.stamp``; messages without
  a header (or with a zero stamp) use the log time, and ``meta["stamp"]`` says
  ``"log_time"``;
* ``t_arrival`` is the log time.

Each frame also keeps its message's serialised bytes (``meta["ros_message"]``)
and each sensor spec the type's full definition (``meta["msgdef"]``, once per
sensor), so an export writes the original messages back without a ROS
install (:mod:`adapters.bags.passthrough`); ``keep_messages=False`` drops them.
What is a bag is decided by content (:mod:`adapters.bags.detect`): a ROS 2
directory by its ``metadata.yaml`` whatever its name, a ROS 1 file by its
``#ROSBAG V2.0`` header whatever its suffix.

A message that does not decode is counted by reason in :attr:`errors` and
consumes its ``seq`` (a gap in ``seq`` is a message lost), as in
:class:`~adapters.VideoSource`. A damaged chunk of a ROS 1 bag or an MCAP
costs that chunk: reading goes on after it, and each is counted
(``damaged_chunk``) with its log-time range and about how many messages it
held (:attr:`BagSource.lost_messages`); a bag without chunk indexes (sqlite3)
stops at the damage, counted (``damaged``), never with a traceback.

Topics whose type cannot be deserialised (no definition in the bag nor in the
default type store) are listed in :attr:`BagSource.unsupported` and skipped
when reading every topic; asking for one by name is an error that names its
type.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.bags.detect import bag_format, not_a_bag
from adapters.bags.messages import Decoder, decoder_info, header_stamp
from adapters.bags.passthrough import MSGDEF, MSGTYPE, RAW, SERIALIZATION, message_definition
from adapters.bags.rawdecode import RAW_ERRORS, Malformed, RawDecoder, raw_decoder, standard_layout
from adapters.errors import DecodeError, SourceOpenError
from fusion.frames import Frame, SensorSpec
from fusion.source import Source
from fusion.timing import current_clock

_BATCH_MESSAGES = 256
_BATCH_BYTES = 8 << 20

_Route = tuple[str, str, Decoder, RawDecoder | None]
"""``(sensor, topic, decoder, raw decoder or None)`` of one connection."""


@dataclass(frozen=True, slots=True)
class BagTopic:
    """One topic of a bag, as :meth:`BagSource.inspect` lists it."""

    topic: str
    msgtype: str
    count: int
    decoder: str | None
    """Decoder name (``"image"``, ``"pointcloud2"``, ``"generic"``...), ``None`` if unsupported."""
    reason: str | None = None
    """Why the topic cannot be read, when ``decoder`` is ``None``."""


def sensor_name(topic: str) -> str:
    """A sensor name for a topic: ``/camera/image_raw`` -> ``camera_image_raw``."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", topic).strip("_") or "topic"


def parse_topics(items: Sequence[str]) -> dict[str, str]:
    """``["/cam/image=cam", "/imu"]`` -> ``{"/cam/image": "cam", "/imu": "imu"}`` (CLI form)."""
    out: dict[str, str] = {}
    for item in items:
        topic, sep, name = item.partition("=")
        topic = topic.strip()
        if not topic:
            raise ValueError(f"--topic {item!r}: expected TOPIC or TOPIC=SENSOR")
        out[topic] = name.strip() if sep and name.strip() else sensor_name(topic)
    return out


def _chunk_spans(reader: Any) -> list[tuple[int, int, int]] | None:
    """``(first, last log time, messages)`` of every chunk of an open ``AnyReader``.

    From the chunk indexes rosbags keeps for ROS 1 bags and MCAP files; None
    for storage without chunks (sqlite3) or a rosbags that keeps them elsewhere.
    """
    spans: list[tuple[int, int, int]] = []
    try:
        for r in reader.readers:
            infos = getattr(r, "chunk_infos", None)  # ROS 1
            if infos is not None:
                spans += [
                    (c.start_time, c.end_time, sum(c.connection_counts.values())) for c in infos
                ]
                continue
            storage = getattr(r, "storage", None)  # ROS 2: one file, or a directory of them
            for part in getattr(storage, "storages", None) or [storage]:
                chunks = getattr(part, "chunks", None)  # MCAP
                if not chunks:
                    return None
                spans += [
                    (c.message_start_time, c.message_end_time, sum(c.channel_count.values()))
                    for c in chunks
                ]
    except (AttributeError, TypeError):
        return None
    return sorted(spans) or None


def _forget_open_chunk(reader: Any) -> None:
    """After a read error, drop the ROS 1 reader's cached chunk (it may be half-replaced)."""
    for r in getattr(reader, "readers", ()):
        if isinstance(getattr(r, "current_chunk", None), tuple):
            r.current_chunk = (-1, io.BytesIO())


def _open_reader(path: Path) -> tuple[Any, Any]:
    """An open ``AnyReader`` and the standard typestore of the bag's ROS version.

    The ROS version comes from the content (:func:`~adapters.bags.detect.bag_format`):
    ``AnyReader`` goes by the ``.bag`` suffix, which a ROS 2 bag directory may
    carry and a ROS 1 file may lack, so its readers are replaced when it guessed wrong.
    """
    try:
        from rosbags.highlevel import AnyReader
        from rosbags.rosbag1 import Reader as Reader1
        from rosbags.rosbag2 import Reader as Reader2
        from rosbags.typesys import Stores, get_typestore
    except ImportError as err:  # pragma: no cover - rosbags is an install requirement
        raise SourceOpenError(
            "reading ROS bags needs the 'rosbags' package, a hyperframes dependency: "
            "reinstall hyperframes from its clone (pip install .)"
        ) from err
    fmt = bag_format(path)
    if fmt is None:
        raise SourceOpenError(f"cannot open bag: {not_a_bag(path)}")
    is2 = fmt == "ros2"
    standard = get_typestore(Stores.ROS2_HUMBLE if is2 else Stores.ROS1_NOETIC)
    if is2 and path.is_dir():
        path = _single_mcap(path) or path
    if (path.suffix == ".bag") != is2:
        reader = AnyReader([path], default_typestore=standard)
    else:
        # AnyReader picks its readers by suffix and would refuse (or misread) this
        # path: build the same instance with the right reader (rosbags 0.11 layout).
        reader = AnyReader.__new__(AnyReader)
        reader.paths = [path]
        reader.is2 = is2
        reader.stack = None
        reader.connections = []
        reader.default_typestore = standard
        reader.typestore = get_typestore(Stores.EMPTY)
        reader.readers = [Reader2(path)] if is2 else [Reader1(path)]
    reader.open()
    return reader, standard


def _single_mcap(directory: Path) -> Path | None:
    """The storage file of a ROS 2 bag directory holding exactly one MCAP file, else ``None``.

    Such a bag is read from the file: its channels and schemas say everything,
    while rosbags' directory reader matches ``metadata.yaml``'s QoS profiles
    against the channels' and yields nothing where they disagree (ros2's own
    talker test bag).
    """
    storage = [p for p in directory.iterdir() if p.suffix in (".mcap", ".db3")]
    if len(storage) == 1 and storage[0].suffix == ".mcap" and storage[0].is_file():
        return storage[0]
    return None


class BagSource(Source):
    """Frames of the topics of a ROS 1 or ROS 2 bag (contract).

    ``BagSource("drive.mcap", topics={"/camera/image_raw": "cam"})`` maps
    topics to sensor names; a list of topics names sensors after them
    (:func:`sensor_name`); ``None`` reads every readable topic. ``speed``
    paces frames at their log times on the runtime clock (1.0 real time,
    ``None`` as fast as consumed); ``start``/``end`` select log times (ns,
    half-open). ``decode_images=False`` keeps compressed images as bytes.
    ``keep_messages`` keeps each message's bytes in ``meta["ros_message"]``
    and its type's definition in the spec (:mod:`adapters.bags.passthrough`),
    so an export writes the same messages back; ``False`` saves that space.
    """

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
    ) -> None:
        if speed is not None and not speed > 0:
            raise ValueError(f"speed must be > 0 or None (as fast as possible), got {speed}")
        self.path = Path(path)
        self.keep_messages = keep_messages
        if not self.path.exists():
            raise SourceOpenError(f"bag '{self.path}' does not exist")
        try:
            self._reader, self._standard = _open_reader(self.path)
        except SourceOpenError:
            raise
        except Exception as err:  # rosbags raises several unrelated types here
            raise SourceOpenError(f"cannot open bag '{self.path}': {err}") from err
        try:
            self._topics = self._summarise()
            self._span = (int(self._reader.start_time), int(self._reader.end_time))
            specs = self._select(topics, decode_images, capacity)
        except BaseException:
            self._reader.close()
            self._reader = None
            raise
        super().__init__(specs=specs)
        self.lost_messages = 0
        """Messages in damaged chunks, skipped (an estimate from the chunk index)."""
        self.speed = speed
        self.start = start
        self.end = end

    # -- topics -------------------------------------------------------------------------

    def _select(
        self,
        topics: Mapping[str, str] | Sequence[str] | None,
        decode_images: bool,
        capacity: int,
    ) -> tuple[SensorSpec, ...]:
        listing = {t.topic: t for t in self.inspect()}
        self.unsupported: dict[str, str] = {
            t.topic: f"{t.msgtype}: {t.reason}" for t in listing.values() if t.decoder is None
        }
        """Topics that cannot be read, with their type and the reason."""
        if topics is None:
            wanted = {name: sensor_name(name) for name, t in listing.items() if t.decoder}
        elif isinstance(topics, Mapping):
            wanted = dict(topics)
        else:
            wanted = {name: sensor_name(name) for name in topics}
        missing = [name for name in wanted if name not in listing]
        if missing:
            raise SourceOpenError(
                f"bag '{self.path}' has no topic {', '.join(map(repr, missing))}; "
                f"it has {', '.join(sorted(listing)) or 'none'}"
            )
        for name in wanted:
            if name in self.unsupported:
                raise SourceOpenError(
                    f"bag '{self.path}': topic {name!r} cannot be read ({self.unsupported[name]})"
                )
        names = list(wanted.values())
        if len(set(names)) != len(names):
            raise ValueError(f"two topics map to the same sensor name: {wanted}")
        if not wanted:
            raise SourceOpenError(f"bag '{self.path}' has no readable topic to replay")
        duration = max(1, self._reader.duration)
        self._connections: list[Any] = []
        self._routes: dict[int, _Route] = {}
        self.raw_decoded: set[str] = set()
        """Topics decoded straight from their bytes (:mod:`adapters.bags.rawdecode`)."""
        specs = []
        for topic, sensor in wanted.items():
            info = listing[topic]
            dec = decoder_info(info.msgtype)
            rate = info.count / (duration / 1e9) if info.count > 1 else None
            specs.append(
                SensorSpec(
                    sensor,
                    kind=dec.kind,
                    rate_hz=rate,
                    capacity=capacity,
                    overflow="block",
                    meta=self._spec_meta(topic, info.msgtype),
                )
            )
            decoder = dec.make(decode_images)
            raw = None
            if standard_layout(self._reader.typestore, self._standard, info.msgtype):
                raw = raw_decoder(info.msgtype, bool(self._reader.is2), decode_images)
            if raw is not None:
                self.raw_decoded.add(topic)
            for conn in self._reader.connections:
                if conn.topic == topic:
                    self._connections.append(conn)
                    self._routes[id(conn)] = (sensor, topic, decoder, raw)
        return tuple(specs)

    def _spec_meta(self, topic: str, msgtype: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"topic": topic, MSGTYPE: msgtype, "bag": str(self.path)}
        if self.keep_messages:
            is2 = bool(self._reader.is2)
            meta[MSGDEF] = message_definition(self._reader.typestore, msgtype, is2)
            meta[SERIALIZATION] = "cdr" if is2 else "ros1"
        return meta

    def inspect(self) -> list[BagTopic]:
        """Every topic of the bag with its type, message count and decoder (or why none).

        Read when the bag opens, so it stays available after :meth:`close`.
        """
        return list(self._topics)

    def _summarise(self) -> list[BagTopic]:
        known = self._reader.typestore.fielddefs
        out = []
        for name, info in sorted(self._reader.topics.items()):
            msgtype = info.msgtype or "?"
            if info.msgtype is None:
                out.append(BagTopic(name, msgtype, info.msgcount, None, "several types"))
            elif msgtype not in known:
                reason = "no message definition in the bag or the standard types"
                out.append(BagTopic(name, msgtype, info.msgcount, None, reason))
            else:
                out.append(BagTopic(name, msgtype, info.msgcount, decoder_info(msgtype).name))
        return out

    @property
    def start_time(self) -> int:
        """Log time of the bag's first message, ns."""
        return self._span[0]

    @property
    def end_time(self) -> int:
        """Log time just after the bag's last message, ns."""
        return self._span[1]

    # -- frames -------------------------------------------------------------------------

    async def frames(self) -> AsyncIterator[Frame]:
        """Yield the mapped topics' messages as frames, in log-time order."""
        reader = self._reader
        if reader is None:
            raise RuntimeError(f"bag '{self.path}' is closed")
        messages = self._messages()
        clock = current_clock()
        started = False
        base_clock = base_log = 0
        try:
            while True:
                batch = await self.run_blocking(self._read_batch, messages)
                if not batch:
                    return
                for sensor, stamp, log_time, data, meta in batch:
                    if isinstance(data, DecodeError):
                        self._skip(sensor, data)
                        continue
                    # Unpaced, the batch's thread hop is this loop's checkpoint: one
                    # per message would cost more than decoding an IMU sample.
                    if self.speed is not None:
                        if not started:
                            base_clock, base_log, started = clock.now(), log_time, True
                        await clock.sleep_until(
                            base_clock + int((log_time - base_log) / self.speed)
                        )
                    yield self.make_frame(stamp, data, sensor=sensor, t_arrival=log_time, meta=meta)
        finally:
            messages.close()

    def _messages(self) -> Generator[tuple[Any, int, bytes], None, None]:
        """The bag's messages in log-time order, a damaged chunk skipped (counted).

        The fast path is one ``rosbags`` iteration. When it fails, reading goes
        on window by window from the last message delivered, each window
        running from one chunk's first log time to the next one's, until the
        window that fails; that one is reported and skipped, and the fast path
        resumes after it. Messages at the last delivered log time are not
        delivered twice.
        """
        reader = self._reader
        conns = self._connections
        pos, skip = self.start, 0
        while True:
            last, at_last = None, 0
            it = reader.messages(connections=conns, start=pos, stop=self.end)
            try:
                for item in it:
                    if skip and item[1] == pos:
                        skip -= 1
                        continue
                    if item[1] == last:
                        at_last += 1
                    else:
                        last, at_last = item[1], 1
                    yield item
                return
            except Exception as err:  # rosbags' reader errors have no common base
                failure = err
            finally:
                it.close()
            _forget_open_chunk(reader)
            if last is not None:
                pos, skip = last, at_last
            spans = _chunk_spans(reader)
            if spans is None:
                self.count_error(
                    "damaged",
                    f"bag '{self.path}' is damaged after log time {pos} ns ({failure}); "
                    "it has no chunk index to resume from, so reading stops here",
                )
                return
            bounds = sorted({s for s, _, _ in spans if pos is None or s > pos})
            if self.end is not None:
                bounds = [b for b in bounds if b < self.end] + [self.end]
            else:
                bounds.append(1 << 63)
            a = pos
            for b in bounds:
                try:
                    window = list(reader.messages(connections=conns, start=a, stop=b))
                except Exception as err:
                    _forget_open_chunk(reader)
                    self._damaged_window(a, b, spans, err)
                    pos, skip = b, 0
                    break
                if skip:
                    window = window[min(skip, len(window)) :]
                    skip = 0
                yield from window
                a = b
            else:
                return
            if pos >= (1 << 63) or (self.end is not None and pos >= self.end):
                return

    def _damaged_window(
        self, a: int | None, b: int, spans: list[tuple[int, int, int]], err: Exception
    ) -> None:
        lost = sum(n for s, _, n in spans if (a is None or s >= a) and s < b)
        first = min((s for s, _, _ in spans if (a is None or s >= a) and s < b), default=a)
        last = max((e for s, e, _ in spans if (a is None or s >= a) and s < b), default=b)
        self.lost_messages += lost
        self.count_error(
            "damaged_chunk",
            f"bag '{self.path}': the chunk of log time {first}..{last} ns is damaged ({err}); "
            f"about {lost} messages lost, reading goes on after it",
        )

    def _read_batch(self, messages: Iterator[tuple[Any, int, bytes]]) -> list[tuple[Any, ...]]:
        """Read and decode the next batch (runs in a worker thread).

        Standard types are decoded from their bytes (:mod:`adapters.bags.rawdecode`);
        every other type, and bytes the raw decoder cannot parse, go through
        rosbags' ``deserialize`` and the type's decoder.
        """
        out: list[tuple[Any, ...]] = []
        size = 0
        routes = self._routes
        keep = self.keep_messages
        for conn, log_time, raw in messages:
            sensor, topic, decoder, fast = routes[id(conn)]
            try:
                if fast is None:
                    stamp, frame_id, data, meta = self._deserialize(raw, conn.msgtype, decoder)
                else:
                    try:
                        stamp, frame_id, data, meta = fast(raw)
                    except (Malformed, *RAW_ERRORS):
                        stamp, frame_id, data, meta = self._deserialize(raw, conn.msgtype, decoder)
            except DecodeError as err:
                out.append((sensor, log_time, log_time, err, None))
            except Exception as err:  # rosbags' deserialiser errors have no common base
                message = f"{conn.msgtype} message does not deserialise: {err}"
                out.append((sensor, log_time, log_time, DecodeError(message), None))
            else:
                meta = {"topic": topic, **meta}
                if keep:
                    meta[RAW] = bytes(raw)
                if frame_id:
                    meta["frame_id"] = frame_id
                if stamp is None:
                    stamp = log_time
                    meta["stamp"] = "log_time"
                out.append((sensor, stamp, log_time, data, meta))
            size += len(raw)
            if len(out) >= _BATCH_MESSAGES or size >= _BATCH_BYTES:
                break
        return out

    def _deserialize(
        self, raw: bytes, msgtype: str, decoder: Decoder
    ) -> tuple[int | None, str | None, Any, dict[str, Any]]:
        """rosbags' deserialise, then the type's decoder: ``(stamp, frame_id, data, meta)``."""
        msg = self._reader.deserialize(raw, msgtype)
        data, meta = decoder(msg)
        frame_id = getattr(getattr(msg, "header", None), "frame_id", None)
        return header_stamp(msg), frame_id, data, meta

    def _skip(self, sensor: str, err: DecodeError) -> None:
        seq = self._next_seq.get(sensor, 0)
        self._next_seq[sensor] = seq + 1
        err.sensor, err.seq = sensor, seq
        self.count_error("decode", str(err))

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the bag (sync). Frames already yielded stay valid."""
        if getattr(self, "_reader", None) is not None:
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
