"""A CPU worker tells the video source what a frame costs it; the source decodes a
file on one FFmpeg thread when one decoding core keeps up (adapters/video/_pacing.py).

Real input: the HEVC clip of the Android test suite (../shared/data). Reference:
PyAV decoding the same file on FFmpeg's automatic threads, converted by the same
swscale pass, must give the same pixels as the paced source (FFmpeg's frame threads
do not change what is decoded); the chosen thread count is the one the decoder
opens the file with (the source's options).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import av
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from adapters import VideoSource
from adapters.video._pacing import Pacing, decode_cpu_per_frame, threads_for

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"
CLIP = REAL / "androidx_h265_bframes.mp4"  # 854x480 HEVC with B-frames


def reference_frames(n: int, size: tuple[int, int]) -> list[np.ndarray]:
    """PyAV on FFmpeg's automatic threads, swscale AREA to ``size`` (planar RGB, as
    VideoSource resizes)."""
    out = []
    with av.open(str(CLIP)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            w, h = size
            out.append(frame.reformat(w, h, "gbrp", interpolation="AREA").to_ndarray())
            if len(out) == n:
                break
    return out


async def decoded(source: VideoSource, n: int) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    with anyio.fail_after(60):
        async with source:
            async for frame in source.frames():
                out.append(frame.data)
                if len(out) == n:
                    break
    return out


async def test_a_consumer_slower_than_the_decoder_gets_one_ffmpeg_thread() -> None:
    source = VideoSource(CLIP, name="cam")
    assert source.resize_in_decoder((96, 64), "area") is None
    assert source.pace_decoder(1.0, 2) is None  # 1 s per frame: one core decodes plenty
    frames = await decoded(source, 10)
    assert source.options.threads == 1
    why = source.statistics()["video"]["decoder_threads"]
    assert why.startswith("1 thread: one core decoding keeps up (decode "), why
    assert "consumer 1000.00 ms per frame, 2 cores" in why
    reference = reference_frames(10, (96, 64))
    assert len(frames) == 10
    for got, want in zip(frames, reference, strict=True):
        np.testing.assert_array_equal(got, want)


async def test_a_consumer_faster_than_the_decoder_leaves_ffmpeg_its_threads() -> None:
    source = VideoSource(CLIP, name="cam")
    assert source.pace_decoder(0.0, 2) is None  # free consumer: the decoder is the bottleneck
    await decoded(source, 3)
    assert source.options.threads == 0
    why = source.video_stats.decoder_threads
    assert why is not None
    assert why.startswith("automatic: the decoder is the bottleneck"), why


def test_the_source_says_why_it_does_not_choose(tmp_path: Path) -> None:
    assert VideoSource(CLIP, threads=3).pace_decoder(1.0, 2) == "threads=3 was given"
    assert (
        VideoSource(CLIP, live=True).pace_decoder(1.0, 2) == "a live input keeps its slice threads"
    )
    assert VideoSource(CLIP, hwaccel="auto").pace_decoder(1.0, 2) == (
        "hardware decode (auto) was asked"
    )
    assert VideoSource(CLIP).pace_decoder(1.0, 0) is not None
    untouched = VideoSource(CLIP)
    assert untouched.statistics()["video"]["decoder_threads"] is None


def test_the_decode_cost_of_a_broken_file_is_not_measured(tmp_path: Path) -> None:
    """The probe gives up quietly on what will not decode; frames() says why later."""
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 4)
    source = VideoSource(junk)
    assert decode_cpu_per_frame(source.options) is None
    real = decode_cpu_per_frame(VideoSource(CLIP).options)
    assert real is not None
    assert real > 0
    # Measured once a process: the same file and conversion are not probed again.
    assert decode_cpu_per_frame(VideoSource(CLIP, name="other").options) == real


@given(
    d=st.floats(0, 1, allow_nan=False),
    m=st.floats(0, 1, allow_nan=False),
    cores=st.integers(1, 64),
)
def test_one_thread_exactly_when_one_decoding_core_keeps_up(d: float, m: float, cores: int) -> None:
    threads, why = threads_for(d, Pacing(m, cores))
    # One decoding core gives 1/d frames a second; the others run the consumer at
    # (cores - 1)/m: one thread when it is not the slower of the two.
    assert threads == (1 if m >= (cores - 1) * d else 0)
    assert why.startswith("1 thread" if threads == 1 else "automatic")
    assert threads_for(None, Pacing(m, cores)) == (
        0,
        "automatic: the decode cost could not be measured",
    )
