"""The Velodyne models we decode: packet layouts, firing timing, default angles, detection.

Every Velodyne data packet is 1206 bytes: 12 blocks of (flag, azimuth in
0.01°, 32 x (distance u16, intensity u8)), a u32 timestamp (µs past the top
of the hour), a return-mode byte and a product-ID byte. What differs per
model is how the 12 x 32 returns map to lasers and firing times, which the
*layout* says:

=============  ======  =====================================================
layout         lasers  blocks (single return)
=============  ======  =====================================================
``vlp16``      16      each block two firing sequences of 16 lasers, 55.296 µs
``hdl32e``     32      each block one sequence of 32 lasers, 46.08 µs
``vlp32c``     32      each block one sequence, lasers fire in pairs, 55.296 µs
``hdl64e_s2``  64      blocks in pairs (upper 0xEEFF, lower 0xDDFF), 48 µs
``hdl64e_s3``  64      the same, 57.6 µs per column
``vls128``     128     four blocks (banks 0xEEFF, 0xDDFF, 0xCCFF, 0xBBFF) per
                       column, 20 channel slots of 8/3 µs (VLS-128) or
                       2.89 µs (Alpha Prime) per column
=============  ======  =====================================================

In dual-return mode (return-mode byte 0x39; on the HDL-64E, which has no such
byte, when block 2 repeats block 0's azimuth) each firing fills two blocks:
last and strongest (strongest first on the HDL-64E), and a packet holds half
the columns. Timings are the manuals' firing-time tables, as velodyne_decoder
and the ROS driver build them.

Detection (:class:`ModelDetector`) reads the product byte (0x21 HDL-32E, 0x22
VLP-16, 0x24 Puck Hi-Res, 0x28 VLP-32C, 0xA1 VLS-128 / Alpha Prime), the block
flags (the HDL-64E's alternate upper/lower) and the packet cadence, which is
fixed per model and mode. Early VLP-16 firmware reports 0x21 (HDL-32E) in its
product byte: its packets come every 1,327 µs, an HDL-32E's every 553 µs, so
the cadence decides. VLS-128 and Alpha Prime share a product byte; their
cadence (160 µs or 173.4 µs a packet) tells them apart, as in
velodyne_decoder.
"""

from __future__ import annotations

import functools
import statistics
import struct
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from adapters.lidar._calibration import Calibration, nominal
from fusion.errors import ConfigError

BLOCKS = 12
SLOTS = 32
HOUR_US = 3_600_000_000
RETURN_STRONGEST, RETURN_LAST, RETURN_DUAL = 0x37, 0x38, 0x39
STRONGEST, LAST, BOTH = 1, 2, 3
"""Values of a point's ``return`` field: strongest, last, or both (one echo only)."""

EE, DD, CC, BB = 0xEEFF, 0xDDFF, 0xCCFF, 0xBBFF


@dataclass(frozen=True, eq=False)
class VelodyneModel:
    """A Velodyne model: its packet layout, its laser angles (a :class:`Calibration`)
    and the product byte its packets carry.

    ``VelodyneModel`` instances for the known models are in :data:`MODELS`;
    give your unit's calibration with :meth:`with_calibration` (or
    ``VelodyneSource(calibration="db.xml")``).
    """

    name: str
    layout: str
    calibration: Calibration
    product_id: int | None = None
    channel_us: float = 0.0
    """VLS-128 family: duration of one firing-group slot (8/3 µs or 2.89 µs)."""

    def __post_init__(self) -> None:
        if self.layout not in LAYOUT_LASERS:
            raise ConfigError(f"unknown layout {self.layout!r}; known: {', '.join(LAYOUT_LASERS)}")
        if self.calibration.lasers != LAYOUT_LASERS[self.layout]:
            raise ConfigError(
                f"model {self.name!r}: the {self.layout} layout has "
                f"{LAYOUT_LASERS[self.layout]} lasers, the calibration "
                f"{self.calibration.lasers}"
            )

    @property
    def lasers(self) -> int:
        return self.calibration.lasers

    @property
    def elevations_deg(self) -> tuple[float, ...]:
        return self.calibration.vert_deg

    @property
    def distance_resolution_m(self) -> float:
        return self.calibration.distance_resolution_m

    def with_calibration(self, calibration: Calibration) -> VelodyneModel:
        """This model with a unit's own calibration (same layout and timing)."""
        return replace(self, calibration=calibration)

    def packet_us(self, dual: bool = False) -> float:
        """Time between consecutive data packets (the cadence detection uses)."""
        layout = packet_layout(self, dual)
        return layout.groups * layout.group_period_us

    def __repr__(self) -> str:
        return f"VelodyneModel({self.name!r}, layout={self.layout!r}, lasers={self.lasers})"


