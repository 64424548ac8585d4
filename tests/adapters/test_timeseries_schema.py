"""Schemas from the data, not from its first item: ``#`` headers (TUM, EuRoC), row widths
from a majority, values beyond the header counted, and the ledger's sum for any mix of
good and bad rows, records and datagram contents (hypothesis).

Real input: the TUM RGB-D fr1/xyz ground truth (tests/data/timeseries, three ``#`` lines),
the EuRoC ground truth of ../shared/data/real/csv (a ``#timestamp`` header), and the
EuRoC poses written as a TUM trajectory (``# timestamp tx ty tz qx qy qz qw``,
space-separated, seconds) the way the EuRoC-to-TUM converters write them; numpy's
``loadtxt`` (which skips ``#`` lines) is the reference reader.
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from adapters._timeseries import TimeSeriesSource
from adapters._timeseries_records import RecordPacker

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "csv"
EUROC_GT = REAL / "kimera_euroc_gt0_data.csv"
TUM_FR1_XYZ = (
    Path(__file__).resolve().parents[1] / "data" / "timeseries" / "tum_fr1_xyz_groundtruth_head.txt"
)
TUM_HEADER = "# timestamp tx ty tz qx qy qz qw"


async def read_all(source: TimeSeriesSource) -> np.ndarray:
    async with source:
        frames = [f.data async for f in source.frames()]
    return np.concatenate(frames) if frames else np.empty(0)


def tum_from_euroc(path: Path, rows: int) -> list[str]:
    """EuRoC ground-truth rows as TUM lines: seconds, position, quaternion x y z w."""
    with EUROC_GT.open(newline="") as f:
        reader = csv.reader(f)
        next(reader)
        lines = [TUM_HEADER]
        for row, _ in zip(reader, range(rows), strict=False):
            seconds = Decimal(row[0]) / 10**9
            tx, ty, tz, qw, qx, qy, qz = row[1:8]
            lines.append(" ".join([str(seconds), tx, ty, tz, qx, qy, qz, qw]))
    path.write_text("\n".join(lines) + "\n")
    return lines


async def test_the_real_tum_ground_truth_names_all_eight_columns() -> None:
    """TUM's own file: three # lines, the last one the header, as the issue's report read it."""
    source = TimeSeriesSource.from_csv(TUM_FR1_XYZ, delimiter=" ", time_column="#", name="gt")
    rows = await read_all(source)
    assert rows.dtype.names == ("t", "tx", "ty", "tz", "qx", "qy", "qz", "qw")
    reference = np.loadtxt(TUM_FR1_XYZ, comments="#")
    assert len(rows) == len(reference) == 40
    for i, name in enumerate(rows.dtype.names[1:], start=1):
        np.testing.assert_array_equal(rows[name], reference[:, i])  # the 8th value kept
    assert int(rows["t"][0]) == 1305031098_665900000  # exact to the ns
    assert source.errors == {}
    ledger = source.ledgers()["gt"]
    assert (ledger.received, ledger.emitted, ledger.lost) == (40, 40, {})


async def test_euroc_poses_as_a_tum_trajectory_name_all_eight_columns(tmp_path: Path) -> None:
    path = tmp_path / "groundtruth.txt"
    lines = tum_from_euroc(path, 200)
    source = TimeSeriesSource.from_csv(path, delimiter=" ", time_column="#", name="gt")
    rows = await read_all(source)
    assert rows.dtype.names == ("t", "tx", "ty", "tz", "qx", "qy", "qz", "qw")
    reference = np.loadtxt(path, comments="#")  # numpy skips the # line
    assert len(rows) == len(reference) == 200
    for i, name in enumerate(("tx", "ty", "tz", "qx", "qy", "qz", "qw"), start=1):
        np.testing.assert_array_equal(rows[name], reference[:, i])
    assert int(rows["t"][0]) == 1403715524922140000  # exact: no float on the way
    assert lines[1].startswith("1403715524.92214")
    assert source.errors == {}
    ledger = source.ledgers()["gt"]
    assert (ledger.unit, ledger.received, ledger.emitted, ledger.lost) == ("row", 200, 200, {})


async def test_tum_rows_that_do_not_fit_are_counted_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "groundtruth.txt"
    lines = tum_from_euroc(path, 40)
    lines[10] += " 0.5 0.25"  # two values beyond the header
    lines[20] = " ".join(lines[20].split()[:5])  # cut short
    lines.insert(1, "# poses of the body in the world frame")  # a comment after the header
    lines.insert(0, "# ground truth trajectory")  # ... and one before it
    path.write_text("\n".join(lines) + "\n")
    source = TimeSeriesSource.from_csv(path, delimiter=" ", time_column="timestamp", name="gt")
    rows = await read_all(source)
    assert rows.dtype.names == ("t", "tx", "ty", "tz", "qx", "qy", "qz", "qw")
    assert len(rows) == 39
    assert source.errors == {"extra_columns": 1, "schema_mismatch": 1}
    ledger = source.ledgers()["gt"]
    assert ledger.received == 40 == ledger.emitted + ledger.lost_total
    assert ledger.lost == {"schema_mismatch": 1}  # the row with extras is kept


async def test_rows_wider_than_their_header_keep_the_extra_values(tmp_path: Path) -> None:
    path = tmp_path / "short_header.txt"
    lines = tum_from_euroc(path, 30)
    lines[0] = "# timestamp tx ty tz qx qy qz"  # seven names for eight values
    path.write_text("\n".join(lines) + "\n")
    source = TimeSeriesSource.from_csv(path, delimiter=" ", time_column="#", name="gt")
    rows = await read_all(source)
    assert rows.dtype.names == ("t", "tx", "ty", "tz", "qx", "qy", "qz", "column_8")
    np.testing.assert_array_equal(rows["column_8"], np.loadtxt(path, comments="#")[:, 7])
    assert source.errors == {}


async def test_the_euroc_ground_truth_reads_with_or_without_the_hash() -> None:
    for column in ("#timestamp", "timestamp"):
        source = TimeSeriesSource.from_csv(EUROC_GT, time_column=column, time_unit="ns")
        rows = await read_all(source)
        assert len(rows) == 3340
        assert len(rows.dtype.names or ()) == 17
        assert rows.dtype.names[1] == "p_RS_R_x [m]"  # type: ignore[index]
        assert int(rows["t"][0]) == 1403715524922140000
        assert int(rows["t"][-1]) == 1403715608397140000
        assert set(np.diff(rows["t"]).tolist()) == {25_000_000}
        assert source.errors == {}


async def test_a_bad_first_row_does_not_set_the_width(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("t,a,b\n0.0,1\n" + "".join(f"{i}.0,{i},{i}\n" for i in range(1, 20)))
    source = TimeSeriesSource.from_csv(path, name="s")
    rows = await read_all(source)
    assert rows.dtype.names == ("t", "a", "b")
    assert len(rows) == 19
    assert source.errors == {"schema_mismatch": 1}
    assert "line 2: 2 values, the rows hold 3" in str(source.last_error)


# -- the ledger's sum, for any mix of good and bad units ------------------------------------

CSV_ROWS = st.one_of(
    st.builds(lambda t: f"{t}.5,1,2", st.integers(0, 10**6)),  # good
    st.just("x,1,2"),  # bad time
    st.just("1.0,abc,2"),  # bad value
    st.just("1.0,1"),  # too short
    st.just("1.0,1,2,3"),  # an extra value (kept)
    st.just(""),  # blank: not a row
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(CSV_ROWS, max_size=40))
async def test_csv_rows_all_end_as_frames_or_counted_losses(
    tmp_path: Path, lines: list[str]
) -> None:
    path = tmp_path / "p.csv"
    path.write_text("t,a,b\n" + "\n".join(lines) + "\n")
    source = TimeSeriesSource.from_csv(path, name="p", block=3)
    rows = await read_all(source)
    ledger = source.ledgers()["p"]
    assert ledger.received == sum(1 for line in lines if line)
    assert ledger.received == ledger.emitted + ledger.lost_total
    assert ledger.emitted == len(rows)


RECORD = st.one_of(
    st.fixed_dictionaries({"t": st.integers(0, 10**9), "v": st.floats(-1, 1)}),  # good
    st.fixed_dictionaries({"t": st.integers(0, 10**9)}),  # no values
    st.fixed_dictionaries({"t": st.just("soon"), "v": st.just(1.0)}),  # bad stamp
    st.fixed_dictionaries({"t": st.integers(0, 10**9), "v": st.just(1.0), "w": st.just(2)}),
    st.just(7),  # not a mapping
    st.fixed_dictionaries({"t": st.integers(0, 10**9), "q": st.just([1.0, 0.0])}),
)


def payload(records: list[Any]) -> bytes:
    return b"\n".join(json.dumps(r).encode() for r in records)


@settings(max_examples=60, deadline=None)
@given(units=st.lists(st.lists(RECORD, max_size=4), max_size=30))
def test_datagrams_of_records_all_end_as_rows_or_counted_losses(units: list[list[Any]]) -> None:
    """The packer's weights: each datagram settles once, in a row or as a loss."""
    source = TimeSeriesSource.from_iterable([], name="u")
    packer = RecordPacker("t", "ns", None)
    settled = 0
    for i, records in enumerate(units):
        source.count_received()
        rows, weights = packer.pack(records, source, arrival=i, what=f"datagram {i}")
        assert len(rows) == len(weights)
        settled += int(weights.sum())
    rows, weights = packer.finish(source)
    settled += int(weights.sum())
    ledger = source.ledgers()["u"]
    assert ledger.received == len(units)
    assert ledger.received == settled + ledger.lost_total


