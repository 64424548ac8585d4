"""``hyperframes replay BAG --topic /camera/image_raw=cam``: the replay command on a ROS bag.

``fusion.cli.replay`` hands over here when its file is a bag (:func:`is_bag`),
so the command reads the same on a bag as on a ``.hfr`` recording. Topics
whose type cannot be read are listed, not crashed on.
"""

from __future__ import annotations

import argparse
from collections import Counter

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table


def replay_bag(args: argparse.Namespace) -> int:
    """Replay the bag ``args.file`` (``--topic``, ``--speed``/``--fast``, ``--start``/``--end``)."""
    import anyio

    from adapters.bags.source import BagSource, parse_topics
    from fusion.errors import HyperframesError

    console = Console()
    speed = None if getattr(args, "fast", False) else getattr(args, "speed", 1.0)
    topics = parse_topics(args.topic) if getattr(args, "topic", None) else None
    try:
        source = BagSource(args.file, topics, speed=speed)
        t0 = source.start_time
        if args.start is not None:
            source.start = t0 + int(args.start * 1e9)
        if args.end is not None:
            source.end = t0 + int(args.end * 1e9)
    except (OSError, HyperframesError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    listing = {t.topic: t for t in source.inspect()}
    for topic, reason in sorted(source.unsupported.items()):
        console.print(f"[yellow]not readable[/yellow] {topic}: {reason}")
    total = sum(listing[s.meta["topic"]].count for s in source.specs)
    counts: Counter[str] = Counter()

    async def main() -> None:
        with Progress(
            TextColumn("replay"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} messages"),
            TimeRemainingColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("replay", total=total)
            async with source:
                async for frame in source.frames():
                    counts[frame.sensor] += 1
                    progress.advance(task)

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        source.close()
    table = Table(title=f"replayed {sum(counts.values())} frames from {args.file}")
    for column in ("topic", "type", "sensor", "frames"):
        table.add_column(column, justify="right" if column == "frames" else "left")
    for spec in source.specs:
        table.add_row(spec.meta["topic"], spec.meta["msgtype"], spec.name, str(counts[spec.name]))
    console.print(table)
    for reason, n in source.errors.items():
        console.print(f"[yellow]skipped[/yellow] {n} ({reason}): {source.last_error}")
    return 1 if source.errors else 0
