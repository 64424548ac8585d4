"""Export a recording to ROS 2 and Foxglove MCAP, MP4, PCD and Rerun, and read it back."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import av
import numpy as np
import pytest

from adapters import BagSource
from adapters.lidar._pcd import read_pcd
from adapters.synthetic import synthetic_session, synthetic_timeline
from fusion import ApproximateTime, Frame, SensorSpec
from hyperframes.cli import main as cli
from recordings import Recorder, open_recording
from recordings.outputs._export import export_recording, sync_groups

MS = 1_000_000


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1 s of camera, LiDAR and IMU plus a GNSS receiver and a wheel-speed series."""
    path = tmp_path_factory.mktemp("export") / "session.hfr"
    sensors = synthetic_session(1.0, seed=5, realtime=False)
    specs = [s.spec for s in sensors] + [
        SensorSpec("gps", kind="gnss", rate_hz=5),
        SensorSpec("wheel", kind="timeseries", rate_hz=20),
    ]
    extra = [
        Frame(
            "gps",
            i,
            i * 200 * MS + 3 * MS,
            {
                "latitude": np.float64(48.1 + i * 1e-5),
                "longitude": np.float64(11.5),
                "altitude": np.float64(500.0),
            },
            t_arrival=i * 200 * MS + 9 * MS,
        )
        for i in range(5)
    ] + [
        Frame(
            "wheel",
            i,
            i * 50 * MS,
            np.array([(0.5 * i, 2 * i)], [("speed", "<f4"), ("ticks", "<i4")]),
            t_arrival=i * 50 * MS + MS,
        )
        for i in range(20)
    ]
    frames = sorted(synthetic_timeline(sensors) + extra, key=lambda f: f.t_arrival or 0)
    with Recorder(path, sensors=specs) as rec:
        for frame in frames:
            rec.write(frame)
    return path


def recorded(path: Path) -> list[Frame]:
    with open_recording(path) as log:
        return list(log.frames())


def test_ros2_profile_reads_back_with_rosbags_message_for_message(
    recording: Path, tmp_path: Path
) -> None:
    from rosbags.highlevel import AnyReader

    out = tmp_path / "out.mcap"
    report = export_recording(recording, out, to="ros2")
    assert report.skipped == {}
    frames = recorded(recording)
    with AnyReader([out]) as reader:
        types = {name: info.msgtype for name, info in reader.topics.items()}
        messages = [
            (conn.topic, log_time, reader.deserialize(raw, conn.msgtype))
            for conn, log_time, raw in reader.messages()
        ]
    assert types == {
        "/cam": "sensor_msgs/msg/Image",
        "/lidar": "sensor_msgs/msg/PointCloud2",
        "/imu": "sensor_msgs/msg/Imu",
        "/gps": "sensor_msgs/msg/NavSatFix",
        "/wheel": "std_msgs/msg/Float64MultiArray",
        "/hyperframes/groups": "diagnostic_msgs/msg/DiagnosticArray",
    }
    data = [(t, lt, m) for t, lt, m in messages if t != "/hyperframes/groups"]
    by_topic: dict[str, list[tuple[int, object]]] = {}
    for topic, log_time, msg in data:
        by_topic.setdefault(topic, []).append((log_time, msg))
    for sensor in ("cam", "lidar", "imu", "gps", "wheel"):
        originals = [f for f in frames if f.sensor == sensor]
        exported = by_topic[f"/{sensor}"]
        assert len(exported) == len(originals)
        for frame, (log_time, msg) in zip(originals, exported, strict=True):
            assert log_time == frame.t_arrival
            if sensor == "wheel":  # no header: a plain array with labelled dimensions
                assert [d.label for d in msg.layout.dim] == ["speed", "ticks"]
                np.testing.assert_allclose(
                    msg.data, [frame.data["speed"][0], frame.data["ticks"][0]]
                )
                continue
            stamp = msg.header.stamp
            assert stamp.sec * 10**9 + stamp.nanosec == frame.t
            if sensor == "cam":
                assert msg.encoding == "rgb8"
                np.testing.assert_array_equal(msg.data.reshape(frame.data.shape), frame.data)
            elif sensor == "lidar":
                assert [f.name for f in msg.fields] == list(frame.data.dtype.names)
            elif sensor == "imu":
                assert (msg.linear_acceleration.z, msg.angular_velocity.z) == pytest.approx(
                    (frame.data["accel"][2], frame.data["gyro"][2])
                )
            else:
                assert msg.latitude == float(frame.data["latitude"])
    # One marker per group the same policy makes of the recorded frames.
    groups = list(
        sync_groups(frames, ApproximateTime(["cam", "lidar", "imu", "gps", "wheel"], queue_size=32))
    )
    markers = [m for t, _, m in messages if t == "/hyperframes/groups"]
    assert len(markers) == len(groups) == report.groups > 0
    values = {kv.key: kv.value for kv in markers[0].status[0].values}
    first = groups[0]
    assert values["spread_ns"] == str(first.spread)
    assert values["cam"] == f"{first.frames['cam'].seq}@{first.frames['cam'].t}"


