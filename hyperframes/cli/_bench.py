"""``hyperframes bench``: every benchmark, quickly, in one table.

Each ``benchmarks/bench_*.py`` is a standalone script with its own CLI and its
full-size workload (``make bench`` runs those). This command imports each one
and runs a *quick* version of it: smaller inputs, fewer repeats, each figure
still measured against its baseline in the same run. It prints one table:
benchmark, measure, value, ratio to the baseline, target, and whether the
target was met. Quick figures are noisier than the scripts' own; a target
missed here is worth a full run before worrying.

A benchmark script can provide its own quick mode: a module-level
``quick() -> list[dict]`` whose rows have the keys ``measure``, ``value``,
``ratio``, ``target`` and ``met`` (bool or None). Without one, the quick
runner below is used; a script with neither is listed as "no quick mode".
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table."""

    benchmark: str
    measure: str
    value: str
    ratio: str = ""
    """The value against the benchmark's baseline, measured in the same run."""
    target: str = ""
    met: bool | None = None
    """None: no target, or the measure could not be taken."""


Runner = Callable[[ModuleType], list[Row]]


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "bench",
        help="run every benchmark quickly and print one table",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this benchmark (sync, clock, infer, ...; repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="benchmarks folder (default: benchmarks/ of the source checkout; not in the wheel)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a target is not met (default: report)"
    )
    parser.set_defaults(func=run)


def find_benchmarks_folder() -> Path:
    """``benchmarks/`` of the checkout this package runs from (absent in an installed wheel)."""
    return Path(__file__).resolve().parents[2] / "benchmarks"


def find_benchmarks(folder: Path | None = None) -> dict[str, Path]:
    """``{name: path}`` of ``bench_<name>.py`` in ``folder`` (default: next to the packages)."""
    root = folder or find_benchmarks_folder()
    if not root.is_dir():
        return {}
    return {p.stem.removeprefix("bench_"): p for p in sorted(root.glob("bench_*.py"))}


