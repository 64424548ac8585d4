"""Per-laser calibration of a Velodyne sensor, and the two file formats it comes in.

A calibration says, for each laser, its vertical angle and the corrections a
decoder applies to a raw return: a rotational correction (subtracted from the
block's azimuth), a vertical and a horizontal offset of the laser's origin, a
distance correction (one value, or the two-point form of the HDL-64E: far
value plus near x and y values), and the HDL-64E's intensity correction
(focal distance and slope, clamped to a per-laser min/max). Every Velodyne
decoder uses this model: the ROS velodyne driver, velodyne_decoder, VeloView.

Files:

* **YAML**, the ROS velodyne driver's and velodyne_decoder's format
  (``distance_resolution``, ``lasers: [{laser_id, rot_correction,
  vert_correction, dist_correction, ...}]``, angles in radians, lengths in
  metres);
* **XML**, Velodyne's ``db.xml`` as shipped with each HDL-64E and the
  calibration files of VeloView (a boost-serialization archive: ``distLSB_``
  in cm, ``points_/item/px`` with ``rotCorrection_``/``vertCorrection_`` in
  degrees and distances in cm, ``minIntensity_``/``maxIntensity_`` lists).
  The conversion is the ROS driver's ``gen_calibration.py``.

Both are read by :func:`read_calibration`; :meth:`Calibration.to_yaml` writes
the YAML form (what velodyne_decoder's ``Calibration.from_string`` reads).
A calibration file is input like any other: it is bounded in size and laser
count, every value must be finite, and XML entity declarations are refused.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters._side_files import CALIBRATION_LIMIT, read_small_text
from adapters.errors import DecodeError
from fusion.errors import ConfigError

MAX_LASERS = 128
MAX_FILE_BYTES = CALIBRATION_LIMIT

_ADVANCED = (
    "dist_correction_m",
    "dist_correction_x_m",
    "dist_correction_y_m",
    "horiz_offset_m",
    "focal_distance",
    "focal_slope",
)


@dataclass(frozen=True, eq=False)
class Calibration:
    """One value per laser (laser index = position in the packet's firing order).

    Angles are degrees here (``vert_deg``, ``rot_deg``), lengths metres.
    ``rot_deg`` is subtracted from the azimuth, as in the ROS driver and
    VeloView. The optional fields are all-zero when absent; intensities
    default to 0..255.
    """

    vert_deg: tuple[float, ...]
    rot_deg: tuple[float, ...] = ()
    distance_resolution_m: float = 0.002
    vert_offset_m: tuple[float, ...] = ()
    horiz_offset_m: tuple[float, ...] = ()
    dist_correction_m: tuple[float, ...] = ()
    dist_correction_x_m: tuple[float, ...] = ()
    dist_correction_y_m: tuple[float, ...] = ()
    focal_distance: tuple[float, ...] = ()
    """In the YAML's unit (metres x 100 / 100: the ROS driver divides it by 131)."""
    focal_slope: tuple[float, ...] = ()
    min_intensity: tuple[float, ...] = ()
    max_intensity: tuple[float, ...] = ()
    source: str = field(default="", compare=False)
    """Where it came from (a file name, "nominal table of the ... manual")."""

    def __post_init__(self) -> None:
        n = len(self.vert_deg)
        if not 1 <= n <= MAX_LASERS:
            raise ConfigError(f"a calibration has 1..{MAX_LASERS} lasers, got {n}")
        for name in (
            "vert_deg",
            "rot_deg", "vert_offset_m", "horiz_offset_m", "dist_correction_m",
            "dist_correction_x_m", "dist_correction_y_m", "focal_distance", "focal_slope",
            "min_intensity", "max_intensity",
        ):  # fmt: skip
            values = getattr(self, name)
            if values and len(values) != n:
                raise ConfigError(f"calibration {name}: {len(values)} values for {n} lasers")
            if not all(math.isfinite(v) for v in values):
                raise ConfigError(f"calibration {name}: values must be finite")
        if not (math.isfinite(self.distance_resolution_m) and 0 < self.distance_resolution_m < 1):
            raise ConfigError(
                f"distance resolution {self.distance_resolution_m} m is not plausible"
            )

    @property
    def lasers(self) -> int:
        return len(self.vert_deg)

    def column(self, name: str, default: float = 0.0) -> npt.NDArray[np.float64]:
        """One field as an array of ``lasers`` values (``default`` where absent)."""
        values = getattr(self, name)
        return np.asarray(values, np.float64) if values else np.full(self.lasers, default)

    @property
    def rings(self) -> npt.NDArray[np.uint16]:
        """Ring of each laser: its rank by vertical angle (0 = lowest), ties in laser order."""
        order = np.argsort(np.asarray(self.vert_deg), kind="stable")
        rings = np.empty(self.lasers, np.uint16)
        rings[order] = np.arange(self.lasers, dtype=np.uint16)
        return rings

    @property
    def advanced(self) -> bool:
        """True when a correction beyond angles and vertical offsets is set (the
        HDL-64E's distance, horizontal-offset and intensity corrections)."""
        if any(any(getattr(self, name)) for name in _ADVANCED):
            return True
        return any(v != 0 for v in self.min_intensity) or any(v != 255 for v in self.max_intensity)

    def to_yaml(self) -> str:
        """The ROS / velodyne_decoder YAML form (radians, metres)."""
        lines = [f"distance_resolution: {self.distance_resolution_m!r}",
                 f"num_lasers: {self.lasers}", "lasers:"]  # fmt: skip
        columns = {
            "rot_correction": np.deg2rad(self.column("rot_deg")),
            "vert_correction": np.deg2rad(self.column("vert_deg")),
            "vert_offset_correction": self.column("vert_offset_m"),
            "horiz_offset_correction": self.column("horiz_offset_m"),
            "dist_correction": self.column("dist_correction_m"),
            "dist_correction_x": self.column("dist_correction_x_m"),
            "dist_correction_y": self.column("dist_correction_y_m"),
            "focal_distance": self.column("focal_distance"),
            "focal_slope": self.column("focal_slope"),
            "min_intensity": self.column("min_intensity", 0.0),
            "max_intensity": self.column("max_intensity", 255.0),
        }
        for laser in range(self.lasers):
            lines.append(f"  - laser_id: {laser}")
            lines += [f"    {key}: {float(values[laser])!r}" for key, values in columns.items()]
        return "\n".join(lines) + "\n"


def nominal(vert_deg: tuple[float, ...], rot_deg: tuple[float, ...] = (), *,
            resolution_m: float = 0.002, source: str = "") -> Calibration:  # fmt: skip
    """A calibration from a manual's angle table (no offsets, no distance correction)."""
    return Calibration(vert_deg, rot_deg, resolution_m, source=source)


def read_calibration(path: str | Path) -> Calibration:
    """Read a YAML (ROS / velodyne_decoder) or XML (``db.xml``, VeloView) calibration.

    Raises :class:`DecodeError` naming the file and what was wrong.
    """
    path = Path(path)
    # A regular file of at most MAX_FILE_BYTES: /dev/zero or a FIFO is refused, not read.
    text = read_small_text(
        path, "Velodyne calibration", MAX_FILE_BYTES, limit_name="a calibration file",
        error=DecodeError,
    )  # fmt: skip
    try:
        if text.lstrip().startswith("<"):
            return parse_db_xml(text, source=path.name)
        return parse_yaml(text, source=path.name)
    except (ValueError, TypeError, KeyError, ET.ParseError) as err:
        raise DecodeError(f"{path}: not a Velodyne calibration: {err}") from err


def parse_yaml(text: str, *, source: str = "") -> Calibration:
    """The ROS velodyne driver's calibration YAML (radians, metres)."""
    import yaml  # type: ignore[import-untyped]

    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("lasers"), list):
        raise ValueError("expected a mapping with a 'lasers' list")
    lasers: dict[int, dict[str, Any]] = {}
    for entry in doc["lasers"]:
        if not isinstance(entry, dict) or "laser_id" not in entry:
            raise ValueError("every entry of 'lasers' needs a laser_id")
        index = int(entry["laser_id"])
        if not 0 <= index < MAX_LASERS:
            raise ValueError(f"laser_id {index} is outside 0..{MAX_LASERS - 1}")
        lasers[index] = entry
    count = int(doc.get("num_lasers", len(lasers)))
    if sorted(lasers) != list(range(count)):
        raise ValueError(f"lasers {sorted(lasers)[:8]}... do not number 0..{count - 1}")

    def values(key: str, default: float = 0.0, scale: float = 1.0) -> tuple[float, ...]:
        return tuple(float(lasers[i].get(key, default)) * scale for i in range(count))

    return Calibration(
        vert_deg=values("vert_correction", scale=180 / math.pi),
        rot_deg=values("rot_correction", scale=180 / math.pi),
        distance_resolution_m=float(doc.get("distance_resolution", 0.002)),
        vert_offset_m=values("vert_offset_correction"),
        horiz_offset_m=values("horiz_offset_correction"),
        dist_correction_m=values("dist_correction"),
        dist_correction_x_m=values("dist_correction_x"),
        dist_correction_y_m=values("dist_correction_y"),
        focal_distance=values("focal_distance"),
        focal_slope=values("focal_slope"),
        min_intensity=tuple(math.floor(v) for v in values("min_intensity", 0.0)),
        max_intensity=tuple(math.floor(v) for v in values("max_intensity", 255.0)),
        source=source,
    )


