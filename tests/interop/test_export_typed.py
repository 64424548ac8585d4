"""Typed exports: time series whose fields fit a standard message are written as it.

The references: Python's csv module reads the real EuRoC files, rosbags and the
mcap reader read the exports back.
"""

from __future__ import annotations

import csv
import json
import socket
from pathlib import Path

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import NmeaSource, TimeSeriesSource
from fusion import VirtualClock, use_clock
from fusion._frames import Frame, SensorSpec
from hyperframes.config import build_pipeline, load_config
from recordings import Recorder, open_recording
from recordings.outputs._export import export_recording
from recordings.outputs.encoders._shapes import Shape, match, parse_types

CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "csv"
EUROC_IMU = CSV / "kimera_euroc_imu0_data.csv"
EUROC_GT = CSV / "kimera_euroc_gt0_data.csv"
NMEA = CSV.parent / "timeseries" / "pynmea2_data.log"


def record_config(tmp_path: Path, source: str) -> Path:
    config = tmp_path / "s.toml"
    config.write_text(f"[[sources]]\n{source}\n")
    out = tmp_path / "s.hfr"
    pipeline = build_pipeline(load_config(config), recorder_path=out)

    async def run() -> object:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await pipeline.run()

    anyio.run(run)
    return out


def ros_messages(path: Path) -> dict[str, tuple[str, list[object]]]:
    from rosbags.highlevel import AnyReader

    out: dict[str, tuple[str, list[object]]] = {}
    with AnyReader([path]) as reader:
        for conn, _, raw in reader.messages():
            msgs = out.setdefault(conn.topic, (conn.msgtype, []))[1]
            msgs.append(reader.deserialize(raw, conn.msgtype))
    return out


def stamp(msg: object) -> int:
    s = msg.header.stamp  # type: ignore[attr-defined]
    return int(s.sec) * 10**9 + int(s.nanosec)


def test_a_real_csv_imu_round_trips_to_sensor_msgs_imu(tmp_path: Path) -> None:
    head = tmp_path / "imu0.csv"  # the first 10 s of the real log (keeps the test quick)
    head.write_text("".join(EUROC_IMU.read_text().splitlines(keepends=True)[:2001]))
    with head.open(newline="") as f:  # the reference
        rows = list(csv.reader(f))[1:]
    hfr = record_config(
        tmp_path,
        f'type = "timeseries_csv"\nname = "imu"\nkind = "imu"\npath = "{head}"\n'
        'time_column = "#timestamp [ns]"\ntime_unit = "ns"',
    )
    report = export_recording(hfr, tmp_path / "imu.mcap", to="ros2", groups="none")
    assert report.complete
    msgtype, msgs = ros_messages(tmp_path / "imu.mcap")["/imu"]
    assert msgtype == "sensor_msgs/msg/Imu"
    assert len(msgs) == len(rows) == 2000
    for row, msg in zip(rows[::7], msgs[::7], strict=True):
        assert stamp(msg) == int(row[0])
        gyro, accel = msg.angular_velocity, msg.linear_acceleration  # type: ignore[attr-defined]
        assert [gyro.x, gyro.y, gyro.z] == [float(v) for v in row[1:4]]
        assert [accel.x, accel.y, accel.z] == [float(v) for v in row[4:7]]
        assert msg.header.frame_id == "imu"  # type: ignore[attr-defined]
        assert msg.orientation_covariance[0] == -1.0  # type: ignore[attr-defined]


async def test_a_udp_imu_round_trips_to_sensor_msgs_imu(tmp_path: Path) -> None:
    source = TimeSeriesSource.from_udp(0, name="imu", kind="imu")
    samples = [
        {"t": 10**9 + i * 5_000_000, "ax": 0.1 * i, "ay": -0.2, "az": 9.81, "gx": 0.01,
         "gy": 0.0, "gz": -0.001 * i, "qx": 0.0, "qy": 0.0, "qz": 0.0, "qw": 1.0}
        for i in range(20)
    ]  # fmt: skip
    got: list[Frame] = []
    with anyio.fail_after(10):
        async with source, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in source.frames():
                    got.append(frame)
                    if len(got) == len(samples):
                        tg.cancel_scope.cancel()

            tg.start_soon(consume)
            port = await source.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for sample in samples:
                    sock.sendto(json.dumps(sample).encode(), ("127.0.0.1", port))
    hfr = tmp_path / "udp.hfr"
    with Recorder(hfr, sensors=[source.spec]) as rec:
        for frame in got:
            rec.write(frame)
    export_recording(hfr, tmp_path / "udp.mcap", to="ros2", groups="none")
    msgtype, msgs = ros_messages(tmp_path / "udp.mcap")["/imu"]
    assert msgtype == "sensor_msgs/msg/Imu"
    with open_recording(hfr) as log:
        recorded = list(log.frames())
    assert [stamp(m) for m in msgs] == [f.t for f in recorded]
    for sample, msg in zip(samples, msgs, strict=True):
        a, g, q = msg.linear_acceleration, msg.angular_velocity, msg.orientation  # type: ignore[attr-defined]
        assert (a.x, a.y, a.z) == (sample["ax"], sample["ay"], sample["az"])
        assert (g.x, g.y, g.z) == (sample["gx"], sample["gy"], sample["gz"])
        assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 1.0)
        assert msg.orientation_covariance[0] == 0.0  # type: ignore[attr-defined]


