"""``open_source``: one decision, one open, for every kind of recording and bag."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest

import recordings.hfr._reader
from adapters.synthetic import SyntheticCamera, SyntheticImu, synthetic_timeline
from fusion import Frame
from recordings import Recorder, Replay, VideoRecorder, VideoReplay, is_bag, open_source

REAL_BAGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"
MS = 1_000_000


def imu_log(path: Path, n: int = 50) -> Path:
    with Recorder(path) as rec:
        for i in range(n):
            rec.write(Frame("imu", i, 10**9 + i * 10 * MS, np.full(3, i, np.float32)))
    return path


async def collect(source: object) -> list[Frame]:
    async with source:  # type: ignore[attr-defined]
        return [f async for f in source.frames()]  # type: ignore[attr-defined]


def test_a_frame_log_opens_once_as_a_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = imu_log(tmp_path / "imu.hfr")
    opened: list[object] = []
    real_open = recordings.hfr._reader.open_recording

    def counting_open(*args: object, **kwargs: object) -> recordings.hfr._reader.Recording:
        opened.append(args[0])
        return real_open(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(recordings.hfr._reader, "open_recording", counting_open)
    monkeypatch.setattr(recordings.hfr, "open_recording", counting_open)  # the room's face
    source = open_source(path, speed=None)
    assert isinstance(source, Replay)
    frames = anyio.run(collect, source)
    assert [f.seq for f in frames] == list(range(50))
    assert len(opened) == 1


def test_encoded_video_opens_as_a_video_replay(tmp_path: Path) -> None:
    cam = SyntheticCamera(width=64, height=48, duration_s=0.5)
    imu = SyntheticImu(rate_hz=50, duration_s=0.5)
    frames = synthetic_timeline([cam, imu], epoch=10**9)
    with VideoRecorder(
        tmp_path / "v.hfr", video={"cam": "ffv1"}, sensors=[cam.spec, imu.spec]
    ) as rec:
        for frame in frames:
            rec.write(frame)
    source = open_source(tmp_path / "v.hfr", speed=None)
    assert isinstance(source, VideoReplay)
    got = anyio.run(collect, source)
    assert sorted({f.sensor for f in got}) == ["cam", "imu"]  # no "cam#keyframes"
    assert len(got) == len(frames)
    with pytest.raises(ValueError, match="--loop is not supported for recordings with encoded"):
        open_source(tmp_path / "v.hfr", loop=True)


def test_start_offset_and_duration_count_from_the_first_stamp(tmp_path: Path) -> None:
    path = imu_log(tmp_path / "imu.hfr")
    source = open_source(path, speed=None, start_offset=100 * MS, duration=50 * MS)
    assert [f.seq for f in anyio.run(collect, source)] == [10, 11, 12, 13, 14]
    with pytest.raises(ValueError, match="not both"):
        open_source(path, start=0, duration=MS)


def test_a_ros2_bag_directory_is_a_bag_whatever_its_name() -> None:
    bag_dir = REAL_BAGS / "ros2bag_tools_range.bag"  # `ros2 bag record -o range.bag`
    assert bag_dir.is_dir()
    assert is_bag(bag_dir)
    assert is_bag(REAL_BAGS / "rosbags_rs_test_bag_sqlite3")
    assert not is_bag(REAL_BAGS)


def test_a_bag_refuses_loop_and_sensor_selection(tmp_path: Path) -> None:
    bag = REAL_BAGS / "rviz_satellite_sample.bag"
    with pytest.raises(ValueError, match="not bags"):
        open_source(bag, loop=True)
    with pytest.raises(ValueError, match="selects topics"):
        open_source(bag, sensors=["gps"])
