"""CAN sensors to Parquet: ``hyperframes record`` of CAN logs written by python-can's own
writers (BLF, ASC) with frames of cantools' DBC files, and of python-can's real logs, then
``hyperframes export --to parquet``; read back with pyarrow (not ours) and compared with
cantools decoding python-can's read of the same log (every signal of every frame, with its
unit in the field's metadata) and with python-can's frames (ids, flags, payload bytes,
stamps). Row groups stay bounded, and so does the writer's memory, however long the input."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import can
import cantools
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.can import RAW_DTYPE
from fusion._frames import Frame, SensorSpec

ROOT = Path(__file__).resolve().parents[2]
REAL_CAN = ROOT / ".." / "shared" / "data" / "real" / "can"
DATA = ROOT / "tests" / "data" / "can"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def python_can_log(path: Path, dbc: str, n: int) -> Path:
    """A log written by python-can's writer for ``path``'s suffix: ``n`` frames of every
    message of ``dbc`` in turn, random payloads (so every signal spans its range)."""
    db: Any = cantools.database.load_file(str(DATA / dbc))
    rng = np.random.default_rng(5)
    with can.Logger(str(path)) as writer:
        for k in range(n):
            message = db.messages[k % len(db.messages)]
            payload = bytes(rng.integers(0, 256, message.length, dtype=np.uint8))
            writer.on_message_received(
                can.Message(
                    timestamp=1.7e9 + k * 0.001,
                    arbitration_id=message.frame_id,
                    is_extended_id=message.is_extended_frame,
                    data=payload,
                    channel=0,
                )
            )
    return path


def reference(path: Path) -> list[can.Message]:
    kwargs = {"relative_timestamp": False} if ".asc" in path.suffixes else {}
    return list(can.LogReader(str(path), **kwargs))


def record(tmp_path: Path, log: Path, database: str | None, block: int) -> Path:
    config = tmp_path / "can.toml"
    lines = ["[[sources]]", 'type = "can"', 'name = "bus"', f'path = "{log}"', f"block = {block}"]
    if database:
        lines.append(f'database = "{DATA / database}"')
    config.write_text("\n".join(lines) + "\n")
    out = tmp_path / "can.hfr"
    done = cli("record", str(config), "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def same(value: Any, expected: Any) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(value, float) and math.isnan(value)
    return bool(value == expected or abs(value - expected) <= 1e-9 * abs(expected))


@pytest.mark.parametrize(
    ("suffix", "dbc", "block"),
    [(".blf", "vehicle.dbc", 64), (".asc", "motohawk.dbc", 1), (".blf", "floating_point.dbc", 7)],
)
def test_every_signal_in_parquet_equals_cantools_decoding_python_cans_read(
    tmp_path: Path, suffix: str, dbc: str, block: int
) -> None:
    log = python_can_log(tmp_path / f"drive{suffix}", dbc, 600)
    hfr = record(tmp_path, log, dbc, block)
    tables = tmp_path / "tables"
    done = cli("export", str(hfr), "-o", str(tables), "--to", "parquet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote" in done.stdout

    db: Any = cantools.database.load_file(str(DATA / dbc))
    frames = reference(log)
    by_message: dict[str, list[can.Message]] = {}
    for m in frames:
        by_message.setdefault(db.get_message_by_frame_id(m.arbitration_id).name, []).append(m)
    files = sorted(p.name for p in tables.iterdir())
    assert files == sorted([f"bus.{name}.parquet" for name in by_message] + ["bus.parquet"])

    for name, sent in by_message.items():
        message = db.get_message_by_name(name)
        table = pq.read_table(tables / f"bus.{name}.parquet")
        assert table.num_rows == len(sent)
        assert table.column_names[:3] == ["t", "t_sensor", "seq"]
        assert table.column("t_sensor").to_pylist() == [round(m.timestamp * 1e9) for m in sent]
        columns = {c: table.column(c).to_pylist() for c in table.column_names}
        for k, m in enumerate(sent):
            decoded = message.decode(m.data, decode_choices=False)
            for signal, value in decoded.items():
                assert same(columns[signal][k], value), (name, signal, m.data.hex())
        for signal in message.signals:  # the unit and scaling ride in the field metadata
            meta = table.schema.field(signal.name).metadata or {}
            assert float(meta[b"scale"]) == signal.scale
            assert float(meta[b"offset"]) == signal.offset
            assert meta.get(b"unit", b"").decode() == (signal.unit or "")
            if signal.choices:
                names = json.loads(meta[b"choices"])
                assert names == {str(int(v)): str(c) for v, c in signal.choices.items()}
        info = table.schema.metadata
        assert info[b"hyperframes.sensor"].decode() == f"bus.{name}"
        assert info[b"hyperframes.kind"] == b"can"

    raw = pq.read_table(tables / "bus.parquet")
    assert raw.num_rows == len(frames)
    assert raw.column("id").to_pylist() == [m.arbitration_id for m in frames]
    assert raw.column("extended").to_pylist() == [m.is_extended_id for m in frames]
    assert raw.column("data").to_pylist() == [bytes(m.data) for m in frames]
    assert raw.column("t_sensor").to_pylist() == [round(m.timestamp * 1e9) for m in frames]
    # block frames: rows of one frame share its seq, their t keeps the bus spacing
    seq = raw.column("seq").to_pylist()
    assert seq == sorted(seq)
    assert len(set(seq)) == -(-len(frames) // block)
    t = np.array(raw.column("t").to_pylist())
    assert np.array_equal(np.diff(t), np.diff(raw.column("t_sensor").to_numpy()))


def lengths_ok(m: can.Message) -> bool:
    size = len(m.data or b"")
    if m.is_fd:
        return size <= 64 and m.dlc == size
    if m.is_remote_frame:
        return m.dlc <= 8
    return size <= 8 and (m.dlc == size or (size == 8 and m.dlc <= 15))


@pytest.mark.parametrize(
    "name", ["issue_1256.asc", "test_CanFdMessage.blf", "test_CanMessage_V1_1.trc"]
)
def test_raw_frames_of_real_logs_in_parquet_equal_python_can(tmp_path: Path, name: str) -> None:
    log = REAL_CAN / name
    hfr = record(tmp_path, log, None, 32)
    out = tmp_path / "raw.parquet"  # one sensor: -o *.parquet is the file, --to implied
    done = cli("export", str(hfr), "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    expected = [m for m in reference(log) if not m.is_error_frame and lengths_ok(m)]
    table = pq.read_table(out)
    assert table.num_rows == len(expected)
    rows = table.to_pylist()
    for row, m in zip(rows, expected, strict=True):
        assert row["id"] == m.arbitration_id
        assert row["extended"] == m.is_extended_id
        assert row["remote"] == m.is_remote_frame
        assert row["fd"] == m.is_fd
        assert row["brs"] == m.bitrate_switch
        assert row["rx"] == m.is_rx
        assert row["channel"] == m.channel
        assert row["t_sensor"] == round(m.timestamp * 1e9)
        # FD payloads of 64 bytes fit here (they do not fit can_msgs/msg/Frame)
        assert row["data"] == (b"" if m.is_remote_frame else bytes(m.data))
        assert row["dlc"] == (m.dlc if m.is_remote_frame else len(m.data))
    assert table.schema.field("data").type.equals(pa.large_binary())


def test_a_parquet_file_for_several_sensors_is_refused_with_what_to_do(tmp_path: Path) -> None:
    log = python_can_log(tmp_path / "drive.blf", "motohawk.dbc", 10)
    hfr = record(tmp_path, log, "motohawk.dbc", 1)
    done = cli("export", str(hfr), "-o", str(tmp_path / "all.parquet"))
    assert done.returncode == 2
    assert "one Parquet file: name one sensor (--sensors)" in done.stdout + done.stderr
    assert not (tmp_path / "all.parquet").exists()


def raw_frames(n: int, block: int) -> Iterator[Frame]:
    rng = np.random.default_rng(1)
    for k in range(0, n, block):
        rows = np.zeros(block, RAW_DTYPE)
        rows["t"] = (np.arange(block) + k) * 1000
        rows["id"] = rng.integers(0, 0x7FF, block)
        rows["dlc"] = 8
        rows["data"][:, :8] = rng.integers(0, 256, (block, 8))
        yield Frame("bus", k // block, int(rows["t"][0]), rows)


def test_row_groups_and_memory_stay_bounded_however_long_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordings.outputs.files import _parquet as parquet

    monkeypatch.setattr(parquet, "ROW_GROUP_ROWS", 4096)
    spec = {"bus": SensorSpec("bus", kind="can")}
    peaks = []
    for n in (40_960, 409_600):
        out = tmp_path / f"{n}.parquet"
        tracemalloc.start()
        result = parquet.export_parquet(raw_frames(n, 256), out, spec, single=True)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert result.rows["bus"] == n
        meta = pq.ParquetFile(out).metadata
        assert meta.num_rows == n
        assert meta.num_row_groups == n // 4096
        assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) == 4096
    # ten times the rows, the same buffers: the peak does not grow with the length
    assert peaks[1] < 1.5 * peaks[0], peaks


FIELD_TYPES = ["<i1", "<u2", ">i4", "<u8", "<f4", ">f8", "?", "S4", "U3"]


@settings(max_examples=40, deadline=None)
@given(
    types=st.lists(st.sampled_from(FIELD_TYPES), min_size=1, max_size=5),
    shaped=st.booleans(),
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_table_of_rows_reads_back_from_parquet_as_written(
    tmp_path_factory: pytest.TempPathFactory,
    types: list[str],
    shaped: bool,
    sizes: list[int],
    seed: int,
) -> None:
    """Rows of any scalar, byte-string, text and sub-array fields, in frames of any size,
    read back by pyarrow equal to the frames' rows (sub-arrays as fixed-size lists)."""
    from recordings.outputs.files._parquet import export_parquet

    fields: list[Any] = [("t", "<i8")] + [(f"f{k}", t) for k, t in enumerate(types)]
    if shaped:
        fields.append(("vec", "<f4", (2, 3)))
    dtype = np.dtype(fields)
    rng = np.random.default_rng(seed)
    frames, t = [], 0
    for seq, n in enumerate(sizes):
        raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).tobytes()
        rows = np.frombuffer(raw, dtype).copy()
        for name in dtype.names or ():
            if dtype[name].base.kind == "f":
                rows[name] = rng.normal(size=rows[name].shape)  # no NaN payloads to compare
            if dtype[name].kind == "U":
                rows[name] = [f"é{k}" for k in range(n)]
        rows["t"] = t + np.arange(n) * 1000
        t += n * 1000
        frames.append(Frame("s", seq, int(rows["t"][0]) if n else t, rows, t_sensor=7))
    out = tmp_path_factory.mktemp("pq") / "s.parquet"
    result = export_parquet(iter(frames), out, {"s": SensorSpec("s", "timeseries")}, single=True)
    assert result.frames["s"] == len(sizes)
    table = pq.read_table(out)
    expected = np.concatenate([f.data for f in frames])
    assert table.num_rows == len(expected)
    assert table.column("t_sensor").to_pylist() == expected["t"].tolist()
    assert table.column("seq").to_pylist() == [f.seq for f in frames for _ in f.data]
    for name in dtype.names or ():
        if name == "t":
            continue
        got = table.column(name).to_pylist()
        want = expected[name]
        if want.ndim > 1:
            assert got == want.reshape(len(want), 6).tolist()
        elif want.dtype.kind == "S":
            assert got == [bytes(v) for v in want.tolist()]
        else:
            assert got == want.tolist(), name


def test_frames_that_are_not_tables_are_counted_with_the_reason(tmp_path: Path) -> None:
    from recordings.outputs.files._parquet import export_parquet

    rows = np.zeros(2, [("t", "<i8"), ("v", "<f8")])
    frames = [
        Frame("s", 0, 0, rows),
        Frame("s", 1, 1, np.zeros((4, 4), np.uint8)),
        Frame("s", 2, 2, np.zeros(2, [("t", "<i8"), ("w", "<f4")])),
        Frame("s", 3, 3, rows),
    ]
    result = export_parquet(
        iter(frames), tmp_path / "s.parquet", {"s": SensorSpec("s", "timeseries")}, single=True
    )
    assert result.frames["s"] == 2
    reasons = sorted(why for (_s, why) in result.skipped)
    assert len(reasons) == 2
    assert reasons[0].startswith("not a table (a uint8 array")
    assert reasons[1].startswith("rows of dtype")
    assert pq.read_table(tmp_path / "s.parquet").num_rows == 4
