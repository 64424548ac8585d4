"""The real point-cloud files of ../shared/data/real/pointclouds against expected.json.

expected.json was computed with numpy (PCD), plyfile (PLY) and an LZF decoder
cross-checked with pypcd4; each test also compares with open3d's reader or
numpy in the same run. Layout tests: the right layout gives the file's values,
a wrong layout (or none where the name says nothing) gives the documented
error, never wrong points.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import open3d as o3d
import pytest

from adapters import PointCloudFiles
from adapters.errors import DecodeError
from adapters.lidar import read_pcd, read_ply, xyz
from adapters.lidar._layouts import LAYOUTS, read_bin
from adapters.lidar._pcd import read_pcd_with_meta
from fusion._frames import Frame

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real"
CLOUDS = REAL / "pointclouds"
NUSCENES = CLOUDS / "t4devkit_LIDAR_TOP_002.pcd.bin"
PCDS = sorted(p.name for p in CLOUDS.glob("*.pcd"))


def expected(name: str) -> dict[str, Any]:
    files = json.loads((REAL / "expected.json").read_text())["files"]
    result: dict[str, Any] = files[f"pointclouds/{name}"]["expected"]
    return result


def same(got: Any, want: Any) -> bool:
    if want == "nan":
        return math.isnan(float(got))
    if isinstance(want, list):
        return list(np.asarray(got).tolist()) == want
    return bool(got == want)  # exact: float32/float64 values print exactly in JSON


@pytest.mark.parametrize("name", PCDS)
def test_real_pcd_reads_as_expected_json_says_and_as_open3d(name: str) -> None:
    want = expected(name)
    points, meta = read_pcd_with_meta(CLOUDS / name)
    assert len(points) == want["points"]
    fields = [f for f in want["fields"] if f != "_"]
    assert set(fields) <= set(points.dtype.names or ())
    assert "_" not in (points.dtype.names or ())  # padding dropped
    for key in ("first_point", "last_point", "first_finite_point"):
        if key in want:
            index = {"first_point": 0, "last_point": -1}.get(key, want.get(f"{key}_index", 0))
            row = points[index]
            for field, value in want[key].items():
                if field != "_":
                    assert same(row[field], value), (key, field, row[field], value)
    finite = np.isfinite(xyz(points)).all(axis=1)
    assert int(finite.sum()) == want["finite_xyz_points"]
    assert xyz(points)[finite].min(axis=0).tolist() == want["xyz_min"]
    assert xyz(points)[finite].max(axis=0).tolist() == want["xyz_max"]
    assert (meta["width"], meta["height"]) == (want["width"], want["height"])
    assert meta["viewpoint"] == [float(v) for v in want["viewpoint"]]
    assert meta["pcd_data"] == want["data"]
    # open3d's reader, independent of ours, agrees on every position (NaN included)
    reference = o3d.t.io.read_point_cloud(str(CLOUDS / name)).point.positions.numpy()
    if len(reference) == len(points):
        np.testing.assert_array_equal(xyz(points), reference)
    else:  # open3d drops the non-finite points of organized clouds
        np.testing.assert_array_equal(xyz(points)[finite], reference)


def test_real_pcd_fields_keep_their_types_and_packed_colour() -> None:
    left = read_pcd(CLOUDS / "sensorscalib_lidar2lidar_0001_left.pcd")
    assert left.dtype.names == ("x", "y", "z", "intensity", "ring", "timestamp")
    assert (left.dtype["ring"], left.dtype["timestamp"]) == (np.dtype("<u2"), np.dtype("<f8"))
    frame = read_pcd(CLOUDS / "pcl_frame_20121214T142255.814212.pcd")
    rgba = int(frame["rgba"][0])
    want = expected("pcl_frame_20121214T142255.814212.pcd")["first_rgba_unpacked"]
    assert ((rgba >> 16) & 255, (rgba >> 8) & 255, rgba & 255, rgba >> 24) == (
        want["r"], want["g"], want["b"], want["a"],
    )  # fmt: skip


def test_tree_pcd_and_ply_are_the_same_scan_point_for_point() -> None:
    pcd = read_pcd(CLOUDS / "pointcloudset_test_tree.pcd")
    ply = read_ply(CLOUDS / "pointcloudset_testply.ply")
    want = expected("pointcloudset_testply.ply")
    assert len(ply) == want["points"]
    for field, value in want["first_vertex"].items():
        assert same(ply[0][field], value)
    np.testing.assert_array_equal(xyz(pcd), xyz(ply))
    for field in ("Amplitude", "Reflectance", "Deviation"):
        np.testing.assert_array_equal(pcd[field], ply[f"scalar_{field}"])
    reference = o3d.t.io.read_point_cloud(str(CLOUDS / "pointcloudset_testply.ply"))
    np.testing.assert_array_equal(xyz(ply), reference.point.positions.numpy())


def test_nuscenes_bin_read_with_its_layout_or_by_its_name_equals_numpy() -> None:
    want = expected(NUSCENES.name)
    reference = np.fromfile(NUSCENES, np.float32).reshape(-1, 5)
    for points in (read_bin(NUSCENES, "nuscenes"), read_bin(NUSCENES)):
        assert points.dtype == LAYOUTS["nuscenes"].dtype
        assert len(points) == want["points"] == 8
        assert list(points[0].tolist()) == want["first_point"]
        assert list(points[-1].tolist()) == want["last_point"]
        np.testing.assert_array_equal(points.view(np.float32).reshape(-1, 5), reference)


def test_nuscenes_bin_as_kitti_is_an_error_naming_the_presets_that_fit() -> None:
    with pytest.raises(
        DecodeError,
        match=r"t4devkit_LIDAR_TOP_002\.pcd\.bin: read as layout kitti \(16-byte records: "
        r"x, y, z, intensity\), intensity spans 95\.\.140, outside the layout's 0\.\.1; "
        r"presets that fit its 160 bytes: xyzi \(16 B, plausible\), "
        r"nuscenes \(20 B, plausible\)",
    ):
        read_bin(NUSCENES, "kitti")


def test_nuscenes_file_under_a_plain_bin_name_is_refused_not_misread(tmp_path: Path) -> None:
    plain = tmp_path / "000002.bin"
    shutil.copy(NUSCENES, plain)
    with pytest.raises(DecodeError, match=r"000002\.bin: read as layout kitti .* nuscenes"):
        read_bin(plain)
    assert len(read_bin(plain, "nuscenes")) == 8


async def test_pointcloudfiles_says_it_took_the_layout_from_the_name(tmp_path: Path) -> None:
    source = PointCloudFiles(NUSCENES, rate_hz=10)
    assert "nuscenes (from the *.pcd.bin file names" in source.description
    assert source.spec.meta["layout"].startswith("nuscenes")
    async with source:
        frames: list[Frame] = [f async for f in source.frames()]
    assert len(frames) == 1
    assert len(frames[0].data) == 8
    plain = tmp_path / "0.bin"
    shutil.copy(NUSCENES, plain)
    refused = PointCloudFiles(plain, rate_hz=10)
    assert "kitti (no layout given" in refused.description
    async with refused:
        assert [f async for f in refused.frames()] == []
    assert refused.errors == {"bad_file": 1}
    assert "layout kitti" in str(refused.last_error)


@pytest.mark.parametrize(
    ("name", "trailer"),
    [("pcl_colored_cloud.pcd", 37), ("pointcloudset_test_tree.pcd", 4096)],
)
async def test_a_real_pcd_with_bytes_after_its_points_reads_them_and_warns(
    tmp_path: Path, name: str, trailer: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Data beyond POINTS records (as a Hesai PandarQT writer leaves): PCL and open3d
    read the POINTS points; so do we, with a warning."""
    path = tmp_path / name
    path.write_bytes((CLOUDS / name).read_bytes() + bytes(i % 251 for i in range(trailer)))
    want = expected(name)
    with caplog.at_level("WARNING", logger="adapters.lidar._pcd"):
        points, meta = read_pcd_with_meta(path)
    assert len(points) == want["points"]
    np.testing.assert_array_equal(points, read_pcd(CLOUDS / name))  # the file's own points
    assert meta["trailing"].startswith(f"{trailer} byte(s) after the {want['points']} points")
    assert f"{path}: {trailer} byte(s) after the" in caplog.text
    reference = o3d.t.io.read_point_cloud(str(path)).point.positions.numpy()
    np.testing.assert_array_equal(xyz(points), reference)
    source = PointCloudFiles(path, rate_hz=10, name="qt")  # one file: one frame, one warning
    async with source:
        frames = [f async for f in source.frames()]
    assert len(frames) == 1
    assert frames[0].meta["trailing"] == meta["trailing"]
    assert source.errors == {"trailing_bytes": 1}
    ledger = source.ledgers()["qt"]
    assert (ledger.received, ledger.emitted, ledger.lost) == (1, 1, {})
