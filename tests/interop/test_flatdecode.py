"""The generated generic decoders give what rosbags' deserialiser + ``decode_generic`` give.

hypothesis draws message types (nested, arrays, bounded and unbounded
sequences, strings, every primitive; the types of
``test_message_property``) and values, serialised by rosbags as ROS 1 or CDR;
every real bag's generic messages are checked the same way. Same keys in the
same order, dtypes, shapes and values, header stamp and ``frame_id``; bytes
that do not parse raise, so BagSource hands them to rosbags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from adapters.bags._reader import BagReader, decompress_message
from adapters.ros._flatdecode import compile_flat
from adapters.ros._messages import decode_generic, decoder_info, header_stamp
from adapters.ros._rawdecode import RAW_ERRORS, Malformed
from tests.interop.test_message_property import cases

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real"


def assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], where: str) -> None:
    assert list(got) == list(want), where
    for key, w in want.items():
        g = got[key]
        assert (g.dtype, g.shape) == (w.dtype, w.shape), f"{where} {key}"
        assert np.array_equal(g, w, equal_nan=w.dtype.kind in "fc"), f"{where} {key}"


def reference(store: Any, raw: bytes, msgtype: str, cdr: bool) -> tuple[Any, ...]:
    msg = store.deserialize_cdr(raw, msgtype) if cdr else store.deserialize_ros1(raw, msgtype)
    data, _ = decode_generic(msg)
    frame_id = getattr(getattr(msg, "header", None), "frame_id", None)
    return header_stamp(msg), frame_id, data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_generated_decoders_equal_rosbags_then_decode_generic(
    case: tuple[dict[str, Any], list[Any], Any],
) -> None:
    d, messages, store = case
    cdr = not d["ros1"]
    decode = compile_flat("hfprop/msg/Top", store, cdr)
    assert decode is not None
    for msg in messages:
        raw = bytes(
            store.serialize_cdr(msg, "hfprop/msg/Top")
            if cdr
            else store.serialize_ros1(msg, "hfprop/msg/Top")
        )
        stamp, frame_id, want = reference(store, raw, "hfprop/msg/Top", cdr)
        got_stamp, got_frame, got, meta = decode(raw)
        assert (got_stamp, got_frame, meta) == (stamp, frame_id, {})
        assert_same(got, want, "Top")
        # Cut short, the bytes do not parse: BagSource then asks rosbags.
        if len(raw) > 5:
            with pytest.raises((Malformed, *RAW_ERRORS)):
                decode(raw[: len(raw) // 2] if cdr else raw[:-1])


@pytest.mark.parametrize("cdr", [False, True])
@pytest.mark.parametrize("value", [[""], ["", "a"], [], ["abc", ""]])
def test_a_sequence_of_empty_strings_decodes(cdr: bool, value: list[str]) -> None:
    """hypothesis found it: an empty ROS 1 string is 4 bytes (no NUL), so a sequence of
    them is shorter than CDR's 5-byte minimum per string."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg("int8 f1\nstring[] f0", "hfstr/msg/Top"))
    msg = store.types["hfstr/msg/Top"](f0=value, f1=7)
    raw = bytes(
        store.serialize_cdr(msg, "hfstr/msg/Top")
        if cdr
        else store.serialize_ros1(msg, "hfstr/msg/Top")
    )
    decode = compile_flat("hfstr/msg/Top", store, cdr)
    assert decode is not None
    _, _, want = reference(store, raw, "hfstr/msg/Top", cdr)
    _, _, got, meta = decode(raw)
    assert meta == {}
    assert_same(got, want, "Top")


def real_bags() -> list[Path]:
    out: list[Path] = []
    for folder in ("bags", "bags-rosbag2"):
        if (REAL / folder).is_dir():
            out += sorted(p for p in (REAL / folder).iterdir() if p.suffix not in (".md", ".json"))
    return out


BAGS = real_bags()


@pytest.mark.skipif(not BAGS, reason="no real bags")
@pytest.mark.parametrize("path", BAGS, ids=[p.name for p in BAGS])
def test_every_generic_message_of_every_real_bag_decodes_as_rosbags_does(path: Path) -> None:
    with BagReader(path) as reader:
        decoders: dict[str, Any] = {}
        for conn, _, raw in reader.messages():
            if conn.topic in reader.unreadable or decoder_info(conn.msgtype).name != "generic":
                continue
            if conn.msgtype not in decoders:
                decoders[conn.msgtype] = compile_flat(conn.msgtype, reader.typestore, reader.is2)
            decode = decoders[conn.msgtype]
            assert decode is not None, conn.msgtype
            if reader.message_compression:
                raw = decompress_message(raw)
            stamp, frame_id, want = reference(reader.typestore, raw, conn.msgtype, reader.is2)
            got_stamp, got_frame, got, _ = decode(raw)
            assert (got_stamp, got_frame) == (stamp, frame_id), conn.topic
            assert_same(got, want, conn.topic)
