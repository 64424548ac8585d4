"""``OusterSource(osf=...)`` reads Ouster's own recording format through ouster-sdk's OSF
reader: ouster-sdk's real OSF test file (an OS-0-8, 10 scans, RANGE and REFLECTIVITY
kept) checked against ouster-sdk's own ``XYZLut`` on the same scans; an OSF that
ouster-sdk's writer makes from the real firmware-3 capture gives the very frames the
capture path gives; a two-lidar OSF with IMU samples; ``record``/``info``/``replay``
as processes; without ouster-sdk, a one-line error naming what to install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters.errors import SourceOpenError
from adapters.lidar import OusterSource
from adapters.lidar._ouster import osf_sensor_names
from adapters.lidar._pcap import read_udp
from fusion._frames import Frame
from fusion.errors import ConfigError
from recordings import open_recording

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "ouster"
OSF = DATA / "osf_fw_3.2_10scans.osf"
FW3 = DATA / "OS-1-128_767798045_1024x10_20230712_120049"


def read(source: OusterSource) -> list[Frame]:
    frames: list[Frame] = []

    async def run() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    anyio.run(run)
    return frames


def sdk_frames(path: Path) -> list[list[Any]]:
    """Every frame set of an OSF as ouster-sdk's own reader gives it."""
    from ouster.sdk import osf

    return [list(frames) for frames in osf.OsfFrameSetSource(str(path))]


def test_osf_scans_are_ouster_sdks_xyzlut_points() -> None:
    from ouster.sdk import core

    source = OusterSource(osf=OSF)
    frames = read(source)
    reference = [fs[0] for fs in sdk_frames(OSF)]
    assert [s.name for s in source.specs] == ["lidar"]  # no IMU fields in this file
    assert len(frames) == len(reference) == 10
    assert source.osf_contents is not None
    info = source.osf_contents.streams[0].info
    lut = core.XYZLut(info)
    for frame, scan in zip(frames, reference, strict=True):
        rng = np.asarray(scan.field("RANGE"))  # (beams, columns), staggered as sent
        valid_columns = (np.asarray(scan.status) & 1) != 0
        valid = (rng > 0) & valid_columns[None, :]
        points = frame.data
        assert len(points) == int(valid.sum())  # the same valid point count
        xyz = np.asarray(lut(scan))  # (beams, columns, 3), metres
        at = (points["beam"], points["column"])
        want = xyz[at]
        got = np.stack([points["x"], points["y"], points["z"]], axis=1)
        assert np.abs(got - want).max() < 1e-3  # within 1 mm
        np.testing.assert_array_equal(points["range"], rng[at])
        np.testing.assert_array_equal(
            points["reflectivity"], np.asarray(scan.field("REFLECTIVITY"))[at]
        )
        assert not points["signal"].any()  # not kept
        assert not points["near_ir"].any()
        stamps = np.asarray(scan.timestamp, np.int64)
        first = int(np.flatnonzero(valid_columns)[0])
        assert frame.t_sensor == stamps[first]  # the first valid column's time
        np.testing.assert_array_equal(points["t"], stamps[points["column"]] - stamps[first])
        assert frame.meta["scan_id"] == scan.frame_id
        assert frame.meta["valid_columns"] == int(valid_columns.sum())
        assert frame.t_arrival == scan.get_last_valid_packet_timestamp()
    assert source.ledgers()["lidar"].as_dict()["emitted"] == 10
    assert source.statistics()["other_messages"] == 1  # the sensor-info stream
    spec = source.specs[0]
    assert spec.meta["serial"] == str(info.sn)
    assert spec.meta["model"] == "OS-0-8"


def write_fw3_osf(out: Path) -> None:
    """The real firmware-3 capture's scan, batched by ouster-sdk's FrameBatcher and saved
    by ouster-sdk's OSF writer."""
    from ouster.sdk import core, osf

    info = core.SensorInfo(FW3.with_suffix(".json").read_text())
    fmt = core.PacketFormat(info)
    batcher, frame, frames = core.FrameBatcher(info), core.LidarFrame(info), []
    for d in read_udp(FW3.with_suffix(".pcap")):
        if d.dst_port != 7502:
            continue
        packet = core.LidarPacket(fmt)
        packet.buf[:] = np.frombuffer(d.payload, np.uint8)
        packet.host_timestamp = d.t_capture
        if batcher.batch(packet, frame):
            frames.append(frame)
            frame = core.LidarFrame(info)
    frames.append(frame)
    writer = osf.Writer(str(out), info)
    for f in frames:
        writer.save(0, f)
    writer.close()


