"""``hyperframes info FILE``: what a recording holds, read from its chunk metas only."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table


def register(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        help="summarise a .hfr recording (sensors, counts, time range, compression)",
        description="Summarise a .hfr recording without decompressing it.",
    )
    p.add_argument("file", help="the .hfr file")
    p.add_argument("--scan", action="store_true", help="ignore the footer index, scan the chunks")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import RecordingError
    from recordings import open_recording

    console = Console()
    try:
        with open_recording(args.file, use_index=not args.scan) as log:
            summary = log.summary()
    except (OSError, RecordingError) as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    console.print(summary_table(summary))
    console.print(sensor_table(summary))
    for line in summary.damage:
        console.print(f"[yellow]damage:[/yellow] {line}")
    return 0


def summary_table(s: Any) -> Table:
    """The file-level facts, as ``mcap info`` prints them."""
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", str(s.path))
    table.add_row("version", f"{s.version[0]}.{s.version[1]}")
    table.add_row("size", human_bytes(s.file_size))
    table.add_row("duration", human_ns(s.duration_ns))
    table.add_row("start", "-" if s.t_start is None else f"{s.t_start} ns")
    table.add_row("end", "-" if s.t_end is None else f"{s.t_end} ns")
    table.add_row("frames", str(s.count))
    table.add_row("chunks", str(s.chunks))
    table.add_row(
        "compression",
        f"zstd, {human_bytes(s.raw_bytes)} -> {human_bytes(s.stored_bytes)} "
        f"(ratio {s.compression_ratio:.2f})",
    )
    table.add_row("index", "footer index" if s.indexed else "[yellow]none: chunks scanned[/yellow]")
    for key, value in s.metadata.items():
        table.add_row(f"meta.{key}", str(value))
    return table


def sensor_table(s: Any) -> Table:
    table = Table(title="sensors")
    for col in (
        "sensor",
        "kind",
        "frames",
        "rate (Hz)",
        "nominal (Hz)",
        "first t (ns)",
        "last t (ns)",
    ):
        table.add_column(col, justify="left" if col in ("sensor", "kind") else "right")
    for name, x in s.sensors.items():
        span = (x.t_end - x.t_start) if x.t_start is not None and x.t_end is not None else 0
        rate = f"{(x.count - 1) / span * 1e9:.2f}" if span > 0 and x.count > 1 else "-"
        nominal = "-" if x.spec.rate_hz is None else f"{x.spec.rate_hz:g}"
        table.add_row(
            name,
            x.spec.kind,
            str(x.count),
            rate,
            nominal,
            "-" if x.t_start is None else str(x.t_start),
            "-" if x.t_end is None else str(x.t_end),
        )
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
