"""Format 1.5: the footer stamp index, every frame's stamps in one record after the INDEX."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Nearest
from recordings import ReadLimits, Recorder, open_recording, read_stream
from recordings._offline_sync import sync_recording
from recordings.errors import CorruptChunk
from recordings.hfr._format import PRELUDE, TRAILER, RecordKind, crc32, pack_prelude, pack_trailer
from recordings.hfr._stamp_block import decode_block
from recordings.hfr._stamp_index import StampIndexWriter, read_stamp_index
from recordings.hfr._stamps import read_stamps
from tests.recordings.helpers import stamp_record_span, without_stamp_index
from tests.recordings.test_stamp_block import SENSORS, write_mixed

MS = 1_000_000
Int64 = np.ndarray[Any, np.dtype[np.int64]]
POLICY = Nearest("lidar", list(SENSORS), {"cam": 2 * MS, "imu": 2 * MS})


def groups_of(path: Path, **open_options: Any) -> tuple[list[int], list[object]]:
    with open_recording(path, **open_options) as log, sync_recording(log, POLICY) as g:
        return g.columns.t.tolist(), [grp.keys for grp in g.groups()]


def test_the_index_holds_every_frames_stamps_as_the_payload_does(tmp_path: Path) -> None:
    path = tmp_path / "mixed.hfr"
    frames = write_mixed(path)
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None, log.stamp_index_problem
        assert set(index.sensors) == set(SENSORS)
        assert index.chunks == len(log.chunks) > 5
        stored = list(log.frames())  # the payloads: the independent reference
    for s in SENSORS:
        t, seq, chunk, rank = index.of(s)
        mine = [f for f in stored if f.sensor == s]
        assert t.tolist() == [f.t for f in mine] == [f.t for f in frames if f.sensor == s]
        assert seq.tolist() == [f.seq for f in mine]
        arrival, has = index.arrivals(s)
        assert [a if h else None for a, h in zip(arrival.tolist(), has, strict=True)] == [
            f.t_arrival for f in mine
        ]
        assert (np.diff(chunk) >= 0).all()
        for c in np.unique(chunk).tolist():  # rank counts the sensor's frames per chunk
            assert rank[chunk == c].tolist() == list(range(int((chunk == c).sum())))


def test_stamps_come_from_the_index_without_decoding_the_footer(tmp_path: Path) -> None:
    """The INDEX record's meta garbled (its CRC fails): stamps still come from the stamp
    index, the chunks from a scan, and the groups' frames match their stamps."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected = groups_of(path)
    data = bytearray(path.read_bytes())
    index_offset = struct.unpack_from("<Q", data, len(data) - TRAILER.size)[0]
    data[index_offset + PRELUDE.size + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    with open_recording(path) as log:
        assert log.stamp_index() is not None
        assert not log.indexed  # the chunk list was scanned
    assert groups_of(path) == expected


def test_older_readers_paths_ignore_the_record(tmp_path: Path) -> None:
    """Scanning and streaming stop at the INDEX, as a 1.4 reader does; every frame reads."""
    path = tmp_path / "mixed.hfr"
    frames = write_mixed(path)
    keys = [(f.sensor, f.seq, f.t) for f in frames]
    with open_recording(path, use_index=False) as log:
        assert [(f.sensor, f.seq, f.t) for f in log.frames()] == keys
        assert not log.damage
        assert log.stamp_index() is None  # the footer is not used at all
    with path.open("rb") as f:
        stream = read_stream(f)
        assert [(x.sensor, x.seq, x.t) for x in stream.frames()] == keys
        assert not stream.damage


def test_groups_are_the_same_from_the_index_the_blocks_and_the_payloads(tmp_path: Path) -> None:
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    from_index = groups_of(path)
    with open_recording(path) as log, sync_recording(log, POLICY) as g:
        assert g.statistics.stamp_index
        assert g.statistics.chunks_read == 0
    without_stamp_index(path)
    with open_recording(path) as log, sync_recording(log, POLICY) as g:
        assert not g.statistics.stamp_index  # the chunks' blocks
        assert g.statistics.chunks_read == 0
    assert groups_of(path) == from_index
    assert groups_of(path, use_index=False) == from_index  # blocks of the scanned chunks


def _replace_record(path: Path, meta: object, frames: list[bytes]) -> None:
    """Replace the STAMPS record with one whose CRCs are right, whatever it holds (a
    PACKED_STAMPS record when the meta has the 1.8 key ``p``)."""
    data = path.read_bytes()
    a, b = stamp_record_span(data)
    meta_bytes = msgpack.packb(meta, use_bin_type=True)
    packed = isinstance(meta, dict) and "p" in meta
    kind = RecordKind.PACKED_STAMPS if packed else RecordKind.STAMPS
    record = pack_prelude(kind, meta_bytes, sum(map(len, frames)), crc32(*frames))
    path.write_bytes(data[:a] + record + meta_bytes + b"".join(frames) + data[b:])


def forge_index(path: Path, edit: Callable[[str, Int64, Int64], None] | None = None) -> None:
    """Rewrite the stamp index from the chunks' own blocks, ``edit(sensor, seq, t)``
    changing each chunk's columns in place first: a well-formed index that may lie."""
    writer = StampIndexWriter()
    with open_recording(path) as log:
        for c in log.chunks:
            block = decode_block(c, 1 << 30)
            seq, t = block.seq.copy(), block.t.copy()
            if edit is not None:
                for k, name in enumerate(c.sensors):
                    where = block.sensor == k
                    s_seq, s_t = seq[where], t[where]
                    edit(name, s_seq, s_t)
                    seq[where], t[where] = s_seq, s_t
            writer.add(c.sensors, block.sensor, seq, t, block.arrival, block.has_arrival)
    record = writer.record()
    assert record is not None
    data = path.read_bytes()
    a, b = stamp_record_span(data)
    path.write_bytes(data[:a] + b"".join(record) + data[b:])


def _z(values: object, dtype: str) -> bytes:
    raw = np.asarray(values, dtype).tobytes()
    return zstandard.ZstdCompressor(write_content_size=True).compress(raw)


def _one_sensor(
    runs: list[tuple[int, int]], has: int = 0, extra: int = 0
) -> tuple[object, list[bytes]]:
    """A STAMPS record of one sensor ``cam`` in runs ``(chunk, count)`` of 9 chunks."""
    n = sum(c for _, c in runs)
    frames = [
        _z(runs, "<u4"),
        _z(np.ones(n + extra), "<i8"),
        _z(np.ones(n), "<i8"),
        _z(np.zeros(n), "<i8"),
        _z([has] * n, "u1"),
    ]
    meta = {"s": ["cam"], "c": [n], "chunks": 9, "z": [[[len(f)] for f in frames]]}
    return meta, frames


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("crc", "fails its CRC"),
        ("chunk", "names a chunk"),
        ("chunk order", "names a chunk"),
        ("run", "names a chunk"),
        ("size", "wrong size"),
        ("has_arrival", "not 0 or 1"),
        ("meta", "malformed"),
        ("over limit", "over the reader's limit"),
    ],
)
def test_an_index_that_does_not_check_out_is_not_used(
    tmp_path: Path, case: str, reason: str
) -> None:
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected = groups_of(path)
    limit = 1 << 30
    forged = {
        "chunk": _one_sensor([(0, 1), (9, 1)]),
        "chunk order": _one_sensor([(1, 1), (0, 1)]),
        "run": _one_sensor([(0, 0), (1, 2)]),
        "size": _one_sensor([(0, 2)], extra=1),
        "has_arrival": _one_sensor([(0, 2)], has=2),
        "meta": ({"s": ["cam"], "c": [-1], "chunks": 9, "z": [[[1]] * 5]}, [b"x"]),
    }
    if case == "crc":  # a 1.6 record (no checksummed frames): the payload CRC decides
        _without_checksum_key(path)
        data = bytearray(path.read_bytes())
        data[stamp_record_span(bytes(data))[1] - 3] ^= 0x01
        path.write_bytes(bytes(data))
    elif case in forged:
        _replace_record(path, *forged[case])
    else:
        limit = 10
    with open_recording(path, max_chunk_bytes=limit) as log:
        index = log.stamp_index()
        if case == "has_arrival":  # only t_arrival is wrong: grouping never reads it
            assert index is not None
            with pytest.raises(ValueError, match=reason):
                index.arrivals("cam")
            return
        if index is not None:  # the shape checked out: the sensor's columns do not
            with pytest.raises(ValueError, match=reason):
                index.of("cam")
        else:
            assert reason in (log.stamp_index_problem or "")
    assert groups_of(path) == expected  # the chunks' blocks instead


