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

Schemas come from the declared fields or from a majority of the first
samples, never from the first one alone: mappings (UDP, ``from_iterable``)
in :mod:`adapters._timeseries_records`, CSV rows in
:mod:`adapters._timeseries_csv`. A sample that does not fit is counted
(``schema_mismatch``); values beyond the schema are counted (``extra_fields``,
``extra_columns``) and the sample kept.

The ledger's unit is the datagram (``from_udp``, received through
:class:`adapters.net._udp.UdpReceiver`, so the kernel's drops and foreign
senders are counted too), the row (``from_csv``), the record
(``from_iterable``) or the sample (arrays). Each ends in a frame or as a loss
with its reason.

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

:func:`adapters._interpolation.interpolate` resamples a window of samples (the ``windows=`` frames a
``Nearest`` group collects) at the group's reference time: linear for
vectors, spherical linear for quaternions.
"""

from __future__ import annotations

import logging
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from adapters._side_files import refuse_special
from adapters._timeparse import TIME_UNITS, parse_time_ns, unit_scale
from adapters._timeseries_csv import CsvLayout, RowMismatch, csv_cells, read_layout
from adapters._timeseries_records import REBASE_AFTER, Batch, RecordPacker
from adapters._timeseries_udp import udp_batches
from adapters.errors import SourceOpenError
from adapters.net import DEFAULT_SENDER_TIMEOUT, UdpReceiver, UdpStatistics
from fusion import Frame, Overflow, SensorKind, SensorSpec, Source, StreamWatch, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError

log = logging.getLogger("adapters._timeseries")
_CHUNK_ROWS = 4096

__all__ = ["REBASE_AFTER", "TIME_UNITS", "TimeSeriesSource", "parse_time_ns"]


Producer = Callable[[], AsyncIterator[Batch | list[Batch]]]
"""Yields a Batch, or a list of them that arrived together (a UDP burst): the list's
frames leave :meth:`TimeSeriesSource.frame_batches` as one list."""
_Row = tuple[np.ndarray, int, int | None]
"""A row held or kept by the jump check: the one-row array, its weight, its arrival."""
DEFAULT_GATHER = 0.010
"""Seconds a fast UDP stream gathers in the socket between drains (``from_udp(gather=)``)."""


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
            raise ConfigError(f"block must be >= 1 row, got {block}")
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
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
                raise ConfigError("TimeSeriesSource needs samples (or use a from_* constructor)")
            array = _with_time_first(samples, "t", "ns")
            _producer = _array_producer(array, self)
            self._ledger_unit = "sample"
        self._producer = _producer
        self.block = block
        self.speed = speed
        self._last_t: int | None = None
        self.watch = StreamWatch(name, int(jump_threshold * 1e9), log)
        """Live samples (with arrival times): gaps, and restarts of the sender's clock."""
        if max_time_jump is not None and not 0 < max_time_jump < 1e9:
            raise ConfigError(f"max_time_jump must be > 0 seconds or None, got {max_time_jump}")
        self._max_jump = None if max_time_jump is None else int(max_time_jump * 1e9)
        self._held: list[_Row] = []  # rows after a jump
        self._listening = anyio.Event()
        self._bound_port: int | None = None
        self.udp: UdpReceiver | None = None
        """The UDP receiver of a ``from_udp`` source (its socket counters), once listening."""
        self.gather: float | None = None
        """Seconds a ``from_udp`` stream gathers between drains (``None``: not UDP)."""

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
        """Samples from a CSV (or space-separated) file with a header row.

        ``time_column`` holds the stamps in ``time_unit`` (or ISO date-times);
        ``columns`` picks the value columns (default: all others), parsed as
        float64 unless ``dtypes`` says otherwise (integer dtypes accept hex
        such as CAN ids ``0x1A3``). A ``#`` header (TUM, EuRoC) has its ``#``
        stripped; the row width is the majority of the first rows'. A row that
        does not parse is counted as ``bad_row``, one with too few values as
        ``schema_mismatch``, values beyond the header as ``extra_columns``;
        each names the line (see :mod:`adapters._timeseries_csv`).
        """
        path = Path(path)
        unit_scale(time_unit)
        # A FIFO, directory or device is named as what it is (and a FIFO never read).
        refuse_special(path, "CSV file", SourceOpenError)
        if not path.is_file():
            raise SourceOpenError(f"CSV file {str(path)!r} does not exist")
        layout, header_line = read_layout(
            path,
            time_column=time_column,
            time_unit=time_unit,
            columns=columns,
            dtypes=dtypes,
            delimiter=delimiter,
        )
        source: TimeSeriesSource

        def read_chunks() -> Iterable[np.ndarray]:
            return _csv_chunks(path, delimiter, layout, header_line, source)

        options.setdefault("name", path.stem)
        source = cls(_producer=_thread_producer(read_chunks), **options)
        source._ledger_unit = "row"
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
            array = _load_numpy(path)
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
        dtype) or else from a majority of the first records (and follows a
        run of records with other fields; see :mod:`adapters._timeseries_records`).
        A record missing a field is dropped and counted (``schema_mismatch``);
        one with a value of the wrong type too (``bad_record``).
        """
        source: TimeSeriesSource
        packer = RecordPacker(time_field, time_unit, fields)

        def produce() -> AsyncIterator[Batch]:
            return _iterable_batches(items, packer, source)

        source = cls(_producer=produce, **options)
        source._ledger_unit = "record"
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
        sender: str | None = None,
        recv_buffer: int | None = None,
        sender_timeout: float | None = DEFAULT_SENDER_TIMEOUT,
        gather: float = DEFAULT_GATHER,
        **options: Any,
    ) -> TimeSeriesSource:
        """Live samples from UDP datagrams (JSON lines or msgpack; see the module doc).

        ``time_field=None`` stamps each sample with its arrival time. ``port=0``
        picks a free port; :meth:`wait_listening` returns it. ``host`` is the
        local address to listen on; ``sender`` (``"10.0.0.5"`` or
        ``"10.0.0.5:5000"``) the only sender taken, else the first one heard
        (followed by another after ``sender_timeout`` s of silence); others are
        counted (``foreign_sender``). ``recv_buffer`` sets the socket's
        receive buffer (bytes); the kernel's drops are counted
        (``kernel_overflow``); see :mod:`adapters.net._udp`. A datagram that
        does not decode (bad JSON or msgpack, nested too deep, a stamp that is
        not an int64 ns) is counted (``bad_datagram``, ``bad_record``) and
        skipped; ``max_time_jump`` (default 60 s) bounds how far ahead of the
        recent stamps a sample may be (see the module docstring). Every datagram
        queued is taken per wakeup, and a fast stream is let gather for ``gather``
        seconds (10 ms) after each drain, each datagram keeping its kernel receive
        time: a 1 kHz sensor costs a wakeup per 10 ms, not per datagram
        (``gather=0``: read each as soon as it is readable).
        """
        if format not in ("jsonl", "msgpack"):
            raise ConfigError(f"format must be 'jsonl' or 'msgpack', got {format!r}")
        options.setdefault("max_time_jump", 60.0)
        source: TimeSeriesSource
        packer = RecordPacker(time_field, time_unit, fields)

        receiver_options: dict[str, Any] = {
            "host": host,
            "port": port,
            "sender": sender,
            "recv_buffer": recv_buffer,
            "sender_timeout": sender_timeout,
            "gather": gather,
        }

        def produce() -> AsyncIterator[Batch | list[Batch]]:
            return _udp_producer(source, packer, format, receiver_options)

        options.setdefault("overflow", "drop_oldest")
        source = cls(_producer=produce, **options)
        source._ledger_unit = "datagram"
        source.gather = gather
        return source

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the live stream's restarts and gaps (and its UDP socket)."""
        stats = {**super().statistics(), **self.watch.as_dict()}
        if self.udp is not None:
            stats["udp"] = self.udp.statistics().as_dict()
        return stats

    def udp_statistics(self) -> UdpStatistics | None:
        """The UDP receiver's counters (``from_udp`` sources once listening), else ``None``."""
        return None if self.udp is None else self.udp.statistics()

    async def wait_listening(self) -> int:
        """Wait until a ``from_udp`` source is bound; return its port."""
        await self._listening.wait()
        assert self._bound_port is not None
        return self._bound_port

    # -- frames --------------------------------------------------------------------------

    async def frames(self) -> AsyncIterator[Frame]:
        async with aclosing(self.frame_batches()) as batches:  # type: ignore[type-var]
            async for batch in batches:
                for frame in batch:
                    yield frame

    async def frame_batches(self) -> AsyncIterator[list[Frame]]:
        """The frames in arrival order, a list per producer step: every datagram of a
        UDP burst at once (one trip through the hub for the lot), one frame at a time
        when paced (``speed``)."""
        clock = current_clock()
        start: tuple[int, int] | None = None
        pending: Batch | None = None
        arrival: int | None = None
        async for item in self._producer():
            out: list[Frame] = []
            for batch in item if isinstance(item, list) else (item,):
                arrival = batch.arrival
                restarted = False
                # A sender restarted with its clock back: a new segment, not stale samples.
                if (
                    arrival is not None
                    and self._last_t is not None
                    and len(batch.rows)
                    and int(batch.rows["t"][0]) < self._last_t - self.watch.continuity.threshold_ns
                ):
                    if pending is not None and len(pending.rows):  # the old segment's last rows
                        out.append(self._frame(pending.rows, pending.weights, pending.arrival))
                    self._last_t = None
                    pending = None
                    restarted = True
                # Each row's arrival goes with it: the checks below may drop rows, or
                # release rows held from earlier batches (a new time base confirmed).
                rows, weights, arrivals = self._monotonic(batch.rows, batch.weights, batch.arrivals)
                if pending is not None and len(pending.rows):
                    rows = np.concatenate([pending.rows, rows])
                    weights = np.concatenate([pending.weights, weights])
                    arrivals = None  # a block spanning batches: the batch's arrival
                block = self.block
                whole = len(rows) - len(rows) % block
                stamps = rows["t"][:whole:block].tolist()
                units = weights.tolist() if block == 1 else None
                each = arrivals if block == 1 else None
                for k, i in enumerate(range(0, whole, block)):
                    t = stamps[k]
                    if self.speed is not None:
                        if out:
                            yield out
                            out = []
                        start = start or (clock.now(), t)
                        await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
                    frame = self.make_frame(
                        t,
                        rows[i : i + block],
                        t_arrival=arrival if each is None else each[i],
                        units=units[i] if units is not None else int(weights[i : i + block].sum()),
                    )
                    if arrival is not None:
                        change = self.watch.check(frame)
                        if restarted and (change is None or not change.restarted):
                            frame.meta["segment_start"] = True
                        restarted = False
                    out.append(frame)
                pending = Batch(rows[whole:], arrival, weights[whole:])
            if out:
                yield out
        if pending is not None and len(pending.rows):
            yield [self._frame(pending.rows, pending.weights, arrival)]
        _drop_held(self, self._last_t)  # a jump nothing confirmed: counted, not delivered

    def _frame(self, rows: np.ndarray, weights: np.ndarray, arrival: int | None) -> Frame:
        return self.make_frame(int(rows["t"][0]), rows, t_arrival=arrival, units=int(weights.sum()))

    def _monotonic(
        self, chunk: np.ndarray, weights: np.ndarray, arrivals: list[int] | None
    ) -> tuple[np.ndarray, np.ndarray, list[int] | None]:
        """The rows kept, with their weights and arrivals (``arrivals`` given per row or
        ``None``; rows released from an earlier batch carry their own)."""
        if self._max_jump is not None:
            return _bounded(self, chunk, weights, arrivals, self._max_jump)
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
                units=int(weights[bad].sum()),
            )
            chunk, weights = chunk[keep], weights[keep]
            if arrivals is not None:
                arrivals = [a for a, kept in zip(arrivals, keep.tolist(), strict=True) if kept]
        if len(chunk):
            self._last_t = int(chunk["t"][-1])
        return chunk, weights, arrivals


