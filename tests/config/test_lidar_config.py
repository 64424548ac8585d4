"""TOML keys of the lidar sources: ``layout`` on point-cloud files, ``kitti_raw`` sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.lidar import PointCloudFiles
from fusion import ConfigError
from hyperframes.config import validate_config
from hyperframes.config._factory import build_source

NUSCENES = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "pointclouds"
    / "t4devkit_LIDAR_TOP_002.pcd.bin"
)  # fmt: skip


def config(source: dict[str, object], reference: str = "lidar") -> dict[str, object]:
    return {"sync": {"policy": "nearest", "reference": reference}, "sources": [source]}


@pytest.mark.parametrize(
    "layout",
    ["nuscenes", [["x", "<f4"], ["y", "<f4"], ["z", "<f4"], ["intensity", "<f4"], ["ring", "<f4"]]],
    ids=["preset", "dtype"],
)
def test_pointcloud_files_layout_key_reaches_the_source(layout: object) -> None:
    source = {"type": "pointcloud_files", "name": "lidar", "paths": str(NUSCENES), "rate_hz": 10}
    cfg = validate_config(config({**source, "layout": layout}))
    source = build_source(cfg.sources[0])
    assert isinstance(source, PointCloudFiles)
    assert source.layout is not None
    assert source.layout.dtype.names == ("x", "y", "z", "intensity", "ring")
    assert "(given)" in source.description


def test_an_unknown_layout_is_a_config_problem() -> None:
    message = r"sources\[0\]\.pointcloud_files: layout: layout 'kitty' is neither a preset \(kitti"
    with pytest.raises(ConfigError, match=message):
        validate_config(config({"type": "pointcloud_files", "name": "lidar", "paths": "x",
                                "rate_hz": 10, "layout": "kitty"}))  # fmt: skip


def test_kitti_raw_sensor_names_are_known_to_the_sync_section() -> None:
    source = {"type": "kitti_raw", "name": "kitti", "path": "drive", "prefix": "k/"}
    assert validate_config(config(source, reference="k/velodyne"))
    with pytest.raises(ConfigError, match=r"sensors \['velodyne'\] are not the name of any source"):
        validate_config(config(source, reference="velodyne"))
    with pytest.raises(
        ConfigError, match=r"sources\[0\]\.kitti_raw\.sensors\[0\]: expected 'cam0'"
    ):
        validate_config(config({**source, "sensors": ["cam9"]}, reference="k/velodyne"))
