"""Segment parallelism: the process pool's results equal the serial run's, in order, on
real and generated video and on a recording through a run file's sync and workers."""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adapters.video.segments import DecodeCounts, decode_range, keyframe_times, video_segments
from adapters.video.synth import write_video
from hyperframes.fleet.config import validate_fleet_config
from hyperframes.fleet.plan import plan_parts
from hyperframes.segments import (
    RecordingJob,
    SegmentError,
    SegmentStatistics,
    VideoJob,
    VideoWorkersJob,
    run_segments,
    run_serial,
)
from recordings import open_recording
from recordings.segments import chunk_boundaries, cut_times, recording_segments
from tests.fleet.fleet_helpers import WORKERS, make_recording, run_config

MS = 1_000_000
REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real" / "video"


def features(image: np.ndarray) -> np.ndarray:
    """A per-frame feature: mean and spread per channel, and a coarse histogram."""
    flat = image.reshape(-1, image.shape[-1]).astype(np.float32)
    hist = np.bincount(image[::4, ::4, 0].ravel() >> 4, minlength=16)
    return np.concatenate([flat.mean(0), flat.std(0), hist.astype(np.float32)])


def slow_features(image: np.ndarray) -> np.ndarray:
    """``features``, 5 ms slower a frame."""
    time.sleep(0.005)
    return features(image)


def fails_on_dark(image: np.ndarray) -> np.ndarray:
    if image.mean() < 0:
        raise AssertionError("unreachable")
    raise ValueError("the model broke")


def same(a: list[tuple[int, Any]], b: list[tuple[int, Any]]) -> bool:
    return len(a) == len(b) and all(
        x[0] == y[0] and np.array_equal(x[1], y[1]) for x, y in zip(a, b, strict=True)
    )


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5 s of H.264 at 30 fps, a key frame every half second."""
    path = tmp_path_factory.mktemp("seg") / "clip.mp4"
    write_video(path, [i * 33 for i in range(150)], size=(160, 120), gop=15)
    return path


def test_real_video_segments_decode_to_the_whole_decode_and_ffprobe() -> None:
    path = REAL / "androidx_trim_optimization_failure.mp4"  # 25 key frames, 167 frames
    keys = keyframe_times(path)
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
         "frame=pts_time", "-of", "json", str(path)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    expected = [round(float(f["pts_time"]) * 1e3) for f in json.loads(probe.stdout)["frames"]]
    whole = [(t, img.tobytes()) for t, img in decode_range(path, size=(64, 48))]
    assert [round(t / 1e6) for t, _ in whole] == expected
    cut = video_segments(path, 1, keyframes=keys)  # at every key frame
    assert len(cut) == len(keys) == 25
    counts = DecodeCounts()
    pieces = [
        (t, img.tobytes())
        for a, b in cut
        for t, img in decode_range(path, a, b, size=(64, 48), counts=counts)
    ]
    assert pieces == whole
    # Each range seeks to its own key frame, not the one before (times round-trip
    # through nanoseconds): little is decoded beyond what is kept.
    assert counts.kept == 167
    assert counts.decoded <= counts.kept + 2 * len(cut)


@pytest.mark.parametrize(
    "name",
    [
        "androidx_sample_h264.ts",  # MPEG-TS: seeks bisect bytes and may land late
        "androidx_iibbibb_editlist_videoonly.mp4",  # open GOPs: B-frames before their I
        "androidx_roadtrip-vp92-10bit.webm",  # VP9 in Matroska
        "androidx_edit_list_positive_shift.mp4",  # an edit list that shifts the start
    ],
)
def test_real_clips_cut_at_key_frames_decode_as_expected_json(name: str) -> None:
    """Segments at every key frame, decoded one by one, give the frames ffprobe lists
    (expected.json: count and presentation times), in order, pixels as one whole decode."""
    path = REAL / name
    expected = json.loads((REAL.parent / "expected.json").read_text())["files"][f"video/{name}"]
    frames, video = expected["expected"]["frames"], expected["expected"]["video"]
    tb = Fraction(video["time_base"])
    keys = keyframe_times(path)
    cut = video_segments(path, 1, keyframes=keys)
    assert len(cut) == len(keys) >= 2
    pieces = [
        (t, img.tobytes()) for a, b in cut for t, img in decode_range(path, a, b, size=(32, 24))
    ]
    want = [int(p * tb * 1_000_000_000) for p in sorted(frames["best_effort_timestamps"])]
    assert len(pieces) == frames["decoded_count"]
    assert [t for t, _ in pieces] == want
    assert pieces == [(t, img.tobytes()) for t, img in decode_range(path, size=(32, 24))]


def test_ranges_that_do_not_start_at_key_frames_still_tile_the_decode(clip: Path) -> None:
    whole = [(t, img.tobytes()) for t, img in decode_range(clip)]
    cuts = [None, 700 * MS, 710 * MS, 2_345 * MS, None]
    pieces = [
        (t, img.tobytes())
        for a, b in itertools.pairwise(cuts)
        for t, img in decode_range(clip, a, b)
    ]
    assert pieces == whole


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


def test_a_failing_segment_names_itself(clip: Path) -> None:
    job = VideoJob(str(clip), fails_on_dark)
    with pytest.raises(SegmentError, match=r"segment \[None, .*\) of 'clip.mp4' failed: the model"):
        list(run_segments(job, processes=1, target_s=1.0))


def test_recording_cuts_snap_to_chunk_boundaries(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "r.hfr", 3.0, 4)
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
    # The Ray fleet's plan is the same cuts (local and cluster runs share one plan).
    parts = plan_parts([str(path)], split=1_000 * MS, overlap=7)
    assert [(p.start, p.end) for p in parts] == ranges
    assert [p.read_start for p in parts[1:]] == [s - 7 for s, _ in ranges[1:]]  # type: ignore[operator]
    assert cut_times(0, 10, 3, boundaries=[]) == [3, 6, 9]
    assert cut_times(0, 10, 4, boundaries=[5, 9]) == [5, 9]


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
