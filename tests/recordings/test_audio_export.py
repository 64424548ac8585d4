"""Audio frames exported: WAV, an MP4/MKV audio track beside the video, ROS 2
``audio_common_msgs`` in MCAP; each checked against an independent reader in the same
test (ffprobe, PyAV's decode, the ``mcap`` reader with rosbags deserialising from the
file's own schema text)."""

from __future__ import annotations

import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import anyio
import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import VideoSource
from adapters.audio import AudioSource
from fusion._frames import Frame
from recordings import Recorder, open_recording
from recordings.outputs._export import export_recording
from recordings.outputs.files._audio import Timeline

VIDEO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "video"
PHONE = VIDEO / "androidx_sample_rotate_and_reflect.mp4"  # H.264 + AAC 44.1 kHz mono

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")

ONSET = 0.5  # s: the generated clip's tone starts here (a mark to find after encoding)
RATE = 48000


def ffprobe_streams(path: Path) -> list[dict[str, str]]:
    out = subprocess.run(
        [
            *("ffprobe", "-v", "error", "-count_packets", "-show_entries"),
            "stream=codec_type,codec_name,sample_rate,channels,start_time,duration,duration_ts",
            *("-of", "json", str(path)),
        ],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return list(json.loads(out)["streams"])


def pyav_audio(path: Path) -> tuple[np.ndarray, float, int]:
    """PyAV's decode of the first audio stream: (channels x samples float32, the first
    sample's time in s, rate)."""
    with av.open(str(path)) as c:
        s = c.streams.audio[0]
        chunks = list(c.decode(s))
        first = chunks[0]
        assert first.pts is not None
        assert first.time_base is not None
        t0 = float(first.pts * Fraction(first.time_base))
        pcm = np.concatenate([f.to_ndarray().reshape(f.layout.nb_channels, -1) for f in chunks], 1)
        if chunks[0].format.name in ("flt", "s16"):  # packed: samples interleaved
            pcm = np.concatenate(
                [f.to_ndarray().reshape(-1, f.layout.nb_channels).T for f in chunks], 1
            )
        return pcm.astype(np.float32), t0, int(first.sample_rate)


def read(source: object) -> list[Frame]:
    frames: list[Frame] = []

    async def run() -> None:
        async with source:  # type: ignore[attr-defined]
            async for frame in source.frames():  # type: ignore[attr-defined]
                frames.append(frame)

    anyio.run(run)
    return frames


def record(
    path: Path, sources: list[object], drop: set[tuple[str, int]] | None = None
) -> list[Frame]:
    """Each source's frames into ``path`` (in time order); ``drop`` leaves frames out."""
    if drop is None:
        drop = set()
    frames = sorted((f for s in sources for f in read(s)), key=lambda f: (f.t, f.sensor))
    specs = [spec for s in sources for spec in s.specs]  # type: ignore[attr-defined]
    with Recorder(path, sensors=specs) as rec:
        for frame in frames:
            rec.write(frame)
    return frames


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1.2 s of a 64x48 test pattern at 25 fps with stereo audio: silence, then a 440 Hz
    tone from 0.5 s (left) and 880 Hz (right), AAC, as a phone would record it."""
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    tone = f"0.5*sin(2*PI*440*t)*gte(t\\,{ONSET})|0.25*sin(2*PI*880*t)*gte(t\\,{ONSET})"
    subprocess.run(
        [
            *("ffmpeg", "-v", "error", "-f", "lavfi"),
            *("-i", "testsrc=size=64x48:rate=25:duration=1.2"),
            *("-f", "lavfi", "-i", f"aevalsrc={tone}:s={RATE}:d=1.2"),
            *("-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "192k", str(path)),
        ],
        check=True,
    )  # fmt: skip
    return path


@pytest.fixture(scope="module")
def av_recording(clip: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Frame]]:
    path = tmp_path_factory.mktemp("rec") / "av.hfr"
    frames = record(path, [VideoSource(clip, name="cam"), AudioSource(clip, name="mic")])
    return path, frames


def samples_of(frames: list[Frame], sensor: str) -> np.ndarray:
    return np.concatenate([f.data for f in frames if f.sensor == sensor], axis=1)


def onset(pcm: np.ndarray, rate: int) -> float:
    """Seconds from the first sample to where the tone starts."""
    return float(np.argmax(np.abs(pcm[0]) > 0.05)) / rate


def test_wav_of_a_real_phone_recording_is_bit_exact_by_ffprobe_and_pyav(tmp_path: Path) -> None:
    frames = record(tmp_path / "p.hfr", [AudioSource(PHONE, name="mic")])
    report = export_recording(tmp_path / "p.hfr", tmp_path / "mic.wav", to="wav")
    assert report.complete
    assert report.exported["mic"] == len(frames) > 40
    want = samples_of(frames, "mic")
    (probe,) = ffprobe_streams(tmp_path / "mic.wav")
    assert probe["codec_name"] == "pcm_f32le"
    assert (int(probe["sample_rate"]), int(probe["channels"])) == (44100, 1)
    assert int(probe["duration_ts"]) == want.shape[1]
    pcm, _, rate = pyav_audio(tmp_path / "mic.wav")
    assert rate == 44100
    np.testing.assert_array_equal(pcm, want)  # bit for bit


def test_wav_per_sensor_fills_a_gap_with_silence_and_says_so(
    av_recording: tuple[Path, list[Frame]], tmp_path: Path
) -> None:
    src, _ = av_recording
    with open_recording(src) as log:
        mic = list(log.frames(["mic"]))
    holed = tmp_path / "holed.hfr"
    with open_recording(src) as log:
        specs = [log.summary().sensors["mic"].spec]
    with Recorder(holed, sensors=specs) as rec:
        for f in mic:
            if f.seq != 10:
                rec.write(f)
    report = export_recording(holed, tmp_path / "wavs", to="wav")
    assert report.complete
    assert report.exported["mic"] == len(mic) - 1
    assert any("1 gap(s)" in n and f"{mic[10].data.shape[1]} samples" in n for n in report.notes)
    pcm, _, rate = pyav_audio(tmp_path / "wavs" / "mic.wav")
    assert rate == RATE
    assert pcm.shape[0] == 2
    want = np.concatenate([f.data for f in mic], axis=1)
    at = sum(f.data.shape[1] for f in mic[:10])
    want[:, at : at + mic[10].data.shape[1]] = 0
    np.testing.assert_array_equal(pcm, want)


def test_wav_export_refuses_a_sensor_that_is_not_audio(
    av_recording: tuple[Path, list[Frame]], tmp_path: Path
) -> None:
    src, _ = av_recording
    with pytest.raises(ValueError, match=r"--to wav takes audio sensors.*cam \(camera\)"):
        export_recording(src, tmp_path / "x.wav", to="wav", sensors=["cam", "mic"])
    assert not (tmp_path / "x.wav").exists()


def test_mp4_carries_aac_beside_the_video_in_sync(
    av_recording: tuple[Path, list[Frame]], tmp_path: Path
) -> None:
    src, frames = av_recording
    out = tmp_path / "av.mp4"
    report = export_recording(src, out, to="mp4", sensors=["cam", "mic"])
    assert report.complete
    assert report.exported == {"cam": 30, "mic": report.read["mic"]}
    video, audio = ffprobe_streams(out)
    assert video["codec_type"] == "video"
    assert float(video["start_time"]) == 0.0
    assert audio["codec_name"] == "aac"
    assert float(audio["start_time"]) == 0.0
    assert (int(audio["sample_rate"]), int(audio["channels"])) == (RATE, 2)
    want = samples_of(frames, "mic")
    zero = min(f.t for f in frames)
    first_audio = min(f.t for f in frames if f.sensor == "mic")
    recorded_onset = (first_audio - zero) / 1e9 + onset(want, RATE)
    pcm, t0, rate = pyav_audio(out)
    assert rate == RATE
    # AAC is lossy: the tone's onset (time), frequency and energy, not its samples.
    assert abs(t0 + onset(pcm, rate) - recorded_onset) < 0.0015
    assert abs(pcm.shape[1] - want.shape[1]) <= 1024  # within one AAC frame of padding
    for ch, hz in ((0, 440), (1, 880)):
        seg = pcm[ch, int(0.6 * rate) : int(1.1 * rate)]
        spectrum = np.abs(np.fft.rfft(seg * np.hanning(len(seg))))
        peak = np.fft.rfftfreq(len(seg), 1 / rate)[np.argmax(spectrum)]
        assert abs(peak - hz) < 3
        ref = want[ch, int(0.6 * rate) : int(1.1 * rate)]
        assert np.sqrt(np.mean(seg**2)) == pytest.approx(np.sqrt(np.mean(ref**2)), rel=0.05)


def test_a_real_phone_clips_audio_starts_after_its_video_in_the_mp4_as_recorded(
    tmp_path: Path,
) -> None:
    """The phone's AAC track starts 67.2 ms after its first picture (as PyAV decodes it):
    the exported MP4 keeps that offset to the sample (found by cross-correlation)."""
    src = tmp_path / "phone.hfr"
    frames = record(src, [VideoSource(PHONE, name="cam"), AudioSource(PHONE, name="mic")])
    out = tmp_path / "phone.mp4"
    report = export_recording(src, out, to="mp4")
    assert report.complete
    assert report.exported["cam"] == 30
    video, audio = ffprobe_streams(out)
    assert float(video["start_time"]) == 0.0
    assert (audio["codec_name"], int(audio["sample_rate"]), int(audio["channels"])) == (
        "aac", 44100, 1,
    )  # fmt: skip
    want = samples_of(frames, "mic")[0]
    start = (min(f.t for f in frames if f.sensor == "mic") - min(f.t for f in frames)) / 1e9
    assert start == pytest.approx(0.0672, abs=1e-4)
    pcm, t0, rate = pyav_audio(out)
    n = 20000
    lags = range(0, 3000)
    lag = max(lags, key=lambda k: float(np.dot(pcm[0, k : k + n], want[:n])))
    assert abs(t0 + lag / rate - start) <= 1 / rate  # the first recorded sample, in place
    assert float(audio["start_time"]) == pytest.approx(t0, abs=1e-6)


def test_mkv_carries_the_samples_bit_exact_at_their_time(
    av_recording: tuple[Path, list[Frame]], tmp_path: Path
) -> None:
    src, frames = av_recording
    out = tmp_path / "av.mkv"
    report = export_recording(src, out, to="mkv")  # every sensor: one camera, one audio
    assert report.complete
    assert report.frames_written == len(frames)
    video, audio = ffprobe_streams(out)
    assert video["codec_type"] == "video"
    assert audio["codec_name"] == "pcm_f32le"
    zero = min(f.t for f in frames)
    first_audio = min(f.t for f in frames if f.sensor == "mic")
    assert float(audio["start_time"]) == pytest.approx((first_audio - zero) / 1e9, abs=0.001)
    pcm, t0, rate = pyav_audio(out)
    assert rate == RATE
    assert t0 == pytest.approx((first_audio - zero) / 1e9, abs=0.001)
    np.testing.assert_array_equal(pcm, samples_of(frames, "mic"))
    with av.open(str(out)) as c:  # the video is all there, at its own times
        assert sum(1 for _ in c.decode(video=0)) == 30


def test_ros2_mcap_holds_audio_common_msgs_equal_to_the_recorded_samples(
    av_recording: tuple[Path, list[Frame]], tmp_path: Path
) -> None:
    from mcap.reader import make_reader
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    src, frames = av_recording
    out = tmp_path / "a.mcap"
    report = export_recording(src, out, sensors=["mic"], groups="none")
    mic = [f for f in frames if f.sensor == "mic"]
    assert report.complete
    assert report.exported["mic"] == len(mic)
    store = get_typestore(Stores.ROS2_HUMBLE)
    stamped: list[Any] = []
    infos: list[Any] = []
    with open(out, "rb") as fh:
        for schema, channel, message in make_reader(fh).iter_messages():
            assert schema is not None
            # The file's own schema text (with its dependencies) defines the type.
            types = get_types_from_msg(schema.data.decode(), schema.name)
            store.register({k: v for k, v in types.items() if k not in store.types})
            msg = store.deserialize_cdr(message.data, schema.name)
            if channel.topic == "/mic":
                assert schema.name == "audio_common_msgs/msg/AudioDataStamped"
                stamped.append(msg)
            else:
                assert channel.topic == "/mic/audio_info"
                infos.append(msg)
    assert len(infos) == 1
    info = infos[0]
    assert (info.channels, info.sample_rate, info.sample_format) == (2, RATE, "F32LE")
    assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in stamped] == [
        f.t for f in mic
    ]
    for m, f in zip(stamped, mic, strict=True):
        got = np.frombuffer(m.audio.data.tobytes(), "<f4").reshape(-1, 2).T
        np.testing.assert_array_equal(got, f.data)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.sampled_from([8000, 44100, 48000]),
    sizes=st.lists(st.integers(1, 2000), min_size=1, max_size=30),
    moves=st.lists(st.integers(-3000, 3000), min_size=30, max_size=30),
    zero=st.integers(0, 10**12),
)
def test_the_timeline_puts_every_sample_at_its_own_time(
    rate: int, sizes: list[int], moves: list[int], zero: int
) -> None:
    """Frames stamped as AudioSource stamps them (``index * 1e9 // rate``), with gaps and
    overlaps: each written sample lands at its own index; gaps are silence. A frame that
    starts within one sample of where the track ends is jitter: written on from there."""
    tl = Timeline(zero * 10**9 // rate)
    index, end = zero, None
    last = -1  # the last sample index written
    for k, n in enumerate(sizes):
        move = moves[k] if abs(moves[k]) > 1 and k else 0
        index += move
        pcm = np.full((1, n), k + 1, np.float32)
        frame = Frame("a", k, index * 10**9 // rate, pcm, meta={"rate": rate})
        placed = tl.place(frame)
        # (a move of 2 or more after a left-out frame can still land within one sample)
        at = index if end is None or abs(index - end) > 1 else end
        if end is not None and at + n <= end:
            assert isinstance(placed, str)
            assert "repeat" in placed
        else:
            assert not isinstance(placed, str)
            start, silence, got = placed
            skip = 0 if end is None or at >= end else end - at
            assert start == at - zero + skip
            assert silence == (0 if end is None or at <= end else at - end)
            assert got.shape[1] == n - skip
            assert (got == k + 1).all()  # the frame's own samples, none of another
            last = max(last, start + got.shape[1] - 1)
            end = at + n
        index += n
    assert tl.end == last + 1


@pytest.mark.parametrize("to", ["mp4", "mkv"])
def test_recorded_h264_packets_are_copied_beside_the_audio_every_picture_kept(
    av_recording: tuple[Path, list[Frame]], tmp_path: Path, to: str
) -> None:
    """A camera recorded as H.264 (libx264's B-frames) is remuxed, not re-encoded, with the
    audio beside it: every picture decodes and the tone starts at its recorded time."""
    from recordings.hfr.video import VideoRecorder

    _, frames = av_recording
    src = tmp_path / "h264.hfr"
    with open_recording(av_recording[0]) as log:
        specs = [s.spec for s in log.summary().sensors.values()]
    with VideoRecorder(src, video={"cam": "h264"}, sensors=specs) as rec:
        for frame in frames:
            rec.write(frame)
    out = tmp_path / f"av.{to}"
    report = export_recording(src, out, to=to)  # type: ignore[arg-type]
    assert report.complete
    with av.open(str(out)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 30
    pcm, t0, rate = pyav_audio(out)
    assert abs(t0 + onset(pcm, rate) - onset(samples_of(frames, "mic"), RATE)) < 0.0015
