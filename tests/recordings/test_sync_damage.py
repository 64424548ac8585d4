"""Offline sync on damaged recordings reads exactly what the frame reader reads.

Each file is a real recording damaged behind its CRCs (tests/recordings/forge.py):
a chunk whose frames lie outside its meta's time range, a record whose meta is
an array, an index claiming 2**62 frames for one chunk. The stamp reader must
report the same damage in the same words as ``check``, skip exactly the chunks
the frame reader skips, and never form a group naming a frame that cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from fusion import Frame, Nearest
from hyperframes.cli import main
from recordings import Recorder, open_recording
from recordings._offline_sync import sync_recording
from recordings.hfr._stamps import read_stamps
from tests.recordings.forge import Rec, chunks, crc_ok, edit_chunk, records_of, rewrite

MS = 1_000_000
SENSORS = ("lidar", "imu", "cam")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LiDAR dicts (records), IMU rows (columns), camera bytes; chunks of 0.5 s, 4 s.

    Without stamp blocks (as before 1.4): the stamps come from the payloads,
    through the frame reader's validation, which is what these cases damage.
    A 1.4 file's stamps come from its blocks, so payload damage shows when
    frames are read (tests/recordings/test_stamp_block.py)."""
    path = tmp_path_factory.mktemp("sync_damage") / "clean.hfr"
    with Recorder(path, chunk_duration=0.5, stamp_blocks=False) as rec:
        for i in range(40):
            t = i * 100 * MS
            rec.write(Frame("lidar", i, t, {"x": np.arange(3.0) + i}, meta={"i": i}))
            rec.write(Frame("imu", i, t + 1 * MS, np.arange(6.0) * i))
            rec.write(Frame("cam", i, t + 2 * MS, b"jpeg %d" % i))
    with open_recording(path) as log:
        assert len(log.chunks) == 8
        assert not log.verify()
    return path


def narrow_range(recs: list[Rec]) -> None:
    """Chunk 1's meta says its frames all lie at its first t (they do not)."""
    c = chunks(recs)[1]
    t0 = c.meta["t0"]
    c.meta = {**c.meta, "t1": t0, "r": [[t0, t0] for _ in c.meta["r"]]}


def meta_as_array(recs: list[Rec]) -> None:
    """Chunk 1's first LiDAR record has an array for its meta map (same length)."""

    def change(raw: bytearray) -> None:
        at = raw.index(b"\x81\xa1i")
        raw[at] = 0x92

    edit_chunk(chunks(recs)[1], change)


def claim_2_62(entries: list[dict[str, Any]]) -> None:
    """The index says chunk 1 holds 2**62 frames, all of its first sensor."""
    e = entries[1]
    e["n"] = 1 << 62
    e["c"] = [1 << 62] + [0] * (len(e["c"]) - 1)


DAMAGE: dict[str, tuple[Callable[[list[Rec]], None] | None, Any]] = {
    "t outside the chunk's range": (narrow_range, None),
    "a record's meta is an array": (meta_as_array, None),
    "index claims 2**62 frames": (None, claim_2_62),
}


def damaged(clean: Path, tmp_path: Path, name: str) -> Path:
    preamble, recs = records_of(clean)
    edit, index_edit = DAMAGE[name]
    if edit is not None:
        edit(recs)
    path = rewrite(tmp_path / "damaged.hfr", preamble, recs, index_edit)
    assert crc_ok(path)
    return path


def policy() -> Nearest:
    return Nearest("lidar", list(SENSORS), 20 * MS)


@pytest.mark.parametrize("name", list(DAMAGE))
def test_stamps_are_exactly_the_frames_the_reader_reads(
    clean: Path, tmp_path: Path, name: str
) -> None:
    path = damaged(clean, tmp_path, name)
    with open_recording(path) as log:
        checked = [str(e) for e in log.verify()]
    with open_recording(path) as log:
        readable = {s: [(f.t, f.seq) for f in log.frames([s])] for s in SENSORS}
    with open_recording(path) as log:
        stamps = read_stamps(log, SENSORS)
        reported = [str(e) for e in log.damage]
    assert len(checked) == 1
    assert "chunk 1 " in checked[0]
    assert reported == checked  # the same words as check
    for s in SENSORS:
        assert list(zip(stamps[s].t.tolist(), stamps[s].seq.tolist(), strict=True)) == readable[s]
        assert 0 < len(readable[s]) < 40  # chunk 1 lost, the rest kept


@pytest.mark.parametrize("name", list(DAMAGE))
def test_no_group_names_a_frame_the_reader_rejects(clean: Path, tmp_path: Path, name: str) -> None:
    path = damaged(clean, tmp_path, name)
    with open_recording(path) as log:
        readable = {(f.sensor, f.seq) for f in log.frames()}
    with sync_recording(path, policy()) as groups:
        got = list(groups.groups())  # every payload fetched: none raises
        table = groups.table()
    assert len(got) == len(table["t"]) > 0
    for g in got:
        for f in g.members():
            assert (f.sensor, f.seq) in readable
    # The streaming policy over the readable frames forms the same groups.
    streaming = policy()
    expected = []
    with open_recording(path) as log:
        for f in log.frames():
            expected += streaming.push(f)
    expected += streaming.drain()
    assert [g.keys for g in got] == [g.keys for g in expected]


@pytest.mark.parametrize("name", list(DAMAGE))
def test_cli_sync_reports_the_damage_as_check_does_and_exits_1(
    clean: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = damaged(clean, tmp_path, name)
    out = tmp_path / "g.parquet"
    assert main(["check", str(path)]) == 1
    check_text = " ".join(capsys.readouterr().out.split())
    args = ["sync", str(path), "--reference", "lidar", "--tolerance", "20ms", "-o", str(out)]
    assert main(args) == 1
    sync_text = " ".join(capsys.readouterr().out.split())
    with open_recording(path) as log:
        (problem,) = log.verify()
    assert str(problem) in check_text
    assert f"lost: {problem}" in sync_text
    rows = pq.read_table(out).to_pylist()
    with open_recording(path) as log:
        lidar = {f.seq for f in log.frames(["lidar"])}
    assert rows
    assert all(r["lidar_seq"] in lidar for r in rows)
    assert main([*args, "--allow-loss"]) == 0
