"""A decoder-bound file decoded as key-frame spans on one-thread decoders side by side
(adapters/video/_spans.py, _span_cut.py) delivers what one decoder delivers.

Real input: the Android test suite's clips that cut into spans (H.264 with an edit
list and open GOPs, HEVC, VP9 10-bit, a WebM whose every packet fails). Reference:
the same source decoding on one decoder (frames, seq numbers, timestamps, pixels,
losses) and ffprobe's list of the frames' PTS. The cut itself is a property over
generated GOP structures, open and closed.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import VideoSource
from adapters.video._span_cut import SpanCut
from adapters.video._spans import SpanPlan, plan_spans
from fusion.workers import BatchWorker, ImagePreprocess
from fusion.workers._models import tiny_cnn
from fusion.workers._sessions import free_cores

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "video"
CUT = [
    "androidx_mv_with_2_top_shots.mp4",  # HEVC 1440x1080, 2 spans
    "androidx_trim_optimization_failure.mp4",  # H.264, 5 spans
    "androidx_roadtrip-vp92-10bit.webm",  # VP9 profile 2, 3 spans
    "androidx_invalid-bitstream.webm",  # no packet decodes: every frame a counted loss
]


async def decode(path: Path, *, spans: bool) -> tuple[list[Any], VideoSource]:
    source = VideoSource(path, name="cam")
    assert source.resize_in_decoder((64, 48), "area") is None
    if spans:  # a consumer that costs nothing: the decoder is the bottleneck
        assert source.pace_decoder(0.0, 2) is None
    frames = []
    with anyio.fail_after(60):
        async with source:
            async for frame in source.frames():
                frames.append((frame.seq, frame.t_sensor, frame.meta["pts"], frame.data))
    return frames, source


def ffprobe_pts(path: Path) -> list[int]:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts",
         "-of", "csv=p=0", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return sorted(int(line.split(",")[0]) for line in out.split() if line.strip(",").isdigit())


@pytest.mark.parametrize("name", CUT)
async def test_spans_deliver_what_one_decoder_delivers(name: str) -> None:
    path = REAL / name
    one, serial = await decode(path, spans=False)
    cut, spanned = await decode(path, spans=True)
    why = spanned.video_stats.decoder_threads
    assert why is not None
    assert why.startswith("spans: "), why
    assert [f[:3] for f in cut] == [f[:3] for f in one]  # seq, t_sensor, pts
    for a, b in zip(cut, one, strict=True):
        np.testing.assert_array_equal(a[3], b[3])
    assert spanned.video_stats.skipped == serial.video_stats.skipped
    assert spanned.statistics()["ledger"] == serial.statistics()["ledger"]
    if not serial.video_stats.skipped:
        assert [f[2] for f in cut] == ffprobe_pts(path)
    else:
        assert not cut
        assert spanned.video_stats.skipped == {"undecodable": 51}


def test_a_file_is_cut_where_spans_pay() -> None:
    plan = plan_spans(VideoSource(REAL / "androidx_trim_optimization_failure.mp4").options)
    assert len(plan.spans) == 5
    assert sum(plan.frames) == len(ffprobe_pts(REAL / "androidx_trim_optimization_failure.mp4"))
    assert plan.pays(2)
    # The same file's 250 + 20 frames (two key frames a second apart, then none) do not.
    edit = plan_spans(VideoSource(REAL / "androidx_edit_list_positive_shift.mp4").options)
    assert edit.frames == [250, 20]
    assert not edit.pays(2)
    # A stream that cannot be seeked by its index is not cut.
    ts = plan_spans(VideoSource(REAL / "androidx_sample_h264.ts").options)
    assert ts.spans == [(None, None)]
    assert not ts.pays(2)
    # Nor is H.264 at I pictures that are not IDR (an open GOP with recovery points:
    # its key frames after the first hold an SEI and a non-IDR slice, NAL types 6, 1).
    open_gop = plan_spans(VideoSource(REAL / "androidx_iibbibb_editlist_videoonly.mp4").options)
    assert open_gop.spans == [(None, None)]
    assert open_gop.frames == [12]


def nal(kind: int, body: bytes = b"\x88\x84") -> bytes:
    return bytes([0x60 | kind]) + body


@given(
    kinds=st.lists(st.sampled_from([1, 5, 6, 7, 8, 9]), min_size=1, max_size=6),
    length_size=st.sampled_from([1, 2, 4, None]),
)
def test_an_h264_key_frame_starts_anew_only_with_an_idr_slice(
    kinds: list[int], length_size: int | None
) -> None:
    from adapters.video._bitstream import starts_anew

    units = [nal(k) for k in kinds]
    if length_size is None:
        packet = b"".join(b"\0\0\0\1" + u for u in units)
    else:
        packet = b"".join(len(u).to_bytes(length_size, "big") + u for u in units)
    assert starts_anew("h264", packet, length_size) == (5 in kinds)
    assert starts_anew("hevc", packet, length_size)  # HEVC's key frames all start anew
    # A NAL length running past the packet ends the reading: what follows is not read.
    if length_size is not None:
        cut = (100).to_bytes(length_size, "big") + nal(5)
        assert starts_anew("h264", packet + cut, length_size) == (5 in kinds)


@given(
    frames=st.lists(st.integers(1, 400), min_size=1, max_size=12),
    decoders=st.integers(1, 8),
    frame_bytes=st.integers(1, 1 << 24),
)
def test_spans_pay_when_balanced_and_queued(
    frames: list[int], decoders: int, frame_bytes: int
) -> None:
    plan = SpanPlan([(None, None)] * len(frames), frames, frame_bytes)
    total, longest = sum(frames), max(frames)
    speedup = total / max(longest, total / decoders)
    expected = (
        len(frames) >= 2
        and decoders >= 2
        and speedup >= 0.75 * decoders
        and 2 * plan.capacity * len(frames) >= total
    )
    assert plan.pays(decoders) == expected
    if plan.pays(decoders):  # never when one span is most of the file
        assert longest <= total / (0.75 * decoders)


async def test_a_consumer_that_stops_early_stops_every_span() -> None:
    source = VideoSource(REAL / "androidx_trim_optimization_failure.mp4", name="cam")
    source.resize_in_decoder((64, 48), "area")
    source.pace_decoder(0.0, 2)
    with anyio.fail_after(30):
        async with source:
            async for frame in source.frames():
                if frame.seq == 4:
                    break
        for _ in range(200):  # the decoders notice the closed queues within a packet
            if not [t for t in threading.enumerate() if t.name.startswith("hyperframes-video")]:
                break
            await anyio.sleep(0.01)
    assert not [t for t in threading.enumerate() if t.name.startswith("hyperframes-video")]
    assert (source.video_stats.decoder_threads or "").startswith("spans: ")


async def test_a_cpu_worker_gets_every_frame_of_a_decoder_bound_file_in_order() -> None:
    path = REAL / "androidx_trim_optimization_failure.mp4"
    worker = BatchWorker(
        tiny_cnn(32), preprocess=ImagePreprocess((32, 32)), providers="cpu", max_batch=4
    )
    source = VideoSource(path, name="cam")
    seqs = []
    with anyio.fail_after(60):
        async with source:
            async for result in worker.stream(source):
                assert result.ok, result.error
                seqs.append(result.item.seq)
    assert seqs == list(range(len(ffprobe_pts(path))))
    why = source.video_stats.decoder_threads or ""
    if free_cores() >= 2:  # the model costs a fraction of a decode: spans on the cores
        assert why.startswith("spans: 5 key-frame spans"), why


# -- the cut, over generated GOP structures ------------------------------------------


def decode_order(types: str) -> list[tuple[int, bool]]:
    """``(pts, key)`` in decode order of frames presented as ``types`` (I, P or B, one
    a tick): each reference goes before the B-frames presented before it, so B-frames
    just before an I are that I's leading pictures (an open GOP)."""
    out: list[tuple[int, bool]] = []
    waiting: list[int] = []
    for pts, kind in enumerate(types):
        if kind == "B":
            waiting.append(pts)
        else:
            out.append((pts, kind == "I"))
            out.extend((b, False) for b in waiting)
            waiting = []
    return out


