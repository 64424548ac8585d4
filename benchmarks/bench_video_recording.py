"""Recording a camera as encoded video vs as raw arrays (zstd), measured in the same run.

Workload: ``--frames`` frames of a synthetic camera (``SyntheticCamera``: a
gradient with a moving square plus Gaussian sensor noise of sigma
``--noise``, the noise being what makes raw pixels incompressible) at
``--size``, recorded with

* ``Recorder`` (zstd level 3 over the raw arrays): the baseline;
* ``VideoRecorder`` with ``ffv1`` (lossless), ``h264`` and ``hevc`` (defaults:
  ``tune=zerolatency``, ``preset=veryfast``, CRF 23 / 28).

Per variant: file size, the ratio of raw pixel bytes to the file size, the
size relative to the zstd baseline, record throughput (frames/s: ``write`` of
every frame through ``close``) and replay throughput (frames/s decoded back to
arrays by ``VideoReader``, or read by ``Recording.frames`` for the baseline),
and the quality (PSNR of the decoded frames against the originals; ``inf``
for exact).

Target (issue #6 "video in recordings"): H.264 files at least 10x smaller than
zstd, and H.264 recording faster than 30 frames/s at 640x480 on 2 cores, so a
live 30 Hz VGA camera can be recorded encoded.

    .venv/bin/python benchmarks/bench_video_recording.py
    .venv/bin/python benchmarks/bench_video_recording.py --size 1280x720 --frames 150
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.synthetic import SyntheticCamera, synthetic_timeline
from fusion._frames import Frame
from recordings import Recorder, open_recording
from recordings.hfr.video._playback import VideoReader
from recordings.hfr.video._recording import VideoRecorder

VARIANTS = ("zstd", "ffv1", "h264", "hevc")


def frames_of(size: tuple[int, int], count: int, noise: float) -> list[Frame]:
    width, height = size
    cam = SyntheticCamera(width=width, height=height, noise=noise, duration_s=count / 30.0)
    return synthetic_timeline([cam])[:count]


def measure(variant: str, frames: list[Frame], folder: Path) -> dict[str, Any]:
    path = folder / f"{variant}.hfr"
    started = time.perf_counter()
    rec: Any
    rec = Recorder(path) if variant == "zstd" else VideoRecorder(path, video={"cam": variant})
    with rec:
        for frame in frames:
            rec.write(frame)
    record_s = time.perf_counter() - started
    started = time.perf_counter()
    with open_recording(path) as log:
        out = list(log.frames()) if variant == "zstd" else list(VideoReader(log).frames())
    replay_s = time.perf_counter() - started
    mse = float(
        np.mean(
            [
                np.mean((a.data.astype(np.float32) - b.data) ** 2)
                for a, b in zip(out, frames, strict=False)
            ]
        )
    )
    raw = sum(f.data.nbytes for f in frames)
    size = path.stat().st_size
    return {
        "variant": variant,
        "frames": len(out),
        "bytes": size,
        "ratio": raw / size,
        "record_fps": len(frames) / record_s,
        "replay_fps": len(out) / replay_s,
        "psnr": float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse),
    }


def run(size: tuple[int, int], count: int, noise: float) -> list[dict[str, Any]]:
    frames = frames_of(size, count, noise)
    with tempfile.TemporaryDirectory() as tmp:
        return [measure(v, frames, Path(tmp)) for v in VARIANTS]


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["bytes"]
    lines = [
        "| variant | file | raw / file | vs zstd | record fps | replay fps | PSNR dB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['bytes'] / 2**20:.2f} MiB | {r['ratio']:.1f}x | "
            f"{base / r['bytes']:.1f}x smaller | {r['record_fps']:.0f} | {r['replay_fps']:.0f} | "
            f"{r['psnr']:.1f} |"
        )
    return "\n".join(lines)


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench`` rows: a short 640x480 run."""
    rows = {r["variant"]: r for r in run((640, 480), 45, 8.0)}
    h264, zstd = rows["h264"], rows["zstd"]
    smaller = zstd["bytes"] / h264["bytes"]
    return [
        {
            "measure": "camera recorded as H.264 (640x480, noisy)",
            "value": f"{h264['bytes'] / 2**10:,.0f} KiB",
            "ratio": f"{smaller:.1f}x smaller than zstd",
            "target": ">= 10x smaller",
            "met": smaller >= 10,
        },
        {
            "measure": "H.264 recording throughput (640x480)",
            "value": f"{h264['record_fps']:,.0f} frames/s",
            "ratio": f"{h264['record_fps'] / 30:.1f}x a 30 Hz camera",
            "target": ">= 30 frames/s",
            "met": h264["record_fps"] >= 30,
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT (default 640x480)")
    parser.add_argument("--frames", type=int, default=150, help="frames (default 150, 5 s)")
    parser.add_argument("--noise", type=float, default=8.0, help="sensor noise sigma (default 8)")
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.lower().split("x"))
    rows = run((width, height), args.frames, args.noise)
    print(f"{args.frames} frames {width}x{height}, noise sigma {args.noise}")
    print(table(rows))
    h264 = next(r for r in rows if r["variant"] == "h264")
    smaller = rows[0]["bytes"] / h264["bytes"]
    print(
        f"\nH.264 vs zstd: {smaller:.1f}x smaller (target >= 10x: "
        f"{'met' if smaller >= 10 else 'MISSED'}); H.264 records at "
        f"{h264['record_fps']:.0f} frames/s (target >= 30: "
        f"{'met' if h264['record_fps'] >= 30 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
