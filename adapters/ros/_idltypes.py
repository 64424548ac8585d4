"""ROS 2 message types as Cyclone DDS types: built from rosbags' type store, carried as raw CDR.

Theory of operation. A DDS reader or writer needs a type; a ROS 2 node's
middleware names it ``pkg::msg::dds_::Type_`` and lays it out as the
message's ``.msg`` fields in order (the IDL that ``rosidl`` generates from
it). :func:`message_class` builds that type as a ``cyclonedds`` ``IdlStruct``
from the definition in a rosbags type store (the same store
:class:`~adapters.BagSource` decodes with): each nested message its own
struct with its own DDS name, ROS 2 primitives as their IDL types
(``bool`` -> ``boolean``, ``byte`` -> ``octet``, ``char`` -> ``uint8``,
``float64`` -> ``double``...; ``T[N]`` an array, ``T[]`` and ``T[<=N]``
sequences, ``string<=N`` a bounded string), ``@final`` extensibility and
sequential member ids, as rosidl's IDL has them. The type name and layout
are what ``rmw_cyclonedds_cpp`` announces (it sends the name only: its
types carry no XTypes type information, see ``docs/ros2.md``); where a peer
does send XTypes type information, this struct is what it is checked against.

The payload is never turned into Python objects by ``cyclonedds``: the
classes made here keep a sample's **serialised bytes**. ``deserialize``
(what ``DataReader.take`` calls) returns an instance holding the CDR bytes
it was given (:func:`sample_bytes`), and ``serialize`` (what
``DataWriter.write`` calls) returns the bytes an instance was made with
(:func:`raw_sample`). Decoding is left to rosbags' CDR deserialiser and
:mod:`adapters.bags`, so a message read live is the same frame as the same
message read from a bag, and its bytes can be written back untouched.

Cyclone DDS still checks every sample against the type (``dds_stream_normalize``
on both write and receive): a payload that does not fit the type is refused
by ``DataWriter.write`` and dropped on receipt before any reader sees it.

CDR sizes. Cyclone pads a payload to a multiple of 4 bytes. XTypes 1.3
(7.6.3.1.2) records such padding in the two low bits of the encapsulation
options; :func:`pad_cdr` does that before writing and :func:`unpad_cdr`
undoes it on receipt, so bytes that went through DDS are the bytes that were
sent. rmw_cyclonedds pads with zeros and leaves the options at 0; those bytes
stay as received (CDR readers, rosbags' included, allow 3 bytes of final
padding).
"""

from __future__ import annotations

import threading
from typing import Any

from adapters.ros._names import dds_type_name

_PRIMITIVES = {
    "bool": "bool",
    "byte": "byte",
    "char": "uint8",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "uint16": "uint16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "float32": "float32",
    "float64": "float64",
}
"""ROS 2 primitive -> ``cyclonedds.idl.types`` name (rosidl's IDL mapping)."""

_BASE, _NAME, _ARRAY, _SEQUENCE = 1, 2, 3, 4  # rosbags.interfaces.Nodetype values
_lock = threading.Lock()
_classes: dict[int, tuple[Any, dict[str, type]]] = {}
"""``id(typestore) -> (typestore, {msgtype: class})``: one class per type and store."""
_RAW = "_hf_raw"


class UnsupportedType(ValueError):
    """A message definition that has no DDS type here (a ``wstring``, an unknown type)."""


def message_class(typestore: Any, msgtype: str) -> type:
    """The ``cyclonedds`` ``IdlStruct`` class of ROS 2 ``msgtype`` from ``typestore``.

    ``typestore`` is a rosbags type store (``rosbags.typesys.get_typestore``)
    holding the type and every type it nests. The class is made once per
    store and type. Raises :class:`UnsupportedType` naming the field that has
    no DDS form, or the type when the store does not have it.
    """
    with _lock:
        entry = _classes.get(id(typestore))
        if entry is None or entry[0] is not typestore:
            entry = _classes[id(typestore)] = (typestore, {})
        return _build(typestore, msgtype, entry[1], ())


