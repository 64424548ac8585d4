"""A real phone clip's video and audio as two sources of one file, through the CLI as
processes: ``record`` (TOML ``type = "video"`` and ``type = "audio"`` on the same MP4),
``info`` (the audio sensor's rate, channels, frames, gaps), ``sync`` (``Nearest`` with an
audio window: every audio frame in one group at most, the rest counted), ``replay``
through the config twice (the same groups as ``sync``), ``export`` to WAV and MKV; each
against ffprobe/PyAV of the clip itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from recordings import open_recording
from tests.acceptance.av_clip import CLIP, SYNC_ARGS, write_config
from tests.acceptance.live_helpers import hyperframes, info_json, need_ffmpeg


def pyav_samples(path: Path) -> tuple[np.ndarray, int]:
    """PyAV's own decode of the clip's audio (channels x samples) and its first PTS."""
    with av.open(str(path)) as c:
        chunks = list(c.decode(c.streams.audio[0]))
        first = chunks[0].pts
        assert first is not None
        return np.concatenate([f.to_ndarray() for f in chunks], axis=1), int(first)


def ffprobe_streams(path: Path) -> list[dict[str, str]]:
    done = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(done.stdout)["streams"])


def test_record_info_sync_replay_export_of_a_phone_clips_video_and_audio(tmp_path: Path) -> None:
    need_ffmpeg()
    probe = ffprobe_streams(CLIP)
    assert {s["codec_type"]: s["codec_name"] for s in probe} == {"video": "h264", "audio": "aac"}
    want, first_pts = pyav_samples(CLIP)
    config = write_config(tmp_path)
    rec = tmp_path / "av.hfr"

    done = hyperframes("record", str(config), "-o", str(rec), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    with open_recording(rec) as log:
        frames = list(log.frames())
    mic = [f for f in frames if f.sensor == "mic"]
    cam = [f for f in frames if f.sensor == "cam"]
    assert len(cam) == 30
    np.testing.assert_array_equal(np.concatenate([f.data for f in mic], axis=1), want)
    assert mic[0].meta["sample_index"] == first_pts  # the stream's own PTS (1/44100 s)

    doc = info_json(rec)
    sound = doc["sensors"]["mic"]
    assert sound["kind"] == "audio"
    assert sound["audio"] == {
        "rate": 44100, "channels": 1, "frames": len(mic), "samples": want.shape[1],
        "seconds": want.shape[1] / 44100, "gaps": 0, "gap_samples": 0,
        "overlaps": 0, "overlap_samples": 0, "reconnects": 0,
    }  # fmt: skip
    shown = hyperframes("info", str(rec))
    assert "44100" in shown.stdout
    assert "audio" in shown.stdout

    groups = tmp_path / "groups.parquet"
    done = hyperframes("sync", str(rec), *SYNC_ARGS, "-o", str(groups))
    assert done.returncode == 0, done.stdout + done.stderr
    table = pq.read_table(groups).to_pylist()
    assert [row["cam_seq"] for row in table] == list(range(30))
    taken = [seq for row in table for seq in row["mic_seq"] or []]
    assert len(taken) == len(set(taken))  # every audio frame in one window at most
    for row in table:  # each window holds what lies within 16.68 ms of its picture
        for t in row["mic_t"] or []:
            assert abs(t - row["cam_t"]) <= 16_680_000
    first, last = cam[0].t - 16_680_000, cam[-1].t + 16_680_000
    inside = {f.seq for f in mic if first <= f.t <= last}
    assert set(taken) == inside  # and every one the pictures' windows cover is in one
    assert f"{len(table)} groups" in done.stdout

    replays = [
        hyperframes("replay", str(rec), "-r", "max", "--config", str(config), timeout=120)
        for _ in range(2)
    ]
    for done in replays:
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"replayed {len(frames)} frames into {len(table)} groups" in done.stdout

    wav = tmp_path / "mic.wav"
    done = hyperframes("export", str(rec), "-o", str(wav), "--to", "wav", "--sensors", "mic")
    assert done.returncode == 0, done.stdout + done.stderr
    with av.open(str(wav)) as c:
        got = np.concatenate([f.to_ndarray() for f in c.decode(audio=0)], axis=1)
    np.testing.assert_array_equal(got.reshape(1, -1), want)
    mkv = tmp_path / "av.mkv"
    done = hyperframes("export", str(rec), "-o", str(mkv), "--to", "mkv")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"wrote {len(frames)} of {len(frames)} frames read" in done.stdout
    streams = ffprobe_streams(mkv)
    assert [(s["codec_type"], s["codec_name"]) for s in streams] == [
        ("video", "h264"),
        ("audio", "pcm_f32le"),
    ]
    assert float(streams[1]["start_time"]) == pytest.approx(
        (mic[0].t - min(f.t for f in frames)) / 1e9, abs=0.001
    )
