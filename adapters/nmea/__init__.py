"""GNSS receivers speaking NMEA 0183 and u-blox UBX: a file, a serial port, UDP or TCP
(pynmea2 parses sentences, pyubx2 UBX messages).

``pynmea2`` (small, pure Python) loads with this package; ``pyubx2`` when a UBX
message is parsed; ``pyserial`` only when a serial port is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.nmea._decoder import GNSS_DTYPE, Fix, Joined, LineSplitter, Loss, NmeaDecoder
    from adapters.nmea._source import NmeaSource, looks_like_nmea
    from adapters.nmea._stream import StreamSplitter
    from adapters.nmea._ubx import (
        ESF_DTYPE,
        HPPOSLLH_DTYPE,
        PVT_DTYPE,
        SAT_DTYPE,
        UbxDecoder,
        ubx_sensors,
    )


__all__ = [
    "ESF_DTYPE",
    "GNSS_DTYPE",
    "HPPOSLLH_DTYPE",
    "PVT_DTYPE",
    "SAT_DTYPE",
    "Fix",
    "Joined",
    "LineSplitter",
    "Loss",
    "NmeaDecoder",
    "NmeaSource",
    "StreamSplitter",
    "UbxDecoder",
    "looks_like_nmea",
    "ubx_sensors",
]

_HOMES = {
    "ESF_DTYPE": "adapters.nmea._ubx",
    "Fix": "adapters.nmea._decoder",
    "GNSS_DTYPE": "adapters.nmea._decoder",
    "HPPOSLLH_DTYPE": "adapters.nmea._ubx",
    "Joined": "adapters.nmea._decoder",
    "LineSplitter": "adapters.nmea._decoder",
    "Loss": "adapters.nmea._decoder",
    "NmeaDecoder": "adapters.nmea._decoder",
    "NmeaSource": "adapters.nmea._source",
    "PVT_DTYPE": "adapters.nmea._ubx",
    "SAT_DTYPE": "adapters.nmea._ubx",
    "StreamSplitter": "adapters.nmea._stream",
    "UbxDecoder": "adapters.nmea._ubx",
    "looks_like_nmea": "adapters.nmea._source",
    "ubx_sensors": "adapters.nmea._ubx",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
