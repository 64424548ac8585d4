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
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Collection, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.bags.detect import bag_format, not_a_bag
from adapters.bags.mcapchunks import chunk_messages, indexed
from adapters.bags.ros1chunks import ChunkCache, ros1_messages, usable
from adapters.errors import SourceOpenError
from fusion.errors import ConfigError

ROS2_LTS = ("lyrical", "jazzy", "humble", "foxy")
"""ROS 2 long-term-support releases, newest first (the default store is the first rosbags has)."""

_SEP = "=" * 80 + "\n"


def ros_distros() -> list[str]:
    """The ROS distributions ``rosbags`` ships a type store for (``humble``, ``jazzy``, ...)."""
    from rosbags.typesys import Stores

    return [s.value.split("_", 1)[1] for s in Stores if s.value.startswith(("ros1_", "ros2_"))]


def default_ros_distro() -> str:
    """The newest ROS 2 LTS release ``rosbags`` has types for (``jazzy`` with rosbags 0.11)."""
    have = set(ros_distros())
    return next(d for d in ROS2_LTS if d in have)


@functools.lru_cache(maxsize=8)
def type_store(distro: str) -> Any:
    """``rosbags``' standard type store of ``distro`` (``"jazzy"``, ``"noetic"``...), cached."""
    from rosbags.typesys import Stores, get_typestore

    names = ros_distros()
    if distro not in names:
        raise ValueError(f"unknown ROS distribution {distro!r}; rosbags has {', '.join(names)}")
    prefix = "ros1_" if distro == "noetic" else "ros2_"
    return get_typestore(Stores(prefix + distro))


