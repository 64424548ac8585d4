"""Headerless binary point files (``.bin``): the layout is declared, never guessed in silence.

A ``.bin`` sweep is bare little-endian records with nothing saying what they
are: KITTI writes 4 float32 (x, y, z, intensity), nuScenes 5 (… ring), the
mmdetection3d Waymo conversion 6. A 160-byte nuScenes file divides by 16 as
well as by 20, so reading by size alone gives wrong points without a sound.
Hence:

* a *layout* names the record: a preset from :data:`LAYOUTS` or any numpy
  structured dtype with x, y, z fields;
* without one, an unambiguous name picks the preset (``*.pcd.bin`` is
  nuScenes, :data:`NAME_PATTERNS`) and :func:`describe_layout` says so; other
  names are read as KITTI, the common case, *checked*;
* every read is checked (:func:`implausible`): the size must divide by the
  record size, at most ``max_nonfinite`` of the points may have NaN/inf
  coordinates, no coordinate may pass ``max_coordinate`` metres, and a
  preset's bounded fields stay in range (KITTI reflectance 0..1, nuScenes
  ring 0..255: a shifted read puts negative coordinates there). A failure
  is a :class:`DecodeError` naming the file, the layout tried and the presets
  that fit the file's size, each marked plausible or not.

The checks look at a sample of :data:`SAMPLE` records, the first and the last
half of it: a wrong layout shifts every record, so a sample sees it, and a
read stays as fast as ``np.fromfile`` whatever the file's size (BENCHMARKS.md).
They guard against misreads; they do not validate every point. In the common
case (every sampled value inside its bounds) two comparisons against
precomputed bound vectors decide; only a sample that fails them goes through
:func:`implausible`, which finds the reason.
"""

from __future__ import annotations

import fnmatch
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters.errors import DecodeError
from adapters.lidar._points import as_points


def _f4(*names: str) -> np.dtype[Any]:
    return np.dtype([(n, "<f4") for n in names])


@dataclass(frozen=True, slots=True)
class BinLayout:
    """One record layout of a headerless point file."""

    name: str
    dtype: np.dtype[Any]
    bounds: tuple[tuple[str, float, float], ...] = ()
    """(field, low, high): the range every value of the field lies in, both ends included."""
    about: str = ""


LAYOUTS: dict[str, BinLayout] = {
    "kitti": BinLayout(
        "kitti", _f4("x", "y", "z", "intensity"), (("intensity", 0.0, 1.0),),
        about="KITTI velodyne: x, y, z (m), reflectance 0..1 (float32)",
    ),
    "xyzi": BinLayout(
        "xyzi", _f4("x", "y", "z", "intensity"),
        about="KITTI-shaped, any intensity scale: x, y, z, intensity (float32)",
    ),
    "nuscenes": BinLayout(
        "nuscenes", _f4("x", "y", "z", "intensity", "ring"), (("ring", 0.0, 255.0),),
        about="nuScenes LIDAR_TOP .pcd.bin: x, y, z, intensity, ring (laser index, float32)",
    ),
    "waymo": BinLayout(
        "waymo", _f4("x", "y", "z", "intensity", "elongation", "timestamp"),
        about="Waymo as converted by mmdetection3d: x, y, z, intensity, elongation, "
        "timestamp (float32)",
    ),
    "xyz": BinLayout("xyz", _f4("x", "y", "z"), about="x, y, z only (float32)"),
}  # fmt: skip
"""The named presets; add to it to name a layout of your own."""

NAME_PATTERNS: list[tuple[str, str]] = [("*.pcd.bin", "nuscenes")]
"""(file-name pattern, preset): names that say their layout without a doubt."""

DEFAULT_LAYOUT = "kitti"
"""Read, with checks, when neither a layout nor a name pattern says otherwise."""

MAX_COORDINATE = 1000.0
"""Default bound (metres) on any coordinate: a misread float is rarely this tame."""

MAX_NONFINITE = 0.1
"""Default largest share of points whose coordinates may be NaN or inf."""

SAMPLE = 256
"""Records the plausibility checks look at (first and last halves; all of a smaller file)."""

LayoutLike = str | BinLayout | np.dtype[Any] | npt.DTypeLike


