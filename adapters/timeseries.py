"""``TimeSeriesSource``: IMU, GNSS, CAN-style samples as structured arrays.

A time-series frame's ``data`` is a 1-D numpy structured array of ``block``
rows (one by default). Its first field is ``t`` (int64 ns, the sample's own
stamp); the others are the sample's values, float64 unless told otherwise
(GNSS latitudes need the precision). ``frame.t_sensor`` is the first row's
``t``. Samples whose stamp goes backwards are dropped and counted
(``time_backwards``); unparsable rows are dropped and counted (``bad_row``,
``bad_record``) with the line or datagram that failed. One bad item costs
that item: the source goes on with the next row, record or datagram.

Live stamps are checked against the source's recent ones
(``max_time_jump``, default 60 s for UDP): a sample further ahead than that
is held, not adopted as the new baseline, and dropped as ``time_jump``
unless :data:`REBASE_AFTER` consecutive samples agree with it (a sensor that
really restarted its clock or paused); then they are all delivered and the
baseline moves. One datagram an hour ahead costs that datagram.

Schema of mappings (UDP, ``from_iterable``): the fields come from
``fields=`` or from the first record. A later record with fields the schema
lacks is delivered with the schema's fields and counted (``extra_fields``,
naming them). One missing a schema field is held; once :data:`REBASE_AFTER`
consecutive records share the same other fields, the schema is learned
again from them (``schema_changed``) and they are all delivered; a held run
that ends before is dropped and counted (``schema_mismatch``, naming the
field). ``fields=`` fixes the schema: then a record missing a field is
dropped and counted. So a first datagram with odd keys costs at most
itself, never every later good sample.

Where samples come from:

* ``TimeSeriesSource.from_csv(path, time_column="t", time_unit="ns")``: a CSV
  file with a header row; the time column is parsed exactly (no float
  rounding: "1700000000.123456789" s stays exact to the ns);
* ``TimeSeriesSource.from_numpy(array_or_path)``: a structured array, a
  ``.npy`` holding one, or an ``.npz`` of equal-length columns;
* ``TimeSeriesSource.from_iterable(items)``: any sync or async iterable of
  mappings (``{"t": ..., "ax": ...}``) or structured rows;
* ``TimeSeriesSource.from_udp(port)``: live datagrams, each either JSON lines
  (``format="jsonl"``: one JSON object per line, any number of lines per
  datagram) or msgpack (``format="msgpack"``: one map, or an array of maps).

:func:`adapters.interpolation.interpolate` resamples a window of samples (the ``windows=`` frames a
``Nearest`` group collects) at the group's reference time: linear for
vectors, spherical linear for quaternions.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import socket
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import anyio
import msgpack
import numpy as np
from anyio.abc import SocketAttribute

from adapters.errors import SourceOpenError
from fusion.clock import ClockModel
from fusion.continuity import StreamWatch
from fusion.errors import ConfigError
from fusion.frames import Frame, Overflow, SensorKind, SensorSpec
from fusion.source import Source
from fusion.timing import current_clock

log = logging.getLogger("adapters.timeseries")
TIME_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_CHUNK_ROWS = 4096
_INT64 = (-(1 << 63), (1 << 63) - 1)

REBASE_AFTER = 8
"""Consecutive samples (or records) that must agree before a time jump (or a new
set of fields) is adopted."""

Producer = Callable[[], AsyncIterator[tuple[np.ndarray, int | None]]]


def parse_time_ns(text: str, unit: str = "s") -> int:
    """Parse one timestamp exactly into int ns: a number in ``unit`` or an ISO date-time.

    ``"1700000000.123456789"`` with unit "s" gives 1700000000123456789 with no
    float rounding; ``"2011-09-26 13:02:25.964389445"`` (KITTI) is read as UTC.
    """
    scale = _unit(unit)
    text = text.strip()
    try:
        return _decimal_ns(Decimal(text), scale, text)
    except InvalidOperation:
        pass
    date, _, frac = text.replace("T", " ").partition(".")
    digits = "".join(c for c in frac if c.isdigit())
    tail = frac[len(digits) :]
    try:
        stamp = datetime.fromisoformat(date + tail)
    except ValueError as err:
        raise ValueError(f"{text!r} is neither a number nor an ISO date-time") from err
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    whole = int(stamp.timestamp())
    return whole * 1_000_000_000 + int((digits + "000000000")[:9])


def _decimal_ns(value: Decimal, scale: int, text: str) -> int:
    """``value * scale`` as int64 ns, checked before any huge integer is built."""
    ns = value * scale
    if not ns.is_finite() or not _INT64[0] <= ns <= _INT64[1]:
        raise ValueError(f"time {text!r:.40} is not a finite int64 count of nanoseconds")
    return int(ns)


def _unit(unit: str) -> int:
    if unit not in TIME_UNITS:
        raise ConfigError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {unit!r}")
    return TIME_UNITS[unit]


class TimeSeriesSource(Source):
    """Timestamped samples, one row (or ``block`` rows) per frame (contract).

    Build one with a ``from_*`` constructor; the plain constructor takes a
    structured array with an int64 ``t`` field (ns). ``speed`` paces offline
    samples at their own timing (``None``: as fast as they are consumed).
    """

    def __init__(
        self,
        samples: np.ndarray | None = None,
        *,
        name: str = "timeseries",
        kind: SensorKind = "timeseries",
        block: int = 1,
        rate_hz: float | None = None,
        speed: float | None = None,
        clock: ClockModel | None = None,
        capacity: int = 256,
        overflow: Overflow = "block",
        meta: Mapping[str, Any] | None = None,
        jump_threshold: float = 1.0,
        max_time_jump: float | None = None,
        _producer: Producer | None = None,
    ) -> None:
        if block < 1:
            raise ValueError(f"block must be >= 1 row, got {block}")
        if speed is not None and speed <= 0:
            raise ValueError(f"speed must be > 0 or None, got {speed}")
        super().__init__(
            SensorSpec(
                name,
                kind=kind,
                rate_hz=rate_hz,
                clock=clock,
                capacity=capacity,
                overflow=overflow,
                meta=dict(meta or {}),
            )
        )
        if _producer is None:
            if samples is None:
                raise ValueError("TimeSeriesSource needs samples (or use a from_* constructor)")
            array = _with_time_first(samples, "t", "ns")
            _producer = _array_producer(array)
        self._producer = _producer
        self.block = block
        self.speed = speed
        self._last_t: int | None = None
        self.watch = StreamWatch(name, int(jump_threshold * 1e9), log)
        """Live samples (with arrival times): gaps, and restarts of the sender's clock."""
        if max_time_jump is not None and not 0 < max_time_jump < 1e9:
            raise ValueError(f"max_time_jump must be > 0 seconds or None, got {max_time_jump}")
        self._max_jump = None if max_time_jump is None else int(max_time_jump * 1e9)
        self._held: list[np.ndarray] = []  # samples after a jump, waiting for agreement
        self._listening = anyio.Event()
        self._bound_port: int | None = None

    # -- constructors --------------------------------------------------------------------

    @classmethod
    def from_csv(
        cls,
        path: str | Path,
        *,
        time_column: str = "t",
        time_unit: str = "s",
        columns: Sequence[str] | None = None,
        dtypes: Mapping[str, Any] | None = None,
        delimiter: str = ",",
        **options: Any,
    ) -> TimeSeriesSource:
        """Samples from a CSV file with a header row.

        ``time_column`` holds the stamps in ``time_unit`` (or ISO date-times);
        ``columns`` picks the value columns (default: all others), parsed as
        float64 unless ``dtypes`` says otherwise (integer dtypes accept hex
        such as CAN ids ``0x1A3``). A row that does not parse is dropped and
        counted as ``bad_row`` with its line number.
        """
        path = Path(path)
        _unit(time_unit)
        if not path.is_file():
            raise SourceOpenError(f"CSV file {str(path)!r} does not exist")
        with path.open(newline="") as f:
            header = next(csv.reader(f, delimiter=delimiter), None)
        if not header:
            raise SourceOpenError(f"CSV file {str(path)!r} is empty (expected a header row)")
        header = [h.strip() for h in header]
        if time_column not in header:
            raise ConfigError(
                f"{path}: no time column {time_column!r}; the header has {', '.join(header)}"
            )
        wanted = list(columns) if columns is not None else [h for h in header if h != time_column]
        unknown = [c for c in wanted if c not in header]
        if unknown:
            raise ConfigError(f"{path}: no column(s) {', '.join(unknown)} in the header")
        types = {c: np.dtype((dtypes or {}).get(c, "f8")) for c in wanted}
        dtype = np.dtype([("t", "<i8"), *((c, types[c]) for c in wanted)])
        index = {c: header.index(c) for c in [time_column, *wanted]}
        source: TimeSeriesSource

        def read_chunks() -> Iterable[np.ndarray]:
            with path.open(newline="") as f:
                reader = csv.reader(f, delimiter=delimiter)
                next(reader)
                rows: list[tuple[Any, ...]] = []
                for row in reader:
                    if not row:
                        continue
                    try:
                        t = parse_time_ns(row[index[time_column]], time_unit)
                        cells = tuple(_cell(row[index[c]], types[c]) for c in wanted)
                    except (ValueError, IndexError, OverflowError, ArithmeticError) as err:
                        source.count_error("bad_row", f"{path}: line {reader.line_num}: {err}")
                        continue
                    rows.append((reader.line_num, t, *cells))
                    if len(rows) >= _CHUNK_ROWS:
                        yield _rows_array(rows, dtype, source, f"{path}: line")
                        rows = []
                if rows:
                    yield _rows_array(rows, dtype, source, f"{path}: line")

        options.setdefault("name", path.stem)
        source = cls(_producer=_thread_producer(read_chunks), **options)
        return source

    @classmethod
    def from_numpy(
        cls,
        data: np.ndarray | str | Path,
        *,
        time_field: str = "t",
        time_unit: str = "ns",
        **options: Any,
    ) -> TimeSeriesSource:
        """Samples from a structured array, a ``.npy`` of one, or an ``.npz`` of columns."""
        if isinstance(data, (str, Path)):
            path = Path(data)
            if not path.is_file():
                raise SourceOpenError(f"numpy file {str(path)!r} does not exist")
            loaded = np.load(path, allow_pickle=False)
            if isinstance(loaded, np.lib.npyio.NpzFile):
                with loaded:
                    cols = {k: loaded[k] for k in loaded.files}
                lengths = {len(v) for v in cols.values()}
                if len(lengths) != 1:
                    raise ConfigError(f"{path}: columns have different lengths {sorted(lengths)}")
                array = np.empty(
                    lengths.pop(), [(k, v.dtype, v.shape[1:]) for k, v in cols.items()]
                )
                for k, v in cols.items():
                    array[k] = v
            else:
                array = loaded
            options.setdefault("name", path.stem)
        else:
            array = data
        return cls(_with_time_first(array, time_field, time_unit), **options)

    @classmethod
    def from_iterable(
        cls,
        items: Iterable[Any] | AsyncIterable[Any],
        *,
        time_field: str = "t",
        time_unit: str = "ns",
        fields: Sequence[str] | np.dtype[Any] | None = None,
        **options: Any,
    ) -> TimeSeriesSource:
        """Samples from a sync or async iterable of mappings or structured rows.

        The record layout comes from ``fields`` (names, all float64, or a
        dtype) or else from the first record (and follows a run of records
        with other fields; see the module docstring). A record missing a field
        is dropped and counted (``schema_mismatch``); one with a value of the
        wrong type too (``bad_record``).
        """
        source: TimeSeriesSource
        packer = _RecordPacker(time_field, time_unit, fields)

        async def produce() -> AsyncIterator[tuple[np.ndarray, int | None]]:
            if isinstance(items, AsyncIterable):
                async for item in items:
                    rows = packer.pack([item], source)
                    if len(rows):
                        yield rows, None
            else:
                for item in items:
                    rows = packer.pack([item], source)
                    if len(rows):
                        yield rows, None
                    await anyio.lowlevel.checkpoint()
            packer.finish(source)

        source = cls(_producer=produce, **options)
        return source

    @classmethod
    def from_udp(
        cls,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        format: str = "jsonl",
        time_field: str | None = "t",
        time_unit: str = "ns",
        fields: Sequence[str] | np.dtype[Any] | None = None,
        **options: Any,
    ) -> TimeSeriesSource:
        """Live samples from UDP datagrams (JSON lines or msgpack; see the module doc).

        ``time_field=None`` stamps each sample with its arrival time. ``port=0``
        picks a free port; :meth:`wait_listening` returns it. A datagram that
        does not decode (bad JSON or msgpack, nested too deep, a stamp that is
        not an int64 ns) is counted (``bad_datagram``, ``bad_record``) and
        skipped; ``max_time_jump`` (default 60 s) bounds how far ahead of the
        recent stamps a sample may be (see the module docstring).
        """
        if format not in ("jsonl", "msgpack"):
            raise ConfigError(f"format must be 'jsonl' or 'msgpack', got {format!r}")
        options.setdefault("max_time_jump", 60.0)
        source: TimeSeriesSource
        packer = _RecordPacker(time_field, time_unit, fields)

        async def produce() -> AsyncIterator[tuple[np.ndarray, int | None]]:
            try:
                sock = await anyio.create_udp_socket(
                    family=socket.AF_INET, local_host=host, local_port=port
                )
            except OSError as err:
                raise SourceOpenError(
                    f"cannot listen on UDP {host}:{port}: {err}", sensor=source.name
                ) from err
            async with sock:
                source._bound_port = sock.extra(SocketAttribute.local_port)
                source._listening.set()
                try:
                    while True:
                        payload, address = await sock.receive()
                        arrival = current_clock().now()
                        try:
                            records = _decode_datagram(payload, format)
                        except ValueError as err:
                            source.count_error(
                                "bad_datagram", f"datagram from {address[0]}:{address[1]}: {err}"
                            )
                            continue
                        rows = packer.pack(records, source, arrival)
                        if len(rows):
                            yield rows, arrival
                finally:
                    packer.finish(source)

        options.setdefault("overflow", "drop_oldest")
        source = cls(_producer=produce, **options)
        return source

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the live stream's restarts and gaps."""
        return {**super().statistics(), **self.watch.as_dict()}

    async def wait_listening(self) -> int:
        """Wait until a ``from_udp`` source is bound; return its port."""
        await self._listening.wait()
        assert self._bound_port is not None
        return self._bound_port

    # -- frames --------------------------------------------------------------------------

    async def frames(self) -> AsyncIterator[Frame]:
        clock = current_clock()
        start: tuple[int, int] | None = None
        pending: np.ndarray | None = None
        arrival: int | None = None
        async for chunk, arrival in self._producer():
            restarted = False
            # A sender restarted with its clock back: a new segment, not stale samples.
            if (
                arrival is not None
                and self._last_t is not None
                and len(chunk)
                and int(chunk["t"][0]) < self._last_t - self.watch.continuity.threshold_ns
            ):
                self._last_t = None
                pending = None
                restarted = True
            chunk = self._monotonic(chunk)
            if pending is not None and len(pending):
                chunk = np.concatenate([pending, chunk])
            whole = len(chunk) - len(chunk) % self.block
            for i in range(0, whole, self.block):
                rows = chunk[i : i + self.block]
                t = int(rows["t"][0])
                if self.speed is not None:
                    start = start or (clock.now(), t)
                    await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
                frame = self.make_frame(t, rows, t_arrival=arrival)
                if arrival is not None:
                    change = self.watch.check(frame)
                    if restarted and (change is None or not change.restarted):
                        frame.meta["segment_start"] = True
                    restarted = False
                yield frame
            pending = chunk[whole:]
        if pending is not None and len(pending):
            yield self.make_frame(int(pending["t"][0]), pending, t_arrival=arrival)
        self._drop_held(self._last_t)  # a jump nothing confirmed: counted, not delivered

    def _monotonic(self, chunk: np.ndarray) -> np.ndarray:
        if self._max_jump is not None:
            return self._bounded(chunk, self._max_jump)
        t = chunk["t"]
        floor = np.maximum.accumulate(t)
        if self._last_t is not None:
            floor = np.maximum(floor, self._last_t)
        keep = t >= floor
        if not keep.all():
            bad = np.flatnonzero(~keep)
            self.errors["time_backwards"] += len(bad) - 1
            self.count_error(
                "time_backwards",
                f"{len(bad)} sample(s) dropped: stamp {int(t[bad[0]])} ns is before "
                f"{int(floor[bad[0]])} ns",
            )
            chunk = chunk[keep]
        if len(chunk):
            self._last_t = int(chunk["t"][-1])
        return chunk

    def _bounded(self, chunk: np.ndarray, bound: int) -> np.ndarray:
        """Rows that continue the recent stamps (``last <= t <= last + bound``).

        Others are held; :data:`REBASE_AFTER` consecutive held rows that
        continue one another become the new baseline and are delivered, and a
        row that continues the old baseline instead drops the held ones
        (``time_jump`` ahead, ``time_backwards`` behind).
        """
        t = chunk["t"]
        last = self._last_t
        if (
            not self._held
            and len(t)
            and (last is None or last <= t[0] <= last + bound)
            and bool(np.all((np.diff(t) >= 0) & (np.diff(t) <= bound)))
        ):
            self._last_t = int(t[-1])
            return chunk
        keep: list[np.ndarray] = []
        for i in range(len(chunk)):
            ti = int(t[i])
            if last is None or last <= ti <= last + bound:
                self._drop_held(last)
                keep.append(chunk[i : i + 1])
                last = ti
                continue
            held_last = int(self._held[-1]["t"][0]) if self._held else None
            if held_last is None or not held_last <= ti <= held_last + bound:
                self._drop_held(last)
            self._held.append(chunk[i : i + 1])
            if len(self._held) >= REBASE_AFTER:
                self.count_error(
                    "time_rebased",
                    f"{len(self._held)} samples agree on a new time base: stamps jumped from "
                    f"{last} ns to {int(self._held[0]['t'][0])} ns",
                )
                keep.extend(self._held)
                last = ti
                self._held = []
        self._last_t = last
        return np.concatenate(keep) if keep else chunk[:0]

    def _drop_held(self, last: int | None) -> None:
        if not self._held:
            return
        first = int(self._held[0]["t"][0])
        reason = "time_backwards" if last is not None and first < last else "time_jump"
        self.errors[reason] += len(self._held) - 1
        self.count_error(
            reason,
            f"{len(self._held)} sample(s) dropped: stamp {first} ns is more than the bound "
            f"away from the recent stamps (last {last} ns)",
        )
        self._held = []


