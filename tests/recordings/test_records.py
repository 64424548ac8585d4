"""The chunk codec on its own: frames in, raw chunk, frames out, no file."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion._frames import Frame
from fusion.errors import FrameFormatError
from recordings.errors import CorruptChunk, LimitExceeded
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_reader import decode_frames, decompress_chunk
from recordings.hfr._format import BLOB_ALIGN
from recordings.hfr._layout import ChunkMeta

from .helpers import digest, make_frames, same_frame


def roundtrip(frames: list[Frame]) -> list[Frame]:
    builder = ChunkBuilder()
    for f in frames:
        builder.add(f)
    sealed = builder.seal()
    meta, parts, _ = encode_chunk(sealed, 3)
    raw = decompress_chunk(b"".join(parts[2:]), meta)
    return decode_frames(raw, meta)


def test_frames_survive_a_chunk_unchanged() -> None:
    frames = make_frames(60)
    back = roundtrip(frames)
    assert len(back) == 60
    assert all(same_frame(a, b) for a, b in zip(frames, back, strict=True))


def test_arrays_come_back_as_aligned_read_only_views() -> None:
    frame = Frame("cam", 0, 5, np.arange(1000, dtype=np.float64).reshape(10, 100))
    (back,) = roundtrip([frame])
    assert back.data.flags.writeable is False
    assert back.data.base is not None  # a view of the chunk, not a copy
    assert back.data.ctypes.data % BLOB_ALIGN == 0  # 8 KB: a large array
    np.testing.assert_array_equal(back.data, frame.data)


dtypes = st.one_of(
    hnp.integer_dtypes(endianness="="),
    hnp.unsigned_integer_dtypes(),
    hnp.floating_dtypes(endianness="<"),
    hnp.complex_number_dtypes(),
    hnp.boolean_dtypes(),
    st.just(np.dtype([("x", "<f4"), ("ring", "<u2"), ("v", "<f8", (2,))])),
)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)))
def test_any_numeric_array_round_trips_bit_exactly(arr: np.ndarray[Any, Any]) -> None:
    (back,) = roundtrip([Frame("s", 0, 0, arr)])
    assert back.data.dtype == arr.dtype
    assert back.data.shape == arr.shape
    assert back.data.tobytes() == arr.tobytes()


payloads = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=16),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=80, deadline=None)
@given(payloads, st.integers(-(2**63), 2**63 - 1), st.one_of(st.none(), st.integers(0, 2**62)))
def test_plain_values_and_times_round_trip(data: Any, t: int, ta: int | None) -> None:
    (back,) = roundtrip([Frame("x", 3, t, data, t_arrival=ta, meta={"k": data})])
    assert (back.t, back.t_sensor, back.t_arrival, back.seq) == (t, t, ta, 3)
    assert back.data == data
    assert back.meta == {"k": data}


def test_object_arrays_are_refused_and_the_chunk_is_unchanged() -> None:
    builder = ChunkBuilder()
    builder.add(Frame("a", 0, 0, np.zeros(4)))
    size = builder.size
    with pytest.raises(FrameFormatError, match=r"sensor 'a' seq 1: .*objects are never pickled"):
        builder.add(Frame("a", 1, 1, {"ok": np.ones(100), "bad": np.array([object()])}))
    assert (builder.count, builder.size) == (1, size)


def test_a_time_outside_int64_is_refused() -> None:
    with pytest.raises(FrameFormatError, match=r"t=18446744073709551616 does not fit in int64"):
        ChunkBuilder().add(Frame("a", 0, 2**64))


def test_unknown_payload_types_are_refused_by_name() -> None:
    with pytest.raises(FrameFormatError, match=r"cannot store a value of type object"):
        ChunkBuilder().add(Frame("a", 0, 0, object()))


def test_a_declared_size_over_the_limit_is_refused_before_allocating() -> None:
    builder = ChunkBuilder()
    builder.add(Frame("a", 0, 0, b"x"))
    meta, parts, _ = encode_chunk(builder.seal(), 3)
    huge = ChunkMeta.from_msgpack({**meta.to_msgpack(), "raw": 1 << 50})
    with pytest.raises(LimitExceeded, match=r"declares 1125899906842624 decompressed bytes"):
        decompress_chunk(parts[2], huge)


def test_a_payload_that_lies_about_its_size_is_corrupt() -> None:
    builder = ChunkBuilder()
    builder.add(Frame("a", 0, 0, np.zeros(1000)))
    meta, parts, _ = encode_chunk(builder.seal(), 3)
    smaller = ChunkMeta.from_msgpack({**meta.to_msgpack(), "raw": meta.raw_size - 8})
    with pytest.raises(CorruptChunk, match=r"chunk 0 .* zstd frame claims \d+ bytes"):
        decompress_chunk(parts[2], smaller)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"a": np.zeros(8)}, r"records do not decode .*overruns the chunk"),  # a record's array
        (np.zeros(8), r"records do not decode .*column region end \d+ is outside the blob"),
    ],
    ids=["record", "column"],
)
def test_an_array_reference_past_the_blob_is_corrupt_not_a_crash(data: Any, error: str) -> None:
    builder = ChunkBuilder()
    builder.add(Frame("a", 0, 0, data))
    sealed = builder.seal()
    raw = np.frombuffer(bytes(sealed.raw[: sealed.meta.records_size + 64]), np.uint8)
    cut = ChunkMeta.from_msgpack({**sealed.meta.to_msgpack(), "raw": len(raw)})
    with pytest.raises(CorruptChunk, match=error):
        decode_frames(raw, cut)


def test_incompressible_chunks_are_stored_raw() -> None:
    rng = np.random.default_rng(1)
    frame = Frame("n", 0, 0, rng.integers(0, 256, 100_000, dtype=np.uint8))
    (back,) = roundtrip([frame])
    assert digest(back.data) == digest(frame.data)