def test_ground_truth_poses_become_odometry_and_an_override_keeps_an_array(
    tmp_path: Path,
) -> None:
    head = tmp_path / "gt_head.csv"  # the first 20 s of the real file
    head.write_text("".join(EUROC_GT.read_text().splitlines(keepends=True)[:801]))
    with head.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    hfr = record_config(
        tmp_path,
        f'type = "timeseries_csv"\nname = "gt"\npath = "{head}"\n'
        'time_column = "#timestamp"\ntime_unit = "ns"',
    )
    export_recording(hfr, tmp_path / "gt.mcap", to="ros2", groups="none")
    msgtype, msgs = ros_messages(tmp_path / "gt.mcap")["/gt"]
    assert msgtype == "nav_msgs/msg/Odometry"
    assert len(msgs) == len(rows)
    row, msg = rows[100], msgs[100]
    p, q = msg.pose.pose.position, msg.pose.pose.orientation  # type: ignore[attr-defined]
    v = msg.twist.twist.linear  # type: ignore[attr-defined]
    assert [p.x, p.y, p.z] == [float(x) for x in row[1:4]]
    assert [q.w, q.x, q.y, q.z] == [float(x) for x in row[4:8]]  # EuRoC writes w first
    assert [v.x, v.y, v.z] == [float(x) for x in row[8:11]]
    assert stamp(msg) == int(row[0])
    # the gyro-bias columns (b_w_RS_S_*) are not an angular velocity
    w = msg.twist.twist.angular  # type: ignore[attr-defined]
    assert (w.x, w.y, w.z) == (0.0, 0.0, 0.0)
    # poses only, and a plain array when asked
    report = export_recording(
        hfr,
        tmp_path / "arr.mcap",
        to="ros2",
        groups="none",
        types={"gt": "std_msgs/msg/Float64MultiArray"},
    )
    assert report.complete
    assert ros_messages(tmp_path / "arr.mcap")["/gt"][0] == "std_msgs/msg/Float64MultiArray"


def test_a_type_the_fields_do_not_fit_skips_the_frames_and_says_why(tmp_path: Path) -> None:
    wheel = np.array(
        [(i, 1.5 * i, i) for i in range(3)], [("t", "i8"), ("speed", "f8"), ("ticks", "i4")]
    )
    hfr = tmp_path / "w.hfr"
    with Recorder(hfr, sensors=[SensorSpec("wheel", kind="timeseries")]) as rec:
        for i in range(3):
            rec.write(Frame("wheel", i, i, wheel[i : i + 1]))
    report = export_recording(
        hfr, tmp_path / "w.mcap", to="ros2", groups="none", types={"wheel": "sensor_msgs/msg/Imu"}
    )
    assert report.skipped == {
        (
            "wheel",
            "its fields do not fit sensor_msgs/msg/Imu (it needs accel, gyro: see shapes.py)",
        ): 3
    }
    with pytest.raises(ValueError, match="no typed export for 'sensor_msgs/msg/Foo'"):
        parse_types(["wheel=sensor_msgs/msg/Foo"])
    with pytest.raises(ValueError, match="SENSOR=TYPE"):
        parse_types(["sensor_msgs/msg/Imu"])
    with pytest.raises(ValueError, match="does not have"):
        export_recording(hfr, tmp_path / "x.mcap", types={"cam": "imu"})