def resolve_layout(layout: LayoutLike) -> BinLayout:
    """A preset name, a :class:`BinLayout` or a numpy structured dtype -> a :class:`BinLayout`."""
    if isinstance(layout, BinLayout):
        return layout
    if isinstance(layout, str) and layout in LAYOUTS:
        return LAYOUTS[layout]
    try:
        dtype = np.dtype(layout)
    except TypeError:
        dtype = None
    if dtype is None or dtype.names is None:
        raise ValueError(
            f"layout {layout!r} is neither a preset ({', '.join(LAYOUTS)}) "
            "nor a numpy structured dtype"
        )
    missing = [a for a in ("x", "y", "z") if a not in dtype.names]
    if missing:
        raise ValueError(f"layout {dtype} has no {', '.join(missing)} field")
    return BinLayout(f"dtype {dtype.descr}", dtype)


def layout_from_name(path: str | Path) -> BinLayout | None:
    """The preset a file's name declares (``*.pcd.bin``: nuScenes), or None."""
    name = Path(path).name.lower()
    for pattern, preset in NAME_PATTERNS:
        if fnmatch.fnmatch(name, pattern):
            return LAYOUTS[preset]
    return None


def describe_layout(layout: LayoutLike | None, paths: list[Path]) -> str:
    """One line saying which layout ``.bin`` files will be read with, and why."""
    if layout is not None:
        chosen = resolve_layout(layout)
        return f"{chosen.name} (given)"
    named = {layout_from_name(p) for p in paths}
    if len(named) == 1 and None not in named:
        chosen = next(iter(named))  # type: ignore[assignment]
        pattern = next(p for p, n in NAME_PATTERNS if n == chosen.name)
        return f"{chosen.name} (from the {pattern} file names; give layout= to override)"
    if None in named and len(named) > 1:
        patterns = ", ".join(p for p, _ in NAME_PATTERNS)
        return f"by file name ({patterns}), else {DEFAULT_LAYOUT}, checked"
    return f"{DEFAULT_LAYOUT} (no layout given; values checked, give layout= to be sure)"


def read_bin(
    path: str | Path,
    layout: LayoutLike | None = None,
    *,
    max_coordinate: float = MAX_COORDINATE,
    max_nonfinite: float = MAX_NONFINITE,
    check: bool = True,
) -> np.ndarray:
    """A headerless point file as a point array (the file's bytes are the array when
    the layout starts with x, y, z, intensity float32: no copy, no parse).

    ``layout=None`` takes the preset the name declares, else KITTI. Raises
    :class:`DecodeError` (file, layout tried, presets that fit the size) when the
    size does not divide by the record size or, with ``check``, the values are
    implausible for the layout.
    """
    if isinstance(layout, str) and layout in LAYOUTS:
        chosen = LAYOUTS[layout]
    elif layout is not None:
        chosen = resolve_layout(layout)
    else:
        chosen = layout_from_name(path) or LAYOUTS[DEFAULT_LAYOUT]
    with open(path, "rb") as file:  # not Path.read_bytes: its overhead shows on a sweep
        raw = file.read()
    size = chosen.dtype.itemsize
    if len(raw) % size:
        raise DecodeError(
            f"{path}: byte {len(raw) - len(raw) % size}: size {len(raw)} is not a multiple of "
            f"{size} ({_record(chosen)} of layout {chosen.name}); "
            + _fitting(raw, chosen, max_coordinate, max_nonfinite)
        )
    array = np.frombuffer(raw, chosen.dtype)
    if check and not _clearly_plausible(raw, chosen, max_coordinate):
        problem = implausible(sample(array), chosen, max_coordinate, max_nonfinite)
        if problem:
            raise DecodeError(
                f"{path}: read as layout {chosen.name} ({_record(chosen)}), {problem}; "
                f"{_fitting(raw, chosen, max_coordinate, max_nonfinite)}"
            )
    return as_points(array, path)


def _clearly_plausible(raw: bytes, layout: BinLayout, max_coordinate: float) -> bool:
    """The common case in a handful of numpy calls: every value of the first and last
    ``SAMPLE // 2`` records of an all-float32 layout lies in its bounds (NaN fails
    them). False means "look closer" (:func:`implausible`), not "implausible"."""
    key = (id(layout), max_coordinate)
    known = _BOUNDS.get(key)
    if known is None or known[0] is not layout:
        known = _BOUNDS[key] = (layout, _sample_bounds(layout, max_coordinate))
    bounds = known[1]
    if bounds is None or len(raw) < SAMPLE * layout.dtype.itemsize:
        return False
    low, high = bounds
    edge = low.nbytes
    # the first and last `edge` bytes as the two rows of one (2, n) array: no copy
    ends = np.ndarray((2, len(low)), np.float32, raw, 0, (len(raw) - edge, 4))
    return bool((low <= ends).all() and (ends <= high).all())


_Bounds = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
_BOUNDS: dict[tuple[int, float], tuple[BinLayout, _Bounds | None]] = {}


