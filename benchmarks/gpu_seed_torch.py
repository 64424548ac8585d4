"""The seed article's workload on a GPU, with PyTorch as the model runtime.

1080p30 H.264 decoded on the CPU (OpenCV's FFmpeg), resized to 224x224, into a
ResNet-50 (torchvision, random weights: throughput only) on the GPU in fp16,
channels-last. Measured in one run: decode alone, the model alone at batch
1..64, a per-frame loop (decode -> resize -> model(1) -> wait), and a batched
pipeline (a decode thread feeding batches of the best size), each as frames/s
and real-time factor (frames/s / 30). This is the proxy for ``gpu.sh`` on a
machine whose image has PyTorch but no onnxruntime-gpu, PyAV or NVDEC-enabled
FFmpeg (BENCHMARKS.md, GPU, says why those could not be measured).

    python benchmarks/gpu_seed_torch.py CLIP.mp4 [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import queue
import threading
import time

import cv2  # type: ignore[import-not-found]
import numpy as np
import torch  # type: ignore[import-not-found]
import torchvision  # type: ignore[import-not-found]

FPS = 30.0


def frames(path: str, limit: int) -> list[np.ndarray]:
    cap = cv2.VideoCapture(path)
    out = []
    while len(out) < limit:
        ok, frame = cap.read()
        if not ok:
            cap.release()
            cap = cv2.VideoCapture(path)  # loop the clip
            continue
        out.append(frame)
    cap.release()
    return out


def small(frame: np.ndarray) -> np.ndarray:
    return cv2.resize(frame, (224, 224), interpolation=cv2.INTER_AREA)


def to_gpu(batch: list[np.ndarray]) -> torch.Tensor:
    x = torch.from_numpy(np.stack(batch)).pin_memory().cuda(non_blocking=True)
    x = x.permute(0, 3, 1, 2).half().div_(255.0)
    return x.contiguous(memory_format=torch.channels_last)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clip")
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    n = int(args.seconds * FPS)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cv2 {cv2.__version__}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")  # fmt: skip

    t0, c0 = time.perf_counter(), time.process_time()
    decoded = frames(args.clip, n)
    dec_wall, dec_cpu = time.perf_counter() - t0, time.process_time() - c0
    h, w = decoded[0].shape[:2]
    print(f"| decode {w}x{h} alone (CPU) | {n / dec_wall:.0f} f/s | RTF {n / dec_wall / FPS:.1f} "
          f"| CPU {dec_cpu / n * 1e3:.2f} ms/frame |")  # fmt: skip
    resized = [small(f) for f in decoded]

    model = torchvision.models.resnet50(weights=None).cuda().eval().half()
    model = model.to(memory_format=torch.channels_last)
    best = (0.0, 1)
    with torch.inference_mode():
        for _ in range(3):
            model(to_gpu(resized[:8]))
        torch.cuda.synchronize()
        for b in (1, 2, 4, 8, 16, 32, 64):
            batches = [resized[i : i + b] for i in range(0, min(n, 8 * b * 8), b)]
            batches = [x for x in batches if len(x) == b]
            start = time.perf_counter()
            for batch in batches:
                model(to_gpu(batch))
            torch.cuda.synchronize()
            rate = len(batches) * b / (time.perf_counter() - start)
            best = max(best, (rate, b))
            print(f"| model alone, batch {b} | {rate:.0f} f/s | RTF {rate / FPS:.1f} |")

        cap = cv2.VideoCapture(args.clip)
        start, count = time.perf_counter(), 0
        while count < n:
            ok, frame = cap.read()
            if not ok:
                cap = cv2.VideoCapture(args.clip)
                continue
            model(to_gpu([small(frame)]))
            torch.cuda.synchronize()
            count += 1
        loop = count / (time.perf_counter() - start)
        print(f"| per-frame loop (decode, resize, model(1), wait) | {loop:.0f} f/s "
              f"| RTF {loop / FPS:.1f} |")  # fmt: skip

        b = best[1]
        q: queue.Queue[list[np.ndarray] | None] = queue.Queue(maxsize=4)

        def produce() -> None:
            cap = cv2.VideoCapture(args.clip)
            made, batch = 0, []
            while made < n:
                ok, frame = cap.read()
                if not ok:
                    cap = cv2.VideoCapture(args.clip)
                    continue
                batch.append(small(frame))
                made += 1
                if len(batch) == b:
                    q.put(batch)
                    batch = []
            q.put(batch or None)
            q.put(None)

        start, count = time.perf_counter(), 0
        threading.Thread(target=produce, daemon=True).start()
        while (batch := q.get()) is not None:
            model(to_gpu(batch))
            count += len(batch)
        torch.cuda.synchronize()
        piped = count / (time.perf_counter() - start)
        print(f"| batched pipeline (decode thread, batch {b}) | {piped:.0f} f/s "
              f"| RTF {piped / FPS:.1f} | {piped / loop:.2f}x the loop |")  # fmt: skip


if __name__ == "__main__":
    main()
