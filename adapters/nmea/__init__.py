"""GNSS receivers speaking NMEA 0183: a file, a serial port, UDP or TCP (pynmea2 parses).

``pynmea2`` (small, pure Python) loads with this package; ``pyserial`` only when a
serial port is opened.
"""

from adapters.nmea.decoder import GNSS_DTYPE, Fix, Joined, LineSplitter, Loss, NmeaDecoder
from adapters.nmea.source import NmeaSource, looks_like_nmea
from fusion._exports import rewrite_module

__all__ = [
    "GNSS_DTYPE",
    "Fix",
    "Joined",
    "LineSplitter",
    "Loss",
    "NmeaDecoder",
    "NmeaSource",
    "looks_like_nmea",
]

rewrite_module(globals(), __name__)
