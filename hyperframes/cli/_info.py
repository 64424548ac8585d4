"""``hyperframes info FILE [--json]``: what a recording holds, like ``mcap info``.

An MCAP file or a ROS bag (``.bag``, ``.db3``, a bag directory) is summarised
as ``ros2 bag info`` does: topics, types, counts, duration and dates. An NMEA
0183 log (a GNSS receiver's sentences) is read once: fixes, dates, the ledger
(:mod:`hyperframes.cli._nmeainfo`).

File facts (parts, size, duration, start/end as date and epoch, compression)
come from the chunk metas without decompressing; per-sensor rate, payload,
drops (gaps in ``seq``) and the clock fit (offset and skew of ``t`` against
``t_sensor``, transport delay from ``t_arrival``) come from the file's footer
(format 1.6: its stamp index and frame details, no chunk read), or for an
older file from one pass over every frame (``hyperframes check FILE --reindex
-o NEW`` upgrades it); ``--quick`` skips them.

This module holds the command and the recording's tables and JSON document;
the per-sensor figures are :mod:`hyperframes.cli._sensorstats` (its clock fit
:mod:`hyperframes.cli._clockfit`), bags are :mod:`hyperframes.cli._baginfo`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from hyperframes.cli._common import count_caveat, literal
from hyperframes.cli._units import human_bytes, human_ns, iso_utc, stamp


def register(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        help="summarise a .hfr recording (sensors, rates, drops, clock fit, dates) or a ROS bag",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "file",
        help="a .hfr file (or the base name of a split recording), an MCAP file, a bag, a "
        "ULog, an Ouster OSF file, a CAN log, a pcap/pcapng capture or an NMEA/UBX log",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead")
    p.add_argument(
        "--quick",
        action="store_true",
        help="indexes only: no per-sensor drops or clock fit; for a bag, its messages not counted",
    )
    p.add_argument("--scan", action="store_true", help="ignore the footer index, scan the chunks")
    p.add_argument(
        "--ros-distro",
        metavar="NAME",
        help="ROS 2 types for a bag that stores none (humble, jazzy...; default: the bag's "
        "own distro, Humble for bags without stored definitions, else the newest LTS)",
    )
    p.set_defaults(func=run)


def recording_parts(path: Path) -> list[Path]:
    """``path`` itself, or the numbered parts ``stem.NNNN.hfr`` of a split recording."""
    if path.exists():
        return [path]
    return sorted(path.parent.glob(f"{path.stem}.[0-9][0-9][0-9][0-9]{path.suffix or '.hfr'}"))


def run(args: argparse.Namespace) -> int:
    from hyperframes.cli._audioinfo import audio_details, audio_table
    from hyperframes.cli._common import console_for, error, note, warn
    from hyperframes.cli._losses import ledger_table, print_losses
    from recordings import is_bag, open_recording
    from recordings.errors import RecordingError

    console = console_for(args)
    hfr = _starts_like_a_recording(args.file)  # then no bag or NMEA reader is imported
    if not hfr and (is_bag(args.file) or str(args.file).lower().endswith(".mcap")):
        from hyperframes.cli._baginfo import bag_info

        return bag_info(args, console)
    if not hfr and _ulog(args.file):
        from hyperframes.cli._uloginfo import ulog_info

        return ulog_info(args, console)
    fmt = None if hfr else _identify(args.file)
    if fmt is not None and fmt.reader == "gnss":
        from hyperframes.cli._nmeainfo import nmea_info

        return nmea_info(args, console, "auto")
    if not hfr and _nmea(args.file):
        from hyperframes.cli._nmeainfo import nmea_info

        return nmea_info(args, console)
    if fmt is not None and fmt.reader == "osf":
        from hyperframes.cli._osfinfo import osf_info

        return osf_info(args, console)
    if fmt is not None and fmt.reader in ("can", "pcap"):
        from hyperframes.cli._fileinfo import file_info

        return file_info(args, console, fmt)
    named = fmt is not None or Path(args.file).suffix.lower() != ".hfr"
    if not hfr and named and Path(args.file).is_file():  # not a recording: name what it is
        from hyperframes.cli._fileinfo import unread_format

        return unread_format(args, fmt)
    parts = recording_parts(Path(args.file))
    if not parts:
        error(console, f"{args.file}: no such recording")
        return 2
    documents = []
    try:
        for part in parts:
            with open_recording(part, use_index=not args.scan) as log:
                summary = log.summary()
                deep = read_from = None
                if not args.quick:
                    deep, read_from = sensor_report(log, part, console)
                video = {} if args.quick else video_details(log)
                audio = {} if args.quick else audio_details(log)
            for name, track in video.items():
                assert deep is not None
                deep.setdefault(name, {})["video"] = track
                deep[name]["payload"] = f"{track['codec']} {track['width']}x{track['height']}"
            for name, sound in audio.items():
                assert deep is not None
                deep.setdefault(name, {})["audio"] = sound
            documents.append(describe(summary, deep))
            if deep is not None:
                documents[-1]["details_from"] = "frames" if read_from else "footer"
                documents[-1]["frames_read_because"] = read_from
            if not args.json:
                console.print(summary_table(summary))
                console.print(sensor_table(summary, deep))
                if video:
                    console.print(video_table(video))
                if audio:
                    console.print(audio_table(audio))
                if summary.ledgers:
                    console.print(ledger_table(summary.ledgers, "input ledger (while recording)"))
                    print_losses(console, summary.ledgers)
                for line in summary.damage:
                    warn(console, "damage:", line)
                if read_from:
                    note(console, "note:", read_from_note(part, read_from), style="cyan")
    except (OSError, RecordingError) as err:
        error(console, err)
        return 2
    if args.json:
        print(json.dumps(documents[0] if len(documents) == 1 else {"parts": documents}, indent=2))
    return 0


def sensor_report(
    log: Any, part: Path, console: Any
) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The per-sensor report and why every frame was read (``None``: the footer of a 1.6
    file held it all, no chunk was read)."""
    from hyperframes.cli._sensorstats import (
        columns_from_footer,
        columns_from_frames,
        report_from_summaries,
        summarize,
    )

    report = report_from_summaries(log)  # a long 1.7 file: only the footer index read
    if not isinstance(report, str):
        return report, None
    columns = columns_from_footer(log)
    read_from = None
    if isinstance(columns, str):
        from hyperframes.cli._progress import progress_bar

        read_from = columns
        with progress_bar(console, f"info {part.name}", log.summary().count) as advance:
            columns = columns_from_frames(log, advance)
    return {name: summarize(c) for name, c in columns.items()}, read_from


