"""``AudioSource`` against ffprobe and PyAV's own decode of the same files: sine waves made
with ffmpeg (known sample counts), a real phone recording's AAC track, a TS with a PTS gap;
the framer's invariants as a hypothesis property."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import anyio
import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.audio import AudioSource, Cut, Discontinuity, Framer, sample_time
from adapters.errors import SourceOpenError
from fusion._frames import Frame
from fusion.errors import ConfigError

VIDEO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "video"
PHONE = VIDEO / "androidx_sample_rotate_and_reflect.mp4"  # H.264 + AAC 44.1 kHz mono
PHONE_STEREO = VIDEO / "androidx_hlg10-color-test.mp4"  # HEVC + AAC 48 kHz stereo

needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")


def read(source: AudioSource) -> list[Frame]:
    frames: list[Frame] = []

    async def run() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    anyio.run(run)
    return frames


def ffprobe_frames(path: Path) -> list[tuple[int, int]]:
    """(pts, samples) of every decoded audio frame, as ffprobe reports them."""
    out = subprocess.run(
        [
            *("ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries"),
            *("frame=pts,nb_samples", "-of", "json", str(path)),
        ],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [(int(f["pts"]), int(f["nb_samples"])) for f in json.loads(out)["frames"]]


def pyav_decode(path: Path) -> tuple[int, int, Fraction]:
    """PyAV's own decode: (samples, first pts, time base)."""
    with av.open(str(path)) as c:
        s = c.streams.audio[0]
        chunks = list(c.decode(s))
        assert chunks[0].pts is not None
        assert s.time_base is not None
        return sum(f.samples for f in chunks), int(chunks[0].pts), Fraction(s.time_base)