@dataclass(frozen=True, slots=True)
class TopicIndex:
    """One topic as the bag's index or metadata describes it."""

    topic: str
    msgtype: str | None
    """``None`` when the topic's connections disagree on the type."""
    count: int
    """Messages the index (ROS 1, MCAP summary) or ``metadata.yaml`` says it holds."""
    connections: tuple[Any, ...]


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
        self._reader.open()
        try:
            self.connections: list[Any] = list(self._reader.connections)
            self.ros_distro, self.distro_reason = self._distro(ros_distro)
            """The distribution of the default types and the raw decoders' reference, and why."""
            self.standard = type_store(self.ros_distro)
            self.unreadable: dict[str, str] = {}
            """Topics whose type cannot be read, with the reason."""
            self.typestore, self.types = self._types()
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
        meta = getattr(self._reader.storage, "metadata", None)
        named = getattr(meta, "ros_distro", None)
        if named and named in ros_distros():
            return str(named), "named in metadata.yaml"
        none = MessageDefinitionFormat.NONE
        undefined = all(c.msgdef.format == none for c in self.connections)
        if self.connections and undefined and "humble" in ros_distros():
            return "humble", "no stored definitions: written before Iron"
        return default_ros_distro(), "the newest ROS 2 LTS rosbags has"

    # -- what the bag holds -------------------------------------------------------------

    @property
    def storage(self) -> str:
        """``"rosbag1"``, ``"mcap"`` or ``"sqlite3"``."""
        if not self.is2:
            return "rosbag1"
        storages = _storages(self._reader)
        name = type(storages[0]).__name__ if storages else ""
        return "sqlite3" if "Sqlite" in name else "mcap"

    @property
    def compression(self) -> str | None:
        """rosbag2's bag compression: ``"zstd (file)"``, ``"zstd (message)"`` or ``None``."""
        if not self.is2:
            return None
        meta = self._reader.storage.metadata
        if not meta.compression_mode:
            return None
        return f"{meta.compression_format} ({meta.compression_mode})"

    @property
    def message_compression(self) -> bool:
        """Whether every message is zstd-compressed on its own (see :func:`decompress_message`)."""
        return bool(self.is2 and self._reader.storage.metadata.compression_mode == "message")

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

    # -- types --------------------------------------------------------------------------

    def _types(self) -> tuple[Any, str]:
        """A type store of every readable topic's type; ``(store, where the types came from)``."""
        from rosbags.interfaces import MessageDefinitionFormat
        from rosbags.typesys import Stores, get_typestore

        typs: dict[str, Any] = {}
        parsed: dict[tuple[str, str], Any] = {}
        from_store: set[str] = set()
        defined: set[str] = set()
        for conn in self.connections:
            if conn.msgdef.format == MessageDefinitionFormat.NONE:
                from_store.add(conn.topic)
                continue
            if self._standard_digest(conn):
                # ROS 1 names a definition by its MD5: the distribution's own type,
                # taken as is instead of parsing its text again (most of opening a
                # small bag).
                _add_closure(conn.msgtype, self.standard.fielddefs, typs)
                defined.add(conn.topic)
                continue
            key = (conn.msgtype, conn.msgdef.data)
            if key not in parsed:
                too_big = _oversized(conn.msgdef.data)
                try:
                    if too_big:
                        raise _Refused(too_big)  # before rosbags' parser spends seconds on it
                    parsed[key] = _parse_definition(conn.msgtype, conn.msgdef, self.standard)
                    loop = _recursion(parsed[key])
                    if loop:
                        raise _Refused(f"its type is recursive ({loop}), which no message can be")
                except _Refused as err:
                    parsed[key] = err
                except Exception as err:  # rosbags' parser raises several types
                    parsed[key] = err
            got = parsed[key]
            if isinstance(got, _Refused):
                self.unreadable[conn.topic] = str(got)
            elif isinstance(got, Exception):
                self.unreadable[conn.topic] = f"its type definition does not parse ({_why(got)})"
            else:
                typs.update(got)
                defined.add(conn.topic)
        standard = self.standard.fielddefs
        for conn in self.connections:
            if conn.topic in self.unreadable:
                continue
            missing = _missing(conn.msgtype, typs)
            if missing and all(name in standard for name in missing):
                for name in missing:
                    _add_closure(name, standard, typs)
                from_store.add(conn.topic)
            elif missing:
                self.unreadable[conn.topic] = (
                    f"no message definition of {', '.join(sorted(missing))} in the bag "
                    f"or in the ROS {self.ros_distro} types"
                )
        store = get_typestore(Stores.EMPTY)
        try:
            store.register(typs)
        except Exception:  # a conflict: register topic by topic, the failures unreadable
            store = get_typestore(Stores.EMPTY)
            for conn in self.connections:
                if conn.topic in self.unreadable or conn.msgtype in store.fielddefs:
                    continue
                closure: dict[str, Any] = {}
                _add_closure(conn.msgtype, typs, closure)
                try:
                    store.register({k: v for k, v in closure.items() if k not in store.fielddefs})
                except Exception as err:
                    self.unreadable[conn.topic] = f"its type conflicts with another topic's ({err})"
        if from_store and defined - from_store:
            source = f"the bag, and the ROS {self.ros_distro} types where it has none"
        elif from_store:
            source = f"the ROS {self.ros_distro} types (the bag stores no definitions)"
        else:
            source = "the bag"
        return store, source

    def _standard_digest(self, conn: Any) -> bool:
        """Whether a ROS 1 connection's definition MD5 is the standard type's of that name."""
        digest = getattr(conn, "digest", None)
        if self.is2 or not digest or conn.msgtype not in self.standard.fielddefs:
            return False
        try:
            return bool(self.standard.generate_msgdef(conn.msgtype, ros_version=1)[1] == digest)
        except Exception:  # rosbags cannot write that type's definition: parse the text
            return False

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
        for storage in _storages(self._reader):
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
                return (
                    sorted(
                        (c.start_time, c.end_time, sum(c.connection_counts.values()))
                        for c in self._reader.chunk_infos
                    )
                    or None
                )
            for part in _storages(self._reader):
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

    def forget_open_chunk(self) -> None:
        """After a read error, drop the ROS 1 reader's cached chunk (it may be half-replaced)."""
        import io

        self._chunk.forget()
        if isinstance(getattr(self._reader, "current_chunk", None), tuple):
            self._reader.current_chunk = (-1, io.BytesIO())

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


MAX_DEFINITION_FIELDS = 2_000
"""Field lines a stored type definition may have, its dependencies included
(the largest real ones have a few hundred); more is refused before parsing."""
MAX_DEFINITION_BYTES = 1 << 20


class _Refused(ValueError):
    """A stored type definition refused for what it is (its message says why)."""


def _oversized(text: Any) -> str | None:
    """Why a stored definition is too big to parse, or None."""
    if not isinstance(text, str):
        return None
    if len(text) > MAX_DEFINITION_BYTES:
        return f"its type definition is {len(text)} bytes, over the limit of {MAX_DEFINITION_BYTES}"
    fields = sum(
        1
        for line in text.splitlines()
        if (s := line.strip()) and not s.startswith(("#", "=", "MSG:", "IDL:"))
    )
    if fields > MAX_DEFINITION_FIELDS:
        return f"its type definition has {fields} fields, over the limit of {MAX_DEFINITION_FIELDS}"
    return None


