"""``hyperframes record [CONFIG] -o OUT.hfr``: run a pipeline and record what arrives.

Options follow ``ros2 bag record``: select sensors, split by size or duration,
choose the compression, add metadata, start paused. In a terminal, space
pauses and resumes the recording (the pipeline keeps running). Ctrl-C or
SIGTERM stops gracefully: sources stop, in-flight frames drain and the file
gets its index and footer.

``--snapshot 30s`` records like a black box instead: the last 30 s stay in
memory and are written to ``OUT.NNNN.hfr`` only on a trigger, the ``s`` key
in a terminal or ``SIGUSR1`` (``kill -USR1 PID``); ``--snapshot-after``
keeps recording that long after the trigger into the same snapshot.
"""

from __future__ import annotations

import argparse
import glob
import time
from collections.abc import Callable
from dataclasses import dataclass
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
from hyperframes.cli._units import duration_arg, seconds_arg, size_arg

MS = 1_000_000

# The session recorded when no CONFIG is given: the built-in synthetic sensors.
SYNTHETIC: dict[str, Any] = {
    "pipeline": {"max_latency_ms": 200},
    "sync": {
        "policy": "nearest",
        "reference": "lidar",
        "tolerance_ms": 20,
        "windows_ms": {"imu": [50, 49]},
    },
    "sources": [
        {
            "type": "synthetic_camera",
            "name": "cam",
            "duration_s": 10,
            "offset_ms": 120,
            "skew_ppm": 40,
            "delay_ms": 8,
            "jitter_ms": 2,
            "clock": "online",
        },
        {
            "type": "synthetic_lidar",
            "name": "lidar",
            "duration_s": 10,
            "delay_ms": 3,
            "jitter_ms": 1,
            "clock": "online",
        },
        {
            "type": "synthetic_imu",
            "name": "imu",
            "duration_s": 10,
            "offset_ms": -35,
            "skew_ppm": -80,
            "clock": "online",
        },
    ],
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="run a pipeline (TOML config) and record every frame to a .hfr frame log",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_selection_arguments(p)
    _add_file_arguments(p)
    _add_run_arguments(p)
    _add_snapshot_arguments(p)
    p.add_argument(
        "--flush",
        type=seconds_arg("--flush", above=True, maximum=3600.0),
        default=1.0,
        metavar="S",
        help="flush interval: a crash loses at most this much (default 1 s)",
    )
    add_serve_argument(p)
    add_ros2_arguments(p)
    p.set_defaults(func=run)


def _add_selection_arguments(p: argparse.ArgumentParser) -> None:
    """What is recorded and where: the config, the output file, the sensors."""
    p.add_argument(
        "config",
        nargs="?",
        type=Path,
        help="pipeline config (TOML); default: built-in synthetic camera, LiDAR, IMU",
    )
    p.add_argument(
        "-o", "--output", type=Path, help="the .hfr file to write (default: session-DATE-TIME.hfr)"
    )
    p.add_argument(
        "--sensors", nargs="+", action=NamesAction, metavar="NAME", help="record only these sources"
    )
    p.add_argument(
        "--exclude",
        nargs="+",
        action=NamesAction,
        metavar="NAME",
        default=[],
        help="record every source but these",
    )


def _add_file_arguments(p: argparse.ArgumentParser) -> None:
    """How the file is written: splitting, compression, metadata."""
    p.add_argument(
        "--max-size",
        type=size_arg("--max-size"),
        metavar="SIZE",
        help="start a new numbered file at this size (e.g. 4GiB, 500MB)",
    )
    p.add_argument(
        "--max-duration",
        type=seconds_arg("--max-duration", above=True),
        metavar="S",
        help="start a new numbered file every S seconds of frame time",
    )
    p.add_argument(
        "--compression",
        default=None,
        metavar="auto|zstd[:LEVEL]",
        help="chunk compression (default: the config's, else auto: zstd 3, 1 or none per "
        "chunk, whichever pays; zstd:1 is fastest)",
    )
    p.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="add user metadata to the file header (repeatable)",
    )


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """How the session runs: paused, bounded, on a virtual clock, with metrics."""
    p.add_argument(
        "--start-paused",
        action="store_true",
        help="start with recording paused (space resumes in a terminal)",
    )
    p.add_argument(
        "--duration",
        type=seconds_arg("--duration"),
        metavar="S",
        help="stop after S seconds (default: when the sources end, or Ctrl-C)",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="virtual clock: replay-like sources run as fast as possible",
    )
    p.add_argument(
        "--metrics",
        type=Path,
        metavar="FILE",
        help="keep Prometheus-format metrics in FILE while running",
    )


