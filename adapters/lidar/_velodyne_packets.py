"""Velodyne data packets: their byte layout and what is checked in them.

Every data packet is 1206 bytes (:data:`PACKET_DTYPE`): 12 blocks of (flag,
azimuth in 0.01°, 32 x (distance u16, intensity u8)), a u32 timestamp (µs past
the top of the hour), a return-mode byte and a product byte. The
:class:`~adapters.lidar._velodyne_assembler.SweepAssembler` validates packets
and cuts them into :class:`~adapters.lidar._velodyne_decode.RawSweep` objects,
which hold the packets' bytes as one ``(P, 1206)`` array and decode to points.
"""

from __future__ import annotations

import numpy as np

from adapters.lidar._velodyne_models import (
    BLOCKS,
    HOUR_US,
    RETURN_DUAL,
    RETURN_LAST,
    RETURN_STRONGEST,
    SLOTS,
)

PACKET_SIZE = 1206
WRAP_PERIOD_NS = HOUR_US * 1000
"""Velodyne stamps wrap every hour: declared to clock models via ``SensorSpec.meta``."""

MODE_OK = np.zeros(256, bool)
MODE_OK[[RETURN_STRONGEST, RETURN_LAST, RETURN_DUAL, 0x00]] = True  # 0: firmware leaving it unset

PACKET_DTYPE = np.dtype(
    [
        (
            "blocks",
            np.dtype(
                [
                    ("flag", "<u2"),
                    ("azimuth", "<u2"),
                    ("returns", np.dtype([("distance", "<u2"), ("intensity", "u1")]), (SLOTS,)),
                ]
            ),
            (BLOCKS,),
        ),
        ("timestamp", "<u4"),
        ("return_mode", "u1"),
        ("product_id", "u1"),
    ]
)
assert PACKET_DTYPE.itemsize == PACKET_SIZE
