"""Clock models: map a sensor's own timestamps onto the reference clock.

A model sees pairs ``(t_sensor, t_arrival)`` through :meth:`ClockModel.observe`
and answers :meth:`ClockModel.align`. Models are sans-I/O: no sleeping, no
reading the time; the hub feeds them. One model instance serves one sensor.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ClockModel(Protocol):
    """Maps sensor time to reference time (both int ns)."""

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        """Learn from one frame's sensor stamp and host arrival time."""
        ...

    def align(self, t_sensor: int) -> int:
        """The reference-clock instant of sensor time ``t_sensor``."""
        ...

    def describe(self) -> dict[str, Any]:
        """Current estimate, for metrics (JSON-safe)."""
        ...


class Identity:
    """Sensor time already is reference time (hardware-synchronised sensors, PTP)."""

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        pass

    def align(self, t_sensor: int) -> int:
        return t_sensor

    def describe(self) -> dict[str, Any]:
        return {"model": "Identity"}

    def __repr__(self) -> str:
        return "Identity()"


class FixedOffset:
    """Reference time = sensor time + a calibrated constant ``offset_ns``."""

    def __init__(self, offset_ns: int) -> None:
        self.offset_ns = int(offset_ns)

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        pass

    def align(self, t_sensor: int) -> int:
        return t_sensor + self.offset_ns

    def describe(self) -> dict[str, Any]:
        return {"model": "FixedOffset", "offset_ns": self.offset_ns}

    def __repr__(self) -> str:
        return f"FixedOffset({self.offset_ns})"