@pytest.mark.parametrize("fields", [None, ["v"]])
async def test_records_from_an_iterable_all_end_as_frames_or_counted_losses(
    fields: list[str] | None,
) -> None:
    records: list[Any] = [{"t": i, "v": 1.0} for i in range(20)]
    records[0] = {"t": 0}
    records[5] = {"t": "x", "v": 1.0}
    records[9] = 9
    records[12] = {"t": 3, "v": 1.0}  # backwards
    source = TimeSeriesSource.from_iterable(records, name="r", fields=fields, block=4)
    rows = await read_all(source)
    ledger = source.ledgers()["r"]
    assert ledger.unit == "record"
    assert ledger.received == 20 == ledger.emitted + ledger.lost_total
    assert ledger.emitted == len(rows) == 16


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and +-inf too: json writes them, only json.loads reads them back
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.dictionaries(st.text(), _JSON_VALUES, max_size=8),
    st.sampled_from(["", "\n", " \n", "\r\n"]),
)
def test_a_one_record_datagram_decodes_as_json_loads_reads_it(
    record: dict[str, Any], end: str
) -> None:
    from adapters._timeseries_records import decode_datagram

    payload = (json.dumps(record) + end).encode()
    decoded = decode_datagram(payload, "jsonl")
    assert json.dumps(decoded) == json.dumps([json.loads(payload)])  # NaN != NaN: as text
    assert [type(v) for v in decoded[0].values()] == [type(v) for v in record.values()]


