"""Processing stages take and return point-cloud frames and keep every field."""

from __future__ import annotations

import numpy as np
import pytest
from lidar_testdata import VLP16

from adapters import VelodyneSource
from adapters.lidar import BoxCrop, RangeCrop, RemoveOutliers, VoxelDownsample, from_xyz
from fusion._frames import Frame
from fusion.errors import FrameFormatError


async def a_sweep() -> Frame:
    async with VelodyneSource(pcap=VLP16, model="VLP-16") as source:
        async for frame in source.frames():
            if frame.seq == 5:
                return frame
    raise AssertionError("unreachable")


async def test_range_and_box_crop_keep_fields_and_frame_identity() -> None:
    frame = await a_sweep()
    cropped = RangeCrop(1.0, 10.0)(frame)
    r = np.sqrt(cropped.data["x"] ** 2 + cropped.data["y"] ** 2 + cropped.data["z"] ** 2)
    assert 0 < len(cropped.data) < len(frame.data)
    assert r.min() >= 1.0
    assert r.max() <= 10.0 + 1e-5
    assert cropped.data.dtype == frame.data.dtype
    assert (cropped.sensor, cropped.seq, cropped.t_sensor) == (frame.sensor, 5, frame.t_sensor)
    boxed = BoxCrop((-2, -2, -1), (2, 2, 1))(cropped)
    assert ((np.abs(boxed.data["x"]) <= 2) & (np.abs(boxed.data["z"]) <= 1)).all()
    outside = BoxCrop((-2, -2, -1), (2, 2, 1), invert=True)(cropped)
    assert len(boxed.data) + len(outside.data) == len(cropped.data)
    assert boxed.meta["processing"] == ["range_crop[1.0,10.0]", "box_crop"]


async def test_voxel_downsample_averages_points_per_voxel() -> None:
    frame = await a_sweep()
    down = VoxelDownsample(0.5)(frame)
    assert 0 < len(down.data) < len(frame.data) / 3
    assert down.data.dtype == frame.data.dtype
    keys = np.floor(np.stack([down.data[a] for a in "xyz"], 1) / 0.5)
    assert len(np.unique(keys, axis=0)) >= 0.95 * len(down.data)  # ~one point per voxel
    cube = from_xyz([[0.1, 0.1, 0.1], [0.3, 0.3, 0.3]], [10, 20])
    merged = VoxelDownsample(1.0)(Frame("l", 0, 0, cube)).data
    assert len(merged) == 1
    assert tuple(merged[0]) == pytest.approx((0.2, 0.2, 0.2, 15.0))


def test_outlier_removal_drops_isolated_points() -> None:
    rng = np.random.default_rng(0)
    cluster = rng.normal(0, 0.1, (2000, 3))
    far = np.array([[20.0, 0, 0], [0, -30.0, 0], [0, 0, 25.0]])
    frame = Frame("l", 0, 0, from_xyz(np.vstack([cluster, far]), np.arange(2003)))
    kept = RemoveOutliers(neighbors=10, std_ratio=2.0)(frame).data
    assert not np.isin([2000, 2001, 2002], kept["intensity"]).any()
    assert len(kept) > 1900


def test_stages_reject_payloads_that_are_not_point_clouds() -> None:
    with pytest.raises(FrameFormatError, match=r"sensor 'cam' seq 3: expected a 1-D structured"):
        RangeCrop(0, 1)(Frame("cam", 3, 0, np.zeros((4, 4))))