LAYOUT_LASERS = {"vlp16": 16, "hdl32e": 32, "vlp32c": 32, "hdl64e_s2": 64, "hdl64e_s3": 64,
                 "vls128": 128}  # fmt: skip
HDL64E_LAYOUTS = ("hdl64e_s2", "hdl64e_s3")


@dataclass(frozen=True, eq=False)
class PacketLayout:
    """Where each of a packet's 12 x 32 returns comes from (one model, one return mode)."""

    dual: bool
    flags: tuple[int, ...]
    """Expected flag of each used block."""
    used_blocks: int
    """Blocks carrying data (8 in a VLS-128 dual-return packet, else 12)."""
    blocks_per_group: int
    """Blocks sharing one azimuth (a column; a sweep is cut between groups only)."""
    group_period_us: float
    laser: npt.NDArray[np.intp]  # (12, 32)
    time_ns: npt.NDArray[np.int64]  # (12, 32): firing time from the packet stamp
    fraction: npt.NDArray[np.float32]  # (12, 32): of the gap to the next column
    block_return: npt.NDArray[np.uint8]  # (12,): STRONGEST/LAST per block (dual), else 0
    pairs: tuple[tuple[int, int], ...] = ()
    """Dual return: (last block, strongest block) of each firing."""

    @property
    def groups(self) -> int:
        return self.used_blocks // self.blocks_per_group if self.used_blocks == BLOCKS else 1


