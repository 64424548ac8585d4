"""Tables of a recording as Parquet: time series, CAN signals and frames, radar lists.

``hyperframes export rec.hfr -o signals.parquet --sensors bus.ExampleMessage`` (one
sensor: one file) or ``-o tables/ --to parquet`` (a folder, ``<sensor>.parquet`` per
sensor) writes each sensor whose frames are structured numpy arrays (one row per sample,
CAN frame or detection; a ``block`` frame's rows each a row) with pyarrow:

* ``t`` (int64 ns, the recording's time of the row: the frame's ``t`` plus the row's own
  offset from the frame's first row; UTC where the recording is dated, as in the MCAP
  exports), ``t_sensor`` (the row's own stamp: its ``t`` field, else the frame's
  ``t_sensor``), ``seq`` (the frame's sequence number; a block frame's rows share it);
* every other field of the payload, typed as recorded (sub-arrays as fixed-size lists,
  byte strings as binary). A CAN message sensor's signals carry their ``unit``,
  ``scale``, ``offset``, ``minimum``, ``maximum``, ``choices`` (JSON) and multiplexer in
  the field's metadata, from the sensor's ``meta["signals"]``;
* a raw CAN sensor (:data:`adapters.can.RAW_DTYPE`) as ``id``, ``extended``, ``remote``,
  ``fd``, ``brs``, ``esi``, ``rx``, ``dlc``, ``channel`` and ``data`` (binary: the frame's
  ``dlc`` payload bytes; empty for a remote frame); the bus names of the channels
  (``{"0": "can0"}``) are in the file's metadata under ``hyperframes.channel_names``.

The file's metadata also holds ``hyperframes.sensor``, ``hyperframes.kind`` and
``hyperframes.meta`` (the sensor's spec meta, JSON). Rows are written in bounded row
groups (:data:`ROW_GROUP_ROWS` rows or :data:`ROW_GROUP_BYTES` of buffered columns,
whichever comes first), so memory stays flat however long the recording. A frame whose
payload is not a table, or whose dtype differs from the sensor's first, is not written
and is counted with the reason.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fusion import Frame, SensorSpec
from recordings._extras import pyarrow_modules

ROW_GROUP_ROWS = 65_536
"""Rows buffered per sensor before a row group is written."""
ROW_GROUP_BYTES = 32 * 1024 * 1024
"""Bytes of buffered columns per sensor before a row group is written."""
TABLE_KINDS = ("timeseries", "imu", "gnss", "can", "radar")
"""Sensor kinds ``--to parquet`` takes when no ``--sensors`` are named."""

_RAW_CAN = ("id", "extended", "remote", "fd", "brs", "esi", "rx", "dlc", "channel")
_SIGNAL_KEYS = ("unit", "scale", "offset", "minimum", "maximum")


def _native(values: np.ndarray) -> np.ndarray:
    if values.dtype.byteorder not in ("=", "|"):
        values = values.astype(values.dtype.newbyteorder("="))
    return np.ascontiguousarray(values)


def _primitive(pa: Any, values: np.ndarray) -> Any:
    """A pyarrow array of a 1-D numeric or bool numpy array, from its buffer (no pandas)."""
    values = _native(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values.view(np.uint8), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    typ = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


def _binary(pa: Any, data: np.ndarray, sizes: np.ndarray) -> Any:
    """Rows of ``data`` (n x width uint8) cut to ``sizes`` bytes each, as a binary array."""
    n = len(sizes)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    width = data.shape[1] if data.ndim == 2 else 0
    keep = np.arange(width)[None, :] < sizes[:, None]
    values = np.ascontiguousarray(data[keep], np.uint8)
    return pa.Array.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values)]
    )


class _Table:
    """One sensor's Parquet file: its schema (from the first frame), buffered columns and
    the writer (opened on the first row group)."""

    def __init__(self, path: Path, spec: SensorSpec, first: np.ndarray) -> None:
        self.pa, self.pq = pyarrow_modules()
        self.path = path
        self.spec = spec
        self.dtype = first.dtype
        names = first.dtype.names or ()
        self.stamped = "t" in names and first.dtype["t"].kind in "iu"
        self.raw_can = spec.kind == "can" and set(_RAW_CAN) | {"data"} <= set(names)
        self.columns = [n for n in names if not (n == "t" and self.stamped)]
        if self.raw_can:
            self.columns = [*_RAW_CAN, "data"]
        self.schema = self._schema()
        self.buffers: dict[str, list[Any]] = {}
        self.rows = 0
        self.nbytes = 0
        self.writer: Any = None
        self.channel_names: dict[str, str] = {}
        self.written = 0

    @staticmethod
    def refuse(data: Any) -> str | None:
        """Why ``data`` cannot be a table, or ``None``."""
        if not isinstance(data, np.ndarray) or data.dtype.names is None:
            what = type(data).__name__
            if isinstance(data, np.ndarray):
                what = f"a {data.dtype} array"
            return f"not a table ({what}; Parquet takes structured arrays of rows)"
        if data.ndim != 1:
            return f"a structured array of shape {data.shape} (rows must be 1-D)"
        for name in data.dtype.names:
            base = data.dtype[name].base
            if base.names is not None or base.kind not in "biufSU":
                return f"field {name!r} of dtype {data.dtype[name]} has no Parquet column"
        return None

    def _type(self, name: str) -> Any:
        pa = self.pa
        if self.raw_can and name == "data":
            return pa.large_binary()
        dt = self.dtype[name]
        base = dt.base
        if base.kind == "S":
            typ = pa.binary()
        elif base.kind == "U":
            typ = pa.string()
        else:
            typ = pa.from_numpy_dtype(base.newbyteorder("="))
        if dt.shape:
            typ = pa.list_(typ, int(np.prod(dt.shape)))
        return typ

    def _schema(self) -> Any:
        pa = self.pa
        signals = self.spec.meta.get("signals") if self.spec.kind == "can" else None
        fields = [
            pa.field("t", pa.int64(), nullable=False),
            pa.field("t_sensor", pa.int64(), nullable=False),
            pa.field("seq", pa.int64(), nullable=False),
        ]
        for name in self.columns:
            meta: dict[str, str] = {}
            if isinstance(signals, Mapping) and isinstance(signals.get(name), Mapping):
                entry = signals[name]
                for key in _SIGNAL_KEYS:
                    if entry.get(key) is not None:
                        meta[key] = str(entry[key])
                if entry.get("choices"):
                    meta["choices"] = json.dumps(entry["choices"], ensure_ascii=False)
                if entry.get("multiplexer") is not None:
                    meta["multiplexer"] = str(entry["multiplexer"])
                    meta["multiplexer_ids"] = json.dumps(list(entry.get("multiplexer_ids", ())))
            if self.dtype[name].shape and not (self.raw_can and name == "data"):
                meta["shape"] = json.dumps(list(self.dtype[name].shape))
            fields.append(pa.field(name, self._type(name), metadata=meta or None))
        info = {
            "hyperframes.sensor": self.spec.name,
            "hyperframes.kind": str(self.spec.kind),
            "hyperframes.meta": json.dumps(dict(self.spec.meta), default=str, ensure_ascii=False),
        }
        return pa.schema(fields, metadata=info)

    def add(self, frame: Frame) -> str | None:
        """Buffer ``frame``'s rows (writing a row group when full); why not, or ``None``."""
        rows = frame.data
        if rows.dtype != self.dtype:
            return f"rows of dtype {rows.dtype} differ from the sensor's first ({self.dtype})"
        n = len(rows)
        if self.raw_can:
            self._learn_channels(frame.meta)
        if n == 0:
            return None
        if self.stamped:
            own = rows["t"].astype(np.int64)
            t_sensor = own
            t = frame.t + (own - own[0])
        else:
            t_sensor = np.full(n, frame.t_sensor, np.int64)
            t = np.full(n, frame.t, np.int64)
        self._put("t", t)
        self._put("t_sensor", t_sensor)
        self._put("seq", np.full(n, frame.seq, np.int64))
        for name in self.columns:
            self._put(name, rows[name])
        self.rows += n
        if self.rows >= ROW_GROUP_ROWS or self.nbytes >= ROW_GROUP_BYTES:
            self.flush()
        return None

    def _put(self, name: str, values: np.ndarray) -> None:
        values = np.array(values, copy=True)  # the frame's payload is not kept alive
        self.buffers.setdefault(name, []).append(values)
        self.nbytes += values.nbytes

    def _learn_channels(self, meta: Mapping[str, Any]) -> None:
        names = meta.get("channel_names")
        if isinstance(names, Mapping):
            self.channel_names.update({str(k): str(v) for k, v in names.items()})

    def _array(self, name: str, values: np.ndarray, dlc: np.ndarray | None) -> Any:
        pa = self.pa
        if self.raw_can and name == "data":
            assert dlc is not None
            return _binary(pa, values, dlc)
        base = values.dtype.base if values.ndim == 1 else values.dtype
        if values.dtype.kind in "SU" or base.kind in "SU":
            flat = values.reshape(len(values), -1) if values.ndim > 1 else values
            typ = pa.binary() if values.dtype.kind == "S" else pa.string()
            if values.ndim > 1:
                inner = pa.array(flat.ravel().tolist(), typ)
                return pa.FixedSizeListArray.from_arrays(inner, flat.shape[1])
            return pa.array(values.tolist(), typ)
        if values.ndim > 1:
            flat = values.reshape(len(values), -1)
            inner = _primitive(pa, flat.ravel())
            return pa.FixedSizeListArray.from_arrays(inner, flat.shape[1])
        return _primitive(pa, values)

    def flush(self) -> None:
        """Write the buffered rows as one row group (or none when nothing is buffered)."""
        if not self.rows:
            return
        joined = {k: np.concatenate(v) for k, v in self.buffers.items()}
        dlc = None
        if self.raw_can:
            dlc = np.where(joined["remote"], 0, joined["dlc"]).astype(np.int64)
        arrays = [_primitive(self.pa, joined[k]) for k in ("t", "t_sensor", "seq")]
        arrays += [self._array(name, joined[name], dlc) for name in self.columns]
        table = self.pa.Table.from_arrays(arrays, schema=self.schema)
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(str(self.path), self.schema, compression="zstd")
        self.writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.written += self.rows
        self.buffers.clear()
        self.rows = 0
        self.nbytes = 0

    def close(self) -> None:
        """Write what is buffered and the file's footer (an empty file when no row came)."""
        self.flush()
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(str(self.path), self.schema, compression="zstd")
        if self.raw_can and self.channel_names:
            add = getattr(self.writer, "add_key_value_metadata", None)
            if add is not None:
                add({"hyperframes.channel_names": json.dumps(self.channel_names)})
        self.writer.close()


