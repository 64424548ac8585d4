"""Property: any message definition (nested, arrays, strings, constants) survives the round trip.

hypothesis draws a type (``hfprop/msg/Top`` with an ``hfprop/msg/Sub``),
messages of it are built and serialised with rosbags, written to a ROS 1 or
ROS 2 bag, read by BagSource, recorded, exported with the ``ros2`` and
``foxglove`` profiles and read back with rosbags (and the mcap reader):
every message equals the original field for field, and the exported
definition still has the constants.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters import BagSource
from recordings import Recorder
from recordings.outputs._export import export_recording
from tests.interop.rosmsgs import assert_same_message, read_mcap_cdr

INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
BASES = [*INTS, "float32", "float64", "bool", "string"]
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6)


def base_value(name: str) -> st.SearchStrategy[Any]:
    if name in INTS:
        return st.integers(*INTS[name])
    if name == "float32":
        return st.floats(width=32, allow_nan=False)
    if name == "float64":
        return st.floats(allow_nan=True)
    if name == "bool":
        return st.booleans()
    return TEXT


# A field: (name, base type or "Sub", shape) with shape None (scalar), 0 (sequence),
# ("fixed", n), or ("bounded", n) (ROS 2 only).
ROS1_SHAPES = st.one_of(st.none(), st.just(0), st.tuples(st.just("fixed"), st.integers(1, 3)))
ROS2_SHAPES = st.one_of(ROS1_SHAPES, st.tuples(st.just("bounded"), st.integers(1, 3)))


@st.composite
def definitions(draw: st.DrawFn) -> dict[str, Any]:
    ros1 = draw(st.booleans())
    shapes = ROS1_SHAPES if ros1 else ROS2_SHAPES
    sub = [
        (f"s{i}", draw(st.sampled_from(BASES)), draw(shapes))
        for i in range(draw(st.integers(1, 3)))
    ]
    top = [
        (f"f{i}", draw(st.sampled_from([*BASES, "Sub"])), draw(shapes))
        for i in range(draw(st.integers(1, 5)))
    ]
    consts = [
        (
            f"C{i}",
            kind,
            draw(st.integers(0, 100)) if kind != "string" else draw(st.sampled_from(["x", "on"])),
        )
        for i, kind in enumerate(
            draw(st.lists(st.sampled_from(["int32", "uint8", "string"]), max_size=3))
        )
    ]
    return {"ros1": ros1, "sub": sub, "top": top, "consts": consts}


def _type_text(base: str, shape: Any, ros1: bool) -> str:
    name = "hfprop/Sub" if base == "Sub" else base
    if shape is None:
        return name
    if shape == 0:
        return f"{name}[]"
    return f"{name}[{shape[1]}]" if shape[0] == "fixed" else f"{name}[<={shape[1]}]"


def msg_text(d: dict[str, Any]) -> str:
    lines = [f"{k} {n}={v}" for n, k, v in d["consts"]]
    lines += [f"{_type_text(b, s, d['ros1'])} {n}" for n, b, s in d["top"]]
    sub = [f"{_type_text(b, s, d['ros1'])} {n}" for n, b, s in d["sub"]]
    return "\n".join(lines) + "\n" + "=" * 80 + "\nMSG: hfprop/Sub\n" + "\n".join(sub) + "\n"


def value(draw: st.DrawFn, store: Any, base: str, shape: Any) -> Any:
    def one() -> Any:
        if base == "Sub":
            return make(draw, store, "hfprop/msg/Sub")
        return draw(base_value(base))

    if shape is None:
        return one()
    n = (
        shape[1]
        if shape != 0 and shape[0] == "fixed"
        else draw(st.integers(0, shape[1] if shape else 3))
    )
    items = [one() for _ in range(n)]
    if base in ("Sub", "string"):
        return items
    dtype = "bool" if base == "bool" else base
    return np.array(items, dtype=dtype)


FIELDS: dict[str, list[tuple[str, str, Any]]] = {}


def make(draw: st.DrawFn, store: Any, typename: str) -> Any:
    values = {n: value(draw, store, b, s) for n, b, s in FIELDS[typename]}
    return store.types[typename](**values)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any], Any]:
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    d = draw(definitions())
    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg(msg_text(d), "hfprop/msg/Top"))
    FIELDS["hfprop/msg/Sub"] = d["sub"]
    FIELDS["hfprop/msg/Top"] = d["top"]
    messages = [make(draw, store, "hfprop/msg/Top") for _ in range(draw(st.integers(1, 3)))]
    return d, messages, store


def write_bag(path: Path, ros1: bool, store: Any, messages: list[Any]) -> None:
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2

    writer: Any = (
        Writer1(path) if ros1 else Writer2(path, version=9, storage_plugin=StoragePlugin.MCAP)
    )
    with writer:
        conn = writer.add_connection("/prop", "hfprop/msg/Top", typestore=store)
        for i, msg in enumerate(messages):
            raw = (
                store.serialize_ros1(msg, "hfprop/msg/Top")
                if ros1
                else store.serialize_cdr(msg, "hfprop/msg/Top")
            )
            writer.write(conn, 1_000 + i, bytes(raw))


async def record(bag: Path, out: Path) -> None:
    source = BagSource(bag)
    with Recorder(out, sensors=source.specs) as rec:
        async with source:
            async for frame in source.frames():
                rec.write(frame)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_message_types_round_trip_unchanged(
    case: tuple[dict[str, Any], list[Any], Any],
) -> None:
    from rosbags.highlevel import AnyReader

    d, messages, _ = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bag = root / ("prop.bag" if d["ros1"] else "prop")
        write_bag(bag, d["ros1"], case[2], messages)
        anyio.run(record, bag, root / "prop.hfr")
        report = export_recording(root / "prop.hfr", root / "out.mcap", to="ros2")
        assert report.complete
        assert report.exported["prop"] == len(messages)
        with AnyReader([root / "out.mcap"]) as reader:
            got = [
                (t, c.msgtype, reader.deserialize(raw, c.msgtype))
                for c, t, raw in reader.messages()
            ]
            cls = reader.typestore.types["hfprop/msg/Top"]
        fox = export_recording(root / "prop.hfr", root / "fox.mcap", to="foxglove")
        assert fox.complete
        via_foxglove = [m for tp, _, _, _, m in read_mcap_cdr(root / "fox.mcap") if tp == "/prop"]
    assert len(via_foxglove) == len(messages)
    for want, msg in zip(messages, via_foxglove, strict=True):
        assert_same_message(want, msg, "Top (foxglove)")
    assert [(t, ty) for t, ty, _ in got] == [
        (1_000 + i, "hfprop/msg/Top") for i in range(len(messages))
    ]
    for want, (_, _, msg) in zip(messages, got, strict=True):
        assert_same_message(want, msg, "Top")
    for name, _, constant in d["consts"]:
        assert getattr(cls, name) == constant
