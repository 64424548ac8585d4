"""Format 1.8: the stamp index's delta columns in packed frames (PACKED_STAMPS)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordings import ReadLimits, open_recording
from recordings._offline_sync import sync_recording
from recordings.hfr import _framed
from recordings.hfr._format import PRELUDE, RecordKind, crc32, pack_prelude, pack_trailer
from recordings.hfr._stamp_block import decode_block
from recordings.hfr._stamp_index import StampIndex, StampIndexWriter, pack_deltas, read_stamp_index
from tests.recordings.helpers import stamp_record_span
from tests.recordings.test_stamp_block import write_mixed
from tests.recordings.test_stamp_index import (
    POLICY,
    _replace_record,
    _stamp_record,
    groups_of,
)

I64 = (-(2**63), 2**63 - 1)


def _record_file(path: Path, writer: StampIndexWriter) -> Path:
    """A file holding just an INDEX stand-in, ``writer``'s record and a trailer."""
    record = writer.record()
    assert record is not None
    index_meta = b"\x80"  # an empty map stands in for the INDEX
    body = b"\0" * 16 + pack_prelude(RecordKind.INDEX, index_meta, 0, 0) + index_meta
    path.write_bytes(body + b"".join(record) + pack_trailer(16))
    return path


Rows = list[tuple[int, int, int | None]]


