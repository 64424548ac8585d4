"""``TimeSeriesSource``: IMU, GNSS, CAN-style samples as structured arrays.

A time-series frame's ``data`` is a 1-D numpy structured array of ``block``
rows (one by default). Its first field is ``t`` (int64 ns, the sample's own
stamp); the others are the sample's values, float64 unless told otherwise
(GNSS latitudes need the precision). ``frame.t_sensor`` is the first row's
``t``. Samples whose stamp goes backwards are dropped and counted
(``time_backwards``); unparsable rows are dropped and counted (``bad_row``,
``bad_record``) with the line or datagram that failed.

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

from fusion.clock import ClockModel
from fusion.continuity import StreamWatch
from fusion.errors import ConfigError, SourceOpenError
from fusion.frames import Frame, Overflow, SensorKind, SensorSpec
from fusion.source import Source
from fusion.timing import current_clock

log = logging.getLogger("adapters.timeseries")
TIME_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_CHUNK_ROWS = 4096

Producer = Callable[[], AsyncIterator[tuple[np.ndarray, int | None]]]


def parse_time_ns(text: str, unit: str = "s") -> int:
    """Parse one timestamp exactly into int ns: a number in ``unit`` or an ISO date-time.

    ``"1700000000.123456789"`` with unit "s" gives 1700000000123456789 with no
    float rounding; ``"2011-09-26 13:02:25.964389445"`` (KITTI) is read as UTC.
    """
    scale = _unit(unit)
    text = text.strip()
    try:
        return int(Decimal(text) * scale)
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
                        rows.append((t, *(_cell(row[index[c]], types[c]) for c in wanted)))
                    except (ValueError, IndexError, OverflowError) as err:
                        source.count_error("bad_row", f"{path}: line {reader.line_num}: {err}")
                        continue
                    if len(rows) >= _CHUNK_ROWS:
                        yield np.array(rows, dtype)
                        rows = []
                if rows:
                    yield np.array(rows, dtype)

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
        dtype) or else from the first record. A record missing a field or with
        a value of the wrong type is dropped and counted (``bad_record``).
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
        does not decode is counted (``bad_datagram``) and skipped.
        """
        if format not in ("jsonl", "msgpack"):
            raise ConfigError(f"format must be 'jsonl' or 'msgpack', got {format!r}")
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

    def _monotonic(self, chunk: np.ndarray) -> np.ndarray:
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


# -- producers and record packing ----------------------------------------------------------


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
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"not JSON lines: {err}") from err
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
        if isinstance(fields, np.dtype):
            self.dtype = np.dtype([("t", "<i8"), *((n, fields[n]) for n in fields.names or ())])
        elif fields is not None:
            self.dtype = np.dtype([("t", "<i8"), *((n, "<f8") for n in fields)])

    def pack(self, records: list[Any], source: Source, arrival: int | None = None) -> np.ndarray:
        rows = []
        for record in records:
            if isinstance(record, np.void) and record.dtype.names:
                record = {n: record[n] for n in record.dtype.names}
            if not isinstance(record, Mapping):
                source.count_error("bad_record", f"expected a mapping, got {type(record).__name__}")
                continue
            if self.dtype is None:
                self.dtype = self._infer(record)
            try:
                if self.time_field is None:
                    if arrival is None:
                        raise KeyError("no time field and no arrival time")
                    t = arrival
                else:
                    t = _to_ns(record[self.time_field], self.scale)
                rows.append((t, *(record[n] for n in (self.dtype.names or ())[1:])))
            except (KeyError, TypeError, ValueError, OverflowError) as err:
                source.count_error("bad_record", f"record {record!r:.120}: {err!r}")
        if not rows or self.dtype is None:
            return np.empty(0, self.dtype or [("t", "<i8")])
        try:
            return np.array(rows, self.dtype)
        except (TypeError, ValueError):  # one bad value spoils the batch: find it row by row
            good = []
            for row in rows:
                try:
                    good.append(np.array([row], self.dtype))
                except (TypeError, ValueError) as err:
                    source.count_error("bad_record", f"record {row!r:.120}: {err}")
            return np.concatenate(good) if good else np.empty(0, self.dtype)

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
    if isinstance(value, str):
        return int(Decimal(value) * scale)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"time {value} is not finite")
        return round(float(value) * scale)
    return int(value) * scale
