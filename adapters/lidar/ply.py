"""Read ``.ply`` point clouds: numpy for plain vertex tables, open3d otherwise.

When the vertex element comes first and has only scalar properties (what
LiDAR tools write), its rows are read with numpy directly, binary or ASCII,
keeping every property. Anything fancier (lists before the vertices) goes to
open3d's tensor reader.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from adapters.lidar.pcd import _read_with_open3d
from adapters.lidar.points import normalize
from fusion.errors import DecodeError

_TYPES = {
    "char": "i1",
    "int8": "i1",
    "uchar": "u1",
    "uint8": "u1",
    "short": "i2",
    "int16": "i2",
    "ushort": "u2",
    "uint16": "u2",
    "int": "i4",
    "int32": "i4",
    "uint": "u4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}


def read_ply(path: str | Path) -> np.ndarray:
    """The vertices of a PLY file as a point array (x, y, z, intensity first)."""
    path = Path(path)
    raw = path.read_bytes()
    end = raw.find(b"end_header")
    if not raw.startswith(b"ply") or end < 0:
        raise DecodeError(f"{path}: byte 0: not a PLY file (no 'ply' magic or no end_header)")
    offset = raw.find(b"\n", end) + 1
    lines = raw[:end].decode("ascii", "replace").splitlines()
    fmt = ""
    elements: list[tuple[str, int, list[tuple[str, str]], bool]] = []
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "format":
            fmt = parts[1]
        elif parts[0] == "element":
            elements.append((parts[1], int(parts[2]), [], True))
        elif parts[0] == "property" and elements:
            name, count, props, _scalar = elements[-1]
            if parts[1] == "list":
                elements[-1] = (name, count, props, False)
            else:
                props.append((parts[2], _TYPES.get(parts[1], "")))
    if not elements or elements[0][0] != "vertex" or not elements[0][3]:
        return _open3d_points(path)
    _name, count, props, _ = elements[0]
    if any(code == "" for _, code in props):
        return _open3d_points(path)
    if fmt == "ascii":
        table = np.loadtxt(io.BytesIO(raw[offset:]), dtype=np.float64, ndmin=2, max_rows=count)
        if table.shape[0] != count:
            raise DecodeError(
                f"{path}: byte {offset}: expected {count} vertices, found {table.shape[0]}"
            )
        columns = {n: table[:, i].astype(code) for i, (n, code) in enumerate(props)}
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        dtype = np.dtype([(n, order + code) for n, code in props])
        if len(raw) - offset < count * dtype.itemsize:
            raise DecodeError(
                f"{path}: byte {offset}: {count} vertices need "
                f"{count * dtype.itemsize} bytes, file has {len(raw) - offset}"
            )
        array = np.frombuffer(raw, dtype, count=count, offset=offset)
        columns = {
            n: array[n].astype(array[n].dtype.newbyteorder("=")) for n in array.dtype.names or ()
        }
    return normalize(columns, count)


def _open3d_points(path: Path) -> np.ndarray:
    columns = _read_with_open3d(path)
    return normalize(columns, len(columns["x"]))
