"""Any length closes: hours of frames and hundreds of sensors, written, closed, reopened.

The closing write of a long or wide recording has more pieces than one ``writev``
takes (``IOV_MAX``, 1024 on Linux): every zstd frame of every column of every sensor
of the footer's stamp index and frame details is one. :mod:`recordings.hfr._writev` splits
it. Here the split is forced small (``IOV_MAX`` lowered) on about 2 M frames of virtual
time, and met for real by 300 sensors; the CLI then reads the files as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recordings.hfr._writev as writev_mod
from fusion._clock_envelope import LowerEnvelope
from fusion._frames import Frame
from recordings import Recorder, open_recording
from recordings.hfr._format import PRELUDE
from recordings.hfr._writev import write_all

MS = 1_000_000
HF = [sys.executable, "-m", "hyperframes"]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HF, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


# -- the split itself --------------------------------------------------------------


@given(
    pieces=st.lists(st.binary(min_size=0, max_size=40), max_size=60),
    iov=st.integers(1, 9),
    short=st.integers(1, 50),
)
@settings(max_examples=60, deadline=None)
def test_write_all_writes_every_byte_in_order_however_the_kernel_splits_it(
    pieces: list[bytes], iov: int, short: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """At most ``IOV_MAX`` pieces per call, and a short write (``short`` bytes at most per
    call, as a signal or a pipe gives) is resumed inside the piece where it stopped."""
    path = tmp_path_factory.mktemp("w") / "out"
    calls: list[int] = []
    real = os.writev

    def kernel(fd: int, bufs: Any) -> int:
        bufs = list(bufs)
        calls.append(len(bufs))
        assert len(bufs) <= iov
        joined = b"".join(bytes(b) for b in bufs)[:short]
        return real(fd, [joined])

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(writev_mod, "IOV_MAX", iov)
            mp.setattr(os, "writev", kernel)
            n = write_all(fd, pieces)
    finally:
        os.close(fd)
    assert n == sum(map(len, pieces))
    assert path.read_bytes() == b"".join(pieces)
    assert all(c >= 1 for c in calls)


def test_the_system_limit_is_read_and_has_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    assert writev_mod.system_iov_max() == os.sysconf("SC_IOV_MAX")

    def unknown(name: str) -> int:
        raise ValueError(name)

    monkeypatch.setattr(os, "sysconf", unknown)
    assert writev_mod.system_iov_max() == 1024


# -- about 2 M frames, the split forced small ------------------------------------------

SECONDS = 1400  # 23 virtual minutes of a 1 kHz IMU + 400 Hz IMU + 30 Hz camera + 10 Hz GNSS
RATES = {"imu": 1000, "imu2": 400, "cam": 30, "gnss": 10}


def drive(seconds: int) -> Iterator[Frame]:
    """Frames of ``seconds`` of a drive in virtual time, in arrival order."""
    rng = np.random.default_rng(3)
    names = list(RATES)
    seq = dict.fromkeys(names, 0)
    imu = np.arange(6, dtype=np.float32)
    cam = np.zeros((12, 16), np.uint8)
    gnss = np.array([48.1, 11.5, 520.0])
    data = {"imu": imu, "imu2": imu, "cam": cam, "gnss": gnss}
    for k in range(seconds):
        ts, who = [], []
        for i, hz in enumerate(RATES.values()):
            t = k * 1_000_000_000 + np.arange(hz, dtype=np.int64) * (1_000_000_000 // hz) + i
            ts.append(t + rng.integers(0, 20_000, hz))
            who.append(np.full(hz, i))
        t_all, s_all = np.concatenate(ts), np.concatenate(who)
        order = np.argsort(t_all, kind="stable")
        for s, t in zip(s_all[order].tolist(), t_all[order].tolist(), strict=True):
            name = names[s]
            n = seq[name]
            seq[name] = n + 1
            yield Frame(name, n, t, data[name], t_sensor=t - 3 * MS, t_arrival=t + MS)


@pytest.fixture(scope="module")
def long_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, list[int]]:
    """The drive, closed with ``IOV_MAX`` lowered to 16; (path, frames, pieces per call)."""
    path = tmp_path_factory.mktemp("long") / "drive.hfr"
    calls: list[int] = []
    real = os.writev

    def counting(fd: int, bufs: Any) -> int:
        bufs = list(bufs)
        calls.append(len(bufs))
        return real(fd, bufs)

    n = 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writev_mod, "IOV_MAX", 16)
        mp.setattr(os, "writev", counting)
        with Recorder(path, wall_clock=False) as rec:
            for frame in drive(SECONDS):
                rec.write(frame)
                n += 1
    return path, n, calls


def test_two_million_frames_close_with_the_footer_split_and_reopen(
    long_file: tuple[Path, int, list[int]],
) -> None:
    path, n, calls = long_file
    assert n == SECONDS * sum(RATES.values()) > 2_000_000
    assert max(calls) <= 16
    with open_recording(path) as log:
        assert log.indexed
        assert log.summary().count == n
        assert log.stamp_index() is not None, log.stamp_index_problem
        assert log.frame_details() is not None, log.frame_details_problem
        assert dict(zip(log.stamp_index().sensors, log.stamp_index().counts, strict=True)) == {  # type: ignore[union-attr]
            s: SECONDS * hz for s, hz in RATES.items()
        }
        assert not log.damage


def test_the_cli_reads_the_long_file(
    long_file: tuple[Path, int, list[int]], tmp_path: Path
) -> None:
    """info (from the footer), sync, replay from a late offset, check and export, as a
    user runs them."""
    path, n, _ = long_file
    info = cli("info", str(path), "--json")
    assert info.returncode == 0, info.stderr
    doc = json.loads(info.stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    assert doc["frames"] == n
    assert doc.get("details_from") == "footer"

    groups = tmp_path / "groups.parquet"
    sync = cli(
        "sync", str(path), "--policy", "nearest", "--reference", "gnss", "--sensors", "gnss",
        "cam", "--tolerance", "20ms", "-o", str(groups),
    )  # fmt: skip
    assert sync.returncode == 0, sync.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(groups).num_rows == SECONDS * RATES["gnss"]

    replay = cli("replay", str(path), "--start-offset", "1300", "--duration", "0.5", "-r", "max")
    assert replay.returncode == 0, replay.stderr
    assert "replayed" in replay.stdout + replay.stderr

    out = tmp_path / "slice.mcap"
    export = cli("export", str(path), "-o", str(out), "--start", "1200", "--end", "1202")
    assert export.returncode == 0, export.stderr + export.stdout
    from mcap.reader import make_reader

    with out.open("rb") as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    assert summary.statistics is not None
    topics = {c.id: c.topic for c in summary.channels.values()}
    counts = {topics[k]: v for k, v in summary.statistics.channel_message_counts.items()}
    for sensor, hz in RATES.items():  # two seconds of each (and the exporter's own topics)
        assert [v for k, v in counts.items() if k.strip("/").split("/")[0] == sensor] == [2 * hz]

    check = cli("check", str(path), timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok:" in check.stdout


def test_check_repair_of_the_long_file_cut_before_its_footer_recovers_every_chunk(
    long_file: tuple[Path, int, list[int]], tmp_path: Path
) -> None:
    """What a killed writer leaves: every sealed chunk, no footer. ``check --repair``
    (which writes through the recorder, so closes a footer of the same size) gets every
    frame back."""
    path, n, _ = long_file
    with open_recording(path) as log:
        last = log.chunks[-1]
        chunks = len(log.chunks)
    head = PRELUDE.unpack(path.read_bytes()[last.offset : last.offset + PRELUDE.size])
    end = last.offset + PRELUDE.size + head[2] + head[3]
    cut = tmp_path / "killed.hfr"
    with path.open("rb") as src, cut.open("wb") as dst:
        dst.write(src.read(end))
    fixed = tmp_path / "fixed.hfr"
    repair = cli("check", str(cut), "--repair", "-o", str(fixed), timeout=300)
    assert repair.returncode == 1, repair.stdout + repair.stderr  # a loss: the footer
    assert "no footer index" in repair.stdout
    assert f"wrote {n} frames" in " ".join(repair.stdout.split())
    with open_recording(cut) as log:
        assert not log.indexed
        assert len(log.chunks) == chunks
    with open_recording(fixed) as log:
        assert log.indexed
        assert log.summary().count == n
        assert not log.damage


# -- 300 sensors: the real limit -------------------------------------------------------


def test_three_hundred_sensors_close_with_the_system_limit_and_read_back(tmp_path: Path) -> None:
    """300 sensors make a footer of about 2,400 pieces, over Linux's 1,024: no patch."""
    path = tmp_path / "wide.hfr"
    names = [f"s{i:03d}" for i in range(300)]
    with Recorder(path, wall_clock=False) as rec:
        for k in range(20):
            for i, name in enumerate(names):
                t = k * 100 * MS + i * 1000
                rec.write(Frame(name, k, t, np.full(3, k, np.float32), t_arrival=t + MS))
    with open_recording(path) as log:
        assert log.indexed
        assert log.summary().count == 6000
        assert len(log.stamp_index().sensors) == 300  # type: ignore[union-attr]
        assert log.frame_details() is not None
    info = cli("info", str(path), "--json")
    assert info.returncode == 0, info.stderr
    check = cli("check", str(path))
    assert check.returncode == 0, check.stdout
    assert "ok:" in check.stdout
    sync = cli(
        "sync", str(path), "--policy", "nearest", "--reference", "s000", "--sensors",
        *names[:50], "--tolerance", "5ms", "-o", str(tmp_path / "g.parquet"),
    )  # fmt: skip
    assert sync.returncode == 0, sync.stderr
    replay = cli("replay", str(path), "--start-offset", "1", "-r", "max")
    assert replay.returncode == 0, replay.stderr
    export = cli("export", str(path), "-o", str(tmp_path / "wide.mcap"))
    assert export.returncode == 0, export.stdout + export.stderr


