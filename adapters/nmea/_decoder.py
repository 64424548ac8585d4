"""The sans-I/O NMEA 0183 core: lines in, GNSS fixes and counted losses out.

Theory of operation. A receiver reports each navigation *epoch* (one
solution, usually 1-10 Hz) as a burst of sentences: GGA (position, fix
quality, satellites, HDOP, altitude), RMC (position, speed, course, *date*),
VTG (speed, course), HDT (true heading, often from a second antenna or a
gyrocompass), plus others this decoder reads past (GSA, GSV, GLL, ...). GGA
and RMC carry the epoch's UTC time of day; VTG and HDT carry none and belong
to the epoch open when they arrive. So:

* a GGA or RMC whose time differs from the open epoch's closes that epoch
  and opens a new one;
* an epoch becomes one :class:`Fix` (one row of :data:`GNSS_DTYPE`) as soon
  as it holds every sentence type of GGA/RMC/VTG/HDT that the two epochs before
  it both held (a receiver repeats its burst, so the fix goes out without
  waiting a whole epoch for the next one; a burst cut short by a corrupt
  sentence is not learned), or else when it is closed or the input ends;
  an epoch with an RMC but no GGA gives a fix with RMC's position,
  ``quality`` -1 and no altitude;
* a VTG or HDT arriving after its epoch's fix went out is carried into the
  next epoch (a 10 Hz HDT between 1 Hz fixes gives the latest heading).

Time. ``t`` is UTC in int64 ns: the sentence's time of day on the date of the
last RMC (or ZDA), rolled to the next day when the time of day wraps past
midnight. Before the first dated sentence: a live input dates a fix with the
host's UTC day nearest its wall clock; a file holds up to ``hold`` fixes
waiting for one (then dated backwards across midnight if needed); when none
comes (a GGA-only log) they go out on ``date`` (default 1970-01-01, so ``t``
is the time of day) with one ``undated`` warning, and so do later undated
fixes. A log whose first RMC comes after that jumps to the real date there.

Accounting. Every non-blank line is one unit. A line whose sentence comes after
bytes that are not printable ASCII (a u-blox receiver's UBX binary right before
the ``$``) is read from its ``$``: the bytes before it are a ``garbage`` warning
(no unit lost), so they cost only themselves. A well-formed sentence of the
receiver's burst goes into the fix of the epoch it arrived in: GGA, RMC, VTG,
HDT and ZDA with their fields, and :data:`BURST` (GSA, GSV, GLL, GST, ...)
without fields of their own, since a frame holds no satellites (one that
arrives after its epoch's fix went out joins that fix as :class:`Joined`).
:attr:`NmeaDecoder.types` counts every well-formed sentence by type. The rest
is lost with a reason: ``bad_checksum`` (wrong or missing ``*hh``),
``bad_length`` (longer than :data:`MAX_LINE`), ``undecodable`` (not an NMEA
sentence, or fields that do not parse), ``bad_time`` (a GGA, RMC or ZDA with an
empty time, as a receiver sends before its first fix), ``unsupported_type`` (a type pynmea2
does not know, or not a GNSS receiver's: wind, depth, routes, AIS) and, when
the input ends, ``incomplete`` (VTG/HDT/GSV... after the last fix).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pynmea2

GNSS_DTYPE = np.dtype(
    [
        ("t", "<i8"),
        ("lat", "<f8"),
        ("lon", "<f8"),
        ("alt", "<f8"),
        ("geoid_sep", "<f8"),
        ("quality", "<i2"),
        ("num_sats", "<i2"),
        ("hdop", "<f8"),
        ("speed", "<f8"),
        ("course", "<f8"),
        ("heading", "<f8"),
    ]
)
"""One fix: ``t`` (UTC ns), ``lat``/``lon`` (degrees, north/east positive), ``alt``
(m above mean sea level, GGA), ``geoid_sep`` (m, geoid above the WGS 84 ellipsoid,
GGA), ``quality`` (GGA fix quality 0-8, -1 without a GGA), ``num_sats`` (-1 unknown),
``hdop``, ``speed`` (m/s over ground), ``course`` (degrees true, over ground) and
``heading`` (degrees true, HDT). Unknown floats are NaN."""

MAX_LINE = 512
"""Longest line read as a sentence (NMEA allows 82 characters; some receivers send more)."""

HOLD_FIXES = 32
"""Fixes a file holds before the first dated sentence (RMC, ZDA) before giving up on one."""

USED = ("GGA", "RMC", "VTG", "HDT", "ZDA")
"""Sentence types whose fields reach the frames."""

BURST = frozenset({"GSA", "GSV", "GLL", "GNS", "GST", "GRS", "GBS", "DTM", "TXT", "GBQ"})
"""Other sentences of a GNSS receiver's burst: read into the epoch's fix, fields unused."""

KNOT = 1852.0 / 3600.0  # m/s
DAY = 86_400_000_000_000
_HALF_DAY = DAY // 2
_EPOCH_TYPES = frozenset({"GGA", "RMC", "VTG", "HDT"})


@dataclass(frozen=True, slots=True)
class Fix:
    """One epoch's solution, ready to become a frame."""

    row: np.ndarray
    """A one-row :data:`GNSS_DTYPE` array."""
    units: int
    """Sentences that went into it."""
    t_arrival: int | None
    """Host time the epoch's first sentence arrived (``None`` from a file)."""


