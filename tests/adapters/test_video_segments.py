"""adapters.video._segments: cuts at key frames and range decodes tile one whole decode
(real clips against ffprobe and expected.json, a generated clip), and where a lagging
segment is cut."""

from __future__ import annotations

import itertools
import json
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from adapters.video._segments import (
    DecodeCounts,
    decode_range,
    keyframe_times,
    video_segments,
    video_split_point,
)
from adapters.video._synth import write_video

MS = 1_000_000
REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"


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


def test_a_lagging_segment_is_cut_at_the_key_frame_nearest_the_middle_of_what_is_left(
    clip: Path,
) -> None:
    keys = keyframe_times(clip)  # every 495 ms
    assert keys[:4] == [0, 495 * MS, 990 * MS, 1_485 * MS]
    # [.., 1.485 s) has reached 0.1 s: the middle of what is left is 0.79 s.
    assert video_split_point(keys, 100 * MS, 1_485 * MS) == 990 * MS
    # The open last segment: what is left ends at the last key frame.
    assert video_split_point(keys, 4_000 * MS, None) == keys[-1]
    # No key frame strictly after the progress and before the end: not cut.
    assert video_split_point(keys, 500 * MS, 990 * MS) is None
    assert video_split_point(keys, keys[-1], None) is None
    assert video_split_point([], 0, None) is None
