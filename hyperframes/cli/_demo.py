"""``hyperframes demo``: the whole path on a synthetic drive, checked against ground truth.

A camera (30 Hz, H.264 clip read back through VideoSource), a LiDAR (10 Hz)
and an IMU (200 Hz), each with its own clock offset, skew and jittery link,
run on a virtual clock, so ten seconds of sensor time take about a second.
Each sensor's OnlineClock learns its clock; the hub groups with Nearest on the
LiDAR; two ONNX models built in code run in batch workers (edges on the
camera, bird's-eye-view occupancy on the LiDAR); everything is recorded, the
recording is replayed through the same pipeline, and the command fails unless
the replay gives the same groups and results.

It prints a summary (frames, groups, drops, clock estimates against the truth,
throughput, batch sizes) and writes demo-report.png (alignment error per
sensor over time, group spread, latency, throughput per stage).
No network, no files left behind except the report (and --keep).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from hyperframes.cli._common import printable, styled
from hyperframes.cli._units import seconds_arg

if TYPE_CHECKING:
    from hyperframes.demo import DemoResult, ReportData

MS = 1_000_000
DEFAULT_REPORT = Path("demo-report.png")
_PHASES = {
    "encode": "render + encode camera clip (H.264)",
    "live": "live: sensors -> hub -> models -> recorder",
    "replay": "replay the recording and compare",
}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo",
        help="run sensors -> sync hub -> models -> recording -> replay on built-in synthetic data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seconds",
        type=seconds_arg("--seconds", maximum=86400.0),
        default=10.0,
        help="sensor time to simulate (default: 10)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="FILE.hfr",
        help="keep the recording at this path instead of a temporary file",
    )
    report = parser.add_mutually_exclusive_group()
    report.add_argument(
        "--report",
        type=Path,
        metavar="PATH.png",
        help=f"where to write the report image (default: ./{DEFAULT_REPORT}; "
        "with --quiet, none unless given)",
    )
    report.add_argument("--no-report", action="store_true", help="do not write the report image")
    parser.add_argument("--seed", type=int, default=7, help="random seed of the session")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print only the final line (implies --no-report)"
    )
    parser.set_defaults(func=run)


def report_path(args: argparse.Namespace) -> Path | None:
    """Where the report goes: --report wins; --no-report and --quiet (alone) mean none."""
    if args.no_report:
        return None
    if args.report is not None:
        return Path(args.report)
    return None if args.quiet else DEFAULT_REPORT


def run(args: argparse.Namespace) -> int:
    from hyperframes.demo import run_session

    if not args.seconds >= 1.0:
        print(f"hyperframes demo: --seconds must be at least 1, got {args.seconds}")
        return 2
    console = Console(quiet=args.quiet, markup=False, highlight=False, emoji=False)
    target = report_path(args)
    if target is not None and args.keep is not None:
        from recordings.output_files import OutputIsInput, refuse_overlap

        try:  # the report must not replace the recording it reports on
            refuse_overlap(target, [args.keep])
        except OutputIsInput as err:
            print(f"hyperframes demo: error: {err}")
            return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hyperframes-demo-") as tmp:
        recording = args.keep or Path(tmp) / "demo.hfr"
        with _progress(console, enabled=not args.quiet and console.is_terminal) as progress:
            session = partial(run_session, seed=args.seed, progress=progress)
            result = anyio.run(session, args.seconds, Path(tmp), recording)
        wall = time.perf_counter() - started
        _summary(console, result, recording if args.keep else None, wall)
    written = None
    if target is not None:
        from hyperframes.demo import write_report
        from recordings.output_files import safe_output

        with safe_output(target, [args.keep]) as staged:  # a whole PNG or the old one
            write_report(report_data(result), staged)
        written = target
        line = styled("report:", "", "")
        line.append(" ")
        line.append(printable(written), style="bold")
        line.append(" (alignment, group spread, latency, throughput)")
        console.print(line, soft_wrap=True)
    frames = result.stats.hub.frames_in
    if not result.replay_ok:
        for problem in result.mismatches or ["the live run produced no groups"]:
            print(f"replay mismatch: {problem}")
        print(f"demo FAILED: replay did not reproduce the {len(result.live)} live groups")
        return 1
    print(
        f"demo ok: {len(result.live)} groups from {frames} frames in {wall:.2f} s wall time; "
        f"replay reproduced all {len(result.replay)} groups"
    )
    return 0


@contextmanager
def _progress(console: Console, *, enabled: bool) -> Iterator[Any]:
    """A live progress display; yields the session's ``progress`` callback."""
    bars = Progress(
        TextColumn("{task.description:<44}"),
        BarColumn(bar_width=30),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not enabled,
        transient=False,
    )
    tasks: dict[str, TaskID] = {}

    def update(phase: str, done: float, total: float, info: str) -> None:
        if phase not in tasks:
            tasks[phase] = bars.add_task(_PHASES.get(phase, phase), total=total, info="")
        bars.update(tasks[phase], completed=done, total=total, info=info)

    with bars:
        yield update


