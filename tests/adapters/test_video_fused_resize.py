"""The model's resize inside the decoder's swscale pass: same pixels, wired by the Pipeline.

Reference: the same frames converted at full size, then resized by
:mod:`fusion.workers._resize` with the same filter (itself within one grey level
of OpenCV's ``INTER_AREA`` and Pillow's antialiased bilinear, see
tests/fusion/test_resize.py). Tolerance, per RGB channel in grey levels:

* 4:4:4 input: mean under 0.3, 99th percentile at most 2;
* 4:2:0 input: mean under 2.5, 99th percentile at most 10; luma 99th percentile
  under 6. The reference upsamples chroma to full size before resizing; so does the
  fused pass (swscale into planar RGB), only by its own filter: colour edges differ
  by a few levels. (Into packed RGB, swscale scaled the half-resolution chroma from
  its own grid instead: 99th percentile 20-22 levels on the HEVC clip at 224x224.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import VideoSource
from adapters.video._synth import write_video
from fusion import ExactTime, Frame, Pipeline
from fusion.workers import BatchWorker, ImagePreprocess
from fusion.workers._models import tiny_cnn
from fusion.workers._preprocess import fuse_resize, group_input
from fusion.workers._resize import Resampler
from recordings import Recorder

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"
CLIPS = {
    "yuv444p": REAL / "androidx_iibbibb_editlist_videoonly.mp4",  # 704x576
    "yuv420p": REAL / "androidx_h265_bframes.mp4",  # 854x480, HEVC
}
LUMA = np.array([0.299, 0.587, 0.114])


async def first_frames(source: VideoSource, n: int) -> list[Frame]:
    out: list[Frame] = []
    with anyio.fail_after(60):
        async with source:
            async for frame in source.frames():
                out.append(frame)
                if len(out) == n:
                    break
    return out


@pytest.mark.parametrize("chroma", ["yuv444p", "yuv420p"])
@pytest.mark.parametrize("interpolation", ["area", "bilinear"])
@pytest.mark.parametrize("size", [(224, 224), (97, 61)])
async def test_fused_resize_gives_the_pixels_of_convert_then_resize(
    chroma: str, interpolation: str, size: tuple[int, int]
) -> None:
    path = CLIPS[chroma]
    full = await first_frames(VideoSource(path, threads=1), 4)
    fused_source = VideoSource(path, threads=1)
    assert fused_source.resize_in_decoder(size, interpolation) is None
    fused = await first_frames(fused_source, 4)
    w, h = size
    for a, b in zip(full, fused, strict=True):
        assert a.t_sensor == b.t_sensor
        ref = Resampler(a.data.shape[:2], (h, w), interpolation)(a.data)  # type: ignore[arg-type]
        got = b.data
        assert got.shape == (h, w, 3)
        assert got.dtype == np.uint8
        diff = np.abs(got.astype(np.int16) - ref.astype(np.int16))  # type: ignore[union-attr]
        luma = np.abs((got.astype(float) - ref) @ LUMA)  # type: ignore[union-attr]
        if chroma == "yuv444p":
            assert diff.mean() < 0.3, diff.mean()
            assert np.percentile(diff, 99) <= 2, diff.max()
        else:
            assert diff.mean() < 2.5, diff.mean()
            assert np.percentile(diff, 99) <= 10, np.percentile(diff, 99)
            assert np.percentile(luma, 99) < 6, luma.max()


def test_video_source_says_why_it_cannot_resize_while_decoding() -> None:
    path = CLIPS["yuv420p"]
    assert "yuv420p" in str(
        VideoSource(path, pixel_format="yuv420p").resize_in_decoder((32, 32), "area")
    )
    fixed = VideoSource(path, size=(64, 48))
    assert fixed.resize_in_decoder((32, 32), "area") == (
        "the source already resizes to (64, 48) (bilinear)"
    )
    assert "no swscale filter" in str(VideoSource(path).resize_in_decoder((32, 32), "lanczos"))


def camera_worker(size: int) -> BatchWorker:
    pre = group_input("cam", "image", size=(size, size), max_batch=4)
    return BatchWorker(tiny_cnn(size), preprocess=pre, providers="cpu", max_batch=4, threads=1)


async def run(pipeline: Pipeline) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []
    with anyio.fail_after(60):
        async for group in pipeline:
            shapes.append(group.frames["cam"].data.shape)  # type: ignore[union-attr]
            assert group.results["worker0"] is not None  # type: ignore[attr-defined]
    return shapes


async def test_pipeline_moves_the_models_resize_into_the_decoder(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    write_video(clip, [i * 33 for i in range(6)], size=(160, 120))
    pipeline = Pipeline(
        [VideoSource(clip, name="cam", threads=1)], ExactTime(["cam"]), workers=[camera_worker(32)]
    )
    assert pipeline.resize_plan == {"cam": "32x32 area in the source's decoder"}
    assert await run(pipeline) == [(32, 32, 3)] * 6


async def test_pipeline_keeps_full_frames_when_the_recorder_records_them(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    write_video(clip, [i * 33 for i in range(6)], size=(160, 120))
    with Recorder(tmp_path / "s.hfr") as recorder:
        pipeline = Pipeline(
            [VideoSource(clip, name="cam", threads=1)],
            ExactTime(["cam"]),
            workers=[camera_worker(32)],
            recorder=recorder,
        )
        assert pipeline.resize_plan == {
            "cam": "in the preprocess (the recorder records the full frames)"
        }
        assert await run(pipeline) == [(120, 160, 3)] * 6


def test_fuse_resize_leaves_preprocesses_without_an_image_input_alone() -> None:
    source = VideoSource(CLIPS["yuv420p"], name="cam")
    assert fuse_resize([source], lambda items: np.zeros((len(items), 1))) == {}
    assert source.options.size is None


async def stream_shapes(worker: BatchWorker, items: object) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []
    with anyio.fail_after(60):
        async for result in worker.stream(items):  # type: ignore[arg-type]
            assert result.ok, result.error
            shapes.append(result.item.data.shape)
    return shapes


async def test_worker_stream_of_a_source_moves_the_resize_into_its_decoder(
    tmp_path: Path,
) -> None:
    clip = tmp_path / "clip.mp4"
    write_video(clip, [i * 33 for i in range(6)], size=(160, 120))
    worker = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    async with VideoSource(clip, name="cam", threads=1) as source:
        assert await stream_shapes(worker, source) == [(32, 32, 3)] * 6
    assert worker.resize_outcome == {"cam": "32x32 area in the source's decoder"}
    # Its frames, not yet started, are the source's too: the same wiring.
    plain = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    async with VideoSource(clip, name="cam", threads=1) as source:
        assert await stream_shapes(plain, source.frames()) == [(32, 32, 3)] * 6
    assert plain.resize_outcome == {"cam": "32x32 area in the source's decoder"}
    # resize_in_decoder=False keeps the full frames: the preprocess resizes them.
    full = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    async with VideoSource(clip, name="cam", threads=1) as source:
        shapes: list[tuple[int, ...]] = []
        async for result in full.stream(source.frames(), resize_in_decoder=False):
            assert result.ok, result.error
            shapes.append(result.item.data.shape)
        assert shapes == [(120, 160, 3)] * 6
    assert full.resize_outcome == {}


async def test_frames_already_started_keep_their_size(tmp_path: Path) -> None:
    """A frames() generator that has started decoding cannot change its size: the source
    refuses, the worker says why, and the preprocess resizes the full frames."""
    clip = tmp_path / "clip.mp4"
    write_video(clip, [i * 33 for i in range(6)], size=(160, 120))
    worker = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    async with VideoSource(clip, name="cam", threads=1) as source:
        frames = source.frames()
        first = await frames.__anext__()

        async def rest() -> Any:
            yield first
            async for frame in frames:
                yield frame

        assert await stream_shapes(worker, rest()) == [(120, 160, 3)] * 6
        await frames.aclose()  # type: ignore[attr-defined]
    assert worker.resize_outcome == {}
    # The started generator itself: the source is decoding, so it says no.
    again = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4, threads=1
    )
    async with VideoSource(clip, name="cam", threads=1) as source:
        frames = source.frames()
        await frames.__anext__()
        assert await stream_shapes(again, frames) == [(120, 160, 3)] * 5
    assert again.resize_outcome == {"cam": "in the preprocess (the source is already decoding)"}


@pytest.mark.parametrize(
    "clip",
    [
        "androidx_h265_bframes.mp4",  # 8-bit 4:2:0 HEVC, 854x480
        "androidx_hlg10-color-test.mp4",  # 10-bit 4:2:0 HEVC, HLG, 1920x1080
        "androidx_roadtrip-vp92-10bit.webm",  # 10-bit 4:2:0 VP9, 426x240
    ],
)
async def test_the_decoders_shrink_is_within_a_level_or_two_of_a_float_reference(
    clip: str,
) -> None:
    """The fused 224x224 area resize against an independent reference: PyAV's float
    conversion (``gbrpf32le``, chroma interpolated) at full size, then OpenCV's
    ``INTER_AREA`` in float. Into packed RGB, swscale was off by 4-16 levels at the 99th
    percentile (up to 55) and 0.8-2.5 on average, most of it a rounding bias."""
    import av
    import cv2

    path = REAL / clip
    source = VideoSource(path, threads=1)
    assert source.resize_in_decoder((224, 224), "area") is None
    fused = await first_frames(source, 3)
    with av.open(str(path)) as container:
        decoded = [f for _, f in zip(range(3), container.decode(video=0), strict=False)]
    for got, frame in zip(fused, decoded, strict=True):
        planar = frame.reformat(format="gbrpf32le", interpolation="BICUBIC")
        g, b, r = (
            np.frombuffer(memoryview(p), np.float32).reshape(p.height, p.line_size // 4)[
                :, : p.width
            ]
            for p in planar.planes[:3]
        )
        ref = cv2.resize(np.stack([r, g, b], -1) * 255, (224, 224), interpolation=cv2.INTER_AREA)
        diff = np.abs(got.data.astype(np.float32) - ref)  # type: ignore[union-attr]
        assert diff.mean() < 0.8, diff.mean()
        assert np.percentile(diff, 99) <= 2, np.percentile(diff, 99)
