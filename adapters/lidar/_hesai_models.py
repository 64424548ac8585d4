"""Hesai LiDAR models: packet layouts, firing times, detection, angle-correction files.

Every layout here is tier4/nebula's (``nebula_hesai_decoders/decoders/pandar_*.hpp``,
Apache-2.0): where each block, unit and tail field sits, the distance unit, the
sensor's range limits and the per-point firing-time offsets, in the same integer
arithmetic. A packet says which model sent it: the 40P has no header (its blocks
start with ``FF EE``); the Pandar64 has an 8-byte header (``EE FF``, 64 lasers,
6 blocks); every later model a 12-byte one (``EE FF``, protocol major.minor,
lasers, blocks), see :func:`identify`.

The angle-correction file is Hesai's CSV (``Laser id,Elevation,Azimuth``, one
row per channel, degrees), as the sensor serves it and as nebula ships it; the
defaults nebula ships per model are packaged here (``hesai_calibration/``).
The AT128 (a rotating mirror, not a rotating head) takes a binary ``.dat``
correction instead (:mod:`adapters.lidar._hesai_correction`): its azimuth and
elevation depend on the mirror field and the block azimuth. JT16/JT128, ATX,
FT120 (not in nebula) are recognised and refused as unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from adapters._side_files import CALIBRATION_LIMIT, read_small, read_small_text
from adapters.errors import DecodeError
from adapters.lidar._hesai_correction import (
    HesaiCorrection,
    looks_like_correction,
    parse_correction,
)

# Return modes (tail byte): name and number of returns per firing.
RETURN_MODES: dict[int, tuple[str, int]] = {
    0x33: ("first", 1),
    0x34: ("second", 1),
    0x37: ("strongest", 1),
    0x38: ("last", 1),
    0x39: ("dual_last_strongest", 2),
    0x3A: ("dual_first_second", 2),
    0x3B: ("dual_first_last", 2),
    0x3C: ("dual_first_strongest", 2),
    0x3D: ("triple_first_last_strongest", 3),
    0x3E: ("dual_strongest_second_strongest", 2),
}

UNSUPPORTED: dict[tuple[int, int, int], str] = {}
"""Headers recognised as Hesai but not decoded: (protocol major, lasers, blocks) -> why."""


@dataclass(frozen=True)
class HesaiModel:
    """One Hesai packet layout (nebula's ``Packet*`` struct) and its sensor constants."""

    name: str
    channels: int
    blocks: int
    size: int
    """Bytes up to the end of the fields decoded (nebula's ``sizeof``): shorter is bad_length."""
    lengths: tuple[int, ...]
    """The datagram sizes the model sends (its user manual: with the UDP sequence, the
    32-byte signature or not; the real captures' sizes: 40P 1262, 64 1198, QT64 1072,
    XT16 568, XT32 1080, XT32M 820, QT128 1127)."""
    header: int
    """Header bytes before the first block: 0 (40P), 8 or 12."""
    sob: bool
    """Blocks start with ``FF EE`` (40P)."""
    unit: int
    """Bytes per channel unit: 3 (distance, reflectivity) or 4 (+ confidence)."""
    tail: int
    """Offset of the tail."""
    t_return_mode: int
    t_timestamp: int
    t_date: int
    year_base: int
    max_returns: int
    min_range: float
    max_range: float
    signature: tuple[int, int, int, int] | None
    """(protocol major, minor, lasers, blocks) of a 12-byte header; None otherwise."""
    body_crc: tuple[int, int, int] | None = None
    """(first, end, where) of a CRC-32/MPEG-2 over the blocks, if the packet has one."""
    tail_crc: tuple[int, int, int] | None = None
    fixed_dis_unit: float | None = None
    """Metres per distance count when the packet has no header to say it (40P: 4 mm)."""
    t_mode_flag: int | None = None
    t_azimuth_state: int | None = None
    t_operational_state: int | None = None
    calibration_file: str = ""
    aliases: tuple[str, ...] = field(default=())
    fine_azimuth: bool = False
    """A block's azimuth is a u16 and a u8 (1/25600°, AT128), not a u16 (1/100°)."""
    epoch_seconds: bool = False
    """The tail's date is a zero byte and 5 big-endian bytes of seconds (AT128)."""
    corrected: bool = False
    """Angles from a ``.dat`` correction (mirror fields), not an angle CSV (AT128)."""
    fov: tuple[int, int] | None = None
    """Degrees of corrected azimuth kept by default (nebula's cloud_min/max_angle)."""
    default_cut: float = 0.0
    """Degrees where nebula's configuration for the model cuts sweeps."""

    @property
    def block_size(self) -> int:
        return (4 if self.sob else 2) + int(self.fine_azimuth) + self.channels * self.unit

    @property
    def angle_unit(self) -> int:
        """Block azimuth counts per degree."""
        return 25600 if self.fine_azimuth else 100

    @property
    def units_at(self) -> int:
        """Offset of a block's first channel unit within the block."""
        return self.azimuth_at + 2 + int(self.fine_azimuth)

    @property
    def azimuth_at(self) -> int:
        """Offset of a block's azimuth within the block."""
        return 2 if self.sob else 0

    def block_offset(self, block: int) -> int:
        return self.header + block * self.block_size


def _xt_time(channel_step: int) -> object:
    def offsets(block: int, channel: int, n_ret: int, _flag: int) -> int:
        return 5632 - 50000 * ((8 - block - 1) // n_ret) + 368 + channel_step * channel

    return offsets


_P40_FIRE = (
    -42220, -28470, -16040, -3620, -45490, -31740, -47460, -54670, -20620, -33710,
    -40910, -8190, -20620, -27160, -50730, -8190, -14740, -36980, -45490, -52700,
    -23890, -31740, -38950, -11470, -18650, -25190, -48760, -6230, -12770, -35010,
    -21920, -9500, -43520, -29770, -17350, -4920, -42220, -28470, -16040, -3620,
)  # fmt: skip
_P64_FIRE = (
    -23180, -21876, -20572, -19268, -17964, -16660, -11444, -46796, -7532, -36956, -50732,
    -54668, -40892, -44828, -31052, -34988, -48764, -52700, -38924, -42860, -29084, -33020,
    -46796, -25148, -36956, -50732, -27116, -40892, -44828, -31052, -34988, -48764, -25148,
    -38924, -42860, -29084, -33020, -52700, -6228, -54668, -15356, -27116, -10140, -23180,
    -4924, -21876, -14052, -17964, -8836, -19268, -3620, -20572, -12748, -16660, -7532,
    -11444, -6228, -15356, -10140, -4924, -3620, -14052, -8836, -12748,
)  # fmt: skip
_QT64_FIRE = (
    12310, 14370, 16430, 18490, 20540, 22600, 24660, 26710, 29160, 31220, 33280,
    35340, 37390, 39450, 41500, 43560, 46610, 48670, 50730, 52780, 54840, 56900,
    58950, 61010, 63450, 65520, 67580, 69630, 71690, 73740, 75800, 77860, 80900,
    82970, 85020, 87080, 89140, 91190, 93250, 95300, 97750, 99820, 101870, 103930,
    105980, 108040, 110100, 112150, 115200, 117260, 119320, 121380, 123430, 125490, 127540,
    12960, 132050, 134110, 136170, 138220, 140280, 142340, 144390, 146450,
)  # fmt: skip
_QT128_LOOP1 = (
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 27656, 53000, 2312, 78344, 81512, 5480, 56168,
    30824, 33992, 59336, 8648, 84680, 87848, 11816, 62504, 37160, 40328, 65672, 14984, 91016,
    94184, 18152, 68840, 43496, 46664, 72008, 21320, 97352, 100520, 24488, 75176, 49832, 1456,
    77488, 26800, 52144, 55312, 29968, 80656, 4624, 7792, 83824, 33136, 58480, 61648, 36304,
    86992, 10960, 14128, 90160, 39472, 64816, 67984, 42640, 93328, 17296, 20464, 96496, 45808,
    71152, 74320, 48976, 99664, 23632, 25944, 51288, 600, 76632, 79800, 3768, 54456, 29112,
    32280, 57624, 6936, 82968, 86136, 10104, 60792, 35448, 38616, 63960, 13272, 89304, 92472,
    16440, 67128, 41784, 44952, 70296, 19608, 95640, 98808, 22776, 73464, 48120,
)  # fmt: skip
_QT128_LOOP2 = (
    2312, 78344, 27656, 53000, 56168, 30824, 81512, 5480, 8648, 84680, 33992, 59336, 62504,
    37160, 87848, 11816, 14984, 91016, 40328, 65672, 68840, 43496, 94184, 18152, 21320, 97352,
    46664, 72008, 75176, 49832, 100520, 24488, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 600,
    76632, 25944, 51288, 54456, 29112, 79800, 3768, 6936, 82968, 32280, 57624, 60792, 35448,
    86136, 10104, 13272, 89304, 38616, 63960, 67128, 41784, 92472, 16440, 19608, 95640, 44952,
    70296, 73464, 48120, 98808, 22776, 26800, 52144, 1456, 77488, 80656, 4624, 55312, 29968,
    33136, 58480, 7792, 83824, 86992, 10960, 61648, 36304, 39472, 64816, 14128, 90160, 93328,
    17296, 67984, 42640, 45808, 71152, 20464, 96496, 99664, 23632, 74320, 48976,
)  # fmt: skip
_OT128_STATIC = (
    49758, 43224, 36690, 30156, 21980, 15446, 8912, 2378, 49758, 43224, 36690, 30156, 2378,
    15446, 8912, 21980, 43224, 30156, 49758, 15446, 36690, 2378, 21980, 8912, 34312, 45002,
    38468, 40846, 40846, 34312, 51536, 47380, 31934, 47380, 31934, 51536, 38468, 27778, 27778,
    45002, 38468, 40846, 51536, 45002, 31934, 47380, 34312, 27778, 38468, 40846, 51536, 45002,
    31934, 34312, 27778, 38468, 40846, 51536, 45002, 31934, 47380, 34312, 27778, 45002, 45002,
    51536, 38468, 40846, 47380, 40846, 31934, 45002, 27778, 38468, 40846, 31934, 27778, 38468,
    34312, 34312, 34312, 47380, 51536, 31934, 51536, 47380, 27778, 49758, 21980, 43224, 15446,
    43224, 36690, 8912, 30156, 2378, 49758, 21980, 36690, 15446, 8912, 30156, 2378, 49758,
    43224, 36690, 30156, 21980, 15446, 8912, 2378, 43224, 49758, 30156, 36690, 21980, 15446,
    2378, 8912, 49758, 43224, 36690, 30156, 21980, 15446, 8912, 2378, 30156,
)  # fmt: skip
_OT128_AS0 = (
    -1, -1, -1, -1, 21980, 15446, 8912, 2378, -1, -1, -1, -1, 2378,
    15446, 8912, 21980, -1, 2378, 21980, 8912, 6534, 17224, 10690, 13068, 13068, 6534,
    23758, 19602, 4156, 19602, 4156, 23758, 13068, 13068, 23758, 10690, 4156, 19602, 19602,
    0, 10690, 6534, 23758, 17224, 23758, 19602, 6534, 17224, 4156, 0, 6534, 0,
    17224, 10690, 17224, 17224, 23758, 23758, 10690, 13068, 13068, 13068, 19602, 19602, 6534,
    13068, 4156, 4156, 17224, 17224, 17224, 0, 10690, 10690, 13068, 13068, 4156, 0,
    10690, 6534, 6534, 6534, 19602, 23758, 4156, 23758, 19602, 0, -1, 21980, -1,
    15446, -1, 8912, -1, 2378, -1, -1, 21980, -1, 15446, 8912, -1, 2378,
    -1, -1, -1, -1, 21980, 15446, 8912, 2378, -1, -1, -1, -1, 21980,
    15446, 2378, 8912, -1, -1, -1, -1, 21980, 15446, 8912, 2378,
)  # fmt: skip
_OT128_AS1 = (
    21980, 15446, 8912, 2378, -1, -1, -1, -1, 21980, 15446, 8912, 2378, -1,
    -1, -1, -1, 8912, -1, -1, -1, 6534, 17224, 10690, 13068, 13068, 6534,
    23758, 19602, 4156, 19602, 4156, 23758, 13068, 13068, 23758, 10690, 4156, 19602, 19602,
    0, 10690, 6534, 23758, 17224, 23758, 19602, 6534, 17224, 4156, 0, 6534, 0,
    17224, 10690, 17224, 17224, 23758, 23758, 10690, 13068, 13068, 13068, 19602, 19602, 6534,
    13068, 4156, 4156, 17224, 17224, 17224, 0, 10690, 10690, 13068, 13068, 4156, 0,
    10690, 6534, 6534, 6534, 19602, 23758, 4156, 23758, 19602, 0, 21980, -1, 15446,
    -1, 8912, -1, 2378, -1, 21980, 15446, -1, 8912, -1, -1, 2378, -1,
    21980, 15446, 8912, 2378, -1, -1, -1, -1, 15446, 21980, 2378, 8912, -1,
    -1, -1, -1, 21980, 15446, 8912, 2378, -1, -1, -1, -1,
)  # fmt: skip


_AT128_FIRE = (
    0, 0, 8240, 4112, 4144, 8240, 0, 0, 12424, 4144, 4112, 8264, 12376,
    12376, 8264, 12424, 0, 0, 4112, 8240, 4144, 0, 0, 4144, 12424, 8264,
    4112, 12376, 12376, 12424, 8264, 848, 2504, 4976, 6616, 6616, 9112, 2504, 848,
    10768, 13280, 13280, 4976, 9112, 14928, 14928, 10768, 2504, 848, 6616, 4976, 9112,
    6616, 848, 2504, 13280, 10768, 4976, 13280, 14928, 9112, 10768, 14928, 13280, 848,
    9112, 13280, 2504, 4976, 848, 2504, 14928, 10768, 10768, 14928, 4976, 6616, 6616,
    9112, 848, 13280, 13280, 9112, 4976, 2504, 2504, 848, 10768, 14928, 14928, 10768,
    6616, 4976, 9112, 6616, 4112, 12424, 0, 4144, 0, 0, 12424, 0, 8264,
    4112, 4144, 8240, 8240, 8264, 12376, 12376, 12424, 4112, 4144, 0, 0, 0,
    0, 0, 12424, 8264, 8240, 4144, 8264, 8240, 12376, 12376, 8264,
)  # fmt: skip


def point_time_offset(model: HesaiModel, block: int, channel: int, n_ret: int, key: int) -> int:
    """nebula's ``get_packet_relative_point_time_offset`` (ns from the packet stamp).

    ``key`` holds what else the model's timing depends on: the QT128's mode flag
    (bit 0), the OT128's operational state (bit 8) and per-block azimuth states
    (bits 16+, two per block)."""
    name = model.name
    if name == "Pandar40P":
        return -28580 - 55560 * ((10 - block - 1) // n_ret) + _P40_FIRE[channel]
    if name == "Pandar64":
        return -42580 - 55560 * ((6 - block - 1) // n_ret) + _P64_FIRE[channel]
    if name == "PandarQT64":
        return 25710 + (500000 * (block // n_ret)) // 3 + _QT64_FIRE[channel]
    if name == "PandarXT16":
        return 5632 - 50000 * ((8 - block - 1) // n_ret) + 368 + 3024 * channel
    if name == "PandarXT32":
        return 5632 - 50000 * ((8 - block - 1) // n_ret) + 368 + 1512 * channel
    if name == "PandarXT32M":
        if n_ret < 3:
            base = 5632 - 50000 * ((8 - block - 1) // n_ret)
        else:
            base = 5632 - 50000 * ((6 - block - 1) // 3)
        return base + 368 + 2888 * (channel - 16 if channel >= 16 else channel)
    if name == "PandarQT128":
        base = 9000 + (111110 * (2 - block - 1)) // n_ret
        if n_ret == 1:
            loop = _QT128_LOOP1 if block % 2 == 0 else _QT128_LOOP2
        else:
            loop = _QT128_LOOP1 if key & 1 else _QT128_LOOP2
        return base + loop[channel]
    if name == "PandarOT128":
        base = -27778 * 2 * (2 - block - 1) if n_ret == 1 else 0
        hires = (key >> 8) & 0xFF == 0
        state = (key >> (16 + 2 * block)) & 0b11
        table = _OT128_STATIC if not hires else (_OT128_AS0 if state == 0 else _OT128_AS1)
        return base + 43346 + table[channel]
    if name == "PandarAT128":
        base = -9249 - 41666 * (2 - block) if n_ret == 1 else -9249 - 41666
        return base + _AT128_FIRE[channel]
    raise ValueError(f"no firing times for {name}")  # pragma: no cover - table is closed


def _m(**kw: object) -> HesaiModel:
    return HesaiModel(**kw)  # type: ignore[arg-type]


_XT_TAIL = {"t_return_mode": 10, "t_date": 13, "t_timestamp": 19, "year_base": 1900}
MODELS: dict[str, HesaiModel] = {
    m.name: m
    for m in (
        _m(name="Pandar40P", channels=40, blocks=10, size=1262, header=0, sob=True, unit=3,
           lengths=(1262, 1266),  # datagram sizes
           tail=1240, t_return_mode=14, t_timestamp=10, t_date=16, year_base=2000,
           max_returns=2, min_range=0.3, max_range=200.0, signature=None, fixed_dis_unit=0.004,
           calibration_file="Pandar40P.csv", aliases=("40p", "pandar40p", "pandar40")),
        _m(name="Pandar64", channels=64, blocks=6, size=1194, header=8, sob=False, unit=3,
           lengths=(1194, 1198),  # datagram sizes
           tail=1172, t_return_mode=14, t_timestamp=10, t_date=16, year_base=2000,
           max_returns=2, min_range=0.3, max_range=200.0, signature=None,
           calibration_file="Pandar64.csv", aliases=("64", "pandar64")),
        _m(name="PandarQT64", channels=64, blocks=4, size=1072, header=12, sob=False, unit=4,
           lengths=(1072,),  # datagram sizes
           tail=1044, t_return_mode=16, t_timestamp=12, t_date=18, year_base=1900,
           max_returns=2, min_range=0.1, max_range=60.0, signature=(3, 1, 64, 4),
           calibration_file="PandarQT64.csv", aliases=("qt64", "pandarqt64")),
        _m(name="PandarXT16", channels=16, blocks=8, size=568, header=12, sob=False, unit=4,
           lengths=(568,),  # datagram sizes
           tail=540, **_XT_TAIL, max_returns=2, min_range=0.05, max_range=120.0,
           signature=(6, 1, 16, 8), calibration_file="PandarXT16.csv",
           aliases=("xt16", "pandarxt16")),
        _m(name="PandarXT32", channels=32, blocks=8, size=1080, header=12, sob=False, unit=4,
           lengths=(1080,),  # datagram sizes
           tail=1052, **_XT_TAIL, max_returns=2, min_range=0.05, max_range=120.0,
           signature=(6, 1, 32, 8), calibration_file="PandarXT32.csv",
           aliases=("xt32", "pandarxt32")),
        _m(name="PandarXT32M", channels=32, blocks=6, size=820, header=12, sob=False, unit=4,
           lengths=(820,),  # datagram sizes
           tail=792, **_XT_TAIL, max_returns=3, min_range=0.5, max_range=300.0,
           signature=(6, 1, 32, 6), calibration_file="PandarXT32M.csv",
           aliases=("xt32m", "xt32m2x", "pandarxt32m")),
        _m(name="PandarQT128", channels=128, blocks=2, size=1095, header=12, sob=False, unit=4,
           lengths=(1095, 1127),  # datagram sizes
           tail=1061, t_return_mode=12, t_date=15, t_timestamp=21, year_base=1900,
           max_returns=2, min_range=0.05, max_range=50.0, signature=(3, 2, 128, 2),
           body_crc=(12, 1040, 1040), tail_crc=(1061, 1091, 1091), t_mode_flag=5,
           calibration_file="PandarQT128.csv", aliases=("qt128", "qt128c2x", "pandarqt128")),
        _m(name="PandarOT128", channels=128, blocks=2, size=861, header=12, sob=False, unit=3,
           lengths=(861, 893),  # datagram sizes
           tail=805, t_return_mode=12, t_date=15, t_timestamp=21, year_base=1900,
           max_returns=2, min_range=0.1, max_range=230.0, signature=(1, 4, 128, 2),
           t_azimuth_state=9,
           t_operational_state=11, calibration_file="Pandar128E4X.csv",
           aliases=("ot128", "pandar128e4x", "128e4x", "pandarot128")),
        # AT128E2X: 2 blocks of (u16 + u8 azimuth, 128 x 4-byte units), body CRC, 32-byte tail
        _m(name="PandarAT128", channels=128, blocks=2, size=1078, header=12, sob=False, unit=4,
           lengths=(1086, 1118),  # datagram sizes
           tail=1046, t_return_mode=24, t_timestamp=20, t_date=26, year_base=0,
           max_returns=2, min_range=1.0, max_range=180.0, signature=(4, 3, 128, 2),
           fine_azimuth=True, epoch_seconds=True, corrected=True, fov=(30, 150),
           default_cut=150.0, calibration_file="PandarAT128.dat",
           aliases=("at128", "at128e2x", "pandarat128e2x", "pandarat128")),
    )
}  # fmt: skip
"""Every decoded model by name."""

_BY_SIGNATURE = {m.signature[0:1] + m.signature[2:]: m for m in MODELS.values() if m.signature}


def get_model(name: str | HesaiModel) -> HesaiModel:
    """A model by name or alias, case-insensitive (``"XT32"``, ``"PandarQT128"``...)."""
    if isinstance(name, HesaiModel):
        return name
    key = name.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    for model in MODELS.values():
        if key == model.name.lower() or key in model.aliases:
            return model
    known = ", ".join(MODELS)
    raise ValueError(f"unknown Hesai model {name!r} (known: {known}, or 'auto')")


def identify(payload: bytes) -> tuple[HesaiModel | None, str]:
    """The model a packet's first bytes name, and a phrase saying what they are.

    ``(None, why)`` for a packet that is not Hesai or a Hesai model not decoded
    here (``why`` starts with ``"Hesai"`` for the latter)."""
    if len(payload) < 8:
        return None, f"{len(payload)} bytes: too short for any Hesai packet"
    if payload[0] == 0xFF and payload[1] == 0xEE:
        return MODELS["Pandar40P"], "no header, blocks start FF EE: Pandar40P"
    if payload[0] != 0xEE or payload[1] != 0xFF:
        return None, f"starts {payload[:2].hex(' ')}, not a Hesai pre-header (EE FF)"
    if payload[2] == 64 and payload[3] == 6:
        return MODELS["Pandar64"], "8-byte header, 64 lasers, 6 blocks: Pandar64"
    if len(payload) < 12:
        return None, f"{len(payload)} bytes: too short for a Hesai header"
    major, minor, lasers, blocks = payload[2], payload[3], payload[6], payload[7]
    said = f"protocol {major}.{minor}, {lasers} lasers, {blocks} blocks"
    model = _BY_SIGNATURE.get((major, lasers, blocks))
    if model is not None:
        return model, f"{said}: {model.name}"
    why = UNSUPPORTED.get((major, lasers, blocks))
    if why is not None:
        return None, f"Hesai {said}: {why}"
    return None, f"Hesai {said}: a model not decoded here"


def hesai_signature(payload: bytes) -> str | None:
    """What a datagram is when it is certainly a Hesai packet, else None.

    Strict, for other LiDAR sources' error messages: a decoded model's packet must
    have one of its datagram ``lengths`` and its whole pre-header (``EE FF``,
    protocol major and minor, lasers, blocks) or, for the 40P, ``FF EE`` at the
    start of each of its 10 blocks; a model not decoded here must have ``EE FF``
    and a length its lasers and blocks can fill (3 or 4 bytes a unit, a tail of
    at most 128 bytes). A Velodyne packet (``FF EE`` blocks of 100 bytes, 1206 in
    all), whole or cut, is none of these."""
    model, said = identify(payload)
    if model is not None:
        if len(payload) not in model.lengths:
            return None
        if model.sob:
            flags = (
                payload[model.block_offset(b) : model.block_offset(b) + 2]
                for b in range(model.blocks)
            )
            return said if all(f == b"\xff\xee" for f in flags) else None
        if model.signature is not None and payload[3] != model.signature[1]:
            return None
        return said
    if not said.startswith("Hesai") or len(payload) < 12:
        return None
    lasers, blocks = payload[6], payload[7]
    if lasers == 0 or blocks == 0:
        return None
    shortest = 12 + blocks * (2 + 3 * lasers)
    longest = 12 + blocks * (2 + 4 * lasers) + 128
    return said if shortest <= len(payload) <= longest else None


def looks_like_hesai(payload: bytes) -> bool:
    """Whether a datagram is certainly a Hesai packet (see :func:`hesai_signature`)."""
    return hesai_signature(payload) is not None


# -- angle-correction files ------------------------------------------------------------


@dataclass(frozen=True)
class HesaiAngles:
    """Per-channel elevation and azimuth offset, degrees (float32, as nebula's ``stof``)."""

    elevation: npt.NDArray[np.float32]
    azimuth: npt.NDArray[np.float32]
    source: str

    @property
    def channels(self) -> int:
        return len(self.elevation)


def parse_angles(text: str, source: str) -> HesaiAngles:
    """Hesai's angle CSV: ``id,elevation,azimuth`` rows (ids from 1); a header and
    lines of another shape are skipped (as nebula does); ids must be 1..N, each once."""
    rows: dict[int, tuple[float, float]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in line.split(",") if c.strip()]
        if len(cells) != 3:
            continue
        try:
            laser, elev, azim = int(cells[0]), float(cells[1]), float(cells[2])
        except ValueError:
            continue
        if laser < 1 or laser > 1024:
            raise DecodeError(f"{source}: line {number}: laser id {laser} is not in 1..1024")
        if laser in rows:
            raise DecodeError(f"{source}: line {number}: laser id {laser} given twice")
        rows[laser] = (elev, azim)
    if not rows:
        raise DecodeError(f"{source}: no 'id,elevation,azimuth' rows (a Hesai angle CSV)")
    n = max(rows)
    missing = sorted(set(range(1, n + 1)) - set(rows))
    if missing:
        raise DecodeError(f"{source}: laser ids {missing[:5]} missing (ids 1..{n} expected)")
    table = np.array([rows[i] for i in range(1, n + 1)], np.float64)
    return HesaiAngles(table[:, 0].astype(np.float32), table[:, 1].astype(np.float32), source)


def read_angles(path: str | Path) -> HesaiAngles:
    """The angle-correction CSV at ``path`` (see :func:`parse_angles`)."""
    text = read_small_text(  # a regular file: /dev/zero or a FIFO is refused, not read
        path, "Hesai angle file", CALIBRATION_LIMIT, limit_name="a calibration file",
        error=DecodeError, encoding="utf-8-sig",
    )  # fmt: skip
    return parse_angles(text, str(path))


def default_angles(model: HesaiModel) -> HesaiAngles | HesaiCorrection:
    """The angles nebula ships for ``model`` (its ``calibration/*.csv``, or the AT128's
    ``PandarAT128.dat`` correction; packaged here)."""
    ref = resources.files("adapters.lidar") / "hesai_calibration" / model.calibration_file
    source = f"built-in {model.calibration_file}"
    if model.corrected:
        return parse_correction(ref.read_bytes(), source)
    return parse_angles(ref.read_text(encoding="utf-8"), source)


def parse_any_angles(data: bytes, source: str) -> HesaiAngles | HesaiCorrection:
    """An angle CSV or a ``.dat`` correction, told apart by the correction's ``EE FF``
    start (a CSV is text)."""
    if looks_like_correction(data):
        return parse_correction(data, source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DecodeError(
            f"{source}: neither UTF-8 text (an angle CSV) nor a .dat: {err}"
        ) from None
    return parse_angles(text, source)


def read_any_angles(path: str | Path) -> HesaiAngles | HesaiCorrection:
    """The angle CSV or ``.dat`` correction at ``path`` (see :func:`parse_any_angles`)."""
    data = read_small(  # a regular file: /dev/zero or a FIFO is refused, not read
        path, "Hesai angle file", CALIBRATION_LIMIT, limit_name="a calibration file",
        error=DecodeError,
    )  # fmt: skip
    return parse_any_angles(data, str(path))
