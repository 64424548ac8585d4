"""OusterSource on the real OS-1-32 capture, against ouster-sdk's own Python path
(``open_source`` + ``XYZLut``), and on streams made from it: partial scans, IMU
packets, bad packets and metadata that does not fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lidar_testdata import write_pcap
from ouster_testdata import (
    OUSTER_JSON,
    OUSTER_PCAP,
    VALID_POINTS,
    imu_packet,
    lidar_packets,
    next_scan,
    stream,
)

from adapters import OusterSource
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar import OUSTER_DTYPE
from fusion._frames import Frame


async def decode(
    pcap: Path, metadata: Path = OUSTER_JSON, **kwargs: Any
) -> tuple[list[Frame], OusterSource]:
    async with OusterSource(pcap, metadata=metadata, **kwargs) as source:
        frames = [frame async for frame in source.frames()]
    return frames, source


def balanced(source: OusterSource) -> None:
    """The ledger invariant at the end of a stream, for every sensor."""
    for name, stats in source.ledgers().items():
        assert stats.pending == 0, (name, stats)
        assert stats.received == stats.emitted + stats.lost_total, (name, stats)


def reference_scan() -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """ouster-sdk's documented path: xyz (H, W, 3), the fields, the column timestamps."""
    import ouster.sdk as osdk
    from ouster.sdk import core

    source = osdk.open_source(str(OUSTER_PCAP), meta=[str(OUSTER_JSON)])
    try:
        lut = core.XYZLut(source.sensor_info[0])
        (scan,) = [frames[0] for frames in source]
        fields = {name: np.asarray(scan.field(name)) for name in scan.fields}
        return lut(scan), fields, np.asarray(scan.timestamp, np.int64)
    finally:
        source.close()


@pytest.mark.parametrize("decoder", ["numba", "numpy", "ouster-sdk"])
async def test_the_capture_decodes_to_ouster_sdks_points_within_a_millimetre(decoder: str) -> None:
    frames, source = await decode(OUSTER_PCAP, decoder=decoder)
    assert source.assembler.decoder == decoder
    assert (source.assembler.layout is not None) == (decoder != "ouster-sdk")
    (frame,) = frames
    points = frame.data
    assert points.dtype == OUSTER_DTYPE
    assert len(points) == VALID_POINTS
    xyz, fields, stamps = reference_scan()
    rng = fields["RANGE"]
    assert int((rng > 0).sum()) == len(points)  # the same valid-point count
    beams = np.argsort(
        np.argsort(np.asarray(json.loads(OUSTER_JSON.read_text())["beam_altitude_angles"]))
    )
    row_of_ring = np.argsort(beams)
    rows, cols = row_of_ring[points["ring"]], points["column"].astype(np.int64)
    np.testing.assert_array_equal(points["beam"], rows)
    assert (rng[rows, cols] > 0).all()
    assert len(set(zip(rows.tolist(), cols.tolist(), strict=True))) == len(points)
    for axis, name in enumerate("xyz"):
        np.testing.assert_allclose(points[name], xyz[rows, cols, axis], atol=1e-3)
    np.testing.assert_array_equal(points["range"], rng[rows, cols])
    np.testing.assert_array_equal(points["signal"], fields["SIGNAL"][rows, cols])
    np.testing.assert_array_equal(points["reflectivity"], fields["REFLECTIVITY"][rows, cols])
    np.testing.assert_array_equal(points["near_ir"], fields["NEAR_IR"][rows, cols])
    np.testing.assert_array_equal(points["intensity"], points["signal"].astype(np.float32))
    assert frame.t_sensor == stamps[0] == 3_577_133_606_620
    np.testing.assert_array_equal(points["t"], stamps[cols] - stamps[0])
    assert points["t"].max() == stamps[-1] - stamps[0]  # about 100 ms: 10 Hz
    assert frame.t_arrival == lidar_packets()[-1][0]
    assert frame.meta == {
        "partial": False,
        "packets": 64,
        "valid_columns": 1024,
        "missing_columns": [],
        "scan_id": 638,
    }
    assert source.errors == {}
    assert source.ledgers()["lidar"].as_dict() == {
        "unit": "datagram", "received": 64, "emitted": 64, "frames": 1, "lost": {}
    }  # fmt: skip
    assert [s.name for s in source.specs] == ["lidar", "lidar_imu"]
    assert (source.spec.meta["model"], source.spec.meta["beams"]) == ("OS-1-32-G", 32)