# -- producers and record packing ----------------------------------------------------------


def _rows_array(
    rows: list[tuple[Any, ...]], dtype: np.dtype[Any], source: Source, where: str
) -> np.ndarray:
    """``rows`` (each ``(line, t, *values)``) as one array; a row that does not fit
    ``dtype`` (an integer beyond its type, say) is counted and left out, not its batch."""
    try:
        return np.array([r[1:] for r in rows], dtype)
    except (TypeError, ValueError, OverflowError):
        good = []
        for r in rows:
            try:
                good.append(np.array([r[1:]], dtype))
            except (TypeError, ValueError, OverflowError) as err:
                source.count_error("bad_row", f"{where} {r[0]}: {err}")
        return np.concatenate(good) if good else np.empty(0, dtype)


def _cell(text: str, dtype: np.dtype[Any]) -> Any:
    if dtype.kind in "iu":
        return int(text, 0)
    if dtype.kind == "b":
        return text.strip().lower() in ("1", "true", "yes")
    if dtype.kind == "f":
        return float(text)
    return text


def _with_time_first(array: np.ndarray, time_field: str, time_unit: str) -> np.ndarray:
    """Copy a structured array into our layout: int64 ns ``t`` first, then the rest."""
    scale = _unit(time_unit)
    names = array.dtype.names
    if names is None or time_field not in names:
        raise ConfigError(
            f"expected a structured array with a time field {time_field!r}, "
            f"got fields {list(names or [])}"
        )
    others = [n for n in names if n != time_field]
    out = np.empty(array.shape[0], [("t", "<i8"), *((n, array.dtype[n]) for n in others)])
    stamps = array[time_field]
    if stamps.dtype.kind == "f":
        out["t"] = np.round(stamps.astype(np.float64) * scale).astype(np.int64)
    else:
        out["t"] = stamps.astype(np.int64) * scale
    for n in others:
        out[n] = array[n]
    return out


