"""The beam geometry of an Ouster sensor: ``XYZLut``'s direction and offset tables, in numpy.

A point is ``range * direction + offset`` with one (direction, offset) pair per
pixel (column, beam). ouster-sdk's ``XYZLut`` builds them in C++ and hands them
back as ``(beams * columns, 3)`` float64 arrays, beam-major; the compiled decoder
wants them column-major and float32. Building ``XYZLut`` and converting its
tables cost about 7 ms a source on a 1024x32 sensor (most of the set-up cost of
a capture of one scan), so :func:`beam_tables` computes them here instead: the
same float64 operations in the same order as ouster-sdk 1.0's ``make_xyz_lut``
(per-beam azimuth and altitude, the encoder angle per column, the beam-origin
offset, the ``lidar_to_sensor_transform``, the range unit), laid out column-major
from the start, then rounded to float32 once. The result equals ``XYZLut``'s
tables bit for bit (``tests/adapters/test_ouster_geometry.py`` checks the real
metadata and random angles, beam offsets and transforms); a sensor whose
angles are given per pixel (not per beam) gets ``XYZLut``'s own tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RANGE_UNIT = 0.001  # ouster-sdk's: the sensor's millimetres to metres


def _rotate(rows: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Each ``(x, y, z)`` row times ``rotation`` transposed, summed in XYZLut's order."""
    out = np.empty_like(rows)
    x, y, z = rows[..., 0], rows[..., 1], rows[..., 2]
    for j in range(3):
        out[..., j] = x * rotation[j, 0] + y * rotation[j, 1] + z * rotation[j, 2]
    return out


def xyzlut_tables(info: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(direction, offset)``, ``(columns, beams, 3)`` float32, from ouster-sdk's ``XYZLut``."""
    from ouster.sdk import core

    lut = core.XYZLut(info)
    beams, width = int(info.format.pixels_per_column), int(info.format.columns_per_frame)

    def column_major(table: Any) -> np.ndarray:
        grid = np.asarray(table).reshape(beams, width, 3).transpose(1, 0, 2)
        return np.ascontiguousarray(grid, np.float32)

    return column_major(lut.direction), column_major(lut.offset)


def beam_tables(info: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(direction, offset)`` of every pixel, ``(columns, beams, 3)`` float32 (metres per
    range unit, metres): ``XYZLut(info)``'s tables, column-major (see the module doc)."""
    width, beams = int(info.format.columns_per_frame), int(info.format.pixels_per_column)
    azimuth = np.asarray(info.beam_azimuth_angles, np.float64)
    altitude = np.asarray(info.beam_altitude_angles, np.float64)
    if width <= 0 or beams <= 0 or len(azimuth) != beams or len(altitude) != beams:
        return xyzlut_tables(info)  # per-pixel angles, or dimensions XYZLut refuses
    beam_to_lidar = np.asarray(info.beam_to_lidar_transform, np.float64)
    transform = np.asarray(info.lidar_to_sensor_transform, np.float64)
    along, up = float(beam_to_lidar[0, 3]), float(beam_to_lidar[2, 3])
    distance = along if up == 0 else float(np.sqrt(along**2 + up**2))
    step = np.pi * 2.0 / width
    encoder = 2.0 * np.pi - np.arange(width, dtype=np.float64) * step  # per column
    beam_azimuth = -azimuth * np.pi / 180.0
    beam_altitude = altitude * np.pi / 180.0
    angle = encoder[:, None] + beam_azimuth[None, :]  # (columns, beams)
    cos_altitude = np.cos(beam_altitude)
    direction = np.empty((width, beams, 3))
    np.multiply(np.cos(angle), cos_altitude, out=direction[..., 0])
    np.multiply(np.sin(angle), cos_altitude, out=direction[..., 1])
    direction[..., 2] = np.sin(beam_altitude)
    offset = np.empty_like(direction)
    offset[..., 0] = (np.cos(encoder) * along)[:, None] - direction[..., 0] * distance
    offset[..., 1] = (np.sin(encoder) * along)[:, None] - direction[..., 1] * distance
    offset[..., 2] = -direction[..., 2] * distance + up
    rotation = transform[:3, :3]
    direction = _rotate(direction, rotation)
    offset = _rotate(offset, rotation)
    offset += transform[:3, 3]
    direction *= RANGE_UNIT
    offset *= RANGE_UNIT
    return direction.astype(np.float32), offset.astype(np.float32)
