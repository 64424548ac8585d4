"""``hyperframes info`` on an MCAP file or a ROS bag, as ``ros2 bag info`` shows one.

:func:`bag_info` reads the bag's summary (:func:`adapters.bags._summary.read_bag_summary`:
topics, types, counts, and with a check every message read) and prints it as
tables or one JSON document; a third-party reader's failure becomes one line
(:func:`reason`). Kept apart from :mod:`hyperframes.cli._info` so that ``info``
on a ``.hfr`` file never loads the bag reader.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from hyperframes.cli._common import literal
from hyperframes.cli._units import human_ns, iso_utc, stamp

if TYPE_CHECKING:
    from adapters.bags import BagSummary


def reason(err: BaseException) -> str:
    """Why a third-party reader failed, never empty: its message (or its type) and the
    cause it chained, plus what the MCAP reader's terse words mean."""
    text = str(err).strip() or type(err).__name__
    cause = err.__cause__ or err.__context__
    if cause is not None and str(cause).strip() not in text:
        text += f" ({type(cause).__name__}: {str(cause).strip() or 'no message'})"
    if "end magic" in text.lower():
        text += " (the file is cut short, or is not MCAP: it does not end with the MCAP magic)"
    return text


def bag_info(args: argparse.Namespace, console: Any) -> int:
    """``info`` on an MCAP file or a ROS bag."""
    from adapters.bags import read_bag_summary
    from hyperframes.cli._common import error, warn

    path = Path(args.file)
    if not path.exists():
        error(console, f"{args.file}: no such file or bag directory")
        return 2
    try:
        info = read_bag_summary(path, ros_distro=args.ros_distro, check=not args.quick)
    except Exception as err:  # third-party readers raise many types; one line each
        error(console, f"{args.file}: cannot read it as MCAP or a ROS bag: {reason(err)}")
        return 2
    if args.json:
        print(json.dumps(bag_document(info), indent=2))
        return 0
    for table in bag_tables(info):
        console.print(table)
    for t in info.topics:
        if t.problem:
            warn(console, "not readable:", literal(f"{t.name} ({t.msgtype}): {t.problem}"))
        if t.missing:
            warn(
                console,
                "missing:",
                literal(f"{t.name}: the index says {t.count} messages, {t.read} read"),
            )
    for line in info.damage:
        warn(console, "damage:", literal(line))
    for line in info.notes:
        warn(console, "note:", literal(line))
    return 0


def bag_document(info: BagSummary) -> dict[str, Any]:
    """The JSON document of ``info --json`` on a bag."""
    return {
        "path": str(info.path),
        "storage": info.storage,
        "duration_s": info.duration_ns / 1e9,
        "start_ns": info.start_ns,
        "end_ns": info.end_ns,
        "start_utc": iso_utc(info.start_ns) if info.dated else None,
        "end_utc": iso_utc(info.end_ns) if info.dated else None,
        "messages": info.messages,
        "plugin": info.plugin,
        "compression": info.compression,
        "types": info.types,
        "ros_distro": info.ros_distro,
        "profile": info.profile,
        "index": info.index,
        "attachments": list(info.attachments),
        "metadata": list(info.metadata),
        "notes": list(info.notes),
        "checked": info.checked,
        "missing": info.missing if info.checked else None,
        "damage": list(info.damage),
        "topics": [
            {
                "topic": t.name,
                "type": t.msgtype,
                "count": t.count,
                "read": t.read,
                "missing": t.missing if t.read is not None else None,
                "problem": t.problem,
            }
            for t in info.topics
        ],
    }


def bag_tables(info: BagSummary) -> list[Table]:
    """What ``info`` prints on a bag: the file facts, then one row per topic."""
    head = Table(show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    head.add_row("path", literal(info.path))
    plugin = f" ({info.plugin})" if info.plugin and info.plugin != info.storage else ""
    head.add_row("storage", info.storage + plugin)
    if info.profile is not None:
        head.add_row("profile", literal(repr(info.profile) if not info.profile else info.profile))
    if info.index:
        head.add_row("index", literal(info.index))
    if info.compression:
        head.add_row("compression", info.compression)
    if info.types:
        head.add_row("types", literal(info.types))
    head.add_row("duration", human_ns(info.duration_ns))
    head.add_row("start", bag_stamp(info.start_ns, dated=info.dated))
    head.add_row("end", bag_stamp(info.end_ns, dated=info.dated))
    head.add_row("messages", str(info.messages))
    if info.attachments:
        head.add_row("attachments", literal(", ".join(info.attachments)))
    if info.metadata:
        head.add_row("metadata", literal(", ".join(info.metadata)))
    if info.checked:
        found = sum(t.read or 0 for t in info.topics)
        head.add_row("read", f"{found}" + (f" ({info.missing} missing)" if info.missing else ""))
    table = Table(title="topics")
    columns = ["topic", "type", "count"] + (["read"] if info.checked else [])
    for col in columns:
        table.add_column(col, justify="right" if col in ("count", "read") else "left")
    for t in info.topics:
        row: list[Any] = [literal(t.name), literal(t.msgtype), str(t.count)]
        if info.checked:
            row.append(str(t.read) + (" (not readable)" if t.problem else ""))
        table.add_row(*row)
    return [head, table]


def bag_stamp(ns: int | None, *, dated: bool) -> str:
    """A bag's log time: a date when the bag was recorded on a wall clock."""
    if ns is None:
        return "-"
    if dated:
        return stamp(ns, ns)
    return f"{ns / 1e9:.6f} s (the recorder's own clock, not a date)"