def ffmpeg_pcm(path: Path, channels: int) -> np.ndarray:
    """The ffmpeg command's own float32 decode (channels x samples)."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-f", "f32le", "-c:a", "pcm_f32le", "-"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return np.frombuffer(raw, "<f4").reshape(-1, channels).T


@needs_ffmpeg
@pytest.mark.parametrize(
    ("codec", "ext", "rate", "channels"),
    [("pcm_s16le", "wav", 48000, 2), ("flac", "flac", 44100, 1), ("pcm_f32le", "wav", 16000, 1)],
)
def test_a_generated_sine_gives_every_sample_in_20_ms_frames_equal_to_pyav(
    tmp_path: Path, codec: str, ext: str, rate: int, channels: int
) -> None:
    path = tmp_path / f"sine.{ext}"
    n = rate * 3 // 2 + 7  # 1.5 s and 7 samples: the last frame is short
    subprocess.run(
        [
            *("ffmpeg", "-v", "error", "-f", "lavfi", "-i"),
            f"sine=frequency=440:sample_rate={rate}",
            *("-ac", str(channels), "-af", f"atrim=end_sample={n}", "-c:a", codec, str(path)),
        ],
        check=True,
    )  # fmt: skip
    assert sum(s for _, s in ffprobe_frames(path)) == n
    assert pyav_decode(path)[0] == n
    want = ffmpeg_pcm(path, channels)
    source = AudioSource(path)
    frames = read(source)
    size = rate // 50
    assert [f.data.shape for f in frames] == [(channels, size)] * (n // size) + [
        (channels, n % size)
    ]
    got = np.concatenate([f.data for f in frames], axis=1)
    np.testing.assert_array_equal(got, want)
    assert [f.meta["sample_index"] for f in frames] == [k * size for k in range(len(frames))]
    assert [f.t_sensor for f in frames] == [k * size * 10**9 // rate for k in range(len(frames))]
    assert [f.meta["partial"] for f in frames] == [False] * (len(frames) - 1) + [True]
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted > 0
    assert not source.errors


@needs_ffmpeg
@pytest.mark.parametrize("path", [PHONE, PHONE_STEREO], ids=["aac-mono", "aac-stereo"])
def test_a_real_recordings_audio_track_equals_ffprobe_and_pyav(path: Path) -> None:
    probe = ffprobe_frames(path)
    count, first, tb = pyav_decode(path)
    assert count == sum(s for _, s in probe)
    assert first == probe[0][0]
    source = AudioSource(path)
    frames = read(source)
    assert source.opened is not None
    rate = source.opened.rate
    got = np.concatenate([f.data for f in frames], axis=1)
    assert got.shape == (source.opened.channels, count)
    want = ffmpeg_pcm(path, source.opened.channels)
    if want.shape[1] == count:  # (ffmpeg's CLI trims the encoder delay an edit list states)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)  # AAC's float DSP paths
    start = int(first * tb * rate)
    assert frames[0].meta["sample_index"] == start
    assert frames[0].t_sensor == sample_time(start, rate)
    # the PTS gaps ffprobe shows (the stereo file has one after its first frame) are the
    # gaps counted; elsewhere each frame starts where the last ended
    at = [(int(pts * tb * rate), n) for pts, n in probe]  # sample indexes
    gaps = [b[0] - (a[0] + a[1]) for a, b in itertools.pairwise(at)]
    gaps = [g for g in gaps if g]
    assert source.errors.get("gap", 0) == len(gaps)
    assert source.gap_samples == sum(gaps)
    breaks = 0
    for a, b in itertools.pairwise(frames):
        if b.meta["sample_index"] != a.meta["sample_index"] + a.data.shape[1]:
            breaks += 1
            assert a.meta["partial"]
    assert breaks == len(gaps)
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted
    assert set(source.errors) <= {"gap"}


def test_resampling_and_layout_are_options_with_pts_kept() -> None:
    probe = ffprobe_frames(PHONE)
    source = AudioSource(PHONE, rate=16000, layout="stereo", frame_ms=10)
    frames = read(source)
    assert {f.data.shape[0] for f in frames} == {2}
    assert {f.data.shape[1] for f in frames[:-1]} == {160}
    assert frames[0].meta["sample_index"] == probe[0][0] * 16000 // 44100
    total = sum(f.data.shape[1] for f in frames)
    assert abs(total - sum(s for _, s in probe) * 16000 / 44100) < 40  # the resampler's edges
    np.testing.assert_array_equal(frames[3].data[0], frames[3].data[1])  # mono to both


@needs_ffmpeg
def test_a_pts_gap_in_a_stream_is_counted_and_framing_goes_on_from_the_new_pts(
    tmp_path: Path,
) -> None:
    ts = tmp_path / "sine.ts"
    subprocess.run(
        [
            *("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"),
            *("-t", "1.5", "-ac", "2", "-c:a", "mp2", "-f", "mpegts", str(ts)),
        ],
        check=True,
    )  # fmt: skip
    data = ts.read_bytes()
    mid = len(data) // 188 // 2
    cut = tmp_path / "gap.ts"
    cut.write_bytes(data[: mid * 188] + data[(mid + 10) * 188 :])  # 10 TS packets lost
    probe = ffprobe_frames(cut)
    source = AudioSource(cut)
    frames = read(source)
    assert sum(f.data.shape[1] for f in frames) == sum(s for _, s in probe)
    assert source.errors["gap"] == 1
    (message,) = source.error_messages["gap"]
    jump = [(a, b) for a, b in itertools.pairwise(probe) if b[0] != a[0] + a[1] * 90000 // 48000]
    assert len(jump) == 1
    (before, after) = jump[0]
    expected = (before[0] * 48000 // 90000) + before[1]
    found = after[0] * 48000 // 90000
    assert f"jumped from sample {expected} to {found}" in message
    assert source.gap_samples == found - expected
    partial = [f for f in frames if f.meta["partial"]]
    assert len(partial) == 2  # the frame cut by the gap and the last one
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted + ledger.lost_total


def test_bad_inputs_and_options_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"layout 'quadrophonic' is not a channel layout"):
        AudioSource(PHONE, layout="quadrophonic")
    with pytest.raises(ConfigError, match=r"frame_ms must be in \(0, 60000\], got 0"):
        AudioSource(PHONE, frame_ms=0)
    with pytest.raises(SourceOpenError, match=r"audio file '.*missing.wav' does not exist"):
        read(AudioSource(tmp_path / "missing.wav"))
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"\x00" * 1000)
    with pytest.raises(SourceOpenError, match=r"is not a container FFmpeg can read"):
        read(AudioSource(junk))
    video_only = VIDEO / "androidx_h265_bframes.mp4"
    with pytest.raises(SourceOpenError, match=r"has no audio stream \(streams: video\)"):
        read(AudioSource(video_only))
    with pytest.raises(SourceOpenError, match=r"has 1 audio stream\(s\); audio stream 2 was"):
        read(AudioSource(PHONE, stream=2))


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 50),
    chunks=st.lists(st.tuples(st.integers(0, 70), st.integers(-30, 30)), min_size=1, max_size=30),
)
def test_the_framer_keeps_every_sample_in_order_and_every_unit_once(
    size: int, chunks: list[tuple[int, int]]
) -> None:
    framer = Framer(size, 1, slack=0)
    out: list[Cut | Discontinuity] = []
    index, fed, value = 1000, [], 0.0
    for n, jump in chunks:
        index += jump
        samples = np.arange(value, value + n, dtype=np.float32)[None, :]
        value += n
        fed.append(samples)
        out += framer.push(samples, index, 1)
        index += n
    out += framer.flush()
    cuts = [c for c in out if isinstance(c, Cut)]
    joined = np.concatenate([c.samples for c in cuts], axis=1) if cuts else np.zeros((1, 0))
    np.testing.assert_array_equal(joined, np.concatenate(fed, axis=1))
    assert sum(c.units for c in cuts) == len(chunks)
    assert all(c.samples.shape[1] == size for c in cuts if not c.partial)
    jumps = [c for c in out if isinstance(c, Discontinuity)]
    assert len(jumps) == sum(1 for (n, j) in chunks[1:] if j != 0)
    # each cut's index: where its first sample was on the stream's timeline
    for c in cuts:
        if c.samples.shape[1]:
            assert c.index >= 0


def test_a_video_source_on_a_file_with_audio_says_it_left_the_audio_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from adapters import VideoSource

    async def run() -> None:
        async with VideoSource(str(PHONE)) as video:
            async for _ in video.frames():
                break

    with caplog.at_level("INFO", logger="adapters.video"):
        anyio.run(run)
    said = [r.getMessage() for r in caplog.records if "audio stream" in r.getMessage()]
    assert said == [
        f"video {PHONE}: its 1 audio stream(s) (aac) are left out of this video source; record "
        'them with a source of type = "audio" on the same url (adapters.AudioSource)'
    ]