# -- the summary -------------------------------------------------------------------


# long: the demo's one summary table: a row per sensor against its ground truth, then the totals
def _summary(console: Console, result: DemoResult, kept: Path | None, wall: float) -> None:
    from hyperframes.demo import times_real_time

    stats = result.stats
    hub = stats.hub
    rows: list[tuple[str, ...]] = []
    for name, truth in result.sensors.items():
        s = hub.sensors.get(name)
        drops = ", ".join(f"{n} {r}" for r, n in sorted(s.dropped.items())) if s else ""
        rows.append(
            (
                name,
                _rate(name),
                str(truth.planned),
                str(truth.planned - truth.sent),
                str(s.frames_in if s else 0),
                drops or "0",
            )
        )
    heads: tuple[str, ...] = ("sensor", "Hz", "captured", "lost on link", "into hub", "hub drops")
    console.print(_table("Sensors: captured -> link -> hub", heads, rows))

    rows = []
    for name, truth in result.sensors.items():
        model = truth.clock
        est = None if model.offset_ns is None else model.offset_ns + model.extra_offset_ns
        true = truth.last_truth_offset
        err = truth.align_err / MS
        rows.append(
            (
                name,
                "" if true is None else f"{true / 1e9:+.6f}",
                "" if est is None or true is None else f"{(est - true) / 1e3:+.0f}",
                f"{truth.timing.skew_ppm:+.1f}",
                "" if model.skew_ppm is None else f"{model.skew_ppm:+.1f}",
                f"{np.median(err):+.3f}" if len(err) else "",
                f"{np.percentile(np.abs(err), 99):.3f}" if len(err) else "",
            )
        )
    heads = ("sensor", "offset\ns", "est. err\nus", "skew\nppm", "est.\nppm", "t err\nms",
             "|t err|\np99")  # fmt: skip
    caption = (
        "offset: reference minus sensor clock at the last frame; t err: aligned t minus true "
        "capture time (ms), median, and 99th percentile of |t err|, over every frame"
    )
    console.print(_table("Clocks: OnlineClock estimate vs truth", heads, rows, caption))
    resets = {n: t.clock.resets for n, t in result.sensors.items() if t.clock.resets}
    if resets:
        console.print(f"clock jumps detected: {resets}")

    rows = []
    inputs = {"edges": "edges (cam)", "occupancy": "occupancy (lidar)"}
    for name, w in stats.workers.items():
        sizes = ", ".join(f"{size}x{n}" for size, n in sorted(w.batch_sizes.items()))
        providers = ", ".join(p.removesuffix("ExecutionProvider") for p in w.providers)
        rows.append((inputs.get(name, name), str(w.items), str(w.batches), sizes,
                     str(w.failed), providers))  # fmt: skip
    heads = ("model (input)", "groups", "batches", "batch sizes", "failed", "provider")
    caption = "batch sizes: size x number of batches; models are ONNX graphs built in code"
    console.print(_table("Models: ONNX Runtime batch workers", heads, rows, caption))

    lat = [(g.out_at - g.t_true["lidar"]) / MS for g in result.live if "lidar" in g.t_true]
    console.print(
        f"groups: {hub.groups_emitted} emitted ({hub.groups_complete} complete, "
        f"{hub.groups_partial} partial), {hub.groups_dropped} dropped, "
        f"{hub.groups_expired} resolved by the max_latency deadline; LiDAR capture -> results "
        f"latency p50 {_pct(lat, 50)} ms, p99 {_pct(lat, 99)} ms (simulated time)"
    )
    rec = result.recording
    where = f" kept at {kept}" if kept else ""
    console.print(
        f"recording{where}: {rec.count} frames, {rec.chunks} chunks, {rec.file_size / 1e6:.2f} MB "
        f"(x{rec.compression_ratio:.1f} compression); camera clip {result.clip_bytes / 1e3:.0f} kB "
        f"H.264, {result.camera_decoded} frames decoded"
    )
    if result.replay_ok:
        console.print(
            styled(
                "replay check passed:",
                "green",
                f"{len(result.replay)} groups, same order, same members, same model results",
            )
        )
    else:
        problems = "; ".join(result.mismatches) or "no groups"
        console.print(styled("replay check FAILED:", "red", problems))
    live_s = result.wall["live"]
    console.print(
        f"throughput: {hub.frames_in / live_s:,.0f} frames/s and {len(result.live) / live_s:,.0f} "
        f"groups/s live; {result.virtual_end_ns / 1e9:.1f} s of sensor time in {live_s:.2f} s "
        f"({times_real_time(result.virtual_end_ns / 1e9 / live_s)} real time); "
        f"whole demo {wall:.2f} s"
    )


