"""``hyperframes info FILE [--json]``: what a recording holds, like ``mcap info``.

File facts (parts, size, duration, start/end as date and epoch, compression)
come from the chunk metas without decompressing; per-sensor rate, payload,
drops (gaps in ``seq``) and the clock fit (offset and skew of ``t`` against
``t_sensor``, transport delay from ``t_arrival``) come from one pass over the
frames' timestamps, skipped with ``--quick``.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hyperframes.cli.common import literal


def register(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        help="summarise a .hfr recording: files, duration, sensors, rates, drops, clock fit",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the .hfr file (or the base name of a split recording)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead")
    p.add_argument(
        "--quick", action="store_true", help="chunk metas only: no per-sensor drops or clock fit"
    )
    p.add_argument("--scan", action="store_true", help="ignore the footer index, scan the chunks")
    p.set_defaults(func=run)


def recording_parts(path: Path) -> list[Path]:
    """``path`` itself, or the numbered parts ``stem.NNNN.hfr`` of a split recording."""
    if path.exists():
        return [path]
    return sorted(path.parent.glob(f"{path.stem}.[0-9][0-9][0-9][0-9]{path.suffix or '.hfr'}"))


def run(args: argparse.Namespace) -> int:
    from fusion.errors import RecordingError
    from hyperframes.cli.common import say
    from recordings import open_recording

    console = Console(quiet=bool(getattr(args, "quiet", False)))
    parts = recording_parts(Path(args.file))
    if not parts:
        say(console, "error:", "red", f"{args.file}: no such recording")
        return 2
    documents = []
    try:
        for part in parts:
            with open_recording(part, use_index=not args.scan) as log:
                summary = log.summary()
                deep = None if args.quick else sensor_details(log)
                video = {} if args.quick else video_details(log)
            for name, track in video.items():
                assert deep is not None
                deep.setdefault(name, {})["video"] = track
                deep[name]["payload"] = f"{track['codec']} {track['width']}x{track['height']}"
            documents.append(describe(summary, deep))
            if not args.json:
                console.print(summary_table(summary))
                console.print(sensor_table(summary, deep))
                if video:
                    console.print(video_table(video))
                for line in summary.damage:
                    say(console, "damage:", "yellow", line)
    except (OSError, RecordingError) as err:
        say(console, "error:", "red", err)
        return 2
    if args.json:
        print(json.dumps(documents[0] if len(documents) == 1 else {"parts": documents}, indent=2))
    return 0


def sensor_details(log: Any) -> dict[str, dict[str, Any]]:
    """Per sensor: seq gaps, payload description and the clock fit, from one pass."""
    seqs: dict[str, list[int]] = {}
    times: dict[str, list[tuple[int, int, int]]] = {}
    payload: dict[str, str] = {}
    for frame in log.frames():
        seqs.setdefault(frame.sensor, []).append(frame.seq)
        arrival = frame.t_arrival if frame.t_arrival is not None else frame.t
        times.setdefault(frame.sensor, []).append((frame.t_sensor, frame.t, arrival))
        if frame.sensor not in payload:
            payload[frame.sensor] = describe_payload(frame.data)
    out: dict[str, dict[str, Any]] = {}
    for name, seq in seqs.items():
        # Numbers never seen, from 0: packet records of a B-frame video track come in
        # decode order, and a reference-only packet shares the next frame's number.
        s = np.unique(np.asarray(seq, np.int64))
        gaps = int(s[-1]) + 1 - len(s) if len(s) else 0
        out[name] = {"dropped": gaps, "payload": payload[name], **clock_fit(times[name])}
    return out


def video_details(log: Any) -> dict[str, dict[str, Any]]:
    """Per sensor recorded as encoded video: codec, size, rate, bytes and ratio vs raw pixels."""
    from recordings.video.playback import describe_tracks

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


def clock_fit(rows: list[tuple[int, int, int]]) -> dict[str, Any]:
    """Offset (at the first frame) and skew of ``t`` vs ``t_sensor``; delay ``t_arrival - t``."""
    a = np.asarray(rows, np.float64)
    ts, t, arrival = a[:, 0] - a[0, 0], a[:, 1] - a[0, 0], a[:, 2]
    fit: dict[str, Any] = {"offset_ns": int(rows[0][1] - rows[0][0])}
    if len(rows) > 2 and np.ptp(ts) > 0:
        slope = np.polyfit(ts, t - ts, 1)[0]
        fit["skew_ppm"] = float(slope * 1e6)
    delay = arrival - a[:, 1]
    if np.any(delay != 0):
        fit["delay_ms_p50"] = float(np.percentile(delay, 50) / 1e6)
        fit["delay_ms_p99"] = float(np.percentile(delay, 99) / 1e6)
    return fit


def describe_payload(data: Any) -> str:
    """Short: ``uint8 (48, 64, 3)``, ``6 fields x 2048``, ``dict of 2``, ``1206 bytes``."""
    shape = getattr(data, "shape", None)
    if shape is not None:
        names = getattr(data.dtype, "names", None)
        if names:
            return f"{len(names)} fields x {len(data)}"
        return f"{data.dtype} {tuple(shape)}"
    if isinstance(data, dict):
        return f"dict of {len(data)}"
    if isinstance(data, (bytes, bytearray, memoryview)):
        return f"{len(data)} bytes"
    return type(data).__name__


def stamp(ns: int | None) -> str:
    """``2026-11-29 23:49:14.123 UTC (1796000954.123 s)``; small values are not dates."""
    if ns is None:
        return "-"
    if ns > 10**17:  # after 1973: a wall-clock epoch stamp
        date = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.UTC)
        return f"{date:%Y-%m-%d %H:%M:%S.%f}"[:-3] + f" UTC ({ns / 1e9:.3f} s)"
    return f"{ns / 1e9:.6f} s (monotonic, not a date)"


def describe(summary: Any, deep: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """The JSON document of ``info --json``."""
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
        "frames": summary.count,
        "chunks": summary.chunks,
        "compression": "zstd",
        "raw_bytes": summary.raw_bytes,
        "stored_bytes": summary.stored_bytes,
        "compression_ratio": summary.compression_ratio,
        "indexed": summary.indexed,
        "damage": list(summary.damage),
        "metadata": dict(summary.metadata),
        "sensors": sensors,
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
    table.add_row("start", stamp(s.t_start))
    table.add_row("end", stamp(s.t_end))
    table.add_row("frames", str(s.count))
    table.add_row("chunks", str(s.chunks))
    table.add_row(
        "compression",
        f"zstd, {human_bytes(s.raw_bytes)} -> {human_bytes(s.stored_bytes)} "
        f"(ratio {s.compression_ratio:.2f})",
    )
    table.add_row(
        "index", "footer index" if s.indexed else Text("none: chunks scanned", style="yellow")
    )
    for key, value in s.metadata.items():
        table.add_row(literal(f"meta.{key}"), literal(value))
    return table


def sensor_table(s: Any, deep: dict[str, dict[str, Any]] | None = None) -> Table:
    table = Table(title="sensors")
    columns = ["sensor", "kind", "frames", "Hz", "nominal", "seconds"]
    if deep is not None:
        columns += ["dropped", "payload", "clock fit", "delay ms p50/p99"]
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
            row += [str(d.get("dropped", "-")), literal(d.get("payload", "-")), fit, delay]
        table.add_row(*row)
    return table


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def human_ns(ns: int) -> str:
    return f"{ns / 1e9:.3f} s"
