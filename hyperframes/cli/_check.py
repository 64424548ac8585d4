"""``hyperframes check FILE [--repair -o FIXED]``: verify every CRC; salvage what is readable."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

BAG_SUFFIXES = (".mcap", ".bag", ".db3")
"""Files ``check`` points to ``info`` for: the bags ``hyperframes info`` reads."""


def register(sub: Any) -> None:
    from hyperframes.cli._losses import add_allow_loss

    p = sub.add_parser(
        "check",
        help="verify every chunk of a .hfr recording; --repair salvages a damaged one",
        description=(
            "Verify every chunk's CRC and decode it. Exits 1 when anything is damaged. "
            "--repair writes a new, valid file from everything readable and reports what "
            "was lost."
        ),
    )
    p.add_argument("file", help="the .hfr file")
    p.add_argument(
        "--repair",
        action="store_true",
        help="write every readable frame to a new, valid file (see -o)",
    )
    p.add_argument(
        "--reindex",
        action="store_true",
        help="copy a sound file to -o NEW in format 1.6 (a stamp block per chunk, a stamp "
        "index and the frame details: sync, seeking and info then read no payload and no "
        "chunk meta); records and payloads are kept as they are",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FIXED",
        help="where --repair writes (default: FILE with .repaired.hfr); --reindex's NEW",
    )
    add_allow_loss(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import console_for, count_caveat, error, literal, note, warn
    from hyperframes.cli._losses import loss_exit
    from hyperframes.cli._progress import progress_bar
    from recordings import Recorder, open_recording
    from recordings.errors import RecordingError
    from recordings.output_files import safe_output

    console = console_for(args)
    path = Path(args.file)
    bag = path.is_dir() or path.suffix.lower() in BAG_SUFFIXES
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder")
        log = open_recording(path)
    except (OSError, RecordingError) as err:
        quiet, console.quiet = console.quiet, False
        text = str(err) if isinstance(err, RecordingError) else f"{path}: {err.strerror or err}"
        if isinstance(err, IsADirectoryError):
            text = f"{path} is a folder"
        if bag:
            text += (
                "; check verifies .hfr recordings: for a ROS bag or an MCAP file, "
                f"'hyperframes info {path}' checks its index against its contents"
            )
        note(console, "unreadable:", text, "red")
        console.quiet = quiet
        return 2
    with log:
        with progress_bar(console, f"check {path.name}", len(log.chunks), unit="chunks") as step:
            damage = log.verify(progress=step)
        summary = log.summary()
        console.print(
            literal(
                f"{path}: {summary.chunks} chunks, {summary.count} frames"
                f"{count_caveat(summary)} in readable chunk metas, "
                f"{'footer index' if summary.indexed else 'no footer index'}"
            ),
            soft_wrap=True,
        )
        if args.reindex and not damage and summary.indexed:
            return _reindex(args, log, path, console)
        if not damage and summary.indexed:
            note(
                console,
                "ok:",
                "every CRC checks out, every record decodes and matches its chunk's meta, "
                "no (sensor, seq) twice",
            )
            return 0
        for problem in damage:
            note(console, "damaged:", problem, "red")
        if not damage:
            warn(console, "no footer index", "(the writer did not close the file)")
        if not args.repair:
            console.print("run again with --repair -o FIXED.hfr to salvage what is readable")
            return loss_exit(args, True)
        out = Path(args.output) if args.output else path.with_suffix(".repaired.hfr")
        kept = 0
        try:
            with (
                safe_output(out, [path]) as staged,
                Recorder(staged, sensors=log.specs.values(), metadata=log.metadata) as rec,
            ):
                for frame in log.frames():
                    rec.write(frame)
                    kept += 1
        except (OSError, HyperframesError) as err:
            error(console, f"--repair: {err}")
            return 2
        lost = [e for e in log.damage if e not in damage]
        for problem in lost:
            note(console, "damaged:", problem, "red")
        console.print(
            literal(f"repaired: wrote {kept} frames to {out}; lost the chunks listed above"),
            soft_wrap=True,
        )
    return loss_exit(args, True)


def _reindex(args: argparse.Namespace, log: Any, path: Path, console: Any) -> int:
    """``check --reindex -o NEW``: the sound file ``log`` copied with stamp blocks and
    a stamp index."""
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import error, literal
    from recordings.hfr import reindex
    from recordings.output_files import safe_output

    if not args.output:
        error(console, "--reindex needs -o NEW.hfr (the file is never rewritten in place)")
        return 2
    out = Path(args.output)
    try:
        with safe_output(out, [path]) as staged:
            n = reindex(log, staged)
    except (OSError, HyperframesError) as err:
        error(console, f"--reindex: {err}")
        return 2
    console.print(
        literal(
            f"reindexed: wrote {out} (format 1.6: {n} chunks with stamp blocks, a stamp index, "
            "frame details)"
        ),
        soft_wrap=True,
    )
    return 0
