"""Reading an MCAP file of a profile other than ``ros2``: our McapFile against the ``mcap`` reader.

Both read every message of the file from a closed file, in log-time order,
holding each message's bytes:

* **mcap** (the peer): ``make_reader(f).iter_messages(log_time_order=True)``, the
  ``mcap`` Python package's indexed reader (chunk index, heap over chunks);
* **McapFile**: ``McapFile(path).messages()`` (:mod:`adapters.bags._mcapfile`),
  opened through the summary (indexed) or, for the second file, by scanning
  (the same messages written without a summary section's index and statistics).

The file is a ``foxglove``-profile export of a synthetic session (camera, LiDAR,
IMU, GNSS, a wheel series, sync groups), written in the run. Each round times
both back to back (order alternating), so a ratio's two sides see the same load;
reported: best wall time of each, best process CPU time of each, and the ratio.

    .venv/bin/python benchmarks/bench_mcap_any.py [--seconds 20] [--rounds 7]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def make_export(tmp: Path, seconds: float) -> Path:
    from adapters.synthetic import synthetic_session, synthetic_timeline
    from recordings import Recorder
    from recordings.outputs._export import export_recording

    hfr = tmp / "s.hfr"
    sensors = synthetic_session(seconds, seed=3, realtime=False)
    frames = sorted(synthetic_timeline(sensors), key=lambda f: f.t_arrival or 0)
    with Recorder(hfr, sensors=[s.spec for s in sensors]) as rec:
        for frame in frames:
            rec.write(frame)
    out = tmp / "fox.mcap"
    export_recording(hfr, out, to="foxglove")
    return out


def rewrite_unindexed(src: Path, dst: Path) -> None:
    """The same messages, with no statistics and no chunk index (McapFile must scan)."""
    from mcap.reader import make_reader
    from mcap.writer import IndexType, Writer

    with src.open("rb") as f, dst.open("wb") as g:
        reader = make_reader(f)
        w = Writer(g, index_types=IndexType.NONE, use_statistics=False)
        w.start(profile=reader.get_header().profile, library="bench")
        schemas: dict[int, int] = {}
        channels: dict[int, int] = {}
        for schema, channel, m in reader.iter_messages(log_time_order=False):
            if schema is not None and schema.id not in schemas:
                schemas[schema.id] = w.register_schema(schema.name, schema.encoding, schema.data)
            if channel.id not in channels:
                sid = schemas.get(channel.schema_id, 0)
                channels[channel.id] = w.register_channel(
                    channel.topic, channel.message_encoding, sid, dict(channel.metadata)
                )
            w.add_message(channels[channel.id], m.log_time, m.data, m.publish_time, m.sequence)
        w.finish()  # type: ignore[no-untyped-call]


def peer(path: Path) -> int:
    from mcap.reader import make_reader

    with path.open("rb") as f:
        return sum(len(m.data) for _s, _c, m in make_reader(f).iter_messages(log_time_order=True))


def ours(path: Path) -> int:
    from adapters.bags._mcapfile import McapFile

    with McapFile(path) as mcap:
        return sum(len(m.data) for m in mcap.messages())


def timed(fn: Callable[[Path], int], path: Path) -> tuple[float, float, int]:
    w0, c0 = time.perf_counter(), time.process_time()
    n = fn(path)
    return time.perf_counter() - w0, time.process_time() - c0, n


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: an indexed Foxglove export read by McapFile vs the mcap reader."""
    with tempfile.TemporaryDirectory() as d:
        path = make_export(Path(d), 5.0)
        best = {"mcap": float("inf"), "McapFile": float("inf")}
        for _ in range(3):
            for label, fn in (("mcap", peer), ("McapFile", ours)):
                best[label] = min(best[label], timed(fn, path)[1])
    return [
        {
            "measure": "MCAP of the foxglove profile, indexed, read (CPU)",
            "value": f"{best['McapFile'] * 1e3:.1f} ms",
            "ratio": f"{best['mcap'] / best['McapFile']:.2f}x the mcap reader",
            "target": "at least as fast as the mcap reader",
            "met": best["McapFile"] <= best["mcap"],
        }
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        indexed = make_export(tmp, args.seconds)
        scanned = tmp / "unindexed.mcap"
        rewrite_unindexed(indexed, scanned)
        size = indexed.stat().st_size / 1e6
        print(f"foxglove export of {args.seconds:g} s: {size:.1f} MB, {args.rounds} rounds")
        for name, path in (("indexed", indexed), ("scanned", scanned)):
            rows: dict[str, list[tuple[float, float, int]]] = {"mcap": [], "McapFile": []}
            for r in range(args.rounds):
                order = [("mcap", peer), ("McapFile", ours)]
                for label, fn in order if r % 2 == 0 else order[::-1]:
                    rows[label].append(timed(fn, path))
            sizes = {label: {n for _, _, n in v} for label, v in rows.items()}
            assert sizes["mcap"] == sizes["McapFile"], sizes
            wall = {k: min(w for w, _, _ in v) for k, v in rows.items()}
            cpu = {k: min(c for _, c, _ in v) for k, v in rows.items()}
            ratios = [b[0] / a[0] for a, b in zip(rows["mcap"], rows["McapFile"], strict=True)]
            mb = next(iter(sizes["mcap"])) / 1e6
            print(
                f"  {name:8s} mcap {wall['mcap'] * 1e3:7.1f} ms ({cpu['mcap'] * 1e3:7.1f} ms CPU)"
                f" | McapFile {wall['McapFile'] * 1e3:7.1f} ms ({cpu['McapFile'] * 1e3:7.1f} ms CPU)"
                f" | McapFile/mcap wall {wall['McapFile'] / wall['mcap']:.2f}, CPU "
                f"{cpu['McapFile'] / cpu['mcap']:.2f}, median per round {np.median(ratios):.2f}"
                f" ({mb:.1f} MB of messages)"
            )


if __name__ == "__main__":
    main()
