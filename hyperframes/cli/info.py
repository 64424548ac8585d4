"""``hyperframes info FILE [--json]``: what a recording holds, like ``mcap info``.

An MCAP file or a ROS bag (``.bag``, ``.db3``, a bag directory) is summarised
as ``ros2 bag info`` does: topics, types, counts, duration and dates. An NMEA
0183 log (a GNSS receiver's sentences) is read once: fixes, dates, the ledger
(:mod:`hyperframes.cli.nmeainfo`).

File facts (parts, size, duration, start/end as date and epoch, compression)
come from the chunk metas without decompressing; per-sensor rate, payload,
drops (gaps in ``seq``) and the clock fit (offset and skew of ``t`` against
``t_sensor``, transport delay from ``t_arrival``) come from one pass over the
frames' timestamps, skipped with ``--quick``.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.table import Table
from rich.text import Text

from hyperframes.cli.common import literal
from hyperframes.cli.units import human_bytes, human_ns, iso_utc, stamp

if TYPE_CHECKING:
    from adapters.bags.summary import BagSummary


def register(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        help="summarise a .hfr recording (sensors, rates, drops, clock fit, dates) or a ROS bag",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "file",
        help="a .hfr file (or the base name of a split recording), an MCAP file, a bag or an "
        "NMEA log",
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
    from hyperframes.cli.common import console_for, error, warn
    from hyperframes.cli.losses import ledger_table, print_losses
    from recordings import open_recording
    from recordings.errors import RecordingError
    from recordings.open import is_bag

    console = console_for(args)
    hfr = _starts_like_a_recording(args.file)  # then no bag or NMEA reader is imported
    if not hfr and (is_bag(args.file) or str(args.file).lower().endswith(".mcap")):
        return bag_info(args, console)
    if not hfr and _nmea(args.file):
        from hyperframes.cli.nmeainfo import nmea_info

        return nmea_info(args, console)
    parts = recording_parts(Path(args.file))
    if not parts:
        error(console, f"{args.file}: no such recording")
        return 2
    documents = []
    try:
        for part in parts:
            with open_recording(part, use_index=not args.scan) as log:
                summary = log.summary()
                if args.quick:
                    deep = None
                else:
                    from hyperframes.cli.progress import progress_bar

                    with progress_bar(console, f"info {part.name}", summary.count) as advance:
                        deep = sensor_details(log, advance)
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
                if summary.ledgers:
                    console.print(ledger_table(summary.ledgers, "input ledger (while recording)"))
                    print_losses(console, summary.ledgers)
                for line in summary.damage:
                    warn(console, "damage:", line)
    except (OSError, RecordingError) as err:
        error(console, err)
        return 2
    if args.json:
        print(json.dumps(documents[0] if len(documents) == 1 else {"parts": documents}, indent=2))
    return 0


def _nmea(path: str) -> bool:
    from adapters.nmea.source import looks_like_nmea

    return looks_like_nmea(path)


def _starts_like_a_recording(path: str) -> bool:
    """``path`` is a file that begins with the ``.hfr`` magic bytes."""
    from recordings.format import MAGIC

    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


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
    from adapters.bags.summary import read_bag_summary
    from hyperframes.cli.common import error, warn

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
    if info.compression:
        head.add_row("compression", info.compression)
    if info.types:
        head.add_row("types", literal(info.types))
    head.add_row("duration", human_ns(info.duration_ns))
    head.add_row("start", bag_stamp(info.start_ns, dated=info.dated))
    head.add_row("end", bag_stamp(info.end_ns, dated=info.dated))
    head.add_row("messages", str(info.messages))
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


def sensor_details(
    log: Any, advance: Callable[[int], None] | None = None
) -> dict[str, dict[str, Any]]:
    """Per sensor: seq gaps, payload description and the clock fit, from one pass
    (``advance(n)`` is told every ``n`` frames read, for a progress bar)."""
    seqs: dict[str, list[int]] = {}
    times: dict[str, list[tuple[int, int, int, bool]]] = {}
    starts: dict[str, list[int]] = {}
    connections: dict[str, list[tuple[Any, int]]] = {}
    gaps: dict[str, list[int]] = {}
    payload: dict[str, PayloadSizes] = {}
    for i, frame in enumerate(log.frames(), 1):
        if advance is not None and i % PROGRESS_EVERY == 0:
            advance(PROGRESS_EVERY)
        seqs.setdefault(frame.sensor, []).append(frame.seq)
        arrival = frame.t_arrival if frame.t_arrival is not None else frame.t
        rows = times.setdefault(frame.sensor, [])
        meta = frame.meta or {}
        if rows and (meta.get("segment_start") or frame.t_sensor < rows[-1][0] - SEGMENT_JUMP_NS):
            starts.setdefault(frame.sensor, []).append(len(rows))
        gap = meta.get("gap_ns")
        if isinstance(gap, int):
            gaps.setdefault(frame.sensor, []).append(gap)
        measured = frame.t_arrival is not None and "t_read" not in meta
        connection = meta.get("connection")
        runs = connections.setdefault(frame.sensor, [])
        if runs and connection != runs[-1][0]:
            runs.append((connection, len(rows)))
        elif not runs:
            runs.append((connection, 0))
        rows.append((frame.t_sensor, frame.t, arrival, measured))
        sizes = payload.get(frame.sensor)
        if sizes is None:
            sizes = payload[frame.sensor] = PayloadSizes()
        sizes.add(frame.data)
    out: dict[str, dict[str, Any]] = {}
    for name, rows in times.items():
        ends = {i for _, i in connections.get(name, [])} | set(starts.get(name, [])) | {len(rows)}
        for end in ends:  # see TAIL_FRAMES
            for i in range(max(0, end - TAIL_FRAMES), end):
                rows[i] = (*rows[i][:3], False)
    for name, seq in seqs.items():
        # Numbers never seen, from 0: packet records of a B-frame video track come in
        # decode order, and a reference-only packet shares the next frame's number.
        s = np.unique(np.asarray(seq, np.int64))
        lost = int(s[-1]) + 1 - len(s) if len(s) else 0
        out[name] = {
            "dropped": lost,
            "payload": payload[name].describe(),
            "segments": 1 + len(starts.get(name, ())),
            "gaps_ns": gaps.get(name, []),
            **segmented_clock_fit(times[name], starts.get(name, [])),
        }
    return out


PROGRESS_EVERY = 256
"""Frames between two progress updates (a bar per frame would cost more than a frame)."""

TAIL_FRAMES = 2
"""Frames at the end of a connection or segment left out of the skew fit: a demuxer
that holds each frame until the next one's data comes (MPEG-TS) hands the last ones
over at once when the stream ends, a frame period earlier than all the others."""

SEGMENT_JUMP_NS = 1_000_000_000
"""``t_sensor`` going back by more than this starts a new segment (a restarted sender)."""


def segmented_clock_fit(
    rows: list[tuple[int, int, int, bool]], starts: list[int]
) -> dict[str, Any]:
    """:func:`clock_fit` of the longest segment (one line across a restart means nothing);
    the offset is taken at the recording's first frame."""
    bounds = [0, *starts, len(rows)]
    pieces = [rows[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    longest = max(pieces, key=len)
    fit = clock_fit(longest)
    fit["offset_ns"] = int(rows[0][1] - rows[0][0])
    if len(pieces) > 1:
        fit["skew_segment"] = pieces.index(longest)
    return fit


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


def clock_fit(rows: list[tuple[int, int, int, bool]]) -> dict[str, Any]:
    """Offset of ``t`` vs ``t_sensor`` (at the first frame), the sensor clock's skew and the
    delay ``t_arrival - t``.

    With measured arrival times the skew is the TICSync fit of the delays'
    lower envelope over the whole segment (:mod:`fusion.clock_envelope`, the
    estimator the online clock runs over a sliding window): how fast the
    sensor's clock runs against the host's. Frames whose arrival was
    re-paced after an opening burst (``meta["t_read"]``) are left out.
    Without arrivals it is a robust slope of ``t - t_sensor``. Either way the
    sign is the clock models': positive when the sensor's clock runs fast.
    """
    a = np.asarray([r[:3] for r in rows], np.float64)
    ts, t, arrival = a[:, 0] - a[0, 0], a[:, 1] - a[0, 0], a[:, 2]
    fit: dict[str, Any] = {"offset_ns": int(rows[0][1] - rows[0][0])}
    envelope = envelope_skew([(r[0], r[2]) for r in rows if r[3]])
    if envelope is not None:
        fit["skew_ppm"] = envelope
    elif len(rows) > 2 and np.ptp(ts) > 0:
        slope = robust_slope(ts, t - ts)
        fit["skew_ppm"] = float((1 / (1 + slope) - 1) * 1e6)
    delay = arrival - a[:, 1]
    if np.any(delay != 0):
        fit["delay_ms_p50"] = float(np.percentile(delay, 50) / 1e6)
        fit["delay_ms_p99"] = float(np.percentile(delay, 99) / 1e6)
    return fit


def envelope_skew(pairs: list[tuple[int, int]]) -> float | None:
    """Skew (ppm) of the sensor clock from ``(t_sensor, t_arrival)`` pairs; ``None`` if too few."""
    from fusion.clock_envelope import LowerEnvelope

    points: list[tuple[int, int]] = []
    for x, arrival in pairs:
        if not points or x > points[-1][0]:
            points.append((x, arrival - x))
    points = without_early_glitches(points)
    if len(points) < 3:
        return None
    env = LowerEnvelope(points[-1][0] - points[0][0] + 1, len(points) + 1)
    for x, y in points:
        env.add(x, y)
    slope = env.fit(-0.5, 0.5).slope
    return float((1 / (1 + slope) - 1) * 1e6)


EARLY_GLITCH_NS = 20_000_000
"""A delay this much below its neighbours' median is a glitch, not the link's floor."""


def without_early_glitches(points: list[tuple[int, int]], half: int = 4) -> list[tuple[int, int]]:
    """Drop points whose delay is far *below* their neighbours' (the lower envelope would
    follow them): a demuxer that holds each frame until the next one's data arrives
    (MPEG-TS) hands the last frame of a connection over at once, ``one frame period``
    earlier than all the others."""
    y = np.asarray([p[1] for p in points], np.float64)
    keep = []
    for i, point in enumerate(points):
        neighbours = np.concatenate([y[max(0, i - half) : i], y[i + 1 : i + 1 + half]])
        if len(neighbours) and y[i] < np.median(neighbours) - EARLY_GLITCH_NS:
            continue
        keep.append(point)
    return keep


def robust_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Median of the slopes between each point and the one half the data later.

    A Theil-Sen style estimate in O(n log n): a few frames aligned before the
    clock settled (the first of a segment) do not tilt it, as they tilt a
    least-squares line.
    """
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    half = len(x) // 2
    dx = x[half:] - x[: len(x) - half]
    dy = y[half:] - y[: len(x) - half]
    keep = dx > 0
    if not np.any(keep):
        return 0.0
    return float(np.median(dy[keep] / dx[keep]))


class PayloadSizes:
    """The typical payload of a sensor over a whole recording, not its first frame
    (a partial first sweep holds a few hundred points where sweeps hold thousands)."""

    def __init__(self) -> None:
        self.first: Any = None
        self.counts: list[int] = []  # points of structured arrays, bytes of blobs
        self.shapes: Counter[tuple[int, ...]] = Counter()

    def add(self, data: Any) -> None:
        if self.first is None:
            self.first = data
        shape = getattr(data, "shape", None)
        if shape is not None and getattr(data.dtype, "names", None):
            self.counts.append(len(data))
        elif shape is not None:
            self.shapes[tuple(shape)] += 1
        elif isinstance(data, (bytes, bytearray, memoryview)):
            self.counts.append(len(data))

    def describe(self) -> str:
        """``6 fields x 13,902 (median; 443-14,024)``, ``uint8 (480, 640, 3)``, ..."""
        data = self.first
        if self.counts:
            n = np.asarray(self.counts)
            median = int(np.median(n))
            spread = "" if n.min() == n.max() else f" (median; {n.min():,}-{n.max():,})"
            if getattr(data, "shape", None) is not None:
                return f"{len(data.dtype.names)} fields x {median:,}{spread}"
            return f"{median:,} bytes{spread}"
        if self.shapes:
            (shape, _), *others = self.shapes.most_common()
            varies = f" (and {len(others)} other sizes)" if others else ""
            return f"{data.dtype} {shape}{varies}"
        return describe_payload(data)


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


def describe(summary: Any, deep: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """The JSON document of ``info --json``."""
    from hyperframes.cli.losses import ledger_doc

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
    table.add_row("frames", str(s.count))
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