def test_an_osf_of_a_capture_gives_the_frames_the_capture_gives(tmp_path: Path) -> None:
    out = tmp_path / "fw3.osf"
    write_fw3_osf(out)
    capture = OusterSource(FW3.with_suffix(".pcap"), metadata=FW3.with_suffix(".json"))
    want = [f for f in read(capture) if f.sensor == "lidar"]
    source = OusterSource(osf=out)
    got = read(source)
    assert len(got) == len(want) == 1
    for a, b in zip(got, want, strict=True):
        assert a.data.dtype == b.data.dtype
        np.testing.assert_array_equal(a.data, b.data)  # every field of every point
        assert a.t_sensor == b.t_sensor
        assert a.meta == b.meta  # partial, packets, columns, holes, scan id
    spec, capture_spec = source.specs[0], capture.specs[0]
    assert {k: v for k, v in spec.meta.items() if k != "osf_stream"} == capture_spec.meta


def write_two_lidars(out: Path) -> list[Any]:
    """Three real scans for the first lidar; the same scans, with four IMU samples each
    (the ACCEL32_GYRO32_NMEA fields), for a second lidar of another serial."""
    from ouster.sdk import core, osf

    source = osf.OsfFrameSetSource(str(OSF))
    info = source.sensor_info[0]
    second = core.SensorInfo(info.to_json_string())
    second.sn = 999
    writer = osf.Writer(str(out), [info, second])
    saved: list[Any] = []
    for k, frames in enumerate(source):
        if k == 3:
            break
        scan: Any = frames[0]
        writer.save(0, scan)
        copy = core.LidarFrame(scan)
        stamps = np.array([1000, 2000, 3000, 0], np.uint64)
        stamps[:3] += np.uint64(scan.timestamp[0])  # the last slot holds no sample
        acc = np.arange(12, dtype=np.float32).reshape(4, 3) / 10 + k
        gyro = -np.arange(12, dtype=np.float32).reshape(4, 3)
        for name, value in (("IMU_ACC", acc), ("IMU_GYRO", gyro), ("IMU_TIMESTAMP", stamps)):
            copy.add_field(name, value, core.FieldClass.FRAME_FIELD)
        writer.save(1, copy)
        saved.append(copy)
    writer.close()
    return saved


def test_every_lidar_stream_is_a_sensor_and_imu_samples_are_frames(tmp_path: Path) -> None:
    out = tmp_path / "two.osf"
    write_two_lidars(out)
    assert osf_sensor_names(out, "os") == ["os", "os_1", "os_1_imu"]
    source = OusterSource(osf=out, name="os")
    assert [(s.name, s.kind) for s in source.specs] == [
        ("os", "lidar"),
        ("os_1", "lidar"),
        ("os_1_imu", "imu"),
    ]
    assert source.specs[1].meta["serial"] == "999"
    frames = read(source)
    by = {n: [f for f in frames if f.sensor == n] for n in ("os", "os_1", "os_1_imu")}
    assert [len(v) for v in by.values()] == [3, 3, 9]  # 3 of 4 IMU slots hold a sample
    for a, b in zip(by["os"], by["os_1"], strict=True):
        np.testing.assert_array_equal(a.data, b.data)
    # the IMU as ouster-sdk reads it back: g and deg/s, turned into m/s^2 and rad/s
    scans = [f for fs in sdk_frames(out) for f in fs if f is not None]
    reference = [f for f in scans if f.sensor_info.sn == 999]
    assert len(reference) == 3
    want = []
    for scan in reference:
        stamps = np.asarray(scan.field("IMU_TIMESTAMP"), np.int64)
        for i in np.flatnonzero(stamps):
            acc = np.asarray(scan.field("IMU_ACC"))[i] * 9.80665
            gyro = np.asarray(scan.field("IMU_GYRO"))[i] * np.pi / 180
            want.append((int(stamps[i]), acc, gyro))
    assert len(want) == 9
    for frame, (t, acc, gyro) in zip(by["os_1_imu"], want, strict=True):
        assert frame.t_sensor == t
        np.testing.assert_allclose(frame.data["accel"], acc, rtol=1e-6)
        np.testing.assert_allclose(frame.data["gyro"], gyro, rtol=1e-6)
        assert frame.data["ax"] == pytest.approx(acc[0])
    ledgers = {k: v.as_dict() for k, v in source.ledgers().items()}
    assert ledgers["os_1_imu"]["received"] == ledgers["os_1_imu"]["emitted"] == 9
    assert ledgers["os"]["received"] == ledgers["os"]["emitted"] == 3


