"""``hyperframes replay FILE``: play a recording (or a ROS bag) back, optionally through a pipeline.

Options follow ``ros2 bag play``: ``-r/--rate 2.0`` (or ``max``), ``--loop``,
``--start-offset S``, ``--duration S``, ``--start-paused``, ``--sensors A B``;
``--topic /cam=cam`` picks topics of a bag. With ``--config CONFIG.toml`` the frames go through
that pipeline's sync policy, stages and workers instead of the config's own
sources. In a terminal, space pauses, the right arrow steps one frame while
paused, and up/down change the rate. ``--fast`` keeps the recorded timing on a
virtual clock, so deadlines behave exactly as they did live, without waiting.
``--serve`` shows it live in Foxglove; ``--to-ros2`` publishes it as ROS 2
topics over DDS (``--ros2-domain``, ``--ros2-qos``), each sensor at the
recording's pace with its dated stamps.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperframes.cli._common import NamesAction
from hyperframes.cli._serve import (
    add_serve_argument,
    close_server,
    open_server,
    print_served,
    serve_limits,
    serve_line,
)
from hyperframes.cli._to_ros2 import (
    add_ros2_arguments,
    close_publisher,
    open_publisher,
    print_published,
    publisher_line,
)
from hyperframes.cli._units import seconds_arg


def register(sub: Any) -> None:
    from hyperframes.cli._losses import add_allow_loss

    p = sub.add_parser(
        "replay",
        help="play a .hfr recording or ROS bag back, optionally through a pipeline config",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="a .hfr recording, or a ROS bag (.mcap, .db3, .bag, bag folder)")
    p.add_argument(
        "-r",
        "--rate",
        default=1.0,
        type=rate_arg,
        metavar="R",
        help="playback rate: 1.0 real time, 2.0 twice as fast, 'max' no waiting",
    )
    p.add_argument("--speed", dest="rate", type=rate_arg, help=argparse.SUPPRESS)
    p.add_argument(
        "--start-paused",
        action="store_true",
        help="start paused (space resumes, the right arrow steps one frame)",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="recorded timing on a virtual clock: as fast as possible, same result",
    )
    p.add_argument("--loop", action="store_true", help="start again at the end (Ctrl-C stops)")
    p.add_argument(
        "--start-offset",
        type=seconds_arg("--start-offset"),
        default=0.0,
        metavar="S",
        help="skip the first S seconds",
    )
    p.add_argument(
        "--duration", type=seconds_arg("--duration"), metavar="S", help="play only S seconds"
    )
    p.add_argument(
        "--sensors", nargs="+", action=NamesAction, metavar="NAME", help="play only these sensors"
    )
    p.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[=SENSOR]",
        help="bag input: a topic to play, optionally renamed (repeatable)",
    )
    p.add_argument(
        "--ros-distro",
        metavar="NAME",
        help="bag input: ROS 2 types for a bag that stores none (humble, jazzy...)",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="CONFIG.toml",
        help="run the frames through this pipeline (sync, stages, workers)",
    )
    p.add_argument(
        "--metrics",
        type=Path,
        metavar="FILE",
        help="keep Prometheus-format metrics in FILE while running",
    )
    add_allow_loss(p)
    add_serve_argument(p)
    p.add_argument(
        "--serve-hold",
        action="store_true",
        help="with --serve: at the end, wait for a seek from Foxglove instead of exiting "
        "(Ctrl-C stops)",
    )
    add_ros2_arguments(p)
    p.set_defaults(func=run)


def parse_rate(text: str | float) -> float | None:
    """``"2"`` -> 2.0; ``"max"`` (or ``inf``, ``fast``) -> ``None``, as fast as possible."""
    if str(text).lower() in ("max", "inf", "none", "fast"):
        return None
    try:
        rate = float(text)
    except ValueError:
        raise ValueError(f"--rate: expected a number > 0 or 'max', found {text!r}") from None
    if not rate > 0:
        raise ValueError(f"--rate: expected a number > 0 or 'max', found {text!r}")
    return rate


def rate_arg(text: str) -> float | None:
    try:
        return parse_rate(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--rate: ")) from None


def open_source(args: argparse.Namespace) -> Any:
    """The replay source for ``args.file`` (recording or bag), start/duration applied."""
    from recordings import is_bag, open_source

    options = {}
    if getattr(args, "ros_distro", None):
        if not is_bag(args.file):
            raise ValueError(f"--ros-distro applies to bags; '{args.file}' is not one")
        options["ros_distro"] = args.ros_distro
    return open_source(
        args.file,
        args.topic,
        speed=None,
        sensors=args.sensors,
        start_offset=int(args.start_offset * 1e9) if args.start_offset else None,
        duration=None if args.duration is None else int(args.duration * 1e9),
        loop=args.loop,
        **options,
    )


@dataclass
class _Session:
    """A planned replay: the source as read (``inner``) and as paced, the optional
    pipeline and live outputs, and how many frames of each sensor were played."""

    control: Any
    inner: Any = None
    source: Any = None
    pipeline: Any = None
    server: Any = None
    publisher: Any = None
    playback: Any = None
    counts: Counter[str] = field(default_factory=Counter)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import console_for, error
    from hyperframes.cli._playback import PlaybackControl

    console = console_for(args)
    session = None
    try:
        session = _Session(PlaybackControl(args.rate, paused=args.start_paused))
        _plan(args, session)
    except (HyperframesError, ValueError, OSError) as err:
        if session is not None and session.server is not None:
            session.server.close()
        close_publisher(None if session is None else session.publisher, flush=False)
        error(console, err)
        return 2
    stats = _execute(args, session, console)
    return _report(args, session, console, stats)


def _plan(args: argparse.Namespace, session: _Session) -> None:
    """Open the source, the pipeline (``--config``) and the live outputs, each kept on
    ``session`` as it opens (a failure part-way leaves what opened there to close)."""
    from hyperframes.cli._playback import PacedSource

    inner = session.inner = open_source(args)
    if args.serve_hold and args.serve is None:
        raise ValueError("--serve-hold needs --serve")
    window = source_window(inner, args)
    # Foxglove seeks only a replay without a pipeline: a hub's policies need time to
    # go forward. Pause, play and speed work either way.
    reopen = None
    if args.serve is not None and window is not None and args.config is None:
        reopen = reopener(args, window)
    source = PacedSource(inner, session.control, reopen=reopen, hold=args.serve_hold)
    session.source = source
    if args.config is not None:
        from hyperframes.config import build_pipeline, load_config

        config = load_config(args.config)
        inputs = [Path(args.file), args.config]
        session.pipeline = build_pipeline(
            config, sensors=[], extra_sources=[source], recorder_options={"inputs": inputs}
        )
    if args.metrics is not None:
        from recordings.output_files import refuse_overlap

        refuse_overlap(args.metrics, [args.file, args.config])
    if args.serve is not None and window is not None:
        session.playback = served_playback(
            session.control, window, inner, seekable=reopen is not None
        )
    server = session.server = open_server(
        args.serve,
        inner.specs,
        **recorded_dates(inner),
        limits=serve_limits(args),
        playback_time=True,
        playback=session.playback,
        bag=None if str(args.file).endswith(".hfr") else args.file,
    )
    if server is not None and session.playback is not None:
        ended = session.playback.ended
        source.on_hold = lambda: server.tell_playback(ended())
    if server is not None and session.pipeline is not None:
        session.pipeline.add_sink(server)
    session.publisher = open_publisher(args, inner.specs, **recorded_dates(inner))
    if session.publisher is not None and session.pipeline is not None:
        session.pipeline.add_sink(session.publisher)


def _status(args: argparse.Namespace, session: _Session) -> Callable[[], str]:
    """The live status line's maker."""

    def status() -> str:
        return (
            f"{args.file}: {session.control.describe()} (space pause, -> step, up/down rate)"
            + serve_line(session.server)
            + publisher_line(session.publisher)
        )

    return status


