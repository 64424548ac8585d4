"""Calibration files: Velodyne's db.xml and the ROS YAML read to the same corrections
as velodyne_decoder's own conversion; bad files refused with the file named; the
HDL-64E needs one, through the source too."""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import numpy as np
import pytest
from lidar_testdata import write_pcap
from velodyne_oracle import HDL64_XML, VLP16_DUAL, VLP32C, VLS128, hdl64e_packets

from adapters import VelodyneSource
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar import MODELS, Calibration, read_calibration
from adapters.lidar._calibration import parse_yaml
from adapters.lidar._velodyne_models import LAST, STRONGEST

vd = pytest.importorskip("velodyne_decoder", reason="oracle: pip install velodyne-decoder")
VD_CALIBRATIONS = Path(vd.__file__).parent / "calibrations"


def test_the_db_xml_reads_as_velodyne_decoders_yaml_of_the_same_file() -> None:
    # velodyne_decoder ships VeloView's HDL-64.xml converted by the ROS driver's
    # gen_calibration.py: our XML reader must give the same corrections
    ours = read_calibration(HDL64_XML)
    theirs = read_calibration(VD_CALIBRATIONS / "HDL-64E_S3-VeloView.yml")
    assert ours.lasers == theirs.lasers == 64
    assert ours.distance_resolution_m == pytest.approx(theirs.distance_resolution_m)
    for name in ("vert_deg", "rot_deg", "vert_offset_m", "horiz_offset_m", "dist_correction_m",
                 "dist_correction_x_m", "dist_correction_y_m", "focal_distance", "focal_slope",
                 "min_intensity", "max_intensity"):  # fmt: skip
        np.testing.assert_allclose(ours.column(name), theirs.column(name), atol=1e-6, err_msg=name)
    assert ours.advanced
    assert ours.source == "HDL-64_veloview.xml"


@pytest.mark.parametrize("name", sorted(p.name for p in VD_CALIBRATIONS.glob("*.yml")))
def test_every_yaml_velodyne_decoder_ships_reads_and_writes_back(name: str) -> None:
    calibration = read_calibration(VD_CALIBRATIONS / name)
    again = parse_yaml(calibration.to_yaml())
    for field in ("vert_deg", "rot_deg", "vert_offset_m", "dist_correction_m", "focal_slope"):
        np.testing.assert_allclose(again.column(field), calibration.column(field), atol=1e-9)
    # velodyne_decoder reads what we write
    assert vd.Calibration.from_string(calibration.to_yaml()) is not None


def test_a_calibration_replaces_the_nominal_angles_and_is_checked(tmp_path: Path) -> None:
    yaml = read_calibration(VD_CALIBRATIONS / "VLP-32C.yml")
    model = MODELS["VLP-32C"].with_calibration(yaml)
    assert model.name == "VLP-32C"
    assert model.calibration is yaml
    # the default VLP-32C file has the manual's angles plus vertical offsets
    np.testing.assert_allclose(yaml.column("vert_deg"), MODELS["VLP-32C"].elevations_deg, atol=2e-3)
    with pytest.raises(ValueError, match="the vlp16 layout has 16 lasers, the calibration 32"):
        MODELS["VLP-16"].with_calibration(yaml)
    with pytest.raises(SourceOpenError, match="the vlp16 layout has 16 lasers"):
        VelodyneSource(pcap=VLP32C, model="VLP-16", calibration=VD_CALIBRATIONS / "VLP-32C.yml")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("lasers: 3", "expected a mapping with a 'lasers' list"),
        ("lasers:\n  - {rot_correction: 0}", "every entry of 'lasers' needs a laser_id"),
        ("lasers:\n  - {laser_id: 500, vert_correction: 0, rot_correction: 0}", "outside 0..127"),
        ("lasers:\n  - {laser_id: 1, vert_correction: 0, rot_correction: 0}", "do not number 0..0"),
        ("lasers:\n  - {laser_id: 0, vert_correction: .nan, rot_correction: 0}", "must be finite"),
        ('<!DOCTYPE x [<!ENTITY a "b">]><x/>', "entity declarations are not allowed"),
        ("<boost_serialization><nope/></boost_serialization>", "no <DB> element"),
    ],
)
def test_a_bad_calibration_file_is_refused_naming_it(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "calib.yaml"
    path.write_text(text)
    with pytest.raises(DecodeError, match=f"{path}: not a Velodyne calibration: .*{problem}"):
        read_calibration(path)
    with pytest.raises(SourceOpenError, match=problem):
        VelodyneSource(pcap=VLS128, calibration=path)


def test_calibration_values_are_bounded() -> None:
    with pytest.raises(ValueError, match=r"1\.\.128 lasers"):
        Calibration(vert_deg=(0.0,) * 129)
    with pytest.raises(ValueError, match="distance resolution"):
        Calibration(vert_deg=(0.0,), distance_resolution_m=math.inf)


async def collect(source: VelodyneSource) -> list[object]:
    async with source:
        return [frame async for frame in source.frames()]


def test_an_hdl64e_capture_needs_its_calibration_and_decodes_with_it(tmp_path: Path) -> None:
    packets = hdl64e_packets(400, s3=True, dual=False)
    write_pcap(tmp_path / "64.pcap", [(t, 2368, p) for t, p in packets])
    bare = VelodyneSource(pcap=tmp_path / "64.pcap")
    with pytest.raises(DecodeError, match=r"the packets say HDL-64E-S3 .*give its calibration"):
        anyio.run(collect, bare)
    assert bare.ledgers()["lidar"].lost == {"unsupported_device": 400}
    source = VelodyneSource(pcap=tmp_path / "64.pcap", calibration=HDL64_XML)
    frames = anyio.run(collect, source)
    assert source.model is not None
    assert source.model.name == "HDL-64E-S3"
    ledger = source.ledgers()["lidar"]
    assert ledger.received == ledger.emitted == 400
    assert frames


def test_real_captures_of_the_new_models_through_the_source() -> None:
    for path, name, dual in [(VLP32C, "VLP-32C", False), (VLS128, "VLS-128", False),
                             (VLP16_DUAL, "VLP-16", True)]:  # fmt: skip
        source = VelodyneSource(pcap=path)
        frames = anyio.run(collect, source)
        assert source.model is not None
        assert source.model.name == name
        assert all(f.meta["dual"] is dual for f in frames)  # type: ignore[attr-defined]
        returns = set(np.unique(np.concatenate([f.data["return"] for f in frames])).tolist())  # type: ignore[attr-defined]
        assert returns == ({1, 2, 3} if dual else {STRONGEST})
        ledger = source.ledgers()["lidar"]
        assert ledger.received == ledger.emitted
        assert ledger.lost_total == 0
    assert LAST == 2
