"""Which way up a video is: the display matrix, as the turn and flips that undo it.

Phones store video as the sensor saw it and write a *display matrix* (MP4
``tkhd``, FFmpeg's ``AV_PKT_DATA_DISPLAYMATRIX`` side data) saying how to turn
it for display. FFmpeg's tools apply it by default (``ffmpeg`` autorotate);
a reader that ignores it hands a model a sideways or upside-down picture.

The matrix is nine int32 values ``a b u c d v x y w`` (16.16 fixed point, ``w``
2.30). A stored pixel at column ``x``, row ``y`` is displayed at column
``a*x + c*y`` and row ``b*x + d*y`` (then shifted into the picture). For the
eight multiples of 90 degrees, with or without a mirror, that is one of:

* ``a, d`` non-zero: no transpose; ``a < 0`` mirrors columns, ``d < 0`` rows;
* ``b, c`` non-zero: transpose (display row = stored column); then ``b < 0``
  flips the rows and ``c < 0`` the columns of the transposed picture.

:class:`Orientation` holds that as three booleans, applies it to a numpy
array (a view: no copy), and names the libavfilter chain that does the same
in one pass (``transpose=<dir>``, ``hflip``, ``vflip``). Any other angle is
reported but not applied (``exact`` is False).

Sans-I/O: integers in, booleans and filter names out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_ONE = 1 << 16
"""1.0 in the matrix's 16.16 fixed point."""


