"""Hostile ``.hfr`` files whose CRCs all check out: each class costs what it was given.

Every file here is built by :mod:`tests.recordings.hostile` with correct CRCs,
so what is tested is the validation behind them: bounded decoding (record
count and decoded-object budget, readahead included), range-checked integers
in the trailer, index and metas, type-checked record fields, duplicates, and
resynchronisation whose work is linear in the file size.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordings import open_recording, read_stream
from recordings.errors import CorruptChunk, LimitExceeded, RecordingError
from recordings.hfr._format import PRELUDE, SYNC, RecordKind
from recordings.hfr._locate import RESYNC_SMALL_META, RESYNC_WORK

from .hostile import INT64, Chunk, good_chunks, record, recording

MiB = 1 << 20


def peak_of(fn: Callable[[], Any]) -> tuple[Any, int]:
    """``fn()`` and the peak of Python allocations while it ran (tracemalloc)."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def read_all(path: Path, **kw: Any) -> tuple[list[Any], list[RecordingError]]:
    with open_recording(path, **kw) as log:
        frames = list(log.frames())
        log.summary()
        return frames, log.verify()


# -- bounded decoding -------------------------------------------------------


def test_a_record_count_bomb_is_refused_before_decoding(tmp_path: Path) -> None:
    # 2 million 8-byte records: 16 MB raw, a few KB on disk.
    n = 2_000_000
    head = b"\xdd" + n.to_bytes(4, "big") + b"\x97\x00\x00\x00\xc0\xc0\xc0\xc0" * n
    bomb = Chunk(head=head, overrides={"n": n, "c": [n]})
    path = recording(tmp_path / "bomb.hfr", [*good_chunks(2), bomb])
    assert path.stat().st_size < 8 * 1024
    (frames, damage), peak = peak_of(lambda: read_all(path))
    assert len(frames) == 6
    assert [type(e) for e in damage] == [LimitExceeded]
    assert "declares 2000000 frames, over the limit of 1048576" in str(damage[0])
    assert "chunk 0 (t 0..0 ns, 2000000 frames)" in str(damage[0])
    assert peak < 40 * MiB  # the raw buffer is never even decompressed


def test_forged_chunk_counts_are_left_out_of_every_total(tmp_path: Path) -> None:
    # Four metas each declaring 2**62 frames (the largest a meta may hold): summed,
    # 2**64, a total no reader could ever deliver.
    forged = [
        Chunk(c.records, index=c.index, overrides={"n": 1 << 62, "c": [1 << 62]})
        for c in good_chunks(6)[2:]
    ]
    path = recording(tmp_path / "forged.hfr", [*good_chunks(2), *forged])
    with open_recording(path) as log:
        summary = log.summary()
        assert summary.overcounted == (2, 3, 4, 5)
        assert summary.count == 6
        assert summary.sensors["s"].count == 6
        assert summary.chunks == 6
        assert len(list(log.frames())) == 6
        assert len(log.verify()) == 4  # each forged chunk is damage, said once


def test_a_count_just_under_the_limit_still_fits_the_budget(tmp_path: Path) -> None:
    n = 200_000
    head = b"\xdd" + n.to_bytes(4, "big") + b"\x97\x00\x00\x00\xc0\xc0\xc0\xc0" * n
    path = recording(tmp_path / "b.hfr", [Chunk(head=head, overrides={"n": n, "c": [n]})])
    budget = 32 * MiB
    (frames, damage), peak = peak_of(lambda: read_all(path, max_decoded_bytes=budget))
    assert frames == []
    assert isinstance(damage[0], LimitExceeded)
    assert "max_decoded_bytes" in str(damage[0])
    assert peak < budget
    (frames, damage), peak = peak_of(lambda: read_all(path, max_decoded_bytes=256 * MiB))
    assert len(frames) == n  # read, and every seq is 0: check says so
    assert [str(e) for e in damage] == [
        f"{path}: sensor 's' has {n - 1} frames whose seq was seen before (seq 0)"
    ]
    assert peak < 256 * MiB


