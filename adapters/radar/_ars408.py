"""Continental ARS408 cluster and object lists from its CAN frames; no I/O.

The ARS408 sends a list a cycle over CAN (500 kbit/s, about 14 cycles a
second): a status frame that says how many entries follow and then one frame
per entry, then (if configured) one quality frame and, for objects, one
extended frame per entry:

* clusters: ``Cluster_0_Status`` (0x600: near + far count, measurement counter),
  ``Cluster_1_General`` (0x701), ``Cluster_2_Quality`` (0x702);
* objects: ``Obj_0_Status`` (0x60A), ``Obj_1_General`` (0x60B),
  ``Obj_2_Quality`` (0x60C), ``Obj_3_Extended`` (0x60D);
* ``RadarState`` (0x201): the sensor's configuration; the last one before a
  list's status is that list's ``meta["radar_state"]``.

The signals are decoded by the CAN adapter (:class:`adapters.can.CanDecoder`)
with the database packaged here (``ars408.dbc``); this module only assembles
them. A list ends when the next status of its kind arrives (or the input
ends): it becomes one frame (:data:`CLUSTER_DTYPE` or :data:`OBJECT_DTYPE`
rows) when as many general frames arrived as its status announced, else its
CAN frames are lost as ``incomplete``. The unit is the CAN frame; each one
ends in a list's frame or is lost by reason: ``incomplete`` (a list short of
entries, or frames before the first status), ``unknown_id`` (a CAN id not in
the database; a quality or extended frame for an entry the list does not
have), ``undecodable`` (an entry id twice in one list, or more entries than
announced), ``bad_length`` / ``error_frame`` (the CAN decoder's), ``unused``
(RadarState frames: no list field comes from them, their values go to meta).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

DBC = "ars408.dbc"
"""The database file packaged with :mod:`adapters.radar`."""

LINEAR_RMS = (
    0.005, 0.006, 0.008, 0.011, 0.014, 0.018, 0.023, 0.029, 0.038, 0.049, 0.063, 0.081,
    0.105, 0.135, 0.174, 0.224, 0.288, 0.371, 0.478, 0.616, 0.794, 1.023, 1.317, 1.697,
    2.187, 2.817, 3.630, 4.676, 6.025, 7.762, 10.000, 100.00,
)  # fmt: skip
"""Standard deviation (m, m/s, m/s²) of each 5-bit ``*_rms`` code (the ARS408 manual)."""
ANGLE_RMS = (
    0.005, 0.007, 0.010, 0.014, 0.020, 0.029, 0.041, 0.058, 0.082, 0.116, 0.165, 0.234,
    0.332, 0.471, 0.669, 0.949, 1.346, 1.909, 2.709, 3.843, 5.451, 7.734, 10.971, 15.565,
    22.061, 31.325, 44.439, 63.044, 69.437, 126.881, 180.000, 360.00,
)  # fmt: skip
"""Standard deviation (degrees) of each ``Obj_Orientation_rms`` code."""
PROB_OF_EXIST = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0)
"""Upper bound of the existence probability of each ``Obj_ProbOfExist`` code."""
CLASSES = ("point", "car", "truck", "reserved", "motorcycle", "bicycle", "wide", "reserved")
"""``Obj_Class`` codes."""
DYN_PROP = (
    "moving", "stationary", "oncoming", "crossing_left", "crossing_right", "unknown",
    "stopped", "reserved",
)  # fmt: skip
"""``*_DynProp`` codes."""

_COMMON = [
    ("x", np.float32),  # DistLong, m (forward)
    ("y", np.float32),  # DistLat, m (left)
    ("z", np.float32),  # 0: the ARS408 measures no elevation
    ("range", np.float32),
    ("azimuth", np.float32),  # rad, atan2(y, x)
    ("range_rate", np.float32),  # m/s, the relative velocity along the line of sight
    ("vx", np.float32),  # VrelLong, m/s
    ("vy", np.float32),  # VrelLat, m/s
    ("rcs", np.float32),  # dBm²
    ("id", np.uint16),
    ("dyn_prop", np.uint8),
]
CLUSTER_DTYPE = np.dtype(
    [
        *_COMMON,
        ("x_rms", np.float32),
        ("y_rms", np.float32),
        ("vx_rms", np.float32),
        ("vy_rms", np.float32),
        ("pdh0", np.uint8),
        ("invalid_state", np.uint8),
        ("ambig_state", np.uint8),
        ("quality", np.bool_),
    ]
)
"""An ARS408 cluster: position and relative velocity (``Cluster_1_General``), with
``range``, ``azimuth`` and ``range_rate`` from them; the quality fields
(``Cluster_2_Quality``: standard deviations from the manual's table, the false-alarm
code ``pdh0``, invalid and ambiguity states) are NaN / 0 where ``quality`` is false."""
OBJECT_DTYPE = np.dtype(
    [
        *_COMMON,
        ("prob_exist", np.float32),
        ("meas_state", np.uint8),
        ("x_rms", np.float32),
        ("y_rms", np.float32),
        ("vx_rms", np.float32),
        ("vy_rms", np.float32),
        ("ax_rms", np.float32),
        ("ay_rms", np.float32),
        ("orientation_rms", np.float32),  # degrees
        ("ax", np.float32),  # ArelLong, m/s²
        ("ay", np.float32),  # ArelLat, m/s²
        ("orientation", np.float32),  # degrees
        ("length", np.float32),
        ("width", np.float32),
        ("classification", np.uint8),  # index into CLASSES
        ("quality", np.bool_),
        ("extended", np.bool_),
    ]
)
"""An ARS408 object: ``Obj_1_General`` as for clusters, ``prob_exist`` (the upper bound
of its ``Obj_ProbOfExist`` class, 0..1) and the standard deviations from
``Obj_2_Quality`` (``quality``), accelerations, orientation, size and class from
``Obj_3_Extended`` (``extended``); NaN / 0 where absent."""

_KIND = {
    "Cluster_0_Status": ("clusters", "status"),
    "Cluster_1_General": ("clusters", "general"),
    "Cluster_2_Quality": ("clusters", "quality"),
    "Obj_0_Status": ("objects", "status"),
    "Obj_1_General": ("objects", "general"),
    "Obj_2_Quality": ("objects", "quality"),
    "Obj_3_Extended": ("objects", "extended"),
}


def load() -> Any:
    """The packaged ARS408 database (cantools)."""
    from adapters.can import load_database

    with resources.as_file(resources.files("adapters.radar") / DBC) as path:
        return load_database(path)


@dataclass
class Scan:
    """A finished list: ``kind`` ``"clusters"`` or ``"objects"``."""

    kind: str
    data: np.ndarray
    t_sensor: int
    t_arrival: int | None
    units: int
    meta: dict[str, Any]


@dataclass
class Lost:
    """CAN frames lost, by reason, on the ledger of list ``kind``."""

    kind: str
    reason: str
    message: str
    units: int = 1


@dataclass
class _List:
    status: dict[str, Any]
    t: int
    arrival: int | None
    units: int = 1
    general: dict[int, dict[str, Any]] = field(default_factory=dict)
    quality: dict[int, dict[str, Any]] = field(default_factory=dict)
    extended: dict[int, dict[str, Any]] = field(default_factory=dict)
    radar_state: dict[str, Any] | None = None


def _row(event: Any) -> dict[str, Any]:
    table = event.row
    return {name: table[name][0].item() for name in table.dtype.names or ()}


class Assembler:
    """Sans-I/O: the CAN decoder's events in (:class:`adapters.can.Event`, ``Loss``),
    :class:`Scan` and :class:`Lost` out. ``prefix`` is the decoder's name (its message
    sensors are ``<prefix>.<Message>``)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.open: dict[str, _List | None] = {"clusters": None, "objects": None}
        self.radar_state: dict[str, Any] | None = None

    def push(self, events: list[Any], where: str = "") -> list[Scan | Lost]:
        """Assemble ``events`` (in bus order); the lists they finished and the losses."""
        from adapters.can import Loss

        out: list[Scan | Lost] = []
        for i, event in enumerate(events):
            if isinstance(event, Loss):
                if event.units:
                    kind = self._kind_of(event.sensor)
                    out.append(Lost(kind, event.reason, f"{where}{event.message}", event.units))
                continue
            message = event.sensor[len(self.prefix) + 1 :] if event.sensor != self.prefix else ""
            if message == "":  # a frame kept raw: too short for its ARS408 message
                said = "shorter than its ARS408 message"
                later = events[i + 1] if i + 1 < len(events) else None
                if isinstance(later, Loss) and not later.units:
                    said = later.message
                kind = "objects" if 0x60A <= int(event.row["id"][0]) <= 0x60D else "clusters"
                out.append(Lost(kind, "bad_length", f"{where}{said}", event.units))
                continue
            if message == "RadarState":
                self.radar_state = _row(event)
                self.radar_state.pop("t", None)
                out.append(Lost("clusters", "unused", f"{where}RadarState", event.units))
                continue
            kind, part = _KIND[message]
            row = _row(event)
            if part == "status":
                out += self._close(kind)
                state = None if self.radar_state is None else dict(self.radar_state)
                self.open[kind] = _List(
                    row, event.t_sensor, event.t_arrival, event.units, radar_state=state
                )
                continue
            current = self.open[kind]
            if current is None:
                out.append(
                    Lost(
                        kind,
                        "incomplete",
                        f"{where}{message} before the first {kind} status",
                        event.units,
                    )
                )
                continue
            entry = int(row["Obj_ID" if kind == "objects" else "Cluster_ID"])
            if part == "general":
                if entry in current.general:
                    out.append(
                        Lost(
                            kind,
                            "undecodable",
                            f"{where}{message}: id {entry} twice in one list",
                            event.units,
                        )
                    )
                    continue
                current.general[entry] = row
            else:
                table = current.quality if part == "quality" else current.extended
                if entry not in current.general or entry in table:
                    out.append(
                        Lost(
                            kind,
                            "unknown_id",
                            f"{where}{message}: id {entry} is not an entry of the list",
                            event.units,
                        )
                    )
                    continue
                table[entry] = row
            current.units += event.units
        return out

    def flush(self) -> list[Scan | Lost]:
        """The input ended: the lists still open, finished or lost."""
        return self._close("clusters") + self._close("objects")

    @property
    def held(self) -> dict[str, int]:
        """CAN frames held in open lists, by kind."""
        return {k: (0 if v is None else v.units) for k, v in self.open.items()}

    def _kind_of(self, sensor: str) -> str:
        return "objects" if sensor.startswith(f"{self.prefix}.Obj_") else "clusters"

    def _close(self, kind: str) -> list[Scan | Lost]:
        current = self.open[kind]
        self.open[kind] = None
        if current is None:
            return []
        s = current.status
        if kind == "clusters":
            expected = int(s["Cluster_NofClustersNear"]) + int(s["Cluster_NofClustersFar"])
            counter = int(s["Cluster_MeasCounter"])
        else:
            expected = int(s["Obj_NofObjects"])
            counter = int(s["Obj_MeasCounter"])
        got = len(current.general)
        if got != expected:
            reason = "incomplete" if got < expected else "undecodable"
            return [
                Lost(
                    kind,
                    reason,
                    f"{kind} list {counter}: {got} of the {expected} entries its status "
                    "announced arrived before the next status",
                    current.units,
                )
            ]
        data = _clusters(current) if kind == "clusters" else _objects(current)
        meta: dict[str, Any] = {"measurement_counter": counter, "list": kind}
        if kind == "clusters":
            meta["near"] = int(s["Cluster_NofClustersNear"])
            meta["far"] = int(s["Cluster_NofClustersFar"])
            meta["interface_version"] = int(s["Cluster_InterfaceVersion"])
        else:
            meta["interface_version"] = int(s["Obj_InterfaceVersion"])
        if current.radar_state is not None:
            meta["radar_state"] = current.radar_state
        return [Scan(kind, data, current.t, current.arrival, current.units, meta)]