def test_record_with_three_hundred_sources_closes(tmp_path: Path) -> None:
    """``record`` of 300 synthetic IMUs in virtual time (--fast) ends rc 0 with a file
    whose footer holds every sensor."""
    config = tmp_path / "wide.toml"
    config.write_text(
        '[sync]\npolicy = "nearest"\nreference = "imu000"\ntolerance_ms = 20\n\n'
        + "".join(
            f'[[sources]]\ntype = "synthetic_imu"\nname = "imu{i:03d}"\nrate_hz = 20\n'
            "duration_s = 1.0\nrealtime = false\n\n"
            for i in range(300)
        )
    )
    out = tmp_path / "wide.hfr"
    rec = cli("record", str(config), "-o", str(out), "--fast", "-q", timeout=240)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    with open_recording(out) as log:
        assert log.indexed
        assert len(log.summary().sensors) == 300
        assert log.stamp_index() is not None
        assert log.frame_details() is not None


# -- the clock fit of info scales --------------------------------------------------------


def _skew_point_by_point(x: np.ndarray, arrival: np.ndarray) -> float | None:
    """What ``envelope_skew`` computed before: every point through the envelope."""
    from hyperframes.cli._clockfit import without_early_glitches

    before = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min], x[:-1]]))
    ahead = x > before
    xs, ys = x[ahead], arrival[ahead] - x[ahead]
    keep = without_early_glitches(ys.astype(np.float64))
    xs, ys = xs[keep], ys[keep]
    if len(xs) < 3:
        return None
    env = LowerEnvelope(int(xs[-1]) - int(xs[0]) + 1, len(xs) + 1)
    for px, py in zip(xs.tolist(), ys.tolist(), strict=True):
        env.add(px, py)
    slope = env.fit(-0.5, 0.5).slope
    return float((1 / (1 + slope) - 1) * 1e6)