def _bounded(
    source: TimeSeriesSource,
    chunk: np.ndarray,
    weights: np.ndarray,
    arrivals: list[int] | None,
    bound: int,
) -> tuple[np.ndarray, np.ndarray, list[int] | None]:
    """Rows that continue the recent stamps (``last <= t <= last + bound``).

    Others are held; :data:`REBASE_AFTER` consecutive held rows that
    continue one another become the new baseline and are delivered, and a
    row that continues the old baseline instead drops the held ones
    (``time_jump`` ahead, ``time_backwards`` behind).
    """
    t = chunk["t"]
    last = source._last_t
    if not source._held and len(t) == 1:  # one datagram's row: no numpy for it
        first = int(t[0])
        if last is None or last <= first <= last + bound:
            source._last_t = first
            return chunk, weights, arrivals
    steps = np.diff(t)
    if (
        not source._held
        and len(t)
        and (last is None or last <= t[0] <= last + bound)
        and bool(np.all((steps >= 0) & (steps <= bound)))
    ):
        source._last_t = int(t[-1])
        return chunk, weights, arrivals
    keep: list[_Row] = []
    for i in range(len(chunk)):
        ti = int(t[i])
        row = (
            chunk[i : i + 1],
            int(weights[i]),
            None if arrivals is None else arrivals[i],
        )
        if last is None or last <= ti <= last + bound:
            _drop_held(source, last)
            keep.append(row)
            last = ti
            continue
        held_last = int(source._held[-1][0]["t"][0]) if source._held else None
        if held_last is None or not held_last <= ti <= held_last + bound:
            _drop_held(source, last)
        source._held.append(row)
        if len(source._held) >= REBASE_AFTER:
            source.count_error(
                "time_rebased",
                f"{len(source._held)} samples agree on a new time base: stamps jumped from "
                f"{last} ns to {int(source._held[0][0]['t'][0])} ns",
                units=0,
            )
            keep.extend(source._held)
            last = ti
            source._held = []
    source._last_t = last
    if not keep:
        return chunk[:0], weights[:0], None if arrivals is None else []
    rows = np.concatenate([r for r, _, _ in keep])
    kept_weights = np.array([w for _, w, _ in keep], np.int64)
    if arrivals is None:  # offline: no row has an arrival
        return rows, kept_weights, None
    # A row held from a batch without arrivals of its own: the one that releases it.
    return rows, kept_weights, [arrivals[-1] if a is None else a for _, _, a in keep]


