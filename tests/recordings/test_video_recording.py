"""Video in recordings: camera sensors stored as encoded video (real PyAV encode and decode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import av
import numpy as np
import pytest

from adapters.synthetic import SensorTiming, SyntheticCamera, SyntheticImu, synthetic_timeline
from adapters.video import VideoSource
from adapters.video._synth import write_video
from fusion import Nearest, Pipeline, VirtualClock
from fusion._frames import Frame
from fusion._timing import use_clock
from fusion.errors import ConfigError
from hyperframes.config import build_pipeline, validate_config
from recordings import Recorder, open_recording
from recordings.hfr.video._encoder import parse_codec
from recordings.hfr.video._packets import META_KEY, keyframe_sensor
from recordings.hfr.video._playback import VideoReader, VideoReplay, describe_tracks
from recordings.hfr.video._recording import VideoRecorder

MS = 1_000_000
WIDTH, HEIGHT = 320, 240


def camera(seconds: float = 2.0, **kwargs: Any) -> SyntheticCamera:
    # Sensor noise (sigma 8) is what makes raw camera frames incompressible.
    return SyntheticCamera(width=WIDTH, height=HEIGHT, noise=8.0, duration_s=seconds, **kwargs)


def session(seconds: float = 2.0) -> tuple[list[Frame], list[Any]]:
    cam, imu = camera(seconds), SyntheticImu(rate_hz=100, duration_s=seconds)
    return synthetic_timeline([cam, imu], epoch=10**9), [cam.spec, imu.spec]


def record(path: Path, frames: list[Frame], specs: list[Any], codec: str) -> VideoRecorder:
    with VideoRecorder(path, video={"cam": codec}, sensors=specs, chunk_bytes=256 << 10) as rec:
        for frame in frames:
            rec.write(frame)
    return rec


def decoded(path: Path, **select: Any) -> tuple[list[Frame], VideoReader]:
    with open_recording(path) as log:
        reader = VideoReader(log)
        return list(reader.frames(**select)), reader


def stamps(frames: list[Frame]) -> list[tuple[Any, ...]]:
    return [(f.sensor, f.seq, f.t, f.t_sensor, f.t_arrival, f.meta) for f in frames]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float(10 * np.log10(255.0**2 / mse))


class TestRoundTrip:
    def test_ffv1_round_trips_every_pixel_and_every_stamp(self, tmp_path: Path) -> None:
        frames, specs = session()
        rec = record(tmp_path / "s.hfr", frames, specs, "ffv1")
        out, reader = decoded(tmp_path / "s.hfr")

        assert stamps(out) == stamps(frames)  # same order, seq, t, t_sensor, t_arrival, meta
        for got, want in zip(out, frames, strict=True):
            if want.sensor == "cam":
                assert got.data.dtype == np.uint8
                assert np.array_equal(got.data, want.data)
        assert not reader.errors
        stats = rec.video_statistics()["cam"]
        assert stats.packets == stats.frames == 60
        assert stats.unencoded == 0
        assert stats.ratio > 1.3  # lossless on noisy pixels: a modest gain

    def test_h264_is_within_a_psnr_bound_and_much_smaller_than_raw(self, tmp_path: Path) -> None:
        frames, specs = session()
        record(tmp_path / "s.hfr", frames, specs, "h264")
        out, reader = decoded(tmp_path / "s.hfr")

        assert stamps(out) == stamps(frames)
        cams = [(g, w) for g, w in zip(out, frames, strict=True) if w.sensor == "cam"]
        assert min(psnr(g.data, w.data) for g, w in cams) > 27.0
        with open_recording(tmp_path / "s.hfr") as log:
            track = describe_tracks(log)["cam"]
            size = log.summary().file_size
        raw = len(cams) * WIDTH * HEIGHT * 3
        assert (track.codec, track.width, track.height) == ("h264", WIDTH, HEIGHT)
        assert track.raw_bytes == raw
        assert track.ratio > 20
        assert raw / size > 15  # the whole file, IMU and index included
        assert not reader.errors

    def test_zstd_alone_barely_compresses_the_same_camera(self, tmp_path: Path) -> None:
        frames, specs = session(1.0)
        with Recorder(tmp_path / "raw.hfr", sensors=specs) as rec:
            for frame in frames:
                rec.write(frame)
        with open_recording(tmp_path / "raw.hfr") as log:
            assert log.summary().compression_ratio < 2.0

    def test_gray_frames_round_trip_as_gray(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(0)
        frames = [
            Frame("cam", i, i * 33 * MS, rng.integers(0, 255, (48, 64), np.uint8))
            for i in range(10)
        ]
        with VideoRecorder(tmp_path / "g.hfr", video={"cam": "ffv1"}) as rec:
            for frame in frames:
                rec.write(frame)
        out, _ = decoded(tmp_path / "g.hfr")
        assert all(np.array_equal(a.data, b.data) for a, b in zip(out, frames, strict=True))

    def test_frames_the_encoder_refuses_are_recorded_raw_and_counted(self, tmp_path: Path) -> None:
        odd = [Frame("cam", i, i * MS, np.full((31, 33, 3), i, np.uint8)) for i in range(3)]
        with VideoRecorder(tmp_path / "odd.hfr", video={"cam": "h264"}) as rec:
            for frame in odd:
                rec.write(frame)
        stats = rec.video_statistics()["cam"]
        assert stats.unencoded == 3
        assert stats.last_error is not None
        assert "even width and height" in stats.last_error
        out, _ = decoded(tmp_path / "odd.hfr")
        assert [f.seq for f in out] == [0, 1, 2]
        assert all(np.array_equal(a.data, b.data) for a, b in zip(out, odd, strict=True))


class TestSeek:
    def test_seek_to_the_middle_starts_at_a_key_frame_and_yields_exactly_the_frames_from_start(
        self, tmp_path: Path
    ) -> None:
        frames, specs = session()
        record(tmp_path / "s.hfr", frames, specs, "h264:gop=15,sc_threshold=0")
        cams = [f for f in frames if f.sensor == "cam"]
        start, end = cams[37].t, cams[52].t
        with open_recording(tmp_path / "s.hfr") as log:
            reader = VideoReader(log)
            assert reader.keyframe_before("cam", start) == cams[30].t
            out = list(reader.frames(start=start))
            window = list(reader.frames(start=start, end=end))

        assert stamps(out) == stamps([f for f in frames if f.t >= start])
        assert stamps(window) == stamps([f for f in frames if start <= f.t < end])
        assert out[0].sensor == "cam" or out[0].t >= start
        got = {f.seq: f for f in out if f.sensor == "cam"}
        assert min(got) == 37
        assert psnr(got[37].data, cams[37].data) > 27.0
        assert not reader.errors

    def test_replay_source_seeks_the_same_way(self, tmp_path: Path) -> None:
        frames, specs = session(1.0)
        record(tmp_path / "s.hfr", frames, specs, "h264:gop=10")
        start = [f for f in frames if f.sensor == "cam"][14].t

        async def play() -> list[Frame]:
            async with VideoReplay(tmp_path / "s.hfr", speed=None, start=start) as replay:
                assert [s.name for s in replay.specs] == ["cam", "imu"]
                return [f async for f in replay.frames()]

        out = anyio.run(play)
        assert stamps(out) == stamps([f for f in frames if f.t >= start])


def rewrite(src: Path, dst: Path, damage: Any) -> None:
    """Copy a recording record by record through the public API, letting ``damage`` edit."""
    with open_recording(src) as log, Recorder(dst, chunk_bytes=64 << 10) as rec:
        for frame in log.frames():
            rec.write(damage(frame))


class TestDamage:
    def test_a_garbage_packet_costs_its_frame_only_and_is_counted(self, tmp_path: Path) -> None:
        frames, specs = session(1.0)
        record(tmp_path / "s.hfr", frames, specs, "ffv1")

        def garble(frame: Frame) -> Frame:
            if frame.sensor == "cam" and frame.seq == 12:
                noise = np.random.default_rng(1).integers(0, 256, len(frame.data), np.uint8)
                frame.data = frame.data[:16] + noise.tobytes()[16:]
            return frame

        rewrite(tmp_path / "s.hfr", tmp_path / "bad.hfr", garble)
        out, reader = decoded(tmp_path / "bad.hfr")

        assert stamps(out) == stamps([f for f in frames if f.key != ("cam", 12)])
        assert sum(reader.errors.values()) == 1
        assert "seq 12" in (reader.last_error or "")
        want = {f.seq: f.data for f in frames if f.sensor == "cam"}
        assert all(np.array_equal(f.data, want[f.seq]) for f in out if f.sensor == "cam")

    def test_bytes_damaged_in_the_file_cost_a_chunk_then_decoding_resumes_at_a_key_frame(
        self, tmp_path: Path
    ) -> None:
        frames, specs = session()
        record(tmp_path / "s.hfr", frames, specs, "h264:gop=10,sc_threshold=0")
        rewrite(tmp_path / "s.hfr", tmp_path / "c.hfr", lambda f: f)  # 64 KiB chunks
        data = bytearray((tmp_path / "c.hfr").read_bytes())
        with open_recording(tmp_path / "c.hfr") as log:
            victim = [c for c in log.chunks if "cam" in c.sensors][2]
        at = victim.offset + victim.stored_size // 2 + 100
        data[at : at + 16] = bytes(16)
        (tmp_path / "c.hfr").write_bytes(data)

        out, reader = decoded(tmp_path / "c.hfr")
        assert reader.errors["damaged"] == 1
        lost = reader.errors["missing_packets"] + reader.errors["no_reference"]
        assert lost > 0
        cams = [f.seq for f in out if f.sensor == "cam"]
        assert cams == sorted(cams)
        assert cams[-1] == 59
        want = {f.seq: f.data for f in frames if f.sensor == "cam"}
        assert all(psnr(f.data, want[f.seq]) > 27.0 for f in out if f.sensor == "cam")


class TestPipeline:
    async def test_a_recorded_pipeline_replays_to_the_same_groups(self, tmp_path: Path) -> None:
        def policy() -> Nearest:
            return Nearest("cam", ["cam", "imu"], 20 * MS, windows={"imu": (15 * MS, 15 * MS)})

        clock = VirtualClock()
        sources = [
            camera(1.0, timing=SensorTiming(delay_ns=5 * MS, jitter_mean_ns=2 * MS)),
            SyntheticImu(rate_hz=100, duration_s=1.0),
        ]
        recorder = VideoRecorder(
            tmp_path / "p.hfr", video={"cam": "ffv1"}, sensors=[s.spec for s in sources]
        )
        live = Pipeline(sources, policy(), max_latency=300 * MS, recorder=recorder, clock=clock)
        with anyio.fail_after(30):
            async with clock.autojump():
                original = [(g.keys, g.frames["cam"].data.copy()) async for g in live]  # type: ignore[union-attr]
        assert len(original) == 30
        assert recorder.closed

        for _ in range(2):
            replay = Pipeline([VideoReplay(tmp_path / "p.hfr", speed=None)], policy())
            again = [(g.keys, g.frames["cam"].data) async for g in replay]  # type: ignore[union-attr]
            assert [k for k, _ in again] == [k for k, _ in original]
            assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(again, original, strict=True))


class TestCopy:
    def test_copy_keeps_the_sources_own_packets_and_replays_its_frames(
        self, tmp_path: Path
    ) -> None:
        clip = tmp_path / "clip.mp4"
        write_video(clip, [i * 33 for i in range(45)], size=(96, 64), gop=12, options={"bf": "2"})

        async def run() -> list[Frame]:
            source = VideoSource(clip, name="cam", keep_packets=True)
            async with (
                VideoRecorder(
                    tmp_path / "copy.hfr", video={"cam": "copy"}, sensors=[source.spec]
                ) as rec,
                source,
            ):
                live = [f async for f in source.frames()]
                for frame in live:
                    await rec.send(frame)
            return live

        live = anyio.run(run)
        with av.open(str(clip)) as container:
            stored = sum(p.size for p in container.demux(video=0) if p.size)
        with open_recording(tmp_path / "copy.hfr") as log:
            track = describe_tracks(log)["cam"]
            first = next(iter(log.frames(sensors=["cam"])))
        assert track.encoder == "copy"
        assert track.encoded_bytes == stored
        assert first.meta[META_KEY]["key"]
        assert keyframe_sensor("cam") == "cam#keyframes"

        out, reader = decoded(tmp_path / "copy.hfr")
        assert [(f.seq, f.t, f.t_sensor) for f in out] == [(f.seq, f.t, f.t_sensor) for f in live]
        assert all(np.array_equal(a.data, b.data) for a, b in zip(out, live, strict=True))
        assert out[0].meta == {
            k: v for k, v in live[0].meta.items() if k not in ("packets", "codec")
        }
        assert not reader.errors


class TestConfig:
    def test_codec_choices_are_parsed_and_bad_ones_say_what_was_expected(self) -> None:
        codec = parse_codec("h264:crf=30,gop=60", sensor="cam")
        assert (codec.name, codec.options, codec.gop) == ("h264", {"crf": "30"}, 60)
        assert str(codec) == "h264:crf=30,gop=60"
        with pytest.raises(ConfigError, match=r"sensor 'cam': expected one of h264, hevc, ffv1"):
            parse_codec("vp9", sensor="cam")
        with pytest.raises(ConfigError, match=r"gop must be an integer >= 1, found 'x'"):
            parse_codec("h264:gop=x", sensor="cam")
        with pytest.raises(ConfigError, match=r"'copy' keeps the source's packets"):
            parse_codec("copy:crf=1", sensor="cam")

    async def test_a_config_recorder_video_table_records_encoded_video(
        self, tmp_path: Path
    ) -> None:
        raw = {
            "sync": {"policy": "nearest", "reference": "cam"},
            "sources": [{"type": "synthetic_camera", "name": "cam", "duration_s": 0.5}],
            "recorder": {"video": {"cam": "hevc"}},
        }
        pipeline = build_pipeline(validate_config(raw), recorder_path=tmp_path / "c.hfr")
        assert isinstance(pipeline.recorder, VideoRecorder)
        assert str(pipeline.recorder.codecs["cam"]) == "hevc"
        clock = VirtualClock()
        with use_clock(clock), anyio.fail_after(30):
            async with clock.autojump():
                stats = await pipeline.run()
        assert stats.recorder is not None
        assert stats.recorder.frames_by_sensor == {"cam": 15}
        with open_recording(tmp_path / "c.hfr") as log:
            track = describe_tracks(log)["cam"]
        assert (track.codec, track.packets, track.width, track.height) == ("hevc", 15, 64, 48)
        bad = {**raw, "recorder": {"video": {"nope": "h264"}}}
        with pytest.raises(ConfigError, match=r"sensors \['nope'\] are not the name of any source"):
            validate_config(bad)