def _array_producer(array: np.ndarray) -> Producer:
    async def produce() -> AsyncIterator[tuple[np.ndarray, int | None]]:
        for i in range(0, len(array), _CHUNK_ROWS):
            yield array[i : i + _CHUNK_ROWS], None

    return produce


def _thread_producer(chunks: Callable[[], Iterable[np.ndarray]]) -> Producer:
    """Run a blocking chunk generator in a worker thread, one chunk per round trip."""

    async def produce() -> AsyncIterator[tuple[np.ndarray, int | None]]:
        iterator = iter(chunks())
        clock = current_clock()
        while True:
            with clock.busy():
                chunk = await anyio.to_thread.run_sync(next, iterator, None)
            if chunk is None:
                return
            yield chunk, None

    return produce


def _decode_datagram(payload: bytes, fmt: str) -> list[Any]:
    if fmt == "jsonl":
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


class _RecordPacker:
    """Turn mappings into rows of one structured dtype, fixed by ``fields`` or the first record."""

    def __init__(
        self,
        time_field: str | None,
        time_unit: str,
        fields: Sequence[str] | np.dtype[Any] | None,
    ) -> None:
        self.time_field = time_field
        self.scale = _unit(time_unit)
        self.dtype: np.dtype[Any] | None = None
        self.fixed = fields is not None
        """``fields=`` fixed the schema: it is never learned again."""
        self._held: list[Mapping[str, Any]] = []
        self._held_keys: frozenset[Any] = frozenset()
        self._held_missing: list[str] = []
        if isinstance(fields, np.dtype):
            self.dtype = np.dtype([("t", "<i8"), *((n, fields[n]) for n in fields.names or ())])
        elif fields is not None:
            self.dtype = np.dtype([("t", "<i8"), *((n, "<f8") for n in fields)])

    def pack(self, records: list[Any], source: Source, arrival: int | None = None) -> np.ndarray:
        rows: list[tuple[Any, ...]] = []
        for record in records:
            if isinstance(record, np.void) and record.dtype.names:
                record = {n: record[n] for n in record.dtype.names}
            if not isinstance(record, Mapping):
                source.count_error("bad_record", f"expected a mapping, got {type(record).__name__}")
                continue
            if self.dtype is None:
                self.dtype = self._infer(record)
            before = self.dtype
            admitted = self._admit(record, source)
            if self.dtype is not before and rows:
                source.count_error(
                    "schema_mismatch", f"{len(rows)} record(s) of the old schema in the datagram"
                )
                rows = []
            for rec in admitted:
                try:
                    if self.time_field is None:
                        if arrival is None:
                            raise KeyError("no time field and no arrival time")
                        t = arrival
                    else:
                        t = _to_ns(rec[self.time_field], self.scale)
                    rows.append((t, *(rec[n] for n in (self.dtype.names or ())[1:])))
                except (KeyError, TypeError, ValueError, OverflowError) as err:
                    source.count_error("bad_record", f"record {rec!r:.120}: {err!r}")
        if not rows or self.dtype is None:
            return np.empty(0, self.dtype or [("t", "<i8")])
        try:
            return np.array(rows, self.dtype)
        except (TypeError, ValueError, OverflowError):  # one bad value spoils the batch
            good = []
            for row in rows:
                try:
                    good.append(np.array([row], self.dtype))
                except (TypeError, ValueError, OverflowError) as err:
                    source.count_error("bad_record", f"record {row!r:.120}: {err}")
            return np.concatenate(good) if good else np.empty(0, self.dtype)

    def _admit(self, record: Mapping[str, Any], source: Source) -> list[Mapping[str, Any]]:
        """The records to pack now: ``record``, nothing (held), or a held run.

        A record with the schema's fields is packed (extra fields counted as
        ``extra_fields`` and left out). One lacking a field is held; when
        :data:`REBASE_AFTER` consecutive records share the same other fields,
        the schema is learned from them (``schema_changed``) and the run is
        packed, so no good sample is lost to an odd first record. A held run
        that ends otherwise is dropped and counted (``schema_mismatch``).
        """
        assert self.dtype is not None
        names = (self.dtype.names or ())[1:]
        keys = frozenset(k for k in record if k != self.time_field)
        missing = [n for n in names if n not in keys]
        if not missing:
            self._drop_held(source)
            if len(keys) > len(names):
                extra = sorted(map(str, keys - set(names)))
                source.count_error(
                    "extra_fields", f"fields {', '.join(extra)} are not in the schema; left out"
                )
            return [record]
        if self._held and self._held_keys != keys:
            self._drop_held(source)
        self._held.append(record)
        self._held_keys = keys
        self._held_missing = missing
        if self.fixed or len(self._held) < REBASE_AFTER:
            return []
        inferred = self._infer(record)
        if len(inferred.names or ()) < 2:
            return []
        held, self._held = self._held, []
        source.count_error(
            "schema_changed",
            f"{len(held)} records in a row lack {', '.join(missing)}: the schema is now "
            f"{', '.join((inferred.names or ())[1:])}",
        )
        self.dtype = inferred
        return held

    def finish(self, source: Source) -> None:
        """The input ended: count records still held (they are dropped)."""
        self._drop_held(source)

    def _drop_held(self, source: Source) -> None:
        if not self._held:
            return
        n = len(self._held)
        source.errors["schema_mismatch"] += n - 1
        source.count_error(
            "schema_mismatch",
            f"{n} record(s) lack field(s) {', '.join(self._held_missing)} of the schema; dropped",
        )
        self._held = []

    def _infer(self, record: Mapping[str, Any]) -> np.dtype[Any]:
        descr: list[tuple[Any, ...]] = [("t", "<i8")]
        for key, value in record.items():
            if key == self.time_field:
                continue
            if isinstance(value, bool):
                descr.append((str(key), "?"))
            elif isinstance(value, int):
                descr.append((str(key), "<i8"))
            elif isinstance(value, float):
                descr.append((str(key), "<f8"))
            elif isinstance(value, (list, tuple)) and value:
                descr.append((str(key), "<f8", (len(value),)))
            elif isinstance(value, (np.generic, np.ndarray)):
                descr.append((str(key), value.dtype, np.shape(value)))
        return np.dtype(descr)


def _to_ns(value: Any, scale: int) -> int:
    """A stamp as int64 ns; ``ValueError`` for anything else (text, inf, beyond int64)."""
    if isinstance(value, bool):
        raise ValueError(f"time {value!r} is not a number")
    if isinstance(value, str):
        try:
            return _decimal_ns(Decimal(value), scale, value)
        except ArithmeticError:
            raise ValueError(f"time {value!r:.40} is not a number") from None
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"time {value} is not finite")
        ns = round(float(value) * scale)
    else:
        ns = int(value) * scale
    if not _INT64[0] <= ns <= _INT64[1]:
        raise ValueError(f"time {value!r:.40} is beyond int64 nanoseconds")
    return ns
