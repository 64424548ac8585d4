"""KITTI raw drives: a drive folder built here in the dataset's exact format, read as one session.

The folder has what a ``*_sync`` download has: four cameras of PNGs (Pillow
writes them, Pillow is the reference reader), Velodyne ``.bin`` sweeps with
their start/end stamps, OXTS packet lines, ``timestamps.txt`` files in KITTI's
formatting (``2011-09-26 13:02:25.964389445``), the calibration files one
folder up. Expected stamps come from numpy's datetime64 parser.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from adapters.datasets import OXTS_FIELDS, KittiRawSource, kitti_raw_sources
from adapters.errors import SourceOpenError
from fusion import Nearest, Pipeline
from fusion._frames import Frame, FrameGroup
from recordings import Recorder, Replay, open_recording

REPO = Path(__file__).resolve().parents[2]
MS = 1_000_000
FRAMES = 4
BASE = np.datetime64("2011-09-26T13:02:25.964389445", "ns")
OXTS_LINE = (
    "49.015003823272 8.4342971002335 116.43032836914 0.035752 0.00903 -2.6087069803847 "
    "-3.0553160810471 8.8008250450259 9.4370230237055 0.068774998126338 0.12142218416052 "
    "-0.2281129515171 -0.14305622506142 9.7894256114256 -0.29802223257816 0.25498767420454 "
    "9.7880779911095 -0.0067287609019305 0.020005079436184 -0.0015716748155418 "
    "-0.0055853342318637 0.02005322133017 -0.0025057902465211 0.54004365186599 "
    "0.25632014661315 4 10 4 4 0"
)
CALIB = {
    "calib_cam_to_cam.txt": "calib_time: 09-Jan-2012 13:57:47\ncorner_dist: 9.950000e-02\n"
    "S_00: 1.392000e+03 5.120000e+02\nK_00: 9.842439e+02 0.000000e+00 6.900000e+02 "
    "0.000000e+00 9.808141e+02 2.331966e+02 0.000000e+00 0.000000e+00 1.000000e+00\n",
    "calib_velo_to_cam.txt": "calib_time: 15-Mar-2012 11:37:16\nR: 7.533745e-03 -9.999714e-01 "
    "-6.166020e-04 1.480249e-02 7.280733e-04 -9.998902e-01 9.998621e-01 7.523790e-03 "
    "1.480755e-02\nT: -4.069766e-03 -7.631618e-02 -2.717806e-01\ndelta_f: 0.000000e+00 "
    "0.000000e+00\ndelta_c: 0.000000e+00 0.000000e+00\n",
    "calib_imu_to_velo.txt": "calib_time: 25-May-2012 16:47:16\nR: 9.999976e-01 7.553071e-04 "
    "-2.035826e-03 -7.854027e-04 9.998898e-01 -1.482298e-02 2.024406e-03 1.482454e-02 "
    "9.998881e-01\nT: -8.086759e-01 3.195559e-01 -7.997231e-01\n",
}
DATAFORMAT = "".join(f"{name}: (see the KITTI devkit)\n" for name in OXTS_FIELDS)


def kitti_time(stamp: np.datetime64) -> str:
    """KITTI's own formatting: date, time, 9-digit fraction."""
    return str(stamp).replace("T", " ")


def stamps(offset_ns: int) -> list[np.datetime64]:
    # KITTI's cameras run at ~9.65 Hz, with a few microseconds of jitter between frames
    return [BASE + np.timedelta64(i * 103_643_000 + (i % 2) * 7_919 + offset_ns, "ns")
            for i in range(FRAMES)]  # fmt: skip


SENSOR_OFFSETS = {"image_00": 0, "image_01": 0, "image_02": 4_117, "image_03": 9_203,
                  "velodyne_points": 1_093_552, "oxts": -3_170_010}  # fmt: skip


def write_stamps(path: Path, values: list[np.datetime64]) -> None:
    path.write_text("".join(kitti_time(v) + "\n" for v in values))


