"""VideoSource on real files encoded with PyAV: timestamps, pixel formats, errors."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import anyio
import av
import numpy as np
import pytest

from adapters import VideoSource
from adapters.errors import SourceOpenError
from adapters.video import probe_video
from adapters.video._synth import pattern, write_video
from fusion._frames import Frame


async def collect(source: VideoSource) -> list[Frame]:
    with anyio.fail_after(30):
        async with source:
            return [frame async for frame in source.frames()]


def ns(pts: int, time_base: Fraction) -> int:
    exact = pts * time_base * 1_000_000_000
    return math.floor(exact + Fraction(1, 2))


class TestTimestamps:
    async def test_constant_rate_file_stamps_every_frame_with_its_pts(self, tmp_path: Path) -> None:
        tb = Fraction(1, 90000)
        pts = [i * 3000 for i in range(40)]
        path = tmp_path / "cfr.mp4"
        write_video(path, pts, time_base=tb)
        frames = await collect(VideoSource(path))
        assert [f.meta["pts"] for f in frames] == pts
        assert [f.t_sensor for f in frames] == [ns(p, tb) for p in pts]
        assert [f.seq for f in frames] == list(range(40))
        assert all(f.t == f.t_sensor for f in frames)
        assert all(f.meta["pts_source"] == "pts" for f in frames)

    async def test_variable_rate_file_keeps_irregular_gaps_exactly(self, tmp_path: Path) -> None:
        tb = Fraction(1, 1000)
        gaps = [33, 34, 1, 250, 17, 33, 500, 2, 66, 33] * 3
        pts = [sum(gaps[:i]) for i in range(len(gaps))]
        path = tmp_path / "vfr.mkv"
        write_video(path, pts, time_base=tb)
        frames = await collect(VideoSource(path))
        assert [f.t_sensor for f in frames] == [ns(p, tb) for p in pts]

    async def test_nonzero_start_pts_is_kept_or_rebased_on_request(self, tmp_path: Path) -> None:
        tb = Fraction(1, 90000)
        pts = [900_000 + i * 3003 for i in range(20)]  # starts at 10 s, 29.97 fps
        path = tmp_path / "late.ts"
        write_video(path, pts, time_base=tb)
        frames = await collect(VideoSource(path))
        written_ns = [ns(p, tb) for p in pts]
        assert [f.t_sensor for f in frames] == written_ns
        assert frames[0].t_sensor == 10_000_000_000
        rebased = await collect(VideoSource(path, origin_pts=None))
        assert rebased[0].t_sensor == 0
        assert [f.t_sensor for f in rebased] == [t - written_ns[0] for t in written_ns]

    async def test_mp4_time_base_rounding_has_no_drift(self, tmp_path: Path) -> None:
        path = tmp_path / "ntsc.mp4"
        tb = Fraction(1001, 30000)
        write_video(path, list(range(60)), time_base=tb)
        source = VideoSource(path)
        frames = await collect(source)
        assert source.info is not None
        stream_tb = source.info.time_base
        for frame in frames:
            assert frame.t_sensor == ns(frame.meta["pts"], stream_tb)
        # frame 59 is exactly 59 * 1001/30000 s, to the nearest ns
        assert frames[-1].t_sensor - frames[0].t_sensor == ns(59, tb)


class TestCorruption:
    async def test_corrupt_packets_are_reported_with_pts_and_later_frames_arrive(
        self, tmp_path: Path
    ) -> None:
        pts = [i * 40 for i in range(60)]
        path = tmp_path / "broken.mkv"
        damaged = write_video(path, pts, corrupt=range(24, 28), gop=12)
        assert damaged
        source = VideoSource(path)
        frames = await collect(source)
        lost = list(source.recent_errors)
        lost_pts = [e.pts for e in lost if e.pts is not None]
        assert len(lost_pts) == len(lost)
        delivered = [f.meta["pts"] for f in frames]
        assert lost, "the damaged packets must be reported"
        # Losses sit in the damaged packets or in frames that reference them,
        # never past the next keyframe (index 36 with gop=12).
        assert all(damaged[0] <= p < pts[36] for p in lost_pts)
        assert set(lost_pts) & set(damaged)
        assert all(e.reason in ("undecodable", "corrupt_frame") for e in lost)
        assert len(frames) + len(lost) == len(pts)
        assert delivered[-1] == pts[-1]  # the stream went on after the damage
        assert sorted(delivered + lost_pts) == pts
        # the lost frames keep their seq, so the gap is visible in the delivered seqs
        seqs = [f.seq for f in frames] + [e.seq for e in lost if e.seq is not None]
        assert sorted(seqs) == list(range(len(pts)))
        first = lost[0]
        assert first.sensor == "camera"
        assert f"PTS {first.pts}" in str(first)
        assert sum(source.errors.values()) == len(lost)


class TestPixels:
    @pytest.mark.parametrize(
        ("pixel_format", "shape"),
        [("rgb24", (48, 64, 3)), ("bgr24", (48, 64, 3)), ("gray", (48, 64))],
    )
    async def test_pixel_formats_have_the_documented_shapes(
        self, tmp_path: Path, pixel_format: Any, shape: tuple[int, ...]
    ) -> None:
        path = tmp_path / "px.mkv"
        write_video(path, list(range(0, 200, 40)), options={"crf": "0"})
        frames = await collect(VideoSource(path, pixel_format=pixel_format))
        assert frames[0].data.shape == shape
        assert frames[0].data.dtype == np.uint8

    async def test_rgb_and_bgr_are_channel_swapped_and_close_to_the_source(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "lossless.mkv"
        write_video(path, [0, 40, 80], options={"crf": "0"})
        rgb = await collect(VideoSource(path, pixel_format="rgb24"))
        bgr = await collect(VideoSource(path, pixel_format="bgr24"))
        np.testing.assert_array_equal(rgb[1].data, bgr[1].data[..., ::-1])
        # yuv420p subsampling blurs colour; the mean error stays small
        err = np.abs(rgb[1].data.astype(int) - pattern(1, 64, 48).astype(int)).mean()
        assert err < 12

    async def test_yuv420p_returns_planes_and_resize_happens_in_the_decoder(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "yuv.mkv"
        write_video(path, [0, 40], size=(64, 48))
        planes = (await collect(VideoSource(path, pixel_format="yuv420p")))[0].data
        assert {k: v.shape for k, v in planes.items()} == {
            "y": (48, 64),
            "u": (24, 32),
            "v": (24, 32),
        }
        small = await collect(VideoSource(path, size=(32, 16)))
        assert small[0].data.shape == (16, 32, 3)

    async def test_reused_buffers_are_recycled_only_once_released(self, tmp_path: Path) -> None:
        path = tmp_path / "pool.mkv"
        write_video(path, list(range(0, 400, 40)))
        source = VideoSource(path, reuse_buffers=True, prefetch=1)
        ids = set()
        kept = []
        async with source:
            async for frame in source.frames():
                ids.add(id(frame.data))
                if frame.seq == 0:
                    kept.append(frame.data)  # held by us: must never be overwritten
                    snapshot = frame.data.copy()
        assert len(ids) < 10, "buffers are reused"
        np.testing.assert_array_equal(kept[0], snapshot)


class TestStreamsAndErrors:
    async def test_second_video_stream_is_selectable(self, tmp_path: Path) -> None:
        path = tmp_path / "two.mkv"
        with av.open(str(path), "w") as out:
            streams = []
            for w, h in ((64, 48), (32, 16)):
                s = out.add_stream("libx264", rate=25)
                s.width, s.height, s.pix_fmt = w, h, "yuv420p"
                streams.append(s)
            for i in range(5):
                for s in streams:
                    img = pattern(i, s.width, s.height)
                    f = av.VideoFrame.from_ndarray(img, format="rgb24")
                    f.pts = i
                    for p in s.encode(f):
                        out.mux(p)
            for s in streams:
                for p in s.encode(None):
                    out.mux(p)
        second = VideoSource(path, stream=1)
        frames = await collect(second)
        assert frames[0].data.shape == (16, 32, 3)
        assert second.info is not None
        assert second.info.video_streams == 2
        with pytest.raises(SourceOpenError, match=r"has 2 video stream\(s\); video stream 5"):
            await collect(VideoSource(path, stream=5))

    def test_missing_file_fails_at_construction(self, tmp_path: Path) -> None:
        with pytest.raises(SourceOpenError, match=r"video file '.*nope.mp4' does not exist"):
            VideoSource(tmp_path / "nope.mp4")

    async def test_a_file_that_is_not_video_fails_at_open(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.mp4"
        path.write_bytes(b"this is not a video, just text\n" * 50)
        with pytest.raises(SourceOpenError, match="is not a video FFmpeg can read"):
            await collect(VideoSource(path))

    async def test_audio_only_file_says_it_has_no_video(self, tmp_path: Path) -> None:
        path = tmp_path / "tone.mka"
        with av.open(str(path), "w") as out:
            s = out.add_stream("pcm_s16le", rate=8000)
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 800), np.int16), format="s16", layout="mono"
            )
            frame.sample_rate = 8000
            frame.pts = 0
            for p in s.encode(frame):
                out.mux(p)
            for p in s.encode(None):
                out.mux(p)
        with pytest.raises(SourceOpenError, match=r"has no video stream \(streams: audio\)"):
            await collect(VideoSource(path))

    def test_probe_describes_codec_size_and_rate(self, tmp_path: Path) -> None:
        path = tmp_path / "p.mkv"
        write_video(path, [i * 40 for i in range(10)], size=(64, 48), rate=25)
        info = probe_video(str(path))
        assert (info.codec, info.width, info.height, info.live) == ("h264", 64, 48, False)
        assert info.as_dict()["time_base"] == "1/1000"

    def test_bad_arguments_are_refused_at_construction(self, tmp_path: Path) -> None:
        path = tmp_path / "a.mkv"
        write_video(path, [0])
        with pytest.raises(ValueError, match="pixel_format must be one of"):
            VideoSource(path, pixel_format="rgba")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="unknown hwaccel 'warp'"):
            VideoSource(path, hwaccel="warp")
        with pytest.raises(ValueError, match="thread_type must be one of"):
            VideoSource(path, thread_type="fibers")

    async def test_breaking_out_early_stops_the_decoder_thread(self, tmp_path: Path) -> None:
        path = tmp_path / "long.mkv"
        write_video(path, list(range(0, 4000, 20)))
        source = VideoSource(path, prefetch=2)
        with anyio.fail_after(10):
            async with source:
                async for frame in source.frames():
                    if frame.seq == 3:
                        break
        assert source._decoder is not None
        assert source._decoder.join(5)
