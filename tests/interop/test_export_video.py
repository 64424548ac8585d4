"""Cameras recorded as H.264 or FFV1 export to CompressedVideo and MP4 without re-encoding.

The reference is the recording's own packet records and PyAV: the MCAP
messages carry exactly the recorded packets with the frames' stamps, the MP4
demuxes to the same packets (the same NAL units for H.264, whose muxer
changes start codes to length prefixes) at the frames' times. ffprobe, the
independent reader, counts as many packets and frames in each MP4 as were
recorded (the last one too: every copied packet carries its duration).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from fusion import Frame, SensorSpec
from hyperframes.cli import main as cli
from recordings import VideoRecorder, open_recording
from recordings.hfr.video._packets import META_KEY
from recordings.outputs._export import export_recording
from tests.interop.rosmsgs import BAGS, read_mcap_cdr

MS = 1_000_000
T0 = 1_700_000_000_000_000_000
N = 24


def picture(i: int) -> np.ndarray:
    yy, xx = np.mgrid[0:48, 0:64]
    return np.stack(
        [(xx * 4 + i * 7) % 256, (yy * 5) % 256, np.full_like(xx, 9 * i % 256)], -1
    ).astype(np.uint8)


def make(path: Path, codec: str) -> list[Frame]:
    """24 camera frames at irregular times and an IMU beside them; the packet records back."""
    specs = [
        SensorSpec("cam", kind="camera", rate_hz=10),
        SensorSpec("imu", kind="imu", rate_hz=20),
    ]
    times = [T0 + i * 100 * MS + (i % 3) * 7_000 for i in range(N)]  # whole microseconds
    with VideoRecorder(path, video={"cam": codec}, sensors=specs) as rec:
        for i, t in enumerate(times):
            rec.write(Frame("cam", i, t, picture(i), t_arrival=t + 2 * MS))
            for j in range(2):
                tj = t + j * 50 * MS
                rec.write(
                    Frame("imu", 2 * i + j, tj, {"accel": np.ones(3) * j, "gyro": np.zeros(3)})
                )
    with open_recording(path) as log:
        return list(log.frames(["cam"]))


@pytest.fixture(scope="module", params=["h264", "ffv1"])
def video(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("video") / f"cam-{request.param}.hfr"
    return request.param, path, make(path, request.param)


def ffprobe_counts(path: Path) -> tuple[int, int]:
    """(packets, frames) ffprobe reads from the first video stream of ``path``."""
    if shutil.which("ffprobe") is None:
        pytest.skip("needs ffprobe")
    out = subprocess.run(
        [
            *("ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets"),
            *("-count_frames", "-show_entries", "stream=nb_read_packets,nb_read_frames"),
            *("-of", "json", str(path)),
        ],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    stream = json.loads(out)["streams"][0]
    return int(stream["nb_read_packets"]), int(stream["nb_read_frames"])


def nal_units(data: bytes, annexb: bool) -> list[bytes]:
    if annexb:
        return [p for p in re.split(b"\x00\x00\x00\x01|\x00\x00\x01", data) if p]
    out, i = [], 0
    while i < len(data):
        n = int.from_bytes(data[i : i + 4], "big")
        out.append(data[i + 4 : i + 4 + n])
        i += 4 + n
    return out


def test_ros2_profile_carries_every_packet_as_compressed_video(video: Any, tmp_path: Path) -> None:
    codec, path, packets = video
    assert len(packets) == N
    assert all(META_KEY in p.meta for p in packets)
    out = tmp_path / "v.mcap"
    report = export_recording(path, out, to="ros2")
    assert report.skipped == {}
    assert report.exported["cam"] == N
    messages = [(tp, ty, lt, m) for tp, ty, lt, _, m in read_mcap_cdr(out) if tp == "/cam"]
    assert {ty for _, ty, _, _ in messages} == {"foxglove_msgs/msg/CompressedVideo"}
    assert [bytes(m.data) for *_, m in messages] == [bytes(p.data) for p in packets]
    assert [m.format for *_, m in messages] == [codec] * N
    assert [m.timestamp.sec * 10**9 + m.timestamp.nanosec for *_, m in messages] == [
        p.t for p in packets
    ]
    assert [lt for _, _, lt, _ in messages] == [p.t_arrival for p in packets]
    # No key frame markers anywhere: not as a topic, not in the groups.
    topics = {tp for tp, *_ in read_mcap_cdr(out)}
    assert topics == {"/cam", "/imu", "/hyperframes/groups"}
    groups = [m for tp, _, _, _, m in read_mcap_cdr(out) if tp == "/hyperframes/groups"]
    assert report.groups == len(groups) == N
    assert all("keyframes" not in kv.key for g in groups for kv in g.status[0].values)
    # The stream decodes with PyAV as it is (FFV1 needs its configuration record,
    # which is the track's extradata and not part of any packet).
    decoder = av.CodecContext.create(codec, "r")
    params = packets[0].meta[META_KEY]["params"]
    extradata = params["extradata"]
    if codec == "ffv1":
        decoder.width, decoder.height, decoder.extradata = (
            params["width"],
            params["height"],
            extradata,
        )
    else:
        assert extradata is None  # Annex B with in-band parameter sets
    decoded = [f for *_, m in messages for f in decoder.decode(av.Packet(bytes(m.data)))]
    decoded += list(decoder.decode(None))
    assert len(decoded) == N


def test_foxglove_profile_carries_the_same_packets(video: Any, tmp_path: Path) -> None:
    codec, path, packets = video
    out = tmp_path / "v.fox.mcap"
    report = export_recording(path, out, to="foxglove")
    assert report.skipped == {}
    assert report.exported["cam"] == N
    got = [(ty, lt, m) for tp, ty, lt, _, m in read_mcap_cdr(out) if tp == "/cam"]
    assert {ty for ty, _, _ in got} == {"foxglove_msgs/msg/CompressedVideo"}
    assert [bytes(m.data) for *_, m in got] == [bytes(p.data) for p in packets]
    assert {m.format for *_, m in got} == {codec}
    assert [m.timestamp.sec * 10**9 + m.timestamp.nanosec for *_, m in got] == [
        p.t for p in packets
    ]
    assert [lt for _, lt, _ in got] == [p.t_arrival for p in packets]


def test_mp4_remuxes_the_recorded_packets_at_their_times(video: Any, tmp_path: Path) -> None:
    codec, path, packets = video
    out = tmp_path / "cam.mp4"
    assert cli(["export", str(path), "-o", str(out), "--to", "mp4", "--sensors", "cam"]) == 0
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == codec
        demuxed = [p for p in container.demux(stream) if p.size]
        tb = stream.time_base
        assert tb is not None
        stamps = [int(p.pts * tb * 1_000_000_000) for p in demuxed]
        data = [bytes(p) for p in demuxed]
    assert stamps == [p.t - packets[0].t for p in packets]
    if codec == "h264":  # same NAL units, length-prefixed by the MP4 muxer
        assert [nal_units(d, annexb=False) for d in data] == [
            nal_units(bytes(p.data), annexb=True) for p in packets
        ]
    else:
        assert data == [bytes(p.data) for p in packets]
    with av.open(str(out)) as container:
        pictures = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(pictures) == N
    assert ffprobe_counts(out) == (N, N)  # the independent reader: the last packet too
    if codec == "ffv1":  # lossless: the MP4's codec configuration decodes every pixel back
        for i, got in enumerate(pictures):
            np.testing.assert_array_equal(got, picture(i))


def test_mp4_reencode_decodes_when_asked(video: Any, tmp_path: Path) -> None:
    _, path, packets = video
    out = tmp_path / "again.mp4"
    report = export_recording(path, out, to="mp4", sensors=["cam"], reencode=True)
    assert report.exported["cam"] == N
    assert report.skipped == {}
    with av.open(str(out)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == N
    assert [round(float(f.pts * f.time_base) * 1e6) for f in frames] == [
        (p.t - packets[0].t) // 1000 for p in packets
    ]
    assert Fraction(1, 1_000_000) == frames[0].time_base


REAL_MP4 = BAGS.parent / "video" / "androidx_trim_optimization_failure.mp4"


@pytest.mark.skipif(not REAL_MP4.is_file(), reason="../shared/data/real/video is not there")
def test_copied_mp4_packets_become_annexb_compressed_video_and_remux_at_their_times(
    tmp_path: Path,
) -> None:
    """A phone clip (H.264 with B-frames, AVCC in MP4) recorded with ``copy``."""
    import anyio

    from adapters import VideoSource

    hfr = tmp_path / "copy.hfr"

    async def run() -> None:
        source = VideoSource(REAL_MP4, name="cam", keep_packets=True)
        async with (
            VideoRecorder(hfr, video={"cam": "copy"}, sensors=[source.spec]) as rec,
            source,
        ):
            async for frame in source.frames():
                await rec.send(frame)

    anyio.run(run)
    with open_recording(hfr) as log:
        packets = list(log.frames(["cam"]))
    assert len(packets) == 167  # expected.json: 167 packets, 167 frames
    out = tmp_path / "copy.mcap"
    report = export_recording(hfr, out, to="ros2")
    assert report.skipped == {}
    messages = [m for tp, _, _, _, m in read_mcap_cdr(out) if tp == "/cam"]
    assert len(messages) == 167
    # Annex B, parameter sets in front of the key frame: decodes with no extradata.
    first = bytes(messages[0].data)
    assert first.startswith(b"\x00\x00\x00\x01")
    decoder = av.CodecContext.create("h264", "r")
    decoded = [f for m in messages for f in decoder.decode(av.Packet(bytes(m.data)))]
    decoded += list(decoder.decode(None))
    assert len(decoded) == 167
    # The NAL units are the stored ones, only re-framed.
    assert (
        nal_units(bytes(messages[5].data), annexb=True)[-1]
        == nal_units(bytes(packets[5].data), annexb=False)[-1]
    )
    # Remuxed: the same packets, presentation times = the frames' t (B-frame order kept).
    mp4 = tmp_path / "copy.mp4"
    assert export_recording(hfr, mp4, to="mp4", sensors=["cam"]).exported["cam"] == 167
    with av.open(str(mp4)) as container:
        stream = container.streams.video[0]
        demuxed = [p for p in container.demux(stream) if p.size]
        tb = stream.time_base
        assert tb is not None
        data = [bytes(p) for p in demuxed]
        keys = [bool(p.meta[META_KEY]["key"]) for p in packets]
        # Non-key packets byte for byte; key packets gain the parameter sets in front.
        assert [d for d, k in zip(data, keys, strict=True) if not k] == [
            bytes(p.data) for p, k in zip(packets, keys, strict=True) if not k
        ]
        for d, p, k in zip(data, packets, keys, strict=True):
            if k:
                assert d.endswith(bytes(p.data))
        assert [int(p.pts * tb * 1_000_000) for p in demuxed] == [
            (p.t - min(q.t for q in packets)) // 1000 for p in packets
        ]
    with av.open(str(mp4)) as container:
        assert sum(1 for _ in container.decode(video=0)) == 167
    assert ffprobe_counts(mp4) == (167, 167)  # B-frames: the last shown is not the last sent


def test_a_window_between_key_frames_loses_no_packet(video: Any, tmp_path: Path) -> None:
    codec, path, packets = video
    keys = [i for i, p in enumerate(packets) if p.meta[META_KEY]["key"]]
    first = 6 if codec == "h264" else 5
    start = packets[first].t
    out = tmp_path / "w.mcap"
    report = export_recording(path, out, to="ros2", start=start)
    assert report.complete
    got = [m for tp, _, _, _, m in read_mcap_cdr(out) if tp == "/cam"]
    assert [bytes(m.data) for m in got] == [bytes(p.data) for p in packets[first:]]
    assert {m.format for m in got} == {codec}
    # The MP4 starts at the last key frame at or before start, and says so.
    begin = max(i for i in keys if i <= first)
    mp4 = tmp_path / "w.mp4"
    report = export_recording(path, mp4, to="mp4", sensors=["cam"], start=start)
    assert report.complete
    assert bool(report.notes) == (begin < first)
    with av.open(str(mp4)) as container:
        demuxed = [bytes(p) for p in container.demux(video=0) if p.size]
    assert len(demuxed) == N - begin
