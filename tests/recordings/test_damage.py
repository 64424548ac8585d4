"""Damaged, truncated, hostile and foreign files: reported precisely, never a crash."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion._frames import Frame
from recordings import Recorder, open_recording
from recordings.errors import (
    CorruptChunk,
    LimitExceeded,
    RecordingError,
    TruncatedRecording,
    UnsupportedVersion,
)
from recordings.hfr._format import PRELUDE, pack_prelude

from .helpers import make_frames, same_frame

PATHS = [pytest.param(True, id="indexed"), pytest.param(False, id="scan")]


Spans = list[tuple[int, int, list[tuple[str, int]]]]


def build(path: Path, n: int = 120) -> tuple[list[Frame], Spans]:
    """Record ``n`` frames in several chunks; return them and each chunk's byte span and keys."""
    frames = make_frames(n)
    with Recorder(path, chunk_bytes=6_000) as rec:
        for f in frames:
            rec.write(f)
    spans = []
    with open_recording(path) as log:
        for c in log.chunks:
            end = c.offset + PRELUDE.size + len(_meta_bytes(path, c.offset)) + c.stored_size
            keys = [(f.sensor, f.seq) for f in log.read_chunk(c)]
            spans.append((c.offset, end, keys))
    return frames, spans


def _meta_bytes(path: Path, offset: int) -> bytes:
    data = path.read_bytes()
    meta_len = PRELUDE.unpack_from(data, offset)[2]
    return data[offset + PRELUDE.size : offset + PRELUDE.size + meta_len]


def flip(path: Path, *offsets: int) -> None:
    data = bytearray(path.read_bytes())
    for off in offsets:
        data[off] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def pristine(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[bytes, list[Frame], list[tuple[int, int, list[tuple[str, int]]]]]:
    path = tmp_path_factory.mktemp("pristine") / "p.hfr"
    frames, spans = build(path)
    assert len(spans) >= 5
    return path.read_bytes(), frames, spans


@pytest.mark.parametrize("use_index", PATHS)
def test_a_bad_crc_in_the_middle_is_reported_and_skipped(
    tmp_path: Path,
    pristine: tuple[bytes, list[Frame], list[tuple[int, int, list[tuple[str, int]]]]],
    use_index: bool,
) -> None:
    data, frames, spans = pristine
    path = tmp_path / "bad.hfr"
    path.write_bytes(data)
    start, end, lost = spans[2]
    flip(path, end - 10)  # inside the compressed payload
    with open_recording(path, use_index=use_index) as log:
        got = [(f.sensor, f.seq) for f in log.frames()]
        (err,) = log.damage
    assert got == [(f.sensor, f.seq) for f in frames if (f.sensor, f.seq) not in lost]
    assert isinstance(err, CorruptChunk)
    assert err.offset == start
    times = _times(frames, lost)
    assert str(err) == (
        f"{path}, byte {start}: chunk 2 (t {min(times)}..{max(times)} ns, {len(lost)} frames) "
        "fails its CRC: its stored bytes changed"
    )


def _times(frames: list[Frame], keys: list[tuple[str, int]]) -> list[int]:
    wanted = set(keys)
    return [f.t for f in frames if (f.sensor, f.seq) in wanted]


@pytest.mark.parametrize("use_index", PATHS)
def test_a_damaged_chunk_header_is_skipped_and_the_scan_resynchronises(
    tmp_path: Path,
    pristine: tuple[bytes, list[Frame], list[tuple[int, int, list[tuple[str, int]]]]],
    use_index: bool,
) -> None:
    data, frames, spans = pristine
    path = tmp_path / "hdr.hfr"
    path.write_bytes(data)
    start, _, lost = spans[1]
    flip(path, start + 6)  # the meta length field
    with open_recording(path, use_index=use_index) as log:
        got = {(f.sensor, f.seq) for f in log.frames()}
        assert len(log.damage) == 1
        assert log.damage[0].offset == start
    assert got == {(f.sensor, f.seq) for f in frames} - set(lost)


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_a_truncated_file_reads_every_complete_chunk(
    tmp_path: Path,
    pristine: tuple[bytes, list[Frame], list[tuple[int, int, list[tuple[str, int]]]]],
    cut: float,
) -> None:
    data, _, spans = pristine
    path = tmp_path / "cut.hfr"
    size = int(len(data) * cut)
    path.write_bytes(data[:size])
    complete = [k for s, e, keys in spans if e <= size for k in keys]
    with open_recording(path) as log:
        got = [(f.sensor, f.seq) for f in log.frames()]
        assert not log.indexed
        assert all(isinstance(e, TruncatedRecording) for e in log.damage)
    assert got == complete


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    flips=st.lists(st.floats(0, 1, exclude_max=True), max_size=4),
    keep=st.one_of(st.none(), st.floats(0, 1)),
    use_index=st.booleans(),
)
def test_random_damage_never_crashes_and_spares_untouched_chunks(
    tmp_path: Path,
    pristine: tuple[bytes, list[Frame], list[tuple[int, int, list[tuple[str, int]]]]],
    flips: list[float],
    keep: float | None,
    use_index: bool,
) -> None:
    data, frames, spans = pristine
    buf = bytearray(data)
    hit = [int(x * len(buf)) for x in flips]
    for off in hit:
        buf[off] ^= 0xA5
    size = len(buf) if keep is None else int(keep * len(buf))
    path = tmp_path / "fuzz.hfr"
    path.write_bytes(bytes(buf[:size]))
    try:
        log = open_recording(path, use_index=use_index)
    except RecordingError:
        assert size < 16 + PRELUDE.size or any(off < 16 for off in hit)  # the preamble itself
        return
    with log:
        got = list(log.frames())
        log.summary()
    by_key = {(f.sensor, f.seq): f for f in frames}
    assert all(same_frame(f, by_key[(f.sensor, f.seq)]) for f in got)  # nothing wrong comes out
    got_keys = {(f.sensor, f.seq) for f in got}
    for start, end, keys in spans:
        if end <= size and not any(start <= off < end for off in hit):
            assert set(keys) <= got_keys
    if hit or size < len(data):
        assert log.damage or got_keys == set(by_key)


