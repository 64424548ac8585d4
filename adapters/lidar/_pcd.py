"""Read and write PCL ``.pcd`` files, every field kept, every header checked.

The header (https://pointclouds.org/documentation/tutorials/pcd_file_format.html)
declares FIELDS with their SIZE, TYPE and COUNT; WIDTH x HEIGHT (HEIGHT > 1: an
organized cloud, rows of WIDTH points); POINTS; VIEWPOINT (tx ty tz qw qx qy qz,
the sensor pose the cloud was taken from); and DATA, one of:

* ``ascii``: one point per line, COUNT values per field;
* ``binary``: the points as packed little-endian records (numpy reads them
  straight into a structured array: no copy when x, y, z, intensity come first);
* ``binary_compressed``: two uint32 sizes, then LZF of the points transposed
  to one array per field (decoded by :mod:`adapters.lidar._lzf`).

Fields named ``_`` are padding (PCL writes them for alignment) and are dropped.
A header that lies is a :class:`DecodeError` naming the file, the byte and what
was expected: POINTS against WIDTH x HEIGHT, data sections shorter than POINTS
records, a line without its value, a TYPE/SIZE pair
the format does not have, a cloud without x, y, z. A data section *longer*
than POINTS records is read as PCL and Open3D read it: the POINTS records,
with a warning saying what followed them (``meta["trailing"]``).
"""

from __future__ import annotations

import io
import logging
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from adapters.errors import DecodeError
from adapters.lidar._lzf import LzfError, compress_literal, decompress
from adapters.lidar._points import as_points

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
_CODES = {np.dtype(code): key for key, code in _TYPES.items()}
log = logging.getLogger("adapters.lidar._pcd")
_MAX_HEADER = 64 * 1024
_PADDING = re.compile(r"_\d*")
_DEFAULT_VIEWPOINT = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
DataKind = Literal["ascii", "binary", "binary_compressed"]


@dataclass(frozen=True, slots=True)
class PcdHeader:
    """A parsed, checked PCD header; ``offset`` is where the data section starts."""

    fields: tuple[str, ...]
    dtype: np.dtype[Any]
    width: int
    height: int
    points: int
    data: DataKind
    offset: int
    version: str = "0.7"
    viewpoint: tuple[float, ...] = _DEFAULT_VIEWPOINT
    extra: dict[str, list[str]] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        """What a frame's ``meta`` keeps of the header (all msgpack-safe)."""
        return {
            "pcd_data": self.data,
            "width": self.width,
            "height": self.height,
            "viewpoint": list(self.viewpoint),
        }


def read_pcd(path: str | Path) -> np.ndarray:
    """The points of a PCD file as a structured array (x, y, z, intensity first).

    Raises :class:`DecodeError` naming the file and byte offset when the
    header is malformed or lies, or the data section does not match it.
    """
    return read_pcd_with_meta(path)[0]