async def test_current_layout_metadata_decodes_the_same_as_the_legacy_one(tmp_path: Path) -> None:
    from ouster.sdk import core

    current = core.SensorInfo(OUSTER_JSON.read_text()).to_json_string()
    assert "lidar_data_format" in json.loads(current)  # the 2.2+ layout, not the legacy one
    assert "lidar_data_format" not in json.loads(OUSTER_JSON.read_text())
    (tmp_path / "current.json").write_text(current)
    (legacy,), _ = await decode(OUSTER_PCAP)
    (again,), _ = await decode(OUSTER_PCAP, tmp_path / "current.json")
    np.testing.assert_array_equal(legacy.data, again.data)


async def test_a_pcapng_made_by_editcap_decodes_to_the_same_scan(tmp_path: Path) -> None:
    editcap = shutil.which("editcap")
    assert editcap is not None, "editcap (wireshark-common) is installed by `make system-deps`"
    command = [editcap, "-F", "pcapng", str(OUSTER_PCAP), str(tmp_path / "o.pcapng")]
    await anyio.run_process(command, check=True)
    assert (tmp_path / "o.pcapng").read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    (want,), _ = await decode(OUSTER_PCAP)
    (got,), source = await decode(tmp_path / "o.pcapng")
    np.testing.assert_array_equal(got.data, want.data)
    assert (got.t_sensor, got.t_arrival, got.meta) == (want.t_sensor, want.t_arrival, want.meta)
    balanced(source)


@pytest.mark.parametrize("decoder", ["numba", "numpy", "ouster-sdk"])
async def test_scans_imu_and_lost_packets_of_a_longer_stream(tmp_path: Path, decoder: str) -> None:
    records = stream(3)
    lidar = [r for r in records if r[1] == 7502]
    dropped = {lidar[64 + 10][2], lidar[64 + 63][2], lidar[128][2], lidar[129][2]}
    write_pcap(tmp_path / "s.pcap", [r for r in records if r[2] not in dropped])
    frames, source = await decode(tmp_path / "s.pcap", decoder=decoder)
    scans = [f for f in frames if f.sensor == "lidar"]
    imu = [f for f in frames if f.sensor == "lidar_imu"]
    assert [f.meta["scan_id"] for f in scans] == [638, 639, 640]
    assert [f.meta["partial"] for f in scans] == [False, True, True]
    assert [f.meta["packets"] for f in scans] == [64, 62, 62]
    assert scans[1].meta["missing_columns"] == [[160, 176], [1008, 1024]]
    assert scans[2].meta["missing_columns"] == [[0, 32]]
    assert [f.meta["valid_columns"] for f in scans] == [1024, 992, 992]
    (first,), _ = await decode(OUSTER_PCAP, decoder="ouster-sdk")
    np.testing.assert_array_equal(scans[0].data, first.data)
    kept = ~np.isin(first.data["column"], np.r_[160:176, 1008:1024])
    np.testing.assert_array_equal(
        scans[1].data[["x", "y", "z", "range"]], first.data[kept][["x", "y", "z", "range"]]
    )
    assert scans[1].t_sensor == first.t_sensor + 100_000_000
    column_32 = int(first.data["t"][first.data["column"] == 32][0])  # its first column now
    assert scans[2].t_sensor == first.t_sensor + 200_000_000 + column_32
    # the lost columns: a warning per scan (scan 640's leading hole is not the stream's edge)
    assert source.errors == {"missing": 2}
    assert source.missing_columns == 32 + 32
    assert len(imu) == 30
    sample = imu[7].data
    assert imu[7].t_sensor == 3_577_133_606_620 + 70_000_000
    np.testing.assert_allclose(
        [sample[k] for k in ("ax", "ay", "az")], np.array([0.07, -0.02, 1.0]) * 9.80665, rtol=1e-6
    )
    np.testing.assert_allclose(
        [sample[k] for k in ("gx", "gy", "gz")], np.deg2rad([0.5, -1.5, 1.75]), rtol=1e-6
    )
    np.testing.assert_array_equal(sample["accel"], [sample["ax"], sample["ay"], sample["az"]])
    assert source.ledgers()["lidar_imu"].as_dict()["emitted"] == 30
    assert source.ledgers()["lidar"].emitted == 188
    balanced(source)
    frames, source = await decode(tmp_path / "s.pcap", partial_scans=False, decoder=decoder)
    assert [f.meta["scan_id"] for f in frames if f.sensor == "lidar"] == [638]
    assert dict(source.ledgers()["lidar"].lost) == {"incomplete": 124}
    balanced(source)


