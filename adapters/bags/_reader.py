"""Opening a bag: every bag rosbag2 (and rosbag) writes, one bad topic costing only itself.

Theory of operation. :class:`BagReader` wraps ``rosbags``' own readers (the
ROS 1 reader, the rosbag2 directory reader and its MCAP and sqlite3 storage
readers) and replaces the two places where ``rosbags``' ``AnyReader`` gives up
on a whole bag for the fault of one part of it:

* **Types.** ``AnyReader`` parses every stored definition and raises on the
  first it cannot parse (a service-event schema, ``pkg/srv/X_Event``, holds a
  ``.srv`` text), so no topic is read. Here each definition is parsed on its
  own: a topic whose definition does not parse is listed in
  :attr:`BagReader.unreadable` with the reason, every other topic is read.
  Service events are built from their ``.srv`` text the way rosbag2 defines
  them (``info``, ``request[<=1]``, ``response[<=1]``), so they are read too.
  A bag without stored definitions (sqlite3 bags before Iron, ``.db3`` files
  alone) takes its types from a **default type store**, chosen by
  ``ros_distro`` and by default the newest ROS 2 LTS release ``rosbags``
  ships (:func:`default_ros_distro`); only the types the bag uses are
  registered (``AnyReader`` compiles all of them). :attr:`BagReader.types`
  says where the types came from.
* **Connections.** The rosbag2 directory reader matches the connections of
  ``metadata.yaml`` to those of the storage on topic, type *and* QoS profile;
  where the two disagree (ros2's own talker test bag) it yields nothing.
  Here a directory's storages are read directly and matched on topic and
  type only. Per-message compression (``compression_mode: MESSAGE``) is left
  to the caller: :attr:`BagReader.message_compression` names it and
  :func:`decompress_message` undoes it per message, so one bad message costs
  that message.

What the bag's index says (messages per topic, chunk spans) stays available
to check the contents against (:meth:`BagReader.chunk_spans`, the counts in
:attr:`BagReader.topics`).

This module opens the storage and iterates the messages; parsing the types
is :mod:`adapters.ros._typestore`, reading on past a damaged chunk
:mod:`adapters.bags._resilient`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Collection, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters._side_files import read_small_text
from adapters.bags import _compat_rosbags as compat
from adapters.bags._detect import bag_format, not_a_bag
from adapters.bags._mcapchunks import chunk_messages, indexed
from adapters.bags._mcapfile import mcap_profile
from adapters.bags._ros1chunks import ChunkCache, ros1_messages, usable
from adapters.errors import SourceOpenError
from adapters.ros import (
    bag_types,
    default_ros_distro,
    ros_distros,
    standard_digest,
    type_store,
)
from fusion.errors import ConfigError


@dataclass(frozen=True, slots=True)
class TopicIndex:
    """One topic as the bag's index or metadata describes it."""

    topic: str
    msgtype: str | None
    """``None`` when the topic's connections disagree on the type."""
    count: int
    """Messages the index (ROS 1, MCAP summary) or ``metadata.yaml`` says it holds."""
    connections: tuple[Any, ...]


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first four bytes of a zstd frame."""


@functools.lru_cache(maxsize=1)
def _zstd() -> Any:
    import zstandard

    return zstandard.ZstdDecompressor()


def decompress_message(data: bytes | memoryview) -> bytes:
    """Undo rosbag2's per-message zstd compression (``compression_mode: MESSAGE``).

    Raises ``zstandard.ZstdError`` on bytes that are not a zstd frame.
    """
    out: bytes = _zstd().decompressobj().decompress(data)
    return out


class BagReader:
    """An open ROS 1 or ROS 2 bag: topics, types, messages (see the module docstring).

    ``ros_distro`` picks the type store for the types a ROS 2 bag does not
    define (``None``: see :meth:`_distro`); ROS 1 bags always store theirs
    and are checked against Noetic's.
    """

    def __init__(self, path: str | os.PathLike[str], *, ros_distro: str | None = None) -> None:
        self.path = Path(path)
        fmt = bag_format(self.path)
        if fmt is None:
            raise SourceOpenError(f"cannot open bag: {not_a_bag(self.path)}")
        self.is2 = fmt == "ros2"
        if ros_distro is not None:
            type_store(ros_distro)  # an unknown name fails before the bag is opened
            if (ros_distro == "noetic") == self.is2:
                raise ConfigError(
                    f"ros_distro {ros_distro!r} is ROS {'1' if ros_distro == 'noetic' else '2'}; "
                    f"'{self.path}' is a ROS {'2' if self.is2 else '1'} bag"
                )
        self._reader = _make_reader(self.path, self.is2)
        self._chunk = ChunkCache()
        try:
            self._reader.open()
        except Exception as err:  # rosbags' errors have no common base
            # A ros2-profile MCAP file rosbags cannot open (a channel of another
            # encoding, a schema encoding it does not know): read as any profile.
            if not (self.is2 and self.path.is_file() and mcap_profile(self.path) == "ros2"):
                raise
            from adapters.bags._mcapstorage import McapAnyReader

            self._reader = McapAnyReader(self.path)
            try:
                self._reader.open()
            except Exception:
                raise err from None
        try:
            self.connections: list[Any] = _service_definitions(
                list(self._reader.connections), compat.storages(self._reader) if self.is2 else []
            )
            self._detected = False
            self._detected = self._detect_compression()
            self.ros_distro, self.distro_reason = self._distro(ros_distro)
            """The distribution of the default types and the raw decoders' reference, and why."""
            self.standard = type_store(self.ros_distro)
            self.unreadable: dict[str, str] = {}
            """Topics whose type cannot be read, with the reason."""
            raw: set[int] = getattr(self._reader, "raw", set())
            self.raw_topics: dict[str, str] = {
                c.topic: c.ext.serialization_format for c in self.connections if c.id in raw
            }
            """Topics of an MCAP file of another profile that are not ROS 2 CDR, with their
            message encoding: read as bytes (:mod:`adapters.bags._mcapstorage`)."""
            self.notes: list[str] = []
            """Warnings about the bag (a stored definition replaced by the standard type)."""
            self.typestore, self.types = self._types()
            self._fallback_definitions()
            self.topics = self._index()
        except BaseException:
            self.close()
            raise

    def _distro(self, asked: str | None) -> tuple[str, str]:
        """The ROS distribution whose types fill in what the bag does not define, and why.

        Asked for, it is that one. Else the one ``metadata.yaml`` names (rosbag2
        writes it since Jazzy). Else, for a bag that stores no definitions at
        all, Humble: rosbag2 stores definitions since Iron, so such a bag was
        written by Humble or older (Iron changed ``sensor_msgs/Range``, so
        newer types misread it). Else the newest ROS 2 LTS rosbags ships.
        """
        from rosbags.interfaces import MessageDefinitionFormat

        if not self.is2:
            return "noetic", "ROS 1"
        if asked is not None:
            return asked, "asked for"
        named = getattr(compat.metadata(self._reader), "ros_distro", None)
        if named and named in ros_distros():
            return str(named), "named in metadata.yaml"
        none = MessageDefinitionFormat.NONE
        ros = [c for c in self.connections if c.id not in getattr(self._reader, "raw", ())]
        undefined = all(c.msgdef.format == none for c in ros)
        if ros and undefined and "humble" in ros_distros():
            return "humble", "no stored definitions: written before Iron"
        return default_ros_distro(), "the newest ROS 2 LTS rosbags has"

    # -- what the bag holds -------------------------------------------------------------

    @property
    def storage(self) -> str:
        """``"rosbag1"``, ``"mcap"`` or ``"sqlite3"``."""
        if not self.is2:
            return "rosbag1"
        storages = compat.storages(self._reader)
        name = type(storages[0]).__name__ if storages else ""
        return "sqlite3" if "Sqlite" in name else "mcap"

    @property
    def compression(self) -> str | None:
        """rosbag2's bag compression: ``"zstd (file)"``, ``"zstd (message)"``,
        ``"zstd (message, detected from the data)"`` or ``None``."""
        if not self.is2:
            return None
        if self._detected:
            return "zstd (message, detected from the data)"
        meta = compat.metadata(self._reader)
        if not getattr(meta, "compression_mode", None):
            return None
        return f"{meta.compression_format} ({meta.compression_mode})"

    @property
    def message_compression(self) -> bool:
        """Whether every message is zstd-compressed on its own (see :func:`decompress_message`):
        as ``metadata.yaml`` says, or as the data says when it does not (a ``.db3`` alone)."""
        if not self.is2:
            return False
        meta = compat.metadata(self._reader)
        return self._detected or getattr(meta, "compression_mode", None) == "message"

    def _detect_compression(self) -> bool:
        """Whether the first message is a zstd frame though no metadata says so.

        A CDR message starts with its encapsulation header (``00 00``/``00 01``...),
        a zstd frame with the magic ``28 b5 2f fd``: one message tells them apart.
        """
        if not self.is2 or not self.connections:
            return False
        if getattr(compat.metadata(self._reader), "compression_mode", None):
            return False
        messages = self.messages()
        try:
            first = next(messages, None)
        except Exception:  # a damaged bag: reading it will say so
            return False
        finally:
            messages.close()
        return first is not None and bytes(first[2][:4]) == ZSTD_MAGIC

    @property
    def start_time(self) -> int:
        """Log time of the first message, ns (per the index)."""
        return int(self._reader.start_time)

    @property
    def end_time(self) -> int:
        """Log time just after the last message, ns (per the index)."""
        return int(self._reader.end_time)

    @property
    def message_count(self) -> int:
        """Messages the index says the bag holds."""
        return sum(t.count for t in self.topics.values())

    def _index(self) -> dict[str, TopicIndex]:
        by_topic: dict[str, list[Any]] = {}
        for conn in self.connections:
            by_topic.setdefault(conn.topic, []).append(conn)
        out = {}
        for topic in sorted(by_topic):
            conns = by_topic[topic]
            types = {c.msgtype for c in conns}
            msgtype = types.pop() if len(types) == 1 else None
            count = sum(int(c.msgcount) for c in conns)
            out[topic] = TopicIndex(topic, msgtype, count, tuple(conns))
        return out

    def _types(self) -> tuple[Any, str]:
        """A type store of every readable topic's type; ``(store, where the types came from)``.

        Topics whose type cannot be read go to :attr:`unreadable`
        (:func:`~adapters.ros._typestore.bag_types` says which and why).
        """
        ros = [c for c in self.connections if c.topic not in self.raw_topics]
        store, source, unreadable = bag_types(ros, self.standard, self.ros_distro, self.is2)
        self.unreadable.update(unreadable)
        return store, source

    def _fallback_definitions(self) -> None:
        """Stored definitions that cannot describe the stored bytes give way to the standard
        type of that name, with a note.

        Some bags store placeholders (rosbag2's own sqlite3 talker test bag stores
        ``uint8 level`` for ``rcl_interfaces/msg/Log``). For each type the bag
        defines otherwise than the distribution's standard store, its first
        message is deserialised with the stored definition; if that fails and the
        standard type of that name reads it, the topic is read as the standard type.
        """
        from rosbags.interfaces import MessageDefinition, MessageDefinitionFormat

        if not self.is2:
            return
        standard = self.standard.fielddefs
        by_type: dict[str, list[Any]] = {}
        for conn in self.connections:
            if (
                conn.topic not in self.unreadable
                and conn.topic not in self.raw_topics
                and conn.msgtype in standard
                and conn.msgtype in self.typestore.fielddefs
                and self.typestore.fielddefs[conn.msgtype] != standard[conn.msgtype]
            ):
                by_type.setdefault(conn.msgtype, []).append(conn)
        replaced: set[str] = set()
        for msgtype, conns in by_type.items():
            messages = self.messages(conns)
            try:
                first = next(messages, None)
            except Exception:  # a damaged bag: reading it will say so
                first = None
            finally:
                messages.close()
            if first is None:
                continue
            raw = first[2]
            try:
                if self.message_compression:
                    raw = decompress_message(raw)
                self.typestore.deserialize_cdr(raw, msgtype)
                continue
            except Exception as err:  # rosbags' errors have no common base
                why = str(err).strip() or type(err).__name__
            try:
                self.standard.deserialize_cdr(raw, msgtype)
            except Exception:  # neither reads it: the messages will be counted undecodable
                continue
            replaced.add(msgtype)
            topics = ", ".join(sorted({c.topic for c in conns}))
            self.notes.append(
                f"{topics}: the bag's definition of {msgtype} does not describe its messages "
                f"({why}); read as the ROS {self.ros_distro} type of that name"
            )
        if not replaced:
            return
        none = MessageDefinition(MessageDefinitionFormat.NONE, "")
        self.connections = [
            c._replace(msgdef=none) if c.msgtype in replaced else c for c in self.connections
        ]
        self.typestore, self.types = self._types()

    def _standard_digest(self, conn: Any) -> bool:
        """Whether a connection's stored definition is the standard type of that name."""
        return standard_digest(conn, self.standard, self.is2)

    def deserialize(self, raw: bytes | memoryview, msgtype: str) -> Any:
        """A message object of ``msgtype`` from its serialised bytes (rosbags' deserialiser)."""
        if self.is2:
            return self.typestore.deserialize_cdr(raw, msgtype)
        return self.typestore.deserialize_ros1(raw, msgtype)

    # -- messages -----------------------------------------------------------------------

    def messages(
        self,
        connections: Collection[Any] = (),
        start: int | None = None,
        stop: int | None = None,
    ) -> Generator[tuple[Any, int, bytes], None, None]:
        """``(connection, log time ns, bytes)`` in log-time order, ``start``/``stop`` half-open.

        Bytes are as stored: per-message compressed when
        :attr:`message_compression` says so.
        """
        conns = list(connections) or self.connections
        if not self.is2:
            if usable(self._reader):
                yield from ros1_messages(self._reader, conns, start, stop, self._chunk)
            else:
                yield from self._reader.messages(conns, start, stop)
            return
        # Each storage file in turn (as rosbag2 writes and reads them), its
        # connections matched on topic and type, not on QoS.
        wanted = {(c.topic, c.msgtype): c for c in conns}
        for storage in compat.storages(self._reader):
            connmap = {
                s.id: wanted[(s.topic, s.msgtype)]
                for s in storage.connections
                if (s.topic, s.msgtype) in wanted
            }
            if not connmap:
                continue
            if indexed(storage):
                yield from chunk_messages(storage, connmap, start, stop)
                continue
            picked = [s for s in storage.connections if s.id in connmap]
            for conn, t, data in storage.messages(picked, start, stop):
                yield connmap[conn.id], t, data

    def chunk_spans(self) -> list[tuple[int, int, int]] | None:
        """``(first, last log time, messages)`` of every chunk, from the index.

        ``None`` for storage without chunks (sqlite3): there reading cannot
        resume after damage.
        """
        spans: list[tuple[int, int, int]] = []
        try:
            if not self.is2:
                return sorted(compat.ros1_chunk_spans(self._reader)) or None
            for part in compat.storages(self._reader):
                chunks = compat.mcap_chunks(part)
                if not chunks:  # sqlite3
                    return None
                spans += [
                    (c.message_start_time, c.message_end_time, sum(c.channel_count.values()))
                    for c in chunks
                ]
        except (AttributeError, TypeError):
            return None
        return sorted(spans) or None

    def forget_open_chunk(self) -> None:
        """After a read error, drop the ROS 1 reader's cached chunk (it may be half-replaced)."""
        self._chunk.forget()
        compat.forget_ros1_chunk(self._reader)

    def close(self) -> None:
        """Close the bag's files (and a file-compressed bag's decompressed copy)."""
        reader, self._reader = getattr(self, "_reader", None), None
        if reader is not None:
            with contextlib.suppress(Exception):  # already closed or half-open
                reader.close()

    def __enter__(self) -> BagReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _make_reader(path: Path, is2: bool) -> Any:
    """rosbags' ROS 1 reader, or its rosbag2 reader for a directory, ``.mcap`` or ``.db3``.

    The ROS version comes from the content, not the suffix: a ROS 2 directory
    may be named ``*.bag``, a ROS 1 file may have any suffix.
    """
    try:
        import rosbags.rosbag2  # noqa: F401
    except ImportError as err:  # pragma: no cover - rosbags is an install requirement
        raise SourceOpenError(
            "reading ROS bags needs the 'rosbags' package, a hyperframes dependency: "
            "reinstall hyperframes from its clone (pip install .)"
        ) from err
    if not is2:
        return compat.ros1_reader(path)
    if path.is_dir() and (single := _unnamed_storage(path)) is not None:
        return compat.rosbag2_reader(single)
    if path.is_file() and mcap_profile(path) not in (None, "ros2"):
        from adapters.bags._mcapstorage import McapAnyReader

        return McapAnyReader(path)  # rosbags reads the ros2 profile only
    if path.is_dir() or path.suffix in (".mcap", ".db3"):
        return compat.rosbag2_reader(path)
    return compat.rosbag2_mcap_file(path)  # an MCAP file with another suffix


