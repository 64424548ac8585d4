"""Property: for any ROS 2 message definition, the Cyclone DDS type built from it has the
layout rosbags serialises (the same bytes back from Cyclone's own CDR machinery).

Definitions are drawn field by field (every primitive, strings, bounded strings, fixed
arrays, sequences, a nested message alone and in a sequence); the values too, so
sequence and string lengths move every later field's alignment.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from adapters.ros import dds_type_name, message_class

NUMERIC = {
    "int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4",
    "int64": "i8", "uint64": "u8", "float32": "f4", "float64": "f8", "char": "u1",
    "byte": "i1",  # rosbags reads and writes ROS 2 byte (an IDL octet) as a signed int8
}  # fmt: skip
BASE = [*NUMERIC, "bool", "string", "string<=4"]
_names = itertools.count()

field = st.tuples(st.sampled_from(BASE), st.sampled_from(["", "[2]", "[]"]))
fields = st.lists(field, min_size=1, max_size=6)


def _scalar(draw: Any, base: str) -> Any:
    if base == "bool":
        return draw(st.booleans())
    if base.startswith("string"):
        size = 4 if base == "string<=4" else 8
        return draw(st.text("abcxyz", max_size=size))
    kind = np.dtype(NUMERIC[base])
    if kind.kind == "f":
        return draw(st.floats(width=kind.itemsize * 8, allow_nan=False))
    info = np.iinfo(kind)
    return draw(st.integers(int(info.min), int(info.max)))


def _value(draw: Any, base: str, shape: str, store: Any, sub: str) -> Any:
    count = 2 if shape == "[2]" else draw(st.integers(0, 3))
    if base == "Sub":
        make = store.types[sub]
        items = [make(*[_value(draw, b, s, store, sub) for b, s in sub_fields(store, sub)])]
        return items[0] if not shape else [items[0]] * count
    if not shape:
        return _scalar(draw, base)
    items = [_scalar(draw, base) for _ in range(count)]
    if base.startswith("string"):
        return items
    return np.array(items, dtype=bool if base == "bool" else NUMERIC[base])


def sub_fields(store: Any, name: str) -> list[tuple[str, str]]:
    return store.hf_fields[name]  # type: ignore[no-any-return]


@settings(max_examples=40, deadline=None)
@given(fields, fields, st.data())
def test_any_definition_has_the_layout_rosbags_serialises(
    top: list[tuple[str, str]], nested: list[tuple[str, str]], data: Any
) -> None:
    n = next(_names)
    package = f"hf_prop{n}"
    sub, msg = f"{package}/msg/Sub", f"{package}/msg/Top"
    top = [*top, ("Sub", ""), ("Sub", "[]")]
    text_sub = "\n".join(f"{b}{s} s{i}" for i, (b, s) in enumerate(nested))
    text_top = "\n".join(f"{b}{s} f{i}" for i, (b, s) in enumerate(top))
    store = get_typestore(Stores.EMPTY)
    store.register({**get_types_from_msg(text_sub, sub), **get_types_from_msg(text_top, msg)})
    store.hf_fields = {sub: nested}
    value = store.types[msg](*[_value(data.draw, b, s, store, sub) for b, s in top])
    raw = bytes(store.serialize_cdr(value, msg))

    cls = message_class(store, msg)
    assert cls.__idl_typename__ == dds_type_name(msg)  # type: ignore[attr-defined]
    again = cls.__idl__.serialize(cls.__idl__.deserialize(raw))  # type: ignore[attr-defined]
    assert again[: len(raw)] == raw
    assert set(again[len(raw) :]) <= {0}
    assert len(again) - len(raw) <= 3
