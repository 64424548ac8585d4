"""``hyperframes info`` on an input file the project reads that is not a recording: a CAN
log (python-can), a pcap or pcapng capture (UDP datagrams by port and kind), and, on a
file it does not read, the format it recognises (:mod:`hyperframes.cli._sniff`) and what
to do, on stderr with exit status 2.

Each is read once, as ``record`` would read it: a CAN log through
:class:`~adapters.CanSource` (frames per id, channels, span, the ledger), a capture
through :class:`~adapters.lidar._pcap.PcapReader` (datagrams per destination port, the
kind of sensor their payloads look like, span, skipped records).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from rich.table import Table

from hyperframes.cli._common import literal
from hyperframes.cli._sniff import Format
from hyperframes.cli._units import human_ns, iso_utc


def can_document(path: str, fmt: Format) -> dict[str, Any]:
    """Frames per CAN id, channels, flags, span and the ledger of the CAN log at ``path``."""
    import anyio
    import numpy as np

    from adapters import CanSource

    source = CanSource(path, block=4096)
    ids: Counter[tuple[int, bool]] = Counter()
    channels: Counter[int] = Counter()
    names: dict[str, str] = {}
    fd = remote = 0
    first: int | None = None
    last: int | None = None

    async def read() -> None:
        nonlocal fd, remote, first, last
        async with source:
            async for frame in source.frames():
                rows = frame.data
                keys, counts = np.unique(
                    rows["id"].astype(np.uint64) | (rows["extended"].astype(np.uint64) << 32),
                    return_counts=True,
                )
                for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
                    ids[(key & 0xFFFFFFFF, bool(key >> 32))] += count
                values, counts = np.unique(rows["channel"], return_counts=True)
                channels.update(dict(zip(values.tolist(), counts.tolist(), strict=True)))
                names.update(frame.meta.get("channel_names", {}))
                fd += int(rows["fd"].sum())
                remote += int(rows["remote"].sum())
                lo, hi = int(rows["t"].min()), int(rows["t"].max())
                first = lo if first is None else min(first, lo)
                last = hi if last is None else max(last, hi)

    anyio.run(read)
    ledger = source.ledgers()[source.name]
    frames = sum(ids.values())
    return {
        "path": path,
        "format": f"can ({fmt.detail})",
        "what": fmt.name,
        "frames": frames,
        "ids": {(f"0x{i:08X}" if ext else f"0x{i:03X}"): n for (i, ext), n in sorted(ids.items())},
        "extended_ids": sum(1 for _, ext in ids if ext),
        "fd_frames": fd,
        "remote_frames": remote,
        "channels": {names.get(str(c), str(c)): n for c, n in sorted(channels.items())},
        "start_ns": first,
        "end_ns": last,
        "start_utc": None if first is None else iso_utc(first),
        "end_utc": None if last is None else iso_utc(last),
        "duration_s": 0.0 if first is None or last is None else (last - first) / 1e9,
        "ledger": {source.name: ledger.as_dict()},
    }


def _payload_kind(port: int, payload: bytes) -> str:
    """The sensor a UDP payload looks like (by its port, size and first bytes)."""
    from adapters.lidar import looks_like_hesai

    if looks_like_hesai(payload):
        return "Hesai lidar"
    if len(payload) == 1206 and payload[:2] == b"\xff\xee":
        return "Velodyne data"
    if len(payload) == 512 and port == 8308:
        return "Velodyne position"
    if port in (7502, 7503):
        return "Ouster lidar" if port == 7502 else "Ouster IMU"
    if port == 42102:
        return "Continental ARS548 radar"
    return "UDP"


def pcap_document(path: str, fmt: Format) -> dict[str, Any]:
    """UDP datagrams per destination port (and the kind they look like), span and skipped
    records of the capture at ``path``."""
    from adapters.lidar import PcapReader

    ports: Counter[int] = Counter()
    size: Counter[int] = Counter()
    kinds: dict[int, Counter[str]] = {}
    first: int | None = None
    last: int | None = None
    with PcapReader(path) as reader:
        for t, _, dst, payload, _ in reader.tuples():
            ports[dst] += 1
            size[dst] += len(payload)
            if ports[dst] <= 64:  # enough to tell the kind
                kinds.setdefault(dst, Counter())[_payload_kind(dst, payload)] += 1
            first = t if first is None else min(first, t)
            last = t if last is None else max(last, t)
        records, skipped, capture = reader.records, dict(reader.skipped), reader.format
    return {
        "path": path,
        "format": capture,
        "what": fmt.name,
        "records": records,
        "udp_datagrams": sum(ports.values()),
        "ports": {
            str(port): {
                "datagrams": n,
                "bytes": size[port],
                "kind": kinds[port].most_common(1)[0][0],
            }
            for port, n in sorted(ports.items())
        },
        "skipped": skipped,
        "start_ns": first,
        "end_ns": last,
        "start_utc": None if first is None else iso_utc(first),
        "end_utc": None if last is None else iso_utc(last),
        "duration_s": 0.0 if first is None or last is None else (last - first) / 1e9,
    }


def file_info(args: argparse.Namespace, console: Any, fmt: Format) -> int:
    """``info`` on a CAN log or a capture: a table (or ``--json``), the ledger, losses."""
    from fusion import LedgerStatistics
    from hyperframes.cli._common import console_for, error
    from hyperframes.cli._losses import ledger_table, print_losses

    try:
        doc = can_document(args.file, fmt) if fmt.reader == "can" else pcap_document(args.file, fmt)
    except Exception as err:  # an unreadable or damaged file: one line on stderr
        error(console_for(args, stderr=True), f"{args.file}: cannot read {fmt.name}: {err}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    console.print(literal(f"{args.file}: {fmt.name}"))
    table = Table()
    table.add_column("fact")
    table.add_column("value")
    span = human_ns(int(doc["duration_s"] * 1e9))
    if fmt.reader == "can":
        table.add_row("frames", f"{doc['frames']:,} ({doc['fd_frames']:,} FD, "
                      f"{doc['remote_frames']:,} remote)")  # fmt: skip
        table.add_row("ids", f"{len(doc['ids']):,} ({doc['extended_ids']:,} extended)")
        channels = ", ".join(f"{k}: {v:,}" for k, v in doc["channels"].items())
        table.add_row("channels", literal(channels or "-"))
    else:
        table.add_row("records", f"{doc['records']:,} ({doc['udp_datagrams']:,} UDP datagrams)")
        skipped = ", ".join(f"{k}: {v:,}" for k, v in doc["skipped"].items())
        table.add_row("skipped", literal(skipped or "-"))
    table.add_row("start", str(doc["start_utc"] or "-"))
    table.add_row("end", str(doc["end_utc"] or "-"))
    table.add_row("duration", span)
    console.print(table)
    console.print("frames per CAN id" if fmt.reader == "can" else "datagrams per UDP port")
    rows = Table()
    if fmt.reader == "can":
        rows.add_column("id")
        rows.add_column("frames", justify="right")
        for key, n in doc["ids"].items():
            rows.add_row(key, f"{n:,}")
    else:
        for col in ("port", "kind", "datagrams", "bytes"):
            rows.add_column(col, justify="right" if col in ("datagrams", "bytes") else "left")
        for port, entry in doc["ports"].items():
            rows.add_row(port, entry["kind"], f"{entry['datagrams']:,}", f"{entry['bytes']:,}")
    console.print(rows)
    if "ledger" in doc:
        ledgers = {k: LedgerStatistics.from_dict(v) for k, v in doc["ledger"].items()}
        console.print(ledger_table(ledgers, "input ledger"))
        print_losses(console, ledgers)
    return 0


def unread_format(args: argparse.Namespace, fmt: Format | None) -> int:
    """A file ``info`` does not read: name what it is and what to do, on stderr; exit 2."""
    from hyperframes.cli._common import console_for, error

    console = console_for(args, stderr=True)
    if fmt is None:
        error(
            console,
            f"{args.file}: not a format hyperframes reads (not a .hfr recording, bag, MCAP, "
            "CAN log, pcap/pcapng capture, NMEA/UBX log or ULog); run `hyperframes record` "
            "with a source for it (docs/configuration.md)",
        )
    else:
        error(console, f"{args.file} is {fmt.name}, which info does not read: {fmt.advice}")
    return 2
