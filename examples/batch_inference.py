"""Batch inference with BatchWorker: dynamic batching, ordered results, error isolation.

Runs in a couple of seconds on a CPU, no files or network needed:

* builds a small Sobel edge model with the ``onnx`` helper API
  (``fusion.workers._models``; your own model drops in by path);
* streams 64 synthetic camera frames through ``BatchWorker``, which batches
  them, runs preprocessing of one batch while the model runs the previous one,
  and hands results back in input order;
* corrupts one frame so preprocessing fails on it: that frame comes back with
  an error naming its sensor and seq, every other frame succeeds;
* runs a static scene through a ``ChangeGate`` so near-identical frames reuse
  the last result instead of running the model.

    python examples/batch_inference.py
"""

from __future__ import annotations

import anyio
import numpy as np

from fusion import BatchWorker, ChangeGate, Frame
from fusion.workers._models import sobel_edges

MS = 1_000_000


def camera(n: int, *, moving: bool = True) -> list[Frame]:
    """Synthetic 96x128 RGB frames; a bright box slides right when ``moving``."""
    frames = []
    for i in range(n):
        img = np.full((96, 128, 3), 30, np.uint8)
        x = 4 * i % 96 if moving else 20
        img[30:60, x : x + 24] = 220
        frames.append(Frame("cam", i, i * 33 * MS, img))
    return frames


def preprocess(frames: list[Frame]) -> np.ndarray:
    """uint8 (N, H, W, 3) -> float32 (N, 3, H, W) in [0, 1], one vectorised pass."""
    for f in frames:
        if f.data.ndim != 3:
            raise ValueError(f"expected an (H, W, 3) image, got shape {f.data.shape}")
    batch = np.stack([f.data for f in frames])
    return batch.transpose(0, 3, 1, 2).astype(np.float32) / 255.0


def postprocess(frames: list[Frame], outputs: list[np.ndarray]) -> list[float]:
    """One number per frame: the share of pixels on a strong edge."""
    edges = outputs[0]
    return [float((e > 0.5).mean()) for e in edges]


async def main() -> None:
    frames = camera(64)
    frames[10].data = frames[10].data[:, :, 0]  # a broken frame: grayscale, wrong shape

    worker = BatchWorker(
        sobel_edges(),
        preprocess=preprocess,
        postprocess=postprocess,
        providers="auto",  # CUDA when it really works, else CPU (the reason is logged)
        max_batch=8,
        max_delay=2 * MS,
    )
    async with worker:
        failed = []
        async for result in worker.stream(frames):
            if result.error is not None:
                failed.append(result.error)
            elif result.index % 16 == 0:
                print(f"frame {result.item.seq:2d}: {result.value:.3f} of pixels on an edge")
        for err in failed:
            print(f"failed: {err}")

        gate = ChangeGate(threshold=0.02, keyframe_every=30)
        results = [r async for r in worker.stream(camera(60, moving=False), gate=gate)]
        reused = sum(r.reused for r in results)
        print(f"static scene: {reused} of {len(results)} frames reused the last result")

    stats = worker.statistics()
    print(
        f"providers {stats.providers}, batches {stats.batches}, "
        f"batch sizes {stats.batch_sizes}, failed {stats.failed}, "
        f"p50 latency {stats.latency_p50 / 1e6:.1f} ms"
    )
    assert [err.seq for err in failed] == [10]


if __name__ == "__main__":
    anyio.run(main)