def hostile_file(path: Path, raw_size: int) -> None:
    """A well-formed file whose one chunk claims ``raw_size`` decompressed bytes."""
    build(path, 3)
    data = bytearray(path.read_bytes())
    with open_recording(path) as log:
        chunk = log.chunks[0]
    meta = msgpack.unpackb(_meta_bytes(path, chunk.offset))
    meta["raw"] = raw_size
    new_meta = msgpack.packb(meta)
    old_len = PRELUDE.size + PRELUDE.unpack_from(data, chunk.offset)[2]
    payload_crc = PRELUDE.unpack_from(data, chunk.offset)[5]
    prelude = pack_prelude(chunk.kind, new_meta, chunk.stored_size, payload_crc)
    data[chunk.offset : chunk.offset + old_len] = prelude + new_meta
    path.write_bytes(bytes(data[: chunk.offset + PRELUDE.size + len(new_meta) + chunk.stored_size]))


def test_a_huge_declared_size_is_refused_without_allocating(tmp_path: Path) -> None:
    path = tmp_path / "hostile.hfr"
    hostile_file(path, 1 << 40)
    tracemalloc.start()
    try:
        with (
            open_recording(path, strict=True) as log,
            pytest.raises(
                LimitExceeded,
                match=r"declares 1099511627776 decompressed bytes, over the limit of 1073741824",
            ),
        ):
            list(log.frames())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    with open_recording(path) as log:
        assert list(log.frames()) == []
        assert isinstance(log.damage[-1], LimitExceeded)


def test_the_chunk_limit_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / "small.hfr"
    build(path, 30)
    with (
        open_recording(path, max_chunk_bytes=1_000, strict=True) as log,
        pytest.raises(LimitExceeded, match=r"over the limit of 1000"),
    ):
        list(log.frames())


def test_a_newer_major_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v2.hfr"
    build(path, 3)
    data = bytearray(path.read_bytes())
    struct.pack_into("<HH", data, 8, 2, 0)
    path.write_bytes(bytes(data))
    with pytest.raises(
        UnsupportedVersion,
        match=r"byte 8: Recording has format version 2.0; this reader supports 1.x",
    ):
        open_recording(path)


def test_a_newer_minor_version_is_read(tmp_path: Path) -> None:
    path = tmp_path / "v1_9.hfr"
    build(path, 9)
    data = bytearray(path.read_bytes())
    struct.pack_into("<H", data, 10, 9)  # the reader's is 1.8
    path.write_bytes(bytes(data))
    with open_recording(path) as log:
        assert log.version == (1, 9)
        assert len(list(log.frames())) == 9


def test_a_foreign_file_is_not_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "x.hfr"
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(RecordingError, match=r"x\.hfr, byte 0: not a hyperframes recording"):
        open_recording(path)


def test_an_empty_file_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "e.hfr"
    path.write_bytes(b"")
    with pytest.raises(TruncatedRecording, match=r"ends after 0 bytes, inside its preamble"):
        open_recording(path)
