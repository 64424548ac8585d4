"""u-blox UBX messages (parsed by pyubx2) -> rows of the GNSS sensors; no I/O.

Theory of operation. :class:`UbxDecoder` takes one whole UBX message (sync
to checksum, checked by :mod:`adapters.nmea._stream`), has pyubx2 parse it and
turns the messages it knows into one frame each:

* ``NAV-PVT`` -> ``<name>.pvt``, one :data:`PVT_DTYPE` row (position, velocity,
  accuracies, fix type, satellites, the receiver's UTC date and time);
* ``NAV-HPPOSLLH`` -> ``<name>.hpposllh``, one :data:`HPPOSLLH_DTYPE` row
  (the high-precision parts added: pyubx2 gives them combined);
* ``NAV-SAT`` -> ``<name>.sat``, one :data:`SAT_DTYPE` row per satellite;
* ``ESF-MEAS`` and ``ESF-RAW`` -> ``<name>.esf``, one :data:`ESF_DTYPE` row per
  measurement (gyroscope, accelerometer, temperature, wheel ticks, speed),
  scaled to SI units as the u-blox interface description says.

Time. The receiver's GPS time is the time source: a navigation message's
``iTOW`` (GPS time of week, ms) plus the GPS week give ``t`` in UTC ns (the
leap seconds subtracted). The week and the leap seconds are learnt from
NAV-TIMEGPS (week, leapS, when valid) or from NAV-PVT's own UTC date and time
(when ``validDate`` and ``validTime``; leap seconds from the table of GPS-UTC
offsets). Before either, a navigation message is stamped in GPS week 0 (its
time of week from 1980-01-06, as NMEA fixes no sentence dates go out on
1970-01-01), with one ``undated`` warning; its frame is kept. ESF messages
carry no GPS time, only the sensor time tag (ms of the receiver's own sensor
clock): their ``t`` is that tag in ns, on that clock, and a live source's
online clock model learns its offset from the arrivals like any sensor's.

Other UBX messages (NAV-STATUS, MON-*, CFG-*, ACK-*...) are read past and
counted by identity in :attr:`UbxDecoder.identities`; ones pyubx2 cannot parse
are lost as ``undecodable``.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from fusion import SensorKind

GPS_EPOCH_NS = 315_964_800 * 1_000_000_000  # 1980-01-06T00:00:00Z in Unix ns
WEEK_NS = 7 * 86_400 * 1_000_000_000

# GPS - UTC in seconds, from the start of each period (IERS bulletins).
_LEAP = (
    (dt.date(2017, 1, 1), 18),
    (dt.date(2015, 7, 1), 17),
    (dt.date(2012, 7, 1), 16),
    (dt.date(2009, 1, 1), 15),
    (dt.date(2006, 1, 1), 14),
    (dt.date(1999, 1, 1), 13),
)

PVT_DTYPE = np.dtype(
    [
        ("t", "<i8"),
        ("itow_ms", "<u4"),
        ("fix_type", "u1"),
        ("gnss_fix_ok", "u1"),
        ("carr_soln", "u1"),
        ("num_sv", "u1"),
        ("lat", "<f8"),
        ("lon", "<f8"),
        ("height", "<f8"),
        ("hmsl", "<f8"),
        ("h_acc", "<f8"),
        ("v_acc", "<f8"),
        ("vel_n", "<f8"),
        ("vel_e", "<f8"),
        ("vel_d", "<f8"),
        ("g_speed", "<f8"),
        ("head_mot", "<f8"),
        ("s_acc", "<f8"),
        ("head_acc", "<f8"),
        ("p_dop", "<f8"),
        ("t_acc_ns", "<u4"),
        ("utc_valid", "u1"),
    ]
)
"""NAV-PVT: ``t`` (UTC ns from GPS time), ``itow_ms``, fix type (0 none .. 3 3D, 4
GNSS+dead reckoning, 5 time only), ``gnss_fix_ok``, ``carr_soln`` (0 none, 1 RTK
float, 2 RTK fixed), satellites used, ``lat``/``lon`` (degrees), ``height`` (m above
the ellipsoid), ``hmsl`` (m above mean sea level), accuracies ``h_acc``/``v_acc``
(m), NED velocity and ground speed (m/s), ``head_mot`` (degrees), ``s_acc`` (m/s),
``head_acc`` (degrees), ``p_dop``, ``t_acc_ns`` and ``utc_valid`` (the receiver's
UTC date and time both valid)."""

HPPOSLLH_DTYPE = np.dtype(
    [
        ("t", "<i8"),
        ("itow_ms", "<u4"),
        ("lat", "<f8"),
        ("lon", "<f8"),
        ("height", "<f8"),
        ("hmsl", "<f8"),
        ("h_acc", "<f8"),
        ("v_acc", "<f8"),
        ("invalid_llh", "u1"),
    ]
)
"""NAV-HPPOSLLH: degrees to 1e-9, heights and accuracies in m (0.1 mm resolution)."""

SAT_DTYPE = np.dtype(
    [
        ("t", "<i8"),
        ("itow_ms", "<u4"),
        ("gnss_id", "u1"),
        ("sv_id", "u1"),
        ("cno", "u1"),
        ("elev", "i1"),
        ("azim", "<i2"),
        ("pr_res", "<f8"),
        ("quality", "u1"),
        ("used", "u1"),
        ("health", "u1"),
    ]
)
"""NAV-SAT, a row per satellite: GNSS id (0 GPS, 1 SBAS, 2 Galileo, 3 BeiDou, 5 QZSS,
6 GLONASS), satellite id, C/N0 (dBHz), elevation and azimuth (degrees), pseudorange
residual (m), signal quality (0-7), used in the solution, health (1 healthy)."""

ESF_DTYPE = np.dtype(
    [
        ("t", "<i8"),
        ("time_tag", "<u4"),
        ("data_type", "u1"),
        ("value", "<f8"),
        ("raw", "<i4"),
    ]
)
"""ESF-MEAS / ESF-RAW, a row per measurement: ``t`` the sensor time tag in ns,
``time_tag`` as sent, ``data_type`` (5 gyro z, 12 temperature, 13 gyro y, 14 gyro x,
16/17/18 accelerometer x/y/z, 6-11 wheel ticks, 11 speed), ``value`` scaled (deg/s,
m/s², °C, m/s; ticks as counted) and ``raw`` the 24-bit field (sign-extended for the
signed types)."""

SENSORS = {"NAV-PVT": "pvt", "NAV-HPPOSLLH": "hpposllh", "NAV-SAT": "sat"}
"""UBX navigation messages made into frames, and their sensor suffix."""

ESF_SENSOR = "esf"

_KIND: dict[str, SensorKind] = {"pvt": "gnss", "hpposllh": "gnss", "sat": "gnss", "esf": "imu"}

_DTYPES = {"pvt": PVT_DTYPE, "hpposllh": HPPOSLLH_DTYPE, "sat": SAT_DTYPE, "esf": ESF_DTYPE}

# ESF data types: (scale to SI, signed)
_ESF_SCALE = {
    5: (2.0**-12, True),  # gyro z, deg/s
    13: (2.0**-12, True),  # gyro y
    14: (2.0**-12, True),  # gyro x
    16: (2.0**-10, True),  # accel x, m/s^2
    17: (2.0**-10, True),  # accel y
    18: (2.0**-10, True),  # accel z
    12: (1e-2, True),  # gyro temperature, deg C
    11: (1e-3, True),  # speed, m/s
}


def ubx_sensors(name: str) -> list[tuple[str, SensorKind, list[str]]]:
    """The UBX sensors of a source named ``name``: (sensor, kind, fields)."""
    return [
        (f"{name}.{suffix}", _KIND[suffix], list(_DTYPES[suffix].names or ()))
        for suffix in (*SENSORS.values(), ESF_SENSOR)
    ]


@dataclass(frozen=True, slots=True)
class UbxFrame:
    """A frame to make from one UBX message."""

    sensor: str
    rows: np.ndarray
    t: int
    t_arrival: int | None = None
    warning: str | None = None  # the first frame stamped without the GPS week says so


@dataclass(frozen=True, slots=True)
class UbxLoss:
    """A UBX message lost (``units=0``: counted, not lost)."""

    reason: str
    message: str
    units: int = 1


@dataclass(frozen=True, slots=True)
class UbxRead:
    """A UBX message read past (its identity counted, no frame)."""


UbxEvent = UbxFrame | UbxLoss | UbxRead


def _u32(value: Any) -> int:
    """A pyubx2 X4 field (4 little-endian bytes) or an integer, as an unsigned int."""
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "little")
    return int(value)


def leap_seconds(day: dt.date) -> int:
    """GPS - UTC in seconds on ``day`` (13 before 2006 back to 1999; 18 since 2017)."""
    for start, leap in _LEAP:
        if day >= start:
            return leap
    return 13


class UbxDecoder:
    """Whole UBX messages in (:meth:`push`), :data:`UbxEvent` out."""

    def __init__(self, name: str = "gnss") -> None:
        self.name = name
        self.week: int | None = None
        self.leap_s: int | None = None
        self.undated = 0
        """Navigation messages stamped in GPS week 0 (before the week was known)."""
        self.identities: Counter[str] = Counter()
        """Well-formed UBX messages read, by identity (``{"NAV-PVT": 600, ...}``)."""

    def gps_to_utc(self, itow_ms: int) -> int | None:
        """UTC ns of GPS time of week ``itow_ms`` in the learnt week, or ``None``."""
        if self.week is None or self.leap_s is None:
            return None
        return (
            GPS_EPOCH_NS + self.week * WEEK_NS + itow_ms * 1_000_000 - self.leap_s * 1_000_000_000
        )

    def push(self, raw: bytes, where: str = "") -> UbxEvent:
        """One whole UBX message (its checksum already checked)."""
        from pyubx2 import UBXReader

        at = f"{where}: " if where else ""
        try:
            msg = UBXReader.parse(raw, validate=0)
        except Exception as err:  # pyubx2 raises its own errors and struct/Key errors
            return UbxLoss(
                "undecodable",
                f"{at}UBX class 0x{raw[2]:02X} id 0x{raw[3]:02X} ({len(raw)} bytes) does not "
                f"parse: {err}",
            )
        identity = str(getattr(msg, "identity", "?"))
        self.identities[identity] += 1
        try:
            if identity == "NAV-TIMEGPS":
                if msg.weekValid and msg.leapSValid:
                    self.week, self.leap_s = int(msg.week), int(msg.leapS)
                return UbxRead()
            if identity == "NAV-PVT":
                self._learn_from_pvt(msg)
            suffix = SENSORS.get(identity)
            if suffix is not None:
                t = self.gps_to_utc(int(msg.iTOW))
                warning = None
                if t is None:  # stamped in GPS week 0 until a message gives the week
                    t = GPS_EPOCH_NS + int(msg.iTOW) * 1_000_000
                    if not self.undated:
                        warning = (
                            f"{at}{identity} at iTOW {int(msg.iTOW)} ms came before any message "
                            "gave the GPS week (NAV-TIMEGPS, or NAV-PVT with a valid date): "
                            "such messages are stamped in GPS week 0 (from 1980-01-06)"
                        )
                    self.undated += 1
                rows = getattr(self, f"_{suffix}")(msg, t)
                return UbxFrame(f"{self.name}.{suffix}", rows, t, warning=warning)
            if identity in ("ESF-MEAS", "ESF-RAW"):
                rows = self._esf(msg, identity)
                if not len(rows):
                    return UbxRead()
                return UbxFrame(f"{self.name}.{ESF_SENSOR}", rows, int(rows["t"][0]))
        except (AttributeError, ValueError, TypeError, OverflowError) as err:
            return UbxLoss("undecodable", f"{at}{identity}: a field does not parse: {err}")
        return UbxRead()

    def _learn_from_pvt(self, msg: Any) -> None:
        if not (msg.validDate and msg.validTime) or self.week is not None:
            return
        day = dt.date(int(msg.year), int(msg.month), int(msg.day))
        utc = int(
            dt.datetime(
                day.year,
                day.month,
                day.day,
                int(msg.hour),
                int(msg.min),
                int(msg.second),
                tzinfo=dt.UTC,
            ).timestamp()
        ) * 1_000_000_000 + int(msg.nano)
        leap = leap_seconds(day)
        since = utc + leap * 1_000_000_000 - GPS_EPOCH_NS - int(msg.iTOW) * 1_000_000
        self.week, self.leap_s = round(since / WEEK_NS), leap

    @staticmethod
    def _pvt(msg: Any, t: int) -> np.ndarray:
        row = np.zeros(1, PVT_DTYPE)
        row["t"] = t
        row["itow_ms"] = msg.iTOW
        row["fix_type"] = msg.fixType
        row["gnss_fix_ok"] = msg.gnssFixOk
        row["carr_soln"] = msg.carrSoln
        row["num_sv"] = msg.numSV
        row["lat"], row["lon"] = msg.lat, msg.lon
        row["height"], row["hmsl"] = msg.height / 1e3, msg.hMSL / 1e3
        row["h_acc"], row["v_acc"] = msg.hAcc / 1e3, msg.vAcc / 1e3
        row["vel_n"], row["vel_e"], row["vel_d"] = msg.velN / 1e3, msg.velE / 1e3, msg.velD / 1e3
        row["g_speed"] = msg.gSpeed / 1e3
        row["head_mot"] = msg.headMot
        row["s_acc"] = msg.sAcc / 1e3
        row["head_acc"] = msg.headAcc
        row["p_dop"] = msg.pDOP
        row["t_acc_ns"] = msg.tAcc
        row["utc_valid"] = bool(msg.validDate and msg.validTime)
        return row

    @staticmethod
    def _hpposllh(msg: Any, t: int) -> np.ndarray:
        row = np.zeros(1, HPPOSLLH_DTYPE)
        row["t"] = t
        row["itow_ms"] = msg.iTOW
        row["lat"], row["lon"] = msg.lat, msg.lon
        row["height"], row["hmsl"] = msg.height / 1e3, msg.hMSL / 1e3
        row["h_acc"], row["v_acc"] = msg.hAcc / 1e3, msg.vAcc / 1e3
        row["invalid_llh"] = getattr(msg, "invalidLlh", 0)
        return row

    @staticmethod
    def _sat(msg: Any, t: int) -> np.ndarray:
        n = int(msg.numSvs)
        rows = np.zeros(n, SAT_DTYPE)
        rows["t"] = t
        rows["itow_ms"] = msg.iTOW
        for k in range(n):
            s = f"_{k + 1:02d}"
            rows[k]["gnss_id"] = getattr(msg, "gnssId" + s)
            rows[k]["sv_id"] = getattr(msg, "svId" + s)
            rows[k]["cno"] = getattr(msg, "cno" + s)
            rows[k]["elev"] = getattr(msg, "elev" + s)
            rows[k]["azim"] = getattr(msg, "azim" + s)
            rows[k]["pr_res"] = getattr(msg, "prRes" + s)
            rows[k]["quality"] = getattr(msg, "qualityInd" + s)
            rows[k]["used"] = getattr(msg, "svUsed" + s)
            rows[k]["health"] = getattr(msg, "health" + s)
        return rows

    @staticmethod
    def _esf(msg: Any, identity: str) -> np.ndarray:
        entries: list[tuple[int, int, int]] = []  # time tag, type, 24-bit field
        if identity == "ESF-MEAS":
            tag = int(msg.timeTag)
            for k in range(int(msg.numMeas)):
                s = f"_{k + 1:02d}"
                entries.append(
                    (tag, int(getattr(msg, "dataType" + s)), int(getattr(msg, "dataField" + s)))
                )
        else:  # ESF-RAW: a time tag per measurement; pyubx2 gives both as 4 raw bytes
            k = 1
            while hasattr(msg, f"data_{k:02d}"):
                word = _u32(getattr(msg, f"data_{k:02d}"))
                tag_k = _u32(getattr(msg, f"sTag_{k:02d}"))
                entries.append((tag_k, word >> 24, word & 0xFFFFFF))
                k += 1
        rows = np.zeros(len(entries), ESF_DTYPE)
        for i, (tag, kind, field) in enumerate(entries):
            scale, signed = _ESF_SCALE.get(kind, (1.0, False))
            value = field & 0xFFFFFF
            if signed and value & 0x800000:
                value -= 1 << 24
            rows[i] = (tag * 1_000_000, tag, kind, value * scale, value)
        return rows


__all__ = [
    "ESF_DTYPE",
    "HPPOSLLH_DTYPE",
    "PVT_DTYPE",
    "SAT_DTYPE",
    "UbxDecoder",
    "ubx_sensors",
]