def make_drive(root: Path) -> Path:
    """A 2011_09_26/2011_09_26_drive_0001_sync folder with FRAMES frames per sensor."""
    date = root / "2011_09_26"
    drive = date / "2011_09_26_drive_0001_sync"
    rng = np.random.default_rng(26)
    for name, text in CALIB.items():
        (date / name).parent.mkdir(parents=True, exist_ok=True)
        (date / name).write_text(text)
    for folder, offset in SENSOR_OFFSETS.items():
        data = drive / folder / "data"
        data.mkdir(parents=True)
        write_stamps(drive / folder / "timestamps.txt", stamps(offset))
        for i in range(FRAMES):
            stem = f"{i:010d}"
            if folder.startswith("image_"):
                colour = folder in ("image_02", "image_03")
                pixels = rng.integers(0, 256, (30, 48, 3) if colour else (30, 48), np.uint8)
                Image.fromarray(pixels).save(data / f"{stem}.png")
            elif folder == "velodyne_points":
                n = 500 + 10 * i
                sweep = np.empty((n, 4), np.float32)
                angle = rng.uniform(-np.pi, np.pi, n)
                radius = rng.uniform(2, 80, n)
                sweep[:, 0], sweep[:, 1] = radius * np.cos(angle), radius * np.sin(angle)
                sweep[:, 2] = rng.uniform(-2, 1, n)
                sweep[:, 3] = rng.uniform(0, 1, n)
                sweep.tofile(data / f"{stem}.bin")
            else:
                (data / f"{stem}.txt").write_text(OXTS_LINE.replace("116.43", f"11{i}.43") + "\n")
    velodyne = drive / "velodyne_points"
    middle = stamps(SENSOR_OFFSETS["velodyne_points"])
    write_stamps(
        velodyne / "timestamps_start.txt", [t - np.timedelta64(51_552_312, "ns") for t in middle]
    )
    write_stamps(
        velodyne / "timestamps_end.txt", [t + np.timedelta64(52_010_911, "ns") for t in middle]
    )
    (drive / "oxts" / "dataformat.txt").write_text(DATAFORMAT)
    return drive


@pytest.fixture(scope="module")
def drive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_drive(tmp_path_factory.mktemp("kitti"))


def ns(path: Path) -> list[int]:
    """The stamps of a timestamps file by numpy's parser (an independent reference)."""
    lines = path.read_text().split("\n")
    return [
        int(np.datetime64(line.replace(" ", "T"), "ns").astype(np.int64)) for line in lines if line
    ]


async def collect(source: Any) -> list[Frame]:
    async with source:
        return [f async for f in source.frames()]


SENSOR_FOLDERS = {"cam0": "image_00", "cam1": "image_01", "cam2": "image_02", "cam3": "image_03",
                  "velodyne": "velodyne_points", "imu": "oxts", "gnss": "oxts"}  # fmt: skip


