"""``hyperframes demo``: the whole path on an embedded synthetic session.

Three synthetic sensors (camera 30 Hz, LiDAR 10 Hz, IMU 200 Hz) with their own
clock offsets, skews and jittery links run on a virtual clock, so ten seconds
of sensor time take well under a second. Their frames go through a
:class:`~fusion.SyncHub` (``Nearest`` on the LiDAR), every group's camera image
through a :class:`~fusion.BatchWorker` (an edge-detector ONNX model built in
code), and everything into a ``.hfr`` recording, which is then reopened and
summarised. No arguments, no network, no files left behind (unless ``--keep``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from rich.console import Console
from rich.table import Table

MS = 1_000_000


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo",
        help="run sensors -> sync hub -> model -> recording on built-in synthetic data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="sensor time to simulate (default: 10)"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="FILE.hfr",
        help="keep the recording at this path instead of a temporary file",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the final line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console(quiet=args.quiet)
    with tempfile.TemporaryDirectory(prefix="hyperframes-demo-") as tmp:
        path = args.keep or Path(tmp) / "demo.hfr"
        started = time.perf_counter()
        result = anyio.run(_demo, args.seconds, path)
        wall = time.perf_counter() - started
        _report(console, result, path, wall)
    groups = result["groups"]
    print(f"demo ok: {groups} groups from {result['frames_in']} frames in {wall:.2f} s wall time")
    return 0 if groups > 0 else 1


async def _demo(seconds: float, path: Path) -> dict[str, Any]:
    from adapters.synthetic import synthetic_session
    from fusion import BatchWorker, FrameGroup, Nearest, SyncHub, VirtualClock, use_clock
    from fusion.workers.models import sobel_edges
    from recordings import Recorder, open_recording

    def preprocess(groups: list[FrameGroup]) -> np.ndarray:
        images = np.stack([g.frames["cam"].data for g in groups])  # type: ignore[union-attr]
        return images.transpose(0, 3, 1, 2).astype(np.float32) / 255.0

    def postprocess(groups: list[FrameGroup], outputs: list[np.ndarray]) -> list[float]:
        return [float((edges > 0.5).mean()) for edges in outputs[0]]

    clock = VirtualClock()
    sources = synthetic_session(seconds, seed=7)
    hub = SyncHub(
        Nearest(
            "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
        ),
        max_latency=200 * MS,
    )
    worker = BatchWorker(
        sobel_edges(), preprocess=preprocess, postprocess=postprocess, max_batch=8, max_delay=0
    )
    edge_share: list[float] = []
    failed = 0
    with use_clock(clock):
        async with (
            clock.autojump(),
            worker,
            Recorder(
                path,
                sensors=[spec for s in sources for spec in s.specs],
                metadata={"made_by": "hyperframes demo"},
            ) as recorder,
            hub.open(sources) as groups,
        ):
            async for result in worker.stream(groups):
                if result.error is not None:
                    failed += 1
                    continue
                edge_share.append(result.value)
                for frame in result.item.members():
                    await recorder.send(frame)
    with open_recording(path) as log:
        summary = log.summary()
    return {
        "groups": len(edge_share),
        "failed": failed,
        "frames_in": hub.statistics().frames_in,
        "hub": hub.statistics(),
        "worker": worker.statistics(),
        "summary": summary,
        "virtual_seconds": clock.now() / 1e9,
        "edge_share": float(np.mean(edge_share)) if edge_share else 0.0,
    }


def _report(console: Console, result: dict[str, Any], path: Path, wall: float) -> None:
    hub = result["hub"]
    table = Table(title="Sensors into the sync hub")
    for col in ("sensor", "frames in", "dropped", "lag (ms)"):
        table.add_column(col, justify="right" if col != "sensor" else "left")
    for name, s in hub.sensors.items():
        dropped = ", ".join(f"{r} {n}" for r, n in sorted(s.dropped.items())) or "0"
        lag = "" if s.lag_ns is None else f"{s.lag_ns / MS:.1f}"
        table.add_row(name, str(s.frames_in), dropped, lag)
    console.print(table)
    lat = hub.latency
    console.print(
        f"groups: {hub.groups_complete} complete, {hub.groups_partial} partial, "
        f"{hub.groups_dropped} dropped; hub latency p99 "
        f"{(lat.p99 / 1e3 if lat else 0):.0f} us (virtual clock)"
    )
    w = result["worker"]
    console.print(
        f"model: {w.items} groups in {w.batches} batches on {', '.join(w.providers)}, "
        f"{result['failed']} failed; mean edge share {result['edge_share']:.3f}"
    )
    summary = result["summary"]
    console.print(
        f"recording {path.name}: {summary.count} frames in {summary.chunks} chunks, "
        f"{summary.file_size / 1e6:.2f} MB, compression x{summary.compression_ratio:.1f}, "
        f"{summary.duration_ns / 1e9:.1f} s of sensor time"
    )
    console.print(
        f"{result['virtual_seconds']:.1f} s of virtual time ran in {wall:.2f} s of wall time"
    )
