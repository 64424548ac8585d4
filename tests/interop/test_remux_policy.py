"""The MP4 remuxer's timestamp policy, pure and over real recorded H.264 packets.

:func:`remux_times` decides each packet's presentation and decode times; the
properties are the MP4 rules (decode times never go back, no packet decodes
after it is shown). Over packets libx264 recorded, with times and damage drawn
by hypothesis, every packet is written or counted with its reason, and PyAV and
ffprobe (the independent reference) both demux exactly the packets written, in
increasing decode time: every copied packet has a duration, so an MP4's last one
is inside its edit list and read back.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion import Frame, SensorSpec
from recordings import VideoRecorder, open_recording
from recordings.hfr.video._packets import META_KEY
from recordings.outputs.files._media import LONE_PACKET_US, _durations, remux_mp4, remux_times

MS = 1_000_000
T0 = 1_700_000_000_000_000_000
N = 12

times_ns = st.lists(st.integers(0, 10**12), min_size=1, max_size=60)


@given(times=times_ns, zero=st.none() | st.integers(0, 10**12))
def test_decode_times_never_go_back_and_never_follow_presentation(
    times: list[int], zero: int | None
) -> None:
    pts, dts = remux_times(times, zero)
    assert len(pts) == len(dts) == len(times)
    assert min(pts) >= 0  # counted from the earliest of the times and zero
    t0 = min(times) if zero is None else min(zero, *times)
    assert pts == [(t - t0) // 1000 for t in times]
    assert all(a <= b for a, b in itertools.pairwise(dts))  # monotonic
    assert all(d <= p for d, p in zip(dts, pts, strict=True))  # decoded before shown
    shift = {p - d for p, d in zip(sorted(pts), dts, strict=True)}
    assert len(shift) == 1  # the presentation times, sorted, shifted by one delay
    distinct = len(set(pts)) == len(pts)
    if distinct:
        assert all(a < b for a, b in itertools.pairwise(dts))


def test_no_times_no_packets() -> None:
    assert remux_times([]) == ([], [])


@given(times=times_ns)
def test_every_presentation_time_has_a_duration_to_the_next(times: list[int]) -> None:
    pts, _ = remux_times(times)
    durations = _durations(pts)
    ordered = sorted(set(pts))
    assert set(durations) == set(pts)
    assert all(d > 0 for d in durations.values())  # the last sample too
    for a, b in itertools.pairwise(ordered):
        assert durations[a] == b - a
    last = ordered[-1]
    assert durations[last] == (last - ordered[-2] if len(ordered) > 1 else LONE_PACKET_US)


needs_ffprobe = pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffprobe")


def ffprobe_packets(path: Path) -> list[dict[str, Any]]:
    """The video packets ffprobe (the independent reference) demuxes from ``path``."""
    out = subprocess.run(
        [
            *("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_packets"),
            *("-show_entries", "packet=pts,dts,duration,size", "-of", "json", str(path)),
        ],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return list(json.loads(out).get("packets", []))


@pytest.fixture(scope="module")
def packets(tmp_path_factory: pytest.TempPathFactory) -> list[Frame]:
    """12 camera frames recorded as H.264 by libx264: the recorded packets back."""
    path = tmp_path_factory.mktemp("remux") / "cam.hfr"
    yy, xx = np.mgrid[0:48, 0:64]
    with VideoRecorder(
        path, video={"cam": "h264"}, sensors=[SensorSpec("cam", kind="camera", rate_hz=10)]
    ) as rec:
        for i in range(N):
            image = np.stack([(xx * 4 + i * 7) % 256, (yy * 5) % 256, xx * 0 + 9 * i], -1)
            rec.write(Frame("cam", i, T0 + i * 100 * MS, image.astype(np.uint8)))
    with open_recording(path) as log:
        return list(log.frames(["cam"]))


@needs_ffprobe
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(st.integers(0, 3) | st.just(0), min_size=N, max_size=N),
    damaged=st.sets(st.integers(1, N - 1), max_size=4),
    fmt=st.sampled_from(["mp4", "matroska"]),
)
def test_every_recorded_packet_is_written_or_counted(
    packets: list[Frame], tmp_path_factory: pytest.TempPathFactory, steps: list[int],
    damaged: set[int], fmt: str,
) -> None:  # fmt: skip
    assert len(packets) == N
    assert all(META_KEY in p.meta for p in packets)
    t, frames = T0, []
    for i, (frame, step) in enumerate(zip(packets, steps, strict=True)):
        t += step * 40 * MS  # a step of 0: the same time as the packet before
        data: Any = frame.data
        if i in damaged and not frame.meta[META_KEY].get("key"):
            data = b"\xff" * 9  # not Annex B: a damaged packet
        frames.append(dataclasses.replace(frame, t=t, data=data))
    out = tmp_path_factory.mktemp("out") / "cam.out"
    written, skipped = remux_mp4(lambda: iter(frames), out, fmt=fmt)
    assert written + sum(skipped.values()) == N
    assert set(skipped) <= {"time does not increase", "not h264 data (a damaged packet)"}
    with av.open(str(out)) as container:
        got = [p for p in container.demux(video=0) if p.size]
    assert len(got) == written  # the last packet too: it has a duration
    assert len([p for p in ffprobe_packets(out) if int(p["size"])]) == written
    # Matroska stores presentation times only (no B-frames here: the same order)
    dts = [int((p.dts if fmt == "mp4" else p.pts) or 0) for p in got]
    assert all(a < b for a, b in itertools.pairwise(dts))


@needs_ffprobe
@pytest.mark.parametrize("n", [1, 2, 3])
def test_an_mp4_of_few_copied_packets_demuxes_all(
    packets: list[Frame], tmp_path: Path, n: int
) -> None:
    """Found by the property above: without audio the last copied packet had no duration,
    and FFmpeg's demuxer dropped it at the edit list's end (two packets: the second lost)."""
    frames = [dataclasses.replace(f, t=T0 + i * 40 * MS) for i, f in enumerate(packets[:n])]
    out = tmp_path / "few.mp4"
    assert remux_mp4(lambda: iter(frames), out) == (n, {})
    with av.open(str(out)) as container:
        got = [p for p in container.demux(video=0) if p.size]
    assert len(got) == n
    probe = [p for p in ffprobe_packets(out) if int(p["size"])]
    assert len(probe) == n
    # each one's duration: the next one's time minus its own; the last the one before
    assert [int(p["duration"]) for p in probe] == ([40_000] * n if n > 1 else [LONE_PACKET_US])