@pytest.mark.parametrize(
    "element",
    [
        pytest.param(b"\x80", id="empty-maps"),
        pytest.param(b"\x90", id="empty-lists"),
        pytest.param(b"\x81\xe0\xe0", id="one-entry-maps"),
        pytest.param(b"\xd4\x05\x00", id="unknown-exts"),
    ],
)
def test_an_object_bomb_in_one_frame_is_refused_within_the_budget(
    tmp_path: Path, element: bytes
) -> None:
    # One record whose data is an array of 400,000 tiny containers.
    k = 400_000
    data = b"\xdd" + k.to_bytes(4, "big") + element * k
    head = b"\x91\x97\x00\x00\x00\xc0\xc0" + data + b"\xc0"
    path = recording(
        tmp_path / "o.hfr", [Chunk(head=head, overrides={"n": 1, "c": [1]}), *good_chunks(1)]
    )
    budget = 16 * MiB
    (frames, damage), peak = peak_of(lambda: read_all(path, max_decoded_bytes=budget))
    assert len(frames) == 3  # the healthy chunk
    assert len(damage) == 1
    assert isinstance(damage[0], LimitExceeded)
    assert "would decode to about" in str(damage[0])
    assert peak < budget
    with open(path, "rb") as fh:
        stream = read_stream(fh, max_decoded_bytes=budget)
        assert len(list(stream.frames())) == 3
        assert isinstance(stream.damage[0], LimitExceeded)


def test_readahead_counts_against_the_same_budget(tmp_path: Path) -> None:
    # Eight chunks of 2 MiB strings each: decoded ahead, they would hold 3 at once.
    big = [Chunk([[0, i, i, None, None, "x" * (2 * MiB), None]], index=i) for i in range(8)]
    path = recording(tmp_path / "r.hfr", big)
    budget = 600 * MiB  # static cost of one such chunk: ~2 MiB raw + 2 MiB * 128

    def read() -> int:
        with open_recording(path, readahead=2, max_decoded_bytes=budget) as log:
            held = 0
            for batch in log.batches():
                held = max(held, len(batch))
            return held

    held, peak = peak_of(read)
    assert held == 1
    assert peak < 3 * 4 * MiB  # one decoded chunk (raw + string) at a time, plus scratch


# -- integers and types from the file ---------------------------------------


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        pytest.param(lambda es: es * 3, "again", id="each-chunk-three-times"),
        pytest.param(lambda es: [{**es[0], "off": -5}, *es[1:]], "outside", id="negative-offset"),
        pytest.param(
            lambda es: [{**es[0], "off": (1 << 64) - 1}, *es[1:]], "outside", id="offset-2**64-1"
        ),
        pytest.param(lambda es: [{**es[0], "len": "12"}, *es[1:]], "non-integer", id="str-length"),
        pytest.param(lambda es: [{**es[0], "len": 1.5}, *es[1:]], "non-integer", id="float-len"),
        pytest.param(lambda es: [{**es[0], "len": 1 << 40}, *es[1:]], "outside", id="huge-len"),
        pytest.param(lambda es: [es[0], 7, *es[1:]], "not a map", id="not-a-map"),
        pytest.param(lambda es: [{**es[0], "n": -1}, *es[1:]], "parse", id="negative-count"),
        pytest.param(lambda es: [{**es[0], "t0": INT64}, *es[1:]], "parse", id="t0-beyond-int64"),
        pytest.param(lambda es: [es[1], es[0], *es[2:]], "outside", id="out-of-order"),
    ],
)
def test_a_lying_index_is_distrusted_and_the_chunks_are_scanned(
    tmp_path: Path, entries: Callable[[list[Any]], list[Any]], why: str
) -> None:
    chunks = good_chunks(10)
    honest = recording(tmp_path / "honest.hfr", chunks)
    with open_recording(honest) as log:
        listed = [{**c.to_msgpack(), "off": c.offset, "len": c.stored_size} for c in log.chunks]
    path = recording(tmp_path / "lying.hfr", chunks, index_entries=entries(listed))
    with open_recording(path) as log:
        assert not log.indexed
        summary = log.summary()
        assert summary.count == 30
        assert summary.chunks == 10
        assert len(list(log.frames())) == 30
        assert why in str(log.damage[0])
        assert "scanning the chunks instead" in str(log.damage[0])
        assert log.verify() == log.damage  # check says: not ok


