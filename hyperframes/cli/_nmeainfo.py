"""``hyperframes info drive.nmea``: what a GNSS receiver's NMEA (or u-blox UBX) log holds.

The log is read once through :class:`~adapters.NmeaSource` (what ``record``
would make of it): fixes, their UTC span, how many had a position and of
which GGA quality, and the input ledger in sentences with every loss by
reason. A log with UBX messages is read with ``protocol="auto"``: frames per
UBX sensor (``.pvt``, ``.hpposllh``, ``.sat``, ``.esf``) and UBX messages by
identity too.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

import numpy as np

from hyperframes.cli._common import literal, titled_table
from hyperframes.cli._units import human_ns, iso_utc


def nmea_document(path: str, protocol: str = "nmea") -> dict[str, Any]:
    """The facts ``info`` prints about the NMEA (``protocol="auto"``: UBX and NMEA) log at
    ``path`` (a JSON-ready dict)."""
    import anyio

    from adapters.nmea import NmeaSource

    source = NmeaSource(path, protocol=protocol)  # type: ignore[arg-type]
    per_sensor: Counter[str] = Counter()
    stamps: list[int] = []
    quality: Counter[int] = Counter()
    positioned = 0

    async def read() -> None:
        nonlocal positioned
        async with source:
            async for frame in source.frames():
                per_sensor[frame.sensor] += 1
                if frame.sensor != source.name:
                    continue
                row = frame.data[0]
                stamps.append(frame.t_sensor)
                quality[int(row["quality"])] += 1
                positioned += bool(np.isfinite(row["lat"]))

    anyio.run(read)
    ledgers = {k: v.as_dict() for k, v in source.ledgers().items() if v.received}
    return {
        "path": path,
        "format": "nmea0183" if protocol == "nmea" else "ubx+nmea0183",
        "sensors": {s: per_sensor[s] for s in (spec.name for spec in source.specs)},
        "ubx": dict(source.statistics().get("ubx", {})),
        "sensor": source.name,
        "frames": len(stamps),
        "with_position": positioned,
        "quality": {str(k): v for k, v in sorted(quality.items())},
        "start_utc_ns": stamps[0] if stamps else None,
        "end_utc_ns": stamps[-1] if stamps else None,
        "start_utc": iso_utc(stamps[0]) if stamps else None,
        "end_utc": iso_utc(stamps[-1]) if stamps else None,
        "duration_s": (stamps[-1] - stamps[0]) / 1e9 if stamps else 0.0,
        "undated": source.undated is not None,
        "ledger": ledgers or {source.name: source.ledgers()[source.name].as_dict()},
    }


def nmea_info(args: argparse.Namespace, console: Any, protocol: str = "nmea") -> int:
    """``info`` on an NMEA (or UBX) log: a summary table, the ledger and its losses."""
    from fusion import LedgerStatistics
    from hyperframes.cli._common import error, warn
    from hyperframes.cli._losses import ledger_table, print_losses

    try:
        doc = nmea_document(str(args.file), protocol)
    except Exception as err:  # an unreadable file: one line, on stderr
        from hyperframes.cli._common import console_for

        what = "an NMEA log" if protocol == "nmea" else "a u-blox UBX/NMEA log"
        error(console_for(args, stderr=True), f"{args.file}: cannot read it as {what}: {err}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    what = "NMEA 0183" if protocol == "nmea" else "u-blox UBX + NMEA 0183"
    table = titled_table(f"{args.file} ({what})")
    table.add_column("fact")
    table.add_column("value")
    table.add_row("fixes", f"{doc['frames']:,} ({doc['with_position']:,} with a position)")
    quality = ", ".join(f"{k}: {v:,}" for k, v in doc["quality"].items()) or "-"
    table.add_row("GGA quality", quality)
    table.add_row("start", str(doc["start_utc"] or "-"))
    table.add_row("end", str(doc["end_utc"] or "-"))
    table.add_row("duration", human_ns(int(doc["duration_s"] * 1e9)))
    if protocol != "nmea":
        frames = ", ".join(f"{k}: {v:,}" for k, v in doc["sensors"].items())
        table.add_row("frames per sensor", literal(frames))
        ubx = ", ".join(f"{k}: {v:,}" for k, v in sorted(doc["ubx"].items()))
        table.add_row("UBX messages", literal(ubx or "-"))
    console.print(table)
    ledgers = {k: LedgerStatistics.from_dict(v) for k, v in doc["ledger"].items()}
    console.print(ledger_table(ledgers, "input ledger"))
    print_losses(console, ledgers)
    if doc["undated"]:
        warn(console, "note:", "no RMC or ZDA dates the fixes: times are UTC of day on 1970-01-01")
    return 0
