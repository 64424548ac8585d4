"""A DETAILS record (format 1.6) that passes its CRCs but lies, or costs too much.

The record is written by the recorder from the frames, but a reader meets it in a
file anyone may have made: forged columns (a clock offset of -4.6e12 ms, 90 segments),
forged counts, or a meta of millions of empty lists (30 MB that decode to 2 GB). Each
case is built from a real recording by re-encoding its frames' details with the
project's own writer (or by hand for the meta), CRCs recomputed; ``check`` must report
it, ``info`` must not report it as fact and must stay within bounded memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from fusion import Frame
from recordings import Recorder, open_recording
from recordings.hfr._details import SEGMENT, ChunkDetails, DetailsWriter, chunk_details
from recordings.hfr._format import PRELUDE, TRAILER, RecordKind, crc32, pack_prelude, pack_trailer
from tests.recordings.forge import records_of, rewrite
from tests.recordings.hostile import record

MS = 1_000_000
POINT = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4")])


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    """An IMU 3 ms behind its own clock and a LiDAR, in 1 s chunks."""
    path = tmp_path / "clean.hfr"
    with Recorder(path, wall_clock=False) as rec:
        for i in range(400):
            t = 10**9 + i * 10 * MS
            rec.write(Frame("imu", i, t, np.arange(6.0) * i, t_sensor=t - 3 * MS, t_arrival=t))
            if i % 10 == 0:
                pts = np.zeros(100 + i, POINT)
                rec.write(Frame("lidar", i // 10, t + MS, pts, t_arrival=t + 2 * MS))
    return path


def forge_details(path: Path, change: Callable[[tuple[str, ...], Any, ChunkDetails], None]) -> None:
    """Rewrite ``path``'s DETAILS record from its frames, ``change`` editing each chunk's
    details first; the INDEX's pointer and the trailer follow (CRCs recomputed)."""
    writer = DetailsWriter()
    with open_recording(path) as log:
        for chunk in log.chunks:
            frames = list(log.decode_chunk(chunk).frames())
            index = {n: i for i, n in enumerate(chunk.sensors)}
            sensor = np.array([index[f.sensor] for f in frames])
            details = chunk_details(frames, index)
            change(chunk.sensors, sensor, details)
            writer.add(chunk.sensors, sensor, details)
    found = writer.record()
    assert found is not None
    splice(path, b"".join(found[0]))


def splice(path: Path, details: bytes) -> None:
    """Put ``details`` (a whole record) where the file's DETAILS record is."""
    data = path.read_bytes()
    with open_recording(path) as log:
        assert log.chunks
        assert log._details_at is not None
        index_at, (at, _) = log._details_at
    _, _, meta_len, payload_len, _, _ = PRELUDE.unpack_from(data, index_at)
    meta = msgpack.unpackb(data[index_at + PRELUDE.size : index_at + PRELUDE.size + meta_len])
    stamps = data[index_at + PRELUDE.size + meta_len + payload_len : len(data) - TRAILER.size]
    meta["details"] = [at, len(details)]
    index = record(RecordKind.INDEX, msgpack.packb(meta, use_bin_type=True))
    path.write_bytes(data[:at] + details + index + stamps + pack_trailer(at + len(details)))


def imu_doc(path: Path) -> dict[str, Any]:
    done = cli("info", str(path), "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_a_forged_clock_offset_and_segments_are_reported_by_check_and_not_by_info(
    clean: Path,
) -> None:
    """The issue's file: 90 segments and a -4.6e12 ms offset in a sound record."""
    good = imu_doc(clean)
    assert good["details_from"] == "footer"

    def lie(sensors: tuple[str, ...], sensor: Any, d: ChunkDetails) -> None:
        imu = sensor == sensors.index("imu")
        d.offset[imu] -= 4_600_000_000_000 * MS
        rows = np.flatnonzero(imu)
        d.flags[rows[1::4]] |= SEGMENT

    forge_details(clean, lie)
    with open_recording(clean) as log:  # the record itself checks out
        assert log.frame_details() is not None, log.frame_details_problem

    check = cli("check", str(clean))
    assert check.returncode == 1, check.stdout
    text = " ".join(check.stdout.split())
    assert "the frame details do not match chunk 0" in text
    assert "sensor 'imu' seq 0: the frame details give t_sensor - t" in text

    doc = imu_doc(clean)  # from the frames, and it says why
    assert doc["details_from"] == "frames"
    assert "do not match the first chunk" in doc["frames_read_because"]
    for key in ("segments", "offset_ns", "dropped", "payload"):
        assert doc["sensors"]["imu"][key] == good["sensors"]["imu"][key], key
    assert doc["sensors"]["imu"]["segments"] == 1
    assert doc["sensors"]["imu"]["offset_ns"] == 3 * MS


