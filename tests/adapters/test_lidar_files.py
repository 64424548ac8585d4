"""Point-cloud files: PCL's real PCDs, open3d round trips, PLY, KITTI, PointCloudFiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import open3d as o3d
import pytest
from lidar_testdata import LIDAR_DATA

from adapters import PointCloudFiles
from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar import from_xyz, read_kitti_bin, read_pcd, read_ply, write_kitti_bin, xyz
from fusion._frames import Frame
from fusion.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "count", "first", "sums"),
    [
        ("lamppost", 1771, (-10, 0, 0, 0), (-17894.469, 131.062, -3798.351)),
        ("office1_keypoints", 1318, (3.6486306, 4.2456532, 0.45956555, 0.9396742),
         (408.121, -1397.702, 282.809)),
        ("cturtle", 167198, (-1.4197180, 0.0977040, 1.4052950, 0.996078),
         (-4129.593, -201.089, 302670.214)),
    ],
    ids=["ascii", "binary", "binary_compressed"],
)  # fmt: skip
def test_pcl_test_files_read_with_the_documented_values(
    name: str, count: int, first: tuple[float, ...], sums: tuple[float, ...]
) -> None:
    points = read_pcd(LIDAR_DATA / f"{name}.pcd")
    assert points.dtype.names == ("x", "y", "z", "intensity")
    assert len(points) == count
    assert tuple(points[0]) == pytest.approx(first, abs=1e-6)
    got = [float(points[axis].astype(np.float64).sum()) for axis in "xyz"]
    assert got == pytest.approx(sums, abs=2e-3)


@pytest.mark.parametrize(
    ("ascii", "compressed"), [(True, False), (False, False), (False, True)],
    ids=["ascii", "binary", "binary_compressed"],
)  # fmt: skip
def test_pcd_written_by_open3d_reads_back_identically(
    tmp_path: Path, ascii: bool, compressed: bool
) -> None:
    rng = np.random.default_rng(7)
    positions = rng.normal(0, 20, (5000, 3)).astype(np.float32)
    intensity = rng.uniform(0, 255, (5000, 1)).astype(np.float32)
    cloud = o3d.t.geometry.PointCloud(o3d.core.Tensor.from_numpy(positions))
    cloud.point.intensity = o3d.core.Tensor.from_numpy(intensity)
    path = tmp_path / "cloud.pcd"
    assert o3d.t.io.write_point_cloud(path, cloud, write_ascii=ascii, compressed=compressed)
    points = read_pcd(path)
    np.testing.assert_allclose(xyz(points), positions, rtol=1e-6 if ascii else 0)
    np.testing.assert_allclose(points["intensity"], intensity[:, 0], rtol=1e-6 if ascii else 0)


def test_lamppost_written_back_as_binary_is_the_same_cloud(tmp_path: Path) -> None:
    ascii_points = read_pcd(LIDAR_DATA / "lamppost.pcd")
    cloud = o3d.t.geometry.PointCloud(o3d.core.Tensor.from_numpy(xyz(ascii_points)))
    o3d.t.io.write_point_cloud(tmp_path / "l.pcd", cloud, write_ascii=False)
    np.testing.assert_array_equal(xyz(read_pcd(tmp_path / "l.pcd")), xyz(ascii_points))


@pytest.mark.parametrize("ascii", [True, False], ids=["ascii", "binary"])
def test_ply_written_by_open3d_reads_back(tmp_path: Path, ascii: bool) -> None:
    positions = np.random.default_rng(3).normal(0, 5, (1000, 3))
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(positions))
    o3d.io.write_point_cloud(tmp_path / "c.ply", cloud, write_ascii=ascii)
    points = read_ply(tmp_path / "c.ply")
    tol = 1e-4 if ascii else 1e-6  # open3d writes ASCII PLY with 6 significant digits
    np.testing.assert_allclose(xyz(points), positions.astype(np.float32), rtol=tol, atol=tol)
    assert (points["intensity"] == 0).all()


def test_kitti_bin_round_trip_and_truncation_error(tmp_path: Path) -> None:
    points = from_xyz(np.arange(30, dtype=np.float32).reshape(10, 3), np.arange(10) / 10)
    write_kitti_bin(tmp_path / "000000.bin", points)
    np.testing.assert_array_equal(read_kitti_bin(tmp_path / "000000.bin"), points)
    (tmp_path / "cut.bin").write_bytes((tmp_path / "000000.bin").read_bytes()[:-3])
    with pytest.raises(
        DecodeError,
        match=r"cut.bin: byte 144: size 157 is not a multiple of 16 \(16-byte records: x, y, z, "
        r"intensity of layout kitti\); no preset fits its 157 bytes",
    ):
        read_kitti_bin(tmp_path / "cut.bin")


def test_pcd_with_short_binary_data_names_file_and_offset(tmp_path: Path) -> None:
    raw = (LIDAR_DATA / "office1_keypoints.pcd").read_bytes()
    (tmp_path / "short.pcd").write_bytes(raw[:-100])
    with pytest.raises(DecodeError, match=r"short.pcd: byte 186: binary data of 1318 points"):
        read_pcd(tmp_path / "short.pcd")


def make_scans(folder: Path, count: int) -> list[Path]:
    folder.mkdir()
    paths = []
    for i in range(count):
        path = folder / f"scan_{i}_{1_700_000_000 + i}.{i:06d}.bin"  # name ends in a stamp
        write_kitti_bin(path, from_xyz(np.full((i + 1, 3), i, np.float32)))
        paths.append(path)
    return paths


async def collect(source: PointCloudFiles) -> list[Frame]:
    async with source:
        return [f async for f in source.frames()]


async def test_files_at_a_fixed_rate_in_natural_order(tmp_path: Path) -> None:
    make_scans(tmp_path / "scans", 12)
    frames = await collect(PointCloudFiles(tmp_path / "scans", rate_hz=10, start_ns=5))
    assert [len(f.data) for f in frames] == list(range(1, 13))  # scan_2 before scan_10
    assert [f.t for f in frames] == [5 + i * 100_000_000 for i in range(12)]
    assert frames[0].meta["path"].endswith("scan_0_1700000000.000000.bin")


async def test_files_stamped_from_a_timestamps_file_and_from_names(tmp_path: Path) -> None:
    make_scans(tmp_path / "scans", 3)
    times = tmp_path / "times.txt"
    times.write_text("2011-09-26 13:02:25.964389445\n1317042145.964389446\n\n1.5e9\n")
    frames = await collect(PointCloudFiles(tmp_path / "scans/*.bin", timestamps=times))
    assert [f.t for f in frames] == [1317042145964389445, 1317042145964389446, 1.5e18]
    named = await collect(PointCloudFiles(tmp_path / "scans", timestamps="names"))
    assert [f.t for f in named] == [(1_700_000_000 + i) * 10**9 + i * 1000 for i in range(3)]


def test_stamp_count_mismatch_and_bad_options_are_clear_errors(tmp_path: Path) -> None:
    make_scans(tmp_path / "scans", 3)
    (tmp_path / "t.txt").write_text("1\n2\n")
    with pytest.raises(
        ConfigError, match=r"t\.txt' has 2 stamps but there are 3 point-cloud files"
    ):
        PointCloudFiles(tmp_path / "scans", timestamps=tmp_path / "t.txt")
    with pytest.raises(ConfigError, match="exactly one of rate_hz= or timestamps="):
        PointCloudFiles(tmp_path / "scans")
    with pytest.raises(SourceOpenError, match="no point-cloud files found"):
        PointCloudFiles(tmp_path / "nothing/*.pcd", rate_hz=1)


async def test_a_broken_file_is_counted_and_skipped(tmp_path: Path) -> None:
    paths = make_scans(tmp_path / "scans", 3)
    paths[1].write_bytes(b"\x00" * 7)
    source = PointCloudFiles(tmp_path / "scans", rate_hz=1)
    frames = await collect(source)
    assert [len(f.data) for f in frames] == [1, 3]
    assert source.errors == {"bad_file": 1}
    assert source.last_error is not None
    assert "size 7 is not a multiple of 16" in source.last_error