def _add_snapshot_arguments(p: argparse.ArgumentParser) -> None:
    """Black-box mode: ``--snapshot`` and its bounds."""
    p.add_argument(
        "--snapshot",
        type=duration_arg("--snapshot"),
        metavar="DURATION",
        help="black-box mode: keep DURATION (30s) in memory, write it on 's' or SIGUSR1",
    )
    p.add_argument(
        "--snapshot-after",
        type=duration_arg("--snapshot-after"),
        default="0s",
        metavar="DURATION",
        help="with --snapshot: also keep what follows a trigger for DURATION (default 0s)",
    )
    p.add_argument(
        "--snapshot-max-size",
        type=size_arg("--snapshot-max-size"),
        default="256MiB",
        metavar="SIZE",
        help="with --snapshot: memory bound of the ring (default 256MiB)",
    )


def parse_compression(text: str) -> int | str:
    if text == "auto":
        return text
    name, _, level = text.partition(":")
    if name != "zstd":
        raise ValueError(f"--compression: only zstd is supported, found {text!r} (try zstd:1)")
    try:
        value = int(level) if level else 3
    except ValueError:
        raise ValueError(f"--compression: expected zstd:LEVEL, found {text!r}") from None
    if not -7 <= value <= 22:
        raise ValueError(f"--compression: zstd levels are -7..22, found {value}")
    return value