def _stamp_record(path: Path) -> tuple[dict[str, Any], list[bytes]]:
    """The STAMPS record's meta and its payload as one piece."""
    data = path.read_bytes()
    a, b = stamp_record_span(data)
    _, _, meta_len, _, _, _ = PRELUDE.unpack_from(data, a)
    meta = msgpack.unpackb(data[a + PRELUDE.size : a + PRELUDE.size + meta_len])
    return meta, [data[a + PRELUDE.size + meta_len : b]]


def _without_checksum_key(path: Path) -> None:
    """Rewrite the STAMPS record as a 1.6 writer left it: no ``ck`` key."""
    meta, payload = _stamp_record(path)
    del meta["ck"]
    _replace_record(path, meta, payload)


def test_a_checksummed_index_reads_only_the_wanted_sensors_columns(tmp_path: Path) -> None:
    """1.7: the frames carry zstd checksums, so a reader takes one sensor's columns
    without the rest of the payload; a flipped byte costs the sensor it is in (its
    column fails its checksum, the blocks serve) and no other."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected = groups_of(path)
    meta, payload = _stamp_record(path)
    assert meta["ck"] is True
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None
        index.of("lidar")
        assert 0 < index.bytes_read < len(payload[0]) // 2
    # the last byte of the payload is in the last sensor's has_arrival column
    last = meta["s"][-1]
    data = bytearray(path.read_bytes())
    data[stamp_record_span(bytes(data))[1] - 3] ^= 0x01
    path.write_bytes(bytes(data))
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None
        with pytest.raises(ValueError, match=f"{last!r}"):
            index.arrivals(last)
        for name in meta["s"]:
            index.of(name)  # seq and t of every sensor still check out
    assert groups_of(path) == expected
    # a frame stored without its checksum is refused when the meta says they all have one
    meta, _ = _stamp_record(path)
    frames = [
        _z([[0, 2]], "<u4"),
        _z([1, 1], "<i8"),
        _z([1, 1], "<i8"),
        _z([0, 0], "<i8"),
        _z([0, 0], "u1"),
    ]
    _replace_record(
        path,
        {"s": ["cam"], "c": [2], "chunks": 9, "z": [[[len(f)] for f in frames]], "ck": True},
        frames,
    )
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None
        with pytest.raises(ValueError, match="no checksum"):
            index.of("cam")


def test_a_fetched_frame_that_does_not_match_its_stamp_is_refused(tmp_path: Path) -> None:
    """A well-formed index that lies (every imu seq shifted) fails when a payload is read."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)

    def shift(sensor: str, seq: Int64, t: Int64) -> None:
        if sensor == "imu":
            seq += 1000

    forge_index(path, shift)
    with open_recording(path) as log, sync_recording(log, POLICY) as g:
        assert g.statistics.stamp_index
        with pytest.raises(CorruptChunk, match=r"stamps of 'imu' seq \d+ .* do not match frame"):
            list(g.groups())