async def test_drive_yields_every_sensor_with_the_dataset_stamps_and_payloads(drive: Path) -> None:
    source = KittiRawSource(drive)
    assert [s.name for s in source.specs] == list(SENSOR_FOLDERS)
    frames = await collect(source)
    assert [f.t for f in frames] == sorted(f.t for f in frames)  # one session, in time order
    by_sensor: dict[str, list[Frame]] = {}
    for frame in frames:
        by_sensor.setdefault(frame.sensor, []).append(frame)
    for sensor, folder in SENSOR_FOLDERS.items():
        got = by_sensor[sensor]
        assert [f.t for f in got] == ns(drive / folder / "timestamps.txt")
        assert [f.seq for f in got] == list(range(FRAMES))
        assert got[0].t_sensor == got[0].t
    assert by_sensor["cam0"][0].t == 1317042145964389445  # 2011-09-26 13:02:25.964389445 UTC
    for sensor in ("cam0", "cam1", "cam2", "cam3"):
        for frame in by_sensor[sensor]:
            np.testing.assert_array_equal(frame.data, np.asarray(Image.open(frame.meta["path"])))
    assert by_sensor["cam0"][0].data.shape == (30, 48)
    assert by_sensor["cam2"][0].data.shape == (30, 48, 3)
    for frame in by_sensor["velodyne"]:
        sweep = np.fromfile(frame.meta["path"], np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(frame.data.view(np.float32).reshape(-1, 4), sweep)
    starts = ns(drive / "velodyne_points" / "timestamps_start.txt")
    ends = ns(drive / "velodyne_points" / "timestamps_end.txt")
    assert [f.meta["sweep_start_ns"] for f in by_sensor["velodyne"]] == starts
    assert [f.meta["sweep_end_ns"] for f in by_sensor["velodyne"]] == ends
    packet = np.loadtxt(drive / "oxts" / "data" / "0000000002.txt")
    imu, gnss = by_sensor["imu"][2].data, by_sensor["gnss"][2].data
    for i, name in enumerate(OXTS_FIELDS):
        assert float((imu | gnss)[name]) == packet[i], name
    assert gnss["alt"] == 112.43032836914
    assert gnss["numsats"].dtype == np.int32
    np.testing.assert_array_equal(imu["accel"], packet[11:14])
    np.testing.assert_array_equal(imu["gyro"], packet[17:20])
    calib = source.spec.meta["calibration"]
    assert calib["velo_to_cam"]["T"] == [-4.069766e-03, -7.631618e-02, -2.717806e-01]
    assert calib["cam_to_cam"]["calib_time"] == "09-Jan-2012 13:57:47"
    assert len(calib["imu_to_velo"]["R"]) == 9
    kinds = {s.name: s.kind for s in source.specs}
    assert (kinds["cam2"], kinds["velodyne"], kinds["imu"], kinds["gnss"]) == (
        "camera", "lidar", "imu", "gnss",
    )  # fmt: skip


async def test_sweep_time_spreads_points_over_the_sweep_by_azimuth(drive: Path) -> None:
    frames = await collect(KittiRawSource(drive, sensors=["velodyne"], sweep_time=True))
    sweep = frames[0]
    offsets = sweep.data["t_offset"].astype(np.int64)
    start, end = sweep.meta["sweep_start_ns"] - sweep.t, sweep.meta["sweep_end_ns"] - sweep.t
    assert start <= offsets.min() < offsets.max() <= end
    azimuth = np.arctan2(sweep.data["y"], sweep.data["x"])
    ahead = np.argmin(np.abs(azimuth))  # facing forward: mid-sweep, near the frame's stamp
    assert abs(offsets[ahead] - (start + end) / 2) < (end - start) / 50
    behind_left = np.argmax(azimuth)  # just after the sweep's start (clockwise from behind)
    assert offsets[behind_left] - start < (end - start) / 50


async def test_one_source_per_sensor_gives_the_same_frames(drive: Path) -> None:
    merged = await collect(KittiRawSource(drive, prefix="kitti/"))
    singles = kitti_raw_sources(drive, prefix="kitti/")
    assert [s.name for s in singles] == ["kitti/" + n for n in SENSOR_FOLDERS]
    for source in singles:
        own = await collect(source)
        want = [f for f in merged if f.sensor == source.name]
        assert [(f.seq, f.t, f.meta["path"]) for f in own] == [
            (f.seq, f.t, f.meta["path"]) for f in want
        ]


def keys(groups: list[FrameGroup]) -> list[tuple[Any, ...]]:
    out = []
    for g in groups:
        frames = {k: v for k, v in g.frames.items() if isinstance(v, Frame)}
        out.append((g.t, tuple(sorted((k, f.seq, f.t) for k, f in frames.items()))))
    return out


def policy() -> Nearest:
    return Nearest("velodyne", list(SENSOR_FOLDERS), tolerance=20 * MS)


async def test_nearest_groups_each_sweep_with_cameras_and_oxts_records_and_replays(
    drive: Path, tmp_path: Path
) -> None:
    path = tmp_path / "drive.hfr"
    source = KittiRawSource(drive)
    recorder = Recorder(path, sensors=source.specs)
    with anyio.fail_after(30):
        groups = [g async for g in Pipeline([source], policy(), recorder=recorder)]
    assert len(groups) == FRAMES
    velodyne = ns(drive / "velodyne_points" / "timestamps.txt")
    assert [g.t for g in groups] == velodyne
    for i, group in enumerate(groups):
        assert not group.missing
        assert {k: v.seq for k, v in group.frames.items() if isinstance(v, Frame)} == dict.fromkeys(
            SENSOR_FOLDERS, i
        )
    with open_recording(path) as log:
        summary = log.summary()
        recorded = list(log.frames())
    assert {n: s.count for n, s in summary.sensors.items()} == dict.fromkeys(SENSOR_FOLDERS, FRAMES)
    assert (
        summary.sensors["velodyne"].spec.meta["calibration"]["velo_to_cam"]["T"][0] == -4.069766e-03
    )
    with anyio.fail_after(30):
        replayed = [g async for g in Pipeline([Replay(path, speed=None)], policy())]
    assert keys(replayed) == keys(groups)
    with anyio.fail_after(30):  # one source per sensor, racing each other: the same groups
        separate = [g async for g in Pipeline(kitti_raw_sources(drive), policy())]
    assert keys(separate) == keys(groups)
    originals = {
        (f.sensor, f.seq): f for g in groups for f in g.frames.values() if isinstance(f, Frame)
    }
    for frame in recorded:
        original = originals[(frame.sensor, frame.seq)]
        assert frame.t == original.t
        if isinstance(original.data, dict):
            for key, value in original.data.items():
                np.testing.assert_array_equal(frame.data[key], value)
        else:
            np.testing.assert_array_equal(frame.data, original.data)
        if frame.sensor == "velodyne":
            assert frame.meta["sweep_start_ns"] == original.meta["sweep_start_ns"]


def test_toml_kitti_raw_source_records_with_the_cli(drive: Path, tmp_path: Path) -> None:
    config = tmp_path / "kitti.toml"
    config.write_text(
        f"""
[sync]
policy = "nearest"
reference = "velodyne"
tolerance_ms = 20

[[sources]]
type = "kitti_raw"
name = "kitti"
path = "{drive}"
sensors = ["cam2", "velodyne", "imu"]
"""
    )
    out = tmp_path / "kitti.hfr"
    run = subprocess.run(
        [sys.executable, "-m", "hyperframes", "record", str(config), "-o", str(out), "--quiet"],
        capture_output=True, text=True, timeout=90, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with open_recording(out) as log:
        counts = {n: s.count for n, s in log.summary().sensors.items()}
    assert counts == {"cam2": FRAMES, "velodyne": FRAMES, "imu": FRAMES}


async def test_a_broken_file_costs_its_frame_and_a_stamp_mismatch_refuses_the_drive(
    tmp_path: Path,
) -> None:
    drive = make_drive(tmp_path)
    (drive / "image_02" / "data" / "0000000001.png").write_bytes(b"\x89PNG broken")
    (drive / "oxts" / "data" / "0000000003.txt").write_text("1 2 3\n")
    source = KittiRawSource(drive, sensors=["cam2", "imu"])
    frames = await collect(source)
    assert [(f.sensor, f.seq) for f in frames if f.sensor == "cam2"] == [
        ("cam2", i) for i in range(3)
    ]
    assert len([f for f in frames if f.sensor == "imu"]) == 3
    assert source.errors == {"bad_file": 1, "bad_length": 1}
    assert "imu frame 3: " in str(source.last_error)
    assert "0000000003.txt: line 1: expected 30 numbers (an OXTS packet), found 3" in str(
        source.last_error
    )
    ledgers = source.ledgers()
    assert ledgers["cam2"].lost == {"bad_file": 1}  # each loss in its own sensor's ledger
    assert ledgers["imu"].lost == {"bad_length": 1}
    with (drive / "velodyne_points" / "timestamps.txt").open("a") as extra:
        extra.write("2011-09-26 13:02:26.500000000\n")
    with pytest.raises(SourceOpenError, match=r"timestamps\.txt: 5 timestamps for 4 files"):
        KittiRawSource(drive)
    with pytest.raises(SourceOpenError, match=r"not a KITTI raw drive"):
        KittiRawSource(tmp_path)


async def test_the_kitti_example_config_runs_on_a_drive(drive: Path) -> None:
    import tomllib

    from hyperframes.config import build_pipeline, validate_config

    raw = tomllib.loads((REPO / "examples" / "configs" / "kitti_raw.toml").read_text())
    raw["sources"][0]["path"] = str(drive)
    with anyio.fail_after(30):
        groups = [g async for g in build_pipeline(validate_config(raw))]
    assert len(groups) == FRAMES
    sweep = groups[0].frames["velodyne"]
    assert isinstance(sweep, Frame)
    assert "t_offset" in (sweep.data.dtype.names or ())
    squared = sweep.data["x"] ** 2 + sweep.data["y"] ** 2 + sweep.data["z"] ** 2
    assert squared.min() >= 4.0  # the example's range crop (2 m) ran
    assert set(groups[0].frames) == {"cam0", "cam2", "velodyne", "imu", "gnss"}


@pytest.mark.parametrize(
    ("line", "reason", "says", "lost"),
    [
        ("garbage \x00 not numbers", "bad_row", "expected 30 numbers, could not convert", "both"),
        (" ".join(OXTS_LINE.split()[:29]), "bad_length", "found 29", "both"),
        (OXTS_LINE + "\n" + OXTS_LINE, "bad_length", "2 lines: expected 30 numbers", "both"),
        (OXTS_LINE.replace("0.035752", "nan", 1), "bad_row", "roll=nan not finite", "imu"),
        (OXTS_LINE.replace("49.015003823272", "inf", 1), "bad_row", "lat=inf not finite", "gnss"),
    ],
)
async def test_a_bad_oxts_line_is_that_packets_counted_loss_naming_file_and_line(
    tmp_path: Path, line: str, reason: str, says: str, lost: str
) -> None:
    drive = make_drive(tmp_path)
    bad = drive / "oxts" / "data" / "0000000002.txt"
    bad.write_text(line + "\n")
    source = KittiRawSource(drive, sensors=["imu", "gnss"])
    frames = await collect(source)
    hurt = {"imu", "gnss"} if lost == "both" else {lost}
    for sensor in ("imu", "gnss"):
        got = [f for f in frames if f.sensor == sensor]
        ledger = source.ledgers()[sensor]
        assert (ledger.unit, ledger.received) == ("file", FRAMES)
        assert ledger.received == ledger.emitted + ledger.lost_total
        if sensor in hurt:
            assert len(got) == FRAMES - 1
            assert "0000000002.txt" not in {f.meta["path"].rsplit("/", 1)[-1] for f in got}
            assert ledger.lost == {reason: 1}
        else:
            assert len(got) == FRAMES
            assert ledger.lost == {}
    assert f"{bad}: " in str(source.last_error)
    assert says in str(source.last_error)


OXTS_LINES = st.one_of(
    st.just(OXTS_LINE),  # good
    st.just(" ".join(OXTS_LINE.split()[:-1])),  # 29 numbers
    st.just(OXTS_LINE + " 1"),  # 31 numbers
    st.just("garbage"),
    st.just(""),  # an empty file
    st.just(OXTS_LINE.replace("0.035752", "nan", 1)),  # imu half not finite
    st.just(OXTS_LINE.replace("49.015003823272", "-inf", 1)),  # gnss half not finite
)


@settings(max_examples=25, deadline=None)
@given(lines=st.lists(OXTS_LINES, min_size=1, max_size=12))
async def test_every_oxts_file_ends_as_a_frame_or_a_counted_loss(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        oxts = Path(tmp) / "2011_09_26" / "2011_09_26_drive_0001_sync" / "oxts"
        (oxts / "data").mkdir(parents=True)
        write_stamps(
            oxts / "timestamps.txt", [BASE + np.timedelta64(i, "s") for i in range(len(lines))]
        )
        for i, line in enumerate(lines):
            (oxts / "data" / f"{i:010d}.txt").write_text(line + "\n")
        source = KittiRawSource(oxts.parent)
        frames = await collect(source)
    for sensor in ("imu", "gnss"):
        ledger = source.ledgers()[sensor]
        assert ledger.received == len(lines) == ledger.emitted + ledger.lost_total
        assert ledger.emitted == len([f for f in frames if f.sensor == sensor])