def parse_metadata(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--metadata: expected KEY=VALUE, found {item!r}")
        out[key] = value
    return out


def snapshot_options(args: argparse.Namespace, config: Any) -> dict[str, Any]:
    """``SnapshotRecorder`` arguments from ``--snapshot*``; late sensors get max_latency."""
    if args.max_size or args.max_duration:
        raise ValueError("--snapshot writes whole snapshots: drop --max-size/--max-duration")
    latency = config.pipeline.max_latency_ms
    return {
        "keep": args.snapshot / 1e9,
        "post": args.snapshot_after / 1e9,
        "max_bytes": args.snapshot_max_size,
        "settle": (latency or 0) / 1e3,
    }


INPUT_KEYS = (
    "path", "pcap", "url", "paths", "osf", "metadata", "log", "bag", "database",
    "calibration", "timestamps",
)  # fmt: skip
"""The source keys that name a file the session reads (an output may be none of them)."""


def session_inputs(config_file: str | None, config: Any) -> list[Path]:
    """The files a session reads: its config and every source's file, capture or folder."""
    found: list[Path] = [Path(config_file)] if config_file else []
    for source in config.sources:
        for key in INPUT_KEYS:
            value = getattr(source, key, None)
            if not isinstance(value, str) or "://" in value:
                continue
            if key == "paths":  # a glob: the files it matches
                found += [Path(p) for p in sorted(glob.glob(value))]
            else:
                found.append(Path(value))
    return [p for p in found if p.exists()]


def say_stale_partials(console: Any, recorder: Any, said: int) -> int:
    """One line per ``NAME.partial`` an interrupted run left that the recorder kept
    aside (after the first ``said``); how many it has kept so far."""
    from hyperframes.cli._common import note

    stale = getattr(recorder, "stale_partials", [])
    for old, kept in stale[said:]:
        note(
            console,
            "note:",
            f"{old} is left from an interrupted run; kept as {kept}: "
            f"'hyperframes check --repair {kept}' salvages it",
            "yellow",
        )
    return len(stale)


def record_gather(server: object | None, publisher: object | None) -> float | None:
    """The UDP time series' gather (ms) where a config leaves it unset: with no live
    view (``--serve``) nor ROS 2 publisher the frames only go to disk, so they may
    wake the process less often (``RECORD_GATHER_MS``); else the live default."""
    from hyperframes.config.sources import RECORD_GATHER_MS

    return RECORD_GATHER_MS if server is None and publisher is None else None


@dataclass
class _Session:
    """A planned recording session: its output, pipeline and live outputs."""

    out: Path
    pipeline: Any
    server: Any = None
    publisher: Any = None


def run(args: argparse.Namespace) -> int:
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import console_for, error

    console = console_for(args)
    out = args.output or Path(time.strftime("session-%Y%m%d-%H%M%S.hfr"))
    session = _Session(out, pipeline=None)
    try:
        _plan(args, session)
    except (HyperframesError, ValueError, OSError) as err:
        if session.server is not None:
            session.server.close()
        close_publisher(session.publisher, flush=False)
        error(console, err)
        return 2
    stats, interrupted = _execute(args, session, console)
    return _report(args, session, console, stats, interrupted)


def _load(args: argparse.Namespace) -> Any:
    """The session's config: ``args.config``'s, else the built-in synthetic one."""
    from hyperframes.config import load_config, validate_config

    if args.config:
        return load_config(args.config)
    return validate_config(SYNTHETIC, source="<built-in synthetic session>")


def _recorder_options(args: argparse.Namespace, config: Any, out: Path) -> dict[str, Any]:
    """The recorder's options from the command line; refuses an output over an input."""
    from recordings.output_files import refuse_overlap

    options: dict[str, Any] = {
        "compression_level": None
        if args.compression is None
        else parse_compression(args.compression),
        "split_bytes": args.max_size,
        "split_seconds": args.max_duration,
        "flush_interval": args.flush,
        # a virtual clock's times are not the host's: no wall-clock anchors
        "wall_clock": False if args.fast else None,
        "metadata": {
            "config": str(args.config or "built-in synthetic"),
            **parse_metadata(args.metadata),
        },
    }
    inputs = session_inputs(args.config, config)
    options["inputs"] = inputs  # never a part or snapshot over an input
    if args.snapshot:
        options["snapshot"] = snapshot_options(args, config)
    refuse_overlap(out, inputs)
    if args.metrics is not None:
        refuse_overlap(args.metrics, [*inputs, out])
    return options


def _plan(args: argparse.Namespace, session: _Session) -> None:
    """Config, recorder options, live outputs and pipeline, kept on ``session`` as they
    open (a failure part-way leaves what opened there to close)."""
    from hyperframes.config import build_pipeline

    config = _load(args)
    options = _recorder_options(args, config, session.out)
    dating = None if args.fast else "live"
    session.server = open_server(args.serve, (), dating=dating, limits=serve_limits(args))
    session.publisher = open_publisher(args, (), dating=dating, sources=config.sources)
    session.pipeline = build_pipeline(
        config,
        recorder_path=session.out,
        sensors=args.sensors,
        exclude=args.exclude,
        recorder_options=options,
        gather_ms=record_gather(session.server, session.publisher),
    )


def _status(args: argparse.Namespace, session: _Session, control: Any) -> Callable[[], str]:
    """The live status line's maker; it also hands the pause state to the pipeline."""
    out, pipeline = session.out, session.pipeline

    def status() -> str:
        pipeline.recording_paused = control.paused
        state = "recording PAUSED" if control.paused else "recording"
        if args.snapshot:
            return (
                (
                    f"{state} the last {args.snapshot / 1e9:g} s in memory; 's' or SIGUSR1 writes "
                    f"{out.stem}.NNNN{out.suffix} (space pauses/resumes, Ctrl-C stops)"
                )
                + serve_line(session.server)
                + publisher_line(session.publisher)
            )
        return (
            f"{state} to {out} (space pauses/resumes, Ctrl-C stops)"
            + serve_line(session.server)
            + publisher_line(session.publisher)
        )

    return status


def _execute(args: argparse.Namespace, session: _Session, console: Any) -> tuple[Any, bool]:
    """Run the pipeline to its end (sources done, ``--duration``, Ctrl-C); its
    statistics and whether a second Ctrl-C cut the drain short."""
    import anyio

    from fusion import VirtualClock, current_clock, use_clock
    from hyperframes.cli._common import drive
    from hyperframes.cli._playback import PlaybackControl, keyboard

    pipeline = session.pipeline
    said_stale = say_stale_partials(console, pipeline.recorder, 0)
    for sink in (session.server, session.publisher):
        if sink is not None:
            for spec in (spec for source in pipeline.sources for spec in source.specs):
                sink.declare(spec)
            pipeline.add_sink(sink)

    control = PlaybackControl(paused=args.start_paused)
    pipeline.recording_paused = control.paused
    status = _status(args, session, control)

    async def main() -> Any:
        async with anyio.create_task_group() as tg:
            if args.duration is not None:

                async def stop_later() -> None:  # on the runtime clock: virtual with --fast
                    clock = current_clock()
                    await clock.sleep_until(clock.now() + round(args.duration * 1e9))
                    pipeline.stop()

                tg.start_soon(stop_later)
            stats = await drive(pipeline, console, "record", metrics=args.metrics, status=status)
            tg.cancel_scope.cancel()
        return stats

    async def fast() -> Any:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await main()

    recorder = pipeline.recorder
    keys: dict[bytes, Any] = {}
    if args.snapshot:
        import signal

        recorder.install_signal(signal.SIGUSR1)
        keys[b"s"] = lambda: recorder.trigger("key")
    interrupted = False
    with keyboard(control, enabled=console.is_terminal, extra=keys):
        try:
            stats = anyio.run(fast if args.fast else main)
        except KeyboardInterrupt:  # a second Ctrl-C: the drain was cut short
            interrupted = True
            stats = pipeline.statistics()
        finally:
            close_server(session.server)
            close_publisher(session.publisher, flush=not interrupted)
    assert pipeline.recorder is not None
    say_stale_partials(console, pipeline.recorder, said_stale)  # split parts opened since
    return stats, interrupted


def _report(
    args: argparse.Namespace, session: _Session, console: Any, stats: Any, interrupted: bool
) -> int:
    """The files' summaries, what was recorded, failures; the exit status."""
    from hyperframes.cli._common import error
    from hyperframes.cli._info import sensor_table, summary_table
    from hyperframes.cli._losses import report_sources
    from recordings import open_recording

    pipeline = session.pipeline
    for path in pipeline.recorder.paths:
        with open_recording(path) as log:
            summary = log.summary()
        console.print(summary_table(summary))
        console.print(sensor_table(summary))
    if args.snapshot and not pipeline.recorder.paths:
        print(f"kept {stats.recorder.frames if stats.recorder else 0} frames; no snapshot taken")
    else:
        if pipeline.frames_not_recorded:
            console.print(
                f"{pipeline.frames_not_recorded} frames arrived while paused (not recorded)"
            )
        print(
            f"recorded {stats.recorder.frames if stats.recorder else 0} frames to "
            f"{', '.join(str(p) for p in pipeline.recorder.paths)}"
            + (" (interrupted: frames still in flight were not drained)" if interrupted else "")
        )
    print_served(session.server)
    print_published(session.publisher)
    failed = stats.hub.sources_failed
    for name, why in failed.items():
        error(console, f"source {name} failed: {why} (the other sensors kept recording)")
    write_failures = list(stats.recorder.failures) if stats.recorder is not None else []
    for failure in write_failures:
        error(console, failure)
    silent = report_sources(console, pipeline)
    if write_failures:
        return 1
    if interrupted:
        return 130
    return 1 if failed or silent else 0