def _common(out: np.ndarray, rows: list[dict[str, Any]], p: str) -> None:
    x = np.array([r[f"{p}_DistLong"] for r in rows], np.float64)
    y = np.array([r[f"{p}_DistLat"] for r in rows], np.float64)
    vx = np.array([r[f"{p}_VrelLong"] for r in rows], np.float64)
    vy = np.array([r[f"{p}_VrelLat"] for r in rows], np.float64)
    rng = np.hypot(x, y)
    out["x"], out["y"], out["z"] = x, y, 0.0
    out["range"] = rng
    out["azimuth"] = np.arctan2(y, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["range_rate"] = np.where(rng > 0, (x * vx + y * vy) / np.where(rng > 0, rng, 1), 0)
    out["vx"], out["vy"] = vx, vy
    out["rcs"] = [r[f"{p}_RCS"] for r in rows]
    out["id"] = [r[f"{p}_ID"] for r in rows]
    out["dyn_prop"] = [r[f"{p}_DynProp"] for r in rows]


def _rms(codes: list[int], table: tuple[float, ...]) -> list[float]:
    return [table[c] for c in codes]


def _clusters(current: _List) -> np.ndarray:
    ids = list(current.general)
    out = np.zeros(len(ids), CLUSTER_DTYPE)
    _common(out, [current.general[i] for i in ids], "Cluster")
    for name in ("x_rms", "y_rms", "vx_rms", "vy_rms"):
        out[name] = np.nan
    for k, i in enumerate(ids):
        q = current.quality.get(i)
        if q is None:
            continue
        out["x_rms"][k], out["y_rms"][k], out["vx_rms"][k], out["vy_rms"][k] = _rms(
            [
                q["Cluster_DistLong_rms"],
                q["Cluster_DistLat_rms"],
                q["Cluster_VrelLong_rms"],
                q["Cluster_VrelLat_rms"],
            ],
            LINEAR_RMS,
        )
        out["pdh0"][k] = q["Cluster_Pdh0"]
        out["invalid_state"][k] = q["Cluster_InvalidState"]
        out["ambig_state"][k] = q["Cluster_AmbigState"]
        out["quality"][k] = True
    return out


def _objects(current: _List) -> np.ndarray:
    ids = list(current.general)
    out = np.zeros(len(ids), OBJECT_DTYPE)
    _common(out, [current.general[i] for i in ids], "Obj")
    for name in ("prob_exist", "x_rms", "y_rms", "vx_rms", "vy_rms", "ax_rms", "ay_rms",
                 "orientation_rms", "ax", "ay", "orientation", "length", "width"):  # fmt: skip
        out[name] = np.nan
    for k, i in enumerate(ids):
        q = current.quality.get(i)
        if q is not None:
            out["prob_exist"][k] = PROB_OF_EXIST[q["Obj_ProbOfExist"]]
            out["meas_state"][k] = q["Obj_MeasState"]
            for name, signal in (
                ("x_rms", "DistLong"),
                ("y_rms", "DistLat"),
                ("vx_rms", "VrelLong"),
                ("vy_rms", "VrelLat"),
                ("ax_rms", "ArelLong"),
                ("ay_rms", "ArelLat"),
            ):
                out[name][k] = LINEAR_RMS[q[f"Obj_{signal}_rms"]]
            out["orientation_rms"][k] = ANGLE_RMS[q["Obj_Orientation_rms"]]
            out["quality"][k] = True
        e = current.extended.get(i)
        if e is not None:
            out["ax"][k] = e["Obj_ArelLong"]
            out["ay"][k] = e["Obj_ArelLat"]
            out["orientation"][k] = e["Obj_OrientationAngle"]
            out["length"][k] = e["Obj_Length"]
            out["width"][k] = e["Obj_Width"]
            out["classification"][k] = e["Obj_Class"]
            out["extended"][k] = True
    return out
