"""``hyperframes info drive.osf``: what an Ouster OSF file holds.

Read from the file's metadata through ouster-sdk's OSF reader
(:func:`adapters.lidar._ouster.osf_sensor_names`' reading, what ``record``
would make of it; no scan is decoded but each stream's first): the time range
(the receive clock), and one row per lidar stream: the sensor ``record`` names
it, the lidar's model, serial, mode and profile, its scans and their span, and
its IMU sensor where the scans carry IMU samples.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from hyperframes.cli._common import literal, titled_table
from hyperframes.cli._units import human_ns, iso_utc


def osf_document(path: str, name: str = "lidar") -> dict[str, Any]:
    """The facts ``info`` prints about the OSF file at ``path`` (a JSON-ready dict)."""
    from adapters.lidar import read_osf

    contents = read_osf(path, name)
    sensors = []
    for stream in contents.streams:
        info, fmt = stream.info, stream.info.format
        span = stream.end_ns - stream.start_ns
        sensors.append(
            {
                "sensor": stream.sensor,
                "stream": stream.stream_id,
                "model": str(info.prod_line),
                "serial": str(info.sn),
                "firmware": str(info.fw_rev),
                "lidar_mode": str(info.config.lidar_mode),
                "udp_profile": str(fmt.udp_profile_lidar),
                "beams": int(fmt.pixels_per_column),
                "columns": int(fmt.columns_per_frame),
                "scans": stream.messages,
                "start_ns": stream.start_ns,
                "end_ns": stream.end_ns,
                "rate_hz": (stream.messages - 1) / (span / 1e9) if span > 0 else None,
                "imu": stream.imu,
            }
        )
    names = [n for s in sensors for n in (s["sensor"], s["imu"]) if n is not None]
    return {
        "path": path,
        "format": "osf",
        "start_ns": contents.start_ns,
        "end_ns": contents.end_ns,
        "duration_s": (contents.end_ns - contents.start_ns) / 1e9,
        "start_utc": iso_utc(contents.start_ns),
        "end_utc": iso_utc(contents.end_ns),
        "scans": sum(s["scans"] for s in sensors),
        "sensors": sensors,
        "sensor_names": names,
        "other_messages": contents.other_messages,
    }


def osf_info(args: argparse.Namespace, console: Any) -> int:
    """``info`` on an OSF file: its facts and a table of its lidar streams."""
    from adapters.errors import SourceOpenError
    from hyperframes.cli._common import error

    try:
        doc = osf_document(str(args.file))
    except SourceOpenError as err:  # ouster-sdk missing, a damaged file: one line
        error(console, f"{args.file}: {err}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    facts = titled_table(f"{args.file} (Ouster OSF)")
    facts.add_column("fact")
    facts.add_column("value")
    facts.add_row("scans", f"{doc['scans']:,} from {len(doc['sensors'])} lidar(s)")
    facts.add_row("sensors", literal(", ".join(doc["sensor_names"])))
    facts.add_row("duration", human_ns(int(doc["duration_s"] * 1e9)))
    facts.add_row("start (receive clock)", str(doc["start_utc"]))
    facts.add_row("end", str(doc["end_utc"]))
    console.print(facts)
    table = Table(title="lidar streams")
    for column in ("sensor", "model", "serial", "mode", "profile", "scans", "rate", "imu"):
        table.add_column(column, justify="right" if column == "scans" else "left")
    for s in doc["sensors"]:
        rate = "-" if s["rate_hz"] is None else f"{s['rate_hz']:.1f} Hz"
        table.add_row(
            literal(s["sensor"]),
            literal(s["model"]),
            literal(s["serial"]),
            literal(s["lidar_mode"]),
            literal(s["udp_profile"]),
            f"{s['scans']:,}",
            rate,
            literal(s["imu"] or "-"),
        )
    console.print(table)
    return 0