async def test_bad_packets_and_other_traffic_are_counted_and_the_scan_still_decodes(
    tmp_path: Path,
) -> None:
    packets = lidar_packets()
    records = [(t, 7502, p) for t, p in packets]
    records[5] = (records[5][0], 7502, packets[5][1][:6000])  # truncated
    records[9] = (records[9][0], 7502, packets[9][1] + b"\0" * 64)  # oversized
    records.insert(20, (packets[20][0], 2368, b"\xff\xee" * 603))  # a Velodyne packet: wrong port
    records.append((packets[-1][0] + 1, 7503, b"short imu"))
    write_pcap(tmp_path / "bad.pcap", records)
    raw = bytearray((tmp_path / "bad.pcap").read_bytes())
    # one record that is not UDP: an ARP frame, inserted after the global header
    arp = b"\xff" * 6 + b"\x00" * 6 + b"\x08\x06" + b"\x00" * 28
    raw[24:24] = np.array([1, 0, len(arp), len(arp)], "<u4").tobytes() + arp
    (tmp_path / "bad.pcap").write_bytes(bytes(raw))
    frames, source = await decode(tmp_path / "bad.pcap")
    (frame,) = frames
    assert frame.meta["missing_columns"] == [[80, 96], [144, 160]]
    assert frame.meta["packets"] == 62
    lidar = source.ledgers()["lidar"]
    assert lidar.received == 64 + 1 + 1
    assert dict(lidar.lost) == {"bad_length": 2, "wrong_port": 1, "unsupported_type": 1}
    assert dict(source.ledgers()["lidar_imu"].lost) == {"bad_length": 1}
    assert source.errors == {"bad_length": 3, "wrong_port": 1, "unsupported_type": 1, "missing": 1}
    balanced(source)
    assert source.last_error is not None
    assert source.last_error.endswith("IMU packet of 9 bytes, expected 48")


def _edited(tmp_path: Path, **changes: Any) -> Path:
    meta = json.loads(OUSTER_JSON.read_text())
    for key, value in changes.items():
        if key in meta:
            meta[key] = value
        else:
            meta["data_format"][key] = value
    path = tmp_path / "other.json"
    path.write_text(json.dumps(meta))
    return path


async def test_metadata_of_another_sensor_is_an_error_naming_the_mismatch(tmp_path: Path) -> None:
    sixty_four = _edited(
        tmp_path,
        beam_altitude_angles=list(np.linspace(16.6, -16.6, 64)),
        beam_azimuth_angles=[0.0] * 64,
        pixels_per_column=64,
        pixel_shift_by_row=[0] * 64,
        prod_line="OS-1-64",
    )
    source = OusterSource(OUSTER_PCAP, metadata=sixty_four)
    with pytest.raises(
        DecodeError,
        match=(
            r"sensor 'lidar': .*other\.json: 8 lidar packets in a row do not match the metadata "
            r"\(OS-1-64 .*64 beams.*\): .*lidar packet of 6464 bytes; the metadata's 64 beams "
            r"x 16 columns \(LEGACY\) make 12608-byte packets \(packet size mismatch\)"
        ),
    ):
        await decode_with(source)
    assert dict(source.ledgers()["lidar"].lost) == {"bad_length": 8}


async def test_metadata_of_another_lidar_mode_is_an_error_naming_it(tmp_path: Path) -> None:
    half = _edited(tmp_path, lidar_mode="512x10", columns_per_frame=512, column_window=[0, 511])
    source = OusterSource(OUSTER_PCAP, metadata=half)
    with pytest.raises(
        DecodeError,
        match=(
            r"lidar packet with column 527; the metadata's lidar mode 512x10 has 512 columns "
            r"\(lidar mode mismatch\)"
        ),
    ):
        await decode_with(source)
    # columns 0-511 made one scan before the first packet of column 512 and on
    assert source.ledgers()["lidar"].as_dict() == {
        "unit": "datagram", "received": 40, "emitted": 32, "frames": 1, "lost": {"undecodable": 8}
    }  # fmt: skip