def load(name: str, path: Path) -> ModuleType:
    """Import a benchmark script as a module (its ``main`` does not run)."""
    root = str(path.resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)  # scripts import the packages and tests/ helpers
    spec = importlib.util.spec_from_file_location(f"hyperframes_bench_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(args: argparse.Namespace) -> int:
    quiet = bool(getattr(args, "quiet", False))
    console = Console(quiet=quiet, markup=False, highlight=False, emoji=False)  # literal
    if not console.is_terminal:  # logs and CI: one table row per line
        console = Console(width=220, quiet=quiet, markup=False, highlight=False, emoji=False)
    found = find_benchmarks(args.dir)
    if not found:
        where = args.dir or find_benchmarks_folder()
        print(
            f"hyperframes bench: no bench_*.py found in {where}; the benchmarks ship with the "
            "source repository, not the installed package: clone it and run "
            "'hyperframes bench --dir CLONE/benchmarks'"
        )
        return 2
    if args.list:
        for name, path in found.items():
            print(f"{name:15} {path}  ({quick_mode(name, path)})")
        return 0
    wanted = args.only or list(found)
    unknown = [n for n in wanted if n not in found]
    if unknown:
        print(
            f"hyperframes bench: no benchmark {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(found)}"
        )
        return 2
    rows: list[Row] = []
    failed = False
    started = time.perf_counter()
    quiet = bool(getattr(args, "quiet", False))
    for name in wanted:
        t0 = time.perf_counter()
        with console.status(f"bench {name} ...", spinner="dots"):
            try:
                rows += run_one(name, found[name])
            except Exception as err:  # one broken benchmark must not hide the others
                failed = True
                rows.append(Row(name, "error", f"{type(err).__name__}: {err}"))
        if not quiet:
            console.log(f"{name}: {time.perf_counter() - t0:.1f} s")
    console.print(table(rows, time.perf_counter() - started))
    missed = [r for r in rows if r.met is False]
    if failed:
        return 1
    return 1 if args.strict and missed else 0


def run_one(name: str, path: Path) -> list[Row]:
    """The quick rows of one benchmark."""
    module = load(name, path)
    hook = getattr(module, "quick", None)
    if callable(hook):
        return [
            Row(
                name,
                str(r["measure"]),
                str(r["value"]),
                str(r.get("ratio", "")),
                str(r.get("target", "")),
                r.get("met"),
            )
            for r in hook()
        ]
    runner = RUNNERS.get(name)
    if runner is None:
        return [Row(name, "no quick mode", f"run {path.name} itself")]
    return runner(module)


def table(rows: list[Row], seconds: float) -> Table:
    out = Table(
        title=f"hyperframes bench (quick mode, {seconds:.0f} s)",
        caption="ratio: the value against the benchmark's own baseline, measured in the same run",
    )
    for col in ("benchmark", "measure", "value", "baseline ratio", "target", "met"):
        out.add_column(col, justify="right" if col in ("value", "baseline ratio") else "left")
    for r in rows:
        met = Text("") if r.met is None else Text("yes", "green") if r.met else Text("NO", "red")
        out.add_row(r.benchmark, r.measure, r.value, r.ratio, r.target, met)
    return out


# -- quick runners, one per script (sizes cut; baselines and targets as in the script) ----


def _rate(frames_per_s: float) -> str:
    return f"{frames_per_s:,.0f}/s"


def quick_sync(m: ModuleType) -> list[Row]:
    frames = m.make_frames(20, jitter=True)
    exact = m.make_frames(20, jitter=False)
    base = m.rate(m.NaiveNearest("lidar", ["cam", "imu"], 20 * MS).push, frames, repeat=1)
    rates = list(m.RATES)
    cases: list[tuple[str, Callable[[], Any], list[Any], int]] = [  # targets from bench_sync.py
        ("ExactTime push", lambda: m.ExactTime(rates, queue_size=10), exact, 400_000),
        ("ApproximateTime push", lambda: m.ApproximateTime(rates, queue_size=10), frames, 200_000),
        ("Nearest push",
         lambda: m.Nearest("lidar", rates, tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}),
         frames, 400_000),
    ]  # fmt: skip
    rows = []
    for label, make, data, target in cases:
        value = max(m.rate(make().push, data, repeat=1) for _ in range(3))
        rows.append(Row("sync", label, _rate(value), f"{value / base:,.1f}x naive",
                        f">= {target:,}/s", value >= target))  # fmt: skip
    hub = m.hub_throughput(frames)
    rows.append(Row("sync", "SyncHub end to end", _rate(hub), f"{hub / base:,.1f}x naive",
                    ">= 50,000/s", hub >= 50_000))  # fmt: skip
    p50, p99, _, n = m.hub_latency(2.0)
    rows.append(Row("sync", f"SyncHub added latency p99 (paced, {n} groups)", f"{p99:.3f} ms",
                    f"p50 {p50:.3f} ms", "< 1 ms", p99 < 1.0))  # fmt: skip
    return rows


def quick_clock(m: ModuleType) -> list[Row]:
    frames = m.frames_of(m.HEADLINE, 20)
    pairs = [(f.t_sensor, f.t_arrival) for f in frames if f.t_arrival is not None]
    base = m.cost_us(m.LeastSquaresClock, pairs, 2)
    ours = m.cost_us(m.OnlineClock, pairs, 2)
    t = np.array([f.meta["t_true"] for f in frames])
    late = t >= 10 * 1_000_000_000
    env = m.p99_us(m.errors(m.OnlineClock(), frames, m.HEADLINE.delay_ns)[late])
    ls = m.p99_us(m.errors(m.LeastSquaresClock(), frames, m.HEADLINE.delay_ns)[late])
    matched, total = m.grouping_match(0, 20)
    share = matched / max(1, total)
    return [
        Row("clock", "OnlineClock observe+align", f"{ours:.2f} us/frame",
            f"{ours / base:.2f}x least squares", "< 5 us", ours < 5),
        Row("clock", "alignment error p99 (headline, 10-20 s)", f"{env:.0f} us",
            f"least squares {ls:,.0f} us", "< 500 us", env < 500),
        Row("clock", "Nearest grouping = ground truth", f"{share:.2%}",
            f"{matched}/{total}", ">= 99.9 %", share >= 0.999),
    ]  # fmt: skip


