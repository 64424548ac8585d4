"""Many cameras, one model: ``StreamMux`` against one worker per camera, in one run.

N = 1, 4, 16 synthetic 640x480 RGB cameras at 30 Hz (``adapters.SyntheticCamera``,
paced in real time) feed the ``tiny_cnn`` model at 224x224 (``ImagePreprocess``,
area resize) on the CPU provider, for ``--seconds`` each:

* mux: one ``BatchWorker`` (``max_batch`` 16) behind a ``StreamMux`` over the
  N cameras, scaling each camera's frames in its feeder (``resize=``, as
  nvstreammux does): a batch holds frames of several cameras;
* per camera (baseline): N ``BatchWorker`` s, one per camera, each with its
  own session, running side by side (what one writes without a muxer).

Reported per variant: results/s (offered: N x 30), p50/p99 latency from the
frame leaving its camera to its result, and mean batch size. Rounds
interleave the variants (``--repeat``); each figure is the round with the
best throughput, with the spread.

    .venv/bin/python benchmarks/bench_multistream.py [--seconds 4] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import numpy as np
from rich.console import Console
from rich.table import Table

from adapters import SyntheticCamera
from fusion import Frame
from fusion.workers import BatchWorker, ImagePreprocess, StreamMux
from fusion.workers._models import tiny_cnn

RATE = 30.0
MODEL = tiny_cnn(224)


async def stamped(cam: SyntheticCamera, fed: dict[tuple[str, int], int]) -> AsyncIterator[Frame]:
    async for frame in cam.frames():
        fed[(frame.sensor, frame.seq)] = time.perf_counter_ns()
        yield frame


def cameras(n: int, seconds: float) -> list[SyntheticCamera]:
    return [
        SyntheticCamera(f"cam{i}", RATE, width=640, height=480, duration_s=seconds, seed=i)
        for i in range(n)
    ]


def worker() -> BatchWorker:
    return BatchWorker(
        MODEL, preprocess=ImagePreprocess((224, 224), max_batch=16), max_batch=16, providers="cpu"
    )


async def run_mux(n: int, seconds: float) -> tuple[float, list[int], float]:
    fed: dict[tuple[str, int], int] = {}
    w = worker()
    await w.start()
    # Like nvstreammux, the muxer scales each camera to the batch size in that
    # camera's feeder (worker threads); the preprocess then only normalises.
    mux = StreamMux(w, {c.name: stamped(c, fed) for c in cameras(n, seconds)}, resize=(224, 224))
    latencies: list[int] = []
    t0 = time.perf_counter()
    async for _, result in mux.results():
        latencies.append(time.perf_counter_ns() - fed[(result.item.sensor, result.item.seq)])
    elapsed = time.perf_counter() - t0
    st = w.statistics()
    return len(latencies) / elapsed, latencies, st.items / max(1, st.batches)


async def run_separate(n: int, seconds: float) -> tuple[float, list[int], float]:
    fed: dict[tuple[str, int], int] = {}
    latencies: list[int] = []
    workers = [worker() for _ in range(n)]
    for w in workers:
        await w.start()

    async def one(w: BatchWorker, cam: SyntheticCamera) -> None:
        async for result in w.stream(stamped(cam, fed)):
            latencies.append(time.perf_counter_ns() - fed[(result.item.sensor, result.item.seq)])

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for w, cam in zip(workers, cameras(n, seconds), strict=True):
            tg.start_soon(one, w, cam)
    elapsed = time.perf_counter() - t0
    items = sum(w.statistics().items for w in workers)
    batches = sum(w.statistics().batches for w in workers)
    return len(latencies) / elapsed, latencies, items / max(1, batches)


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench``: 4 cameras for 2 s, the muxer against one worker per camera."""
    fps_mux, lat_mux, batch = anyio.run(run_mux, 4, 2.0)
    fps_sep, _, _ = anyio.run(run_separate, 4, 2.0)
    return [
        {
            "measure": "StreamMux, 4 cameras 640x480 at 30 Hz -> tiny_cnn",
            "value": f"{fps_mux:.0f} results/s, p99 {np.percentile(lat_mux, 99) / 1e6:.0f} ms",
            "ratio": f"{fps_mux / fps_sep:.2f}x one worker per camera (mean batch {batch:.1f})",
            "target": "reported",
            "met": None,
        }
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cameras", default="1,4,16")
    args = parser.parse_args()
    counts = [int(c) for c in args.cameras.split(",")]
    runs: dict[tuple[str, int], list[tuple[float, list[int], float]]] = {}
    for _ in range(args.repeat):
        for n in counts:
            for name, fn in (("mux", run_mux), ("per camera", run_separate)):
                runs.setdefault((name, n), []).append(anyio.run(fn, n, args.seconds))
    table = Table(
        title=f"bench_multistream: 640x480 cameras at {RATE:.0f} Hz -> tiny_cnn 224x224 (CPU), "
        f"{args.seconds:.0f} s, best of {args.repeat}"
    )
    for col in ("cameras", "variant", "offered/s", "results/s", "spread", "p50 ms", "p99 ms",
                "mean batch", "mux vs it"):  # fmt: skip
        table.add_column(col, justify="right")
    for n in counts:
        best_mux = max(r[0] for r in runs[("mux", n)])
        for name in ("mux", "per camera"):
            rounds = runs[(name, n)]
            fps, lat, batch = max(rounds, key=lambda r: r[0])
            table.add_row(
                str(n),
                name,
                f"{n * RATE:.0f}",
                f"{fps:.1f}",
                f"{min(r[0] for r in rounds):.0f}-{fps:.0f}",
                f"{np.percentile(lat, 50) / 1e6:.1f}",
                f"{np.percentile(lat, 99) / 1e6:.1f}",
                f"{batch:.1f}",
                f"{best_mux / fps:.2f}x",
            )
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
