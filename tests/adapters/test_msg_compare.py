"""A ROS 2 bag's stored ``.msg`` text compared with a distribution's type without parsing
it (adapters/ros/_msg_compare.py). Real input: the definitions rosbag2 stored in the
talker bag (../shared/data), against rosbags' own text of the Humble types. The
property: a text rendered with any comments, blank lines, spacing and relative names
compares equal; any one change to a field does not."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from adapters.ros._msg_compare import fields_by_type, same_definition

REAL_BAGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"
SEP = "=" * 80


def test_the_talker_bags_stored_texts_are_the_humble_types() -> None:
    store = get_typestore(Stores.ROS2_HUMBLE)
    with AnyReader([REAL_BAGS / "rosbag2_talker"], default_typestore=store) as reader:
        stored = {c.msgtype: c.msgdef.data for c in reader.connections}
    assert set(stored) == {
        "std_msgs/msg/String",
        "rcl_interfaces/msg/Log",
        "rcl_interfaces/msg/ParameterEvent",
    }
    assert stored["std_msgs/msg/String"].startswith("# This was originally provided")
    for msgtype, text in stored.items():
        generated = store.generate_msgdef(msgtype, ros_version=2)[0]
        assert same_definition(text, generated, msgtype), msgtype
    # ParameterEvent's text names its nested types relative to the package: under
    # another type's name they resolve to another package, and do not compare equal.
    text = stored["rcl_interfaces/msg/ParameterEvent"]
    generated = store.generate_msgdef("rcl_interfaces/msg/ParameterEvent", ros_version=2)[0]
    assert not same_definition(text, generated, "other_pkg/msg/ParameterEvent")
    event = fields_by_type(
        stored["rcl_interfaces/msg/ParameterEvent"], "rcl_interfaces/msg/ParameterEvent"
    )
    assert event is not None
    assert event["rcl_interfaces/ParameterEvent"][2] == (
        "rcl_interfaces/Parameter[] new_parameters"
    )
    # Each of these changes makes the texts differ.
    log = stored["rcl_interfaces/msg/Log"]
    generated = store.generate_msgdef("rcl_interfaces/msg/Log", ros_version=2)[0]
    for old, new in [
        ("uint32 line", "uint64 line"),
        ("string msg", "string message"),
        ("byte WARN=30", "byte WARN=31"),
        ("string file", "string file\nstring extra"),
        ("builtin_interfaces/Time stamp", "builtin_interfaces/Duration stamp"),
    ]:
        assert old in log
        assert not same_definition(log.replace(old, new), generated, "rcl_interfaces/msg/Log")


def test_what_the_comparison_does_not_understand_is_a_no() -> None:
    base = "int32 x\nstring name\n"
    assert same_definition(base, base, "p/msg/T")
    assert same_definition("# c\n\nint32   x   # x\nstring name\n", base, "p/msg/T")
    assert not same_definition("int32 x 5\nstring name\n", base, "p/msg/T")  # a default
    assert not same_definition("", "", "std_msgs/msg/Empty")  # no fields: a placeholder
    assert not same_definition("int32\n", "int32\n", "p/msg/T")  # not "type name"
    # A dependency the bag does not define is not assumed.
    nested = f"Q q\n{SEP}\nMSG: p/Q\nint8 a\n"
    assert same_definition(nested, nested, "p/msg/T")
    assert not same_definition("Q q\n", nested, "p/msg/T")
    # A '#' inside a string constant is the constant's.
    quoted = 'string A="x#y"\nint8 b\n'
    assert fields_by_type(quoted, "p/msg/T") == {"p/T": ('string A="x#y"', "int8 b")}
    assert not same_definition('string A="x#z"\nint8 b\n', quoted, "p/msg/T")
    # Header is std_msgs/Header; pkg/msg/T is pkg/T.
    assert fields_by_type("Header h\np/msg/Q q\n", "p/msg/T") == {
        "p/T": ("std_msgs/Header h", "p/Q q")
    }


primitive = st.sampled_from(["bool", "int8", "uint32", "float64", "string", "byte"])
suffix = st.sampled_from(["", "[]", "[3]", "[<=4]"])
name = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
nested = st.sampled_from(["Point", "Pose"])  # types of the message's own package


@st.composite
def definitions(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """Fields ``(type, suffix, name)`` of a message in package ``pkg``."""
    types = draw(st.lists(st.one_of(primitive, nested), min_size=1, max_size=8))
    names = draw(st.lists(name, min_size=len(types), max_size=len(types), unique=True))
    suffixes = draw(st.lists(suffix, min_size=len(types), max_size=len(types)))
    return list(zip(types, suffixes, names, strict=True))


def render(fields: list[tuple[str, str, str]], absolute: bool, comments: bool) -> str:
    lines = ["# a message" if comments else ""]
    for typ, suf, nm in fields:
        shown = f"pkg/msg/{typ}" if absolute and typ[0].isupper() else typ
        lines.append(f"{shown}{suf}  {nm}" + ("  # the field" if comments else ""))
    text = "\n".join(lines) + "\n"
    for dep in ("Point", "Pose"):
        text += f"{SEP}\nMSG: pkg/{dep}\nfloat64 x\n"
    return text


@given(definitions(), st.booleans(), st.booleans())
def test_any_rendering_of_a_definition_compares_equal(
    fields: list[tuple[str, str, str]], absolute: bool, comments: bool
) -> None:
    generated = render(fields, absolute=True, comments=False)
    assert same_definition(render(fields, absolute, comments), generated, "pkg/msg/T")


@given(definitions(), st.data())
def test_any_one_change_to_a_field_compares_different(
    fields: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    generated = render(fields, absolute=True, comments=False)
    i = data.draw(st.integers(0, len(fields) - 1))
    typ, suf, nm = fields[i]
    change = data.draw(st.sampled_from(["type", "suffix", "name", "drop", "add", "swap"]))
    changed = list(fields)
    if change == "type":
        other = data.draw(st.one_of(primitive, nested).filter(lambda t: t != typ))
        changed[i] = (other, suf, nm)
    elif change == "suffix":
        changed[i] = (typ, data.draw(suffix.filter(lambda s: s != suf)), nm)
    elif change == "name":
        changed[i] = (typ, suf, nm + "x")
    elif change == "drop":
        del changed[i]
    elif change == "add":
        changed.insert(i, ("int64", "", "zz_added"))
    elif len(fields) > 1 and fields[i] != fields[(i + 1) % len(fields)]:
        j = (i + 1) % len(fields)
        changed[i], changed[j] = changed[j], changed[i]
    if changed == fields or not changed:
        return  # nothing changed (a swap of one field), or no field left to compare
    assert not same_definition(render(changed, False, True), generated, "pkg/msg/T")
