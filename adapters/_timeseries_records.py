"""Mappings to rows: the schema of UDP and iterable time series, learned from a majority.

A *record* is one mapping (``{"t": ..., "ax": ...}``); a *unit* is what the
source's ledger counts: a datagram for UDP (holding one or more records), a
record for an iterable. :class:`RecordPacker` turns units into rows of one
structured dtype and keeps the ledger exact: every row it returns carries a
*weight*, the number of units it settles (1 on the last surviving record of a
unit, 0 on the others), so a frame made from rows emits the sum of their
weights, and a unit none of whose records survive is counted lost with the
reason of its last failure.

Theory of the schema:

* ``fields=`` (names, all float64, or a dtype) declares it; it never changes.
* Otherwise the first :data:`LEARN_FROM` records (or those that arrived within
  :data:`LEARN_WINDOW_NS` of the first, for a slow live sender) are held and
  the schema is the field set most of them share (ties: the larger set, then
  the first seen), each field typed by the kind most of its values are (a field
  that is an int in one and a float in another is a float; a string, list or
  map among numbers does not vote). One odd first record costs itself, never
  every later good sample.
* A value that does not fit its field's type costs only that value: a float
  field gets NaN (``bad_value``, a warning: the sample is kept); a field of
  another type cannot, and the sample is lost (``bad_record``).
* A record with the schema's fields is packed; fields beyond them are left
  out and counted (``extra_fields``, a warning: the record is kept).
* A record lacking a schema field is held; once :data:`REBASE_AFTER` records
  in a row share the same other fields, the schema is learned again from them
  (``schema_changed``) and the run is packed; a held run that ends before that
  is dropped and counted (``schema_mismatch``, naming the field).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgpack
import msgspec
import numpy as np

from adapters._timeparse import INT64, decimal_ns, unit_scale
from fusion import Source

REBASE_AFTER = 8
"""Consecutive samples (or records) that must agree before a time jump (or a new
set of fields) is adopted."""
LEARN_FROM = 8
"""Records the first schema is learned from (a majority of them decides)."""
LEARN_WINDOW_NS = 500_000_000
"""A live stream decides its schema this long after its first record, however few came."""

Rows = tuple[np.ndarray, np.ndarray]
"""Rows of the schema's dtype and their int64 weights (units settled per row)."""


@dataclass
class _Held:
    record: Mapping[str, Any]
    weight: int
    origin: int  # which pack() call (unit) it came from
    arrival: int | None = None  # when its unit arrived (the stamp when time_field is None)


class Batch(NamedTuple):
    """Rows from a producer, their arrival time (live) and the units each row settles."""

    rows: np.ndarray
    arrival: int | None
    weights: np.ndarray
    arrivals: list[int] | None = None
    """Each row's own arrival (a burst's datagrams in one array; ``block`` 1 only)."""


_JSON = msgspec.json.Decoder()
"""Decodes a one-record JSON datagram about 7x faster than ``json.loads``; equal
results wherever it accepts the input, and :func:`json.loads` decides the rest."""


def decode_datagram(payload: bytes, fmt: str) -> list[Any]:
    """The records of one datagram: JSON lines or msgpack (a map or an array of maps)."""
    if fmt == "jsonl":
        if b"\n" not in payload.rstrip():  # one record, the common datagram: C speed
            try:
                return [_JSON.decode(payload)]
            except (msgspec.DecodeError, RecursionError):
                pass  # NaN, 1e400, a lone surrogate, bad input: json's rules and message
        try:
            return [json.loads(line) for line in payload.splitlines() if line.strip()]
        except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError, a 5,000-digit int
            raise ValueError(f"not JSON lines: {err}") from err
        except RecursionError:
            raise ValueError("not JSON lines: nested too deep") from None
    try:
        decoded = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except Exception as err:  # msgpack raises several unrelated types for bad input
        raise ValueError(f"not msgpack: {err}") from err
    return decoded if isinstance(decoded, list) else [decoded]


