"""Frames, groups of frames, and sensor descriptions.

Time is int64 nanoseconds everywhere. A frame carries three clocks:

* ``t_sensor``: the sensor's own stamp, exactly as the device or file gave it;
* ``t``: the same instant on the reference clock, after the hub applied the
  sensor's clock model (sources set ``t = t_sensor`` and the hub overwrites it);
* ``t_arrival``: the host's monotonic time when the bytes arrived, or ``None``
  for offline data.

``seq`` counts frames per sensor from 0, so a gap in ``seq`` is a drop seen by
the source, and ``(sensor, seq)`` names one frame end to end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from fusion.errors import ConfigError

if TYPE_CHECKING:
    from fusion.clock import ClockModel

Overflow = Literal["block", "drop_oldest", "drop_newest"]
"""What a full channel does with a new item: wait, evict the oldest, or refuse the new one."""

SensorKind = Literal[
    "camera", "lidar", "radar", "imu", "gnss", "can", "timeseries", "audio", "generic"
]


@dataclass(slots=True, eq=False)
class Frame:
    """One timestamped sample of one sensor.

    ``data`` is a numpy array, a dict of arrays, or bytes; it is passed by
    reference through the pipeline and never copied by the framework.
    """

    sensor: str
    seq: int
    t: int
    data: Any = None
    t_sensor: int = None  # type: ignore[assignment]  # filled from t
    t_arrival: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.t_sensor is None:
            self.t_sensor = self.t

    @property
    def key(self) -> tuple[str, int]:
        """``(sensor, seq)``: the frame's identity in traces and error messages."""
        return (self.sensor, self.seq)

    def __repr__(self) -> str:
        return (
            f"Frame(sensor={self.sensor!r}, seq={self.seq}, t={self.t}, "
            f"t_sensor={self.t_sensor}, data={_describe(self.data)})"
        )


@dataclass(slots=True, eq=False)
class FrameGroup:
    """Frames of several sensors that belong to one instant.

    ``t`` is the group's reference time (the reference frame's ``t`` for
    :class:`~fusion.Nearest`, the shared stamp for :class:`~fusion.ExactTime`,
    the latest member for :class:`~fusion.ApproximateTime`). Window-collected
    sensors map to a list of frames, possibly empty; ``missing`` names optional
    sensors that had no frame.
    """

    t: int
    frames: dict[str, Frame | list[Frame]]
    missing: frozenset[str] = frozenset()
    results: dict[str, Any] = field(default_factory=dict)
    """Model outputs by worker name, filled in by a :class:`~fusion.Pipeline`; a
    failed item holds its :class:`~fusion.WorkerError` instead of a value."""

    def members(self) -> list[Frame]:
        """Every frame in the group, window lists flattened, in sensor order."""
        out: list[Frame] = []
        for item in self.frames.values():
            if isinstance(item, list):
                out.extend(item)
            else:
                out.append(item)
        return out

    @property
    def keys(self) -> list[tuple[str, int]]:
        """``(sensor, seq)`` of every member, for tracing."""
        return [f.key for f in self.members()]

    @property
    def spread(self) -> int:
        """Largest minus smallest ``t`` among the single-frame members, in ns."""
        ts = [f.t for f in self.frames.values() if isinstance(f, Frame)]
        return max(ts) - min(ts) if ts else 0

    def __repr__(self) -> str:
        parts = []
        for name, item in self.frames.items():
            if isinstance(item, list):
                parts.append(f"{name}=[{len(item)} frames]")
            else:
                parts.append(f"{name}#{item.seq}@{item.t}")
        missing = f", missing={sorted(self.missing)}" if self.missing else ""
        return f"FrameGroup(t={self.t}, {', '.join(parts)}{missing})"


@dataclass(frozen=True, slots=True)
class SensorSpec:
    """What the framework knows about a sensor before its first frame.

    ``clock`` is the model that maps ``t_sensor`` to the reference clock; ``None``
    keeps ``t`` as the source set it (the right choice for replayed, already
    aligned frames). ``capacity`` and ``overflow`` configure the channel between
    the source and the hub: replay uses ``block`` so nothing is lost; live
    sensors usually want ``drop_oldest``.
    """

    name: str
    kind: SensorKind = "generic"
    rate_hz: float | None = None
    optional: bool = False
    clock: ClockModel | None = None
    capacity: int = 64
    overflow: Overflow = "block"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"sensor name must be a non-empty string, got {self.name!r}")
        if self.capacity < 1:
            raise ConfigError(f"sensor {self.name!r}: capacity must be >= 1, got {self.capacity}")
        if self.overflow not in ("block", "drop_oldest", "drop_newest"):
            raise ConfigError(
                f"sensor {self.name!r}: overflow must be 'block', 'drop_oldest' or "
                f"'drop_newest', got {self.overflow!r}"
            )
        if self.rate_hz is not None and self.rate_hz <= 0:
            raise ConfigError(f"sensor {self.name!r}: rate_hz must be > 0, got {self.rate_hz}")

    @property
    def period_ns(self) -> int | None:
        """Nominal interval between frames, from ``rate_hz``."""
        return None if self.rate_hz is None else round(1e9 / self.rate_hz)

    def to_dict(self) -> dict[str, Any]:
        """Plain, msgpack/JSON-safe description (the clock model by name only)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "rate_hz": self.rate_hz,
            "optional": self.optional,
            "clock": None if self.clock is None else type(self.clock).__name__,
            "capacity": self.capacity,
            "overflow": self.overflow,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SensorSpec:
        """Inverse of :meth:`to_dict`; the clock model is not restored (replay is aligned)."""
        return cls(
            name=str(d["name"]),
            kind=d.get("kind", "generic"),
            rate_hz=d.get("rate_hz"),
            optional=bool(d.get("optional", False)),
            capacity=int(d.get("capacity", 64)),
            overflow=d.get("overflow", "block"),
            meta=dict(d.get("meta") or {}),
        )


def _describe(data: Any) -> str:
    shape = getattr(data, "shape", None)
    if shape is not None:
        return f"<{getattr(data, 'dtype', '?')} {tuple(shape)}>"
    if isinstance(data, dict):
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in data.items()) + "}"
    if isinstance(data, (bytes, bytearray, memoryview)):
        return f"<{len(data)} bytes>"
    return repr(data)
