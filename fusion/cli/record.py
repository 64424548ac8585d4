"""``hyperframes record OUT``: record a session from sources into a .hfr frame log.

Today the sources are the synthetic camera, LiDAR and IMU (``--synthetic``,
the default); other adapters join as they land.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


def register(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="record sensors to a .hfr frame log (synthetic camera, LiDAR and IMU for now)",
        description="Record a session to a .hfr file: crash-safe, zstd-compressed, indexed.",
    )
    p.add_argument("out", help="the .hfr file to write")
    p.add_argument("--duration", type=float, default=10.0, help="seconds to record (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic sensors")
    p.add_argument(
        "--fast",
        action="store_true",
        help="do not wait in real time (a virtual clock; same frames, recorded at once)",
    )
    p.add_argument("--chunk-mb", type=float, default=4.0, help="chunk size bound, MiB")
    p.add_argument("--flush", type=float, default=1.0, help="flush interval, seconds")
    p.add_argument("--split-mb", type=float, help="start a new numbered file every N MiB")
    p.add_argument("--split-seconds", type=float, help="start a new numbered file every N s")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from adapters.synthetic import synthetic_session
    from fusion.cli.info import sensor_table, summary_table
    from fusion.timing import VirtualClock, use_clock
    from recordings import Recorder, open_recording

    console = Console()
    sources = synthetic_session(duration_s=args.duration, seed=args.seed, realtime=True)
    recorder = Recorder(
        args.out,
        sensors=[spec for s in sources for spec in s.specs],
        metadata={"source": "synthetic", "seed": args.seed, "duration_s": args.duration},
        chunk_bytes=int(args.chunk_mb * (1 << 20)),
        flush_interval=args.flush,
        split_bytes=None if args.split_mb is None else int(args.split_mb * (1 << 20)),
        split_seconds=args.split_seconds,
    )

    async def main() -> None:
        with Progress(
            TextColumn("record"),
            BarColumn(),
            TextColumn("{task.completed:.1f}/{task.total:.1f} s"),
            TimeRemainingColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("record", total=args.duration)
            async with recorder:

                async def pump(source: Any) -> None:
                    async with source:
                        async for frame in source.frames():
                            await recorder.send(frame)
                            seen = frame.meta.get("t_true", frame.t) / 1e9
                            progress.update(task, completed=min(args.duration, seen))

                async with anyio.create_task_group() as tg:
                    for source in sources:
                        tg.start_soon(pump, source)
            progress.update(task, completed=args.duration)

    async def fast() -> None:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                await main()

    try:
        anyio.run(fast if args.fast else main)
    except KeyboardInterrupt:
        console.print("stopped; the file is closed and indexed")
    for path in recorder.paths:
        with open_recording(path) as log:
            summary = log.summary()
        console.print(summary_table(summary))
        console.print(sensor_table(summary))
    return 0