def test_a_toml_export_type_travels_with_the_recording(tmp_path: Path) -> None:
    head = tmp_path / "imu_head.csv"  # the first 2 s of the real log
    head.write_text("".join(EUROC_IMU.read_text().splitlines(keepends=True)[:401]))
    hfr = record_config(
        tmp_path,
        f'type = "timeseries_csv"\nname = "imu"\npath = "{head}"\n'
        'time_column = "#timestamp [ns]"\ntime_unit = "ns"\n'
        'export_type = "std_msgs/msg/Float64MultiArray"',
    )
    with open_recording(hfr) as log:
        assert log.summary().sensors["imu"].spec.meta["export_type"].endswith("Float64MultiArray")
    export_recording(hfr, tmp_path / "a.mcap", to="ros2", groups="none")
    assert ros_messages(tmp_path / "a.mcap")["/imu"][0] == "std_msgs/msg/Float64MultiArray"
    # the command line wins over the recorded type
    export_recording(hfr, tmp_path / "b.mcap", to="ros2", groups="none", types={"imu": "imu"})
    assert ros_messages(tmp_path / "b.mcap")["/imu"][0] == "sensor_msgs/msg/Imu"


async def test_nmea_fixes_become_navsatfix_and_foxglove_location_fixes(tmp_path: Path) -> None:
    source = NmeaSource(NMEA, name="gps", date="2024-05-01")
    async with source:
        frames = [f async for f in source.frames()]
    hfr = tmp_path / "gps.hfr"
    with Recorder(hfr, sensors=[source.spec]) as rec:
        for frame in frames:
            rec.write(frame)
    export_recording(hfr, tmp_path / "gps.mcap", to="ros2", groups="none")
    msgtype, msgs = ros_messages(tmp_path / "gps.mcap")["/gps"]
    assert msgtype == "sensor_msgs/msg/NavSatFix"
    row, fix = frames[0].data[0], msgs[0]
    assert fix.latitude == row["lat"]  # type: ignore[attr-defined]
    assert fix.longitude == row["lon"]  # type: ignore[attr-defined]
    assert fix.altitude == pytest.approx(100.0 - 33.9)  # type: ignore[attr-defined]
    assert fix.status.status == 0  # type: ignore[attr-defined]  # GGA quality 1: a fix
    assert stamp(fix) == frames[0].t
    from mcap.reader import make_reader

    export_recording(hfr, tmp_path / "fox.mcap", to="foxglove", groups="none")
    with (tmp_path / "fox.mcap").open("rb") as f:
        reader = make_reader(f)
        (schema, channel, message), *_ = list(reader.iter_messages())
    assert (channel.topic, schema.name) == ("/gps", "foxglove.LocationFix")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()  # decoded from the file's own schema
    for proto in descriptor_pb2.FileDescriptorSet.FromString(schema.data).file:
        pool.Add(proto)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))
    decoded = cls.FromString(message.data)
    assert decoded.latitude == row["lat"]
    assert decoded.longitude == row["lon"]
    assert decoded.altitude == pytest.approx(100.0 - 33.9)
    assert decoded.frame_id == "gps"


def test_the_shape_table() -> None:
    assert match(("t", "ax", "ay", "az", "gx", "gy", "gz"), "imu") is not None
    assert match(("t", "ax", "ay", "az", "gz"), "imu") is None  # no whole gyro
    assert match(("x", "y", "z", "qx", "qy", "qz", "qw"), "lidar") is None  # a point cloud
    pose = match(("t", "x", "y", "z", "qw", "qx", "qy", "qz"), "timeseries")
    assert isinstance(pose, Shape)
    assert pose.kind == "pose"
    assert pose.fields["orientation"] == ("qx", "qy", "qz", "qw")
    gnss = match(("Time (s)", "Latitude (°)", "Longitude (°)", "Height (m)"), "timeseries")
    assert isinstance(gnss, Shape)
    assert gnss.kind == "gnss"
    assert match(("t", "yaw", "max", "wax"), "timeseries") is None


def test_rerun_plots_a_series_values_not_its_device_time(tmp_path: Path) -> None:
    pytest.importorskip("rerun")  # the optional 'rerun' extra; make test installs it
    from rerun.chunk import RrdReader

    names = ("t", "ax", "ay", "az", "gx", "gy", "gz")
    rows = np.array(
        [(i * 5, 0.1, 0.2, 9.8, 0.0, 0.0, 0.01) for i in range(4)], [(n, "f8") for n in names]
    )
    imu = rows.astype([("t", "i8"), *((n, "f8") for n in names[1:])])
    hfr = tmp_path / "imu.hfr"
    with Recorder(hfr, sensors=[SensorSpec("imu", kind="imu")]) as rec:
        for i in range(4):
            rec.write(Frame("imu", i, i * 5, imu[i : i + 1]))
    export_recording(hfr, tmp_path / "imu.rrd", to="rerun", groups="none")
    paths = {chunk.entity_path for chunk in RrdReader(tmp_path / "imu.rrd").stream()}
    assert {f"/imu/{n}" for n in names[1:]} <= paths
    assert "/imu/t" not in paths