@pytest.mark.parametrize(
    "payload",
    [b'{"t": ' + b"9" * 5000 + b"}", b'{"t": 1} x', b"[" * 5000 + b"]" * 5000, b"\xff\xfe"],
)
def test_a_bad_one_record_datagram_is_refused_as_json_loads_refuses_it(payload: bytes) -> None:
    from adapters._timeseries_records import decode_datagram

    with pytest.raises(ValueError, match="not JSON lines"):
        decode_datagram(payload, "jsonl")


# -- a bad value costs that sample's field, never every later sample's ----------------

BAD_VALUES = st.one_of(
    st.text().filter(lambda s: not _is_number(s)),  # "1.5" is read as a number
    st.lists(st.text(), min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)  # (a null is NaN, as JavaScript's JSON.stringify writes NaN: not a bad value)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def imu_sample(i: int, ax: Any) -> dict[str, Any]:
    return {"t": 1_000_000 * i, "ax": ax, "ay": -0.25 * i, "az": 9.81}


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(9, 30),
    bad=st.dictionaries(st.integers(0, 29), BAD_VALUES, max_size=10),
)
def test_a_bad_value_costs_that_samples_field_and_every_good_sample_keeps_it(
    count: int, bad: dict[int, Any]
) -> None:
    """For any positions of bad ``ax`` values (text, lists, maps) among good ones
    (the first eight not all bad), each datagram of one sample: every good sample's
    ``ax`` is kept, each bad one is NaN in its sample and counted."""
    bad = {i: v for i, v in bad.items() if i < count}
    assume(any(i not in bad for i in range(8)))
    source = TimeSeriesSource.from_iterable([], name="imu")
    packer = RecordPacker("t", "ns", None)
    rows = []
    for i in range(count):
        source.count_received()
        got, weights = packer.pack([imu_sample(i, bad.get(i, 0.5 * i))], source, arrival=i)
        assert list(weights) == [1] * len(got)
        rows += list(got)
    assert packer.finish(source)[0].size == 0
    assert packer.dtype is not None
    assert packer.dtype.names == ("t", "ax", "ay", "az")
    assert [int(r["t"]) for r in rows] == [1_000_000 * i for i in range(count)]
    for i, row in enumerate(rows):
        if i in bad:
            assert np.isnan(row["ax"])
        else:
            assert row["ax"] == 0.5 * i
        assert row["ay"] == -0.25 * i
    assert source.errors == ({"bad_value": len(bad)} if bad else {})
    ledger = source.ledgers()["imu"]
    assert ledger.received == count
    assert ledger.lost_total == 0


