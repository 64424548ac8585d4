"""CanSource on real logs (python-can's ASC, BLF, TRC, CAN FD, error frames; a candump log
from cantools' tests), each checked against python-can reading the same log, and decoded
signals checked against cantools decoding the same frames (real DBC files, and a
hypothesis property over random payloads of every message)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import can
import cantools
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import CanSource
from adapters.can import RAW_DTYPE, CanDecoder
from fusion.errors import ConfigError

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "can"
DATA = Path(__file__).resolve().parents[1] / "data" / "can"
LOGS = [
    "issue_1256.asc",
    "logfile_errorframes.asc",
    "test_CanErrorFrameExt.blf",
    "test_CanFdMessage.asc",
    "test_CanFdMessage.blf",
    "test_CanMessage.asc.gz",
    "test_CanMessage2.blf",
    "test_CanMessage_V1_1.trc",
]


def load(name: str) -> Any:
    """A cantools database of tests/data/can (typed loosely: cantools' union type)."""
    return cantools.database.load_file(str(DATA / name))


def read_all(source: CanSource) -> list[Any]:
    frames: list[Any] = []

    async def main() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    anyio.run(main)
    return frames


def reference(path: Path) -> list[can.Message]:
    kwargs = {"relative_timestamp": False} if ".asc" in path.suffixes else {}
    return list(can.LogReader(str(path), **kwargs))


def lengths_ok(m: can.Message) -> bool:
    size = len(m.data or b"")
    if m.is_fd:
        return size <= 64 and m.dlc == size
    if m.is_remote_frame:
        return m.dlc <= 8
    return size <= 8 and (m.dlc == size or (size == 8 and m.dlc <= 15))


@pytest.mark.parametrize("name", LOGS)
def test_every_frame_of_a_real_log_is_python_cans_frame_or_a_counted_loss(name: str) -> None:
    path = REAL / name
    expected = reference(path)
    source = CanSource(path)
    frames = read_all(source)
    errors = [m for m in expected if m.is_error_frame]
    bad = [m for m in expected if not m.is_error_frame and not lengths_ok(m)]
    good = [m for m in expected if not m.is_error_frame and lengths_ok(m)]
    assert len(frames) == len(good)
    for frame, m in zip(frames, good, strict=True):
        row = frame.data[0]
        assert frame.sensor == "can"
        assert frame.data.dtype == RAW_DTYPE
        assert frame.t_sensor == round(m.timestamp * 1e9) == int(row["t"])
        assert int(row["id"]) == m.arbitration_id
        assert bool(row["extended"]) == m.is_extended_id
        assert bool(row["fd"]) == m.is_fd
        assert bool(row["brs"]) == m.bitrate_switch
        assert bool(row["remote"]) == m.is_remote_frame
        assert bool(row["rx"]) == m.is_rx
        size = len(m.data or b"")  # a remote frame's dlc is the length it asks for
        assert int(row["dlc"]) == (m.dlc if m.is_remote_frame else size)
        assert bytes(row["data"][:size]) == bytes(m.data or b"")
        assert not row["data"][size:].any()
        assert int(row["channel"]) == m.channel
    ledger = source.ledgers()["can"]
    assert ledger.received == len(expected)
    assert ledger.emitted == len(good)
    assert dict(ledger.lost) == {
        k: v for k, v in (("error_frame", len(errors)), ("bad_length", len(bad))) if v
    }


def test_the_error_frames_of_a_vector_log_are_counted_with_their_time() -> None:
    source = CanSource(REAL / "logfile_errorframes.asc")
    read_all(source)
    assert source.errors["error_frame"] == 3
    assert "error frame at" in (source.last_error or "")


def test_a_candump_log_keeps_named_channels_and_fd_frames_as_python_can_reads_them() -> None:
    path = DATA / "candump_cantools_logreader.log"
    expected = reference(path)
    frames = read_all(CanSource(path))
    assert len(frames) == len(expected) == 3
    names = []
    for frame, m in zip(frames, expected, strict=True):
        row = frame.data[0]
        assert int(row["id"]) == m.arbitration_id
        assert bytes(row["data"][: row["dlc"]]) == bytes(m.data)
        assert bool(row["fd"]) == m.is_fd
        assert bool(row["brs"]) == m.bitrate_switch
        assert frame.t_sensor == round(m.timestamp * 1e9)
        names.append(frame.meta["channel_name"])  # each channel named on its first frame
    assert names == ["can2", "can3", "vcan-0"] == [m.channel for m in expected]
    assert [int(f.data[0]["channel"]) for f in frames] == [0, 1, 2]


def candump_log(path: Path, frames: list[tuple[float, int, bytes, bool]]) -> Path:
    lines = []
    for t, can_id, data, extended in frames:
        ident = f"{can_id:08X}" if extended else f"{can_id:03X}"
        lines.append(f"({t:.6f}) can0 {ident}#{data.hex().upper()}")
    path.write_text("\n".join(lines) + "\n")
    return path


def expected_signals(message: Any, data: bytes) -> dict[str, Any]:
    """cantools' decoding; a multiplexer value the database does not list makes cantools
    refuse the frame, where ours keeps it with every multiplexed signal absent (NaN)."""
    try:
        return dict(message.decode(data, decode_choices=False))
    except cantools.database.DecodeError:
        return {s.name: float("nan") for s in message.signals if s.multiplexer_ids}


def close(a: Any, b: Any) -> bool:
    if isinstance(b, float) and np.isnan(b):
        return bool(np.isnan(a))
    return bool(a == b or abs(float(a) - float(b)) <= 1e-9 * abs(float(b)))


@pytest.mark.parametrize(
    "dbc", ["motohawk.dbc", "multiplex.dbc", "signed.dbc", "floating_point.dbc"]
)
def test_signals_of_a_candump_log_equal_cantools_decoding_the_same_frames(
    tmp_path: Path, dbc: str
) -> None:
    db = load(dbc)
    rng = np.random.default_rng(7)
    sent = []
    for k in range(200):
        message = db.messages[k % len(db.messages)]
        payload = bytes(rng.integers(0, 256, message.length, dtype=np.uint8))
        sent.append((1.7e9 + k * 0.01, message.frame_id, payload, message.is_extended_frame))
    log = candump_log(tmp_path / "drive.log", sent)
    source = CanSource(log, database=DATA / dbc, raw=False)
    frames = read_all(source)
    assert len(frames) == len(sent)
    for frame, (_, can_id, payload, _) in zip(frames, sent, strict=True):
        message = db.get_message_by_frame_id(can_id)
        assert frame.sensor == f"can.{message.name}"
        expected = expected_signals(message, payload)
        row = frame.data[0]
        for name, value in expected.items():
            assert close(row[name], value), (name, payload.hex())
    assert source.ledgers()[f"can.{db.messages[0].name}"].emitted > 0


def test_signal_units_scaling_and_choices_are_in_the_sensors_meta() -> None:
    source = CanSource(DATA / "candump_cantools_logreader.log", database=DATA / "choices.dbc")
    spec = next(s for s in source.specs if s.name == "can.Foo")
    foo = spec.meta["signals"]["Foo"]
    assert foo["choices"]["-5"] == "A negative value"
    motohawk = CanSource(DATA / "candump_cantools_logreader.log", database=DATA / "motohawk.dbc")
    spec = next(s for s in motohawk.specs if s.name == "can.ExampleMessage")
    assert spec.meta["signals"]["Temperature"]["unit"] == "degK"
    assert spec.meta["signals"]["Temperature"]["scale"] == 0.01
    assert all(s.kind == "can" for s in motohawk.specs)
    # a database's messages may never come on a bus: optional (noted, not failed, by record)
    optional = {s.name: s.optional for s in motohawk.specs}
    assert optional == {"can": False, "can.ExampleMessage": True}


def test_ids_the_database_does_not_know_are_kept_raw_or_counted(tmp_path: Path) -> None:
    log = candump_log(
        tmp_path / "x.log",
        [(1.0, 0x1F0, bytes(8), False), (1.1, 0x7FF, b"\x01", False), (1.2, 0x1F0, b"\x00", False)],
    )
    kept = CanSource(log, database=DATA / "motohawk.dbc")
    frames = read_all(kept)
    assert [f.sensor for f in frames] == ["can", "can.ExampleMessage", "can", "can"]
    assert dict(kept.ledgers()["can"].lost) == {}
    assert kept.errors["bad_length"] == 1  # the short 0x1F0 frame: raw kept, not decoded
    counted = CanSource(log, database=DATA / "motohawk.dbc", unknown="count", raw=False)
    frames = read_all(counted)
    assert [f.sensor for f in frames] == ["can.ExampleMessage", "can"]
    ledger = counted.ledgers()["can"]
    assert dict(ledger.lost) == {"unknown_id": 1}
    assert counted.ledgers()["can.ExampleMessage"].received == 1


def test_ids_given_get_a_sensor_each(tmp_path: Path) -> None:
    log = candump_log(
        tmp_path / "x.log", [(1.0, 0x1A0, b"\x01", False), (1.1, 0x1B0, b"\x02", False)]
    )
    source = CanSource(log, ids=[0x1A0])
    assert [s.name for s in source.specs] == ["can", "can.0x1A0"]
    assert [f.sensor for f in read_all(source)] == ["can.0x1A0", "can"]


def test_a_source_needs_exactly_one_input() -> None:
    with pytest.raises(ConfigError, match="exactly one of path="):
        CanSource()
    with pytest.raises(ConfigError, match="exactly one of path="):
        CanSource(DATA / "candump_cantools_logreader.log", interface="virtual")
    with pytest.raises(ConfigError, match="cannot read CAN database"):
        CanSource(DATA / "candump_cantools_logreader.log", database=DATA / "PROVENANCE.md")


DATABASES = {
    name: load(name)
    for name in ("motohawk.dbc", "multiplex.dbc", "signed.dbc", "floating_point.dbc", "fd_test.dbc")
}


@settings(max_examples=150, deadline=None)
@given(
    db=st.sampled_from(sorted(DATABASES)),
    index=st.integers(0, 1000),
    payload=st.binary(min_size=64, max_size=64),
)
def test_vectorised_decoding_equals_cantools_for_any_payload(
    db: str, index: int, payload: bytes
) -> None:
    database = DATABASES[db]
    message = database.messages[index % len(database.messages)]
    data = payload[: message.length]
    m = can.Message(
        timestamp=1.0,
        arbitration_id=message.frame_id,
        is_extended_id=message.is_extended_frame,
        is_fd=message.length > 8,
        data=data,
    )
    events = CanDecoder("can", database=database, raw=False).push([m])
    assert len(events) == 1
    row = events[0].row[0]  # type: ignore[union-attr]
    expected = expected_signals(message, data)
    for name, value in expected.items():
        assert close(row[name], value), (db, message.name, name)
    for signal in message.signals:  # absent under this multiplexer value: NaN
        if signal.multiplexer_ids and signal.name not in expected:
            assert np.isnan(row[signal.name])
