"""Reading a recording from a real pipe (``cat file |``), front to back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fusion.errors import UsageError
from recordings import Recorder, open_recording, read_stream
from recordings.errors import CorruptChunk, RecordingError, TruncatedRecording
from recordings.hfr._format import PRELUDE

from .helpers import make_frames, same_frame


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "s.hfr"
    with Recorder(path, chunk_bytes=30_000, metadata={"site": "lab"}) as rec:
        for f in make_frames(300):
            rec.write(f)
    return path


def read_all(
    data: bytes, tmp_path: Path, **filters: object
) -> tuple[list[object], list[RecordingError]]:
    """Read ``data`` through a pipe: the stdout of ``cat`` (non-seekable)."""
    src = tmp_path / "piped.bin"
    src.write_bytes(data)
    with subprocess.Popen(["cat", str(src)], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert not proc.stdout.seekable()
        stream = read_stream(proc.stdout, name="pipe")
        frames = list(stream.frames(**filters))  # type: ignore[arg-type]
        proc.stdout.read()  # drain what follows the index (the trailer)
    assert stream.metadata == {"site": "lab"}
    return frames, stream.damage


def test_a_pipe_yields_what_the_file_reader_yields(recorded: Path, tmp_path: Path) -> None:
    frames, damage = read_all(recorded.read_bytes(), tmp_path)
    with open_recording(recorded) as log:
        expected = list(log.frames())
        window = [(f.sensor, f.seq) for f in log.frames(["imu"], 500_000_000, 900_000_000)]
    assert damage == []
    assert len(frames) == len(expected) == 300
    pairs = zip(frames, expected, strict=True)
    assert all(same_frame(a, b) for a, b in pairs)  # type: ignore[arg-type]
    got, _ = read_all(
        recorded.read_bytes(), tmp_path, sensors=["imu"], start=500_000_000, end=900_000_000
    )
    assert [(f.sensor, f.seq) for f in got] == window  # type: ignore[attr-defined]


def test_a_crashed_writers_tail_ends_the_stream_cleanly(recorded: Path, tmp_path: Path) -> None:
    with open_recording(recorded) as log:
        last = log.chunks[-1]
        before = sum(c.count for c in log.chunks[:-1])
    frames, damage = read_all(recorded.read_bytes()[: last.offset + PRELUDE.size + 40], tmp_path)
    assert len(frames) == before
    assert [type(e) for e in damage] == [TruncatedRecording]
    assert damage[0].offset == last.offset


def test_a_bad_payload_is_skipped_and_a_bad_header_stops(recorded: Path, tmp_path: Path) -> None:
    data = bytearray(recorded.read_bytes())
    with open_recording(recorded) as log:
        second, fourth = log.chunks[1], log.chunks[3]
        total = sum(c.count for c in log.chunks)
    bad = bytearray(data)
    bad[second.offset + second.stored_size // 2 + 200] ^= 0xFF  # inside its payload
    frames, damage = read_all(bytes(bad), tmp_path)
    assert len(frames) == total - second.count
    assert [(type(e), e.offset) for e in damage] == [(CorruptChunk, second.offset)]
    assert "fails its CRC" in str(damage[0])
    bad = bytearray(data)
    bad[fourth.offset + PRELUDE.size + 3] ^= 0xFF  # inside its meta: lengths untrusted
    frames, damage = read_all(bytes(bad), tmp_path)
    assert len(frames) == sum(c.count for c in log.chunks[:3])
    assert [(type(e), e.offset) for e in damage] == [(CorruptChunk, fourth.offset)]
    assert "cannot resynchronise" in str(damage[0])


def test_a_stream_is_read_once_and_must_be_a_recording(recorded: Path) -> None:
    with recorded.open("rb") as fh:
        stream = read_stream(fh)
        assert len(list(stream.frames())) == 300
        with pytest.raises(UsageError, match="already read"):
            next(stream.frames())
    with subprocess.Popen(["echo", "not a recording"], stdout=subprocess.PIPE) as proc:
        out = proc.stdout
        assert out is not None
        with pytest.raises(RecordingError, match="bad magic"):
            read_stream(out)
