"""``hyperframes replay FILE [--speed S]``: re-emit a recording on the runtime clock."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table


def register(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a .hfr recording in (scaled) real time with a progress bar",
        description="Replay a .hfr recording, paced like the original session.",
    )
    p.add_argument("file", help="the .hfr file")
    p.add_argument("--speed", type=float, default=1.0, help="1.0 real time, 2.0 twice as fast")
    p.add_argument("--fast", action="store_true", help="as fast as possible (speed None)")
    p.add_argument("--sensors", help="comma-separated sensors to replay (default: all)")
    p.add_argument("--start", type=float, help="seconds from the recording's start")
    p.add_argument("--end", type=float, help="seconds from the recording's start")
    p.add_argument("--loop", action="store_true", help="start again at the end (Ctrl-C stops)")
    p.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[=SENSOR]",
        help="ROS bag input (.mcap, .db3, .bag or bag folder): a topic to replay (repeatable)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from adapters.bags import is_bag

    if is_bag(args.file):
        from adapters.bags.cli import replay_bag

        return replay_bag(args)

    from fusion.errors import RecordingError
    from recordings import Replay, open_recording

    console = Console()
    speed = None if args.fast else args.speed
    sensors = args.sensors.split(",") if args.sensors else None
    try:
        with open_recording(args.file) as log:
            summary = log.summary()
        t0 = summary.t_start or 0
        start = None if args.start is None else t0 + int(args.start * 1e9)
        end = None if args.end is None else t0 + int(args.end * 1e9)
        replay = Replay(args.file, speed, sensors=sensors, start=start, end=end, loop=args.loop)
    except (OSError, RecordingError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    counts: Counter[str] = Counter()
    total = sum(summary.sensors[s.name].count for s in replay.specs)

    async def main() -> None:
        with Progress(
            TextColumn("replay"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} frames"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as progress:
            task = progress.add_task("replay", total=None if args.loop else total)
            async with replay:
                async for frame in replay.frames():
                    counts[frame.sensor] += 1
                    progress.advance(task)

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        console.print("stopped")
    table = Table(title=f"replayed {sum(counts.values())} frames")
    table.add_column("sensor")
    table.add_column("frames", justify="right")
    for name, n in counts.items():
        table.add_row(name, str(n))
    console.print(table)
    for reason, n in replay.errors.items():
        console.print(f"[yellow]skipped[/yellow] {n} ({reason}): {replay.last_error}")
    return 1 if replay.errors else 0
