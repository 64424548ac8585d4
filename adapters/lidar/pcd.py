"""Read PCL ``.pcd`` files into point arrays, keeping every field.

ASCII and binary data are read with numpy straight into a structured array:
that is faster than open3d's reader and keeps fields open3d's legacy reader
drops (intensity, ring, rgb...). ``binary_compressed`` (LZF) data is handed to
open3d's tensor reader, which decompresses in C++ and keeps extra attributes.
Header: https://pointclouds.org/documentation/tutorials/pcd_file_format.html
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from adapters.lidar.points import normalize
from fusion.errors import DecodeError

_TYPES = {
    ("F", 4): "<f4",
    ("F", 8): "<f8",
    ("I", 1): "i1",
    ("I", 2): "<i2",
    ("I", 4): "<i4",
    ("I", 8): "<i8",
    ("U", 1): "u1",
    ("U", 2): "<u2",
    ("U", 4): "<u4",
    ("U", 8): "<u8",
}
_MAX_HEADER = 64 * 1024


def read_pcd(path: str | Path) -> np.ndarray:
    """The points of a PCD file as a structured array (x, y, z, intensity first).

    Raises :class:`DecodeError` naming the file and byte offset when the
    header is malformed or the data section is shorter than the header says.
    """
    path = Path(path)
    raw = path.read_bytes()
    header, offset = _header(raw, path)
    dtype, count = _dtype(header, path)
    kind = header["DATA"][0].lower()
    if kind == "ascii":
        table = np.loadtxt(io.BytesIO(raw[offset:]), dtype=np.float64, ndmin=2)
        width = sum(int(c) for c in header.get("COUNT", ["1"] * len(dtype.names or ())))
        if table.shape != (count, width) and not (count == 0 and table.size == 0):
            raise DecodeError(
                f"{path}: byte {offset}: expected {count} rows of {width} values, "
                f"found {table.shape[0]} rows of {table.shape[1] if table.ndim > 1 else 0}"
            )
        columns: dict[str, np.ndarray] = {}
        col = 0
        for name in dtype.names or ():
            sub = dtype[name]
            n = int(np.prod(sub.shape)) if sub.shape else 1
            block = table[:, col : col + n]
            columns[name] = (block if sub.shape else block[:, 0]).astype(sub.base)
            col += n
    elif kind == "binary":
        need = count * dtype.itemsize
        if len(raw) - offset < need:
            raise DecodeError(
                f"{path}: byte {offset}: binary data of {count} points x {dtype.itemsize} bytes "
                f"needs {need} bytes, file has {len(raw) - offset}"
            )
        array = np.frombuffer(raw, dtype, count=count, offset=offset)
        columns = {name: array[name] for name in dtype.names or ()}
    elif kind == "binary_compressed":
        columns = _read_with_open3d(path)
        count = len(columns["x"])
    else:
        raise DecodeError(f"{path}: DATA {kind!r} is not ascii, binary or binary_compressed")
    columns = {k: v for k, v in columns.items() if k != "_"}  # "_" marks padding in PCL files
    return normalize(columns, count)


def _header(raw: bytes, path: Path) -> tuple[dict[str, list[str]], int]:
    header: dict[str, list[str]] = {}
    pos = 0
    while pos < min(len(raw), _MAX_HEADER):
        end = raw.find(b"\n", pos)
        if end < 0:
            break
        line = raw[pos:end].decode("ascii", "replace").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *values = line.split()
        header[key.upper()] = values
        if key.upper() == "DATA":
            return header, pos
    raise DecodeError(f"{path}: byte {pos}: no DATA line in the PCD header")


def _dtype(header: dict[str, list[str]], path: Path) -> tuple[np.dtype[Any], int]:
    try:
        names = header["FIELDS"]
        sizes = [int(s) for s in header["SIZE"]]
        types = [t.upper() for t in header["TYPE"]]
        counts = [int(c) for c in header.get("COUNT", ["1"] * len(names))]
        count = (
            int(header["POINTS"][0])
            if "POINTS" in header
            else (int(header["WIDTH"][0]) * int(header.get("HEIGHT", ["1"])[0]))
        )
        descr = []
        for i, (name, size, kind, n) in enumerate(zip(names, sizes, types, counts, strict=True)):
            unique = name if name != "_" or "_" not in names[:i] else f"_{i}"
            code = _TYPES[(kind, size)]
            descr.append((unique, code, (n,)) if n > 1 else (unique, code))
        return np.dtype(descr), count
    except (KeyError, ValueError, IndexError) as err:
        raise DecodeError(
            f"{path}: malformed PCD header (FIELDS/SIZE/TYPE/COUNT/POINTS): {err!r}"
        ) from err


def _read_with_open3d(path: Path) -> dict[str, np.ndarray]:
    import open3d as o3d

    cloud = o3d.t.io.read_point_cloud(path)
    if "positions" not in cloud.point:
        raise DecodeError(f"{path}: open3d found no points in this binary_compressed PCD")
    positions = cloud.point.positions.numpy()
    columns = {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2]}
    for key in cloud.point:
        if key != "positions":
            value = cloud.point[key].numpy()
            columns[key] = value[:, 0] if value.ndim == 2 and value.shape[1] == 1 else value
    return columns
