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

from typing import Any, NamedTuple

import numpy as np

RANGE_UNIT = 0.001  # ouster-sdk's: the sensor's millimetres to metres


def xyzlut_tables(info: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(direction, offset)``, ``(columns, beams, 3)`` float32, from ouster-sdk's ``XYZLut``."""
    from ouster.sdk import core

    text = getattr(info, "text", None)  # ours (OusterInfo): ouster-sdk reads its JSON again
    lut = core.XYZLut(info if text is None else core.SensorInfo(text))
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
    distinct, beam_of = np.unique(beam_azimuth, return_inverse=True)
    geometry = _Geometry(
        distinct, beam_of, np.cos(beam_altitude), np.sin(beam_altitude), along, up, distance
    )
    tables = np.empty((2, width, beams, 3), np.float32)  # rounded to float32 when stored
    # a block of columns at a time: temporaries of 64 kB, which malloc reuses (temporaries
    # of the whole table came back as fresh pages, a page fault per 4 kB: more than the sums)
    block = max(1, 8192 // beams)
    for lo in range(0, width, block):
        _fill(tables[:, lo : lo + block], encoder[lo : lo + block], geometry, transform)
    return tables[0], tables[1]


class _Geometry(NamedTuple):
    """Per-beam inputs of the tables (angles in radians, the beam origin in mm)."""

    azimuths: np.ndarray  # the distinct beam azimuths, ascending
    azimuth_of: np.ndarray  # each beam's index in ``azimuths``
    cos_altitude: np.ndarray
    sin_altitude: np.ndarray
    along: float  # beam_to_lidar_transform (0, 3) and (2, 3)
    up: float
    distance: float  # from the lidar origin to the beam origin


def _fill(out: np.ndarray, encoder: np.ndarray, beam: _Geometry, transform: np.ndarray) -> None:
    """``out[0]``, ``out[1]``: direction and offset of the columns at ``encoder`` angles,
    with XYZLut's operations in its order."""
    # the cosine and sine of each pixel's angle, once per distinct beam azimuth (sensors
    # repeat a few over their beams): the same inputs, the same bits
    angle = encoder[:, None] + beam.azimuths[None, :]  # (columns, distinct azimuths)
    # x, y: (columns, beams); z: (beams,), the same in every column (broadcast, not copied)
    direction = (
        np.cos(angle)[:, beam.azimuth_of] * beam.cos_altitude,
        np.sin(angle)[:, beam.azimuth_of] * beam.cos_altitude,
        beam.sin_altitude,
    )
    offset = (
        (np.cos(encoder) * beam.along)[:, None] - direction[0] * beam.distance,
        (np.sin(encoder) * beam.along)[:, None] - direction[1] * beam.distance,
        -direction[2] * beam.distance + beam.up,
    )
    rotation, shift = transform[:3, :3], transform[:3, 3]
    for table, (x, y, z), add in ((0, direction, None), (1, offset, shift)):
        for j in range(3):  # (x, y, z) times the rotation transposed, in XYZLut's order
            r0, r1, r2 = rotation[j]
            total = x * r0 + y * r1 + z * r2
            if add is not None:
                total += add[j]
            out[table, ..., j] = total * RANGE_UNIT