def _drop_held(source: TimeSeriesSource, last: int | None) -> None:
    """The rows held after a jump dropped and counted (``time_backwards`` or ``time_jump``)."""
    if not source._held:
        return
    first = int(source._held[0][0]["t"][0])
    reason = "time_backwards" if last is not None and first < last else "time_jump"
    source.errors[reason] += len(source._held) - 1
    source.count_error(
        reason,
        f"{len(source._held)} sample(s) dropped: stamp {first} ns is more than the bound "
        f"away from the recent stamps (last {last} ns)",
        units=sum(w for _, w, _ in source._held),
    )
    source._held = []


# -- producers ------------------------------------------------------------------------------


def _csv_chunks(
    path: Path, delimiter: str, layout: CsvLayout, header_line: int, source: Source
) -> Iterator[np.ndarray]:
    """The CSV's rows after its header as arrays of up to ``_CHUNK_ROWS``: each row read is
    counted, each that does not parse counted by reason with its line."""
    dtype = layout.dtype
    rows: list[tuple[Any, ...]] = []
    for line, cells in csv_cells(path, delimiter):
        if line <= header_line:
            continue
        source.count_received()
        try:
            values, extra = layout.parse(cells, line)
        except RowMismatch as err:
            source.count_error("schema_mismatch", str(err))
            continue
        except (ValueError, IndexError, OverflowError, ArithmeticError) as err:
            source.count_error("bad_row", f"{path}: line {line}: {err}")
            continue
        if extra:
            source.count_error(
                "extra_columns",
                f"{path}: line {line}: {extra} value(s) beyond the "
                f"{layout.width} columns; the row is kept without them",
                units=0,
            )
        rows.append((line, *values))
        if len(rows) >= _CHUNK_ROWS:
            yield _rows_array(rows, dtype, source, f"{path}: line")
            rows = []
    if rows:
        yield _rows_array(rows, dtype, source, f"{path}: line")