@given(
    gaps=st.lists(st.integers(1, 5_000_000), min_size=2, max_size=400),
    delays=st.data(),
    skew=st.floats(-1e-3, 1e-3),
)
@settings(max_examples=80, deadline=None)
def test_the_clock_fit_from_hull_candidates_equals_the_point_by_point_envelope(
    gaps: list[int], delays: st.DataObject, skew: float
) -> None:
    """info's skew over millions of points: the vectorised pre-filter keeps every hull
    vertex, so the fit is exactly :class:`LowerEnvelope`'s over every point."""
    from hyperframes.cli._clockfit import envelope_skew

    x = np.cumsum(np.array([10**15, *gaps], np.int64))
    d = delays.draw(
        st.lists(st.integers(0, 10**9), min_size=len(x), max_size=len(x)), label="delays"
    )
    arrival = x + (x * skew).astype(np.int64) + np.array(d, np.int64)
    assert envelope_skew(x, arrival) == _skew_point_by_point(x, arrival)


# -- the footer's columns do not grow the writer's memory --------------------------------


def test_spooled_footer_columns_are_the_frames_kept_in_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``SPOOL_BYTES`` a recorder's footer columns live in a temporary file; the
    record's payload, lengths and CRC are those of the columns kept in memory."""
    import zlib

    from recordings.hfr import _framed as framed

    monkeypatch.setattr(framed, "SPOOL_BYTES", 1000)
    monkeypatch.setattr(framed, "FRAME_BYTES", 4096)
    rng = np.random.default_rng(5)
    kept, spooled = framed.ColumnFrames(2), framed.ColumnFrames(2, spool=True)
    for _ in range(200):
        key, col = f"s{int(rng.integers(0, 3))}", int(rng.integers(0, 2))
        raw = rng.integers(0, 1 << 20, int(rng.integers(1, 300)), np.int64).tobytes()
        kept.add(key, col, raw)
        spooled.add(key, col, raw)
    assert spooled._spool is not None  # it did spool
    a_len, a = kept.finish()
    b_len, b = spooled.finish()
    assert a_len == b_len
    assert list(a) == list(b)
    assert a.size == b.size == sum(map(len, a))
    assert a.crc() == b.crc() == zlib.crc32(b"".join(a))
    b.close()


