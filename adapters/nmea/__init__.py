"""GNSS receivers speaking NMEA 0183 and u-blox UBX: a file, a serial port, UDP or TCP
(pynmea2 parses sentences, pyubx2 UBX messages).

``pynmea2`` (small, pure Python) loads with this package; ``pyubx2`` when a UBX
message is parsed; ``pyserial`` only when a serial port is opened.
"""

from adapters.nmea._stream import StreamSplitter
from adapters.nmea._ubx import (
    ESF_DTYPE,
    HPPOSLLH_DTYPE,
    PVT_DTYPE,
    SAT_DTYPE,
    UbxDecoder,
    ubx_sensors,
)
from adapters.nmea.decoder import GNSS_DTYPE, Fix, Joined, LineSplitter, Loss, NmeaDecoder
from adapters.nmea.source import NmeaSource, looks_like_nmea
from fusion._exports import rewrite_module

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

rewrite_module(globals(), __name__)
