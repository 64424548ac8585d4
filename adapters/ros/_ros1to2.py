"""A ROS 1 message type as ROS 2 defines it, and its messages converted to match.

Why. A ROS 1 bag's message goes out as ROS 2 CDR (the ``ros2`` and ``foxglove``
MCAP profiles, the live view). Its definition must then be a ROS 2 one: ROS 2
field names are lower case (Foxglove's ROS 2 parser refuses ``float64[] D`` of a
ROS 1 ``sensor_msgs/CameraInfo`` with "Invalid field name: D"), ``Header`` has no
``seq``, and a type both ROS versions define should read as ROS 2 defines it.

How, per type of the stored definition (dependencies included):

* ``std_msgs/msg/Header``: ROS 2's (``seq`` is dropped);
* a type ROS 2 Humble defines with the same fields in the same order once the
  ROS 1 names are lower-cased (``CameraInfo``'s ``D, K, R, P`` are ``d, k, r, p``;
  ``DisparityImage``'s ``T`` is ``t``): Humble's definition; the bytes convert as
  they are (``rosbags``' ``ros1_to_cdr``: names do not change the layout);
* a type Humble defines with more fields (``visualization_msgs/Marker``'s textures
  and ``mesh_file``, ``shape_msgs/SolidPrimitive``'s ``polygon``), every ROS 1
  field among them: Humble's definition; each message is read as ROS 1 and
  rebuilt field by field, the fields ROS 1 lacks left at their defaults;
* any other type: its own fields under ROS 2's naming rules (field names lower
  case, constants upper case, no repeated or edge underscores).

A definition whose names cannot follow those rules without colliding raises
``ValueError`` (the sensor is then written from its decoded data).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

_HEADER = "std_msgs/msg/Header"
_FIELD = re.compile(r"^[a-z](?:_?[a-z0-9]+)*$")
_CONSTANT = re.compile(r"^[A-Z](?:_?[A-Z0-9]+)*$")
_DTYPES = {"byte": "int8", "char": "uint8", "octet": "uint8", "bool": "bool"}


def ros2_name(name: str, *, constant: bool = False) -> str:
    """``name`` under ROS 2's rules (``D`` -> ``d``; a constant ``foo`` -> ``FOO``)."""
    out = re.sub("_+", "_", name.upper() if constant else name.lower()).strip("_")
    if not (_CONSTANT if constant else _FIELD).match(out):
        what = "constant" if constant else "field"
        raise ValueError(f"the ROS 1 {what} name {name!r} has no ROS 2 form")
    return out


def _renamed(msgtype: str, definition: Any) -> Any:
    consts, fields = definition
    names = [ros2_name(name) for name, _ in fields]
    cnames = [ros2_name(name, constant=True) for name, *_ in consts]
    if len(set(names)) != len(names) or len(set(cnames)) != len(cnames):
        raise ValueError(f"{msgtype}: its ROS 1 names collide once lower-cased for ROS 2")
    return (
        [(cname, *rest) for cname, (_, *rest) in zip(cnames, consts, strict=True)],
        [(name, desc) for name, (_, desc) in zip(names, fields, strict=True)],
    )


def _fits(ours: Any, theirs: Any) -> bool:
    """Every field of ``ours`` is in ``theirs`` under its name with the same description."""
    fields = dict(theirs[1])
    return all(fields.get(name) == desc for name, desc in ours[1])


def _dependencies(store: Any, msgtype: str, into: dict[str, Any]) -> None:
    """Add ``msgtype``'s nested types from ``store`` to ``into`` (those not there yet)."""
    from rosbags.interfaces import Nodetype

    for _, (node, desc) in store.fielddefs[msgtype][1]:
        sub = desc if node == Nodetype.NAME else None
        if node in (Nodetype.ARRAY, Nodetype.SEQUENCE) and desc[0][0] == Nodetype.NAME:
            sub = desc[0][1]
        if sub is not None and sub not in into:
            into[sub] = store.fielddefs[sub]
            _dependencies(store, sub, into)


def ros1_as_ros2(name: str, types: dict[str, Any]) -> tuple[Any, Any]:
    """``(store, source)`` for the ROS 1 type ``name`` whose parsed definition (rosbags'
    ``get_types_from_msg``) is ``types``: ``store`` holds it as ROS 2 defines it (module
    docstring); ``source`` is ``None`` when ``store.ros1_to_cdr`` converts its messages,
    else a store of the ROS 1 layout to read them with before :func:`convert`."""
    from rosbags.typesys import Stores, get_typestore

    humble = get_typestore(Stores.ROS2_HUMBLE)
    target: dict[str, Any] = {}
    source: dict[str, Any] = {}
    rebuilt = False
    for msgtype, definition in types.items():
        ours = _renamed(msgtype, definition)
        source[msgtype] = ours
        theirs = humble.fielddefs.get(msgtype)
        if msgtype == _HEADER:
            target[msgtype] = humble.fielddefs[_HEADER]
        elif theirs is not None and list(theirs[1]) == list(ours[1]):
            target[msgtype] = theirs
        elif theirs is not None and _fits(ours, theirs):
            target[msgtype] = theirs
            rebuilt = True
        else:
            target[msgtype] = ours
    for msgtype in list(target):
        if msgtype in humble.fielddefs and target[msgtype] is humble.fielddefs[msgtype]:
            _dependencies(humble, msgtype, target)
    store = get_typestore(Stores.EMPTY)
    store.register(target)
    if not rebuilt:
        return store, None
    reader = get_typestore(Stores.EMPTY)
    reader.register(source)
    return store, reader


def convert(msg: Any, msgtype: str, store: Any) -> Any:
    """``msg`` (read with a ROS 1 layout, ROS 2 names) as ``store``'s ``msgtype``: fields by
    name, those ``msg`` lacks at their defaults (0, '', empty), ``Header.seq`` dropped."""
    from rosbags.interfaces import Nodetype

    values: dict[str, Any] = {}
    for name, (node, desc) in store.fielddefs[msgtype][1]:
        if not hasattr(msg, name):
            values[name] = _default(node, desc, store)
            continue
        value = getattr(msg, name)
        if node == Nodetype.NAME:
            value = convert(value, desc, store)
        elif node in (Nodetype.ARRAY, Nodetype.SEQUENCE) and desc[0][0] == Nodetype.NAME:
            value = [convert(v, desc[0][1], store) for v in value]
        values[name] = value
    return store.types[msgtype](**values)


def _default(node: Any, desc: Any, store: Any) -> Any:
    from rosbags.interfaces import Nodetype

    if node == Nodetype.BASE:
        base = desc[0]
        if base == "string" or base == "wstring":
            return ""
        if base == "bool":
            return False
        return 0.0 if base.startswith("float") else 0
    if node == Nodetype.NAME:
        return store.types[desc](
            **{n: _default(k, d, store) for n, (k, d) in store.fielddefs[desc][1]}
        )
    (sub_node, sub_desc), size = desc
    count = size if node == Nodetype.ARRAY else 0
    if sub_node == Nodetype.BASE and sub_desc[0] not in ("string", "wstring"):
        return np.zeros(count, dtype=_DTYPES.get(sub_desc[0], sub_desc[0]))
    return [_default(sub_node, sub_desc, store) for _ in range(count)]