def test_ros2_profile_has_what_ros2_bag_needs(recording: Path, tmp_path: Path) -> None:
    from mcap.reader import make_reader

    out = tmp_path / "out.mcap"
    export_recording(recording, out, to="ros2", sensors=["cam", "imu"], groups="none")
    with open(out, "rb") as f:
        reader = make_reader(f)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert summary is not None
        schemas = {s.name: s.encoding for s in summary.schemas.values()}
        assert schemas == {"sensor_msgs/msg/Image": "ros2msg", "sensor_msgs/msg/Imu": "ros2msg"}
        channels = list(summary.channels.values())
        assert {c.message_encoding for c in channels} == {"cdr"}
        assert all(c.metadata["topic_type_hash"].startswith("RIHS01_") for c in channels)
        meta = {m.name: m.metadata for m in reader.iter_metadata()}
        info = json.loads(meta["rosbag2"]["serialized_metadata"])
        assert info["storage_identifier"] == "mcap"
        assert (
            info["message_count"]
            == sum(t["message_count"] for t in info["topics_with_message_count"])
            == 30 + 200
        )
        count = sum(1 for _ in reader.iter_messages())
        assert count == 230


def test_ros2_bag_directory_and_bag_source_round_trip(recording: Path, tmp_path: Path) -> None:
    out = tmp_path / "bagdir"
    export_recording(recording, out, to="ros2", sensors=["cam", "lidar"], groups="none")
    assert sorted(p.name for p in out.iterdir()) == ["bagdir.mcap", "metadata.yaml"]

    async def read() -> list[Frame]:
        source = BagSource(out, {"/cam": "cam", "/lidar": "lidar"})
        async with source:
            return [f async for f in source.frames()]

    back = anyio.run(read)
    originals = sorted(
        (f for f in recorded(recording) if f.sensor in ("cam", "lidar")),
        key=lambda f: (f.t_arrival, f.sensor),
    )
    back.sort(key=lambda f: (f.t_arrival, f.sensor))
    # A zero header stamp means "unset" in ROS: those frames take the log time.
    assert [(f.sensor, f.t, f.t_arrival) for f in back] == [
        (f.sensor, f.t or f.t_arrival, f.t_arrival) for f in originals
    ]
    assert [f.meta.get("stamp") for f in back[:2]] == ["log_time", "log_time"]
    for a, b in zip(back, originals, strict=True):
        if a.sensor == "cam":
            np.testing.assert_array_equal(a.data, b.data)
        else:
            for name in b.data.dtype.names:
                np.testing.assert_array_equal(a.data[name], b.data[name])