def _decoded(path: Path, *, by_column: bool) -> dict[str, Rows]:
    """Every sensor's ``(t, seq, t_arrival or None)`` rows, read from the whole payload
    (its CRC checked) or a column at a time (each frame's checksum)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        read = (lambda offset, length: os.pread(fd, length, offset)) if by_column else None
        index = read_stamp_index(fd, os.fstat(fd).st_size, ReadLimits(), read)
        assert isinstance(index, StampIndex), index
        out = {}
        for name in index.sensors:
            t, seq, _, _ = index.of(name)
            arrival, has = index.arrivals(name)
            got = zip(t.tolist(), seq.tolist(), arrival.tolist(), has.tolist(), strict=True)
            out[name] = [(a, b, c if h else None) for a, b, c, h in got]
        return out
    finally:
        os.close(fd)


@settings(max_examples=80, deadline=None)
@given(
    deltas=st.lists(st.integers(*I64), min_size=0, max_size=40),
    data=st.data(),
)
def test_a_packed_frame_holds_the_deltas_in_the_fewest_bytes(deltas: list[int], data: Any) -> None:
    """``pack_deltas`` picks the smallest width that holds the frame's span (or none), and
    ``base + u`` gives every delta back; frames under 4 values and the runs and
    ``has_arrival`` columns stay as they are."""
    low = data.draw(st.integers(*I64))
    bits = data.draw(st.sampled_from([0, 1, 8, 9, 16, 17, 32, 33, 63]))
    if deltas and bits < 63:  # deltas inside a span of about 2**bits above low
        span = (1 << bits) - 1
        deltas = [max(I64[0], min(I64[1], low + d % (span + 1))) for d in deltas]
    raw = np.array(deltas, np.int64).tobytes()
    for column in (0, 4):
        assert pack_deltas(column, raw) == (0, raw)
    width, content = pack_deltas(2, raw)
    if len(deltas) < 4:
        assert (width, content) == (0, raw)
        return
    spread = max(deltas) - min(deltas)
    fits = [w for w in (1, 2, 4) if spread < 1 << (8 * w)]
    assert width == (fits[0] if fits else 0)
    if width:
        assert len(content) == 8 + width * len(deltas) < len(raw)
        base = int.from_bytes(content[:8], "little", signed=True)
        values = np.frombuffer(content, f"<u{width}", offset=8).tolist()
        assert [base + u for u in values] == deltas
    else:
        assert content == raw


@settings(max_examples=40, deadline=None)
@given(
    chunks=st.lists(
        st.tuples(
            st.integers(1, 30),  # frames of sensor a in the chunk
            st.integers(0, 12),  # frames of sensor b
            st.sampled_from([0, 7, 15, 31, 40]),  # bits of jitter
            st.booleans(),  # with arrivals
        ),
        min_size=1,
        max_size=8,
    ),
    start=st.integers(-(2**62), 2**62),
    period=st.integers(0, 2**40),
    seed=st.integers(0, 2**32 - 1),
)
def test_packed_columns_read_back_as_the_stamps_written(
    tmp_path_factory: pytest.TempPathFactory,
    chunks: list[tuple[int, int, int, bool]],
    start: int,
    period: int,
    seed: int,
) -> None:
    """Stamps written through frames of 8 values (packed where they fit, plain where
    not, mixed in one column) read back exactly, through the whole payload or a
    column at a time, whatever their jitter, sign or wrap-around."""
    rng = np.random.default_rng(seed)
    old = _framed.FRAME_BYTES
    _framed.FRAME_BYTES = 64  # 8 deltas a frame: many frames per column
    try:
        writer = StampIndexWriter()
        want: dict[str, Rows] = {"a": [], "b": []}
        t = start
        for n_a, n_b, bits, arrivals in chunks:
            sensor = np.array([0] * n_a + [1] * n_b, np.int64)
            rng.shuffle(sensor)
            rows = []
            for s in sensor.tolist():
                t += period + (int(rng.integers(0, 1 << bits)) if bits else 0)
                t = _wrap(t)
                name = "ab"[s]
                rows.append((t, 3 * len(want[name]), _wrap(t + 5) if arrivals else None))
                want[name].append(rows[-1])
            writer.add(
                ("a", "b"),
                sensor,
                np.array([r[1] for r in rows], np.int64),
                np.array([r[0] for r in rows], np.int64),
                np.array([r[2] or 0 for r in rows], np.int64),
                np.array([r[2] is not None for r in rows], np.uint8),
            )
        path = _record_file(tmp_path_factory.mktemp("pk") / "t.bin", writer)
    finally:
        _framed.FRAME_BYTES = old
    expected = {name: rows for name, rows in want.items() if rows}
    assert _decoded(path, by_column=False) == expected
    assert _decoded(path, by_column=True) == expected


def _wrap(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def test_a_recording_writes_the_packed_record_and_its_stamps_are_the_payloads(
    tmp_path: Path,
) -> None:
    """A 1.8 recording's stamp index is a PACKED_STAMPS record whose jittered ``t``
    frames are packed; every stamp equals the frame read from the payload (the
    independent reference), and ``check`` compares the index with every chunk."""
    from hyperframes.cli import main

    path = tmp_path / "mixed.hfr"
    frames = write_mixed(path)
    data = path.read_bytes()
    a, _ = stamp_record_span(data)
    assert PRELUDE.unpack_from(data, a)[1] == RecordKind.PACKED_STAMPS
    meta, _ = _stamp_record(path)
    assert any(w for cols in meta["p"] for w in cols[2])  # some t frame is packed
    with open_recording(path) as log:
        assert log.version == (1, 8)
        index = log.stamp_index()
        assert index is not None
        for s in index.sensors:
            t, seq, _, _ = index.of(s)
            assert t.tolist() == [f.t for f in frames if f.sensor == s]
            assert seq.tolist() == [f.seq for f in frames if f.sensor == s]
    assert main(["check", str(path), "-q"]) == 0


@pytest.mark.parametrize(
    "forge", ["width 3", "runs packed", "a width short", "not a list", "another width"]
)
def test_a_packing_that_does_not_fit_is_not_used(tmp_path: Path, forge: str) -> None:
    """A ``p`` that does not give every frame a width of 0, 1, 2 or 4 (0 for the runs and
    ``has_arrival``) makes the record unusable; a packed frame read at another width than
    its own holds another number of values than the column's, which makes that sensor's
    columns unusable. Either way the groups come from the chunks' blocks, unchanged."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected = groups_of(path)
    meta, payload = _stamp_record(path)
    packing = [[bytearray(col) for col in cols] for cols in meta["p"]]
    k = next(i for i, cols in enumerate(packing) if any(cols[2]))
    j = next(i for i, w in enumerate(packing[k][2]) if w)
    if forge == "width 3":
        packing[k][2][j] = 3
    elif forge == "runs packed":
        packing[k][0][0] = 2
    elif forge == "a width short":
        packing[k][2].pop()
    else:
        packing[k][2][j] = 1 if packing[k][2][j] != 1 else 2
    meta["p"] = [[bytes(col) for col in cols] for cols in packing]
    if forge == "not a list":
        meta["p"] = {"a": 1}
    _replace_record(path, meta, payload)
    with open_recording(path) as log:
        index = log.stamp_index()
        if forge == "another width":
            assert index is not None
            with pytest.raises(ValueError, match="wrong size"):
                index.t(meta["s"][k])
        else:
            assert index is None
            assert "malformed" in (log.stamp_index_problem or "")
    assert groups_of(path) == expected