async def _play_frames(session: _Session, console: Any, status: Callable[[], str]) -> None:
    """Replay without a pipeline: each frame to the live outputs, counted, with a progress bar.
    The Foxglove server's encoder queue is waited for when full (a file loses nothing by
    waiting; playback runs late instead), never its clients."""
    import anyio
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    server, publisher = session.server, session.publisher
    with Progress(
        TextColumn("replay"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("frames"),
        TimeRemainingColumn(),
        TextColumn("{task.description}", markup=False),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(status(), total=session.inner.expected_frames())
        async with session.source:
            async for frame in session.source.frames():
                session.counts[frame.sensor] += 1
                if server is not None:
                    if not server.has_room():  # a file's frames can wait for the encoder
                        await anyio.to_thread.run_sync(server.wait_room)
                    server.publish(frame)
                if publisher is not None:
                    publisher.publish(frame)
                progress.update(task, advance=1, description=session.control.describe())


def _execute(args: argparse.Namespace, session: _Session, console: Any) -> Any:
    """Play to the end (or Ctrl-C, then ``None``); the pipeline's statistics, if any."""
    import anyio

    from fusion import VirtualClock, use_clock
    from hyperframes.cli._common import drive, run_until_interrupted
    from hyperframes.cli._playback import keyboard

    # A bag's unreadable topics are said once, with the other skipped items, at the end.
    status = _status(args, session)
    control, pipeline, server = session.control, session.pipeline, session.server

    async def main() -> Any:
        if pipeline is None:
            await run_until_interrupted(lambda: _play_frames(session, console, status))
            return None
        return await drive(
            pipeline, console, f"replay {args.file}", metrics=args.metrics, status=status
        )

    async def fast() -> Any:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await main()

    if args.fast and control.rate is None:
        control.rate = 1.0  # --fast keeps the recorded timing, virtually
    stopped = True
    try:
        with keyboard(control, enabled=console.is_terminal and not args.fast):
            stats = anyio.run(fast if args.fast else main)
        stopped = False
        if server is not None:  # the last frames reach the clients, who learn it ended
            server.flush()
            if session.playback is not None:
                server.tell_playback(session.playback.ended())
                server.flush(0.5)
    except KeyboardInterrupt:
        console.print("stopped")
        stats = None
    finally:
        close_server(server)
        close_publisher(session.publisher, flush=not stopped)
    return stats


def _report(args: argparse.Namespace, session: _Session, console: Any, stats: Any) -> int:
    """What was replayed, what was skipped or lost; the exit status."""
    from hyperframes.cli._common import literal, warn
    from hyperframes.cli._losses import loss_exit, print_losses, skipped_lines

    inner, counts, pipeline = session.inner, session.counts, session.pipeline
    played = sum(counts.values()) if pipeline is None else (stats.hub.frames_in if stats else 0)
    if played == 0:
        warn(console, "warning:", f"nothing replayed: {selection_text(args)} selects no frames")
    errors = dict(inner.errors)
    if pipeline is None:
        from rich.table import Table

        table = Table(title=literal(f"frames from {args.file}"))
        table.add_column("sensor")
        table.add_column("frames", justify="right")
        for spec in inner.specs:
            table.add_row(literal(spec.name), str(counts[spec.name]))
        console.print(table)
        print(f"replayed {sum(counts.values())} frames")
    elif stats is not None:
        print(f"replayed {stats.hub.frames_in} frames into {stats.groups_out} groups")
    print_served(session.server)
    print_published(session.publisher)
    for line in skipped_lines(errors, inner.error_messages):
        warn(console, "skipped", line)
    lost = print_losses(console, inner.ledgers())
    return loss_exit(args, bool(errors) or lost > 0)


def source_window(source: Any, args: argparse.Namespace) -> tuple[int, int] | None:
    """The replayed span ``[start, end)`` in the source's own time (a bag's log time, a
    recording's ``t``), ``--start-offset``/``--duration`` applied; ``None`` when the
    source cannot be read again from a time (an NMEA log, encoded video)."""
    from recordings import Replay

    if isinstance(source, Replay):  # first: a recording's replay loads no bag reader
        summary = source.recording.summary()
        if summary.t_start is None or summary.t_end is None:
            return None
        first, last = summary.t_start, summary.t_end
    elif (bags := sys.modules.get("adapters.bags._source")) is not None and isinstance(
        source, bags.BagSource
    ):  # a BagSource exists only once its module was loaded
        first, last = source.start_time, source.end_time - 1
    else:
        return None
    start = first + int(args.start_offset * 1e9)
    end = last + 1 if args.duration is None else min(last + 1, start + int(args.duration * 1e9))
    return start, max(start + 1, end)


def reopener(args: argparse.Namespace, window: tuple[int, int]) -> Any:
    """``t -> the replayed source from t`` (a Foxglove seek), within ``window``."""
    from recordings import open_source as open_file

    options = {"ros_distro": args.ros_distro} if getattr(args, "ros_distro", None) else {}

    def reopen(t: int) -> Any:
        return open_file(
            args.file,
            args.topic,
            speed=None,
            sensors=args.sensors,
            start=t,
            end=window[1],
            loop=args.loop,
            **options,
        )

    return reopen


def served_playback(control: Any, window: tuple[int, int], source: Any, *, seekable: bool) -> Any:
    """Foxglove's playback controls for this replay, in the served (dated) time."""
    from hyperframes.cli._playback import ServedPlayback

    dates = recorded_dates(source)
    wall = dates["dating"]
    if wall is None:
        return ServedPlayback(control, window, seekable=seekable)
    return ServedPlayback(
        control, window, to_served=wall.to_utc, from_served=wall.from_utc, seekable=seekable
    )


def recorded_dates(source: Any) -> dict[str, Any]:
    """How ``--serve`` dates a replay: by the recording's wall clock, as ``export`` does
    (a bag's stamps are dates already; an undated recording keeps its stamps)."""
    from recordings import Replay

    if not isinstance(source, Replay):
        return {"dating": None}
    summary = source.recording.summary()
    if summary.wall_clock is None or not summary.dated:
        return {"dating": None}
    return {"dating": summary.wall_clock, "dated": summary.dated}


def selection_text(args: argparse.Namespace) -> str:
    """``--start-offset 30 --duration 5`` as the user wrote it, for the empty-range warning."""
    parts = []
    if args.start_offset:
        parts.append(f"--start-offset {args.start_offset:g}")
    if args.duration is not None:
        parts.append(f"--duration {args.duration:g}")
    if args.sensors:
        parts.append("--sensors " + " ".join(args.sensors))
    return " ".join(parts) or "the recording"