def _load_numpy(path: Path) -> np.ndarray:
    """A structured array from a ``.npy`` of one or an ``.npz`` of equally long columns."""
    refuse_special(path, "numpy file", SourceOpenError)
    if not path.is_file():
        raise SourceOpenError(f"numpy file {str(path)!r} does not exist")
    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            cols = {k: loaded[k] for k in loaded.files}
        lengths = {len(v) for v in cols.values()}
        if len(lengths) != 1:
            raise ConfigError(f"{path}: columns have different lengths {sorted(lengths)}")
        array = np.empty(lengths.pop(), [(k, v.dtype, v.shape[1:]) for k, v in cols.items()])
        for k, v in cols.items():
            array[k] = v
    else:
        array = loaded
    return array


async def _iterable_batches(
    items: Iterable[Any] | AsyncIterable[Any], packer: RecordPacker, source: Source
) -> AsyncIterator[Batch]:
    """``items`` packed into rows one by one (a checkpoint after each sync item), then what
    the packer still holds."""
    if isinstance(items, AsyncIterable):
        async for item in items:
            source.count_received()
            rows, weights = packer.pack([item], source)
            if len(rows):
                yield Batch(rows, None, weights)
    else:
        for item in items:
            source.count_received()
            rows, weights = packer.pack([item], source)
            if len(rows):
                yield Batch(rows, None, weights)
            await anyio.lowlevel.checkpoint()
    rows, weights = packer.finish(source)
    if len(rows):
        yield Batch(rows, None, weights)