def _table(
    title: str,
    heads: Sequence[str],
    rows: Sequence[Sequence[str]],
    caption: str | None = None,
) -> Table:
    """A table whose cells never wrap (headers may); numbers right-aligned."""
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for i, head in enumerate(heads):
        width = max((len(row[i]) for row in rows), default=0)
        numeric = all(r[i].lstrip("+-").replace(".", "").replace(",", "").isdigit() for r in rows)
        table.add_column(head, justify="right" if numeric and rows else "left", min_width=width)
    for row in rows:
        table.add_row(*row)
    return table


def _rate(name: str) -> str:
    from hyperframes.demo import RATES

    return f"{RATES[name]:g}"


def _ms(ns: int | None) -> str:
    return "" if ns is None else f"{ns / MS:,.3f} ms"


def _pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q):.0f}" if values else "-"


# -- the report --------------------------------------------------------------------


def report_data(result: DemoResult) -> ReportData:
    """The report's arrays from a demo run."""
    from hyperframes.demo import RATES, TOLERANCE_NS, ReportData

    alignment = {
        name: (truth.align_t / 1e9, truth.align_err / MS) for name, truth in result.sensors.items()
    }
    spread, true_spread = [], []
    lat_t, lat = [], []
    for g in result.live:
        if len(g.t) >= 2 and g.t.keys() == g.t_true.keys():
            spread.append((max(g.t.values()) - min(g.t.values())) / MS)
            true_spread.append((max(g.t_true.values()) - min(g.t_true.values())) / MS)
        if "lidar" in g.t_true:
            lat_t.append(g.key[0] / 1e9)
            lat.append((g.out_at - g.t_true["lidar"]) / MS)
    stats = result.stats
    live_s = result.wall["live"]
    n_cam = len(result.sensors["cam"].align_t)
    throughput = {
        "H.264 encode": n_cam / max(result.wall["encode"], 1e-9),
        "camera decode (VideoSource)": result.camera_decoded / live_s,
        "sync hub (frames in)": stats.hub.frames_in / live_s,
        **{f"model: {name}": w.items / live_s for name, w in stats.workers.items()},
        "recorder (frames)": (stats.recorder.frames if stats.recorder else 0) / live_s,
        "replay (frames)": result.replay_stats.hub.frames_in / max(result.wall["replay"], 1e-9),
    }
    batches = {f"model: {n}": f"{w.batches} batches" for n, w in stats.workers.items()}
    per_s = {name: RATES[name] for name in RATES}
    frames_per_s = sum(per_s.values())
    groups_per_s = per_s["lidar"]
    realtime = {
        "H.264 encode": per_s["cam"],
        "camera decode (VideoSource)": per_s["cam"],
        "sync hub (frames in)": frames_per_s,
        **{f"model: {name}": groups_per_s for name in stats.workers},
        "recorder (frames)": frames_per_s,
        "replay (frames)": frames_per_s,
    }
    status = "replay check passed" if result.replay_ok else "REPLAY CHECK FAILED"
    return ReportData(
        title=f"hyperframes demo: {result.seconds:g} s, camera + LiDAR + IMU, "
        f"{len(result.live)} groups, {status}",
        subtitle="camera 29.97 Hz (H.264), LiDAR 10 Hz, IMU 200 Hz, each with its own clock "
        "offset, skew and jittery link; OnlineClock per sensor; Nearest on the LiDAR",
        alignment=alignment,
        spread_ms=np.array(spread),
        true_spread_ms=np.array(true_spread),
        latency=(np.array(lat_t), np.array(lat)),
        latency_label="LiDAR capture -> results, simulated",
        throughput=throughput,
        realtime=realtime,
        tolerance_ms=TOLERANCE_NS / MS,
        notes=batches,
    )
