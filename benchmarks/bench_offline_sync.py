"""Offline sync: groups from stamp columns (numpy) against the streaming Nearest, same run.

Workload: camera 30 Hz, LiDAR 10 Hz (the reference), IMU 200 Hz as a window
sensor; stamps jittered by up to 2 ms. Rows:

* grouping on stamps already in memory: ``group_columns`` against feeding the
  same stamps (as data-less frames) to ``Nearest.push``/``drain``, with a
  check that both give the same groups;
* the same on a dependent-heavy workload (shared tick grid, windows that
  touch, tolerance wider than half the camera period), where references share
  frames and the runs are resolved by the loop;
* a whole recording (small payloads): ``sync_recording`` (stamps read from the
  chunks, validated as the frame reader does) against replaying every frame through ``Nearest``;
* against the tools users would pick instead (``--peers``, needs the ``bench``
  extra: polars and pandas): 1 M and 10 M stamps of LiDAR 10 Hz (reference),
  camera 30 Hz (nearest within 20 ms) and IMU 200 Hz (nearest within 2 ms),
  ``group_columns`` (the compiled merge kernel, and its numpy form) against
  polars ``join_asof(strategy="nearest", tolerance=)`` and pandas
  ``merge_asof(direction="nearest", tolerance=)`` on the same columns,
  already in each library's own frames; interleaved, best of ``--repeat``,
  wall and process CPU time, and a check that the complete groups are the
  same rows (a tie goes to the earlier frame in hyperframes, so ties are kept
  out of the stamps). The kernel's one-time cost (numba's import and the
  machine code loaded from its cache, or compiled with the cache cold) is
  measured apart, before the timed runs.

Run: .venv/bin/python benchmarks/bench_offline_sync.py [--seconds 3600] [--peers]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from fusion import Frame, Nearest
from fusion.policies._columnar import group_columns
from recordings import Recorder, open_recording
from recordings._offline_sync import sync_recording

MS = 1_000_000
ROOT = Path(__file__).resolve().parents[1]
RATES = {"cam": 30, "lidar": 10, "imu": 200}


def make_stamps(seconds: int, *, jitter: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    out = {}
    for name, hz in RATES.items():
        n = seconds * hz
        t = np.arange(n, dtype=np.int64) * (1_000_000_000 // 600) * (600 // hz)
        if jitter:
            t = t + rng.integers(0, 2 * MS, n)
        out[name] = t
    return out


def policy(tolerance: int = 20 * MS, window: tuple[int, int] = (50 * MS, 49 * MS)) -> Nearest:
    return Nearest("lidar", ["lidar", "cam", "imu"], tolerance, windows={"imu": window})


def as_frames(stamps: dict[str, np.ndarray]) -> list[Frame]:
    events = sorted((int(t), name, i) for name, col in stamps.items() for i, t in enumerate(col))
    return [Frame(name, i, t) for t, name, i in events]


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def streaming(frames: list[Frame], make: Callable[[], Nearest]) -> list[tuple[int, tuple]]:
    pol = make()
    out = []
    for f in frames:
        out += pol.push(f)
    out += pol.drain()
    return [(g.t, tuple(g.keys)) for g in out]


def offline_keys(stamps: dict[str, np.ndarray], cols) -> list[tuple[int, tuple]]:
    out = []
    lo, hi = cols.spans["imu"]
    for i, t in enumerate(cols.t.tolist()):
        keys = [("lidar", int(cols.picks["lidar"][i]))]
        if cols.picks["cam"][i] >= 0:
            keys.append(("cam", int(cols.picks["cam"][i])))
        keys += [("imu", j) for j in range(int(lo[i]), int(hi[i]))]
        out.append((t, tuple(keys)))
    return out


def grouping_row(stamps, make, repeat: int) -> tuple[float, float, bool]:
    n = sum(len(c) for c in stamps.values())
    frames = as_frames(stamps)
    t_stream, stream_groups = best_of(lambda: streaming(frames, make), max(1, repeat // 3))
    group_columns(make(), {s: t[:100] for s, t in stamps.items()}, compiled=True)  # JIT warm
    t_cols, cols = best_of(lambda: group_columns(make(), stamps, compiled=True), repeat)
    same = offline_keys(stamps, cols) == stream_groups
    return n / t_cols, n / t_stream, same


def recording_row(seconds: int, tmp: Path) -> tuple[float, float, int, float, bool]:
    stamps = make_stamps(seconds, jitter=True)
    path = tmp / "bench.hfr"
    rng = np.random.default_rng(3)
    payload = {
        "cam": np.zeros((24, 32), np.uint8),
        "imu": np.zeros(6, np.float64),
    }
    with Recorder(path) as rec:
        for f in as_frames(stamps):
            # Fresh point clouds, so chunks weigh what real ones do (8 kB a sweep).
            f.data = (
                rng.random((500, 4), dtype=np.float32) if f.sensor == "lidar" else payload[f.sensor]
            )
            rec.write(f)
    n = sum(len(c) for c in stamps.values())

    def replay() -> list:
        pol = policy()
        out = []
        with open_recording(path) as log:
            for f in log.frames():
                out += pol.push(f)
        out += pol.drain()
        return [(g.t, tuple(g.keys)) for g in out]

    def offline() -> list:
        with sync_recording(path, policy()) as groups:
            cols = groups.columns
            seqs = {s: st.seq for s, st in groups.stamps.items()}
            lo, hi = cols.spans["imu"]
            out = []
            for i, t in enumerate(cols.t.tolist()):
                keys = [("lidar", int(seqs["lidar"][cols.picks["lidar"][i]]))]
                if cols.picks["cam"][i] >= 0:
                    keys.append(("cam", int(seqs["cam"][cols.picks["cam"][i]])))
                keys += [("imu", int(q)) for q in seqs["imu"][lo[i] : hi[i]]]
                out.append((t, tuple(keys)))
            return out

    t_replay, a = best_of(replay, 1)
    t_off, b = best_of(offline, 3)
    tracemalloc.start()
    with sync_recording(path, policy()):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return n / t_off, n / t_replay, path.stat().st_size, peak / n, a == b


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` rows: grouping on 10 min of stamps, and a 60 s recording."""
    off, st, same = grouping_row(make_stamps(600, jitter=True), policy, 3)
    with tempfile.TemporaryDirectory() as tmp:
        f_off, f_st, _, _, f_same = recording_row(60, Path(tmp))
    return [
        {
            "measure": "offline grouping on stamps (Nearest, 3 sensors)",
            "value": f"{off:,.0f} frames/s",
            "ratio": f"{off / st:.1f}x streaming Nearest",
            "target": ">= 5,000,000/s, same groups",
            "met": off >= 5e6 and same,
        },
        {
            "measure": "sync_recording, stamps read + grouped",
            "value": f"{f_off:,.0f} frames/s",
            "ratio": f"{f_off / f_st:.1f}x replay + Nearest",
            "target": "reported, same groups",
            "met": f_same,
        },
    ]