def quick_infer(m: ModuleType) -> list[Row]:
    import anyio

    from fusion.workers import free_cores

    model = m.mid_cnn(224)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.mp4"
        m.make_clip(path, 96)
        images, c_decode = m.stage_decode(path)
        probe = m.BatchWorker(model, providers="cpu")
        anyio.run(probe.start)
        c_pre = m.stage_preprocess(images, probe.max_batch)
        c_run = m.stage_run(model, probe.max_batch, probe.threads, 32)
        bound = free_cores() / (c_decode + c_pre + c_run)
        # The seed article's OpenCV loop needs OpenCV (the bench extra).
        fps_a = m.opencv_loop(path, model)[0] if m.cv2 is not None else float("nan")
        fps_b = anyio.run(m.pipeline, path, model, "cpu")[0]
    versus = f"{fps_b / fps_a:.2f}x OpenCV loop" if fps_a == fps_a else "no OpenCV installed"
    return [
        Row("infer", "VideoSource + BatchWorker (720p -> mid_cnn)", f"{fps_b:,.0f} frames/s",
            versus, ">= 1.5x OpenCV loop", fps_b >= 1.5 * fps_a),
        Row("infer", "share of the CPU-sum bound", f"{fps_b / bound:.0%}",
            f"bound {bound:,.0f} frames/s", ">= 75 %", fps_b >= 0.75 * bound),
    ]  # fmt: skip


def quick_recording(m: ModuleType) -> list[Row]:
    setattr(m, "REPEAT", 1)  # noqa: B010 - the script's best-of-N module setting
    rows = []
    targets = {  # hfr / mcap: write, read, window, size (issue 19: >= 1.5x write and read)
        "large": (1.5, 1.5, 1.0, 1.0),
        "camlidar": (1.5, 1.5, 1.0, 1.0),
        "small": (3.0, 10.0, 1.0, 1.0),
    }
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None  # as the script: not the disk
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        sessions = [
            ("large", m.large_session(2.0), False),
            ("camlidar", m.camlidar_session(1.0), True),  # both tools at their defaults
            ("small", m.small_session(20_000), False),
        ]
        for session, frames, defaults in sessions:
            by = {tool: r for _, tool, r in m.run_session(session, frames, Path(tmp), defaults)}
            h, mc = by["hfr"], by["mcap"]
            figures = [
                ("write", h["raw_mb"] / h["write"], "MB/s", mc["write"] / h["write"]),
                ("read", h["raw_mb"] / h["read"], "MB/s", mc["read"] / h["read"]),
                ("1 s window", h["window"] * 1e3, "ms", mc["window"] / h["window"]),
                ("size", h["raw_mb"] * 1e6 / h["size"], "x compression", mc["size"] / h["size"]),
            ]
            for (label, value, unit, ratio), target in zip(figures, targets[session], strict=True):
                digits = 4 if label == "size" else 2  # sizes tie closely: show the difference
                rows.append(Row("recording", f"{session}: {label}", f"{value:,.1f} {unit}",
                                f"{ratio:.{digits}f}x mcap", f">= {target:g}x mcap",
                                ratio >= target))  # fmt: skip
            if session != "small":  # issue 29: CPU per GB written, hfr's over mcap's
                cpu = h["write_cpu"] / mc["write_cpu"]
                rows.append(Row("recording", f"{session}: write CPU per GB",
                                f"{h['write_cpu'] / h['raw_mb'] * 1e3:.2f} s/GB",
                                f"{cpu:.2f}x mcap's", "<= 0.67x mcap's", cpu <= 0.67))  # fmt: skip
    return rows


def quick_lidar(m: ModuleType) -> list[Row]:
    import importlib.util
    from functools import partial

    if importlib.util.find_spec("velodyne_decoder") is None:
        return [Row("lidar", "Velodyne decode", "skipped: velodyne_decoder is not installed")]
    rows = []
    for name, _where, packets, model, vd_model in m.velodyne_cases():
        payloads = [p for _t, p in packets]
        config = m._vd_config(model, vd_model)
        stream = [(t / 1e9, p) for t, p in packets]
        prebuilt = m.vd_packets(packets)
        points = m.ours(payloads, model)  # also compiles (or loads) the kernel: not timed
        best = m.interleaved_best(3, {"ours": partial(m.ours, payloads, model),
                                      "vd stream": partial(m.vd_stream, stream, config),
                                      "vd scan": partial(m.vd_scan, prebuilt, config)})  # fmt: skip
        ratio = min(best["vd stream"], best["vd scan"]) / best["ours"]  # the faster peer
        rows.append(Row("lidar", f"{name} Velodyne decode", f"{points / best['ours'] / 1e6:,.1f} "
                        "Mpoints/s", f"{ratio:.2f}x velodyne_decoder", ">= 1.0x velodyne_decoder",
                        ratio >= 1.0))  # fmt: skip
    return rows + quick_ouster(m)