def test_a_forged_payload_size_in_a_later_chunk_is_found_by_check(clean: Path) -> None:
    """Only the last chunk lies (info's spot check of the first cannot see it): check
    compares every chunk."""
    with open_recording(clean) as log:
        last = len(log.chunks) - 1
    seen: list[None] = []

    def lie(sensors: tuple[str, ...], sensor: Any, d: ChunkDetails) -> None:
        seen.append(None)
        if len(seen) - 1 == last and "lidar" in sensors:
            d.size[sensor == sensors.index("lidar")] += 7

    forge_details(clean, lie)
    check = cli("check", str(clean))
    assert check.returncode == 1
    text = " ".join(check.stdout.split())
    assert f"the frame details do not match chunk {last}" in text
    assert "sensor 'lidar'" in text


def test_a_details_record_that_counts_other_frames_is_damage(clean: Path) -> None:
    """Counts the chunk metas do not give: check names the sensor and both counts."""
    with open_recording(clean) as log:
        assert log.chunks

    writer = DetailsWriter()
    with open_recording(clean) as log:
        for ci, chunk in enumerate(log.chunks):
            frames = list(log.decode_chunk(chunk).frames())
            if ci == 0:
                frames = frames[:-1]  # one frame fewer than the chunks hold
            index = {n: i for i, n in enumerate(chunk.sensors)}
            sensor = np.array([index[f.sensor] for f in frames])
            writer.add(chunk.sensors, sensor, chunk_details(frames, index))
    found = writer.record()
    assert found is not None
    splice(clean, b"".join(found[0]))
    check = cli("check", str(clean))
    assert check.returncode == 1
    assert "the frame details count" in " ".join(check.stdout.split())
    assert imu_doc(clean)["details_from"] == "frames"


def test_a_details_meta_of_millions_of_empty_lists_is_refused_before_it_is_decoded(
    clean: Path,
) -> None:
    """30 MB of one-byte empty lists would be about 2 GB of Python objects: the meta's
    cost is walked first; info reads the frames instead, in bounded memory."""
    with open_recording(clean) as log:
        details = log.frame_details()
        assert details is not None
    n = 30_000_000
    stand_in = "SHAPES-PLACEHOLDER"
    meta = {
        "s": ["imu"],
        "c": [400],
        "chunks": 4,
        "z": [[[1], [1], [1]]],
        "x": [{"first": ["array", 0, "float64", "x"], "shapes": stand_in, "gaps": [],
               "conn": [], "params": [], "over": False}],
    }  # fmt: skip
    packed = msgpack.packb(meta, use_bin_type=True)
    shapes = b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n
    packed = packed.replace(msgpack.packb(stand_in), shapes)
    payload = b"\0\0\0"
    forged = pack_prelude(RecordKind.DETAILS, packed, len(payload), crc32(payload)) + packed
    splice(clean, forged + payload)

    # info's own peak, measured by a small launcher: a child forked from this (large,
    # long-lived) worker starts with the worker's resident pages in its ru_maxrss
    launcher = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-m', 'hyperframes', 'info', sys.argv[1],"
        " '--json'], check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", launcher, str(clean)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    doc = json.loads(done.stdout)
    peak_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
    assert doc["details_from"] == "frames"
    assert "would decode to over" in doc["frames_read_because"]
    assert doc["sensors"]["imu"]["offset_ns"] == 3 * MS
    assert peak_mb < 600, peak_mb  # the decoded meta alone would be ~2 GB
    check = cli("check", str(clean))
    assert check.returncode == 1
    assert "the frame details cannot be used" in " ".join(check.stdout.split())


def test_sync_of_a_file_whose_chunks_all_claim_too_many_frames_reports_the_damage(
    clean: Path, tmp_path: Path
) -> None:
    """Every chunk's meta says it holds about 2**62 LiDAR frames: sync names the damage
    (as check does) instead of saying the LiDAR is not in the recording."""
    preamble, recs = records_of(clean)

    def claim(entries: list[dict[str, Any]]) -> None:
        for e in entries:
            if "lidar" in e["s"]:
                k = e["s"].index("lidar")
                others = sum(e["c"]) - e["c"][k]
                e["c"] = [(1 << 62) - others if i == k else c for i, c in enumerate(e["c"])]
                e["n"] = 1 << 62

    forged = rewrite(tmp_path / "forged.hfr", preamble, recs, claim)
    out = tmp_path / "g.parquet"
    sync = cli(
        "sync", str(forged), "--policy", "nearest", "--reference", "imu", "--sensors", "imu",
        "lidar", "--tolerance", "20ms", "--optional", "lidar", "-o", str(out),
    )  # fmt: skip
    text = " ".join((sync.stdout + sync.stderr).split())
    assert "not in the recording" not in text
    assert sync.returncode == 1, text
    assert "lost:" in text
    assert "over the limit of" in text
    check = cli("check", str(forged))
    assert check.returncode == 1
