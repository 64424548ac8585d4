"""Format 1.4: every chunk carries its frames' stamps outside the payload."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Frame, Nearest
from recordings import Recorder, open_recording
from recordings._offline_sync import sync_recording
from recordings.hfr._stamp_block import ROW_BYTES, decode_block
from recordings.hfr._stamps import read_stamps
from tests.recordings.helpers import without_stamp_index

MS = 1_000_000
SENSORS = ("cam", "imu", "lidar")


def write_mixed(path: Path) -> list[Frame]:
    """Columns (IMU rows, small images), records (dicts, bytes), t_arrival on some."""
    rng = np.random.default_rng(3)
    frames = []
    for i in range(1500):
        s = SENSORS[i % 3]
        data: object
        if s == "imu":
            data = rng.normal(size=6)
        elif s == "cam":
            data = rng.integers(0, 255, (30, 40), np.uint8)
        else:
            data = {"k": i} if i % 2 else b"sweep"
        t = i * MS + int(rng.integers(0, MS // 2))
        frames.append(Frame(s, i // 3, t, data, t_arrival=t + 7 if i % 4 else None))
    with Recorder(path, chunk_bytes=16 << 10) as rec:
        for f in frames:
            rec.write(f)
    return frames


def test_every_chunk_has_a_block_equal_to_its_frames(tmp_path: Path) -> None:
    path = tmp_path / "mixed.hfr"
    frames = write_mixed(path)
    with open_recording(path) as log:
        assert log.version == (1, 8)
        assert len(log.chunks) > 5
        assert {c.kind for c in log.chunks} == {4}
        rows: list[tuple[object, ...]] = []
        for c in log.chunks:
            block = decode_block(c, 1 << 30)
            names = [c.sensors[k] for k in block.sensor.tolist()]
            arrival = [
                a if h else None for a, h in zip(block.arrival, block.has_arrival, strict=True)
            ]
            rows += zip(names, block.seq.tolist(), block.t.tolist(), arrival, strict=True)
        stored = [(f.sensor, f.seq, f.t, f.t_arrival) for f in log.frames()]
    assert rows == stored == [(f.sensor, f.seq, f.t, f.t_arrival) for f in frames]


def test_the_seals_stamp_columns_are_the_block_the_writer_would_decompress() -> None:
    """The writer's stamp index and summaries take the seal's own columns (no decompression
    of the block): they are, column for column and dtype for dtype, what ``raw_block``
    gives back from the compressed block, for column groups, records, missing arrivals."""
    from recordings.hfr._builder import ChunkBuilder
    from recordings.hfr._layout import ChunkMeta
    from recordings.hfr._stamp_block import raw_block

    rng = np.random.default_rng(4)
    builder = ChunkBuilder()
    for i in range(600):
        s = SENSORS[i % 3]
        data: object = rng.normal(size=6) if s == "imu" else {"k": i} if i % 2 else b"x"
        t = (1 << 62) - 10**9 + i * MS - (3 * MS if i % 7 == 0 else 0)  # big, not monotonic
        builder.add(Frame(s, i // 3, t, data, t_arrival=t + i if i % 4 else None))
    sealed = builder.seal()
    assert sealed.stamps is not None
    assert sealed.details is not None
    own = sealed.details.stamps
    assert own is not None
    block = zstandard.ZstdCompressor().compress(sealed.stamps)
    meta = dataclasses.replace(sealed.meta, stamps=block)
    assert isinstance(meta, ChunkMeta)
    for mine, theirs in zip(own, raw_block(meta), strict=True):
        assert mine.dtype == theirs.dtype
        assert mine.tolist() == theirs.tolist()


@pytest.mark.parametrize("stamp_index", [True, False], ids=["1.5", "1.4 (blocks only)"])
def test_stamps_and_groups_come_without_reading_a_payload(
    tmp_path: Path, stamp_index: bool
) -> None:
    """Every payload overwritten with garbage: the frames are lost, the stamps are not."""
    path = tmp_path / "mixed.hfr"
    frames = write_mixed(path)
    if not stamp_index:
        without_stamp_index(path)
    with open_recording(path) as log:
        policy = Nearest("lidar", list(SENSORS), {"cam": 2 * MS, "imu": 2 * MS})
        with sync_recording(log, policy) as groups:
            expected_groups = (groups.columns.t.tolist(), len(groups))
    data = bytearray(path.read_bytes())
    with open_recording(path) as log:
        chunks = list(log.chunks)
    for i, c in enumerate(chunks):
        nxt = chunks[i + 1].offset if i + 1 < len(chunks) else _index_offset(data)
        data[nxt - c.stored_size : nxt] = b"\xa5" * c.stored_size
    path.write_bytes(bytes(data))
    with open_recording(path) as log:
        assert not list(log.frames())  # no payload reads back ...
    with open_recording(path) as log:
        stamps = read_stamps(log, SENSORS)
        assert not log.damage  # ... and reading the stamps never touched one
        for s in SENSORS:
            assert stamps[s].t.tolist() == [f.t for f in frames if f.sensor == s]
            assert stamps[s].seq.tolist() == [f.seq for f in frames if f.sensor == s]
        with sync_recording(log, policy) as groups:
            assert (groups.columns.t.tolist(), len(groups)) == expected_groups
            assert groups.statistics.chunks_read == 0
            assert groups.statistics.stamp_index == stamp_index


def _index_offset(data: bytearray) -> int:
    return int.from_bytes(data[-20:-12], "little")


def test_a_block_that_disagrees_with_its_meta_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    with open_recording(path) as log:
        meta = log.chunks[0]
    good = zstandard.ZstdDecompressor().decompress(meta.stamps or b"")
    assert len(good) == ROW_BYTES * meta.count
    n = meta.count
    cctx = zstandard.ZstdCompressor(write_content_size=True)
    bad_sensor = bytearray(good)
    bad_sensor[0:4] = (99).to_bytes(4, "little")
    bad_t = bytearray(good)
    bad_t[12 * n : 12 * n + 8] = (123).to_bytes(8, "little", signed=True)  # first t's delta
    cases = {
        b"not zstd": "not a zstd frame",
        cctx.compress(good[:-1]): "declares",
        cctx.compress(bytes(bad_sensor)): "names a sensor",
        cctx.compress(bytes(bad_t)): "time ranges",
    }
    for block, message in cases.items():
        with pytest.raises(ValueError, match=message):
            decode_block(dataclasses.replace(meta, stamps=block), 1 << 30)
    with pytest.raises(ValueError, match="would be"):
        decode_block(meta, ROW_BYTES * n - 1)  # the reader's limit holds for blocks too


def test_check_reindex_upgrades_an_older_file_keeping_every_record(tmp_path: Path) -> None:
    from hyperframes.cli import main

    old = tmp_path / "old.hfr"
    with Recorder(old, stamp_blocks=False, metadata={"site": "lab"}, chunk_bytes=4096) as rec:
        rng = np.random.default_rng(4)
        for i in range(600):
            s = SENSORS[i % 3]
            data = rng.normal(size=6) if s == "imu" else {"i": i}
            rec.write(Frame(s, i, i * MS, data, t_arrival=i * MS + 3, meta={"k": i}))
    new = tmp_path / "new.hfr"
    assert main(["check", str(old), "--reindex", "-o", str(new), "-q"]) == 0
    with open_recording(old) as a, open_recording(new) as b:
        assert all(c.stamps is None for c in a.chunks)
        assert b.version == (1, 8)
        assert a.stamp_index() is None
        assert b.stamp_index() is not None  # the 1.5 stamp index too
        assert len(b.chunks) == len(a.chunks) > 1
        assert all(c.stamps is not None for c in b.chunks)
        assert b.metadata == a.metadata
        assert b.wall_clock is not None
        assert a.wall_clock is not None
        assert b.wall_clock.anchors == a.wall_clock.anchors  # the header and chunks kept
        assert [c.raw_size for c in b.chunks] == [c.raw_size for c in a.chunks]
        assert not b.verify()
        for x, y in zip(b.frames(), a.frames(), strict=True):
            assert (x.sensor, x.seq, x.t, x.t_arrival, x.meta) == (
                y.sensor,
                y.seq,
                y.t,
                y.t_arrival,
                y.meta,
            )
            assert repr(x.data) == repr(y.data)
        policy = Nearest("lidar", list(SENSORS), {"cam": 2 * MS, "imu": 2 * MS})
        with sync_recording(a, policy) as ga, sync_recording(b, policy) as gb:
            assert gb.statistics.chunks_read == 0 < ga.statistics.chunks_read
            assert gb.statistics.stamp_index
            assert not ga.statistics.stamp_index
            assert gb.columns.t.tolist() == ga.columns.t.tolist()
            assert [g.keys for g in gb.groups()] == [g.keys for g in ga.groups()]
    assert main(["check", str(new), "-q"]) == 0
    assert main(["check", str(old), "--reindex", "-q"]) == 2  # no -o: never in place


_INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_INT64, _INT64, _INT64, _INT64), min_size=1, max_size=40),
    st.booleans(),
    st.booleans(),
    st.sampled_from([np.dtype("<f8"), np.dtype(">f4"), np.dtype([("x", "<f4"), ("y", "u1")])]),
)
def test_a_one_sensor_chunk_seals_as_the_general_gathering_would(
    rows: list[tuple[int, int, int, int]],
    arrival: bool,
    same_sensor_time: bool,
    dtype: np.dtype[Any],
) -> None:
    """A chunk of one sensor's small arrays takes the seal's short path (the stamp
    block from the columns' own deltas, details without gathers): block, stamp
    columns and details equal what the general path gathers by the order column,
    for any int64 stamps (wrapping deltas), with or without arrivals."""
    from recordings.hfr._builder import ChunkBuilder
    from recordings.hfr._builder_layout import _gathered
    from recordings.hfr._stamp_block import pack_stamps, raw_block, stamp_columns

    builder = ChunkBuilder()
    for seq, t, ts, ta in rows:
        frame = Frame(
            "imu",
            seq,
            t,
            np.zeros(3, dtype),
            t_sensor=t if same_sensor_time else ts,
            t_arrival=ta if arrival else None,
        )
        builder.add(frame)
    (group,) = builder._groups.values()
    n = len(rows)
    order = np.full(n, group.index, np.uint8)
    sealed = builder.seal()
    assert sealed.details is not None
    assert sealed.stamps is not None
    general = stamp_columns(n, order, [(group.index, 0, group.ints, group.width)], [])
    assert sealed.stamps == pack_stamps(general)
    own = sealed.details.stamps
    assert own is not None
    for mine, theirs in zip(own, general, strict=True):
        assert mine.dtype == theirs.dtype
        assert mine.tolist() == theirs.tolist()
    flags = np.zeros(n, np.uint8)
    shapes: dict[tuple[int, ...], int] = {}
    offset, size, shape = _gathered(n, order, [group], [], flags, shapes)
    details = sealed.details
    assert details.offset.tolist() == offset.tolist()
    assert details.size.tolist() == size.tolist()
    assert details.shape.dtype == shape.dtype
    assert details.shape.tolist() == shape.tolist()
    assert details.shapes == list(shapes)
    assert details.flags.tolist() == flags.tolist()
    block = zstandard.ZstdCompressor().compress(sealed.stamps)
    decoded = raw_block(dataclasses.replace(sealed.meta, stamps=block))
    assert decoded[1].tolist() == [r[0] for r in rows]
    assert decoded[2].tolist() == [r[1] for r in rows]
    assert decoded[3].tolist() == ([r[3] for r in rows] if arrival else [0] * n)
