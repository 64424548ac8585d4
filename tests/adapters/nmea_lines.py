"""NMEA sentences for tests, rendered (checksums included) by pynmea2, the independent reference."""

from __future__ import annotations

import pynmea2


def render(kind: str, fields: tuple[str, ...], talker: str = "GP") -> str:
    """``$<talker><kind>,...*hh`` with pynmea2's checksum."""
    cls = getattr(pynmea2, kind)
    return str(cls(talker, kind, fields))


def _angle(value: float, width: int) -> str:
    degrees = int(abs(value))
    minutes = (abs(value) - degrees) * 60
    return f"{degrees:0{width}d}{minutes:07.4f}"


def hms(seconds: float) -> str:
    """``hhmmss.ss`` for a time of day in seconds."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{int(h):02d}{int(m):02d}{s:05.2f}"


def gga(tod: float, lat: float, lon: float, alt: float, *, quality: int = 1, sats: int = 9) -> str:
    return render(
        "GGA",
        (
            hms(tod),
            _angle(lat, 2),
            "N" if lat >= 0 else "S",
            _angle(lon, 3),
            "E" if lon >= 0 else "W",
            str(quality),
            f"{sats:02d}",
            "0.9",
            f"{alt:.2f}",
            "M",
            "47.0",
            "M",
            "",
            "",
        ),
    )


def rmc(tod: float, date: str, lat: float, lon: float, knots: float, course: float) -> str:
    """``date`` as ``ddmmyy``."""
    return render(
        "RMC",
        (
            hms(tod),
            "A",
            _angle(lat, 2),
            "N" if lat >= 0 else "S",
            _angle(lon, 3),
            "E" if lon >= 0 else "W",
            f"{knots:.2f}",
            f"{course:.1f}",
            date,
            "",
            "",
            "A",
        ),
    )


def vtg(course: float, knots: float) -> str:
    return render(
        "VTG",
        (f"{course:.1f}", "T", "", "M", f"{knots:.2f}", "N", f"{knots * 1.852:.2f}", "K", "A"),
    )


def hdt(heading: float) -> str:
    return render("HDT", (f"{heading:.2f}", "T"), talker="HE")


def gsv() -> str:
    return render("GSV", ("1", "1", "01", "05", "40", "083", "46"))