async def _udp_producer(
    source: TimeSeriesSource,
    packer: RecordPacker,
    format: str,
    receiver_options: dict[str, Any],
) -> AsyncIterator[Batch | list[Batch]]:
    """The live datagrams' batches while ``source`` listens (``receiver_options`` for
    :class:`UdpReceiver`); the bound port is published once the socket is open."""
    receiver = UdpReceiver(source, **receiver_options)
    async with receiver:
        source.udp = receiver
        source._bound_port = receiver.port
        source._listening.set()
        stream = udp_batches(source, receiver, packer, format, source.block == 1)
        async with aclosing(stream) as batches:  # type: ignore[type-var]
            async for item in batches:
                yield item


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


def _with_time_first(array: np.ndarray, time_field: str, time_unit: str) -> np.ndarray:
    """Copy a structured array into our layout: int64 ns ``t`` first, then the rest."""
    scale = unit_scale(time_unit)
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


def _array_producer(array: np.ndarray, source: Source) -> Producer:
    async def produce() -> AsyncIterator[Batch]:
        for i in range(0, len(array), _CHUNK_ROWS):
            rows = array[i : i + _CHUNK_ROWS]
            source.count_received(len(rows))
            yield Batch(rows, None, np.ones(len(rows), np.int64))

    return produce


def _thread_producer(chunks: Callable[[], Iterable[np.ndarray]]) -> Producer:
    """Run a blocking chunk generator in a worker thread, one chunk per round trip.

    The generator counts what it reads (``count_received``) itself: each row
    it yields settles one unit.
    """

    async def produce() -> AsyncIterator[Batch]:
        iterator = iter(chunks())
        clock = current_clock()
        while True:
            with clock.busy():
                chunk = await anyio.to_thread.run_sync(next, iterator, None)
            if chunk is None:
                return
            yield Batch(chunk, None, np.ones(len(chunk), np.int64))

    return produce