async def decode_with(source: OusterSource) -> list[Frame]:
    async with source:
        return [frame async for frame in source.frames()]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"not json at all", r"'.*m\.json' is not an Ouster sensor's metadata JSON: not JSON"),
        (
            b'{"lidar_mode": "1024x10"}',
            r"is not an Ouster sensor's metadata JSON: no beam_altitude_angles",
        ),
        (b" " * (4 * 1024 * 1024 + 1), r"4194305 bytes, over the 4 MiB limit for Ouster metadata"),
    ],
    ids=["garbage", "velodyne-like", "huge"],
)
def test_unreadable_metadata_is_refused_when_the_source_is_made(
    tmp_path: Path, content: bytes, match: str
) -> None:
    (tmp_path / "m.json").write_bytes(content)
    with pytest.raises(SourceOpenError, match=match):
        OusterSource(OUSTER_PCAP, metadata=tmp_path / "m.json")
    if len(content) < 100:  # ouster-sdk refuses them too
        from ouster.sdk import core

        with pytest.raises((RuntimeError, ValueError)):
            core.SensorInfo(content.decode())
    with pytest.raises(SourceOpenError, match=r"Ouster metadata '.*nope\.json': does not exist"):
        OusterSource(OUSTER_PCAP, metadata=tmp_path / "nope.json")


def test_imu_packets_follow_the_manuals_layout() -> None:
    from ouster.sdk import core

    from adapters.lidar._ouster_packets import imu_sample

    fmt = core.PacketFormat(core.SensorInfo(OUSTER_JSON.read_text()))
    packet = imu_packet(123_456_789, (0.5, 0.0, -1.0), (90.0, 0.0, -180.0))
    t, data = imu_sample(packet)
    assert t == 123_456_789
    assert data["accel_ts"] == 123_456_789
    np.testing.assert_allclose(data["accel"], [4.903325, 0.0, -9.80665])
    np.testing.assert_allclose(data["gyro"], [np.pi / 2, 0.0, -np.pi])
    # ouster-sdk's readers, on random packets
    rng = np.random.default_rng(3)
    for _ in range(20):
        buf = rng.integers(0, 256, 48, dtype=np.uint8)
        t, data = imu_sample(buf.tobytes())
        assert (t, data["accel_ts"]) == (fmt.imu_gyro_ts(buf), fmt.imu_accel_ts(buf))
        want = [fmt.imu_la_x(buf), fmt.imu_la_y(buf), fmt.imu_la_z(buf)]
        np.testing.assert_array_equal(data["accel"], np.array(want) * 9.80665)
        want = [fmt.imu_av_x(buf), fmt.imu_av_y(buf), fmt.imu_av_z(buf)]
        np.testing.assert_array_equal(data["gyro"], np.array(want) * (np.pi / 180.0))
    assert next_scan(lidar_packets()[:1], 638, 0) == lidar_packets()[:1]


def _profile_capture(tmp_path: Path, profile: str, init_id: int) -> tuple[Path, Path]:
    """The capture's scan re-encoded by ouster-sdk in another UDP profile (and sensor id)."""
    import ouster.sdk as osdk
    from ouster.sdk import core
    from ouster.sdk.util.parsing import frame_to_packets

    meta = json.loads(core.SensorInfo(OUSTER_JSON.read_text()).to_json_string())
    meta["lidar_data_format"]["udp_profile_lidar"] = profile
    meta["sensor_info"]["initialization_id"] = init_id
    info = core.SensorInfo(json.dumps(meta))
    source = osdk.open_source(str(OUSTER_PCAP), meta=[str(OUSTER_JSON)])
    (legacy,) = [frames[0] for frames in source]
    source.close()
    scan = core.LidarFrame(info)
    for name in scan.fields:
        if legacy.has_field(name):
            scan.field(name)[:] = legacy.field(name)
    scan.timestamp[:] = legacy.timestamp
    scan.measurement_id[:] = legacy.measurement_id
    scan.status[:] = 1
    scan.frame_id = legacy.frame_id
    t0 = lidar_packets()[0][0]
    records = [
        (t0 + i * 1_562_500, 7502, bytes(p.buf)) for i, p in enumerate(frame_to_packets(scan, info))
    ]
    write_pcap(tmp_path / f"{profile}.pcap", records)
    (tmp_path / f"{profile}.json").write_text(json.dumps(meta))
    return tmp_path / f"{profile}.pcap", tmp_path / f"{profile}.json"