def test_a_compressed_column_frame_holds_only_its_bytes() -> None:
    """zstandard's output keeps its whole buffer; the writer's frames must not (8 hours
    of constant columns grew a recorder by 1.5 GB)."""
    import tracemalloc

    from recordings.hfr._framed import ColumnFrames

    cols = ColumnFrames(1)
    tracemalloc.start()
    try:
        for _ in range(40):
            cols.add("s", 0, bytes(256 << 10))  # a frame each, ~30 bytes compressed
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2 << 20  # 40 frames of the raw size would be 10 MB


def test_the_snapshot_writer_splits_its_writes_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot of 300 sensors, written with ``IOV_MAX`` lowered to 2: every write of
    the snapshot writer goes through the same split, and the file reads back whole."""
    from recordings.hfr._snapshot import SnapshotRecorder

    calls: list[int] = []
    real = os.writev

    def counting(fd: int, bufs: Any) -> int:
        bufs = list(bufs)
        calls.append(len(bufs))
        return real(fd, bufs)

    monkeypatch.setattr(writev_mod, "IOV_MAX", 2)
    monkeypatch.setattr(os, "writev", counting)
    rec = SnapshotRecorder(tmp_path / "bb.hfr", keep=5.0, pre=1.0, post=0.0, chunk_seconds=0.25)
    n = 0
    for k in range(20):
        for i in range(300):
            rec.write(Frame(f"s{i:03d}", k, k * 100 * MS + i, np.full(3, k, np.float32)))
            n += 1
    request = rec.trigger("test", t=19 * 100 * MS + 299)
    rec.close()
    path = request.wait(5)
    assert max(calls) <= 2
    with open_recording(path) as log:
        assert log.indexed
        assert not log.verify()
        assert len(log.summary().sensors) == 300
        assert log.summary().count == 10 * 300 + 1  # [t - 1 s, t]: 10 rounds and 1 frame


def test_past_the_block_budget_the_index_leaves_blocks_to_the_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hours of stamp blocks would make the INDEX hundreds of MB: past the budget (here
    2 KB) its entries leave them out, packed, and a reader that cannot use the STAMPS
    record takes each chunk's block from its own meta, decoding no payload."""
    from fusion import Nearest
    from recordings._offline_sync import sync_recording
    from recordings.hfr import _writer as writer
    from tests.recordings.helpers import without_stamp_index

    monkeypatch.setattr(writer, "INDEX_BLOCK_BYTES", 2048)
    path = tmp_path / "d.hfr"
    with Recorder(path, wall_clock=False) as rec:
        for frame in drive(30):
            rec.write(frame)
    policy = Nearest("gnss", ["gnss", "cam", "imu"], 20 * MS)
    with open_recording(path) as log:
        assert len(log.chunks) == 30
        assert all(c.stamps is None for c in log.chunks)  # not in the index
        assert not log.verify()
        with sync_recording(log, policy) as g:
            want = g.columns.t.tolist(), g.statistics.groups
    without_stamp_index(path)
    with open_recording(path) as log, sync_recording(log, policy) as g:
        assert not g.statistics.stamp_index
        assert g.statistics.chunks_read == 0  # the blocks came from the chunks' metas
        assert (g.columns.t.tolist(), g.statistics.groups) == want