def pick_tables(
    names: list[str], kinds: Mapping[str, str], named: bool, out: Path
) -> tuple[list[str], bool]:
    """The sensors a Parquet export writes (``names`` when ``named``, else those of
    :data:`TABLE_KINDS`) and whether ``out`` is one file (a ``.parquet`` name) rather
    than a folder; ``ValueError`` when there is none, or one file for several."""
    picked = list(names) if named else [n for n in names if kinds[n] in TABLE_KINDS]
    if not picked:
        raise ValueError(
            f"--to parquet: the recording has no sensor of kind {', '.join(TABLE_KINDS)}; "
            "name the sensors to write with --sensors"
        )
    single = out.suffix.lower() == ".parquet"
    if single and len(picked) != 1:
        raise ValueError(
            f"-o {out.name} is one Parquet file: name one sensor (--sensors), not "
            f"{', '.join(picked)}; or give a folder (-o tables/) for a file per sensor"
        )
    return picked, single


class ParquetResult:
    """What :func:`export_parquet` wrote: frames and rows per sensor, frames left out."""

    def __init__(self) -> None:
        self.frames: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()
        self.skipped: Counter[tuple[str, str]] = Counter()
        self.files: dict[str, Path] = {}


def export_parquet(
    frames: Iterable[Frame],
    out: Path,
    specs: Mapping[str, SensorSpec],
    *,
    single: bool,
) -> ParquetResult:
    """Write ``frames`` (recorded order) as one Parquet file per sensor (``specs`` gives
    each sensor's kind and meta).

    ``single``: ``out`` is the file of the frames' one sensor; else ``out`` is a folder made here,
    holding ``<sensor>.parquet`` each (the name made safe). A sensor with no table frame
    gets no file; frames that are not tables are counted in ``skipped`` by reason."""
    from recordings.outputs.files._names import inside, safe_filename

    if not single:
        out.mkdir(parents=True, exist_ok=True)
    result = ParquetResult()
    tables: dict[str, _Table] = {}
    try:
        for frame in frames:
            name = frame.sensor
            why = _Table.refuse(frame.data)
            if why is None and name not in tables:
                path = out if single else inside(out, f"{safe_filename(name)}.parquet")
                tables[name] = _Table(path, specs[name], frame.data)
                result.files[name] = path
            if why is None:
                why = tables[name].add(frame)
            if why is None:
                result.frames[name] += 1
                result.rows[name] += len(frame.data)
            else:
                result.skipped[(name, why)] += 1
    finally:
        for table in tables.values():
            table.close()
    return result