@pytest.mark.parametrize("offset", [(1 << 64) - 1, 1 << 63, 3, 0])
def test_a_trailer_pointing_outside_the_file_is_reported(tmp_path: Path, offset: int) -> None:
    path = recording(tmp_path / "t.hfr", good_chunks(4), trailer_offset=offset)
    frames, damage = read_all(path)
    assert len(frames) == 12
    assert "outside the file" in str(damage[0]) or "index is damaged" in str(damage[0])


BAD_FIELDS = [
    pytest.param(2, "abc", "t", id="t-str"),
    pytest.param(2, None, "t", id="t-nil"),
    pytest.param(2, 1.5, "t", id="t-float"),
    pytest.param(2, (1 << 64) - 1, "t", id="t-beyond-int64"),
    pytest.param(1, "1", "seq", id="seq-str"),
    pytest.param(1, None, "seq", id="seq-nil"),
    pytest.param(1, 2.0, "seq", id="seq-float"),
    pytest.param(1, 1 << 63, "seq", id="seq-beyond-int64"),
    pytest.param(1, {"seq": 1}, "seq", id="seq-map"),
    pytest.param(3, "x", "t_sensor", id="t_sensor-str"),
    pytest.param(4, 1 << 63, "t_arrival", id="t_arrival-beyond-int64"),
    pytest.param(6, [1, 2], "meta", id="meta-list"),
    pytest.param(6, "m", "meta", id="meta-str"),
    pytest.param(0, 5, "sensor index", id="sensor-out-of-range"),
    pytest.param(0, True, "sensor index", id="sensor-bool"),
]


@pytest.mark.parametrize(("field", "value", "word"), BAD_FIELDS)
def test_a_record_field_of_the_wrong_type_costs_its_chunk(
    tmp_path: Path, field: int, value: Any, word: str
) -> None:
    bad = good_chunks(3)
    row = bad[1].records[1]
    row[field] = value
    bad[1].overrides = {"t0": 3000, "t1": 5000, "r": [[3000, 5000]], "c": [3]}
    path = recording(tmp_path / "f.hfr", bad)
    for stream in (False, True):
        if stream:
            with open(path, "rb") as fh:
                s = read_stream(fh)
                frames, damage = list(s.frames()), s.damage
        else:
            frames, damage = read_all(path)
        assert [f.seq for f in frames] == [0, 1, 2, 6, 7, 8]
        assert len(damage) == 1
        assert isinstance(damage[0], CorruptChunk)
        assert "chunk 1 (t 3000..5000 ns, 3 frames) is damaged" in str(damage[0])
        assert word in str(damage[0])


def test_a_meta_that_misstates_its_frames_fails_check(tmp_path: Path) -> None:
    chunks = good_chunks(3)
    chunks[1].overrides = {"r": [[3000, 4000]], "t1": 5000}  # the last frame is at 5000
    path = recording(tmp_path / "m.hfr", chunks)
    with open_recording(path) as log:
        damage = log.verify()
    assert len(damage) == 1
    assert "does not hold what its meta says: sensor 's' has 3 frames, t 3000..5000" in str(
        damage[0]
    )


def test_duplicate_sensor_seq_pairs_are_reported(tmp_path: Path) -> None:
    chunks = good_chunks(3)
    for r in chunks[2].records:
        r[1] -= 6  # seqs 0..2 again
    path = recording(tmp_path / "d.hfr", chunks)
    with open_recording(path) as log:
        damage = log.verify()
    assert [str(e).split(": ", 1)[-1] for e in damage] == [
        "sensor 's' has 3 frames whose seq was seen before (seq 0, 1, 2)"
    ]


def test_specs_of_the_wrong_types_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "s.hfr"
    recording(path, good_chunks(1))
    data = bytearray(path.read_bytes())
    header_len = PRELUDE.size + PRELUDE.unpack_from(data, 16)[2]
    specs = [
        {"name": "s", "kind": ["x"], "rate_hz": "fast"},
        {"name": 5},
        {"name": "t", "kind": "imu", "rate_hz": 100.0, "capacity": "many"},
    ]
    data[16 : 16 + header_len] = record(RecordKind.HEADER, {"sensors": specs, "metadata": []})
    path.write_bytes(bytes(data))
    with open_recording(path, use_index=False) as log:
        assert list(log.specs) == []
        assert log.metadata == {}
        assert log.summary().sensors["s"].count == 3


