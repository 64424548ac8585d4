"""adapters/bags/_compat_rosbags.py against the installed rosbags, on real bags: each internal
it reads answers what an independent reader (the ``mcap`` library, ``sqlite3``, rosbags'
documented ``messages()``) says the bag holds, and the release is one it was checked against.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from adapters.bags import _compat_rosbags as compat
from tests.compat import assert_checked_release

REPO = Path(__file__).resolve().parents[2]
BAGS = REPO / ".." / "shared" / "data" / "real" / "bags"
SPLIT = BAGS / "rosbag2_wbag"  # five MCAP files
ROS1 = BAGS / "rviz_satellite_sample.bag"
SQLITE = REPO / "tests" / "data" / "rosbag2_sqlite3_talker"
needs_data = pytest.mark.skipif(not BAGS.is_dir(), reason="../shared/data/real/bags is not there")


def test_rosbags_is_a_release_the_compat_module_was_checked_against() -> None:
    assert_checked_release(compat)


@needs_data
def test_a_split_bag_s_storages_and_chunk_indexes_are_the_files_and_their_chunks() -> None:
    from mcap.reader import make_reader

    reader = compat.rosbag2_reader(SPLIT)
    reader.open()
    try:
        parts = compat.storages(reader)
        assert len(parts) == len(list(SPLIT.glob("*.mcap"))) == 5
        assert compat.metadata(reader) is not None
        for part in parts:
            with open(part.path, "rb") as f:
                want = make_reader(f).get_summary().chunk_indexes  # type: ignore[union-attr]
            got = compat.mcap_chunks(part)
            assert [
                (c.message_start_time, c.message_end_time, c.chunk_start_offset) for c in got
            ] == [(c.message_start_time, c.message_end_time, c.chunk_start_offset) for c in want]
            bio = compat.mcap_file(part)
            bio.seek(want[0].chunk_start_offset)
            assert bio.read(1) == b"\x06"  # the Chunk record's opcode where the index points
    finally:
        reader.close()


@needs_data
def test_an_mcap_file_of_any_name_reads_as_rosbags_reads_the_same_file_named_mcap(
    tmp_path: Path,
) -> None:
    file = next(SPLIT.glob("*.mcap"))
    renamed = tmp_path / "bag.bin"
    shutil.copy(file, renamed)
    out = []
    for reader in (compat.rosbag2_reader(file), compat.rosbag2_mcap_file(renamed)):
        reader.open()
        try:
            out.append([(c.topic, t, bytes(d)) for c, t, d in reader.messages()])
        finally:
            reader.close()
    assert out[0]
    assert out[1] == out[0]


def test_a_sqlite3_bag_s_stored_definitions_are_its_table_rows() -> None:
    with sqlite3.connect(SQLITE / "talker.db3") as con:
        want = sorted(con.execute("SELECT topic_type, encoding, encoded_message_definition "
                                  "FROM message_definitions"))  # fmt: skip
    reader = compat.rosbag2_reader(SQLITE)
    reader.open()
    try:
        (part,) = compat.storages(reader)
        assert sorted(compat.stored_definitions(part)) == want
        assert want
        assert compat.mcap_chunks(part) == []  # no chunks: no resuming after damage
    finally:
        reader.close()


@needs_data
def test_a_ros1_bag_s_index_and_chunks_give_the_bytes_rosbags_gives() -> None:
    reader = compat.ros1_reader(ROS1)
    reader.open()
    try:
        assert compat.ros1_indexed(reader)
        want = [(c.id, t, bytes(d)) for c, t, d in reader.messages()]
        entries = sorted(
            (t, pos, off, c.id) for c in reader.connections for t, pos, off in
            compat.ros1_entries(reader, c.id)
        )  # fmt: skip
        assert len(entries) == len(want) == sum(n for _, _, n in compat.ros1_chunk_spans(reader))
        chunks = {pos: compat.ros1_chunk(reader, pos) for _, pos, _, _ in entries}
        assert all(isinstance(c, bytes) and c for c in chunks.values())
        got = []
        for t, pos, off, cid in entries:  # a message data record: header, then data
            data = chunks[pos]
            assert data is not None
            hlen = int.from_bytes(data[off : off + 4], "little")
            start = off + 4 + hlen
            dlen = int.from_bytes(data[start : start + 4], "little")
            got.append((cid, t, data[start + 4 : start + 4 + dlen]))
        assert sorted(got) == sorted(want)
        compat.forget_ros1_chunk(reader)
        assert reader.current_chunk[0] == -1
    finally:
        reader.close()
