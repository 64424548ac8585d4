"""Type stores for a bag: the standard ones, and a store of what the bag defines.

``rosbags``' ``AnyReader`` parses every stored definition and raises on the
first it cannot parse, so no topic is read. :func:`bag_types` parses each
definition on its own: a topic whose definition does not parse, is too big
(:data:`MAX_DEFINITION_BYTES`, :data:`MAX_DEFINITION_FIELDS`) or is recursive
is listed as unreadable with the reason, every other topic is read. Service
events are built from their ``.srv`` text as rosbag2 defines them, and types
a bag does not define come from the distribution's standard store
(:func:`type_store`), only those the bag uses.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from adapters.ros._msg_compare import same_definition

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


def fresh_type_store(distro: str | None = None) -> Any:
    """A new ``rosbags`` type store of ``distro``'s standard types (``None``: no types), not
    shared: what a caller registers in it stays there (:func:`type_store` is cached)."""
    from rosbags.typesys import Stores, get_typestore

    if distro is None:
        return get_typestore(Stores.EMPTY)
    type_store(distro)  # an unknown name fails here, saying which there are
    return get_typestore(Stores(("ros1_" if distro == "noetic" else "ros2_") + distro))


def register_msg(store: Any, msgtype: str, text: str) -> None:
    """Parse the ``.msg`` definition ``text`` of ``msgtype`` (the ``===`` sections of its
    dependencies included) and register it in ``store``. Raises what rosbags' parser
    raises on a definition it cannot read (those errors have no common base)."""
    from rosbags.typesys import get_types_from_msg

    store.register(get_types_from_msg(text, msgtype))


def ros1_definition(msgtype: str, text: str) -> tuple[str, str]:
    """``(message_definition, md5sum)`` a ROS 1 bag's connection record holds for the ROS 1
    ``.msg`` text of ``msgtype``; raises as :func:`register_msg` does."""
    store = fresh_type_store()
    register_msg(store, msgtype, text)
    full, md5 = store.generate_msgdef(msgtype, ros_version=1)
    return str(full), str(md5)


def bag_types(
    connections: list[Any], standard_store: Any, ros_distro: str, is2: bool
) -> tuple[Any, str, dict[str, str]]:
    """A type store of every readable topic's type of ``connections``.

    ``(store, where the types came from, unreadable topics with the reason)``;
    ``standard_store`` is ``ros_distro``'s (:func:`type_store`), which fills in
    what the bag does not define.
    """
    from rosbags.interfaces import MessageDefinitionFormat
    from rosbags.typesys import Stores, get_typestore

    typs: dict[str, Any] = {}
    parsed: dict[tuple[str, str], Any] = {}
    from_store: set[str] = set()
    defined: set[str] = set()
    unreadable: dict[str, str] = {}
    for conn in connections:
        if conn.msgdef.format == MessageDefinitionFormat.NONE:
            from_store.add(conn.topic)
            continue
        if standard_digest(conn, standard_store, is2):
            # The distribution's own type (ROS 1: by its MD5; ROS 2: by its text),
            # taken as is instead of parsing its text again (most of opening a
            # small bag).
            _add_closure(conn.msgtype, standard_store.fielddefs, typs)
            defined.add(conn.topic)
            continue
        key = (conn.msgtype, conn.msgdef.data)
        if key not in parsed:
            too_big = _oversized(conn.msgdef.data)
            try:
                if too_big:
                    raise _Refused(too_big)  # before rosbags' parser spends seconds on it
                parsed[key] = _parse_definition(conn.msgtype, conn.msgdef, standard_store)
                loop = _recursion(parsed[key])
                if loop:
                    raise _Refused(f"its type is recursive ({loop}), which no message can be")
            except _Refused as err:
                parsed[key] = err
            except Exception as err:  # rosbags' parser raises several types
                parsed[key] = err
        got = parsed[key]
        if isinstance(got, _Refused):
            unreadable[conn.topic] = str(got)
        elif isinstance(got, Exception):
            unreadable[conn.topic] = f"its type definition does not parse ({_why(got)})"
        else:
            typs.update(got)
            defined.add(conn.topic)
    standard = standard_store.fielddefs
    for conn in connections:
        if conn.topic in unreadable:
            continue
        missing = _missing(conn.msgtype, typs)
        if missing and all(name in standard for name in missing):
            for name in missing:
                _add_closure(name, standard, typs)
            from_store.add(conn.topic)
        elif missing:
            unreadable[conn.topic] = (
                f"no message definition of {', '.join(sorted(missing))} in the bag "
                f"or in the ROS {ros_distro} types"
            )
    store = get_typestore(Stores.EMPTY)
    try:
        store.register(typs)
    except Exception:  # a conflict: register topic by topic, the failures unreadable
        store = get_typestore(Stores.EMPTY)
        for conn in connections:
            if conn.topic in unreadable or conn.msgtype in store.fielddefs:
                continue
            closure: dict[str, Any] = {}
            _add_closure(conn.msgtype, typs, closure)
            try:
                store.register({k: v for k, v in closure.items() if k not in store.fielddefs})
            except Exception as err:
                unreadable[conn.topic] = f"its type conflicts with another topic's ({err})"
    if from_store and defined - from_store:
        source = f"the bag, and the ROS {ros_distro} types where it has none"
    elif from_store:
        source = f"the ROS {ros_distro} types (the bag stores no definitions)"
    else:
        source = "the bag"
    return store, source, unreadable


def standard_digest(conn: Any, standard_store: Any, is2: bool) -> bool:
    """Whether a connection's stored definition is the standard type of that name: a ROS 1
    connection's by its MD5, a ROS 2 connection's by its ``.msg`` text
    (:mod:`adapters.ros._msg_compare`: no text parsed, any doubt is a no)."""
    if conn.msgtype not in standard_store.fielddefs:
        return False
    if is2:
        from rosbags.interfaces import MessageDefinitionFormat

        if conn.msgdef.format != MessageDefinitionFormat.MSG:
            return False
        try:
            generated = standard_store.generate_msgdef(conn.msgtype, ros_version=2)[0]
        except Exception:  # rosbags cannot write that type's definition: parse the text
            return False
        return same_definition(str(conn.msgdef.data), str(generated), conn.msgtype)
    digest = getattr(conn, "digest", None)
    if not digest:
        return False
    try:
        return bool(standard_store.generate_msgdef(conn.msgtype, ros_version=1)[1] == digest)
    except Exception:  # rosbags cannot write that type's definition: parse the text
        return False


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
    from adapters.ros._rawdecode import _nested_names

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