@functools.cache
def _layout(layout: str, dual: bool, channel_us: float) -> PacketLayout:
    block = np.arange(BLOCKS)[:, None]
    slot = np.arange(SLOTS)[None, :]
    ret = np.zeros(BLOCKS, np.uint8)
    pairs: tuple[tuple[int, int], ...] = ()
    used = BLOCKS
    if layout in ("vlp16", "hdl32e", "vlp32c"):
        flags = (EE,) * BLOCKS
        column = block // 2 if dual else block  # a column = one block (two in dual mode)
        per = 2 if dual else 1
        if dual:
            ret[0::2], ret[1::2] = LAST, STRONGEST
            pairs = tuple((b, b + 1) for b in range(0, BLOCKS, 2))
        if layout == "vlp16":
            period = 2 * 55.296
            offset = (slot // 16) * 55.296 + (slot % 16) * 2.304
            laser = np.broadcast_to(slot % 16, (BLOCKS, SLOTS))
        elif layout == "hdl32e":
            period = 46.08
            offset = slot * 1.152
            laser = np.broadcast_to(slot, (BLOCKS, SLOTS))
        else:
            period = 55.296
            offset = (slot // 2) * 2.304
            laser = np.broadcast_to(slot, (BLOCKS, SLOTS))
        time_us = column * period + offset
    elif layout in HDL64E_LAYOUTS:
        flags = (EE, DD) * 6
        column_us, step, pattern = (
            (48.0, 6.0, (0.0, 1.26, 2.46, 3.66)) if layout == "hdl64e_s2"
            else (57.6, 7.2, (0.0, 1.3, 2.5, 3.7))
        )  # fmt: skip
        period = column_us
        per = 4 if dual else 2
        column = block // per
        laser = (block % 2) * 32 + slot
        offset = step * (slot // 4) + np.asarray(pattern)[slot % 4]
        time_us = column * column_us + offset
        if dual:  # upper strongest, lower strongest, upper last, lower last
            ret[(block[:, 0] % 4) < 2], ret[(block[:, 0] % 4) >= 2] = STRONGEST, LAST
            pairs = tuple((b + 2, b) for b in range(BLOCKS) if b % 4 < 2)
    elif layout == "vls128":
        period = 20 * channel_us
        if dual:  # blocks 0..7: (last, strongest) of banks 0..3; blocks 8..11 unused
            flags = (EE, EE, DD, DD, CC, CC, BB, BB)
            used, per = 8, 8
            bank = block // 2
            column = np.zeros_like(block)
            ret[0:8:2], ret[1:8:2] = LAST, STRONGEST
            pairs = tuple((b, b + 1) for b in range(0, 8, 2))
        else:
            flags = (EE, DD, CC, BB) * 3
            per = 4
            bank = block % 4
            column = block // 4
        dsr = 32 * bank + slot
        laser = np.minimum(dsr, 127)
        # the top of the hour is aligned with the fourth firing group (VeloView, vd)
        time_us = column * period + (dsr // 8 + dsr // 64 * 2) * channel_us - 7.0
    else:
        raise ValueError(f"unknown layout {layout!r}")
    time_us = np.broadcast_to(time_us, (BLOCKS, SLOTS)).astype(np.float64)
    t0 = time_us[(np.arange(BLOCKS) // per) * per, 0][:, None]
    return PacketLayout(
        dual=dual,
        flags=tuple(flags),
        used_blocks=used,
        blocks_per_group=per,
        group_period_us=period,
        laser=np.ascontiguousarray(laser, np.intp),
        time_ns=np.round(time_us * 1000.0).astype(np.int64),
        fraction=((time_us - t0) / period).astype(np.float32),
        block_return=ret,
        pairs=pairs,
    )


def packet_layout(model: VelodyneModel, dual: bool) -> PacketLayout:
    """The layout of ``model``'s packets in single or dual return mode (cached)."""
    return _layout(model.layout, dual, model.channel_us)


# -- the models ----------------------------------------------------------------------------

# fmt: off
_VLP16_VERT = (-15, 1, -13, 3, -11, 5, -9, 7, -7, 9, -5, 11, -3, 13, -1, 15)
_HIRES_VERT = (-10.0, 0.67, -8.67, 2.0, -7.33, 3.33, -6.0, 4.67,
               -4.67, 6.0, -3.33, 7.33, -2.0, 8.67, -0.67, 10.0)
_HDL32_VERT = (-30.67, -9.33, -29.33, -8.00, -28.00, -6.67, -26.67, -5.33,
               -25.33, -4.00, -24.00, -2.67, -22.67, -1.33, -21.33, 0.00,
               -20.00, 1.33, -18.67, 2.67, -17.33, 4.00, -16.00, 5.33,
               -14.67, 6.67, -13.33, 8.00, -12.00, 9.33, -10.67, 10.67)
# VLP-32C user manual, table 9-1 (vertical angle, azimuth offset; rot = -offset)
_VLP32C_VERT = (-25.0, -1.0, -1.667, -15.639, -11.31, 0.0, -0.667, -8.843,
                -7.254, 0.333, -0.333, -6.148, -5.333, 1.333, 0.667, -4.0,
                -4.667, 1.667, 1.0, -3.667, -3.333, 3.333, 2.333, -2.667,
                -3.0, 7.0, 4.667, -2.333, -2.0, 15.0, 10.333, -1.333)
_VLP32C_ROT = (-1.4, 4.2, -1.4, 1.4, -1.4, 1.4, -4.2, 1.4, -1.4, 4.2, -1.4, 1.4, -4.2, 1.4,
               -4.2, 1.4, -1.4, 4.2, -1.4, 4.2, -4.2, 1.4, -1.4, 1.4, -1.4, 1.4, -1.4, 4.2,
               -4.2, 1.4, -1.4, 1.4)
# VLS-128 / Alpha Prime user manual (rev. 4), laser table (vertical angle by channel)
_VLS128_VERT = (
    -11.742, -1.99, 3.4, -5.29, -0.78, 4.61, -4.08, 1.31, -6.5, -1.11, 4.28, -4.41, 0.1, 6.48,
    -3.2, 2.19, -3.86, 1.53, -9.244, -1.77, 2.74, -5.95, -0.56, 4.83, -2.98, 2.41, -6.28, -0.89,
    3.62, -5.07, 0.32, 7.58, -0.34, 5.18, -3.64, 1.75, -25.0, -2.43, 2.96, -5.73, 0.54, 9.7,
    -2.76, 2.63, -7.65, -1.55, 3.84, -4.85, 3.18, -5.51, -0.12, 5.73, -4.3, 1.09, -16.042,
    -2.21, 4.06, -4.63, 0.76, 15.0, -3.42, 1.97, -6.85, -1.33, -5.62, -0.23, 5.43, -3.53, 0.98,
    -19.582, -2.32, 3.07, -4.74, 0.65, 11.75, -2.65, 1.86, -7.15, -1.44, 3.95, -2.1, 3.29,
    -5.4, -0.01, 4.5, -4.19, 1.2, -13.565, -1.22, 4.17, -4.52, 0.87, 6.08, -3.31, 2.08, -6.65,
    1.42, -10.346, -1.88, 3.51, -6.06, -0.67, 4.72, -3.97, 2.3, -6.39, -1.0, 4.39, -5.18, 0.21,
    6.98, -3.09, 4.98, -3.75, 1.64, -8.352, -2.54, 2.85, -5.84, -0.45, 8.43, -2.87, 2.52,
    -6.17, -1.66, 3.73, -4.96, 0.43,
)
_VLS128_ROT = (-6.354, -4.548, -2.732, -0.911, 0.911, 2.732, 4.548, 6.354) * 16
# fmt: on


def _manual(name: str) -> str:
    return f"nominal table of the {name} user manual"


VLP_16 = VelodyneModel("VLP-16", "vlp16", nominal(_VLP16_VERT, source=_manual("VLP-16")), 0x22)
PUCK_HI_RES = VelodyneModel(
    "Puck-Hi-Res", "vlp16", nominal(_HIRES_VERT, source=_manual("Puck Hi-Res")), 0x24
)
HDL_32E = VelodyneModel("HDL-32E", "hdl32e", nominal(_HDL32_VERT, source=_manual("HDL-32E")), 0x21)
VLP_32C = VelodyneModel(
    "VLP-32C", "vlp32c",
    nominal(_VLP32C_VERT, _VLP32C_ROT, resolution_m=0.004, source=_manual("VLP-32C")), 0x28,
)  # fmt: skip
_VLS_CAL = nominal(_VLS128_VERT, _VLS128_ROT, resolution_m=0.004, source=_manual("VLS-128"))
VLS_128 = VelodyneModel("VLS-128", "vls128", _VLS_CAL, 0xA1, channel_us=8 / 3)
ALPHA_PRIME = VelodyneModel("Alpha-Prime", "vls128", _VLS_CAL, 0xA1, channel_us=2.89)
# The HDL-64E has no product byte and no nominal table: each unit ships its own db.xml.
_NO_CAL_64 = nominal(tuple(np.linspace(-24.8, 2.0, 64).round(3)), source="placeholder")
HDL_64E_S2 = VelodyneModel("HDL-64E-S2", "hdl64e_s2", _NO_CAL_64)
HDL_64E_S3 = VelodyneModel("HDL-64E-S3", "hdl64e_s3", _NO_CAL_64)

MODELS: dict[str, VelodyneModel] = {
    m.name: m
    for m in (VLP_16, PUCK_HI_RES, HDL_32E, VLP_32C, HDL_64E_S2, HDL_64E_S3, VLS_128, ALPHA_PRIME)
}
"""Models by name; names are also accepted without dashes and in any case."""

ALIASES = {"pucklite": "VLP-16", "vlp16hires": "Puck-Hi-Res", "hdl64es21": "HDL-64E-S2",
           "alphaprime": "Alpha-Prime", "vls128ap": "Alpha-Prime"}  # fmt: skip

PRODUCT_IDS = {0x21: "HDL-32E", 0x22: "VLP-16", 0x24: "Puck-Hi-Res", 0x28: "VLP-32C",
               0xA1: "VLS-128"}  # fmt: skip
UNSUPPORTED_PRODUCTS = {0x23: "VLP-32A/B", 0x31: "Velarray"}


def _key(name: str) -> str:
    return name.replace("-", "").replace("_", "").replace(" ", "").replace(".", "").lower()


def get_model(model: str | VelodyneModel) -> VelodyneModel:
    """Resolve a model name ("VLP-16", "vlp16", "HDL-64E-S3"...) or pass a model through."""
    if isinstance(model, VelodyneModel):
        return model
    wanted = _key(model)
    for name, known in MODELS.items():
        if _key(name) == wanted:
            return known
    if wanted in ALIASES:
        return MODELS[ALIASES[wanted]]
    raise ValueError(
        f"unknown Velodyne model {model!r}; known: {', '.join(MODELS)} or 'auto' "
        "(or pass a VelodyneModel with your own calibration)"
    )


def needs_calibration(model: VelodyneModel) -> bool:
    """True for a model without usable default angles (the HDL-64E's placeholder)."""
    return model.calibration is _NO_CAL_64


# -- detection -----------------------------------------------------------------------------

_FOOTER = struct.Struct("<IBB")


@dataclass(frozen=True)
class Evidence:
    """What a run of packets says about their sensor."""

    model: VelodyneModel | None
    said: str
    """In words: "product byte 0x21 (HDL-32E), one packet every 553 µs"."""
    problem: str = ""
    """Why no model fits (set when ``model`` is None)."""


class ModelDetector:
    """Collect the first data packets of a stream and say which model sent them."""

    def __init__(self, needed: int = 16) -> None:
        self.needed = needed
        self.stamps: list[int] = []
        self.products: Counter[int] = Counter()
        self.modes: Counter[int] = Counter()
        self.hdl64e = 0
        self.dual64 = 0
        self.seen = 0

    def add(self, payload: bytes) -> None:
        """Take one 1206-byte packet (others are ignored)."""
        if len(payload) != 1206:
            return
        self.seen += 1
        stamp, mode, product = _FOOTER.unpack_from(payload, 1200)
        if payload[0:2] + payload[100:102] + payload[200:202] == b"\xff\xee\xff\xdd\xff\xee":
            self.hdl64e += 1
            self.dual64 += payload[2:4] == payload[202:204]
        else:
            self.products[product] += 1
            self.modes[mode] += 1
        self.stamps.append(stamp)

    @property
    def ready(self) -> bool:
        return self.seen >= self.needed

    def cadence_us(self) -> float | None:
        """Median time between consecutive packets (µs), None with fewer than two."""
        deltas = [
            b - a for a, b in zip(self.stamps, self.stamps[1:], strict=False) if 0 < b - a < 20_000
        ]
        return float(statistics.median(deltas)) if deltas else None

    def evidence(self) -> Evidence:
        cadence = self.cadence_us()
        every = f", one packet every {cadence:,.0f} µs" if cadence is not None else ""
        if self.hdl64e > self.seen // 2:
            dual = self.dual64 > self.hdl64e // 2
            said = f"HDL-64E block flags (upper 0xEEFF, lower 0xDDFF){every}"
            if cadence is None:
                return Evidence(None, said, "one packet cannot tell an HDL-64E S2 from an S3")
            return Evidence(_nearest((HDL_64E_S2, HDL_64E_S3), cadence, dual), said)
        if not self.products:
            return Evidence(None, "no data packets", "no 1206-byte packets")
        product, _ = self.products.most_common(1)[0]
        mode, _ = self.modes.most_common(1)[0]
        dual = mode == RETURN_DUAL
        name = PRODUCT_IDS.get(product)
        said = (
            f"product byte 0x{product:02X} ({name or UNSUPPORTED_PRODUCTS.get(product, 'unknown')})"
        )
        said += f"{', dual return' if dual else ''}{every}"
        if name is None:
            what = UNSUPPORTED_PRODUCTS.get(product)
            return Evidence(
                None, said, f"{what} is not supported" if what else "unknown product byte"
            )
        if cadence is None:
            return Evidence(MODELS[name], said)
        if product == 0x21:  # early VLP-16 firmware says HDL-32E here: the cadence decides
            model = _nearest((HDL_32E, VLP_16), cadence, dual)
            if model is VLP_16:
                said += " (a VLP-16's cadence: early VLP-16 firmware reports 0x21)"
            return Evidence(model, said)
        if product == 0xA1:
            return Evidence(_nearest((VLS_128, ALPHA_PRIME), cadence, dual), said)
        model = MODELS[name]
        expected = model.packet_us(dual)
        if abs(cadence - expected) > 0.1 * expected:
            return Evidence(
                None, said,
                f"a {name} sends one packet every {expected:,.0f} µs, these come every "
                f"{cadence:,.0f} µs",
            )  # fmt: skip
        return Evidence(model, said)


def _nearest(candidates: tuple[VelodyneModel, ...], cadence: float, dual: bool) -> VelodyneModel:
    return min(candidates, key=lambda m: abs(m.packet_us(dual) - cadence))


def compatible(declared: VelodyneModel, detected: VelodyneModel) -> bool:
    """Whether packets from ``detected`` may be decoded as ``declared``: the same
    model, or a model of your own with the same layout and timing."""
    if declared.name == detected.name:
        return True
    custom = declared.name not in MODELS
    return (
        custom and declared.layout == detected.layout and declared.channel_us == detected.channel_us
    )