class RecordPacker:
    """Units of mappings in, weighted rows of one dtype out (see the module docstring)."""

    def __init__(
        self,
        time_field: str | None,
        time_unit: str,
        fields: Sequence[str] | np.dtype[Any] | None,
    ) -> None:
        self.time_field = time_field
        self.scale = unit_scale(time_unit)
        self.dtype: np.dtype[Any] | None = None
        self.fixed = fields is not None
        """``fields=`` fixed the schema: it is never learned again."""
        self._learning: list[_Held] = []  # the first records, until the schema is decided
        self._learning_since: int | None = None
        self._held: list[_Held] = []  # records lacking a schema field
        self._held_keys: frozenset[Any] = frozenset()
        self._held_missing: list[str] = []
        self._origin = 0
        self._keys: frozenset[Any] = frozenset()  # the fast path's field set ...
        self._keys_for: np.dtype[Any] | None = None  # ... for this dtype
        if isinstance(fields, np.dtype):
            self.dtype = np.dtype([("t", "<i8"), *((n, fields[n]) for n in fields.names or ())])
        elif fields is not None:
            self.dtype = np.dtype([("t", "<i8"), *((n, "<f8") for n in fields)])

    # -- the unit in, rows out ---------------------------------------------------------

    def pack(
        self,
        records: list[Any],
        source: Source,
        arrival: int | None = None,
        *,
        what: str = "record",
    ) -> Rows:
        """The rows ready after one unit's ``records`` (maybe none yet: held to learn).

        ``what`` names the unit in messages ("datagram from 10.0.0.5:5000").
        """
        if len(records) == 1 and self.dtype is not None and not self._held:
            fast = self._pack_one(records[0])
            if fast is not None:
                self._origin += 1
                return fast
        self._origin += 1
        failures: list[tuple[str, str]] = []
        entries: list[_Held] = []
        for record in records:
            if isinstance(record, np.void) and record.dtype.names:
                record = {n: record[n] for n in record.dtype.names}
            if not isinstance(record, Mapping):
                failures.append(
                    ("bad_record", f"{what}: expected a mapping, got {type(record).__name__}")
                )
                continue
            entries.append(_Held(record, 0, self._origin, arrival))
        if entries:
            entries[-1].weight = 1
            for reason, message in failures:
                source.count_error(reason, message, units=0)
        elif failures:
            *first, last = failures
            for reason, message in first:
                source.count_error(reason, message, units=0)
            source.count_error(*last)
            return self._empty()
        else:
            source.count_error("bad_record", f"{what}: holds no record")
            return self._empty()
        if self.dtype is None:
            self._learning += entries
            if self._learning_since is None:
                self._learning_since = arrival
            waited = (
                arrival is not None
                and self._learning_since is not None
                and arrival - self._learning_since >= LEARN_WINDOW_NS
            )
            if len(self._learning) < LEARN_FROM and not waited:
                return self._empty()
            entries, self._learning = self._learning, []
            self.dtype = _majority_dtype([e.record for e in entries], self.time_field)
        return self._rows(entries, source, arrival)

    def _pack_one(self, record: Any) -> Rows | None:
        """The steady state of a live stream, without the general path's bookkeeping:
        one plain dict with exactly the schema's fields and values that fit. ``None``
        for anything else (the general path then decides, counts and explains)."""
        row = self._row_one(record)
        if row is None:
            return None
        try:
            return np.array([row], self.dtype), np.ones(1, np.int64)
        except (TypeError, ValueError, OverflowError):
            return None

    def row_of(self, records: list[Any]) -> tuple[Any, ...] | None:
        """The row of a unit in the steady state (one plain dict, exactly the schema's
        fields, a good stamp) for the caller to pack with others in one array; ``None``
        for anything else: then :meth:`pack` the unit. A row whose values then do not
        fit the dtype must go through :meth:`pack` too (it counts and explains)."""
        if len(records) != 1 or self.dtype is None or self._held:
            return None
        row = self._row_one(records[0])
        if row is not None:
            self._origin += 1
        return row

    def _row_one(self, record: Any) -> tuple[Any, ...] | None:
        dtype = self.dtype
        assert dtype is not None
        if type(record) is not dict or record.keys() != self._schema_keys(dtype):
            return None
        if self.time_field is None:
            return None
        try:
            t = to_ns(record[self.time_field], self.scale)
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        return (t, *[record[n] for n in (dtype.names or ())[1:]])

    def _schema_keys(self, dtype: np.dtype[Any]) -> frozenset[Any]:
        if self._keys_for is not dtype:
            names = (dtype.names or ())[1:]
            self._keys = frozenset((*names, self.time_field))
            self._keys_for = dtype
        return self._keys

    @property
    def learning_since(self) -> int | None:
        """Arrival time of the first record held to learn the schema (``None``: not learning).

        A live shell waits for the next unit at most until this plus
        :data:`LEARN_WINDOW_NS`, then calls :meth:`decide`.
        """
        return self._learning_since if self._learning else None

    def decide(self, source: Source, arrival: int | None = None) -> Rows:
        """Learn the schema from the records held so far and pack them (none: nothing)."""
        if not self._learning:
            return self._empty()
        entries, self._learning = self._learning, []
        self.dtype = _majority_dtype([e.record for e in entries], self.time_field)
        return self._rows(entries, source, arrival)

    def finish(self, source: Source, arrival: int | None = None) -> Rows:
        """The input ended: rows still held to learn the schema, and held runs counted."""
        rows = self.decide(source, arrival)
        self._drop_held(source)
        return rows

    def _empty(self) -> Rows:
        return np.empty(0, self.dtype or [("t", "<i8")]), np.empty(0, np.int64)

    # -- admission and packing ---------------------------------------------------------

    def _rows(self, entries: list[_Held], source: Source, arrival: int | None) -> Rows:
        assert self.dtype is not None
        rows: list[tuple[Any, ...]] = []
        weights: list[int] = []
        origins: list[int] = []
        for entry in entries:
            before = self.dtype
            admitted = self._admit(entry, source)
            if self.dtype is not before and rows:  # a new schema: the old rows cannot join
                source.count_error(
                    "schema_mismatch",
                    f"{len(rows)} record(s) of the old schema in the unit",
                    units=sum(weights),
                )
                rows, weights, origins = [], [], []
            for held in admitted:
                try:
                    rows.append(self._row(held.record, held.arrival))
                except (KeyError, TypeError, ValueError, OverflowError) as err:
                    self._lose(
                        held,
                        "bad_record",
                        f"record {held.record!r:.120}: {err!r}",
                        source,
                        weights,
                        origins,
                    )
                    continue
                weights.append(held.weight)
                origins.append(held.origin)
        if not rows:
            return self._empty()
        try:
            return np.array(rows, self.dtype), np.array(weights, np.int64)
        except (TypeError, ValueError, OverflowError):  # one bad value spoils the batch
            good: list[np.ndarray] = []
            kept: list[int] = []
            kept_origins: list[int] = []
            for row, weight, origin in zip(rows, weights, origins, strict=True):
                try:
                    good.append(np.array([row], self.dtype))
                except (TypeError, ValueError, OverflowError) as err:
                    repaired = self._without_bad_values(row, source)
                    if repaired is not None:
                        good.append(repaired)
                        kept.append(weight)
                        kept_origins.append(origin)
                        continue
                    lost = _Held({}, weight, origin)
                    self._lose(
                        lost,
                        "bad_record",
                        f"record {row!r:.120}: {err}",
                        source,
                        kept,
                        kept_origins,
                    )
                    continue
                kept.append(weight)
                kept_origins.append(origin)
            if not good:
                return self._empty()
            return np.concatenate(good), np.array(kept, np.int64)

    def _without_bad_values(self, row: tuple[Any, ...], source: Source) -> np.ndarray | None:
        """``row`` with each float field whose value does not fit set to NaN (each counted
        ``bad_value``, a warning: the sample is kept); ``None`` when a field of another
        type does not fit (the sample is then lost)."""
        dtype = self.dtype
        assert dtype is not None
        out = np.zeros(1, dtype)
        bad = []
        for name, value in zip(dtype.names or (), row, strict=True):
            try:
                # converted as the whole row is (a one-field record), not assigned to the
                # column, which would spread a one-item list ["0"] over it as 0.0
                out[name] = np.array([(value,)], [(name, dtype[name])])[name]
            except (TypeError, ValueError, OverflowError):
                if dtype[name].base.kind != "f":
                    return None
                out[name] = np.nan
                bad.append((name, value))
        for name, value in bad:
            source.count_error(
                "bad_value",
                f"sample at t={int(out['t'][0])}: {name} = {value!r:.60} is not a number; "
                "NaN in its place",
                units=0,
            )
        return out

    def _row(self, record: Mapping[str, Any], arrival: int | None) -> tuple[Any, ...]:
        assert self.dtype is not None
        if self.time_field is None:
            if arrival is None:
                raise KeyError("no time field and no arrival time")
            t = arrival
        else:
            t = to_ns(record[self.time_field], self.scale)
        return (t, *(record[n] for n in (self.dtype.names or ())[1:]))

    @staticmethod
    def _lose(
        held: _Held,
        reason: str,
        message: str,
        source: Source,
        weights: list[int],
        origins: list[int],
    ) -> None:
        """Count a record lost; its unit's weight moves to a kept record of the same unit."""
        if held.weight and origins and origins[-1] == held.origin:
            weights[-1] += held.weight
            source.count_error(reason, message, units=0)
        else:
            source.count_error(reason, message, units=held.weight)

    def _admit(self, entry: _Held, source: Source) -> list[_Held]:
        """The records to pack now: ``entry``, nothing (held), or a held run."""
        assert self.dtype is not None
        record = entry.record
        names = (self.dtype.names or ())[1:]
        keys = frozenset(k for k in record if k != self.time_field)
        missing = [n for n in names if n not in keys]
        if not missing:
            self._drop_held(source)
            if len(keys) > len(names):
                extra = sorted(map(str, keys - set(names)))
                source.count_error(
                    "extra_fields",
                    f"fields {', '.join(extra)} are not in the schema; left out",
                    units=0,
                )
            return [entry]
        if self._held and self._held_keys != keys:
            self._drop_held(source)
        self._held.append(entry)
        self._held_keys = keys
        self._held_missing = missing
        if self.fixed or len(self._held) < REBASE_AFTER:
            return []
        inferred = _majority_dtype([h.record for h in self._held], self.time_field)
        if len(inferred.names or ()) < 2:
            return []
        held, self._held = self._held, []
        source.count_error(
            "schema_changed",
            f"{len(held)} records in a row lack {', '.join(missing)}: the schema is now "
            f"{', '.join((inferred.names or ())[1:])}",
            units=0,
        )
        self.dtype = inferred
        return held

    def _drop_held(self, source: Source) -> None:
        if not self._held:
            return
        n = len(self._held)
        source.errors["schema_mismatch"] += n - 1
        source.count_error(
            "schema_mismatch",
            f"{n} record(s) lack field(s) {', '.join(self._held_missing)} of the schema; dropped",
            units=sum(h.weight for h in self._held),
        )
        self._held = []


