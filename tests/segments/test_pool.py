"""hyperframes.segments._pool: the process pool's results equal the serial run's, in
order, through bounded shared-memory blocks, with lagging segments split and a failing
one named (on a generated video, with VideoJob)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapters.video._segments import video_segments
from hyperframes.segments import SegmentError, SegmentStatistics, VideoJob, run_segments, run_serial

from .helpers import MS, fails_on_dark, features, same, slow_features


def test_the_pool_gives_the_serial_results_in_order(clip: Path) -> None:
    job = VideoJob(str(clip), features)
    serial = list(run_serial(job))
    stats = SegmentStatistics()
    parallel = list(run_segments(job, processes=2, target_s=1.0, stats=stats))
    assert same(parallel, serial)
    # Key frames every 495 ms: cuts at the first one a second or more after the last.
    assert stats.planned == len(video_segments(clip, 1_000 * MS)) == 4
    assert len(serial) == 150


def test_results_that_fill_a_block_continue_in_a_new_segment(clip: Path) -> None:
    job = VideoJob(str(clip), features)
    stats = SegmentStatistics()
    # A block holds 5 feature vectors (22 float32 = 88 bytes, 128 aligned).
    parallel = list(run_segments(job, processes=2, target_s=1.0, block_bytes=640, stats=stats))
    assert same(parallel, list(run_serial(job)))
    assert stats.continued >= 20


def test_whole_frames_come_back_through_the_bounded_blocks(clip: Path) -> None:
    # The decoded images themselves as results (57.6 kB each): 17 fit a 1 MiB block,
    # so segments continue, and every pixel equals the serial decode's.
    job = VideoJob(str(clip), np.ascontiguousarray)
    stats = SegmentStatistics()
    parallel = list(
        run_segments(job, processes=2, target_s=1.0, blocks=2, block_bytes=1 << 20, stats=stats)
    )
    serial = list(run_serial(job))
    assert same(parallel, serial)
    assert all(a.shape == (120, 160, 3) for _, a in parallel)
    assert stats.continued >= 4


def test_a_lagging_segment_is_split_and_the_results_stay_identical(clip: Path) -> None:
    # A short segment and a long one: when the short one is done, the long one (134
    # frames, at least 0.67 s) is still short of its last key frames and is cut.
    job = VideoJob(str(clip), slow_features)
    stats = SegmentStatistics()
    plan = [(None, 495 * MS), (495 * MS, None)]
    parallel = list(run_segments(job, processes=2, segments=plan, straggle=0.0, stats=stats))
    assert same(parallel, list(run_serial(job)))
    assert stats.resplit >= 1


def test_a_failing_segment_names_itself(clip: Path) -> None:
    job = VideoJob(str(clip), fails_on_dark)
    with pytest.raises(SegmentError, match=r"segment \[None, .*\) of 'clip.mp4' failed: the model"):
        list(run_segments(job, processes=1, target_s=1.0))
