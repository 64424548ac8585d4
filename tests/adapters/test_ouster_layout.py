"""Our Ouster packet layouts (adapters.lidar._ouster_layout) and metadata reader
(adapters.lidar._ouster_meta) against ouster-sdk's own: every UDP profile ouster-sdk 1.0
knows, read from packets of random bytes by both; ouster-sdk's metadata corpus (firmware
1.12 to 3.0, legacy and current layouts) read by both; and real captures of the low-data
(RNG15_RFL8_NIR8) and dual-return profiles decoded by both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from ouster_testdata import OUSTER_JSON

from adapters import OusterSource
from adapters.lidar._ouster_fast import FIELDS
from adapters.lidar._ouster_layout import PROFILES, PacketLayout, imu_packet_size
from adapters.lidar._ouster_meta import NotMetadata, OutOfBounds, parse_metadata

DATA = Path(__file__).resolve().parents[1] / "data" / "ouster"
CORPUS = sorted((DATA / "metadata").glob("*.json"))
LOW_DATA = DATA / "OS-0-128-U1_v2.3.0_1024x10"  # RNG15_RFL8_NIR8
DUAL = DATA / "OS-0-32-U1_v2.2.0_1024x10"  # RNG19_RFL8_SIG16_NIR16_DUAL
FW3 = DATA / "OS-1-128_767798045_1024x10_20230712_120049"  # RNG19_RFL8_SIG16_NIR16


def profile_json(profile: str, header: str | None = None, beams: int = 32) -> str:
    """The real OS-1-32's metadata (current layout, as ouster-sdk writes it) in a profile."""
    from ouster.sdk import core

    meta = json.loads(core.SensorInfo(OUSTER_JSON.read_text()).to_json_string())
    fmt = meta["lidar_data_format"]
    fmt["udp_profile_lidar"] = profile
    if header is not None:
        fmt["header_type"] = header
    fmt["pixels_per_column"] = beams
    fmt["pixel_shift_by_row"] = [0] * beams
    meta["beam_intrinsics"]["beam_altitude_angles"] = np.linspace(20, -20, beams).tolist()
    meta["beam_intrinsics"]["beam_azimuth_angles"] = [0.0] * beams
    meta["sensor_info"]["prod_line"] = f"OS-1-{beams}"
    return json.dumps(meta)


CASES = [(p, None) for p in PROFILES] + [("RNG19_RFL8_SIG16_NIR16", "FUSA")]


@pytest.mark.parametrize(("profile", "header"), CASES, ids=[f"{p}-{h}" for p, h in CASES])
@pytest.mark.parametrize("beams", [16, 128])
def test_every_profile_reads_random_packets_as_ouster_sdk_does(
    profile: str, header: str | None, beams: int
) -> None:
    from ouster.sdk import core

    text = profile_json(profile, header, beams)
    ours = PacketLayout(parse_metadata(text.encode()))
    sdk_info = core.SensorInfo(text)
    pf = core.PacketFormat(sdk_info)
    assert ours.size == pf.lidar_packet_size
    assert ours.imu_size == pf.imu_packet_size == imu_packet_size(sdk_info.format)
    assert ours.col_size == pf.col_size
    assert set(ours.fields) == {f for f in FIELDS if f in set(pf.fields)}
    rng = np.random.default_rng(beams)
    for _ in range(5):
        buf = rng.integers(0, 256, ours.size, dtype=np.uint8)
        data = buf.tobytes()
        for name in ours.fields:
            want = np.asarray(pf.packet_field(name, buf))  # (beams, columns)
            np.testing.assert_array_equal(ours.field(data, name).T, want, err_msg=name)
        for header_field, got in (
            (core.ColHeader.TIMESTAMP, ours.stamps(data)),
            (core.ColHeader.MEASUREMENT_ID, ours.ids(data)),
            (core.ColHeader.STATUS, ours.status(data)),
        ):
            np.testing.assert_array_equal(np.asarray(pf.packet_header(header_field, buf)), got)
        first, last, frame_id = ours.header(data)
        assert frame_id == ours.frame_id(data) == pf.frame_id(buf)
        assert (first, last) == tuple(
            np.asarray(pf.packet_header(core.ColHeader.MEASUREMENT_ID, buf))[[0, -1]]
        )
        if ours.has_ids:
            assert ours.sensor_ids(data) == (pf.init_id(buf), pf.prod_sn(buf))


