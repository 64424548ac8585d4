"""recordings.output_files: staged writes published only on success, never over an input."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from fusion import Frame
from recordings import Recorder, open_recording
from recordings.output_files import OutputIsInput, keep_aside, refuse_overlap, safe_output


def test_a_failed_body_leaves_the_old_file_and_nothing_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "a.mcap"
    out.write_bytes(b"old")

    def export_that_fails() -> None:
        with safe_output(out) as staged:
            staged.write_bytes(b"half")
            raise RuntimeError("the writer failed")

    with pytest.raises(RuntimeError):
        export_that_fails()
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.mcap"]


def test_a_finished_body_replaces_the_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "a.mcap"
    out.write_bytes(b"old")
    with safe_output(out) as staged:
        assert staged.name == "a.mcap"  # the writer sees the final name (suffix picks format)
        assert staged.parent.parent == tmp_path  # beside it: the rename is atomic
        staged.write_bytes(b"new")
    assert out.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["a.mcap"]


def test_a_symlinked_output_is_written_where_it_points(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "x.parquet"
    (tmp_path / "x.parquet").symlink_to(target)
    with safe_output(tmp_path / "x.parquet", [tmp_path / "in.hfr"]) as staged:
        staged.write_bytes(b"rows")
    assert target.read_bytes() == b"rows"
    assert (tmp_path / "x.parquet").is_symlink()


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "dotdot", "inside"])
def test_an_output_that_is_an_input_is_refused(tmp_path: Path, how: str) -> None:
    given = tmp_path / "in.hfr"
    given.write_bytes(b"input")
    bag = tmp_path / "bag"
    bag.mkdir()
    out = {
        "same": given,
        "symlink": tmp_path / "l.hfr",
        "hardlink": tmp_path / "h.hfr",
        "dotdot": tmp_path / "bag" / ".." / "in.hfr",
        "inside": bag / "x.hfr",
    }[how]
    if how == "symlink":
        out.symlink_to(given)
    if how == "hardlink":
        os.link(given, out)
    with pytest.raises(OutputIsInput) as info:
        refuse_overlap(out, [given, bag])
    assert str(out) in str(info.value)
    assert given.read_bytes() == b"input"


def test_a_folder_merge_never_replaces_an_input_and_keeps_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "sweeps"
    folder.mkdir()
    given = folder / "lidar-000000-0.pcd"  # an input that a sweep would be called
    given.write_bytes(b"input")
    (folder / "notes.txt").write_text("mine")

    def sweeps_over_the_input() -> None:
        with safe_output(folder, [given]) as staged:
            staged.mkdir()
            (staged / "lidar-000001-0.pcd").write_bytes(b"one")
            (staged / "lidar-000000-0.pcd").write_bytes(b"over the input")

    with pytest.raises(OutputIsInput):
        sweeps_over_the_input()
    assert given.read_bytes() == b"input"
    assert sorted(p.name for p in folder.iterdir()) == ["lidar-000000-0.pcd", "notes.txt"]
    with safe_output(folder, [given]) as staged:  # a folder holding an input: allowed
        staged.mkdir()
        (staged / "lidar-000001-0.pcd").write_bytes(b"one")
    assert sorted(p.name for p in folder.iterdir()) == [
        "lidar-000000-0.pcd", "lidar-000001-0.pcd", "notes.txt"
    ]  # fmt: skip


def test_keep_aside_takes_the_first_free_name_and_never_overwrites(tmp_path: Path) -> None:
    stale = tmp_path / "s.hfr.partial"
    assert keep_aside(stale) is None  # nothing there: nothing done
    (tmp_path / "s.hfr.partial.1").write_bytes(b"older")
    stale.write_bytes(b"stale")
    assert keep_aside(stale) == tmp_path / "s.hfr.partial.2"
    assert not stale.exists()
    assert (tmp_path / "s.hfr.partial.1").read_bytes() == b"older"
    assert (tmp_path / "s.hfr.partial.2").read_bytes() == b"stale"


def test_a_recorder_keeps_an_interrupted_runs_partial_instead_of_truncating_it(
    tmp_path: Path,
) -> None:
    out = tmp_path / "s.hfr"
    stale = out.with_name("s.hfr.partial")
    stale.write_bytes(b"what a killed recorder wrote")
    with Recorder(out, atomic=True) as rec:
        rec.write(Frame("cam", 0, 0, np.zeros(3)))
    assert rec.stale_partials == [(stale, tmp_path / "s.hfr.partial.1")]
    assert (tmp_path / "s.hfr.partial.1").read_bytes() == b"what a killed recorder wrote"
    assert not stale.exists()
    with open_recording(out) as log:
        assert log.summary().count == 1
    with Recorder(tmp_path / "t.hfr", atomic=True) as rec:  # nothing stale: nothing said
        rec.write(Frame("cam", 0, 0, np.zeros(3)))
    assert rec.stale_partials == []