@dataclass(frozen=True, slots=True)
class Loss:
    """Units lost with a reason (``units=0``: a warning that loses nothing)."""

    reason: str
    message: str
    units: int = 1


@dataclass(frozen=True, slots=True)
class Joined:
    """Units that belong to a fix that already went out (a GSV after its epoch's GGA)."""

    units: int = 1


Event = Fix | Loss | Joined


@dataclass(slots=True)
class _Epoch:
    tod: int | None  # time of day in ns, None for carried timeless sentences
    arrival: int | None
    values: dict[str, float] = field(default_factory=dict)
    types: set[str] = field(default_factory=set)
    units: int = 0
    date: int | None = None  # midnight (UTC ns) when a sentence of the epoch carried it
    sent: bool = False


class LineSplitter:
    """Bytes of a stream (serial, TCP) -> whole lines, holding at most :data:`MAX_LINE` bytes.

    A longer run without a newline comes out as one line of ``MAX_LINE + 1``
    bytes (counted ``bad_length`` by the decoder); the rest of it, up to the
    next newline, is dropped with it.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes]:
        """The lines ``data`` completes."""
        lines: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            self._take(data[start:end], lines, complete=True)
            start = end + 1
        self._take(data[start:], lines, complete=False)
        return lines

    def flush(self) -> list[bytes]:
        """The unterminated last line, if any (at the end of the stream)."""
        rest, self._buffer = bytes(self._buffer), bytearray()
        skipping, self._skipping = self._skipping, False
        return [rest] if rest.strip() and not skipping else []

    def _take(self, piece: bytes, lines: list[bytes], *, complete: bool) -> None:
        if not self._skipping:
            self._buffer += piece
            if len(self._buffer) > MAX_LINE:
                lines.append(bytes(self._buffer[: MAX_LINE + 1]))
                self._buffer.clear()
                self._skipping = not complete
                return
        if complete:
            if not self._skipping:
                lines.append(bytes(self._buffer))
            self._buffer.clear()
            self._skipping = False


class NmeaDecoder:
    """Turns NMEA lines into :class:`Fix` and :class:`Loss` events (see the module docstring).

    ``live`` inputs date fixes before the first RMC with ``wall_clock()``
    (Unix ns, default :func:`time.time_ns`); files hold them instead.
    ``date`` dates fixes no sentence dates.
    """

    def __init__(
        self,
        *,
        live: bool = False,
        date: dt.date | None = None,
        hold: int = HOLD_FIXES,
        wall_clock: Callable[[], int] | None = None,
    ) -> None:
        self.live = live
        self.wall_clock = wall_clock or time.time_ns
        self.fallback = _midnight(date) if date is not None else 0
        self.hold = hold
        self._date: int | None = None  # midnight of the current day, once a sentence said it
        self._last_tod: int | None = None
        self._open: _Epoch | None = None
        self._carry = _Epoch(None, None)  # timeless sentences waiting for the next epoch
        self._expected: frozenset[str] | None = None  # the burst two epochs agreed on
        self._last_burst: frozenset[str] | None = None
        self._held: list[tuple[Fix, int]] = []  # undated fixes of a file and their time of day
        self._gave_up = False
        self.types: Counter[str] = Counter()
        """Well-formed sentences read, by type (``{"GGA": 600, "GSV": 1800, ...}``)."""

    # -- input ---------------------------------------------------------------------------

    def push_line(
        self, line: bytes | str, arrival: int | None = None, where: str = ""
    ) -> list[Event]:
        """Decode one line (``where`` names it in messages: ``"gps.nmea line 12"``)."""
        raw = line.encode("latin-1", "replace") if isinstance(line, str) else bytes(line)
        raw = raw.strip()
        if not raw:
            return []
        at = f"{where}: " if where else ""
        if len(raw) > MAX_LINE:
            return [Loss("bad_length", f"{at}a line of {len(raw)} bytes (at most {MAX_LINE})")]
        skipped: list[Event] = []
        start = sentence_start(raw)
        if start > 0:  # binary bytes (UBX, noise) before the sentence cost only those bytes
            skipped = [Loss("garbage", f"{at}{start} byte(s) before the sentence's '$' skipped", 0)]
            raw = raw[start:]
            return skipped + self._push_text(raw, arrival, at)
        return self._push_text(raw, arrival, at)

    def _push_text(self, raw: bytes, arrival: int | None, at: str) -> list[Event]:
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            return [Loss("undecodable", f"{at}not ASCII text: {raw[:40]!r}")]
        if not text.startswith(("$", "!")):
            return [
                Loss("undecodable", f"{at}not an NMEA sentence (no leading '$'): {text[:40]!r}")
            ]
        try:
            msg = pynmea2.parse(text, check=True)
        except pynmea2.ChecksumError as err:
            why = "has no checksum" if "missing" in str(err.args[0]) else str(err.args[0])
            return [Loss("bad_checksum", f"{at}{text[:16]}...: {why}")]
        except pynmea2.SentenceTypeError as err:
            return [Loss("unsupported_type", f"{at}unknown sentence type: {err.args[0]}")]
        except (pynmea2.ParseError, ValueError, TypeError, AttributeError) as err:
            return [Loss("undecodable", f"{at}{text[:40]!r}: {err}")]
        kind = getattr(msg, "sentence_type", None)
        if kind not in USED and kind not in BURST:
            what = kind or type(msg).__name__
            return [Loss("unsupported_type", f"{at}{what} is not a GNSS receiver's sentence")]
        self.types[kind] += 1
        if kind in BURST:
            return self._join(arrival)
        try:
            values = _values(kind, msg)
        except (ValueError, TypeError, AttributeError, OverflowError) as err:
            return [Loss("undecodable", f"{at}{kind} field does not parse: {err}")]
        if "tod" in values and values["tod"] is None:  # a receiver without a fix yet
            return [Loss("bad_time", f"{at}{kind} without a UTC time: it cannot be placed")]
        return self._sentence(kind, values, arrival, at)

    def finish(self) -> list[Event]:
        """The input ended: the open epoch's fix, then the held ones."""
        events = self._close()
        if self._carry.units:
            events.append(
                Loss(
                    "incomplete",
                    f"{self._carry.units} sentence(s) after the last fix (VTG, HDT, GSV...)",
                    self._carry.units,
                )
            )
            self._carry = _Epoch(None, None)
        events.extend(self._give_up())
        return events

    # -- epochs --------------------------------------------------------------------------

    def _sentence(
        self, kind: str, values: dict[str, Any], arrival: int | None, at: str
    ) -> list[Event]:
        tod = values.pop("tod", None)
        date = values.pop("date", None)
        events: list[Event] = []
        if kind == "ZDA":  # a date and a time only: it dates this epoch and the next ones
            self._learn_date(date, tod, events)
            return events + self._join(arrival)
        if tod is not None:  # GGA, RMC: the epoch's clock
            if self._open is not None and self._open.tod != tod:
                events.extend(self._close())
            if self._open is None:
                self._open, self._carry = self._carry, _Epoch(None, None)
                self._open.tod = tod
            if date is not None:
                self._learn_date(date, tod, events)
                self._open.date = date
            if self._open.sent:  # a second GGA or RMC (GP and GN talkers): its date is used
                return [*events, Joined()]
        epoch = self._target(arrival)
        if kind == "RMC" and "GGA" in epoch.types:  # GGA's position wins (it has the quality)
            values.pop("lat", None)
            values.pop("lon", None)
        epoch.values.update(values)  # the latest speed, course, heading wins
        epoch.types.add(kind)
        epoch.units += 1
        if epoch is self._open and self._expected is not None and self._expected <= epoch.types:
            events.extend(self._send(epoch))
        return events

    def _join(self, arrival: int | None) -> list[Event]:
        """A sentence without fields for the frame: into the open epoch's fix, or the sent one."""
        if self._open is not None and self._open.sent:
            return [Joined()]
        self._target(arrival).units += 1
        return []

    def pending(self) -> int:
        """Units held in an epoch not yet sent (an input cut off now would lose them)."""
        held = sum(fix.units for fix, _ in self._held)
        open_ = self._open.units if self._open is not None and not self._open.sent else 0
        return held + open_ + self._carry.units

    def _target(self, arrival: int | None) -> _Epoch:
        """The epoch a sentence joins: the open one, or the next one once it was sent."""
        epoch = self._open if self._open is not None and not self._open.sent else self._carry
        if epoch.arrival is None:
            epoch.arrival = arrival
        return epoch

    def _close(self) -> list[Event]:
        epoch, self._open = self._open, None
        if epoch is None:
            return []
        burst = frozenset(epoch.types & _EPOCH_TYPES)
        # Two epochs in a row with the same burst: the next one goes out once it has it too.
        # One burst alone (a corrupt GGA makes a short one) is not trusted.
        self._expected = burst if burst == self._last_burst else None
        self._last_burst = burst
        return [] if epoch.sent else self._send(epoch)

    def _send(self, epoch: _Epoch) -> list[Event]:
        epoch.sent = True
        assert epoch.tod is not None
        row = np.zeros(1, GNSS_DTYPE)
        for name in (GNSS_DTYPE.names or ())[1:]:
            unknown = -1 if name in ("quality", "num_sats") else math.nan
            row[name] = epoch.values.get(name, unknown)
        fix = Fix(row, epoch.units, epoch.arrival)
        epoch.units = 0
        day = self._day_for(epoch.tod, epoch.date)
        self._last_tod = epoch.tod
        if day is None:
            self._held.append((fix, epoch.tod))
            return self._give_up() if len(self._held) >= self.hold else []
        row["t"] = day + epoch.tod
        return [fix]

    def _day_for(self, tod: int, date: int | None) -> int | None:
        """Midnight (UTC ns) of the day of a fix at ``tod``, or ``None``: hold it."""
        if date is not None:
            return date
        if self._date is not None:
            if self._last_tod is not None and tod < self._last_tod - _HALF_DAY:
                self._date += DAY  # the time of day wrapped: past midnight
            return self._date
        if self.live:  # the host's day that puts this time of day nearest its wall clock
            return (self.wall_clock() - tod + _HALF_DAY) // DAY * DAY
        return self.fallback if self._gave_up else None

    def _learn_date(self, date: int | None, tod: int | None, events: list[Event]) -> None:
        if date is None or tod is None:
            return
        self._date, self._last_tod = date, tod
        held, self._held = self._held, []
        for fix, held_tod in held:  # a fix held from before midnight belongs to the day before
            fix.row["t"] = (date - DAY if held_tod > tod + _HALF_DAY else date) + held_tod
            events.append(fix)

    def _give_up(self) -> list[Event]:
        """No dated sentence came: the held fixes go out on the fallback date."""
        if not self._held:
            return []
        events: list[Event] = [
            Loss(
                "undated",
                f"no RMC or ZDA sentence dated the first {len(self._held)} fix(es): they are "
                f"stamped with their UTC time of day on {_day_text(self.fallback)}",
                units=0,
            )
        ]
        for fix, tod in self._held:
            fix.row["t"] = self.fallback + tod
            events.append(fix)
        self._held = []
        self._gave_up = True
        return events