def _sample_bounds(layout: BinLayout, max_coordinate: float) -> _Bounds | None:
    """Per-value bounds of ``SAMPLE // 2`` records, tiled, for an all-float32 layout."""
    if not _all_float32(layout.dtype):
        return None
    names = layout.dtype.names or ()
    low = np.full(len(names), -np.inf, np.float32)
    high = np.full(len(names), np.inf, np.float32)
    for i, name in enumerate(names):
        if name in ("x", "y", "z"):
            low[i], high[i] = -max_coordinate, max_coordinate
    for name, lo, hi in layout.bounds:
        if name in names:
            i = names.index(name)
            low[i], high[i] = max(low[i], lo), min(high[i], hi)
    return np.tile(low, SAMPLE // 2), np.tile(high, SAMPLE // 2)


def sample(array: np.ndarray, size: int = SAMPLE) -> np.ndarray:
    """The first and the last ``size // 2`` records of ``array`` (all of it when shorter)."""
    if len(array) <= size:
        return array
    raw = array.view(np.uint8)  # bytes copy fast; structured records copy field by field
    half = size // 2 * array.dtype.itemsize
    return np.concatenate((raw[:half], raw[-half:])).view(array.dtype)


def implausible(
    array: np.ndarray,
    layout: BinLayout,
    max_coordinate: float = MAX_COORDINATE,
    max_nonfinite: float = MAX_NONFINITE,
) -> str | None:
    """Why ``array`` cannot be points of ``layout`` (None when it can)."""
    if len(array) == 0:
        return None
    names = array.dtype.names or ()
    if _all_float32(array.dtype):
        # one contiguous row per field: numpy reduces rows fast, strided columns slowly
        columns = array.view(np.float32).reshape(len(array), -1).T.copy()
        lo, hi = columns.min(axis=1).tolist(), columns.max(axis=1).tolist()
        ranges = dict(zip(names, zip(lo, hi, strict=True), strict=True))
    else:
        ranges = {n: (float(array[n].min()), float(array[n].max())) for n in ("x", "y", "z")}
    xyz = [*ranges["x"], *ranges["y"], *ranges["z"]]
    if all(map(math.isfinite, xyz)):  # NaN or inf anywhere makes a min or max so
        worst = max(map(abs, xyz))
    else:  # the slow path only when some value is NaN or inf
        pos = np.stack([array[a].astype(np.float64) for a in "xyz"], axis=1)
        finite = np.isfinite(pos).all(axis=1)
        share = 1.0 - float(finite.mean())
        if share > max_nonfinite:
            return (
                f"{share:.0%} of the points have NaN or inf coordinates "
                f"(at most {max_nonfinite:.0%} expected)"
            )
        worst = float(np.abs(pos[finite]).max()) if finite.any() else 0.0
        for name in names:
            values = array[name]
            good = values[np.isfinite(values)] if values.dtype.kind == "f" else values
            ranges[name] = (float(good.min()), float(good.max())) if len(good) else (0.0, 0.0)
    if worst > max_coordinate:
        return f"a coordinate of {worst:.4g} m is beyond max_coordinate = {max_coordinate:g} m"
    for name, low, high in layout.bounds:
        got = ranges.get(name)
        if got is not None and not (low <= got[0] and got[1] <= high):
            return (
                f"{name} spans {got[0]:.4g}..{got[1]:.4g}, outside the layout's {low:g}..{high:g}"
            )
    return None


@functools.lru_cache(maxsize=64)
def _all_float32(dtype: np.dtype[Any]) -> bool:
    names = dtype.names or ()
    return dtype.itemsize == 4 * len(names) and all(dtype[n] == np.dtype("<f4") for n in names)


def _record(layout: BinLayout) -> str:
    names = layout.dtype.names or ()
    return f"{layout.dtype.itemsize}-byte records: {', '.join(names)}"


def _fitting(raw: bytes, tried: BinLayout, max_coordinate: float, max_nonfinite: float) -> str:
    fits = []
    for preset in LAYOUTS.values():
        if preset.name == tried.name or len(raw) % preset.dtype.itemsize:
            continue
        array = np.frombuffer(raw, preset.dtype)
        problem = implausible(sample(array), preset, max_coordinate, max_nonfinite)
        verdict = "plausible" if problem is None else "implausible"
        fits.append(f"{preset.name} ({preset.dtype.itemsize} B, {verdict})")
    if not fits:
        return f"no preset fits its {len(raw)} bytes; give layout= a numpy dtype"
    return f"presets that fit its {len(raw)} bytes: {', '.join(fits)}; give layout= to choose"