def read_from_note(part: Path, why: str) -> str:
    """The note ``info`` prints when it had to read every frame (what to do about it)."""
    text = f"{part.name}: per-sensor figures read from every frame: {why}"
    if why.startswith("the file has no frame details"):
        text += f"; `hyperframes check {part} --reindex -o NEW.hfr` adds them"
    return text


def _ulog(path: str) -> bool:
    from adapters.ulog import looks_like_ulog

    return looks_like_ulog(path)


def _identify(path: str) -> Any:
    """The input format :mod:`hyperframes.cli._sniff` recognises in ``path``, or ``None``."""
    from hyperframes.cli._sniff import identify

    return identify(path)


def _nmea(path: str) -> bool:
    from adapters.nmea import looks_like_nmea

    return looks_like_nmea(path)


def _starts_like_a_recording(path: str) -> bool:
    """``path`` is a file that begins with the ``.hfr`` magic bytes."""
    from recordings.hfr import MAGIC

    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def video_details(log: Any) -> dict[str, dict[str, Any]]:
    """Per sensor recorded as encoded video: codec, size, rate, bytes and ratio vs raw pixels."""
    from recordings.hfr.video import describe_tracks

    return {name: track.as_dict() for name, track in describe_tracks(log).items()}


def video_table(video: dict[str, dict[str, Any]]) -> Table:
    """The encoded video sensors: codec, size, rate, key frames and the achieved ratio."""
    table = Table(title="encoded video")
    for col in ("sensor", "codec", "size", "Hz", "packets", "key frames", "stored", "raw", "ratio"):
        table.add_column(col, justify="left" if col in ("sensor", "codec") else "right")
    for name, v in video.items():
        codec = v["codec"] if v["encoder"] in ("", v["codec"]) else f"{v['codec']} ({v['encoder']})"
        table.add_row(
            literal(name),
            literal(codec),
            literal(
                f"{v['width']}x{v['height']} {v['pix_fmt']}"
                + ("" if v.get("rotation") is None else f", turned {v['rotation']} deg")
            ),
            "-" if v["rate_hz"] is None else f"{v['rate_hz']:.2f}",
            str(v["packets"]),
            str(v["keyframes"]),
            human_bytes(v["encoded_bytes"]),
            human_bytes(v["raw_bytes"]),
            f"{v['ratio']:.1f}x",
        )
    return table


