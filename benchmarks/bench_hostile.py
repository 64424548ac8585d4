"""Benchmark: hostile ``.hfr`` input: crashes, peak memory per class, resync time, and
what validation costs the small-message read path.

* **Corpus**: the hand-crafted hostile classes of ``tests/recordings/hostile.py``
  plus ``--mutations`` random mutations of a valid file's metas and records,
  CRCs recomputed (so the checks behind the CRC are what is tried). Each file
  is opened (index and scan), summarised, read and verified; anything raised
  that is not a ``RecordingError`` is a crash.
* **Peak memory** (tracemalloc) of reading each class, against its bound.
* **Red-team corpus** (``tests/data/hostile/``, one README line per file):
  offline sync on damaged recordings and on stamps at the int64 extremes
  (``sync_*``), bags with hostile message definitions (``bag_*``) and
  encoded video whose packets are garbage (``mp4_*``, exported to MP4 by
  copy and by re-encoding). Each file's outcome, peak memory and CPU time;
  anything raised that is not one of the project's errors is a crash.
* **Resync**: ``info --quick`` (open with the scan path + summary, CPU time) on
  files of 1 and 4 MiB of false record starts; linear means the 4 MiB one takes
  at most about 4x.
* **Command lines** (``tests/cli/hostile_corpus.py``, issue 26): every case run
  as a user runs it (a subprocess in the corpus folder): exit code, one error
  line naming what it is about, no traceback, the input's hash unchanged, wall
  time and the child's peak RSS.
* **Validation cost**: the same files read with the checks on (this code) and
  with them replaced by the unchecked decode they replaced (the baseline, in
  the same run, interleaved), for IMU arrays (columnar chunks) and for small
  dict payloads (msgpack records). Read in the calling thread
  (``readahead=0``) and timed in CPU seconds of that thread
  (``time.thread_time``), best of ``--repeat``, so other jobs on a shared
  machine do not decide the ratio.

    .venv/bin/python benchmarks/bench_hostile.py [--mutations 2000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fusion._frames import Frame  # noqa: E402
from recordings import Recorder, open_recording  # noqa: E402
from recordings.errors import RecordingError  # noqa: E402
from recordings.hfr import _chunk_records as records_module  # noqa: E402
from recordings.hfr._format import PRELUDE, SYNC, RecordKind  # noqa: E402
from recordings.hfr._limits import ReadLimits  # noqa: E402
from tests.recordings.hostile import INT64, Chunk, good_chunks, recording  # noqa: E402

MiB = 1 << 20


def read_everything(path: Path, **kw: Any) -> None:
    for use_index in (True, False):
        with open_recording(path, use_index=use_index, **kw) as log:
            log.summary()
            for _ in log.frames():
                pass
            log.verify()


def classes(tmp: Path) -> dict[str, tuple[Path, dict[str, Any], int]]:
    """name -> (file, reader options, peak-memory bound in bytes)."""
    n = 2_000_000
    count_bomb = b"\xdd" + n.to_bytes(4, "big") + b"\x97\x00\x00\x00\xc0\xc0\xc0\xc0" * n
    k = 400_000
    object_bomb = b"\x91\x97\x00\x00\x00\xc0\xc0\xdd" + k.to_bytes(4, "big") + b"\x80" * k + b"\xc0"
    bad_t = good_chunks(3)
    bad_t[1].records[0][2] = "abc"
    dup = good_chunks(3)
    for r in dup[2].records:
        r[1] -= 6
    big = [Chunk([[0, i, i, None, None, "x" * (2 * MiB), None]], index=i) for i in range(6)]
    listed = good_chunks(10)
    honest = recording(tmp / "honest.hfr", listed)
    with open_recording(honest) as log:
        entries = [{**c.to_msgpack(), "off": c.offset, "len": c.stored_size} for c in log.chunks]
    return {
        "record-count bomb (3 KB, 2M records)": (
            recording(tmp / "count.hfr", [Chunk(head=count_bomb, overrides={"n": n, "c": [n]})]),
            {},
            32 * MiB,
        ),
        "object bomb (400k empty maps), budget 16 MiB": (
            recording(tmp / "obj.hfr", [Chunk(head=object_bomb, overrides={"n": 1, "c": [1]})]),
            {"max_decoded_bytes": 16 * MiB},
            16 * MiB,
        ),
        "readahead of 6 x 2 MiB chunks, budget 600 MiB": (
            recording(tmp / "ahead.hfr", big),
            {"max_decoded_bytes": 600 * MiB, "readahead": 2},
            12 * MiB,
        ),
        "trailer offset 2**63": (
            recording(tmp / "trailer.hfr", good_chunks(4), trailer_offset=1 << 63),
            {},
            4 * MiB,
        ),
        "index: every chunk 3 times": (
            recording(tmp / "index3.hfr", listed, index_entries=entries * 3),
            {},
            4 * MiB,
        ),
        "index: negative offset, string length": (
            recording(
                tmp / "neg.hfr", listed, index_entries=[{**entries[0], "off": -5, "len": "x"}]
            ),
            {},
            4 * MiB,
        ),
        "record t as a string": (recording(tmp / "t.hfr", bad_t), {}, 4 * MiB),
        "duplicate (sensor, seq)": (recording(tmp / "dup.hfr", dup), {}, 4 * MiB),
        "t0 beyond int64 in a chunk meta": (
            recording(tmp / "t0.hfr", [Chunk(good_chunks(1)[0].records, overrides={"t0": INT64})]),
            {},
            4 * MiB,
        ),
    }


CORPUS = ROOT / "tests" / "data" / "hostile"


def sweep_file(path: Path, tmp: Path) -> str:
    """What one corpus file gives (raises only on a crash)."""
    from fusion import Nearest

    if path.name.startswith("sync_"):
        from recordings._offline_sync import sync_recording

        with open_recording(path) as log:
            sensors = [n for n, x in log.summary().sensors.items() if x.count]
            policy = Nearest("lidar", ["lidar", *(n for n in sensors if n != "lidar")], 20_000_000)
            with sync_recording(log, policy) as groups:
                n = sum(1 for _ in groups.groups())
            return f"{n} groups, {len(log.damage)} damaged chunks reported"
    if path.name.startswith("bag_"):
        import anyio

        from adapters import BagSource

        async def read() -> str:
            source = BagSource(path)
            frames = 0
            async with source:
                async for _ in source.frames():
                    frames += 1
            return f"{frames} frames, {len(source.unsupported)} topics refused"

        return anyio.run(read)
    if path.name.startswith("mp4_"):
        from recordings.outputs._export import export_recording

        out = []
        for reencode in (False, True):
            try:
                r = export_recording(
                    path, tmp / "out.mp4", to="mp4", sensors=["cam"], reencode=reencode
                )
                out.append(f"{r.frames_written} written, {sum(r.skipped.values())} counted")
            except ValueError as err:
                out.append(f"refused: {err}")
        return "; ".join(out)
    return "not a corpus class"


def corpus(tmp: Path) -> list[tuple[str, str, int, float, bool]]:
    """``(file, outcome, peak bytes, CPU s, crashed)`` per corpus file."""
    from fusion.errors import HyperframesError

    rows = []
    for path in sorted(CORPUS.iterdir()):
        if path.suffix in (".py", ".md"):
            continue
        tracemalloc.start()
        t0 = time.process_time()
        crashed = False
        try:
            outcome = sweep_file(path, tmp)
        except HyperframesError as err:
            outcome = f"{type(err).__name__}: {err}"
        except Exception as err:
            outcome, crashed = f"CRASH {type(err).__name__}: {err}", True
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        rows.append((path.name, outcome, peak, time.process_time() - t0, crashed))
    return rows


def mutate(rng: random.Random, tmp: Path, i: int) -> Path:
    values: list[Any] = [None, True, -1, 0, 1 << 62, INT64 - 1, (1 << 64) - 1, 1.5, "x", [], {}]
    chunks = good_chunks(4)
    target = rng.choice(["chunk", "record", "index"])
    entries = None
    if target == "chunk":
        key = rng.choice(["i", "t0", "t1", "n", "raw", "rec", "z", "s", "c", "r", "new", "k"])
        chunks[rng.randrange(4)].overrides = {key: rng.choice(values)}
    elif target == "record":
        chunks[rng.randrange(4)].records[rng.randrange(3)][rng.randrange(7)] = rng.choice(values)
    path = recording(tmp / f"m{i % 50}.hfr", chunks)
    if target == "index":
        with open_recording(path) as log:
            entries = [
                {**c.to_msgpack(), "off": c.offset, "len": c.stored_size} for c in log.chunks
            ]
        e = rng.choice(entries)
        e[rng.choice([*e])] = rng.choice(values)
        recording(path, chunks, index_entries=entries)
    return path


def fake_preludes(path: Path, size: int) -> Path:
    fake = bytearray()
    while len(fake) < size:
        meta_len = size - len(fake) - PRELUDE.size - 8
        fake += SYNC + bytes([RecordKind.CHUNK]) + meta_len.to_bytes(4, "little")
        fake += (0).to_bytes(8, "little") + bytes(8) + b"\x8f" * 8
    return recording(path, [*good_chunks(1), bytes(fake), *good_chunks(2)], index=False)


def info_quick(path: Path) -> float:
    """CPU seconds of what ``info --quick`` does: open (scanning) and summarise."""
    t0 = time.thread_time()
    with open_recording(path) as log:
        log.summary()
    return time.thread_time() - t0


@contextmanager
def unchecked() -> Iterator[None]:
    """The decode as it was before validation (the baseline): msgpack without a schema,
    no budget, no field checks."""

    def old_record_frames(rows: list[Any], meta: Any) -> list[Frame]:
        names = meta.sensors
        frames: list[Frame] = []
        append = frames.append
        for sidx, seq, t, ts, ta, data, fmeta in rows:
            if type(sidx) is not int or sidx < 0:
                raise IndexError(f"sensor index {sidx!r}")
            append(Frame(names[sidx], seq, t, data, t if ts is None else ts, ta, fmeta or {}))
        return frames

    def old_typed(head: Any, meta: Any, ext_hook: Any, where: str) -> list[Frame]:
        rows = msgpack.unpackb(head, ext_hook=ext_hook, raw=False, strict_map_key=False)
        if not isinstance(rows, list) or len(rows) != meta.count:
            raise ValueError("count")
        return old_record_frames(rows, meta)

    saved = (
        records_module._record_frames,
        records_module._typed_record_frames,
        ReadLimits.charge,
        records_module._check_column_times,
        ReadLimits.admit,
    )
    records_module._record_frames = old_record_frames
    records_module._typed_record_frames = old_typed
    ReadLimits.charge = lambda *a, **k: 0  # type: ignore[method-assign]
    records_module._check_column_times = lambda *a: None
    ReadLimits.admit = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        (
            records_module._record_frames,
            records_module._typed_record_frames,
            ReadLimits.charge,  # type: ignore[method-assign]
            records_module._check_column_times,
            ReadLimits.admit,  # type: ignore[method-assign]
        ) = saved


def read_frames(path: Path) -> int:
    n = 0
    with open_recording(path, readahead=0) as log:
        for f in log.frames():
            n += 1
            _ = f.data
    return n


def validation_cost(tmp: Path, repeat: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(1)
    sessions: dict[str, list[Frame]] = {
        "IMU arrays (columnar), 200k": [
            Frame("imu", i, i * 5_000_000, rng.normal(0, 1, 6), t_arrival=i * 5_000_000 + 1000)
            for i in range(200_000)
        ],
        "dict payloads (records), 100k": [
            Frame("gps", i, i * 5_000_000, {"lat": 37.1 + i * 1e-7, "lon": -122.0, "fix": 3})
            for i in range(100_000)
        ],
    }
    out = {}
    for name, frames in sessions.items():
        path = tmp / "small.hfr"
        with Recorder(path) as rec:
            for f in frames:
                rec.write(f)
        best = {"checked": float("inf"), "baseline": float("inf")}
        for _ in range(repeat):
            for mode in ("checked", "baseline"):
                if mode == "baseline":
                    with unchecked():
                        t0 = time.thread_time()
                        n = read_frames(path)
                        dt = time.thread_time() - t0
                else:
                    t0 = time.thread_time()
                    n = read_frames(path)
                    dt = time.thread_time() - t0
                assert n == len(frames)
                best[mode] = min(best[mode], dt)
        out[name] = (len(frames) / best["checked"], len(frames) / best["baseline"])
    return out


def timed(fn: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        fn()
        return None, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench`` rows: crashes on the corpus and 100 mutations, resync
    linearity (1 vs 4 MiB) and the validation cost of the dict read path."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        crashes = 0
        paths = [p for p, _, _ in classes(tmp).values()]
        rng = random.Random(18)
        paths += [mutate(rng, tmp, i) for i in range(100)]
        for path in paths:
            try:
                read_everything(path)
            except RecordingError:
                pass
            except Exception:
                crashes += 1
        swept = corpus(tmp)
        crashes += sum(1 for row in swept if row[4])
        t1 = min(info_quick(fake_preludes(tmp / "r1.hfr", MiB)) for _ in range(2))
        t4 = min(info_quick(fake_preludes(tmp / "r4.hfr", 4 * MiB)) for _ in range(2))
        checked, baseline = validation_cost(tmp, 3)["dict payloads (records), 100k"]
    cost = 1 - checked / baseline
    return [
        {
            "measure": f"crashes on {len(paths) + len(swept)} hostile inputs",
            "value": str(crashes),
            "ratio": "",
            "target": "0",
            "met": crashes == 0,
        },
        {
            "measure": "info --quick, 4 MiB of false starts",
            "value": f"{t4 * 1e3:.0f} ms",
            "ratio": f"{t4 / t1:.1f}x the 1 MiB file",
            "target": "linear (~4x)",
            "met": t4 / t1 < 6,
        },
        {
            "measure": "validation cost, small dict messages",
            "value": f"{cost * 100:+.1f} %",
            "ratio": f"{checked / baseline:.2f}x unchecked",
            "target": "< 10 %",
            "met": cost < 0.10,
        },
    ]


def cli_sweep(tmp: Path) -> list[str]:
    """Each command-line case as a subprocess; prints a row per case, returns the failures."""
    import hashlib
    import os
    import subprocess

    from tests.cli.hostile_corpus import build

    folder = tmp / "cli"
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    failures: list[str] = []
    print(f"\n{'command-line case':42} exit  lines  wall s  peak MiB  verdict")
    for case in build(folder):
        guard = folder / case.guard if case.guard else None
        before = hashlib.sha256(guard.read_bytes()).hexdigest() if guard else None
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "hyperframes", *case.argv],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out = child.stdout.read() if child.stdout is not None else ""
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        peak = usage.ru_maxrss / 1024
        done = subprocess.CompletedProcess(child.args, child.returncode, out, "")
        text = done.stdout + done.stderr
        said = [ln for ln in text.splitlines() if case.words in ln]
        kept = guard is None or hashlib.sha256(guard.read_bytes()).hexdigest() == before
        ok = done.returncode == case.code and len(said) == 1 and "Traceback" not in text and kept
        if not ok:
            failures.append(f"{case.name}: exit {done.returncode}: {text.strip()[-200:]}")
        print(
            f"{case.name:42} {done.returncode:4}  {len(text.splitlines()):5}  {wall:6.2f}  "
            f"{peak:8.0f}  {'ok' if ok else 'FAILED'}"
        )
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutations", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        crashes: list[str] = []
        tried = 0
        print("class                                          peak MiB   bound MiB")
        for name, (path, options, bound) in classes(tmp).items():
            tried += 1
            try:
                _, peak = timed(lambda p=path, o=options: read_everything(p, **o))  # type: ignore[misc]
            except RecordingError:
                peak = 0
            except Exception as err:
                crashes.append(f"{name}: {type(err).__name__}: {err}")
                continue
            print(
                f"{name:46} {peak / MiB:8.1f}   {bound / MiB:9.0f}{'' if peak < bound else '  OVER'}"
            )
        rng = random.Random(18)
        for i in range(args.mutations):
            path = mutate(rng, tmp, i)
            tried += 1
            try:
                read_everything(path)
            except RecordingError:
                pass
            except Exception as err:
                crashes.append(f"mutation {i}: {type(err).__name__}: {err}")
        print(
            f"\ninputs tried: {tried} ({args.mutations} CRC-valid mutations), crashes: {len(crashes)}"
        )
        for line in crashes[:10]:
            print("  ", line)
        print("\nred-team corpus (tests/data/hostile)")
        for name, outcome, peak, cpu, crashed in corpus(tmp):
            tried += 1
            if crashed:
                crashes.append(f"{name}: {outcome}")
            print(f"  {name:26} {peak / MiB:6.1f} MiB {cpu:6.2f} s  {outcome[:90]}")
        failed = cli_sweep(tmp)
        print(f"command-line cases failed: {len(failed)}")
        for line in failed:
            print("  ", line)
        small, large = fake_preludes(tmp / "r1.hfr", MiB), fake_preludes(tmp / "r4.hfr", 4 * MiB)
        t1 = min(info_quick(small) for _ in range(5))
        t4 = min(info_quick(large) for _ in range(5))
        print(
            f"\ninfo --quick on false record starts: 1 MiB {t1 * 1e3:.0f} ms, 4 MiB {t4 * 1e3:.0f} ms "
            f"(ratio {t4 / t1:.2f}; linear is ~4)"
        )
        print(f"\nsmall-message read path, CPU time, best of {args.repeat}, interleaved")
        for name, (checked, baseline) in validation_cost(tmp, args.repeat).items():
            print(
                f"  {name:32} checked {checked:10,.0f} fr/s  unchecked {baseline:10,.0f} fr/s  "
                f"cost {(1 - checked / baseline) * 100:+5.1f} %"
            )


if __name__ == "__main__":
    main()