_XML_FIELDS = {  # db.xml tag -> (Calibration field, scale to its unit)
    "rotCorrection_": ("rot_deg", 1.0),
    "vertCorrection_": ("vert_deg", 1.0),
    "distCorrection_": ("dist_correction_m", 0.01),
    "distCorrectionX_": ("dist_correction_x_m", 0.01),
    "distCorrectionY_": ("dist_correction_y_m", 0.01),
    "vertOffsetCorrection_": ("vert_offset_m", 0.01),
    "horizOffsetCorrection_": ("horiz_offset_m", 0.01),
    "focalDistance_": ("focal_distance", 0.01),
    "focalSlope_": ("focal_slope", 1.0),
}


def parse_db_xml(text: str, *, source: str = "") -> Calibration:
    """Velodyne's ``db.xml`` / VeloView calibration XML (degrees, centimetres)."""
    if "<!ENTITY" in text:
        raise ValueError("XML entity declarations are not allowed in a calibration file")
    root = ET.fromstring(text)
    db = root.find("DB")
    if db is None:
        raise ValueError("no <DB> element (expected a boost_serialization archive)")
    lsb = db.findtext("distLSB_")
    resolution = float(lsb) * 0.01 if lsb is not None else 0.002
    points = db.find("points_")
    if points is None:
        raise ValueError("no <points_> element with the per-laser corrections")
    per_laser: dict[int, dict[str, float]] = {}
    for px in points.iter("px"):
        index = int(float(px.findtext("id_", "nan")))
        if not 0 <= index < MAX_LASERS:
            raise ValueError(f"laser id_ {index} is outside 0..{MAX_LASERS - 1}")
        per_laser[index] = {
            name: float(px.findtext(tag, "0")) * scale for tag, (name, scale) in _XML_FIELDS.items()
        }
    count = len(per_laser)
    if sorted(per_laser) != list(range(count)) or count == 0:
        raise ValueError(f"laser ids {sorted(per_laser)[:8]}... do not number 0..{count - 1}")

    def listed(tag: str, default: float) -> tuple[float, ...]:
        node = db.find(tag)
        items = [float(i.text or default) for i in node.findall("item")] if node is not None else []
        return tuple(items[:count]) if len(items) >= count else (default,) * count

    columns = {name: tuple(per_laser[i][name] for i in range(count)) for name, _ in
               _XML_FIELDS.values()}  # fmt: skip
    return Calibration(
        distance_resolution_m=resolution,
        min_intensity=listed("minIntensity_", 0.0),
        max_intensity=listed("maxIntensity_", 255.0),
        source=source,
        **columns,
    )