def _build(store: Any, msgtype: str, made: dict[str, type], stack: tuple[str, ...]) -> type:
    found = made.get(msgtype)
    if found is not None:
        return found
    if msgtype in stack:
        raise UnsupportedType(f"{msgtype} contains itself ({' -> '.join((*stack, msgtype))})")
    try:
        _, fields = store.fielddefs[msgtype]
    except KeyError:
        raise UnsupportedType(f"no definition of {msgtype} in the type store") from None
    from cyclonedds.idl import make_idl_struct

    annotations: dict[str, Any] = {}
    for name, desc in fields:
        try:
            annotations[name] = _field(store, desc, made, (*stack, msgtype))
        except UnsupportedType as err:
            if str(err).startswith(f"{msgtype}."):
                raise
            raise UnsupportedType(f"{msgtype}.{name}: {err}") from None
    typename = dds_type_name(msgtype)
    cls: Any = make_idl_struct(typename.rsplit("::", 1)[-1], typename, annotations)
    cls.deserialize = classmethod(_deserialize_raw)
    cls.serialize = _serialize_raw
    cls.__repr__ = _repr
    cls.__eq__ = _eq
    cls.__hash__ = None
    cls.ros_type = msgtype
    made[msgtype] = cls
    built: type = cls
    return built


def _field(store: Any, desc: Any, made: dict[str, type], stack: tuple[str, ...]) -> Any:
    from cyclonedds.idl import types as idl

    types: Any = idl

    kind, rest = int(desc[0]), desc[1]
    if kind == _BASE:
        name, bound = rest
        if name == "string":
            return types.bounded_str[bound] if bound else str
        if name == "bool":
            return bool
        if name not in _PRIMITIVES:
            raise UnsupportedType(f"type {name!r} has no DDS form here")
        return getattr(types, _PRIMITIVES[name])
    if kind == _NAME:
        return _build(store, rest, made, stack)
    if kind == _ARRAY:
        sub, length = rest
        return types.array[_field(store, sub, made, stack), length]
    if kind == _SEQUENCE:
        sub, bound = rest
        inner = _field(store, sub, made, stack)
        return types.sequence[inner, bound] if bound else types.sequence[inner]
    raise UnsupportedType(f"field kind {desc[0]!r} is not a ROS 2 field")


def _deserialize_raw(
    cls: type, data: bytes, has_header: bool = True, use_version_2: bool | None = None
) -> Any:
    """What ``DataReader.take`` gets: an instance holding the sample's CDR bytes."""
    return raw_sample(cls, unpad_cdr(data))


def _serialize_raw(self: Any, **_: Any) -> bytes:
    """What ``DataWriter.write`` sends: the bytes the instance was made with."""
    raw = self.__dict__.get(_RAW)
    if raw is None:
        raise TypeError(
            f"{type(self).__name__} carries CDR bytes: make it with raw_sample(cls, data)"
        )
    return pad_cdr(raw)


def _repr(self: Any) -> str:
    raw = self.__dict__.get(_RAW)
    size = "no bytes" if raw is None else f"{len(raw)} bytes"
    return f"{type(self).__name__}({size})"


def _eq(self: Any, other: Any) -> bool:
    if type(other) is not type(self):
        return False
    same: bool = self.__dict__.get(_RAW) == other.__dict__.get(_RAW)
    return same


def raw_sample(cls: type, data: bytes | bytearray | memoryview) -> Any:
    """An instance of ``cls`` (from :func:`message_class`) carrying CDR ``data``, to write."""
    sample: Any = object.__new__(cls)
    sample.__dict__[_RAW] = bytes(data)
    return sample


def sample_bytes(sample: Any) -> bytes:
    """The CDR bytes (4-byte encapsulation header first) a taken or made sample carries."""
    raw = sample.__dict__.get(_RAW)
    if raw is None:
        raise TypeError(f"{sample!r} carries no CDR bytes")
    return bytes(raw)


def pad_cdr(raw: bytes) -> bytes:
    """``raw`` padded with zeros to a multiple of 4, the padding recorded in the options."""
    pad = -len(raw) % 4
    if not pad or len(raw) < 4:
        return raw
    return raw[:3] + bytes([(raw[3] & 0xFC) | pad]) + raw[4:] + b"\0" * pad


def unpad_cdr(raw: bytes) -> bytes:
    """Undo :func:`pad_cdr`: drop the padding the options record (if any) and clear them."""
    if len(raw) < 8:
        return bytes(raw)
    pad = raw[3] & 3
    if not pad:
        return bytes(raw)
    return bytes(raw[:3]) + bytes([raw[3] & 0xFC]) + bytes(raw[4 : len(raw) - pad])
