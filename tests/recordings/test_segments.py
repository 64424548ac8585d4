"""recordings.hfr._segments: a recording's cuts snap to chunk boundaries from the footer index,
the fleet plans the same cuts, and a lagging segment is cut halfway to its end."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperframes.fleet._plan import plan_parts
from recordings import open_recording
from recordings.hfr._segments import (
    chunk_boundaries,
    cut_times,
    recording_segments,
    recording_split_point,
)
from tests.fleet.fleet_helpers import make_recording

MS = 1_000_000


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 s of the fleet tests' synthetic drive, in several chunks."""
    return make_recording(tmp_path_factory.mktemp("segments") / "r.hfr", 3.0, 4)


def test_recording_cuts_snap_to_chunk_boundaries(recording: Path) -> None:
    path = recording
    with open_recording(path) as log:
        chunks = list(log.chunks)
    bounds = chunk_boundaries(chunks)
    assert bounds == sorted(set(bounds))
    for b in bounds:  # every chunk lies wholly on one side
        assert all(c.t_end < b or c.t_start >= b for c in chunks)
    ranges = recording_segments(chunks, 1_000 * MS)
    assert ranges[0][0] is None
    assert ranges[-1][1] is None
    t0 = min(c.t_start for c in chunks)
    for k, (start, _) in enumerate(ranges[1:], 1):
        target = t0 + k * 1_000 * MS
        near = [b for b in bounds if abs(b - target) <= 250 * MS]
        # Snapped to the nearest boundary within a quarter of the target, or left there.
        assert start == (min(near, key=lambda b: abs(b - target)) if near else target)
    assert any(start in bounds for start, _ in ranges[1:])
    assert cut_times(0, 10, 3, boundaries=[]) == [3, 6, 9]
    assert cut_times(0, 10, 4, boundaries=[5, 9]) == [5, 9]


def test_the_fleet_plans_the_same_cuts(recording: Path) -> None:
    # The Ray fleet's plan is these cuts (local and cluster runs share one plan).
    path = recording
    with open_recording(path) as log:
        ranges = recording_segments(list(log.chunks), 1_000 * MS)
    parts = plan_parts([str(path)], split=1_000 * MS, overlap=7)
    assert [(p.start, p.end) for p in parts] == ranges
    assert [p.read_start for p in parts[1:]] == [s - 7 for s, _ in ranges[1:]]  # type: ignore[operator]


def test_a_lagging_segment_is_cut_halfway_to_its_end(recording: Path) -> None:
    path = recording
    with open_recording(path) as log:
        chunks = list(log.chunks)
    last = max(c.t_end for c in chunks)
    assert recording_split_point(chunks, 100, 300) == 200
    # The open last segment ends just after the last frame.
    assert recording_split_point(chunks, last - 9, None) == last - 4
    assert recording_split_point(chunks, 100, 101) is None  # nothing between them
    assert recording_split_point(chunks, last, None) is None
    assert recording_split_point([], 7, None) is None