def test_osf_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="osf= alone"):
        OusterSource(FW3.with_suffix(".pcap"), osf=OSF)
    with pytest.raises(ConfigError, match="metadata="):
        OusterSource()
    with pytest.raises(SourceOpenError, match="carry no IMU"):
        OusterSource(osf=OSF, require_imu=True)
    with pytest.raises(SourceOpenError, match="does not exist"):
        OusterSource(osf=tmp_path / "none.osf")
    bad = tmp_path / "bad.osf"
    bad.write_bytes(OSF.read_bytes()[:300])
    with pytest.raises(SourceOpenError, match="no lidar stream: its metadata names no lidar"):
        OusterSource(osf=bad)
    bad.write_bytes(b"not an OSF file at all" * 10)
    with pytest.raises(SourceOpenError, match="not a readable Ouster OSF file"):
        OusterSource(osf=bad)


def test_without_ouster_sdk_a_one_line_error_says_what_to_install(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ouster' or name.startswith('ouster.'):\n"
        "            raise ImportError('blocked for the test: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from adapters.lidar import OusterSource\n"
        "from adapters.errors import SourceOpenError\n"
        "try:\n"
        f"    OusterSource(osf={str(OSF)!r})\n"
        "except SourceOpenError as err:\n"
        "    print('ERROR', err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith("ERROR"), done.stdout
    assert "needs ouster-sdk: pip install --no-deps 'ouster-sdk>=1.0.1,<1.1'" in lines[0]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def test_record_info_and_replay_of_an_osf_as_processes(tmp_path: Path) -> None:
    config = tmp_path / "osf.toml"
    config.write_text(f'[[sources]]\ntype = "ouster"\nname = "os"\nosf = "{OSF}"\n')
    out = tmp_path / "osf.hfr"
    done = cli("record", str(config), "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = cli("info", str(out), "--json")
    assert summary.returncode == 0, summary.stderr
    doc = json.loads(summary.stdout)
    assert doc["sensors"]["os"]["frames"] == 10
    assert doc["ledger"]["os"]["unit"] == "message"
    want = read(OusterSource(osf=OSF, name="os"))
    with open_recording(out) as log:
        recorded = [f for f in log.frames() if f.sensor == "os"]
    assert [f.t_sensor for f in recorded] == [f.t_sensor for f in want]
    for a, b in zip(recorded, want, strict=True):
        np.testing.assert_array_equal(np.asarray(a.data), b.data)
    played = cli("replay", str(out), "--fast")
    assert played.returncode == 0, played.stdout + played.stderr
    # info on the OSF itself: scans, sensors, time range, as ouster-sdk's reader sees them
    own = cli("info", str(OSF), "--json")
    assert own.returncode == 0, own.stderr
    facts = json.loads(own.stdout)
    scans = [fs[0] for fs in sdk_frames(OSF)]
    assert facts["format"] == "osf"
    assert facts["scans"] == len(scans) == 10
    assert facts["sensor_names"] == ["lidar"]
    assert facts["sensors"][0]["serial"] == str(scans[0].sensor_info.sn)
    from ouster.sdk import osf

    reader = osf.Reader(str(OSF))
    assert (facts["start_ns"], facts["end_ns"]) == (reader.start_ts, reader.end_ts)
    # the title names the file whole, however long its path (rich wraps a title to its
    # table: a clone at another path broke it across two lines)
    deep = tmp_path / ("d" * 80) / OSF.name
    deep.parent.mkdir()
    deep.write_bytes(OSF.read_bytes())
    table = cli("info", str(deep))
    assert table.returncode == 0, table.stderr
    assert f"{deep} (Ouster OSF)" in table.stdout.splitlines()[0]
    assert "OS-0-8" in table.stdout
