"""Geometry and timing of the Velodyne models we decode.

A Velodyne data packet holds 12 blocks of 32 returns. How those 32 slots map to
lasers, when each laser fired and at which elevation is fixed per model and
printed in its manual; that table is a :class:`VelodyneModel`. Users with a
per-unit calibration (or a model we do not ship) build their own instance and
pass it as ``model=``.

The model is always chosen by the caller, never guessed from the packet's
product-ID byte: early VLP-16 firmware reports 0x21 (HDL-32E) there, and a
decoder that trusts it silently produces the wrong geometry.

Sources: VLP-16 user manual (rev. E) section 9, HDL-32E user manual appendix;
azimuth interpolation per firing as in both manuals' "precision azimuth"
section.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class VelodyneModel:
    """Firing order, timing and elevation angles of one Velodyne model.

    ``elevations_deg[i]`` is the vertical angle of laser ``i`` (firing order).
    A block holds ``firings_per_block`` firing sequences of ``lasers`` lasers
    each; a sequence lasts ``firing_period_us`` and consecutive lasers within it
    fire ``laser_period_us`` apart. Distances are multiples of
    ``distance_resolution_m``.
    """

    name: str
    elevations_deg: tuple[float, ...]
    firings_per_block: int
    firing_period_us: float
    laser_period_us: float
    distance_resolution_m: float = 0.002
    product_id: int | None = None
    azimuth_offsets_deg: tuple[float, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.lasers * self.firings_per_block != 32:
            raise ValueError(
                f"model {self.name!r}: {self.lasers} lasers x {self.firings_per_block} firings "
                "per block must fill the 32 returns of a block"
            )
        if self.azimuth_offsets_deg and len(self.azimuth_offsets_deg) != self.lasers:
            raise ValueError(f"model {self.name!r}: one azimuth offset per laser expected")

    @property
    def lasers(self) -> int:
        return len(self.elevations_deg)

    @property
    def block_period_us(self) -> float:
        """Time between the first firings of consecutive blocks."""
        return self.firings_per_block * self.firing_period_us

    def slot_tables(self) -> dict[str, npt.NDArray[np.generic]]:
        """Per-slot (0..31) constants the vectorised decoder broadcasts over blocks."""
        slot = np.arange(32)
        laser = slot % self.lasers
        firing = slot // self.lasers
        offset_us = firing * self.firing_period_us + laser * self.laser_period_us
        elevation = np.deg2rad(np.asarray(self.elevations_deg, np.float64))[laser]
        ring_of_laser = np.argsort(np.argsort(self.elevations_deg, kind="stable"), kind="stable")
        az_offset = (
            np.asarray(self.azimuth_offsets_deg, np.float64)[laser] * 100.0
            if self.azimuth_offsets_deg
            else np.zeros(32)
        )
        return {
            "cos_el": np.cos(elevation).astype(np.float32),
            "sin_el": np.sin(elevation).astype(np.float32),
            "fraction": (offset_us / self.block_period_us).astype(np.float32),
            "offset_ns": np.round(offset_us * 1000.0).astype(np.int64),
            "ring": ring_of_laser[laser].astype(np.uint16),
            "az_offset": az_offset.astype(np.float32),
        }


VLP_16 = VelodyneModel(
    name="VLP-16",
    elevations_deg=(-15, 1, -13, 3, -11, 5, -9, 7, -7, 9, -5, 11, -3, 13, -1, 15),
    firings_per_block=2,
    firing_period_us=55.296,
    laser_period_us=2.304,
    product_id=0x22,
)

# fmt: off
PUCK_HI_RES = VelodyneModel(
    name="Puck-Hi-Res",
    elevations_deg=(
        -10.0, 0.67, -8.67, 2.0, -7.33, 3.33, -6.0, 4.67,
        -4.67, 6.0, -3.33, 7.33, -2.0, 8.67, -0.67, 10.0,
    ),
    firings_per_block=2,
    firing_period_us=55.296,
    laser_period_us=2.304,
    product_id=0x24,
)

HDL_32E = VelodyneModel(
    name="HDL-32E",
    elevations_deg=(
        -30.67, -9.33, -29.33, -8.00, -28.00, -6.67, -26.67, -5.33,
        -25.33, -4.00, -24.00, -2.67, -22.67, -1.33, -21.33, 0.00,
        -20.00, 1.33, -18.67, 2.67, -17.33, 4.00, -16.00, 5.33,
        -14.67, 6.67, -13.33, 8.00, -12.00, 9.33, -10.67, 10.67,
    ),
    firings_per_block=1,
    firing_period_us=46.08,
    laser_period_us=1.152,
    product_id=0x21,
)

# fmt: on

MODELS: dict[str, VelodyneModel] = {
    "VLP-16": VLP_16,
    "Puck-Hi-Res": PUCK_HI_RES,
    "HDL-32E": HDL_32E,
}
"""Models by name; names are also accepted without dashes and in any case."""


def get_model(model: str | VelodyneModel) -> VelodyneModel:
    """Resolve a model name ("VLP-16", "vlp16", "HDL-32E"...) or pass a model through."""
    if isinstance(model, VelodyneModel):
        return model
    wanted = model.replace("-", "").replace("_", "").lower()
    for name, known in MODELS.items():
        if name.replace("-", "").lower() == wanted:
            return known
    raise ValueError(
        f"unknown Velodyne model {model!r}; known: {', '.join(MODELS)} "
        "(or pass a VelodyneModel with your own calibration)"
    )
