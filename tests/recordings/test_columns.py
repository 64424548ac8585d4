"""Columnar chunks (format 1.1): small arrays as columns, mixed with msgpack records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion._frames import Frame
from fusion.errors import FrameFormatError
from recordings import Recorder, open_recording
from recordings.errors import CorruptChunk
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_reader import DecodedChunk, decode_chunk, decompress_chunk
from recordings.hfr._format import VERSION_MAJOR, VERSION_MINOR, RecordKind

from .helpers import same_frame


def seal(frames: list[Frame]) -> DecodedChunk:
    builder = ChunkBuilder()
    for f in frames:
        builder.add(f)
    meta, parts, _ = encode_chunk(builder.seal(), 3)
    raw = decompress_chunk(b"".join(parts[2:]), meta)
    return decode_chunk(raw, meta)


def mixed(n: int) -> list[Frame]:
    """IMU rows (some with meta, some with t_sensor != t), GPS without arrival, records."""
    out: list[Frame] = []
    seqs: dict[str, int] = {}
    for i in range(n):
        kind = ("imu", "imu", "gps", "cam", "note", "imu32")[i % 6]
        seq = seqs.get(kind, 0)
        seqs[kind] = seq + 1
        t = 1_000 * i
        if kind == "imu":
            meta: dict[str, Any] = {"t_true": t - 3} if seq % 3 == 0 else {}
            out.append(
                Frame(
                    "imu",
                    seq,
                    t,
                    np.arange(6.0) + i,
                    t_sensor=t - seq % 2,
                    t_arrival=t + 9,
                    meta=meta,
                )
            )
        elif kind == "gps":
            out.append(Frame("gps", seq, t, np.array([i, -i], np.int32)))
        elif kind == "cam":
            out.append(
                Frame("cam", seq, t, np.full((40, 40, 3), i % 256, np.uint8), t_arrival=t + 1)
            )
        elif kind == "note":
            out.append(Frame("note", seq, t, {"text": f"n{i}", "v": np.ones(2)}, t_arrival=t))
        else:  # same sensor name as a float64 group, other dtype: its own group
            out.append(Frame("imu", seq + 10_000, t, np.arange(3, dtype=">f4"), t_arrival=t))
    return out


def test_small_arrays_become_columns_and_come_back_identical() -> None:
    frames = mixed(300)
    decoded = seal(frames)
    assert decoded.meta.kind == RecordKind.COLUMNS
    back = list(decoded.frames())
    assert len(back) == len(frames)
    assert all(same_frame(a, b) for a, b in zip(frames, back, strict=True))
    assert [type(f) for f in back] == [Frame] * len(back)
    assert back[3].data.shape == (40, 40, 3)  # large: a record, not a column


def test_column_payloads_are_read_only_views_of_one_stack() -> None:
    frames = [Frame("imu", i, i, np.arange(6.0) * i) for i in range(50)]
    back = list(seal(frames).frames())
    assert all(f.data.flags.writeable is False for f in back)
    assert back[0].data.base is not None
    assert np.shares_memory(back[1].data, back[2].data.base)  # rows of one array
    assert back[1].data.ctypes.data + 48 == back[2].data.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        back[0].data[0] = 1.0
    assert back[0].meta == {}
    back[0].meta["x"] = 1  # each frame owns its meta
    assert back[1].meta == {}


@pytest.mark.parametrize("rows", [20, 3000])
def test_column_head_in_front_of_the_arrays_or_joined(rows: int) -> None:
    """A column head that fits the room kept in front of the record arrays is written
    there (no second copy of the arrays); 3,000 rows (about 200 KB of columns) do not
    fit and are joined: both give the same frames back."""
    frames: list[Frame] = []
    for i in range(rows):
        frames.append(Frame("imu", i, i * 1000, np.arange(6.0) + i, t_arrival=i * 1000 + 5))
        if i % 10 == 0:
            frames.append(Frame("cam", i, i * 1000, np.full((64, 64, 3), i % 256, np.uint8)))
    builder = ChunkBuilder()
    for f in frames:
        builder.add(f)
    sealed = builder.seal()
    assert sealed.meta.kind == RecordKind.COLUMNS
    meta, parts, _ = encode_chunk(sealed, 3)
    back = list(decode_chunk(decompress_chunk(b"".join(parts[2:]), meta), meta).frames())
    assert len(back) == len(frames)
    assert all(same_frame(a, b) for a, b in zip(frames, back, strict=True))


def test_a_chunk_without_small_arrays_keeps_the_1_0_layout() -> None:
    decoded = seal([Frame("a", 0, 0, b"bytes"), Frame("a", 1, 1, np.zeros(5000))])
    assert decoded.meta.kind == RecordKind.CHUNK
    assert "k" not in decoded.meta.to_msgpack()


def test_a_float_stamp_takes_the_record_path_like_in_1_0() -> None:
    frames = [Frame("imu", 0, 0, np.zeros(3)), Frame("imu", 1, 1.0, np.ones(3))]  # type: ignore[arg-type]
    back = list(seal(frames).frames())
    assert [(f.seq, f.t, type(f.t)) for f in back] == [(0, 0, int), (1, 1, int)]


def test_a_bad_row_is_refused_and_leaves_the_chunk_unchanged() -> None:
    builder = ChunkBuilder()
    builder.add(Frame("imu", 0, 0, np.zeros(3), meta={"a": 1}))
    size, count = builder.size, builder.count
    with pytest.raises(FrameFormatError, match=r"sensor 'imu' seq 1: .*does not fit in int64"):
        builder.add(Frame("imu", 1, 2**63, np.zeros(3)))
    with pytest.raises(FrameFormatError, match=r"objects are never pickled"):
        builder.add(Frame("imu", 2, 2, np.zeros(3), meta={"bad": np.array([object()])}))
    assert (builder.size, builder.count) == (size, count)
    back = list(seal([Frame("imu", 0, 0, np.zeros(3), meta={"a": 1})]).frames())
    assert back[0].meta == {"a": 1}


templates = st.sampled_from(
    [
        ("imu", np.arange(6.0)),
        ("imu", np.arange(4, dtype=np.int16)),
        ("gps", np.arange(2, dtype=np.float32)),
        ("pt", np.array([(1.5, 3)], dtype=[("x", "<f4"), ("ring", "<u2")])),
        ("img", np.zeros((3, 5, 2), np.uint8)),
        ("raw", b"bytes"),
        ("big", np.zeros(600)),
        ("zero", np.array(4.0)),
    ]
)
rows = st.lists(
    st.tuples(
        templates,
        st.integers(-(2**40), 2**40),
        st.integers(-5, 5),
        st.one_of(st.none(), st.integers(0, 2**40)),
        st.booleans(),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    rows,
    st.one_of(st.none(), st.frozensets(st.sampled_from(["imu", "gps", "pt", "raw"]))),
    st.one_of(st.none(), st.integers(-(2**40), 2**40)),
    st.one_of(st.none(), st.integers(-(2**40), 2**40)),
)
def test_any_mix_round_trips_and_filters_like_a_list(
    spec: list[tuple[tuple[str, Any], int, int, int | None, bool]],
    wanted: frozenset[str] | None,
    lo: int | None,
    hi: int | None,
) -> None:
    frames = []
    for seq, ((name, data), t, dts, ta, with_meta) in enumerate(spec):
        plain = isinstance(data, np.ndarray) and data.dtype.fields is None
        value = np.array(data + seq, data.dtype) if plain else data
        meta = {"seq": seq} if with_meta else {}
        frames.append(Frame(name, seq, t, value, t_sensor=t + dts, t_arrival=ta, meta=meta))
    decoded = seal(frames)
    assert all(same_frame(a, b) for a, b in zip(frames, decoded.frames(), strict=True))
    expected = [
        (f.sensor, f.seq)
        for f in frames
        if (wanted is None or f.sensor in wanted)
        and (lo is None or f.t >= lo)
        and (hi is None or f.t < hi)
    ]
    assert [(f.sensor, f.seq) for f in decoded.frames(wanted, lo, hi)] == expected


def test_every_damaged_head_byte_is_corrupt_or_harmless() -> None:
    """Flip each byte of a columnar head: the decoder refuses it cleanly or reads it."""
    builder = ChunkBuilder()
    for f in mixed(24):
        builder.add(f)
    sealed = builder.seal()
    meta = sealed.meta
    for i in range(meta.records_size):
        raw = bytearray(sealed.raw)
        raw[i] ^= 0x5A
        buf = np.frombuffer(bytes(raw), np.uint8)
        try:
            decoded = decode_chunk(buf, meta)
        except CorruptChunk:
            continue
        frames = list(decoded.frames())  # never raises once decoded
        assert len(frames) == meta.count


def test_a_recording_of_small_messages_is_columnar_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "imu.hfr"
    with Recorder(path, chunk_bytes=20_000) as rec:
        for i in range(2_000):
            rec.write(Frame("imu", i, i * 5_000_000, np.full(6, i, np.float64), t_arrival=i))
        stats = rec.statistics()
        assert stats.frames == 2_000
        assert stats.frames_by_sensor == {"imu": 2_000}
    with open_recording(path) as log:
        assert log.version == (VERSION_MAJOR, VERSION_MINOR)
        assert {c.kind for c in log.chunks} == {RecordKind.COLUMNS}
        assert len(log.chunks) > 5
        window = [f.seq for f in log.frames(start=5_000_000_000, end=6_000_000_000)]
        every = list(log.frames())
    assert window == list(range(1_000, 1_200))
    assert [f.seq for f in every] == list(range(2_000))
    assert every[-1].data[0] == 1_999.0
    with open_recording(path, use_index=False, readahead=0) as log:
        assert [f.seq for f in log.frames(sensors=["imu"], start=0, end=10_000_000)] == [0, 1]