gops = st.lists(
    st.tuples(st.integers(0, 2), st.lists(st.integers(0, 2), max_size=4), st.booleans()),
    min_size=1,
    max_size=8,
)


def stream_of(spec: list[tuple[int, list[int], bool]]) -> str:
    """I, then per entry B-runs and P's; ``open``: the GOP's last B's precede the next I."""
    types = ""
    for lead, runs, is_open in spec:
        types += "B" * lead if types and is_open else ""
        types += "I"
        for run in runs:
            types += "B" * run + "P"
    return types


@given(spec=gops, data=st.data())
def test_the_spans_cut_at_key_frames_keep_every_frame_once(
    spec: list[tuple[int, list[int], bool]], data: st.DataObject
) -> None:
    types = stream_of(spec)
    packets = decode_order(types)
    keys = [pts for pts, key in packets if key]
    cuts = sorted(data.draw(st.sets(st.sampled_from(keys[1:]))) if len(keys) > 1 else set())
    bounds: list[tuple[int | None, int | None]] = list(
        zip([None, *cuts], [*cuts, None], strict=True)
    )
    kept: list[int] = []
    for start, end in bounds:
        cut = SpanCut(start, end)
        # The seek lands on the span's key frame (the file's start for the first).
        first = 0 if start is None else packets.index((start, True))
        fed: list[int] = []
        for pts, key in packets[first:]:
            actions = cut.packet(pts, key, pts)
            assert all(action != "rewind" for action, _ in actions)
            if any(action == "stop" for action, _ in actions):
                break
            for action, what in actions:
                if action == "keep":
                    assert cut.keeps(pts)
                    # a B-frame's references came first: every reference presented
                    # around it, from this GOP on, was decoded before it
                    if types[pts] == "B":
                        after = next(p for p in range(pts, len(types)) if types[p] != "B")
                        assert after in fed, (types, start, end, pts)
                    kept.append(pts)
                if action in ("keep", "feed"):
                    fed.append(what)  # type: ignore[arg-type]
    assert sorted(kept) == list(range(len(types)))