def test_a_recording_closed_before_its_chunks_were_asked_for_still_summarises(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mixed.hfr"
    frames = write_mixed(path)
    log = open_recording(path)
    assert log.stamp_index() is not None
    log.close()
    assert log.summary().count == len(frames)


def test_a_real_bag_recorded_has_an_index_equal_to_rosbags_log_of_it(tmp_path: Path) -> None:
    """A real drive (IMU + odometry): per topic, the index's frames are as many as
    rosbags reads from the bag, and their stamps are those of the frames stored."""
    import anyio
    from rosbags.highlevel import AnyReader

    from adapters import BagSource

    bag = Path(__file__).parents[2] / "../shared/data/real/bags/robot_localization_test2.bag"
    out = tmp_path / "drive.hfr"

    async def record() -> BagSource:
        source = BagSource(bag)
        with Recorder(out, sensors=source.specs, chunk_bytes=64 << 10) as rec:
            async with source:
                async for frame in source.frames():
                    rec.write(frame)
        return source

    source = anyio.run(record)
    with AnyReader([bag]) as reader:
        counts: dict[str, int] = {}
        for connection, _, _ in reader.messages():
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
    with open_recording(out) as log:
        index = log.stamp_index()
        assert index is not None
        stamps = read_stamps(log, index.sensors)
        stored = list(log.frames())
        topics = {s.name: s.meta["topic"] for s in source.specs}
    assert {topics[s]: len(stamps[s]) for s in index.sensors} == counts
    for s in index.sensors:
        assert stamps[s].t.tolist() == [f.t for f in stored if f.sensor == s]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 3),
                st.integers(-(2**63), 2**63 - 1),
                st.integers(-(2**63), 2**63 - 1),
                st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            ),
            max_size=12,
        ),
        max_size=6,
    )
)
def test_writer_and_reader_round_trip_any_stamps(
    tmp_path_factory: pytest.TempPathFactory,
    chunks: list[list[tuple[int, int, int, int | None]]],
) -> None:
    """Any int64 values (delta coding wraps), any sensor mix per chunk, empty chunks."""
    names = ("a", "b", "c", "d")
    w = StampIndexWriter()
    for rows in chunks:
        present = tuple(dict.fromkeys(names[r[0]] for r in rows))
        local = [present.index(names[r[0]]) for r in rows]
        w.add(
            present,
            np.array(local, np.int64),
            np.array([r[1] for r in rows], np.int64),
            np.array([r[2] for r in rows], np.int64),
            np.array([r[3] or 0 for r in rows], np.int64),
            np.array([r[3] is not None for r in rows], np.uint8),
        )
    record = w.record()
    assert record is not None
    path = tmp_path_factory.mktemp("rt") / "t.bin"
    index_meta = b"\x80"  # an empty map stands in for the INDEX
    body = b"\0" * 16 + pack_prelude(RecordKind.INDEX, index_meta, 0, 0) + index_meta
    trailer = pack_trailer(16)
    path.write_bytes(body + b"".join(record) + trailer)
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        got = read_stamp_index(fd, os.fstat(fd).st_size, ReadLimits())
    finally:
        os.close(fd)
    assert not isinstance(got, str), got
    for name in names:
        want = [(ci, r) for ci, rows in enumerate(chunks) for r in rows if names[r[0]] == name]
        t, seq, chunk, _ = got.of(name)
        arrival, has = got.arrivals(name)
        assert t.tolist() == [r[2] for _, r in want]
        assert seq.tolist() == [r[1] for _, r in want]
        assert chunk.tolist() == [ci for ci, _ in want]
        assert [a if h else None for a, h in zip(arrival.tolist(), has, strict=True)] == [
            r[3] for _, r in want
        ]