# -- the chunk table (1.7): opening and seeking without the INDEX's entries ----------------


def _without_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers as before 1.7: the INDEX's entries parsed one by one."""
    from recordings.hfr._locate import ChunkLocator

    monkeypatch.setattr(ChunkLocator, "_read_table", lambda self, at: False)


def test_the_long_file_opens_from_its_chunk_table_as_from_its_index(
    long_file: tuple[Path, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk list, summary, dates and seek keys come from the table's columns (no
    chunk meta built for them) and equal what parsing every INDEX entry gives."""
    from recordings.hfr._chunk_table import ChunkTable

    path, n, _ = long_file
    with open_recording(path) as log:
        assert log.chunk_table_problem is None
        table = log.chunks
        assert isinstance(table, ChunkTable)
        summary, dated, wall = log.summary(), log.dated, log.wall_clock
        assert not any(table._built)  # nothing built for the summary
        chunks = list(table)
    assert summary.count == n
    with monkeypatch.context() as mp:
        _without_table(mp)
        with open_recording(path) as old:
            assert old.chunk_table_problem is not None
            assert not isinstance(old.chunks, ChunkTable)
            assert old.summary() == summary
            assert (old.dated, old.wall_clock) == (dated, wall)
            assert list(old.chunks) == chunks
            assert not old.verify(decode=False)


def test_a_seek_in_the_long_file_decodes_only_the_chunks_it_reads(
    long_file: tuple[Path, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``frames(start=...)`` bisects the table's columns and decompresses only the
    chunks holding the window: counted, not timed."""
    import recordings.hfr._chunk_reader as records_mod

    path, _, _ = long_file
    real = records_mod.decompress_chunk
    calls: list[int] = []

    def counting(payload: Any, chunk: Any, **kw: Any) -> Any:
        calls.append(chunk.index)
        return real(payload, chunk, **kw)

    monkeypatch.setattr(records_mod, "decompress_chunk", counting)
    got = {}
    for use_table in (True, False):
        with monkeypatch.context() as mp:
            if not use_table:
                _without_table(mp)
            calls.clear()
            with open_recording(path, readahead=0) as log:
                t0 = log.summary().t_start or 0
                start = t0 + 1300 * 1_000_000_000
                got[use_table] = [
                    (f.sensor, f.seq, f.t) for f in log.frames(start=start, end=start + 50 * MS)
                ]
                built = sum(c is not None for c in getattr(log.chunks, "_built", []))
            assert 1 <= len(calls) <= 2, calls
            if use_table:
                assert built <= 4  # the chunks around the window, not the 1,400
    assert got[True] == got[False]
    assert 70 <= len(got[True]) <= 76  # 50 ms of 1,440 frames a second


def test_check_reports_a_chunk_table_that_disagrees_with_the_index(tmp_path: Path) -> None:
    """A table that passes its CRCs but lies (chunk 1's wall anchor changed as the
    writer made it) is caught by ``check``, which compares it with every INDEX entry."""
    import dataclasses

    import recordings.hfr._writer as writer_mod
    from recordings.hfr._chunk_table import ChunkTableWriter

    real_add = ChunkTableWriter.add

    def lying(self: ChunkTableWriter, meta: Any, offset: int, length: int) -> None:
        if meta.index == 1:
            meta = dataclasses.replace(meta, wall=(1, 2))
        real_add(self, meta, offset, length)

    path = tmp_path / "short.hfr"
    for lie in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(writer_mod, "INDEX_BLOCK_BYTES", 0)  # an INDEX without blocks: a table
            if lie:
                mp.setattr(ChunkTableWriter, "add", lying)
            with Recorder(path, wall_clock=False, chunk_duration=0.1) as rec:
                for frame in drive(2):
                    rec.write(frame)
        with open_recording(path) as log:
            assert log.chunk_table_problem is None
            assert (log.chunks[1].wall == (1, 2)) is lie
            problems = [str(e) for e in log.verify()]
        assert bool(problems) is lie
    assert any("chunk table does not match the footer index at chunk 1" in p for p in problems)


# -- sensor summaries (1.7): info of the long file from the footer index alone ---------


def test_info_of_the_long_file_reads_the_summaries_and_no_chunk(
    long_file: tuple[Path, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``info`` of 2 M frames takes each sensor's report from the summaries the recorder
    wrote at close: no chunk payload decompressed, no footer column decoded; the report
    equals the one computed from every frame's columns (delay percentiles within the
    summary's bucket of 2**bin ns)."""
    import recordings.hfr._chunk_reader as records_mod
    import recordings.hfr._details as details_mod
    import recordings.hfr._framed as framed_mod
    import recordings.hfr._stamp_index as stamp_index_mod
    from hyperframes.cli import main
    from hyperframes.cli._sensorstats import columns_from_footer, summarize

    path, n, _ = long_file
    with open_recording(path) as log:
        exact = {name: summarize(c) for name, c in columns_from_footer(log).items()}  # type: ignore[union-attr]
        wires = log.sensor_summaries()
    assert wires is not None
    decoded: list[str] = []
    real_chunk = records_mod.decompress_chunk

    def chunk(*a: Any, **k: Any) -> Any:
        decoded.append("chunk")
        return real_chunk(*a, **k)

    def column(*a: Any, **k: Any) -> Any:
        decoded.append("column")
        return framed_mod.unframe(*a, **k)

    monkeypatch.setattr(records_mod, "decompress_chunk", chunk)
    for module in (stamp_index_mod, details_mod):  # the footer's columns
        monkeypatch.setattr(module, "unframe", column)
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["info", str(path), "--json"]) == 0
    assert decoded == []
    doc = json.loads(out.getvalue())
    assert doc["frames"] == n
    assert doc["details_from"] == "footer"
    assert doc["frames_read_because"] is None
    for name, want in exact.items():
        got = {k: doc["sensors"][name][k] for k in want}
        wire = wires[name]
        assert isinstance(wire, dict)
        width_ms = 2 ** int(wire["bin"]) / 1e6
        for key in ("delay_ms_p50", "delay_ms_p99"):
            assert abs(got.pop(key) - want.pop(key)) <= width_ms
        assert got == want, name


def test_check_reports_a_summary_that_does_not_match_the_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary that passes the INDEX's CRC but lies (one more frame dropped) is found
    by ``check``, which reduces the decoded frames again and compares."""
    from recordings.hfr._details import DetailsWriter

    path = tmp_path / "s.hfr"
    real = DetailsWriter.summaries
    for lie in (False, True):

        def summaries(self: DetailsWriter, lie: bool = lie) -> dict[str, Any]:
            got = real(self)
            if lie:
                got["imu"]["dropped"] += 1
            return got

        monkeypatch.setattr(DetailsWriter, "summaries", summaries)
        with Recorder(path, wall_clock=False) as rec:
            for frame in drive(3):
                rec.write(frame)
        monkeypatch.undo()
        with open_recording(path) as log:
            assert log.sensor_summaries() is not None
            problems = [str(e) for e in log.verify()]
        assert bool(problems) is lie
    assert "the sensor summary of 'imu' does not match its frames" in problems[0]


@pytest.mark.parametrize(
    ("lie", "reason"),
    [
        ("crc", "fails its CRC"),
        ("offset", "outside the chunk region or overlapping"),
        ("counts", "do not add up"),
        ("range", "outside their chunk's"),
        ("pointer", "does not point at a chunk table"),
    ],
)
def test_a_chunk_table_that_does_not_check_out_is_not_used(
    tmp_path: Path, lie: str, reason: str
) -> None:
    """The reader falls back to the INDEX's entries, saying why, and reads the same."""
    import dataclasses

    import recordings.hfr._writer as writer_mod
    from recordings.hfr._chunk_table import ChunkTableWriter

    real_add, real_record = ChunkTableWriter.add, ChunkTableWriter.record

    def add(self: ChunkTableWriter, meta: Any, offset: int, length: int) -> None:
        if meta.index == 1 and lie == "offset":
            offset += 1 << 40
        if meta.index == 1 and lie == "counts":
            meta = dataclasses.replace(meta, counts=(meta.counts[0] + 1, *meta.counts[1:]))
        if meta.index == 1 and lie == "range":
            a, b = meta.ranges[0]
            meta = dataclasses.replace(meta, ranges=((a - 1, b), *meta.ranges[1:]))
        real_add(self, meta, offset, length)

    def record(self: ChunkTableWriter) -> tuple[list[bytes], int]:
        pieces, length = real_record(self)
        if lie == "crc":
            pieces[-1] = pieces[-1][:-1] + bytes([pieces[-1][-1] ^ 1])
        if lie == "pointer":  # the INDEX points one byte into the record
            pieces = [b"\0", *pieces[:-1], pieces[-1][:-1]]
        return pieces, length

    path = tmp_path / "t.hfr"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_mod, "INDEX_BLOCK_BYTES", 0)
        mp.setattr(ChunkTableWriter, "add", add)
        mp.setattr(ChunkTableWriter, "record", record)
        with Recorder(path, wall_clock=False, chunk_duration=0.1) as rec:
            for frame in drive(2):
                rec.write(frame)
    with open_recording(path) as log:
        assert reason in (log.chunk_table_problem or "")
        assert isinstance(log.chunks, list)  # the INDEX parsed
        assert len(log.chunks) > 10
        assert log.summary().count == 2 * sum(RATES.values())
        assert not log.verify()


def test_a_summary_that_fails_costs_only_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reducer that raises (a bug) leaves its reason in the summaries; the recording
    closes with every frame and its footer."""
    from recordings.hfr._sensor_summary import SensorReducer

    def broken(self: SensorReducer, *a: Any, **k: Any) -> None:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(SensorReducer, "finish", broken)
    path = tmp_path / "s.hfr"
    with Recorder(path, wall_clock=False) as rec:
        for frame in drive(1):
            rec.write(frame)
    with open_recording(path) as log:
        assert log.summary().count == sum(RATES.values())
        summaries = log.sensor_summaries()
        assert summaries is not None
        assert all("could not be reduced (ZeroDivisionError" in str(v) for v in summaries.values())
        assert log.frame_details() is not None


def test_a_live_recordings_dates_from_the_chunk_table_equal_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wall anchors and dated sensors (a live clock: frames near their chunk's anchor,
    one sensor on its own clock) read from the table's columns as from the INDEX."""
    import dataclasses
    import time

    import recordings.hfr._writer as writer_mod
    from recordings.hfr._chunk_table import ChunkTable

    path = tmp_path / "live.hfr"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_mod, "INDEX_BLOCK_BYTES", 0)
        with Recorder(path, chunk_duration=0.05) as rec:
            now = time.monotonic_ns()
            for i in range(200):
                rec.write(Frame("imu", i, now + i * MS, np.zeros(3)))
                rec.write(Frame("pts", i, i * MS, np.zeros(3)))  # its own stamps: not dated

    def facts(log: Any) -> tuple[Any, ...]:
        wall = log.wall_clock
        assert wall is not None
        s = dataclasses.replace(log.summary(), wall_clock=None)  # WallClock: by identity
        return s, log.dated, wall.anchors, s.utc_start

    with open_recording(path) as log:
        assert isinstance(log.chunks, ChunkTable)
        got = facts(log)
    assert got[1] == frozenset({"imu"})
    _without_table(monkeypatch)
    with open_recording(path) as old:
        assert not isinstance(old.chunks, ChunkTable)
        assert facts(old) == got