def _majority_dtype(records: list[Mapping[str, Any]], time_field: str | None) -> np.dtype[Any]:
    """The dtype of the field set most ``records`` share, typed from all of them."""
    keysets = [tuple(k for k in r if k != time_field) for r in records]
    votes = Counter(frozenset(k) for k in keysets)
    order: dict[frozenset[Any], tuple[Any, ...]] = {}
    for keys in keysets:
        order.setdefault(frozenset(keys), keys)
    best = max(votes, key=lambda ks: (votes[ks], len(ks), -list(order).index(ks)))
    voters = [r for r, ks in zip(records, keysets, strict=True) if frozenset(ks) == best]
    descr: list[tuple[Any, ...]] = [("t", "<i8")]
    for key in order[best]:
        field = _field_type([r[key] for r in voters])
        if field is not None:
            descr.append((str(key), *field))
    return np.dtype(descr)


def _field_type(values: list[Any]) -> tuple[Any, ...] | None:
    """numpy type (and shape) of the kind most of ``values`` are (a number, a bool, a
    vector of n numbers, a numpy value); ``None``: none of them is one (text, maps).

    Values of another kind do not vote: one bad sample among the first cannot take
    a field from every later sample; it costs its own value when packed."""
    kinds = [kind for kind in map(_value_kind, values) if kind is not None]
    if not kinds:
        return None
    votes = Counter(kinds)
    best = max(votes, key=lambda k: (votes[k], -kinds.index(k)))
    if best == "number":
        integral = all(type(v) is int for v in values if _value_kind(v) == "number")
        return ("<i8",) if integral else ("<f8",)
    if best == "bool":
        return ("?",)
    if best[0] == "vector":
        return ("<f8", (best[1],))
    return (best[1], best[2])


def _value_kind(value: Any) -> Any:
    """What a value of a record is, for the schema's vote (``None``: nothing numeric)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return ("vector", len(value))
        return None
    if isinstance(value, (np.generic, np.ndarray)):
        return ("numpy", value.dtype, np.shape(value))
    return None


def to_ns(value: Any, scale: int) -> int:
    """A stamp as int64 ns; ``ValueError`` for anything else (text, inf, beyond int64)."""
    if isinstance(value, bool):
        raise ValueError(f"time {value!r} is not a number")
    if isinstance(value, str):
        from decimal import Decimal

        try:
            return decimal_ns(Decimal(value), scale, value)
        except ArithmeticError:
            raise ValueError(f"time {value!r:.40} is not a number") from None
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"time {value} is not finite")
        ns = round(float(value) * scale)
    else:
        ns = int(value) * scale
    if not INT64[0] <= ns <= INT64[1]:
        raise ValueError(f"time {value!r:.40} is beyond int64 nanoseconds")
    return ns