# -- resynchronisation ------------------------------------------------------


def test_resync_work_is_linear_in_the_file_size(tmp_path: Path) -> None:
    # 1 MiB of fake preludes 32 bytes apart, each claiming a meta of the rest of the file.
    size = MiB
    fake = bytearray()
    while len(fake) < size:
        meta_len = size - len(fake) - PRELUDE.size - 8
        fake += SYNC + bytes([RecordKind.CHUNK]) + meta_len.to_bytes(4, "little")
        fake += (0).to_bytes(8, "little") + b"\0" * 8 + b"\x8f" * 8
    path = recording(
        tmp_path / "r.hfr", [*good_chunks(1), bytes(fake), *good_chunks(2)], index=False
    )
    with open_recording(path) as log:
        work = log._resync_work
        frames = list(log.frames())
    # The budget, plus the last fake preludes whose metas are small enough to try.
    assert work <= RESYNC_WORK * path.stat().st_size + (16 << 20) + 128 * RESYNC_SMALL_META
    assert len(frames) == 9  # the chunks after the fake region have small metas: found
    assert any("false record starts" in str(e) for e in log.damage)


# -- mutation with CRCs recomputed -----------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
    st.floats(allow_nan=True),
    st.text(max_size=4),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from(["chunk", "record", "index"]),
    key=st.sampled_from(["i", "t0", "t1", "n", "raw", "rec", "z", "s", "c", "r", "new", "k"]),
    field=st.integers(0, 6),
    value=_VALUES,
)
def test_mutated_values_behind_valid_crcs_never_crash(
    tmp_path: Path, target: str, key: str, field: int, value: Any
) -> None:
    """Whatever the change, reading raises nothing but RecordingError, and a file
    that ``verify()`` passes reads in full: summary, frames and their fields."""
    chunks = good_chunks(4)
    entries = None
    if target == "chunk":
        chunks[1].overrides = {key: value}
    elif target == "record":
        chunks[2].records[0][field] = value
    path = tmp_path / "m.hfr"
    recording(path, chunks)
    if target == "index":
        with open_recording(path) as log:
            entries = [
                {**c.to_msgpack(), "off": c.offset, "len": c.stored_size} for c in log.chunks
            ]
        entries[0][key] = value
        recording(path, chunks, index_entries=entries)
    for use_index in (True, False):
        with open_recording(path, use_index=use_index) as log:
            damage = log.verify()
            summary = log.summary()
            frames = list(log.frames())
            if not damage:
                assert summary.count == len(frames)
                for f in frames:
                    assert type(f.seq) is int
                    assert type(f.t) is int
                    assert isinstance(f.meta, dict)
                    assert summary.t_start is not None
                    assert summary.t_end is not None
                    assert summary.t_start <= f.t <= summary.t_end
                    assert -(1 << 63) <= f.seq < 1 << 63
                    assert msgpack.packb(f.t_sensor) is not None


def test_hostile_file_classes_report_and_never_raise_anything_else(tmp_path: Path) -> None:
    """The classes above, read every way (index, scan, stream, verify)."""
    n = 2_000_000
    head = b"\xdd" + n.to_bytes(4, "big") + b"\x97\x00\x00\x00\xc0\xc0\xc0\xc0" * n
    files = [
        recording(tmp_path / "a.hfr", [Chunk(head=head, overrides={"n": n, "c": [n]})]),
        recording(tmp_path / "b.hfr", good_chunks(2), trailer_offset=1 << 63),
        recording(tmp_path / "c.hfr", good_chunks(2), index_entries=[{"off": -1, "len": "x"}]),
    ]
    for path in files:
        for use_index in (True, False):
            with open_recording(path, use_index=use_index) as log:
                log.summary()
                list(log.frames())
                assert log.verify() or not use_index
