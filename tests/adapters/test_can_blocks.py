"""CanSource's block path (``block > 1``: a frame per ``block`` rows of a sensor, no Python
work per CAN frame) gives the rows and the ledger of the frame-per-CAN-frame path, on
python-can's real logs (checked against python-can reading them) and on cantools' DBC
files (signals checked against cantools), and a hypothesis property over mixed logs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import can
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import CanSource
from adapters.can import Block
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


def read_all(source: CanSource) -> list[Any]:
    frames: list[Any] = []

    async def main() -> None:
        async with source:
            async for batch in source.frame_batches():
                frames.extend(batch)

    anyio.run(main)
    return frames


def rows_by_sensor(frames: list[Any]) -> dict[str, np.ndarray]:
    parts: dict[str, list[np.ndarray]] = defaultdict(list)
    for frame in frames:
        parts[frame.sensor].append(frame.data)
    return {sensor: np.concatenate(p) for sensor, p in parts.items()}


def same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal structured rows, NaN equal to NaN in float fields."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return all(
        np.array_equal(a[f], b[f], equal_nan=a.dtype[f].kind == "f") for f in a.dtype.names or ()
    )


def same_ledgers(a: CanSource, b: CanSource) -> None:
    for sensor, ledger in a.ledgers().items():
        other = b.ledgers()[sensor]
        assert (ledger.received, ledger.emitted, dict(ledger.lost)) == (
            other.received,
            other.emitted,
            dict(other.lost),
        ), sensor
        assert ledger.received == ledger.emitted + sum(ledger.lost.values()), sensor
    assert a.errors == b.errors


@pytest.mark.parametrize("name", LOGS)
@pytest.mark.parametrize("block", [2, 64, 5000])
def test_blocks_of_a_real_log_hold_the_rows_and_ledger_of_one_frame_each(
    name: str, block: int
) -> None:
    path = REAL / name
    single = CanSource(path)
    one = read_all(single)
    blocked = CanSource(path, block=block)
    frames = read_all(blocked)
    kwargs = {"relative_timestamp": False} if ".asc" in path.suffixes else {}
    good = [m for m in can.LogReader(str(path), **kwargs) if not m.is_error_frame]
    same_ledgers(blocked, single)
    if not one:  # error frames only
        assert not frames
        return
    rows = rows_by_sensor(frames)
    assert np.array_equal(rows["can"], np.concatenate([f.data for f in one]))
    assert all(len(f.data) == block for f in frames[:-1])  # one sensor: whole blocks
    assert [f.t_sensor for f in frames] == [int(f.data["t"][0]) for f in frames]
    assert [f.seq for f in frames] == list(range(len(frames)))
    ids = {m.arbitration_id for m in good}
    assert set(rows["can"]["id"].tolist()) <= ids
    same_ledgers(blocked, single)


@pytest.mark.parametrize(
    "dbc", ["motohawk.dbc", "multiplex.dbc", "signed.dbc", "floating_point.dbc", "vehicle.dbc"]
)
def test_decoded_blocks_equal_the_decoded_frames_and_cantools(tmp_path: Path, dbc: str) -> None:
    import cantools

    db: Any = cantools.database.load_file(str(DATA / dbc))
    rng = np.random.default_rng(3)
    lines = []
    sent = []
    for k in range(300):
        message = db.messages[int(rng.integers(len(db.messages)))]
        size = message.length if k % 17 else max(0, message.length - 1)  # some too short
        payload = bytes(rng.integers(0, 256, size, dtype=np.uint8))
        ident = (
            f"{message.frame_id:08X}" if message.is_extended_frame else f"{message.frame_id:03X}"
        )
        lines.append(f"({1.7e9 + k * 0.01:.6f}) can0 {ident}#{payload.hex().upper()}")
        sent.append((message, payload))
    lines.append(f"({1.7e9 + 4:.6f}) can0 7FF#0102")  # not in the database
    log = tmp_path / "drive.log"
    log.write_text("\n".join(lines) + "\n")
    for raw in (True, False):
        single = CanSource(log, database=DATA / dbc, raw=raw)
        one = rows_by_sensor(read_all(single))
        blocked = CanSource(log, database=DATA / dbc, raw=raw, block=7)
        rows = rows_by_sensor(read_all(blocked))
        assert one.keys() == rows.keys()
        for sensor in one:
            assert same_rows(one[sensor], rows[sensor]), sensor
        same_ledgers(blocked, single)
    # and against cantools, message by message (frames long enough for it)
    for message in db.messages:
        decoded = rows.get(f"can.{message.name}")
        frames = [p for m, p in sent if m is message and len(p) >= message.length]
        assert (0 if decoded is None else len(decoded)) == len(frames)
        for row, payload in zip(decoded if decoded is not None else [], frames, strict=True):
            try:
                expected: Any = message.decode(payload, decode_choices=False)
            except cantools.database.DecodeError:
                continue  # a multiplexer value it does not list: ours keeps NaN
            for name, value in expected.items():
                assert row[name] == pytest.approx(value, rel=1e-9, nan_ok=True), name


def test_named_channels_and_ids_of_their_own_in_blocks() -> None:
    path = DATA / "candump_cantools_logreader.log"
    frames = read_all(CanSource(path, block=2))
    assert frames[0].meta["channel_names"] == {"0": "can2", "1": "can3"}
    assert frames[1].meta["channel_names"] == {"2": "vcan-0"}
    expected = list(can.LogReader(str(path)))
    rows = rows_by_sensor(frames)["can"]
    assert rows["id"].tolist() == [m.arbitration_id for m in expected]
    with pytest.raises(ConfigError, match="block must be >= 1"):
        CanSource(path, block=0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0x1A0, 0x1F0, 0x7FF, 0x1234567]),
            st.binary(max_size=9),
            st.booleans(),  # an error frame
        ),
        max_size=60,
    ),
    st.integers(1, 9),
)
def test_any_mixed_log_gives_the_same_rows_and_ledger_in_blocks(
    frames: list[tuple[int, bytes, bool]], block: int
) -> None:
    messages = [
        can.Message(
            timestamp=1.0 + k * 0.001,
            arbitration_id=can_id,
            is_extended_id=can_id > 0x7FF,
            data=data,
            dlc=len(data),
            is_error_frame=error,
            check=False,
        )
        for k, (can_id, data, error) in enumerate(frames)
    ]
    from adapters.can import CanDecoder

    for kwargs in ({}, {"ids": [0x1A0]}, {"database": DATA / "motohawk.dbc", "unknown": "count"}):
        single = CanDecoder("can", **kwargs)
        events = single.push(messages)
        blocks = CanDecoder("can", **kwargs).push_blocks(messages)
        per_sensor: dict[str, list[np.ndarray]] = defaultdict(list)
        units: dict[str, int] = defaultdict(int)
        losses: dict[tuple[str, str, int], int] = defaultdict(int)
        for e in events:
            if hasattr(e, "row"):
                per_sensor[e.sensor].append(e.row)
                units[e.sensor] += e.units
            else:
                losses[(e.sensor, e.reason, e.units)] += 1
        b_units: dict[str, int] = defaultdict(int)
        b_losses: dict[tuple[str, str, int], int] = defaultdict(int)
        for b in blocks:
            if isinstance(b, Block):
                assert same_rows(np.concatenate(per_sensor.pop(b.sensor)), b.rows)
                b_units[b.sensor] += len(b.rows) * b.units_per_row
            else:
                b_losses[(b.sensor, b.reason, b.units)] += 1
        assert not per_sensor
        assert units == b_units
        assert losses == b_losses


def test_paced_blocks_are_the_unpaced_ones(tmp_path: Path) -> None:
    lines = [f"({1.0 + k * 1e-4:.6f}) can0 1F0#{k % 256:02X}00000000000000" for k in range(50)]
    log = tmp_path / "paced.log"
    log.write_text("\n".join(lines) + "\n")
    fast = read_all(CanSource(log, database=DATA / "motohawk.dbc", block=8))
    paced = read_all(CanSource(log, database=DATA / "motohawk.dbc", block=8, speed=100.0))
    stamps = [f.t_sensor for f in paced]
    assert stamps == sorted(stamps)  # paced in the log's time order
    assert sorted((f.sensor, f.seq, f.t_sensor) for f in paced) == sorted(
        (f.sensor, f.seq, f.t_sensor) for f in fast
    )
    for a, b in zip(rows_by_sensor(fast).values(), rows_by_sensor(paced).values(), strict=True):
        assert same_rows(a, b)