def _recursion(types: dict[str, Any]) -> str | None:
    """``"a -> b -> a"`` when a type of ``types`` contains itself, else None."""

    def refs(desc: Any) -> list[str]:
        if isinstance(desc, str):
            return [desc] if desc in types else []
        if isinstance(desc, tuple):
            return [r for d in desc for r in refs(d)]
        return []

    graph = {
        name: [r for _, desc in fields for r in refs(desc)] for name, (_, fields) in types.items()
    }
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(name: str) -> str | None:
        state[name] = 1
        path.append(name)
        for nxt in graph.get(name, []):
            if state.get(nxt) == 1:
                return " -> ".join([*path[path.index(nxt) :], nxt])
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[name] = 2
        return None

    for name in graph:
        if name not in state and (found := visit(name)):
            return found
    return None


def _why(err: Exception) -> str:
    """rosbags' parse error in one line: its first line and the text it stopped at."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    if len(lines) == 1:
        return lines[0][:200]
    return f"{lines[0].rstrip(':')} at {lines[-1][:80]!r}"


def _make_reader(path: Path, is2: bool) -> Any:
    """rosbags' ROS 1 reader, or its rosbag2 reader for a directory, ``.mcap`` or ``.db3``.

    The ROS version comes from the content, not the suffix: a ROS 2 directory
    may be named ``*.bag``, a ROS 1 file may have any suffix.
    """
    try:
        from rosbags.rosbag1 import Reader as Reader1
        from rosbags.rosbag2 import Reader as Reader2
        from rosbags.rosbag2.storage_mcap import McapReader
    except ImportError as err:  # pragma: no cover - rosbags is an install requirement
        raise SourceOpenError(
            "reading ROS bags needs the 'rosbags' package, a hyperframes dependency: "
            "reinstall hyperframes from its clone (pip install .)"
        ) from err
    if not is2:
        return Reader1(path)
    if path.is_dir() or path.suffix in (".mcap", ".db3"):
        return Reader2(path)
    reader = Reader2.__new__(Reader2)  # an MCAP file with another suffix
    reader.path, reader.is_open, reader.storage = path, False, McapReader(path)
    return reader


def _storages(reader: Any) -> list[Any]:
    """The storage readers of an open rosbag2 reader (one per file of a directory)."""
    storage = reader.storage
    return list(getattr(storage, "storages", None) or [storage])


def _parse_definition(msgtype: str, msgdef: Any, standard: Any) -> dict[str, Any]:
    """Parse one stored definition (``.msg`` or IDL) into rosbags' type dict."""
    from rosbags.interfaces import MessageDefinitionFormat
    from rosbags.typesys import get_types_from_idl, get_types_from_msg

    typs: dict[str, Any] = {}
    if msgdef.format == MessageDefinitionFormat.MSG:
        if "/srv/" in msgtype and msgtype.endswith("_Event"):
            return _service_event(msgtype, msgdef.data, standard)
        typs.update(get_types_from_msg(msgdef.data, msgtype))
    elif msgdef.data.startswith(f"{_SEP}IDL: "):
        for part in msgdef.data.split(_SEP)[1:]:
            _hdr, idl = part.split("\n", 1)
            typs.update(get_types_from_idl(idl))
    else:
        typs.update(get_types_from_idl(msgdef.data))
    return typs


def _service_event(msgtype: str, text: str, standard: Any) -> dict[str, Any]:
    """``pkg/srv/X_Event`` from the ``.srv`` text rosbag2 stores as its schema.

    rosbag2 records a service's events with the service's own definition
    (request ``---`` response, dependencies after ``===`` lines); the event
    type is ``service_msgs/ServiceEventInfo info``, ``X_Request[<=1] request``,
    ``X_Response[<=1] response``, as ``rosidl`` generates it.
    """
    from rosbags.typesys import get_types_from_msg

    head, sep, deps = text.partition(_SEP)
    lines = head.splitlines()
    if "---" not in [line.strip() for line in lines]:
        raise ValueError(f"{msgtype}: the schema is not a service definition (no '---' line)")
    cut = [line.strip() for line in lines].index("---")
    tail = sep + deps if sep else ""
    base = msgtype[: -len("_Event")]
    typs: dict[str, Any] = {}
    request, response = f"{base}_Request", f"{base}_Response"
    for name, part in ((request, lines[:cut]), (response, lines[cut + 1 :])):
        # rosbags' parser names every type pkg/msg/X: parse it so, then rename.
        as_msg = name.replace("/srv/", "/msg/", 1)
        parsed = get_types_from_msg("\n".join(part) + "\n" + tail, as_msg)
        typs.update(parsed)
        typs[name] = typs.pop(as_msg)
    info = "service_msgs/msg/ServiceEventInfo"
    if info not in standard.fielddefs:
        raise ValueError(f"{msgtype} needs {info}, which this ROS distribution does not define")
    _add_closure(info, standard.fielddefs, typs)
    pkg, _, name = base.partition("/srv/")
    event = get_types_from_msg(
        f"service_msgs/ServiceEventInfo info\n{pkg}/{name}_Request[<=1] request\n"
        f"{pkg}/{name}_Response[<=1] response\n",
        f"{pkg}/msg/{name}_Event",
    )[f"{pkg}/msg/{name}_Event"]
    typs[msgtype] = _renamed(event, f"{pkg}/msg/{name}_", f"{pkg}/srv/{name}_")
    return typs