PEER_RATES = {"lidar": 10, "cam": 30, "imu": 200}
PEER_TOLERANCE = {"cam": 20 * MS, "imu": 2 * MS}


def peer_stamps(total: int) -> dict[str, np.ndarray]:
    """About ``total`` stamps of the three sensors, jittered; the reference's stamps are
    odd and the others' even multiples of 2 ns plus 1 ns apart, so no reference is
    exactly halfway between two frames (the libraries break ties differently)."""
    rng = np.random.default_rng(7)
    seconds = total // sum(PEER_RATES.values())
    out = {}
    for name, hz in PEER_RATES.items():
        n = seconds * hz
        t = np.arange(n, dtype=np.int64) * (1_000_000_000 // hz)
        t = t + 4 * rng.integers(0, MS // 2, n)
        out[name] = t + 1 if name == "lidar" else t + 2 * (name == "imu")
    return out


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def peers_row(total: int, repeat: int) -> dict[str, object]:
    """hyperframes, polars and pandas on the same stamps, interleaved; best wall and CPU."""
    import pandas as pd
    import polars as pl

    stamps = peer_stamps(total)
    n = sum(len(c) for c in stamps.values())
    pol = Nearest("lidar", list(PEER_RATES), PEER_TOLERANCE)
    pl_frames = {s: pl.DataFrame({"t": t, s: np.arange(len(t))}) for s, t in stamps.items()}
    pd_frames = {s: pd.DataFrame({"t": t, s: np.arange(len(t))}) for s, t in stamps.items()}

    def ours() -> tuple[np.ndarray, ...]:
        cols = group_columns(pol, stamps, compiled=True)
        return cols.t, cols.picks["cam"], cols.picks["imu"]

    def ours_numpy() -> tuple[np.ndarray, ...]:
        cols = group_columns(pol, stamps, compiled=False)
        return cols.t, cols.picks["cam"], cols.picks["imu"]

    def polars() -> tuple[np.ndarray, ...]:
        out = pl_frames["lidar"]
        for s, tol in PEER_TOLERANCE.items():
            out = out.join_asof(pl_frames[s], on="t", strategy="nearest", tolerance=tol)
        out = out.drop_nulls()
        return tuple(out.get_column(c).to_numpy() for c in ("t", "cam", "imu"))

    def pandas() -> tuple[np.ndarray, ...]:
        out = pd_frames["lidar"]
        for s, tol in PEER_TOLERANCE.items():
            out = pd.merge_asof(out, pd_frames[s], on="t", direction="nearest", tolerance=tol)
        out = out.dropna()
        return tuple(out[c].to_numpy(np.int64) for c in ("t", "cam", "imu"))

    best: dict[str, tuple[float, float]] = {}
    results: dict[str, tuple[np.ndarray, ...]] = {}
    for _ in range(repeat):
        runs = (
            ("hyperframes", ours),
            ("numpy", ours_numpy),
            ("polars", polars),
            ("pandas", pandas),
        )
        for name, fn in runs:
            wall, cpu, out = timed(fn)
            old = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(old[0], wall), min(old[1], cpu))
            results[name] = out  # type: ignore[assignment]
    same = all(
        len(results[p]) == 3
        and all(
            np.array_equal(a, b) for a, b in zip(results["hyperframes"], results[p], strict=True)
        )
        for p in ("numpy", "polars", "pandas")
    )
    return {"frames": n, "groups": len(results["hyperframes"][0]), "best": best, "same": same}


def kernel_load() -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of the kernel's first call in a fresh process: cache
    cold (the C kernel is built) and then warm (loaded); numba's import timed
    apart (the C kernel does not need it)."""
    code = (
        "import time\n"
        "def now(): return time.perf_counter(), time.process_time()\n"
        "a = now(); import numba; b = now()\n"
        "import numpy as np; from fusion import Nearest\n"
        "from fusion.policies._columnar import group_columns\n"
        "t = np.arange(1000, dtype=np.int64); c = now()\n"
        "group_columns(Nearest('a', ['a', 'b'], 3), {'a': t[::10], 'b': t}, compiled=True)\n"
        "d = now()\n"
        "print(b[0] - a[0], b[1] - a[1], d[0] - c[0], d[1] - c[1])\n"
    )
    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {
            **os.environ,
            "NUMBA_CACHE_DIR": cache,
            "HYPERFRAMES_CACHE_DIR": cache,  # the C kernel: built cold, loaded warm
            "PYTHONPATH": str(ROOT),
        }
        for what in ("cold", "warm"):
            res = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            imp_wall, imp_cpu, wall, cpu = map(float, res.stdout.split())
            out[f"import numba ({what})"] = (imp_wall, imp_cpu)
            out[f"first call, {what} cache"] = (wall, cpu)
    return out


# One call of each library in a process of its own; the stamps are read from .npy
# files before the clock starts. ``mode``: "fresh" (the clock starts before the
# library's import), "imported" (polars, numpy and fusion already imported, as in
# a user's process that uses both; the clock covers the first call only).
ONE_CALL = """
import sys, time
import numpy as np
mode, who, folder = sys.argv[1:4]
stamps = {s: np.load(f"{folder}/{s}.npy") for s in ("lidar", "cam", "imu")}
tol = {"cam": 20_000_000, "imu": 2_000_000}
if mode == "imported":
    import polars as pl
    from fusion import Nearest
    from fusion.policies._columnar import group_columns
w0, c0 = time.perf_counter(), time.process_time()
if who == "polars":
    import polars as pl
    frames = {s: pl.DataFrame({"t": t, s: np.arange(len(t))}) for s, t in stamps.items()}
    out = frames["lidar"]
    for s, d in tol.items():
        out = out.join_asof(frames[s], on="t", strategy="nearest", tolerance=d)
    rows = out.drop_nulls().height
else:
    from fusion import Nearest
    from fusion.policies._columnar import group_columns
    cols = group_columns(Nearest("lidar", ["lidar", "cam", "imu"], tol), stamps)
    rows = len(cols)
w1, c1 = time.perf_counter(), time.process_time()
from fusion.policies import _nearest_native
how = "C-kernel" if _nearest_native.loaded() else "numba" if "numba" in sys.modules else "numpy"
print(w1 - w0, c1 - c0, rows, how if who != "polars" else "polars")
"""


def one_call_rows(total: int, repeat: int, cache: str | None = None) -> list[dict[str, object]]:
    """The single-call ways a user calls it: a fresh process (imports counted) and a
    process that already imported polars and fusion; best of ``repeat`` processes each,
    alternating polars and hyperframes."""
    rows = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if cache is not None:
        env["HYPERFRAMES_CACHE_DIR"] = cache
    # As installed: the modules' bytecode compiled once (pip does it), not at every import.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    prime = "import polars, fusion.policies._columnar, fusion.policies._nearest_native"
    subprocess.run([sys.executable, "-c", prime], env=env, check=True)
    with tempfile.TemporaryDirectory() as folder:
        for s, t in peer_stamps(total).items():
            np.save(f"{folder}/{s}.npy", t)
        for mode in ("fresh", "imported"):
            best: dict[str, list[float]] = {}
            found: dict[str, tuple[int, str]] = {}
            for _ in range(repeat):
                for who in ("polars", "hyperframes"):
                    res = subprocess.run(
                        [sys.executable, "-c", ONE_CALL, mode, who, folder],
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    wall, cpu, groups, how = res.stdout.split()
                    old = best.get(who, [float("inf"), float("inf")])
                    best[who] = [min(old[0], float(wall)), min(old[1], float(cpu))]
                    found[who] = (int(groups), how)
            rows.append({"mode": mode, "best": best, "found": found})
    return rows


def print_one_call(repeat: int) -> None:
    print(f"load average before: {os.getloadavg()}")
    from fusion.policies import _nearest_native

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "HYPERFRAMES_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        code = (
            "import resource, time\n"
            "from fusion.policies import _nearest_native as n\n"
            "def cpu():\n"
            "    return sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime\n"
            "               for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
            "t, c = time.perf_counter(), cpu(); n.build(); b = time.perf_counter()\n"
            "print(b - t, cpu() - c)\n"
        )
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        wall, cpu = map(float, res.stdout.split())
        print(
            f"C kernel build (once per installation): {wall:.2f} s wall, CPU {cpu:.2f} s (the compiler included)"
        )
    if not _nearest_native.load():
        print(f"the C kernel is not available: {_nearest_native.failure()}")
    table = Table(title="one call of each, in a process of its own (best of the processes)")
    for col in (
        "stamps",
        "process",
        "hyperframes",
        "polars join_asof",
        "vs polars (wall / CPU)",
        "same groups",
    ):
        table.add_column(col, justify="right")
    for total in (1_000_000, 10_000_000):
        for row in one_call_rows(total, repeat):
            best, found = row["best"], row["found"]
            assert isinstance(best, dict)
            assert isinstance(found, dict)
            h, p = best["hyperframes"], best["polars"]
            table.add_row(
                f"{total:,}",
                "fresh, imports counted"
                if row["mode"] == "fresh"
                else "polars + fusion imported, first call",
                f"{h[0] * 1e3:.1f} ms (CPU {h[1] * 1e3:.1f}), {found['hyperframes'][1]}",
                f"{p[0] * 1e3:.1f} ms (CPU {p[1] * 1e3:.1f})",
                f"{p[0] / h[0]:.2f}x / {p[1] / h[1]:.2f}x",
                str(found["hyperframes"][0] == found["polars"][0]),
            )
    Console(width=240).print(table)
    print(f"load average after: {os.getloadavg()}")


def print_peers(repeat: int) -> None:
    print(f"load average before: {os.getloadavg()}")
    load = kernel_load()
    group_columns(
        Nearest("a", ["a", "b"], 3), {"a": np.arange(9), "b": np.arange(9)}, compiled=True
    )
    print(", ".join(f"{k} {w:.2f} s (CPU {c:.2f} s)" for k, (w, c) in load.items()))
    table = Table(title="offline grouping vs polars join_asof / pandas merge_asof (in memory)")
    for col in (
        "stamps",
        "hyperframes",
        "numpy form",
        "polars",
        "pandas",
        "vs polars",
        "vs pandas",
        "same rows",
    ):
        table.add_column(col, justify="right")
    for total in (1_000_000, 10_000_000):
        row = peers_row(total, repeat)
        n, best = row["frames"], row["best"]
        assert isinstance(n, int)
        assert isinstance(best, dict)

        def cell(name: str, n: int = n, best: dict = best) -> str:
            wall, cpu = best[name]
            return f"{n / wall / 1e6:.1f} M/s ({wall * 1e3:.1f} ms, CPU {cpu * 1e3:.1f} ms)"

        ours = best["hyperframes"]
        table.add_row(
            f"{n:,}",
            cell("hyperframes"),
            cell("numpy"),
            cell("polars"),
            cell("pandas"),
            f"{best['polars'][0] / ours[0]:.2f}x (CPU {best['polars'][1] / ours[1]:.2f}x)",
            f"{best['pandas'][0] / ours[0]:.2f}x (CPU {best['pandas'][1] / ours[1]:.2f}x)",
            str(row["same"]),
        )
    Console(width=240).print(table)
    print(f"load average after: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=3600, help="sensor time (grouping rows)")
    parser.add_argument("--file-seconds", type=int, default=600, help="sensor time (recording row)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--peers", action="store_true", help="only the polars / pandas rows (bench extra)"
    )
    parser.add_argument(
        "--one-call",
        action="store_true",
        help="one call per process against polars: fresh (imports counted) and already imported",
    )
    args = parser.parse_args()
    if args.peers:
        print_peers(args.repeat)
        return
    if args.one_call:
        print_one_call(args.repeat)
        return

    table = Table(title="offline sync (3 sensors: cam 30 Hz, lidar 10 Hz ref, imu 200 Hz window)")
    for col in ("measure", "offline", "streaming Nearest", "ratio", "same groups"):
        table.add_column(col, justify="right" if col != "measure" else "left")

    jittered = make_stamps(args.seconds, jitter=True)
    off, st, same = grouping_row(jittered, policy, args.repeat)
    table.add_row(
        "grouping on stamps",
        f"{off:,.0f} frames/s",
        f"{st:,.0f} frames/s",
        f"{off / st:.1f}x",
        str(same),
    )

    grid = make_stamps(args.seconds // 4, jitter=False)

    def dependent() -> Nearest:
        return policy(tolerance=20 * MS, window=(50 * MS, 50 * MS))

    off, st, same = grouping_row(grid, dependent, args.repeat)
    table.add_row(
        "grouping, every reference shares frames",
        f"{off:,.0f} frames/s",
        f"{st:,.0f} frames/s",
        f"{off / st:.1f}x",
        str(same),
    )

    with tempfile.TemporaryDirectory() as tmp:
        off, st, size, per_frame, same = recording_row(args.file_seconds, Path(tmp))
    table.add_row(
        f"whole .hfr ({size / 1e6:.0f} MB), stamps read + grouped",
        f"{off:,.0f} frames/s",
        f"{st:,.0f} frames/s (replay)",
        f"{off / st:.1f}x",
        str(same),
    )
    table.add_row("peak Python memory of sync_recording", f"{per_frame:.0f} B/frame", "", "", "")
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