@pytest.mark.parametrize("at", [0, 12])  # among the eight the schema is learned from; later
@pytest.mark.parametrize("value", [["0"], [1.5], ["nan"]])
def test_a_one_item_list_is_a_bad_value_not_its_item(at: int, value: list[Any]) -> None:
    """Found by the bad-value property (count=9, bad={0: ['0']}): a sample whose row failed
    was repaired field by field by assigning to the column, which spread ``["0"]`` over
    it as 0.0; the whole row's conversion rejects any list for a float field."""
    source = TimeSeriesSource.from_iterable([], name="imu")
    packer = RecordPacker("t", "ns", None)
    rows = []
    for i in range(16):
        source.count_received()
        rows += list(packer.pack([imu_sample(i, value if i == at else 0.5 * i)], source)[0])
    assert len(rows) == 16
    assert np.isnan(rows[at]["ax"])
    assert rows[at]["ay"] == -0.25 * at
    assert [float(r["ax"]) for i, r in enumerate(rows) if i != at] == [
        0.5 * i for i in range(16) if i != at
    ]
    assert source.errors == {"bad_value": 1}


def test_a_repaired_row_keeps_a_vector_field_as_the_whole_row_would() -> None:
    """The field-by-field repair converts as the row does: a vector field takes a list of
    its length or one number for every item; only the float field that fits nothing is NaN."""
    dtype = np.dtype([("acc", "<f8", (3,)), ("ax", "<f8")])
    source = TimeSeriesSource.from_iterable([], name="imu")
    packer = RecordPacker("t", "ns", dtype)
    records = [
        {"t": 1, "acc": [1, 2, 3], "ax": "x"},
        {"t": 2, "acc": 5.0, "ax": {"a": 1}},
        {"t": 3, "acc": [1, 2, 3], "ax": ["0"]},
    ]
    rows, weights = packer.pack(records, source)
    assert rows["acc"].tolist() == [[1, 2, 3], [5, 5, 5], [1, 2, 3]]
    assert np.isnan(rows["ax"]).all()
    assert list(weights) == [0, 0, 1]
    assert source.errors == {"bad_value": 3}


async def test_live_udp_samples_with_bad_values_among_the_first_eight_keep_their_fields() -> None:
    """The reported case, on a real socket: ``ax`` a string, a list and a map among the
    first eight datagrams; every later frame still has ``ax``."""
    import socket

    import anyio

    values: list[Any] = [0.5 * i for i in range(40)]
    values[1], values[4], values[6] = "n/a", [1.0, "x"], {"g": 9.81}
    source = TimeSeriesSource.from_udp(0, name="imu", kind="imu")
    got: list[np.ndarray] = []
    with anyio.fail_after(10):
        async with source, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in source.frames():
                    got.append(frame.data)
                    if sum(len(d) for d in got) == len(values):
                        tg.cancel_scope.cancel()

            tg.start_soon(consume)
            port = await source.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for i, ax in enumerate(values):
                    sock.sendto(json.dumps(imu_sample(i, ax)).encode(), ("127.0.0.1", port))
    rows = np.concatenate(got)
    assert rows.dtype.names == ("t", "ax", "ay", "az")
    ax = rows["ax"]
    assert np.isnan(ax[[1, 4, 6]]).all()
    good = [i for i in range(40) if i not in (1, 4, 6)]
    assert list(ax[good]) == [0.5 * i for i in good]
    assert source.errors == {"bad_value": 3}
    ledger = source.ledgers()["imu"]
    assert ledger.received == ledger.emitted == 40
