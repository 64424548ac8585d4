"""hyperframes.segments._jobs: a run file's workers on video segments and a run file's
sync, stages and workers on recording segments give the serial groups, also when a
lagging recording segment is cut."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hyperframes.fleet._config import validate_fleet_config
from hyperframes.segments import (
    RecordingJob,
    SegmentStatistics,
    VideoWorkersJob,
    run_segments,
    run_serial,
)
from recordings import open_recording
from tests.fleet.fleet_helpers import WORKERS, make_recording, run_config

from .helpers import MS


@dataclass(frozen=True)
class SlowRecordingJob(RecordingJob):
    """``RecordingJob``, 30 ms slower a group."""

    def process(self, raw: Any) -> Any:
        time.sleep(0.03)
        return raw


def test_a_lagging_recording_segment_is_split_and_the_groups_stay_identical(
    tmp_path: Path,
) -> None:
    # A short first segment and the open-ended rest: the rest is cut while it runs
    # (its end taken from the footer index), and the groups are the serial ones.
    path = make_recording(tmp_path / "lag.hfr", 3.0, 11)
    job = SlowRecordingJob(run_config([path], tmp_path / "out", overlap_s=0.2), str(path))
    with open_recording(path) as log:
        t0 = min(c.t_start for c in log.chunks)
    stats = SegmentStatistics()
    plan = [(None, t0 + 150 * MS), (t0 + 150 * MS, None)]
    parallel = list(run_segments(job, processes=2, segments=plan, straggle=0.0, stats=stats))
    serial = list(run_serial(job))
    assert [(t, keys) for t, (keys, _) in parallel] == [(t, keys) for t, (keys, _) in serial]
    for (_, (_, res_a)), (_, (_, res_b)) in zip(parallel, serial, strict=True):
        for name in res_b:
            np.testing.assert_array_equal(res_a[name], res_b[name])
    assert stats.resplit >= 1
    assert len(serial) == 30


def test_a_run_files_workers_on_video_segments_give_the_serial_results(
    clip: Path, tmp_path: Path
) -> None:
    # The run file's [[workers]] (an ONNX edge model on the camera image) per frame.
    config = validate_fleet_config(
        {
            "fleet": {"recordings": [str(clip)], "output": str(tmp_path / "out")},
            "sync": {"policy": "exact"},
            "workers": [w for w in WORKERS if w["input"] == "cam"],
        }
    )
    job = VideoWorkersJob(str(clip), config=config, sensor="cam")
    serial = list(run_serial(job))
    stats = SegmentStatistics()
    parallel = list(run_segments(job, processes=2, target_s=1.0, stats=stats))
    assert stats.planned == 4
    assert [(t, keys) for t, (keys, _) in parallel] == [(t, keys) for t, (keys, _) in serial]
    assert [keys for _, (keys, _) in serial] == [[("cam", i)] for i in range(150)]
    for (_, (_, a)), (_, (_, b)) in zip(parallel, serial, strict=True):
        assert a.keys() == b.keys() == {"edges"}
        np.testing.assert_array_equal(a["edges"], b["edges"])
    # The outputs change from frame to frame: the model saw each frame, not one image.
    assert len({float(np.asarray(r["edges"]).sum()) for _, (_, r) in serial}) > 1


def test_a_recording_run_file_in_the_pool_gives_the_serial_groups(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "drive.hfr", 3.0, 7)
    config = run_config([path], tmp_path / "out", overlap_s=0.2)
    job = RecordingJob(config, str(path))
    serial = list(run_serial(job))
    stats = SegmentStatistics()
    parallel = list(run_segments(job, processes=2, target_s=0.5, stats=stats))
    assert stats.planned >= 5
    assert [t for t, _ in parallel] == [t for t, _ in serial]
    for (_, (keys_a, res_a)), (_, (keys_b, res_b)) in zip(parallel, serial, strict=True):
        assert keys_a == keys_b  # groups across the cuts took the same frames
        assert res_a.keys() == res_b.keys()
        for name in res_a:
            np.testing.assert_array_equal(res_a[name], res_b[name])
    assert len(serial) == 30
    # Groups straddle the cuts: a member on the other side of its segment's start.
    with open_recording(path) as log:
        when = {f.key: f.t for f in log.frames()}
    cuts = [start for start, _ in job.segments(500 * MS)[1:]]
    straddling = [
        t for t, (keys, _) in serial for c in cuts if t >= c and min(when[k] for k in keys) < c
    ]
    assert len(straddling) >= 3