def _renamed(value: Any, old: str, new: str) -> Any:
    """A parsed field description with type names starting ``old`` renamed to ``new``."""
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, tuple):
        return tuple(_renamed(v, old, new) for v in value)
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return value


_BUILTIN = ("builtin_interfaces/msg/Time", "builtin_interfaces/msg/Duration")


def _nested(fields: Iterable[Any]) -> list[str]:
    """Message type names a type's fields refer to (directly, in arrays and sequences)."""
    from adapters.bags.rawdecode import _nested_names

    return [name for _fname, (_kind, desc) in fields for name in _nested_names(desc)]


def _missing(msgtype: str, typs: dict[str, Any]) -> set[str]:
    """Types ``msgtype`` needs (itself included) that ``typs`` does not define."""
    missing: set[str] = set()
    seen: set[str] = set()
    todo = [msgtype]
    while todo:
        name = todo.pop()
        if name in seen or name in _BUILTIN:
            continue
        seen.add(name)
        found = typs.get(name)
        if found is None:
            missing.add(name)
        else:
            todo += _nested(found[1])
    return missing


def _add_closure(msgtype: str, source: dict[str, Any], typs: dict[str, Any]) -> None:
    """Copy ``msgtype`` and every type it nests from ``source`` into ``typs`` (kept if there)."""
    todo = [msgtype]
    while todo:
        name = todo.pop()
        if name in typs or name in _BUILTIN or name not in source:
            continue
        typs[name] = source[name]
        todo += _nested(source[name][1])


Damage = Callable[[str, str, int], None]
"""``(reason, message, about how many messages lost)``: how :func:`read_resilient` reports."""


def read_resilient(
    reader: BagReader,
    connections: Collection[Any],
    start: int | None,
    end: int | None,
    report: Damage,
) -> Generator[tuple[Any, int, bytes], None, None]:
    """``reader``'s messages in log-time order, a damaged chunk skipped and reported.

    The fast path is one ``rosbags`` iteration. When it fails, reading goes
    on window by window from the last message delivered, each window running
    from one chunk's first log time to the next one's, until the window that
    fails; that one is reported (``damaged_chunk``, with its log-time range
    and about how many messages it held) and skipped, and the fast path
    resumes after it. Messages at the last delivered log time are not
    delivered twice. Storage without chunk indexes (sqlite3) stops at the
    damage (``damaged``).
    """
    pos, skip = start, 0
    while True:
        last, at_last = None, 0
        it = reader.messages(connections, start=pos, stop=end)
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
        reader.forget_open_chunk()
        if last is not None:
            pos, skip = last, at_last
        spans = reader.chunk_spans()
        if spans is None:
            report(
                "damaged",
                f"bag '{reader.path}' is damaged after log time {pos} ns ({failure}); "
                "it has no chunk index to resume from, so reading stops here",
                0,
            )
            return
        bounds = sorted({s for s, _, _ in spans if pos is None or s > pos})
        if end is not None:
            bounds = [b for b in bounds if b < end] + [end]
        else:
            bounds.append(1 << 63)
        a = pos
        for b in bounds:
            try:
                window = list(reader.messages(connections, start=a, stop=b))
            except Exception as err:
                reader.forget_open_chunk()
                _damaged_window(reader, a, b, spans, err, report)
                pos, skip = b, 0
                break
            if skip:
                window = window[min(skip, len(window)) :]
                skip = 0
            yield from window
            a = b
        else:
            return
        if pos >= (1 << 63) or (end is not None and pos >= end):
            return


def _damaged_window(
    reader: BagReader,
    a: int | None,
    b: int,
    spans: list[tuple[int, int, int]],
    err: Exception,
    report: Damage,
) -> None:
    inside = [(s, e, n) for s, e, n in spans if (a is None or s >= a) and s < b]
    lost = sum(n for _, _, n in inside)
    first = min((s for s, _, _ in inside), default=a)
    last = max((e for _, e, _ in inside), default=b)
    report(
        "damaged_chunk",
        f"bag '{reader.path}': the chunk of log time {first}..{last} ns is damaged ({err}); "
        f"about {lost} messages lost, reading goes on after it",
        lost,
    )