def read_pcd_with_meta(path: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    """The points and the header's meta (``viewpoint``, ``width``, ``height``, ``pcd_data``,
    and ``trailing`` when data follows the POINTS records: it is left unread, a warning)."""
    with open(path, "rb") as file:  # not Path.read_bytes: its overhead shows on a sweep
        raw = file.read()
    header = parse_header(raw, path)
    array, trailing = _read_data(raw, header, path)
    padding = [n for n in array.dtype.names or () if _PADDING.fullmatch(n)]
    meta = header.meta()
    if trailing:  # as PCL does: read POINTS points, say what was left
        log.warning("%s: %s; read the %d points POINTS declares", path, trailing, header.points)
        meta["trailing"] = trailing
    return as_points(array, path, drop=padding), meta


_PARSED: dict[bytes, PcdHeader] = {}
_PARSED_MAX = 64


def parse_header(raw: bytes, path: str | Path = "<pcd>") -> PcdHeader:
    """Parse and check the header at the start of ``raw`` (up to and including DATA).

    The files of one sequence share their header byte for byte, so a header
    seen before is not parsed again: a sweep then reads at ``np.fromfile``'s
    speed (BENCHMARKS.md).
    """
    mark = raw.find(b"\nDATA ", 0, _MAX_HEADER)
    end = raw.find(b"\n", mark + 1) + 1 if mark >= 0 else 0
    known = _PARSED.get(raw[:end]) if end else None
    if known is not None:
        return known
    header = _parse_header(raw, path)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[raw[: header.offset]] = header
    return header


def _parse_header(raw: bytes, path: str | Path) -> PcdHeader:
    values: dict[str, tuple[int, list[str]]] = {}
    pos = 0
    limit = min(len(raw), _MAX_HEADER)
    while pos < limit:
        end = raw.find(b"\n", pos)
        if end < 0:
            break
        line_at = pos
        line = raw[pos:end].decode("ascii", "replace").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *rest = line.split()
        key = key.upper()
        if not rest:
            raise DecodeError(
                f"{path}: byte {line_at}: header line {key} has no value "
                f"(expected {_WHAT.get(key, 'a value')})"
            )
        values[key] = (line_at, rest)
        if key == "DATA":
            return _checked(values, pos, Path(path))
    raise DecodeError(f"{path}: byte {pos}: no DATA line in the PCD header")


_WHAT = {
    "VERSION": "a version such as 0.7",
    "FIELDS": "field names",
    "SIZE": "a byte size per field",
    "TYPE": "a type letter (F, I, U) per field",
    "COUNT": "an element count per field",
    "WIDTH": "an integer",
    "HEIGHT": "an integer",
    "POINTS": "an integer",
    "VIEWPOINT": "7 numbers: tx ty tz qw qx qy qz",
    "DATA": "ascii, binary or binary_compressed",
}


# long: one check per PCD header line (VERSION..DATA), each a bounded, precise message; the order
#   is the format's
def _checked(values: dict[str, tuple[int, list[str]]], offset: int, path: Path) -> PcdHeader:
    def need(key: str) -> tuple[int, list[str]]:
        if key not in values:
            raise DecodeError(f"{path}: byte {offset}: the PCD header has no {key} line")
        return values[key]

    def integers(key: str, items: list[str], at: int) -> list[int]:
        try:
            numbers = [int(v) for v in items]
        except ValueError:
            raise DecodeError(
                f"{path}: byte {at}: {key} {' '.join(items)}: expected integers"
            ) from None
        if any(n < 0 for n in numbers):
            raise DecodeError(f"{path}: byte {at}: {key} {' '.join(items)}: negative value")
        return numbers

    at, names = need("FIELDS")
    n = len(names)
    per_field: dict[str, list[str]] = {}
    for key in ("SIZE", "TYPE", "COUNT"):
        if key == "COUNT" and key not in values:
            per_field[key] = ["1"] * n
            continue
        key_at, items = need(key)
        if len(items) != n:
            raise DecodeError(
                f"{path}: byte {key_at}: {key} has {len(items)} values for {n} FIELDS "
                f"({' '.join(names)})"
            )
        per_field[key] = items
    sizes = integers("SIZE", per_field["SIZE"], values["SIZE"][0])
    counts = integers("COUNT", per_field["COUNT"], values.get("COUNT", (at, []))[0])
    descr: list[tuple[Any, ...]] = []
    for i, (name, size, kind, count) in enumerate(
        zip(names, sizes, per_field["TYPE"], counts, strict=True)
    ):
        code = _TYPES.get((kind.upper(), size))
        if code is None:
            raise DecodeError(
                f"{path}: byte {values['TYPE'][0]}: field {name!r} has TYPE {kind} SIZE {size}, "
                "not a PCD type (F: 4 or 8 bytes; I, U: 1, 2, 4 or 8)"
            )
        if count == 0:
            raise DecodeError(f"{path}: byte {values['COUNT'][0]}: field {name!r} has COUNT 0")
        unique = name if name != "_" else f"_{i}"  # PCL may repeat the padding name
        if name != "_" and names.count(name) > 1:
            raise DecodeError(f"{path}: byte {at}: field {name!r} appears twice in FIELDS")
        descr.append((unique, code, (count,)) if count > 1 else (unique, code))
    data_at, data = values["DATA"]
    kind = data[0].lower()
    if kind not in ("ascii", "binary", "binary_compressed"):
        raise DecodeError(
            f"{path}: byte {data_at}: DATA {data[0]!r} is not ascii, binary or binary_compressed"
        )

    def number(key: str) -> int | None:
        if key not in values:
            return None
        key_at, items = values[key]
        return integers(key, items[:1], key_at)[0]

    width, height, points = number("WIDTH"), number("HEIGHT") or 1, number("POINTS")
    if width is None:
        if points is None:
            raise DecodeError(f"{path}: byte {offset}: the PCD header has neither WIDTH nor POINTS")
        width = points // height
    if points is None:
        points = width * height
    if points != width * height:
        raise DecodeError(
            f"{path}: byte {values['POINTS'][0]}: POINTS {points} does not match "
            f"WIDTH x HEIGHT = {width} x {height} = {width * height}"
        )
    viewpoint: tuple[float, ...] = _DEFAULT_VIEWPOINT
    if "VIEWPOINT" in values:
        vp_at, vp = values["VIEWPOINT"]
        try:
            viewpoint = tuple(float(v) for v in vp)
        except ValueError:
            viewpoint = ()
        if len(viewpoint) != 7:
            raise DecodeError(
                f"{path}: byte {vp_at}: VIEWPOINT {' '.join(vp)}: expected {_WHAT['VIEWPOINT']}"
            )
    known = {"FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT", "POINTS", "VIEWPOINT", "DATA"}
    return PcdHeader(
        fields=tuple(names),
        dtype=np.dtype(descr),
        width=width,
        height=height,
        points=points,
        data=kind,  # type: ignore[arg-type]
        offset=offset,
        version=values.get("VERSION", (0, ["0.7"]))[1][0],
        viewpoint=viewpoint,
        extra={k: v for k, (_, v) in values.items() if k not in known},
    )


def _read_data(raw: bytes, header: PcdHeader, path: str | Path) -> tuple[np.ndarray, str]:
    """The POINTS records, and what followed them (``""``, or words for a warning)."""
    dtype, count, offset = header.dtype, header.points, header.offset
    available = len(raw) - offset
    if header.data == "ascii":
        if count == 0:
            return np.zeros(0, dtype), ""
        try:
            array = np.loadtxt(io.BytesIO(raw[offset:]), dtype=dtype, ndmin=1, comments=None)
        except ValueError as err:
            raise DecodeError(f"{path}: byte {offset}: ascii data: {err}") from None
        if len(array) < count:
            raise DecodeError(
                f"{path}: byte {offset}: ascii data has {len(array)} points, POINTS says {count}"
            )
        extra = len(array) - count
        return array[:count], f"{extra} line(s) of points beyond POINTS {count}" if extra else ""
    if header.data == "binary":
        need = count * dtype.itemsize
        if available < need:
            raise DecodeError(
                f"{path}: byte {offset}: binary data of {count} points x {dtype.itemsize} bytes "
                f"needs {need} bytes, file has {available}"
            )
        extra = available - need
        trailing = (
            f"{extra} byte(s) after the {count} points of {dtype.itemsize} bytes "
            f"(room for {available // dtype.itemsize} points; POINTS says {count})"
            if extra
            else ""
        )
        return np.frombuffer(raw, dtype, count=count, offset=offset), trailing
    return _read_compressed(raw, header, path)


def _read_compressed(raw: bytes, header: PcdHeader, path: str | Path) -> tuple[np.ndarray, str]:
    dtype, count, offset = header.dtype, header.points, header.offset
    if len(raw) - offset < 8:
        raise DecodeError(f"{path}: byte {offset}: binary_compressed data has no size words")
    packed, size = struct.unpack_from("<II", raw, offset)
    if size != count * dtype.itemsize:
        raise DecodeError(
            f"{path}: byte {offset + 4}: binary_compressed data unpacks to {size} bytes; "
            f"POINTS {count} x {dtype.itemsize} bytes is {count * dtype.itemsize}"
        )
    if packed > len(raw) - offset - 8:
        raise DecodeError(
            f"{path}: byte {offset}: binary_compressed data of {packed} bytes, "
            f"file has {len(raw) - offset - 8}"
        )
    try:
        plain = decompress(memoryview(raw)[offset + 8 : offset + 8 + packed], size) if size else b""
    except LzfError as err:
        raise DecodeError(f"{path}: byte {offset + 8}: binary_compressed data: {err}") from None
    out = np.empty(count, dtype)
    start = 0
    for name in dtype.names or ():
        sub = dtype[name]
        elements = count * (sub.itemsize // sub.base.itemsize)
        out[name] = np.frombuffer(plain, sub.base, elements, start).reshape((count, *sub.shape))
        start += count * sub.itemsize
    extra = len(raw) - offset - 8 - packed
    return out, f"{extra} byte(s) after the compressed data" if extra else ""


def write_pcd(
    path: str | Path,
    points: np.ndarray,
    *,
    data: DataKind = "binary",
    width: int | None = None,
    viewpoint: tuple[float, ...] = _DEFAULT_VIEWPOINT,
) -> None:
    """Write a structured array as a PCD (every field, subarrays as COUNT > 1).

    ``binary_compressed`` is written as LZF literal runs: valid for every
    reader, not smaller. ``width`` (default: all points in one row) makes the
    cloud organized, ``len(points) // width`` rows.
    """
    names = points.dtype.names or ()
    header_fields: list[tuple[str, str, int, int]] = []
    for name in names:
        sub = points.dtype[name]
        key = _CODES.get(sub.base.newbyteorder("<") if sub.base.byteorder == ">" else sub.base)
        if key is None:
            raise ValueError(f"field {name!r} of type {sub.base} has no PCD type")
        count = int(np.prod(sub.shape)) if sub.shape else 1
        header_fields.append(("_" if _PADDING.fullmatch(name) else name, key[0], key[1], count))
    n = len(points)
    width = n if width is None else width
    height = n // width if width else 1
    if width * height != n:
        raise ValueError(f"{n} points do not make rows of width {width}")
    lines = [
        "# .PCD v0.7 - Point Cloud Data file format",
        "VERSION 0.7",
        "FIELDS " + " ".join(f[0] for f in header_fields),
        "SIZE " + " ".join(str(f[2]) for f in header_fields),
        "TYPE " + " ".join(f[1] for f in header_fields),
        "COUNT " + " ".join(str(f[3]) for f in header_fields),
        f"WIDTH {width}",
        f"HEIGHT {height}",
        "VIEWPOINT " + " ".join(_number(v) for v in viewpoint),
        f"POINTS {n}",
        f"DATA {data}",
    ]
    head = ("\n".join(lines) + "\n").encode("ascii")
    packed = np.empty(n, _pcd_dtype(points.dtype))
    for name in names:
        packed[name] = points[name]
    if data == "binary":
        body = packed.tobytes()
    elif data == "binary_compressed":
        plain = b"".join(np.ascontiguousarray(packed[name]).tobytes() for name in names)
        lzf = compress_literal(plain)
        body = struct.pack("<II", len(lzf), len(plain)) + lzf
    else:
        body = _ascii_rows(packed).encode("ascii") if n else b""
    Path(path).write_bytes(head + body)


def _number(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def _pcd_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    descr = []
    for name in dtype.names or ():
        sub = dtype[name]
        base = sub.base.newbyteorder("<") if sub.base.byteorder == ">" else sub.base
        descr.append((name, base, sub.shape) if sub.shape else (name, base))
    return np.dtype(descr)


def _ascii_rows(points: np.ndarray) -> str:
    columns: list[list[str]] = []
    for name in points.dtype.names or ():
        column = points[name].reshape(len(points), -1)
        kind = column.dtype.kind
        for j in range(column.shape[1]):
            values = column[:, j]
            if kind == "f":  # the shortest text that reads back to the same float
                columns.append([np.format_float_positional(v, unique=True) for v in values])
            else:
                columns.append([str(v) for v in values.tolist()])
    return "".join(" ".join(row) + "\n" for row in zip(*columns, strict=True))
