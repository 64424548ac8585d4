"""The beam tables computed in numpy (adapters.lidar._ouster_geometry) from our own reading
of the metadata (adapters.lidar._ouster_meta) against ouster-sdk's own ``XYZLut`` of its
own reading, bit for bit: the real OS-1-32 metadata, and random beam angles, beam origins
and sensor transforms written into its JSON."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from ouster_testdata import OUSTER_JSON

from adapters.lidar._ouster import load_metadata
from adapters.lidar._ouster_geometry import beam_tables
from adapters.lidar._ouster_meta import parse_metadata


def xyzlut_tables(text: str) -> tuple[np.ndarray, np.ndarray]:
    """ouster-sdk's ``XYZLut`` tables of a metadata JSON, ``(columns, beams, 3)`` float32."""
    from ouster.sdk import core

    info = core.SensorInfo(text)
    lut = core.XYZLut(info)
    beams, width = int(info.format.pixels_per_column), int(info.format.columns_per_frame)

    def column_major(table: Any) -> np.ndarray:
        grid = np.asarray(table).reshape(beams, width, 3).transpose(1, 0, 2)
        return np.ascontiguousarray(grid, np.float32)

    return column_major(lut.direction), column_major(lut.offset)


def _same_bits(text: str) -> None:
    ours, sdk = beam_tables(parse_metadata(text.encode())), xyzlut_tables(text)
    for mine, theirs in zip(ours, sdk, strict=True):
        assert mine.dtype == theirs.dtype == np.float32
        assert mine.shape == theirs.shape
        assert np.array_equal(mine.view(np.uint32), theirs.view(np.uint32))


def test_the_real_metadatas_tables_are_xyzluts_bit_for_bit() -> None:
    info = load_metadata(OUSTER_JSON)
    _same_bits(OUSTER_JSON.read_text())
    direction, offset = beam_tables(info)
    assert direction.shape == (1024, 32, 3)
    # a unit vector per pixel (in metres per mm) and the beam origin a few cm off the centre
    assert np.allclose(np.linalg.norm(direction, axis=2), 0.001, rtol=1e-6)
    assert 0.0 < float(np.abs(offset).max()) < 0.1


@settings(max_examples=15, deadline=None)
@given(
    azimuth=st.lists(st.floats(-10, 10), min_size=32, max_size=32),
    altitude=st.lists(st.floats(-50, 50), min_size=32, max_size=32),
    along=st.floats(0, 40),
    up=st.sampled_from([0.0, 3.5, -7.25]),
    angles=st.tuples(*[st.floats(-np.pi, np.pi)] * 3),
    shift=st.tuples(*[st.floats(-100, 100)] * 3),
)
def test_random_geometry_gives_xyzluts_tables_bit_for_bit(
    azimuth: list[float],
    altitude: list[float],
    along: float,
    up: float,
    angles: tuple[float, float, float],
    shift: tuple[float, float, float],
) -> None:
    doc = json.loads(OUSTER_JSON.read_text())
    doc["beam_azimuth_angles"], doc["beam_altitude_angles"] = azimuth, altitude
    beam = np.eye(4)
    beam[0, 3], beam[2, 3] = along, up
    doc["beam_to_lidar_transform"] = beam.reshape(-1).tolist()
    a, b, c = angles
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    transform = np.eye(4)
    transform[:3, :3], transform[:3, 3] = rz @ ry @ rx, shift
    doc["lidar_to_sensor_transform"] = transform.reshape(-1).tolist()
    text = json.dumps(doc)
    info = parse_metadata(text.encode())
    assert np.array_equal(info.lidar_to_sensor_transform, transform)  # it took
    assert np.array_equal(info.beam_altitude_angles, altitude)
    _same_bits(text)