def test_check_compares_the_index_with_every_chunk(tmp_path: Path) -> None:
    from hyperframes.cli import main

    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    assert main(["check", str(path), "-q"]) == 0
    forge_index(path)  # the same stamps: still sound
    assert main(["check", str(path), "-q"]) == 0
    first = [True]

    def nudge(sensor: str, seq: Int64, t: Int64) -> None:
        if first[0] and sensor == "cam" and len(t):
            t[0] += 1  # one frame's t one ns off, in the first chunk only
            first[0] = False

    forge_index(path, nudge)
    with open_recording(path) as log:
        damage = [str(e) for e in log.verify()]
    assert len(damage) == 1
    assert "the stamp index does not match chunk 0" in damage[0]
    assert "'cam' frame 0 has (t, seq)" in damage[0]
    assert main(["check", str(path), "-q"]) == 1


def _table_of(path: Path) -> dict[str, list[int]]:
    with sync_recording(path, POLICY) as g:
        return {k: np.asarray(v).tolist() for k, v in g.table().items()}


def test_grouping_decodes_only_t_and_the_rest_when_asked(tmp_path: Path) -> None:
    """``read_stamps`` from the index decodes ``t`` (and checks the runs and ``seq``'s
    declared size); ``seq``, ``chunk`` and ``rank`` are decoded when first used, equal to
    the index's own ``of`` and, through a window and a selection, to the same rows."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None
        got = read_stamps(log, ["cam", "imu"])
        before = index.bytes_read
        t, seq, chunk, rank = index.of("cam")
        read_for_rows = index.bytes_read - before
        cam = got["cam"]
        assert cam.t.tolist() == t.tolist()
        keep = np.flatnonzero(t % 6 == 0)  # even, then a multiple of 3 among those
        picked = cam.take(t % 2 == 0).take(np.flatnonzero(t[t % 2 == 0] % 3 == 0))
        assert cam._values is None  # nothing but t decoded yet
        assert picked.t.tolist() == t[keep].tolist()
        assert picked.seq.tolist() == seq[keep].tolist()
        assert picked.chunk.tolist() == chunk[keep].tolist()
        assert picked.rank.tolist() == rank[keep].tolist()
        assert cam.seq.tolist() == seq.tolist()
        assert cam.rank.tolist() == rank.tolist()
        assert read_for_rows > 0
        window = read_stamps(log, ["cam"], int(t[10]), int(t[40]))["cam"]
        assert window.seq.tolist() == seq[10:40].tolist()


def test_a_seq_frame_that_fails_its_checksum_costs_time_not_groups(tmp_path: Path) -> None:
    """A ``seq`` frame of the index whose checksum fails is found only when ``seq`` is
    decoded, after grouping from the index's ``t``: that sensor's rows then come from the
    chunks' blocks, whose ``t`` equal the index's, so the table and groups are unchanged."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected, expected_groups = _table_of(path), groups_of(path)
    meta, _ = _stamp_record(path)
    k = meta["s"].index("imu")
    data = bytearray(path.read_bytes())
    a, _ = stamp_record_span(bytes(data))
    _, _, meta_len, _, _, _ = PRELUDE.unpack_from(data, a)
    at = a + PRELUDE.size + meta_len
    lengths = meta["z"]
    at += sum(x for cols in lengths[:k] for col in cols for x in col)
    at += sum(lengths[k][0]) + lengths[k][1][0]  # the end of imu's first seq frame
    data[at - 1] ^= 0x55  # its checksum
    path.write_bytes(bytes(data))
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None
        index.check_rows("imu")  # the frame's header still declares its size
        with pytest.raises(ValueError, match="imu"):
            index.seq("imu")
    assert _table_of(path) == expected
    assert groups_of(path) == expected_groups