def sentence_start(line: bytes) -> int:
    """Where the sentence of ``line`` starts: 0, or the first ``$``/``!`` of the printable
    ASCII run that ends the line when bytes that are not (binary, a UBX message) come
    before it; 0 when there is none (the line is refused whole)."""
    if line[:1] in (b"$", b"!"):
        return 0
    k = len(line)
    while k > 0 and 0x20 <= line[k - 1] < 0x7F:
        k -= 1
    tail = line[k:]
    found = [i for i in (tail.find(b"$"), tail.find(b"!")) if i >= 0]
    return k + min(found) if found else 0


def _values(kind: str, msg: Any) -> dict[str, Any]:
    """The frame fields (and ``tod``/``date``) a sentence of type ``kind`` gives."""
    out: dict[str, Any] = {}
    if kind == "GGA":
        out["tod"] = _tod(msg.timestamp)
        out["lat"], out["lon"] = _position(msg)
        out["alt"] = _float(msg.altitude)
        out["geoid_sep"] = _float(msg.geo_sep)
        out["quality"] = int(msg.gps_qual or 0)
        out["num_sats"] = int(msg.num_sats) if msg.num_sats else -1
        out["hdop"] = _float(msg.horizontal_dil)
    elif kind == "RMC":
        out["tod"] = _tod(msg.timestamp)
        if msg.datestamp:
            out["date"] = _midnight(msg.datestamp)
        out["lat"], out["lon"] = _position(msg)
        out["speed"] = _float(msg.spd_over_grnd) * KNOT
        out["course"] = _float(msg.true_course)
    elif kind == "VTG":
        kmph, kts = _float(msg.spd_over_grnd_kmph), _float(msg.spd_over_grnd_kts)
        out["speed"] = kmph / 3.6 if math.isfinite(kmph) else kts * KNOT
        out["course"] = _float(msg.true_track)
    elif kind == "HDT":
        out["heading"] = _float(msg.heading)
    elif kind == "ZDA":
        out["tod"] = _tod(msg.timestamp)
        if msg.day and msg.month and msg.year:
            out["date"] = _midnight(dt.date(int(msg.year), int(msg.month), int(msg.day)))
    return out


def _tod(stamp: dt.time | None) -> int | None:
    if stamp is None:
        return None
    seconds = stamp.hour * 3600 + stamp.minute * 60 + stamp.second
    return seconds * 1_000_000_000 + stamp.microsecond * 1000


def _midnight(day: dt.date) -> int:
    return (day - dt.date(1970, 1, 1)).days * DAY


def _day_text(midnight: int) -> str:
    return (dt.date(1970, 1, 1) + dt.timedelta(days=midnight // DAY)).isoformat()


def _float(value: Any) -> float:
    if value is None or value == "":
        return math.nan
    return float(value)


def _position(msg: Any) -> tuple[float, float]:
    """Signed degrees, NaN when the receiver sent empty fields (no fix)."""
    if not msg.lat or not msg.lon:
        return math.nan, math.nan
    return float(msg.latitude), float(msg.longitude)
