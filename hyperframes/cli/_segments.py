"""``hyperframes segments RUN.toml FILE``: a run file's models over one recording or video,
cut into segments that a process pool works in parallel (:mod:`hyperframes.segments`).

A ``.hfr`` recording runs the run file's ``[sync]``, ``[[stages]]`` and
``[[workers]]`` (:class:`~hyperframes.segments.RecordingJob`: one item per
group); any other file is a video whose frames run the stages and workers as
sensor ``--sensor`` (:class:`~hyperframes.segments.VideoWorkersJob`: one item
per frame). Items come back in time order, identical to one serial pass.
``-o OUT.jsonl`` writes one JSON line per item: ``t``, its members' ``keys``
(``[sensor, seq]``) and each worker's result (``value``, or ``error``).

In a terminal a bar shows the position in the file (seconds of a recording,
frames of a video) out of its total, the rate and the time left; the final
line is printed once.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from rich.console import Console

from hyperframes.cli._common import console_for, error, warn
from hyperframes.cli._units import count_arg, seconds_arg

_NS = 1_000_000_000


def register(sub: Any) -> None:
    p = sub.add_parser(
        "segments",
        help="a RUN.toml's models over one recording or video, in parallel segments",
        description=(
            "Cut a .hfr recording (at chunk boundaries) or a video (at key frames) into "
            "segments of about --segment seconds and work them in --processes processes: "
            "the run file's [sync], [[stages]] and [[workers]] for a recording, its stages "
            "and workers on every frame of a video. Results come back in time order, as "
            "one serial pass gives them. See docs/segments.md."
        ),
    )
    p.add_argument("run", help="the RUN.toml: [sync], [[stages]], [[workers]] ([fleet] not needed)")
    p.add_argument("file", help="a .hfr recording, or a video file (MP4, MKV, MPEG-TS...)")
    p.add_argument(
        "--processes",
        type=count_arg("--processes", maximum=1024),
        default=2,
        help="worker processes (default 2)",
    )
    p.add_argument(
        "--segment",
        type=seconds_arg("--segment", above=True),
        default=30.0,
        metavar="SECONDS",
        help="target segment length in seconds (default 30)",
    )
    p.add_argument(
        "--sensor", default="cam", help="a video's sensor name, as the workers' input (cam)"
    )
    p.add_argument("-o", "--output", help="write every item as a JSON line (OUT.jsonl)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import ConfigError
    from hyperframes.fleet import load_fleet_config

    console = console_for(args)
    path = Path(args.file)
    try:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        config = load_fleet_config(args.run, recording=str(path))
        job, total, unit, position = _job(config, path, args.sensor)
    except (ConfigError, OSError, ValueError) as err:
        error(console, err)
        return 2
    from hyperframes.segments import SegmentError

    try:
        done = _work(job, args, console, total, unit, position)
    except SegmentError as err:
        error(console, err)
        return 1
    except OSError as err:  # the output could not be written
        error(console, err)
        return 2
    items, errors, stats, elapsed = done
    for worker, n in sorted(errors.items()):
        warn(console, "warning:", f"{worker}: {n} item(s) with an error result")
    resplit = f", {stats.resplit} re-split" if stats.resplit else ""
    wrote = f"; wrote {args.output}" if args.output else ""
    print(  # the final result: printed with -q too, once
        f"segments: {items} {'groups' if unit == 's' else 'frames'} from {path} in "
        f"{stats.run} segment tasks ({stats.planned} planned{resplit}) on {args.processes} "
        f"processes, {elapsed:.1f} s{wrote}"
    )
    return 0


def _job(config: Any, path: Path, sensor: str) -> tuple[Any, int, str, Callable[[int, Any], int]]:
    """The job for ``path``, the bar's total and unit, and an item's position in that unit."""
    from hyperframes.segments import RecordingJob, VideoWorkersJob

    if path.suffix == ".hfr":
        from recordings.hfr import open_recording

        with open_recording(path) as log:
            chunks = list(log.chunks)
        if not chunks:
            return RecordingJob(config, str(path)), 0, "s", lambda t, keys: 0
        t0 = min(c.t_start for c in chunks)
        t1 = max(c.t_end for c in chunks)
        total = max(1, math.ceil((t1 - t0) / _NS))
        return RecordingJob(config, str(path)), total, "s", lambda t, keys: (t - t0) // _NS
    job = VideoWorkersJob(str(path), config=config, sensor=sensor)
    # a frame's seq is its place in presentation order: position = frames passed
    return job, len(job.times), "frames", lambda t, keys: keys[0][1] + 1 if keys else 0


def _work(
    job: Any,
    args: argparse.Namespace,
    console: Console,
    total: int,
    unit: str,
    position: Callable[[int, Any], int],
) -> tuple[int, Counter[str], Any, float]:
    from hyperframes.cli._progress import progress_bar
    from hyperframes.segments import SegmentStatistics, run_segments
    from recordings.output_files import safe_output

    stats = SegmentStatistics()
    started = time.perf_counter()
    items = at = 0
    errors: Counter[str] = Counter()
    with ExitStack() as stack:
        out: IO[str] | None = None
        if args.output:
            tmp = stack.enter_context(safe_output(args.output, inputs=[args.file, args.run]))
            out = stack.enter_context(tmp.open("w", encoding="utf-8"))
        advance = stack.enter_context(progress_bar(console, "segments", total, unit=unit))
        for t, (keys, results) in run_segments(
            job, processes=args.processes, target_s=args.segment, stats=stats
        ):
            items += 1
            for worker, value in results.items():
                if isinstance(value, BaseException):
                    errors[worker] += 1
            if out is not None:
                out.write(json.dumps(item_json(t, keys, results)) + "\n")
            now = min(position(t, keys), total)
            if now > at:
                advance(now - at)
                at = now
    return items, errors, stats, time.perf_counter() - started


def item_json(t: int, keys: Any, results: Mapping[str, Any]) -> dict[str, Any]:
    """One item as JSON: ``t``, ``keys`` as ``[sensor, seq]`` and each worker's result."""
    return {
        "t": int(t),
        "keys": [[str(sensor), int(seq)] for sensor, seq in keys],
        "results": {str(name): dict(_result(value)) for name, value in results.items()},
    }


def _result(value: Any) -> Iterator[tuple[str, Any]]:
    from recordings.outputs import json_value

    if isinstance(value, BaseException):
        yield "error", str(value)
    elif isinstance(value, Mapping):
        yield "value", {str(k): json_value(v) for k, v in value.items()}
    else:
        yield "value", json_value(value)