def test_foxglove_profile_has_foxglove_schemas(recording: Path, tmp_path: Path) -> None:
    from mcap.reader import make_reader

    out = tmp_path / "fox.mcap"
    report = export_recording(recording, out, to="foxglove")
    with open(out, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        assert summary is not None
        schema = {
            c.topic: (summary.schemas[c.schema_id].name, summary.schemas[c.schema_id].encoding)
            for c in summary.channels.values()
        }
        messages = [(ch.topic, m) for _, ch, m in reader.iter_messages()]
    assert schema == {
        "/cam": ("foxglove.RawImage", "protobuf"),
        "/lidar": ("foxglove.PointCloud", "protobuf"),
        "/imu": ("hyperframes.imu", "jsonschema"),
        "/gps": ("foxglove.LocationFix", "protobuf"),
        "/wheel": ("hyperframes.series", "jsonschema"),
        "/hyperframes/groups": ("hyperframes.SyncGroup", "jsonschema"),
    }
    frames = recorded(recording)
    imu = [f for f in frames if f.sensor == "imu"]
    imu_msgs = [m for t, m in messages if t == "/imu"]
    assert len(imu_msgs) == len(imu)
    first = json.loads(imu_msgs[0].data)
    assert first["accel"] == pytest.approx(imu[0].data["accel"].tolist())
    assert imu_msgs[0].log_time == imu[0].t_arrival
    group = json.loads(next(m for t, m in messages if t == "/hyperframes/groups").data)
    assert {m["sensor"] for m in group["members"]} == {"cam", "lidar", "imu", "gps", "wheel"}
    assert report.written["/cam"] == sum(f.sensor == "cam" for f in frames)
    # The protobuf payload carries the raw pixels unchanged.
    cam = next(m for t, m in messages if t == "/cam")
    assert next(f for f in frames if f.sensor == "cam").data.tobytes() in cam.data


def test_mp4_decodes_to_the_same_count_and_timestamps(recording: Path, tmp_path: Path) -> None:
    out = tmp_path / "cam.mp4"
    assert cli(["export", str(recording), "-o", str(out), "--to", "mp4", "--sensors", "cam"]) == 0
    cams = [f for f in recorded(recording) if f.sensor == "cam"]
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        pts = [int(fr.pts * stream.time_base * 1_000_000) for fr in container.decode(stream)]
    assert len(pts) == len(cams)
    assert pts == [(f.t - cams[0].t) // 1000 for f in cams]


def test_pcd_sweeps_read_back_field_for_field(recording: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweeps"
    assert cli(["export", str(recording), "-o", str(out), "--to", "pcd", "--sensors", "lidar"]) == 0
    sweeps = [f for f in recorded(recording) if f.sensor == "lidar"]
    files = sorted(out.glob("*.pcd"))
    assert len(files) == len(sweeps)
    back = read_pcd(files[0])
    for name in ("x", "y", "z", "intensity", "ring", "time"):
        np.testing.assert_array_equal(back[name], sweeps[0].data[name])


def test_rerun_view_writes_an_rrd_when_no_viewer_runs(recording: Path, tmp_path: Path) -> None:
    pytest.importorskip("rerun")  # the optional 'rerun' extra; make test installs it
    out = tmp_path / "view.rrd"
    report = export_recording(recording, out, to="rerun", sensors=["cam", "lidar", "imu"])
    assert report.groups > 0
    assert report.skipped == {}
    assert out.read_bytes()[:4] == b"RRF2"
    assert out.stat().st_size > 10_000


def test_export_command_reports_errors_clearly(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.mcap"
    assert cli(["export", str(recording), "-o", str(out), "--sensors", "nope"]) == 2
    assert "has no sensor 'nope'" in " ".join(capsys.readouterr().out.split())
    assert cli(["export", str(recording), "-o", str(out), "--groups", "nearest:lidar:30"]) == 0
    assert "sync groups" in capsys.readouterr().out


def test_a_topic_keeps_one_message_type_and_a_second_is_refused_naming_both() -> None:
    from recordings.outputs.encoders._sensors import one_type_per_topic

    one_type_per_topic("/imu", "sensor_msgs/msg/Imu", "sensor_msgs/msg/Imu")  # the same: fine
    with pytest.raises(ValueError, match="topic /imu already carries sensor_msgs/msg/Imu, not"):
        one_type_per_topic("/imu", "sensor_msgs/msg/Imu", "sensor_msgs/msg/Image")