@pytest.mark.parametrize("profile", ["RNG19_RFL8_SIG16_NIR16", "RNG19_RFL8_SIG16_NIR16_DUAL"])
async def test_packets_of_the_current_profiles_decode_alike_with_numpy_and_ouster_sdk(
    tmp_path: Path, profile: str
) -> None:
    pcap, meta = _profile_capture(tmp_path, profile, init_id=7777)
    (fast,), source = await decode(pcap, meta)
    assert source.assembler.layout is not None  # the numpy path read this profile
    (vendor,), _ = await decode(pcap, meta, decoder="ouster-sdk")
    np.testing.assert_array_equal(fast.data, vendor.data)
    (legacy,), _ = await decode(OUSTER_PCAP)
    assert len(fast.data) == VALID_POINTS
    for name in ("x", "y", "z", "range", "signal", "near_ir", "column", "t"):
        np.testing.assert_allclose(fast.data[name], legacy.data[name], atol=1e-3)
    balanced(source)


async def test_packets_of_another_sensor_id_are_counted_then_the_mismatch_is_named(
    tmp_path: Path,
) -> None:
    pcap, _ = _profile_capture(tmp_path, "RNG19_RFL8_SIG16_NIR16", init_id=1234)
    (tmp_path / "ours").mkdir()
    _, ours = _profile_capture(tmp_path / "ours", "RNG19_RFL8_SIG16_NIR16", init_id=7777)
    source = OusterSource(pcap, metadata=ours)
    with pytest.raises(
        DecodeError,
        match=r"lidar packet from sensor sn 992101000280 init_id 1234; the metadata is of sn "
        r"992101000280 init_id 7777 \(sensor id mismatch: metadata of another sensor\?\)",
    ):
        await decode_with(source)
    assert dict(source.ledgers()["lidar"].lost) == {"foreign_sender": 8}


_KINDS = ("good", "truncated", "oversized", "noise", "imu", "short_imu", "other_port")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mix=st.lists(st.sampled_from(_KINDS), min_size=1, max_size=40))
async def test_every_datagram_of_any_mix_ends_as_a_frame_or_a_counted_loss(
    tmp_path: Path, mix: list[str]
) -> None:
    packets = lidar_packets()
    noise = bytes(np.random.default_rng(len(mix)).integers(0, 256, 6464, dtype=np.uint8))
    records = []
    for i, kind in enumerate(mix):
        t, good = packets[i % 64]
        payload, port = {
            "good": (good, 7502),
            "truncated": (good[:100], 7502),
            "oversized": (good + b"\0", 7502),
            "noise": (noise, 7502),
            "imu": (imu_packet(10**9 + i, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)), 7503),
            "short_imu": (b"\0" * 47, 7503),
            "other_port": (good, 9999),
        }[kind]
        records.append((t + i, port, payload))
    write_pcap(tmp_path / "mix.pcap", records)
    # the ports given: a capture of only port 9999's would otherwise be read there
    source = OusterSource(tmp_path / "mix.pcap", metadata=OUSTER_JSON, lidar_port=7502)
    raised = ""
    try:
        await decode_with(source)
    except DecodeError as err:  # 8 misfits in a row: the metadata is not this stream's
        raised = str(err)
    assert not raised or "in a row do not match the metadata" in raised
    read, run = mix, 0  # the error ends the stream at the 8th misfit in a row
    for i, kind in enumerate(mix):  # (the noise packet of every mix length misfits)
        run = 0 if kind == "good" else run + (kind in ("truncated", "oversized", "noise"))
        if run == 8:
            read = mix[: i + 1]
            break
    assert bool(raised) == (read is not mix)
    lidar, imu = source.ledgers()["lidar"], source.ledgers()["lidar_imu"]
    assert lidar.received == sum(k not in ("imu", "short_imu") for k in read)
    assert imu.received == sum(k in ("imu", "short_imu") for k in read)
    assert lidar.pending == source.assembler.pending()
    assert imu.pending == 0
    assert imu.emitted <= mix.count("imu")
    assert lidar.emitted <= mix.count("good")
