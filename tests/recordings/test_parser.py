"""The shared sans-I/O record parser: bytes in, a verified head, NeedMore or an error out."""

from __future__ import annotations

import zlib

import msgpack
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from recordings.errors import CorruptChunk, LimitExceeded, RecordingError, TruncatedRecording
from recordings.hfr._chunk_reader import NeedMore, RecordHead, parse_record_head
from recordings.hfr._format import PRELUDE, RecordKind, crc32, pack_prelude
from recordings.hfr._limits import ReadLimits
from recordings.hfr._parser import header_contents

LIMIT = 1 << 16


def record(meta: object, payload: bytes = b"", kind: int = RecordKind.HEADER) -> bytes:
    meta_bytes = msgpack.packb(meta)
    return pack_prelude(kind, meta_bytes, len(payload), crc32(payload)) + meta_bytes + payload


def parse(data: bytes, available: int | None = None) -> RecordHead | NeedMore | RecordingError:
    return parse_record_head(
        data,
        offset=100,
        where="x.hfr",
        limits=ReadLimits(max_meta_bytes=LIMIT),
        available=available,
    )


def test_a_whole_record_parses_to_its_kind_meta_and_lengths() -> None:
    data = record({"sensors": []}, b"abc", kind=RecordKind.CHUNK)
    head = parse(data)
    assert isinstance(head, RecordHead)
    assert (head.kind, head.meta, head.payload_len) == (RecordKind.CHUNK, {"sensors": []}, 3)
    assert head.payload_crc == crc32(b"abc")
    assert head.payload_offset == 100 + len(data) - 3
    assert head.end == 100 + len(data)


def test_the_parser_asks_for_the_prelude_then_for_the_meta() -> None:
    data = record({"k": "v" * 50})
    assert parse(data[:5]) == NeedMore(PRELUDE.size)
    assert parse(data[: PRELUDE.size]) == NeedMore(len(data))
    assert isinstance(parse(data), RecordHead)


def test_bad_sync_bytes_say_no_record_starts_here() -> None:
    data = b"XYZ" + record({})[3:]
    err = parse(data)
    assert isinstance(err, CorruptChunk)
    assert str(err) == "x.hfr, byte 100: no record starts here (bad sync bytes)"


def test_a_changed_meta_byte_fails_the_crc() -> None:
    data = bytearray(record({"name": "camera"}))
    data[-2] ^= 0x01
    err = parse(bytes(data))
    assert isinstance(err, CorruptChunk)
    assert "fails its CRC" in str(err)


def test_a_meta_length_over_the_limit_is_a_limit_unless_it_runs_past_the_end() -> None:
    meta = msgpack.packb({"a": "b" * (LIMIT + 1)})
    data = pack_prelude(RecordKind.HEADER, meta, 0, 0) + meta
    assert isinstance(parse(data), LimitExceeded)
    err = parse(data[:40], available=40)
    assert isinstance(err, CorruptChunk)
    assert "runs past the end of the file" in str(err)


def test_a_payload_running_past_the_available_bytes_is_truncation() -> None:
    data = record({}, b"0123456789", kind=7)
    err = parse(data, available=len(data) - 4)
    assert isinstance(err, TruncatedRecording)
    assert "4 of its bytes are missing" in str(err)


def test_header_contents_keep_good_specs_and_drop_bad_ones() -> None:
    specs, metadata = header_contents(
        {"sensors": [{"name": "cam", "kind": "camera"}, "junk", 3], "metadata": {"a": 1}}
    )
    assert [s.name for s in specs] == ["cam"]
    assert metadata == {"a": 1}
    assert header_contents(["not", "a", "map"]) == ([], None)


@given(
    st.dictionaries(
        st.text(max_size=8), st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8), max_size=5
    ),
    st.binary(max_size=64),
    st.data(),
)
def test_fed_in_pieces_the_parser_gives_the_same_head_as_whole(
    meta: dict[str, object], payload: bytes, data: st.DataObject
) -> None:
    raw = record(meta, payload, kind=RecordKind.CHUNK)
    whole = parse(raw)
    got = data.draw(st.integers(0, len(raw)))
    fed = raw[:got]
    while isinstance(step := parse(fed), NeedMore):
        assert step.size > len(fed)
        fed = raw[: step.size]
    assert step == whole


@given(st.binary(min_size=0, max_size=200))
def test_any_bytes_give_a_head_need_more_or_a_recording_error(data: bytes) -> None:
    result = parse(data, available=len(data))
    assert isinstance(result, RecordHead | NeedMore | RecordingError)


@given(st.lists(st.binary(max_size=3000), max_size=5))
def test_crc32_over_parts_is_zlibs_crc32_of_their_concatenation(parts: list[bytes]) -> None:
    # crc32 may run on ISA-L (isal); files must keep zlib's values either way.
    joined = b"".join(parts)
    assert crc32(*parts) == zlib.crc32(joined)
    assert crc32(*(memoryview(p) for p in parts)) == zlib.crc32(joined)


def test_crc32_of_a_chunk_sized_buffer_is_zlibs() -> None:
    data = np.random.default_rng(5).integers(0, 256, 2 << 20, dtype=np.uint8)
    assert crc32(data.data[:12345], data.data[12345:]) == zlib.crc32(data.tobytes())