def test_only_the_first_span_scans_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A span after the first is not described again: its description is not said (the
    first span's is), and the scan of 300 packets on a handle of its own cost 7.5 ms of
    CPU a span (a key frame a second: 0.25 ms a frame)."""
    import dataclasses

    import adapters.video._opening as opening

    opened: list[str] = []
    real = opening.open_input

    def counting(url: str, **kwargs: Any) -> Any:
        opened.append(url)
        return real(url, **kwargs)

    monkeypatch.setattr(opening, "open_input", counting)
    options = VideoSource(REAL / "androidx_trim_optimization_failure.mp4").options
    container = real(options.url)
    try:
        stream = container.streams.video[0]
        first = opening.describe_input(container, stream, options)
        assert len(opened) == 1  # the scan's own handle
        later = dataclasses.replace(options, span=(105420, None))
        info = opening.describe_input(container, stream, later)
        assert len(opened) == 1
        assert (info.width, info.height) == (first.width, first.height)
    finally:
        container.close()


async def test_the_spans_run_on_two_threads_and_seek_in_files_left_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Five spans on two decoders run on two threads started once (a thread started per
    span held the event loop 2-3 ms, waiting for it to take the GIL), and a later span
    seeks in a file an earlier span's decoder left open (2-3 ms of CPU an open: 4 % of a
    1 s span of 720p into 224x224 frames): the file opens twice, plus the first span's scan,
    and the frames are what one decoder delivers."""
    import adapters.video._opening as opening
    from adapters.video._decoder import DecoderThread

    path = REAL / "androidx_trim_optimization_failure.mp4"
    one, _ = await decode(path, spans=False)
    opened: list[str] = []
    real = opening.open_input

    def counting(url: str, **kwargs: Any) -> Any:
        opened.append(url)
        return real(url, **kwargs)

    ran_on: list[int] = []
    run_here = DecoderThread.run_here

    def noting(decoder: DecoderThread) -> None:
        ran_on.append(threading.get_ident())
        run_here(decoder)

    monkeypatch.setattr(opening, "open_input", counting)
    monkeypatch.setattr(DecoderThread, "run_here", noting)
    cut, spanned = await decode(path, spans=True)
    assert len(ran_on) == 5
    assert len(set(ran_on)) == 2
    assert threading.get_ident() not in ran_on
    assert spanned.video_stats.decoder_threads is not None
    assert spanned.video_stats.decoder_threads.startswith("spans: 5 key-frame spans, 2 at a time")
    assert len(opened) == 2 + 1, opened
    assert [f[:3] for f in cut] == [f[:3] for f in one]
    for a, b in zip(cut, one, strict=True):
        np.testing.assert_array_equal(a[3], b[3])
