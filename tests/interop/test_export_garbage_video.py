"""``export --to mp4`` of an encoded-video recording whose packets are garbage.

A real H.264 or FFV1 recording (VideoRecorder) is rewritten with random bytes in
place of some or all of its packets (their meta, key flags and codec parameters
kept). Each damaged packet is counted once with its reason, the good packets are
exported (PyAV demuxes and decodes the MP4 as the reference), and a track whose
first key frame is garbage fails with one line saying so.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from fusion import Frame
from hyperframes.cli import main as cli
from recordings import Recorder, open_recording
from recordings.outputs._export import export_recording
from tests.interop.test_export_video import N, make


def garbled(tmp: Path, codec: str, bad: set[int]) -> tuple[Path, list[Frame]]:
    """The recording with the camera packets whose seq is in ``bad`` made random."""
    src = tmp / f"clean-{codec}.hfr"
    packets = make(src, codec)
    rng = np.random.default_rng(3)
    out = tmp / f"garbage-{codec}.hfr"
    with open_recording(src) as log:
        specs = list(log.specs.values())
        frames = list(log.frames())
    with Recorder(out, sensors=specs) as rec:
        for f in frames:
            if f.sensor == "cam" and f.seq in bad:
                noise = rng.integers(0, 256, max(len(f.data), 64), dtype=np.uint8).tobytes()
                f = Frame(f.sensor, f.seq, f.t, noise, f.t_sensor, f.t_arrival, f.meta)
            rec.write(f)
    return out, packets


def demuxed(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for p in container.demux(video=0) if p.size)


def test_garbage_h264_packets_are_each_counted_and_the_good_ones_copied(tmp_path: Path) -> None:
    bad = set(range(13, N))  # the first half second (a GOP) is good
    path, _ = garbled(tmp_path, "h264", bad)
    out = tmp_path / "cam.mp4"
    report = export_recording(path, out, to="mp4", sensors=["cam"])
    assert report.read["cam"] == N
    assert report.written["cam"] == N - len(bad)
    assert report.skipped == {("cam", "not h264 data (a damaged packet)"): len(bad)}
    assert demuxed(out) == N - len(bad)


def test_garbage_ffv1_packets_are_found_by_decoding_and_counted(tmp_path: Path) -> None:
    bad = {k for k in range(N) if k % 2}
    path, packets = garbled(tmp_path, "ffv1", bad)
    out = tmp_path / "cam.mp4"
    report = export_recording(path, out, to="mp4", sensors=["cam"])
    assert report.written["cam"] == N - len(bad)
    assert report.skipped == {("cam", "does not decode as ffv1 (a damaged packet)"): len(bad)}
    with av.open(str(out)) as container:
        data = [bytes(p) for p in container.demux(video=0) if p.size]
    assert data == [bytes(p.data) for p in packets if p.seq not in bad]


def test_all_garbage_h264_exits_1_naming_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = garbled(tmp_path, "h264", set(range(N)))
    out = tmp_path / "cam.mp4"
    assert cli(["export", str(path), "-o", str(out), "--to", "mp4", "--sensors", "cam"]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert f"wrote 0 of {N} frames read; {N} could not be exported" in text
    assert "not h264 data (a damaged packet)" in text


@pytest.mark.parametrize("codec", ["h264", "ffv1"])
def test_reencoding_garbage_counts_every_undecodable_packet(tmp_path: Path, codec: str) -> None:
    bad = {k for k in range(N) if k % 2} if codec == "ffv1" else set(range(N))
    path, _ = garbled(tmp_path, codec, bad)
    out = tmp_path / "again.mp4"
    report = export_recording(path, out, to="mp4", sensors=["cam"], reencode=True)
    assert report.read["cam"] == N  # every packet accounted for
    assert report.written["cam"] + sum(report.skipped.values()) == N
    assert report.skipped[("cam", "undecodable packet")] >= len(bad)
    if codec == "ffv1":  # intra only: every good packet decodes and is written
        assert report.written["cam"] == N - len(bad)
        with av.open(str(out)) as container:
            assert sum(1 for _ in container.decode(video=0)) == N - len(bad)


def test_a_garbage_first_key_frame_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = garbled(tmp_path, "ffv1", {0})
    out = tmp_path / "cam.mp4"
    assert cli(["export", str(path), "-o", str(out), "--to", "mp4", "--sensors", "cam"]) == 2
    text = " ".join(capsys.readouterr().out.split())
    assert text == (
        "error: ffv1 packets cannot be copied into an MP4: the track's first key frame does "
        "not decode with its own recorded configuration (the packets are damaged)"
    )
