"""Hardware (NVDEC) against software decode through ``VideoSource``, on a 1080p clip.

One run: a 1920x1080 H.264 clip is made here with PyAV, then decoded to RGB
by ``VideoSource(hwaccel="cuda")`` and by ``VideoSource()`` (software, FFmpeg
threads), rounds interleaved, best of ``--repeat``. Reported: frames/s of
each, the ratio, and the hardware report (which device decoded, or why
software did: on a machine without NVDEC this is the fallback's reason).

    .venv/bin/python benchmarks/bench_nvdec.py [--frames 240] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import av
import numpy as np

from adapters import VideoSource

W, H, FPS = 1920, 1080, 30


def make_clip(path: Path, frames: int) -> None:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        yy, xx = np.mgrid[0:H, 0:W]
        for i in range(frames):
            img = np.empty((H, W, 3), np.uint8)
            img[..., 0] = (xx + 4 * i) % 256
            img[..., 1] = (yy + 2 * i) % 256
            img[..., 2] = 128
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


async def decode(path: Path, hwaccel: str | None) -> tuple[float, int, str]:
    source = VideoSource(path, hwaccel=hwaccel)
    n = 0
    t0 = time.perf_counter()
    async with source:
        async for _ in source.frames():
            n += 1
    fps = n / (time.perf_counter() - t0)
    report = source.hwaccel_report
    return fps, n, "software" if report is None else str(report)


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench``: 60 frames, one round each (on a CPU-only machine the
    hardware row is the software fallback, with its reason)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "1080p.mp4"
        make_clip(path, 60)
        cuda, _, report = anyio.run(decode, path, "cuda")
        cpu, _, _ = anyio.run(decode, path, None)
    return [
        {
            "measure": "VideoSource(hwaccel='cuda'), 1080p H.264",
            "value": f"{cuda:.0f} frames/s",
            "ratio": f"{cuda / cpu:.2f}x CPU decode ({report})",
            "target": "reported",
            "met": None,
        }
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    runs: dict[str, list[float]] = {"cuda": [], "cpu": []}
    reports: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "1080p.mp4"
        make_clip(path, args.frames)
        for _ in range(args.repeat):
            for name, hw in (("cuda", "cuda"), ("cpu", None)):
                fps, n, report = anyio.run(decode, path, hw)
                assert n == args.frames, (name, n)
                runs[name].append(fps)
                reports[name] = report
    cuda, cpu = max(runs["cuda"]), max(runs["cpu"])
    print(f"bench_nvdec: {args.frames} frames 1920x1080 H.264 -> RGB, best of {args.repeat}")
    print(f"  VideoSource(hwaccel='cuda'): {cuda:7.1f} frames/s  ({reports['cuda']})")
    print(f"  VideoSource() software:     {cpu:7.1f} frames/s")
    print(f"  hardware / software: {cuda / cpu:.2f}x")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"cuda_fps": cuda, "cpu_fps": cpu, "report": reports["cuda"], "runs": runs})
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