def test_packed_frames_in_a_stamps_record_are_refused(tmp_path: Path) -> None:
    """Packed frames are read only from a PACKED_STAMPS record: the same meta and payload
    as a STAMPS record (kind 5, which never has ``p``) do not hold 8 bytes a value, so no
    sensor's ``t`` is taken from them and the blocks give the same groups. (A 1.5-1.7
    reader never gets this far: it looks for kind 5 after the INDEX, finds kind 8 and
    reads the blocks.)"""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected = groups_of(path)
    meta, payload = _stamp_record(path)
    data = path.read_bytes()
    a, b = stamp_record_span(data)
    meta_bytes = msgpack.packb(meta, use_bin_type=True)
    head = pack_prelude(RecordKind.STAMPS, meta_bytes, len(payload[0]), crc32(payload[0]))
    path.write_bytes(data[:a] + head + meta_bytes + payload[0] + data[b:])
    with open_recording(path) as log:
        index = log.stamp_index()
        assert index is not None
        with pytest.raises(ValueError, match="wrong size"):
            index.t(meta["s"][0])
    assert groups_of(path) == expected


def test_a_stamps_record_as_1_7_wrote_it_is_read_as_before(tmp_path: Path) -> None:
    """A file whose stamp index is a STAMPS record of plain delta frames (kind 5, no
    ``p``: what 1.5-1.7 writers leave) groups from that index, as before, with the same
    groups and table as the 1.8 record of the same stamps."""
    path = tmp_path / "mixed.hfr"
    write_mixed(path)
    expected = groups_of(path)
    with sync_recording(path, POLICY) as g:
        table = {k: np.asarray(v).tolist() for k, v in g.table().items()}
    writer = StampIndexWriter()
    writer._cols._encode = None  # plain frames, as before 1.8
    with open_recording(path) as log:
        for c in log.chunks:
            block = decode_block(c, 1 << 30)
            writer.add(
                c.sensors, block.sensor, block.seq, block.t, block.arrival, block.has_arrival
            )
    record = writer.record()
    assert record is not None
    pieces = list(record)  # prelude, meta, then the payload's frames
    meta = msgpack.unpackb(pieces[1], raw=False)
    assert not any(w for cols in meta["p"] for col in cols for w in col)
    del meta["p"]
    _replace_record(path, meta, [b"".join(pieces[2:])])
    data = path.read_bytes()
    assert PRELUDE.unpack_from(data, stamp_record_span(data)[0])[1] == RecordKind.STAMPS
    assert groups_of(path) == expected
    with sync_recording(path, POLICY) as g:
        assert g.statistics.stamp_index
        assert {k: np.asarray(v).tolist() for k, v in g.table().items()} == table