def _unnamed_storage(path: Path) -> Path | None:
    """The one storage file of a directory whose ``metadata.yaml`` names no storage plugin
    (``storage_identifier: ""``, as some rosbag2 versions wrote: nebula's Hesai test bags),
    which rosbags refuses; the file itself is read instead. ``None`` otherwise."""
    try:  # a regular file of at most 16 MiB (a FIFO or /dev/zero is not read)
        text = read_small_text(path / "metadata.yaml", "bag metadata", 16 << 20, error=OSError)
    except OSError:
        return None
    if not any(f"storage_identifier: {q}{q}" in text for q in "\"'"):
        return None
    files = sorted(path.glob("*.db3")) + sorted(path.glob("*.mcap"))
    return files[0] if len(files) == 1 else None


def _service_definitions(connections: list[Any], storages: list[Any]) -> list[Any]:
    """Connections of service-event topics given the definition a sqlite3 bag stores for them.

    rosbag2's sqlite3 storage (Jazzy and later) keys a service event's definition
    by the service's type, ``pkg/srv/X``, while the topic's type is
    ``pkg/srv/X_Event``; ``rosbags`` looks it up under the topic's type and
    finds none. Here such a connection takes the ``pkg/srv/X`` row (the ``.srv``
    text, as rosbag2's MCAP storage writes it under ``X_Event``).
    """
    from rosbags.interfaces import MessageDefinition, MessageDefinitionFormat

    stored: dict[str, tuple[str, str]] = {}
    for storage in storages:
        for name, encoding, text in compat.stored_definitions(storage):
            stored.setdefault(name, (encoding, text))
    formats = {"ros2msg": MessageDefinitionFormat.MSG, "ros2idl": MessageDefinitionFormat.IDL}
    out = []
    for conn in connections:
        service = conn.msgtype[: -len("_Event")] if conn.msgtype.endswith("_Event") else ""
        if (
            "/srv/" in service
            and conn.msgdef.format == MessageDefinitionFormat.NONE
            and service in stored
            and stored[service][0] in formats
        ):
            encoding, text = stored[service]
            conn = conn._replace(msgdef=MessageDefinition(formats[encoding], text))
        out.append(conn)
    return out