def quick_ouster(m: ModuleType) -> list[Row]:
    """OusterSource against ouster-sdk's open_source + XYZLut on 100 scans and on the real
    one-scan capture, cold (issue 27)."""
    import importlib.util

    if importlib.util.find_spec("ouster") is None:
        return [Row("lidar", "Ouster decode", "skipped: ouster-sdk is not installed")]
    rate, wall, cpu = m.ouster_quick()
    one, one_wall, one_cpu = m.ouster_capture_quick()
    return [Row("lidar", "Ouster decode (100 scans)", f"{rate:,.0f} scans/s",
                f"{wall:.2f}x ouster-sdk (CPU {cpu:.2f}x)", ">= 1.0x ouster-sdk",
                wall >= 1.0),
            Row("lidar", "Ouster decode (1-scan capture, cold)", f"{one:,.0f} captures/s",
                f"{one_wall:.2f}x ouster-sdk (CPU {one_cpu:.2f}x)", ">= 1.0x ouster-sdk",
                one_wall >= 1.0)]  # fmt: skip


def quick_video(m: ModuleType) -> list[Row]:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return [Row("video", "decode", "skipped: the ffmpeg CLI is not installed")]
    threads = 2
    with tempfile.TemporaryDirectory() as tmp:
        clip = Path(tmp) / "clip.mp4"
        m.make_clip(ffmpeg, clip, 8.0, "1280x720", "veryfast")
        n = m.frame_count(clip)
        fps = {}
        for key, fn in (
            ("ffmpeg", m.ffmpeg_run(ffmpeg, clip, threads, True, n)),
            ("bare", m.pyav_run(clip, "AUTO", False)),
            ("rgb", m.source_run(clip, "rgb24")),
            ("yuv", m.source_run(clip, "yuv420p")),
        ):
            wall, frames = m.best_of(2, fn)
            fps[key] = frames / wall
    rgb, dec = fps["rgb"] / fps["ffmpeg"], fps["yuv"] / fps["bare"]
    return [
        Row("video", "VideoSource rgb24 (720p H.264)", f"{fps['rgb']:,.0f} frames/s",
            f"{rgb:.2f}x ffmpeg rgb24", ">= 0.90x ffmpeg", rgb >= 0.90),
        Row("video", "VideoSource decode stage (yuv420p)", f"{fps['yuv']:,.0f} frames/s",
            f"{dec:.2f}x bare PyAV", ">= 0.95x bare PyAV", dec >= 0.95),
    ]  # fmt: skip


def quick_bags(m: ModuleType) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, topics) in enumerate(m.CASES.items()):
            path = Path(tmp) / f"bag{i}"
            m.write_bag(path, "mcap", 3.0, topics)
            base, expected = m.best_of(2, lambda p=path: m.rosbags_alone(p))
            ours, count = m.best_of(2, lambda p=path: m.bag_source(p))
            if count != expected:
                raise AssertionError(f"BagSource read {count} messages, rosbags {expected}")
            slower = ours / base
            rows.append(Row("bags", f"BagSource: {label}", f"{count / ours:,.0f} msg/s",
                            f"{slower:.2f}x rosbags time", "<= 1.20x", slower <= 1.20))  # fmt: skip
    return rows


RUNNERS: dict[str, Runner] = {
    "sync": quick_sync,
    "clock": quick_clock,
    "infer": quick_infer,
    "recording": quick_recording,
    "lidar": quick_lidar,
    "video": quick_video,
    "bags": quick_bags,
}


def quick_mode(name: str, path: Path) -> str:
    """How ``bench`` runs a script quickly: its own ``quick()``, a runner here, or not at all.

    Read from the source text, so listing imports none of the benchmarks.
    """
    if "\ndef quick(" in path.read_text(encoding="utf-8", errors="replace"):
        return "its quick()"
    return "quick runner" if name in RUNNERS else "no quick mode: run the script itself"
