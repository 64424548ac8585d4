"""``hyperframes sync FILE.hfr``: re-group a recording offline, from its stamps alone.

The groups are computed with numpy from the stamps (no payload is decoded)
and are exactly those the streaming policy forms from the same frames; only
``-o x.hfr`` reads payloads, and only of the frames in groups. ``approximate``
has no offline form (its choices depend on the history of its queues):
replay the recording through it instead.

Examples::

    hyperframes sync s.hfr --policy nearest --reference lidar --sensors lidar cam \\
        --tolerance 20ms -o groups.parquet
    hyperframes sync s.hfr --policy nearest --reference lidar --sensors lidar cam imu \\
        --tolerance 20ms --tolerance cam=30ms --window imu=50ms:49ms --optional cam
    hyperframes sync s.hfr --policy exact --sensors left right -o pairs.hfr
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from hyperframes.cli._common import NamesAction
from hyperframes.cli._units import seconds_arg


def register(sub: Any) -> None:
    from hyperframes.cli._losses import add_allow_loss

    p = sub.add_parser(
        "sync",
        help="re-group a .hfr recording offline (exact or nearest) into Parquet or a .hfr",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the .hfr recording")
    p.add_argument(
        "--policy", choices=("nearest", "exact", "approximate"), default="nearest", help="policy"
    )
    p.add_argument("--reference", help="nearest: the sensor that makes one group per frame")
    p.add_argument(
        "--sensors",
        nargs="+",
        action=NamesAction,
        metavar="NAME",
        help="sensors of a group, as A B or A,B (default: all recorded)",
    )
    p.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="[SENSOR=]DURATION",
        help="nearest: how far a matched frame may be from the reference (20ms); "
        "SENSOR=DURATION for one sensor (repeatable)",
    )
    p.add_argument(
        "--window",
        action="append",
        default=[],
        metavar="SENSOR=BEFORE:AFTER",
        help="nearest: collect every frame of SENSOR in [t - BEFORE, t + AFTER] (repeatable)",
    )
    p.add_argument(
        "--optional",
        nargs="+",
        action=NamesAction,
        default=[],
        metavar="NAME",
        help="sensors that may be missing from a group (A B or A,B)",
    )
    p.add_argument(
        "--start", type=seconds_arg("--start"), help="seconds from the recording's start"
    )
    p.add_argument("--end", type=seconds_arg("--end"), help="seconds from the recording's start")
    p.add_argument(
        "-o", "--output", type=Path, help="groups.parquet (a row per group) or grouped.hfr"
    )
    add_allow_loss(p)
    p.set_defaults(func=run)


def build_policy(args: argparse.Namespace, recorded: list[str]) -> Any:
    """The policy the options describe; ``ValueError`` with the option at fault."""
    from fusion import ApproximateTime, ExactTime, Nearest
    from hyperframes.cli._units import parse_duration

    sensors = args.sensors or recorded
    has = f"it has {', '.join(recorded) or 'no frames'}"
    named = {"--sensors": sensors, "--optional": args.optional}
    if args.reference:
        named["--reference"] = [args.reference]
    named["--tolerance"] = [i.rpartition("=")[0] for i in args.tolerance if "=" in i]
    named["--window"] = [i.partition("=")[0] for i in args.window if "=" in i]
    for option, names in named.items():
        unknown = [n for n in names if n and n not in recorded]
        if unknown:
            verb = "is" if len(unknown) == 1 else "are"
            raise ValueError(f"{option}: {', '.join(unknown)} {verb} not in the recording; {has}")
    if args.policy == "approximate":
        return ApproximateTime(sensors)
    if args.policy == "exact":
        if args.reference or args.tolerance or args.window:
            raise ValueError("--reference, --tolerance and --window apply to --policy nearest")
        return ExactTime(sensors, optional=args.optional)
    if not args.reference:
        raise ValueError("--policy nearest needs --reference SENSOR")
    default: int | None = None
    per: dict[str, int] = {}
    for item in args.tolerance:
        name, sep, value = item.rpartition("=")
        if sep:
            per[name] = parse_duration(value, what=f"--tolerance {name}")
        else:
            default = parse_duration(value, what="--tolerance")
    windows: dict[str, tuple[int, int]] = {}
    for item in args.window:
        name, sep, span = item.partition("=")
        before, colon, after = span.partition(":")
        if not sep or not colon or not name:
            raise ValueError(f"--window: expected SENSOR=BEFORE:AFTER, found {item!r}")
        windows[name] = (
            parse_duration(before, what=f"--window {name} (before)"),
            parse_duration(after, what=f"--window {name} (after)"),
        )
    sensors = list(dict.fromkeys([args.reference, *sensors]))
    matched = [s for s in sensors if s != args.reference and s not in windows]
    lacking = [s for s in matched if s not in per and default is None]
    if lacking:
        raise ValueError(f"--tolerance: no value for {', '.join(lacking)} (e.g. --tolerance 20ms)")
    tolerance = {s: per.get(s, default or 0) for s in matched}
    return Nearest(args.reference, sensors, tolerance, optional=args.optional, windows=windows)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import console_for, error, note, warn
    from hyperframes.cli._losses import loss_exit
    from hyperframes.cli._progress import progress_bar
    from recordings import open_recording, sync_recording

    console = console_for(args)
    try:
        with open_recording(args.file) as log:
            summary = log.summary()
            # Named by a chunk meta, counted or not: a chunk whose meta claims more
            # frames than a reader decodes (forged) is damage to report, and its
            # sensor is still in the recording.
            recorded = [
                n
                for n, s in summary.sensors.items()
                if s.count or any(n in c.sensors for c in log.chunks if c.count)
            ]
            policy = build_policy(args, recorded)
            t0 = summary.t_start or 0
            start = None if args.start is None else t0 + round(args.start * 1e9)
            end = None if args.end is None else t0 + round(args.end * 1e9)
            began = time.perf_counter()
            chunks = len(log.select(policy.sensors, start, end))
            with (
                progress_bar(console, f"sync {args.file}", chunks, unit="chunks") as step,
                sync_recording(log, policy, start=start, end=end, progress=step) as groups,
            ):
                took = time.perf_counter() - began
                written = _write(groups, args.output) if args.output else None
            damage = list(log.damage)
    except (OSError, HyperframesError, ValueError, RuntimeError) as err:
        error(console, err)
        return 2
    stats = groups.statistics
    if not console.quiet:
        _print_table(console, args, policy, groups)
    frames = sum(stats.frames.values())
    print(  # the final result: shown with -q too
        f"{stats.groups} groups, {stats.groups_dropped} dropped as incomplete; "
        f"{frames} stamps in {took * 1e3:.0f} ms ({stats.chunks_read} chunks decompressed)"
    )
    upgrade = f"'hyperframes check {args.file} --reindex -o NEW.hfr' upgrades the file"
    if stats.chunks_read:
        note(
            console,
            "slow path:",
            f"{stats.chunks_read} chunks have no stamp block (written before format 1.4); "
            + upgrade,
        )
    elif not stats.stamp_index and frames:
        note(
            console,
            "slow path:",
            "the stamps came from every chunk's meta: the file has no stamp index "
            "(written before format 1.5); " + upgrade,
        )
    if written is not None:
        print(f"wrote {stats.groups} groups to {written}")
    for problem in damage:
        warn(console, "lost:", f"{problem} (its stamps are not in the groups)")
    if not stats.groups:
        return 1
    return loss_exit(args, bool(damage))


def _print_table(console: Any, args: argparse.Namespace, policy: Any, groups: Any) -> None:
    """Stamps, out-of-order drops and misses per sensor (not with ``-q``: rich's tables
    cost the command an import)."""
    from rich.table import Table

    from hyperframes.cli._common import literal

    stats = groups.statistics
    table = Table(title=literal(f"{args.policy} groups of {args.file}"))
    table.add_column("sensor")
    table.add_column("stamps", justify="right")
    table.add_column("out of order", justify="right")
    table.add_column("missing in groups", justify="right")
    for s in policy.sensors:
        table.add_row(
            literal(s),
            str(stats.frames.get(s, 0)),
            str(stats.out_of_order.get(s, 0)),
            str(int(groups.columns.missing(s).sum())),
        )
    console.print(table)


def _write(groups: Any, out: Path) -> Path:
    if out.suffix == ".parquet":
        path: Path = groups.to_parquet(out)
        return path
    if out.suffix == ".hfr":
        path = groups.write_recording(out)
        return path
    raise ValueError(f"-o: write a .parquet or a .hfr file, not {out.name!r}")
