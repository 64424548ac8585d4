"""``hyperframes info flight.ulg``: what a PX4 flight log (ULog) holds.

Read once through pyulog (:func:`adapters.ulog.read_ulog`, what ``record``
would make of it), summarised as ``info`` does bags: the vehicle, the span
(boot clock and, with a GPS fix, UTC), one row per topic instance (the sensor
``record`` names it, messages, rate, fields) and the logger's dropouts.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from hyperframes.cli._common import literal, titled_table
from hyperframes.cli._units import human_ns, iso_utc


def ulog_document(path: str, name: str = "ulog") -> dict[str, Any]:
    """The facts ``info`` prints about the ULog at ``path`` (a JSON-ready dict)."""
    from adapters.ulog import read_ulog, ulog_sensor

    content = read_ulog(path, sensor=name)
    topics = []
    for topic in content.topics:
        stamps = topic.rows["t"]
        span = int(stamps[-1] - stamps[0]) if len(stamps) > 1 else 0
        topics.append(
            {
                "topic": topic.name,
                "multi_id": topic.multi_id,
                "sensor": ulog_sensor(name, topic),
                "messages": len(stamps),
                "rate_hz": (len(stamps) - 1) / (span / 1e9) if span > 0 else None,
                "fields": len(topic.rows.dtype.names or ()) - 1,
            }
        )
    offset = content.utc_offset_ns
    return {
        "path": path,
        "format": "ulog",
        "vehicle": {
            k: content.info[k] for k in ("sys_name", "ver_hw", "ver_sw") if k in content.info
        },
        "start_ns": content.start_ns,
        "end_ns": content.end_ns,
        "duration_s": (content.end_ns - content.start_ns) / 1e9,
        "utc_offset_ns": offset,
        "start_utc": None if offset is None else iso_utc(content.start_ns + offset),
        "end_utc": None if offset is None else iso_utc(content.end_ns + offset),
        "messages": sum(t["messages"] for t in topics),
        "topics": topics,
        "dropouts": [{"t_ns": d.t_ns, "duration_ms": d.duration_ms} for d in content.dropouts],
        "corrupt": content.corrupt,
    }


def ulog_info(args: argparse.Namespace, console: Any) -> int:
    """``info`` on a ULog: the log's facts, a table of its topics and its dropouts."""
    from hyperframes.cli._common import error, warn

    try:
        doc = ulog_document(str(args.file))
    except Exception as err:  # an unreadable log: one line
        error(console, f"{args.file}: cannot read it as a PX4 ULog: {err}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    facts = titled_table(f"{args.file} (PX4 ULog)")
    facts.add_column("fact")
    facts.add_column("value")
    for key, value in doc["vehicle"].items():
        facts.add_row(key, literal(str(value)))
    facts.add_row("messages", f"{doc['messages']:,} in {len(doc['topics'])} topic instances")
    facts.add_row("duration", human_ns(int(doc["duration_s"] * 1e9)))
    facts.add_row("start (boot clock)", f"{doc['start_ns'] / 1e9:.6f} s")
    facts.add_row("start", str(doc["start_utc"] or "- (no GPS fix with a UTC time)"))
    facts.add_row("end", str(doc["end_utc"] or "-"))
    lost_ms = sum(d["duration_ms"] for d in doc["dropouts"])
    facts.add_row("dropouts", f"{len(doc['dropouts'])} ({lost_ms} ms)")
    console.print(facts)
    table = Table(title="topics")
    for column in ("topic", "sensor", "messages", "rate", "fields"):
        table.add_column(column, justify="right" if column in ("messages", "fields") else "left")
    for t in doc["topics"]:
        rate = "-" if t["rate_hz"] is None else f"{t['rate_hz']:.1f} Hz"
        name = t["topic"] if t["multi_id"] == 0 else f"{t['topic']} [{t['multi_id']}]"
        table.add_row(
            literal(name), literal(t["sensor"]), f"{t['messages']:,}", rate, str(t["fields"])
        )
    console.print(table)
    for d in doc["dropouts"]:
        warn(
            console, "dropout:", f"the logger lost {d['duration_ms']} ms at {d['t_ns'] / 1e9:.6f} s"
        )
    if doc["corrupt"]:
        warn(console, "damage:", "pyulog skipped damaged bytes; messages there are lost")
    return 0
