"""Read ``.ply`` point clouds: numpy for plain vertex tables, open3d otherwise.

When the vertex element comes first and has only scalar properties (what
LiDAR tools such as CloudCompare write), its rows are read with numpy
directly, binary or ASCII, keeping every property. Anything fancier (list
properties or other elements before the vertices) goes to open3d's tensor
reader. A header line without its value, an unknown format, or vertices
without x, y, z is a :class:`DecodeError` naming the file and the line.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from adapters.errors import DecodeError
from adapters.lidar._points import as_points, normalize

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
_FORMATS = ("ascii", "binary_little_endian", "binary_big_endian")
_Element = tuple[str, int, list[tuple[str, str]], bool]  # name, count, properties, all scalar


def read_ply(path: str | Path) -> np.ndarray:
    """The vertices of a PLY file as a point array (x, y, z, intensity first)."""
    path = Path(path)
    raw = path.read_bytes()
    end = raw.find(b"end_header")
    if not raw.startswith(b"ply") or end < 0:
        raise DecodeError(f"{path}: byte 0: not a PLY file (no 'ply' magic or no end_header)")
    offset = raw.find(b"\n", end) + 1
    fmt, elements = _header(raw[:end].decode("ascii", "replace"), path)
    if not elements or elements[0][0] != "vertex" or not elements[0][3]:
        return _open3d_points(path)
    _name, count, props, _ = elements[0]
    if any(code == "" for _, code in props):
        return _open3d_points(path)
    if fmt == "ascii":
        dtype = np.dtype([(n, code) for n, code in props])
        if count == 0:
            return as_points(np.zeros(0, dtype), path)
        try:
            array = np.loadtxt(io.BytesIO(raw[offset:]), dtype=dtype, ndmin=1, max_rows=count)
        except ValueError as err:
            raise DecodeError(f"{path}: byte {offset}: ascii vertices: {err}") from None
        if len(array) != count:
            raise DecodeError(
                f"{path}: byte {offset}: expected {count} vertices, found {len(array)}"
            )
        return as_points(array, path)
    order = "<" if fmt == "binary_little_endian" else ">"
    dtype = np.dtype([(n, order + code) for n, code in props])
    if len(raw) - offset < count * dtype.itemsize:
        raise DecodeError(
            f"{path}: byte {offset}: {count} vertices need "
            f"{count * dtype.itemsize} bytes, file has {len(raw) - offset}"
        )
    array = np.frombuffer(raw, dtype, count=count, offset=offset)
    if order == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return as_points(array, path)


def _header(text: str, path: Path) -> tuple[str, list[_Element]]:
    fmt = ""
    elements: list[_Element] = []
    at = 0
    for line in text.splitlines(keepends=True):
        where, at = at, at + len(line)
        parts = line.split()
        if not parts or parts[0] in ("ply", "comment", "obj_info"):
            continue
        word = parts[0]
        wanted = {"format": 3, "element": 3, "property": 3}.get(word, 1)
        if word == "property" and len(parts) > 1 and parts[1] == "list":
            wanted = 5
        if len(parts) < wanted:
            raise DecodeError(
                f"{path}: byte {where}: header line {line.strip()!r} is missing its value "
                f"(expected {_EXPECTED[word if wanted != 5 else 'list']})"
            )
        if word == "format":
            if parts[1] not in _FORMATS:
                raise DecodeError(
                    f"{path}: byte {where}: format {parts[1]!r} is not one of {', '.join(_FORMATS)}"
                )
            fmt = parts[1]
        elif word == "element":
            if not parts[2].isdigit():
                raise DecodeError(
                    f"{path}: byte {where}: element {parts[1]} count {parts[2]!r} is not a number"
                )
            elements.append((parts[1], int(parts[2]), [], True))
        elif word == "property":
            if not elements:
                raise DecodeError(f"{path}: byte {where}: property before any element")
            name, count, props, _scalar = elements[-1]
            if parts[1] == "list":
                elements[-1] = (name, count, props, False)
            else:
                props.append((parts[2], _TYPES.get(parts[1], "")))
    if not fmt:
        raise DecodeError(f"{path}: byte 0: the PLY header has no format line")
    return fmt, elements


_EXPECTED = {
    "format": "'format <ascii|binary_little_endian|binary_big_endian> <version>'",
    "element": "'element <name> <count>'",
    "property": "'property <type> <name>'",
    "list": "'property list <count type> <item type> <name>'",
}


def read_with_open3d(path: Path) -> dict[str, np.ndarray]:
    """Columns of a cloud read by open3d's tensor reader (positions split into x, y, z)."""
    import open3d as o3d

    cloud = o3d.t.io.read_point_cloud(path)
    if "positions" not in cloud.point:
        raise DecodeError(f"{path}: open3d found no points in this file")
    positions = cloud.point.positions.numpy()
    columns = {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2]}
    for key in cloud.point:
        if key != "positions":
            value = cloud.point[key].numpy()
            columns[key] = value[:, 0] if value.ndim == 2 and value.shape[1] == 1 else value
    return columns


def _open3d_points(path: Path) -> np.ndarray:
    columns = read_with_open3d(path)
    return normalize(columns, len(columns["x"]))