def _sdk_fields(info: Any) -> dict[str, Any]:
    fmt = info.format
    return {
        "prod_line": str(info.prod_line),
        "sn": int(info.sn),
        "init_id": int(info.init_id),
        "lidar_mode": str(info.config.lidar_mode) if info.config.lidar_mode else None,
        "udp_port_lidar": info.config.udp_port_lidar,
        "udp_port_imu": info.config.udp_port_imu,
        "format": (
            int(fmt.pixels_per_column),
            int(fmt.columns_per_packet),
            int(fmt.columns_per_frame),
            tuple(int(v) for v in fmt.column_window),
            [int(s) for s in fmt.pixel_shift_by_row],
            str(fmt.udp_profile_lidar),
            str(fmt.udp_profile_imu),
            str(fmt.header_type),
            int(fmt.fps),
        ),
        "altitude": np.asarray(info.beam_altitude_angles, np.float64).tolist(),
        "azimuth": np.asarray(info.beam_azimuth_angles, np.float64).tolist(),
        "origin": float(info.lidar_origin_to_beam_origin_mm),
        "beam_to_lidar": np.asarray(info.beam_to_lidar_transform).tolist(),
        "lidar_to_sensor": np.asarray(info.lidar_to_sensor_transform).tolist(),
        "imu_to_sensor": np.asarray(info.imu_to_sensor_transform).tolist(),
    }


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_ouster_sdks_metadata_corpus_reads_as_ouster_sdk_reads_it(path: Path) -> None:
    from ouster.sdk import core

    text = path.read_text()
    try:
        sdk = core.SensorInfo(text)
    except (RuntimeError, ValueError):
        sdk = None
    if sdk is None:  # ouster-sdk refuses it (beam angles of another beam count): so do we
        with pytest.raises((NotMetadata, OutOfBounds)):
            parse_metadata(text.encode())
        return
    ours = parse_metadata(text.encode())
    want = _sdk_fields(sdk)
    got = _sdk_fields(ours)
    for key in want:
        assert got[key] == want[key], key


@pytest.mark.parametrize("capture", [LOW_DATA, DUAL, FW3], ids=["low-data", "dual", "fw3"])
async def test_real_captures_of_other_profiles_decode_as_ouster_sdk_does(capture: Path) -> None:
    from ouster.sdk import core

    pcap, meta = Path(f"{capture}.pcap"), Path(f"{capture}.json")

    async def frames(**options: Any) -> list[Any]:
        async with OusterSource(pcap, metadata=meta, **options) as source:
            out = [f async for f in source.frames() if f.sensor == "lidar"]
        assert not source.errors or set(source.errors) <= {"missing"}, source.errors
        return out

    ours, vendor = await frames(), await frames(decoder="ouster-sdk")
    numpy_path = await frames(decoder="numpy")
    assert len(ours) == len(vendor) >= 1
    lut = core.XYZLut(core.SensorInfo(await anyio.Path(meta).read_text()))
    import ouster.sdk as osdk

    source = osdk.open_source(str(pcap), meta=[str(meta)])
    try:
        scans = {int(s[0].frame_id): s[0] for s in source}
    finally:
        source.close()
    for frame, same, also in zip(ours, vendor, numpy_path, strict=True):
        np.testing.assert_array_equal(frame.data, same.data)
        np.testing.assert_array_equal(frame.data, also.data)
        scan = scans[frame.meta["scan_id"]]
        points = frame.data
        rows, cols = points["beam"].astype(np.int64), points["column"].astype(np.int64)
        ranges = np.asarray(scan.field("RANGE"))
        np.testing.assert_array_equal(points["range"], ranges[rows, cols])
        assert len(points) == int((ranges[:, np.asarray(scan.status) & 1 != 0] > 0).sum())
        np.testing.assert_array_equal(
            points["reflectivity"], np.asarray(scan.field("REFLECTIVITY"))[rows, cols]
        )
        np.testing.assert_array_equal(
            points["near_ir"], np.asarray(scan.field("NEAR_IR"))[rows, cols]
        )
        xyz = lut(scan)
        got = np.stack([points["x"], points["y"], points["z"]], axis=-1)
        np.testing.assert_allclose(got, xyz[rows, cols], atol=1e-4)
