"""CAN frames (python-can messages) -> frames of sensors and counted losses; no I/O.

Theory of operation. A bus carries frames of many ids. The decoder names a
sensor for each (all of kind ``can``):

* the **raw** sensor, the source's name: every valid frame, losslessly, as a
  one-row :data:`RAW_DTYPE` array (id, flags, length, 64 payload bytes,
  channel) unless it belongs to a per-id sensor or ``raw`` is off;
* a **per-id** sensor ``<name>.0x1A0`` for each id in ``ids``: that id's raw frames;
* a **message** sensor ``<name>.<Message>`` for each message of the database:
  the signals of that message's frames, one row of ``t`` plus one column per
  signal (:mod:`adapters.can._signals`), scaled as cantools scales them;
  choices, units and scaling are in the sensor's ``meta["signals"]``.

A frame is received once, on the ledger of the sensor of its first event
(:attr:`Event.units` or :attr:`Loss.units` 1): the raw sensor (or its per-id
sensor, or, with ``raw`` off, its message sensor); its decoded frame is a
second frame of the same unit (``units=0``). Losses, each
costing that frame only, by reason: ``error_frame`` (an error frame on the
bus or in the log), ``bad_length`` (more than 8 bytes in a classic frame, more
than 64 in an FD frame, a length code that disagrees with the bytes, or fewer
bytes than the database's message has), ``unknown_id`` (a database is given,
the id is not in it and ``unknown = "count"``).

Channels: an integer channel (ASC, BLF, TRC) is stored as it is; a named one
(``can0`` of a candump log or a SocketCAN bus) is numbered from 0 in order of
first appearance, and the first frame with each number carries
``meta["channel_name"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from adapters._side_files import open_regular
from adapters.can._signals import MAX_PAYLOAD, MessagePlan
from fusion.errors import ConfigError

RAW_DTYPE = np.dtype(
    [
        ("t", np.int64),
        ("id", np.uint32),
        ("extended", np.bool_),
        ("remote", np.bool_),
        ("fd", np.bool_),
        ("brs", np.bool_),
        ("esi", np.bool_),
        ("rx", np.bool_),
        ("dlc", np.uint8),
        ("channel", np.int32),
        ("data", np.uint8, (MAX_PAYLOAD,)),
    ]
)
"""A raw CAN frame: ``t`` the frame's own stamp (ns), the identifier, the extended,
remote, FD, bit-rate-switch, error-state and received (not sent) flags, ``dlc``
the payload length in bytes (python-can's ``dlc``), the channel and the payload
in the first ``dlc`` bytes of ``data`` (zero after them)."""

Unknown = Literal["raw", "count"]


@dataclass(frozen=True)
class Event:
    """A frame to make: its sensor, one-row payload, stamps and ledger units."""

    sensor: str
    row: np.ndarray
    t_sensor: int
    t_arrival: int | None
    units: int
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class Loss:
    """A frame lost, by reason, on the ledger of ``sensor``."""

    sensor: str
    reason: str
    message: str
    units: int = 1


@dataclass(frozen=True)
class Block:
    """The rows of one sensor from a batch of frames (:meth:`CanDecoder.push_blocks`):
    ``rows`` in frame order, ``arrivals`` their host arrival times (``None`` for a log),
    ``units_per_row`` the ledger units each row carries (0: a decoded copy of a frame
    counted on the raw sensor), ``meta`` the channel names first seen in these rows
    (``{"channel_names": {"0": "can0"}}``) or ``None``."""

    sensor: str
    rows: np.ndarray
    arrivals: np.ndarray | None
    units_per_row: int
    meta: dict[str, Any] | None = None


@dataclass
class _Tables:
    channels: dict[str, int] = field(default_factory=dict)


@dataclass
class _Columns:
    raw: np.ndarray
    valid: np.ndarray
    losses: dict[int, Loss]
    new_channels: dict[int, str]
    named_channels: bool


def _take(arrivals: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if arrivals is None else arrivals[rows]


def _names(raw: np.ndarray, rows: np.ndarray, names: dict[int, str]) -> dict[str, Any] | None:
    """The channel names first seen in ``rows`` (numbers as text keys), or ``None``."""
    if not names:
        return None
    present = set(np.unique(raw["channel"][rows]).tolist())
    found = {str(k): v for k, v in names.items() if k in present}
    return {"channel_names": found} if found else None


DATABASE_LIMIT = 256 << 20


def load_database(path: str | Path) -> Any:
    """The cantools database at ``path`` (DBC, KCD, ARXML, SYM, CDD), or a ConfigError
    naming the file and what cantools said."""
    import cantools

    # A regular file of at most 256 MiB (ARXML runs to tens of MB): a FIFO or /dev/zero is
    # refused, not handed to cantools.
    open_regular(path, "CAN database", limit=DATABASE_LIMIT, error=ConfigError).close()
    try:
        return cantools.database.load_file(str(path), strict=False)
    except FileNotFoundError as err:
        raise ConfigError(f"CAN database {str(path)!r} does not exist") from err
    except Exception as err:  # cantools raises many parser errors
        raise ConfigError(f"cannot read CAN database {str(path)!r}: {err}") from err


def id_sensor(name: str, can_id: int) -> str:
    """The per-id sensor name: ``can.0x1A0``."""
    return f"{name}.0x{can_id:X}"


class CanDecoder:
    """Sans-I/O: python-can messages in, :class:`Event` and :class:`Loss` out (in order).

    ``database`` a cantools database (or a path to one); ``ids`` the ids that
    get a sensor of their own; ``unknown`` what happens to ids the database
    does not know (``"raw"``: kept on the raw sensor, ``"count"``: counted as
    ``unknown_id``); ``raw=False`` keeps no raw frame of a database message.
    """

    def __init__(
        self,
        name: str = "can",
        *,
        database: Any = None,
        ids: Sequence[int] = (),
        unknown: Unknown = "raw",
        raw: bool = True,
    ) -> None:
        if unknown not in ("raw", "count"):
            raise ConfigError(f"unknown must be 'raw' or 'count', got {unknown!r}")
        if isinstance(database, (str, Path)):
            database = load_database(database)
        self.name = name
        self.database = database
        self.unknown: Unknown = unknown
        self.raw = raw
        self.ids = {int(i): id_sensor(name, int(i)) for i in ids}
        self.plans: dict[tuple[int, bool], MessagePlan] = {}
        self.message_sensors: dict[tuple[int, bool], str] = {}
        if database is not None:
            for message in database.messages:
                key = (int(message.frame_id), bool(message.is_extended_frame))
                self.plans[key] = MessagePlan(message)
                self.message_sensors[key] = f"{name}.{message.name}"
        self._tables = _Tables()
        self.frames_seen = 0

    def sensors(self) -> list[tuple[str, dict[str, Any]]]:
        """Every sensor this decoder may produce, with its spec meta."""
        out: list[tuple[str, dict[str, Any]]] = [
            (self.name, {"fields": list(RAW_DTYPE.names or ()), "format": "can_raw"})
        ]
        out += [(s, {"can_id": i, "format": "can_raw"}) for i, s in self.ids.items()]
        for key, sensor in self.message_sensors.items():
            plan = self.plans[key]
            out.append((sensor, {"can_id": key[0], "format": "can_signals", **signal_meta(plan)}))
        return out

    def push(
        self, messages: Sequence[Any], arrivals: Sequence[int] | None = None, where: str = ""
    ) -> list[Event | Loss]:
        """Decode ``messages`` (python-can ``Message``) received at ``arrivals`` (host ns;
        ``None`` for a log). ``where`` names the input in loss messages."""
        cols = self._columns(messages, where)
        raw, losses, new_channels = cols.raw, cols.losses, cols.new_channels
        decoded = self._decode(raw, cols.valid)
        events: list[Event | Loss] = []
        named = dict(new_channels)  # channel number -> name, for its first frame
        t_list = raw["t"].tolist()
        id_list = raw["id"].tolist()
        ext_list = raw["extended"].tolist()
        channel_list = raw["channel"].tolist()
        for i in range(len(messages)):
            loss = losses.get(i)
            if loss is not None:
                events.append(loss)
                continue
            arrival = None if arrivals is None else int(arrivals[i])
            t = t_list[i]
            can_id = id_list[i]
            key = (can_id, ext_list[i])
            meta = None
            channel = channel_list[i]
            if channel in named and isinstance(messages[i].channel, str):
                meta = {"channel_name": named.pop(channel)}
            own = self.ids.get(can_id)
            message_sensor = self.message_sensors.get(key)
            signals = decoded.get(i)
            if (
                message_sensor is None
                and self.database is not None
                and own is None
                and self.unknown == "count"
            ):
                events.append(
                    Loss(
                        self.name,
                        "unknown_id",
                        f"{where}id 0x{can_id:X} is not in the database",
                    )
                )
                continue
            keep_raw = self.raw or message_sensor is None or isinstance(signals, str)
            raw_units = 1
            if keep_raw:
                events.append(Event(own or self.name, raw[i : i + 1], t, arrival, 1, meta))
                raw_units = 0
            if message_sensor is None:
                continue
            if isinstance(signals, str):  # too short for its message
                events.append(
                    Loss(
                        message_sensor,
                        "bad_length",
                        f"{where}{signals} at {t / 1e9:.6f} s",
                        units=0 if keep_raw else 1,
                    )
                )
                continue
            assert signals is not None
            events.append(Event(message_sensor, signals, t, arrival, raw_units, meta))
        return events

    def push_blocks(
        self, messages: Sequence[Any], arrivals: Sequence[int] | None = None, where: str = ""
    ) -> list[Block | Loss]:
        """As :meth:`push`, but the rows of each sensor come as one :class:`Block` (in
        frame order within it) and the losses one by one, with no per-frame Python work
        beyond reading python-can's attributes. The same rows and the same ledger as
        :meth:`push`: a block of ``k`` rows carries ``k * units_per_row`` units."""
        cols = self._columns(messages, where)
        raw, valid = cols.raw, cols.valid
        out: list[Block | Loss] = [cols.losses[i] for i in sorted(cols.losses)]
        arrival = None if arrivals is None else np.asarray(arrivals, np.int64)
        ids = raw["id"]
        names: dict[int, str] = {}
        if cols.new_channels and cols.named_channels:
            names = dict(cols.new_channels)
        # where each valid frame goes: its message (database), its own id, or the raw sensor
        message_of = np.full(len(raw), -1, np.int64)
        keys = list(self.plans)
        if keys:
            packed = ids.astype(np.uint64) | (raw["extended"].astype(np.uint64) << np.uint64(32))
            for k, (can_id, extended) in enumerate(keys):
                want = np.uint64(can_id) | (np.uint64(int(extended)) << np.uint64(32))
                message_of[(packed == want) & valid] = k
        in_database = message_of >= 0
        short = np.zeros(len(raw), bool)
        for k, key in enumerate(keys):
            rows = np.flatnonzero(message_of == k)
            if not len(rows):
                continue
            plan, sensor = self.plans[key], self.message_sensors[key]
            too_short = raw["dlc"][rows] < plan.length
            for i in rows[too_short].tolist():
                short[i] = True
                out.append(
                    Loss(
                        sensor,
                        "bad_length",
                        f"{where}{plan.message.name} (id 0x{key[0]:X}) needs {plan.length} "
                        f"bytes, the frame has {int(raw['dlc'][i])} at {raw['t'][i] / 1e9:.6f} s",
                        units=0,
                    )
                )
            rows = rows[~too_short]
            if len(rows):
                table = self._table(plan, raw, rows)
                units = 0 if self.raw else 1
                out.append(Block(sensor, table, _take(arrival, rows), units, None))
        own = np.zeros(len(raw), bool)
        for can_id, sensor in self.ids.items():
            rows = np.flatnonzero((ids == can_id) & valid)
            own[rows] = True
            if len(rows):
                out.append(
                    Block(sensor, raw[rows], _take(arrival, rows), 1, _names(raw, rows, names))
                )
        unknown = valid & ~in_database & ~own
        if self.database is not None and self.unknown == "count":
            for i in np.flatnonzero(unknown).tolist():
                out.append(
                    Loss(
                        self.name,
                        "unknown_id",
                        f"{where}id 0x{int(ids[i]):X} is not in the database",
                    )
                )
            unknown[:] = False
        keep = unknown | (valid & in_database & ~own & (short | self.raw))
        rows = np.flatnonzero(keep)
        if len(rows):
            out.append(
                Block(self.name, raw[rows], _take(arrival, rows), 1, _names(raw, rows, names))
            )
        return out

    def _columns(self, messages: Sequence[Any], where: str) -> _Columns:
        """python-can's attributes of ``messages`` as one :data:`RAW_DTYPE` array, read
        attribute by attribute (one list comprehension each, no per-frame numpy work),
        and the frames lost (error frames, bad lengths) by index."""
        n = len(messages)
        self.frames_seen += n
        raw = np.zeros(n, RAW_DTYPE)
        losses: dict[int, Loss] = {}
        new_channels: dict[int, str] = {}
        if not n:
            return _Columns(raw, np.ones(0, bool), losses, new_channels, False)
        stamps = np.array([m.timestamp for m in messages], np.float64)
        raw["t"] = np.rint(stamps * 1e9).astype(np.int64)
        error = np.array([m.is_error_frame for m in messages], bool)
        fd = np.array([m.is_fd for m in messages], bool)
        remote = np.array([m.is_remote_frame for m in messages], bool)
        dlc = np.array([m.dlc for m in messages], np.int64)
        payloads = [m.data or b"" for m in messages]
        size = np.fromiter(map(len, payloads), np.int64, n)
        bad = np.where(
            fd,
            (size > MAX_PAYLOAD) | (dlc != size),
            (size > 8) | np.where(remote, dlc > 8, (dlc != size) & ~((size == 8) & (dlc <= 15))),
        )
        bad &= ~error
        for i in np.flatnonzero(error).tolist():
            m = messages[i]
            losses[i] = Loss(self.name, "error_frame", f"{where}error frame at {m.timestamp:.6f} s")
        for i in np.flatnonzero(bad).tolist():
            m = messages[i]
            problem = _length_problem(m, int(size[i]), int(dlc[i]))
            losses[i] = Loss(
                self.name,
                "bad_length",
                f"{where}id 0x{m.arbitration_id:X} at {m.timestamp:.6f} s: {problem}",
            )
        valid = ~(error | bad)
        raw["id"] = [m.arbitration_id for m in messages]
        raw["extended"] = [m.is_extended_id for m in messages]
        raw["remote"] = remote
        raw["fd"] = fd
        raw["brs"] = [m.bitrate_switch for m in messages]
        raw["esi"] = [m.error_state_indicator for m in messages]
        raw["rx"] = [m.is_rx for m in messages]
        raw["dlc"] = np.where(remote, dlc, size).clip(0, 255)
        channels = [m.channel for m in messages]
        named = False
        if any(not isinstance(c, (int, np.integer)) for c in dict.fromkeys(channels)):
            table = {c: self._channel(c, new_channels) for c in dict.fromkeys(channels)}
            named = any(isinstance(c, str) for c in table)
            raw["channel"] = [table[c] for c in channels]
        else:
            raw["channel"] = channels
        raw["channel"][~valid] = 0
        # payloads: each valid frame's bytes scattered into its row
        size[~valid] = 0
        if (~valid).any():
            payloads = [p if ok else b"" for p, ok in zip(payloads, valid.tolist(), strict=True)]
        flat = np.frombuffer(b"".join(map(bytes, payloads)), np.uint8)
        if len(flat):
            if (size == size[0]).all():
                raw["data"][:, : size[0]] = flat.reshape(n, int(size[0]))
            else:
                starts = np.cumsum(size) - size
                row = np.repeat(np.arange(n), size)
                col = np.arange(len(flat)) - np.repeat(starts, size)
                raw["data"][row, col] = flat
        raw["dlc"][~valid] = 0
        return _Columns(raw, valid, losses, new_channels, named)

    def _channel(self, channel: Any, new: dict[int, str]) -> int:
        if channel is None:
            return 0
        if isinstance(channel, (int, np.integer)):
            return int(channel)
        text = str(channel)
        found = self._tables.channels.get(text)
        if found is None:
            found = self._tables.channels[text] = len(self._tables.channels)
            new[found] = text
        return found

    def _decode(self, raw: np.ndarray, valid: np.ndarray) -> dict[int, np.ndarray | str]:
        """Per row index of a database message: its one-row signals, or why it is too short."""
        out: dict[int, np.ndarray | str] = {}
        if not self.plans:
            return out
        keys = raw["id"].astype(np.uint64) | (raw["extended"].astype(np.uint64) << np.uint64(32))
        for (can_id, extended), plan in self.plans.items():
            want = np.uint64(can_id) | (np.uint64(int(extended)) << np.uint64(32))
            rows = np.flatnonzero((keys == want) & valid)
            if not len(rows):
                continue
            short = raw["dlc"][rows] < plan.length
            for i in rows[short]:
                out[int(i)] = (
                    f"{plan.message.name} (id 0x{can_id:X}) needs {plan.length} bytes, "
                    f"the frame has {int(raw['dlc'][i])}"
                )
            rows = rows[~short]
            if not len(rows):
                continue
            table = self._table(plan, raw, rows)
            for k, i in enumerate(rows.tolist()):
                out[i] = table[k : k + 1]
        return out

    @staticmethod
    def _table(plan: MessagePlan, raw: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``t`` and the decoded signals of the frames at ``rows`` of ``raw``."""
        signals = plan.decode(raw["data"][rows])
        table = np.zeros(len(rows), [("t", np.int64), *_fields(signals.dtype)])
        table["t"] = raw["t"][rows]
        for name in signals.dtype.names or ():
            table[name] = signals[name]
        return table


def _fields(dtype: np.dtype[Any]) -> list[tuple[str, Any]]:
    return [(name, dtype.fields[name][0]) for name in dtype.names or ()]  # type: ignore[index]


def _length_problem(m: Any, size: int, dlc: int) -> str:
    if m.is_fd:
        if size > MAX_PAYLOAD:
            return f"{size} bytes, more than an FD frame's 64"
        if dlc != size:
            return f"length code {dlc} but {size} bytes"
        return ""
    if size > 8:
        return f"{size} bytes in a classic (not FD) frame"
    if m.is_remote_frame:
        return "" if dlc <= 8 else f"length code {dlc} in a remote frame"
    if dlc != size and not (size == 8 and dlc <= 15):
        return f"length code {dlc} but {size} bytes"
    return ""


def signal_meta(plan: MessagePlan) -> dict[str, Any]:
    """Per signal: unit, scale, offset, limits and choices (``{"value": "name"}``)."""
    signals: dict[str, Any] = {}
    for s in plan.message.signals:
        entry: dict[str, Any] = {"scale": s.scale, "offset": s.offset}
        if s.unit:
            entry["unit"] = s.unit
        if s.minimum is not None:
            entry["minimum"] = s.minimum
        if s.maximum is not None:
            entry["maximum"] = s.maximum
        if s.choices:
            entry["choices"] = {str(int(k)): str(v) for k, v in s.choices.items()}
        if s.multiplexer_signal is not None:
            entry["multiplexer"] = s.multiplexer_signal
            entry["multiplexer_ids"] = list(s.multiplexer_ids or ())
        signals[s.name] = entry
    return {
        "message": plan.message.name,
        "length": plan.length,
        "signals": signals,
    }


def choice_name(meta: Mapping[str, Any], signal: str, value: float) -> str | None:
    """The choice name of ``value`` of ``signal`` in a message sensor's meta, if any."""
    choices = meta.get("signals", {}).get(signal, {}).get("choices")
    if not choices or value != value:  # NaN: absent
        return None
    found = choices.get(str(int(value)))
    return None if found is None else str(found)