def test_foxglove_profile_writes_the_matching_schemas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcap.reader import make_reader
    from rosbags.typesys import Stores, get_typestore

    from hyperframes.cli import main as cli

    pose_t = np.dtype([("t", "i8"), *((n, "f8") for n in ("x", "y", "z", "qx", "qy", "qz", "qw"))])
    odom_t = np.dtype(
        [
            ("t", "i8"),
            *((n, "f8") for n in ("px", "py", "pz", "qw", "qx", "qy", "qz", "vx", "vy", "vz")),
        ]
    )
    imu_t = np.dtype([("t", "i8"), *((n, "f4") for n in ("ax", "ay", "az", "gx", "gy", "gz"))])
    hfr = tmp_path / "poses.hfr"
    specs = [SensorSpec(n, kind="timeseries") for n in ("pose", "odom")]
    with Recorder(hfr, sensors=[*specs, SensorSpec("imu", kind="imu")]) as rec:
        for i in range(3):
            t = 10**9 * (i + 1)
            rec.write(Frame("pose", i, t, np.array([(t, i, 2.0, 3.0, 0, 0, 0, 1)], pose_t)))
            rec.write(Frame("odom", i, t, np.array([(t, i, 0, 0, 1, 0, 0, 0, 0.5, 0, 0)], odom_t)))
            rec.write(Frame("imu", i, t, np.array([(t, 0.5, 0, 9.75, 0, 0, 0.25)], imu_t)))
    assert cli(["export", str(hfr), "-o", str(tmp_path / "f.mcap"), "--profile", "foxglove"]) == 0
    with (tmp_path / "f.mcap").open("rb") as f:
        reader = make_reader(f)
        seen = [(ch.topic, s.name, s.encoding, m.data) for s, ch, m in reader.iter_messages()]
    schemas = {(topic, name, enc) for topic, name, enc, _ in seen if topic != "/hyperframes/groups"}
    assert schemas == {
        ("/pose", "foxglove.PoseInFrame", "protobuf"),
        ("/odom", "nav_msgs/msg/Odometry", "ros2msg"),
        ("/imu", "hyperframes.imu", "jsonschema"),
    }
    store = get_typestore(Stores.ROS2_HUMBLE)
    odoms = [
        store.deserialize_cdr(d, "nav_msgs/msg/Odometry") for t, _, _, d in seen if t == "/odom"
    ]
    assert [o.pose.pose.position.x for o in odoms] == [0.0, 1.0, 2.0]
    assert odoms[0].twist.twist.linear.x == 0.5
    first = json.loads(next(d for t, _, _, d in seen if t == "/imu"))
    assert first["accel"] == [0.5, 0.0, 9.75]
    assert first["gyro"] == [0.0, 0.0, 0.25]
    capsys.readouterr()
    assert cli(["export", str(hfr), "-o", str(tmp_path / "g.mcap"), "--type", "pose=Foo"]) == 2
    assert "no typed export for 'Foo'" in capsys.readouterr().out


_NAME_PARTS = ["a", "g", "w", "q", "p", "v", "acc", "gyro", "lat", "lon", "alt", "t", "b", "yaw"]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.builds(
                lambda p, a, u: p + a + u,
                st.sampled_from([*_NAME_PARTS, "", "x_", "w_RS_S_", "#"]),
                st.sampled_from(["", "x", "y", "z", "w", "_x", "_y", "_z", "_w", "itude"]),
                st.sampled_from(["", " [m]", " (m/s^2)", "[", ")"]),
            ),
            st.text(max_size=12),
        ),
        max_size=16,
        unique=True,
    ),
    st.sampled_from(["imu", "gnss", "timeseries", "generic", "lidar", "camera", "can"]),
    st.sampled_from([None, "imu", "gnss", "odometry", "pose", "series"]),
)
def test_a_shape_names_only_fields_there_are(
    names: list[str], kind: str, forced: str | None
) -> None:
    shape = match(tuple(names), kind, forced)
    if isinstance(shape, Shape):
        used = [n for fields in shape.fields.values() for n in fields]
        assert set(used) <= set(names)
        assert len(used) == len(set(used))  # no field plays two parts
        assert forced in (None, shape.kind)
        assert kind not in ("lidar", "camera") or forced is not None
    elif isinstance(shape, str):
        assert forced not in (None, "series")