@dataclass(frozen=True, slots=True)
class Orientation:
    """How to turn a stored picture upright (numpy axes: 0 = rows, 1 = columns)."""

    transpose: bool = False
    """Swap rows and columns first."""
    flip_rows: bool = False
    """Then reverse the row order (upside down)."""
    flip_cols: bool = False
    """Then reverse the column order (mirror)."""
    rotation: int = 0
    """Degrees counter-clockwise, as ffprobe and PyAV's ``VideoFrame.rotation`` report it
    (-90: turn the stored frame 90 degrees clockwise to show it)."""
    reflects: bool = False
    """The matrix mirrors (determinant < 0): a turn alone would show it mirrored."""
    exact: bool = True
    """A multiple of 90 degrees; other angles are reported, not applied."""
    matrix: tuple[int, ...] | None = None
    """The nine matrix values as stored, or None without a display matrix."""

    @property
    def identity(self) -> bool:
        """Nothing to do: the stored picture is already upright."""
        return not (self.transpose or self.flip_rows or self.flip_cols)

    def shape(self, width: int, height: int) -> tuple[int, int]:
        """``(width, height)`` of the upright picture of a ``width x height`` stored one."""
        return (height, width) if self.transpose else (width, height)

    def apply(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The upright view of a ``(height, width, ...)`` array (no copy)."""
        if self.transpose:
            array = array.swapaxes(0, 1)
        if self.flip_rows:
            array = array[::-1]
        if self.flip_cols:
            array = array[:, ::-1]
        return array

    def filters(self) -> list[tuple[str, str]]:
        """The libavfilter chain, ``[(name, args)]``, that turns the picture the same way.

        A transpose with any flips is one ``transpose`` pass; a half turn is
        ``vflip`` (free: it only walks the rows backwards) then ``hflip``.
        """
        if self.transpose:
            direction = {
                (False, False): "cclock_flip",  # the plain transpose
                (True, False): "cclock",
                (False, True): "clock",
                (True, True): "clock_flip",
            }[(self.flip_rows, self.flip_cols)]
            return [("transpose", f"dir={direction}")]
        chain: list[tuple[str, str]] = []
        if self.flip_rows:
            chain.append(("vflip", ""))
        if self.flip_cols:
            chain.append(("hflip", ""))
        return chain

    def describe(self) -> str:
        """A short phrase for logs and ``hyperframes info``."""
        if self.matrix is None:
            return "none"
        text = f"{self.rotation} deg" + (" mirrored" if self.reflects else "")
        return text if self.exact else text + " (not a multiple of 90: not applied)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rotation": self.rotation,
            "reflects": self.reflects,
            "transpose": self.transpose,
            "flip_rows": self.flip_rows,
            "flip_cols": self.flip_cols,
            "exact": self.exact,
            "matrix": None if self.matrix is None else list(self.matrix),
        }


UPRIGHT = Orientation()
"""No display matrix (or an identity one)."""


def from_matrix(matrix: Sequence[int] | None) -> Orientation:
    """The :class:`Orientation` a display matrix asks for (``None``: upright)."""
    if matrix is None:
        return UPRIGHT
    m = tuple(int(v) for v in matrix)
    if len(m) != 9:
        raise ValueError(f"a display matrix has 9 values, got {len(m)}")
    a, b, _, c, d = m[:5]
    if math.hypot(a, c) == 0 or math.hypot(b, d) == 0:
        return Orientation(exact=False, matrix=m)
    # FFmpeg's av_display_rotation_get, so the number is the one ffprobe prints.
    rotation = -math.degrees(math.atan2(b / math.hypot(b, d), a / math.hypot(a, c)))
    reflects = a * d - b * c < 0
    exact = _axis(a) + _axis(b) == 1 and _axis(c) + _axis(d) == 1
    deg = round(rotation)
    if not exact:
        return Orientation(rotation=deg, reflects=reflects, exact=False, matrix=m)
    if a != 0:
        return Orientation(
            flip_rows=d < 0, flip_cols=a < 0, rotation=deg, reflects=reflects, matrix=m
        )
    return Orientation(
        transpose=True, flip_rows=b < 0, flip_cols=c < 0, rotation=deg, reflects=reflects, matrix=m
    )


def _axis(value: int) -> int:
    """1 when ``value`` is +-1.0 in 16.16, 0 when it is 0, else 2 (not an axis swap/flip)."""
    if value == 0:
        return 0
    return 1 if abs(value) == _ONE else 2


_EXIF_MATRICES: dict[int, tuple[int, int, int, int]] = {
    2: (-_ONE, 0, 0, _ONE),  # mirrored left-right
    3: (-_ONE, 0, 0, -_ONE),  # half turn
    4: (_ONE, 0, 0, -_ONE),  # mirrored top-bottom
    5: (0, _ONE, _ONE, 0),  # transposed
    6: (0, _ONE, -_ONE, 0),  # turn 90 degrees clockwise to show
    7: (0, -_ONE, -_ONE, 0),  # anti-transposed
    8: (0, -_ONE, _ONE, 0),  # turn 90 degrees counter-clockwise to show
}


def exif_orientation(jpeg: bytes) -> Orientation | None:
    """The orientation a JPEG's EXIF block asks for (tag 0x0112), or None if it has none.

    Read from the bytes because PyAV cannot list a frame's side data once FFmpeg
    attaches an EXIF block to it, and the angle PyAV still reports loses the
    mirror of orientations 2, 4, 5 and 7. Only the APP1 segments before the
    image data are looked at; anything malformed is "no orientation".
    """
    pos = 2
    if jpeg[:2] != b"\xff\xd8":
        return None
    while pos + 4 <= len(jpeg) and jpeg[pos] == 0xFF:
        marker = jpeg[pos + 1]
        size = int.from_bytes(jpeg[pos + 2 : pos + 4], "big")
        if marker in (0xDA, 0xD9) or size < 2:  # start of scan / end: no more metadata
            return None
        body = jpeg[pos + 4 : pos + 2 + size]
        if marker == 0xE1 and body[:6] == b"Exif\0\0":
            value = _tiff_orientation(body[6:])
            if value in _EXIF_MATRICES:
                a, b, c, d = _EXIF_MATRICES[value]
                return from_matrix((a, b, 0, c, d, 0, 0, 0, 1 << 30))
            return None if value is None else UPRIGHT
        pos += 2 + size
    return None


def _tiff_orientation(tiff: bytes) -> int | None:
    """Tag 0x0112 of the first IFD of a TIFF header, or None."""
    if len(tiff) < 8 or tiff[:2] not in (b"II", b"MM"):
        return None
    order: Any = "little" if tiff[:2] == b"II" else "big"
    ifd = int.from_bytes(tiff[4:8], order)
    if ifd + 2 > len(tiff):
        return None
    count = int.from_bytes(tiff[ifd : ifd + 2], order)
    for i in range(min(count, 512)):
        entry = tiff[ifd + 2 + 12 * i : ifd + 14 + 12 * i]
        if len(entry) < 12:
            return None
        if int.from_bytes(entry[:2], order) == 0x0112:
            return int.from_bytes(entry[8:10], order)
    return None