def describe(summary: Any, deep: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """The JSON document of ``info --json``."""
    from hyperframes.cli._losses import ledger_doc

    sensors = {}
    for name, x in summary.sensors.items():
        span = (x.t_end - x.t_start) if x.t_start is not None and x.t_end is not None else 0
        sensors[name] = {
            "kind": x.spec.kind,
            "frames": x.count,
            "rate_hz": (x.count - 1) / span * 1e9 if span > 0 and x.count > 1 else None,
            "nominal_rate_hz": x.spec.rate_hz,
            "t_start_ns": x.t_start,
            "t_end_ns": x.t_end,
            **((deep or {}).get(name, {})),
        }
    return {
        "path": str(summary.path),
        "version": f"{summary.version[0]}.{summary.version[1]}",
        "size_bytes": summary.file_size,
        "duration_s": summary.duration_ns / 1e9,
        "start_ns": summary.t_start,
        "end_ns": summary.t_end,
        "start_utc_ns": summary.utc_start,
        "end_utc_ns": summary.utc_end,
        "start_utc": iso_utc(summary.utc_start),
        "end_utc": iso_utc(summary.utc_end),
        "wall_clock": wall_clock_doc(summary.wall_clock),
        "frames": summary.count,
        "chunks": summary.chunks,
        "compression": "zstd",
        "raw_bytes": summary.raw_bytes,
        "stored_bytes": summary.stored_bytes,
        "compression_ratio": summary.compression_ratio,
        "indexed": summary.indexed,
        "damage": list(summary.damage),
        "overcounted_chunks": list(summary.overcounted),
        "metadata": dict(summary.metadata),
        "sensors": sensors,
        "ledger": ledger_doc(summary.ledgers) if summary.ledgers else None,
    }


def wall_clock_doc(wall: Any) -> dict[str, Any] | None:
    """How the recording dates its times: anchors and any wall-clock steps (NTP)."""
    if wall is None:
        return None
    first = wall.anchors[0]
    return {
        "reference": "monotonic",
        "anchors": len(wall.anchors),
        "utc_minus_reference_ns": first.offset_ns,
        "steps": [{"at_ns": at, "step_ns": step} for at, step in wall.steps()],
    }


def summary_table(s: Any) -> Table:
    """The file-level facts, as ``mcap info`` prints them."""
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", literal(s.path))
    table.add_row("version", f"{s.version[0]}.{s.version[1]}")
    table.add_row("size", human_bytes(s.file_size))
    table.add_row("duration", human_ns(s.duration_ns))
    table.add_row("start", stamp(s.t_start, s.utc_start))
    table.add_row("end", stamp(s.t_end, s.utc_end))
    if s.wall_clock is not None:
        for at, step in s.wall_clock.steps():
            table.add_row("clock step", f"wall clock stepped {step / 1e6:+.3f} ms at t={at}")
    table.add_row("frames", literal(f"{s.count}{count_caveat(s)}"))
    table.add_row("chunks", str(s.chunks))
    table.add_row(
        "compression",
        f"zstd, {human_bytes(s.raw_bytes)} -> {human_bytes(s.stored_bytes)} "
        f"(ratio {s.compression_ratio:.2f})",
    )
    table.add_row(
        "index",
        "footer index" if s.indexed else Text("none: chunks scanned", style="yellow"),
    )
    for key, value in s.metadata.items():
        table.add_row(literal(f"meta.{key}"), literal(value))
    return table


def sensor_table(s: Any, deep: dict[str, dict[str, Any]] | None = None) -> Table:
    table = Table(title="sensors")
    columns = ["sensor", "kind", "frames", "Hz", "nominal", "seconds"]
    if deep is not None:
        columns += ["dropped", "segments", "gaps", "payload", "clock fit", "delay ms p50/p99"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("sensor", "kind", "payload") else "right")
    for name, x in s.sensors.items():
        span = (x.t_end - x.t_start) if x.t_start is not None and x.t_end is not None else 0
        rate = f"{(x.count - 1) / span * 1e9:.2f}" if span > 0 and x.count > 1 else "-"
        nominal = "-" if x.spec.rate_hz is None else f"{x.spec.rate_hz:g}"
        row: list[Any] = [
            literal(name),
            literal(x.spec.kind),
            str(x.count),
            rate,
            nominal,
            f"{span / 1e9:.3f}",
        ]
        if deep is not None:
            d = deep.get(name, {})
            fit = f"{d.get('offset_ns', 0) / 1e6:+.3f} ms"
            if "skew_ppm" in d:
                fit += f", {d['skew_ppm']:+.1f} ppm"
            delay = (
                f"{d['delay_ms_p50']:.2f} / {d['delay_ms_p99']:.2f}" if "delay_ms_p50" in d else "-"
            )
            gaps = d.get("gaps_ns") or []
            gap_text = f"{len(gaps)} (max {max(gaps) / 1e9:.2f} s)" if gaps else "0"
            row += [
                str(d.get("dropped", "-")),
                str(d.get("segments", "-")),
                gap_text,
                literal(d.get("payload", "-")),
                fit,
                delay,
            ]
        table.add_row(*row)
    return table
