"""Video decode throughput of VideoSource against baselines measured in the same run.

What it measures, on one H.264 clip generated at start (1280x720, 30 fps,
``--seconds`` long, FFmpeg's ``testsrc2`` pattern encoded with libx264):

* ``ffmpeg -threads N -i clip -pix_fmt rgb24 -f null -``: the practical limit for
  decode + colour conversion with no Python (and ``-f null`` decode alone);
* a bare PyAV loop with ``thread_type="AUTO"``: decode only, and decode +
  ``to_ndarray(format="rgb24")``;
* a plain PyAV loop with PyAV's default threading and ``to_ndarray("rgb24")``;
* OpenCV ``VideoCapture.read()`` (the naive baseline, BGR frames);
* ``VideoSource(pixel_format="rgb24")`` and, for its decode stage alone,
  ``VideoSource(pixel_format="yuv420p")`` (zero-copy planes, no conversion);
* memory: RSS while ``VideoSource`` decodes ``--memory-minutes`` of 320x240
  video, sampled every 1000 frames (flat = no per-frame growth).

Targets (issue #6): VideoSource rgb24 >= 90 % of the ffmpeg rgb24 figure; its
decode stage within 5 % of bare PyAV AUTO; RSS flat.

Needs the ffmpeg CLI (``apt-get install -y ffmpeg``) and OpenCV
(``pip install opencv-python-headless``; skipped with a note if missing).

    .venv/bin/python benchmarks/bench_video.py                # 20 s clip
    .venv/bin/python benchmarks/bench_video.py --seconds 8 --memory-minutes 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio
import av
from rich.console import Console
from rich.table import Table

from adapters.video import VideoSource

console = Console()


def need_ffmpeg() -> str:
    path = shutil.which("ffmpeg")
    if path is None:
        console.print(
            "[red]ffmpeg CLI not found.[/] Install it: `apt-get install -y ffmpeg` "
            "(Debian/Ubuntu) or `brew install ffmpeg` (macOS)."
        )
        raise SystemExit(2)
    return path


def make_clip(ffmpeg: str, path: Path, seconds: float, size: str, preset: str) -> None:
    subprocess.run(
        [
            ffmpeg,
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            f"testsrc2=size={size}:rate=30",
            "-t",
            str(seconds),
            "-c:v",
            "libx264",
            "-preset",
            preset,
            "-pix_fmt",
            "yuv420p",
            str(path),
        ],
        check=True,
    )


def frame_count(path: Path) -> int:
    with av.open(str(path)) as c:
        return sum(1 for _ in c.demux(c.streams.video[0]) if _.size)


def best_of(repeats: int, fn: Callable[[], int]) -> tuple[float, int]:
    """Fastest wall time of ``repeats`` runs of fn (which returns the frames it handled)."""
    best = float("inf")
    frames = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        frames = fn()
        best = min(best, time.perf_counter() - t0)
    return best, frames


def ffmpeg_run(ffmpeg: str, path: Path, threads: int, rgb: bool, n: int) -> Callable[[], int]:
    cmd = [ffmpeg, "-v", "error", "-threads", str(threads), "-i", str(path)]
    cmd += ["-pix_fmt", "rgb24"] if rgb else []
    cmd += ["-f", "null", "-"]

    def run() -> int:
        subprocess.run(cmd, check=True)
        return n

    return run


def pyav_run(path: Path, thread_type: str | None, rgb: bool) -> Callable[[], int]:
    def run() -> int:
        n = 0
        with av.open(str(path)) as c:
            s = c.streams.video[0]
            if thread_type is not None:
                s.thread_type = thread_type  # type: ignore[assignment]
            for f in c.decode(s):
                if rgb:
                    f.to_ndarray(format="rgb24")
                n += 1
        return n

    return run


def opencv_run(path: Path) -> Callable[[], int] | None:
    try:
        import cv2
    except ImportError:
        return None

    def run() -> int:
        cap = cv2.VideoCapture(str(path))
        n = 0
        while True:
            ok, _ = cap.read()
            if not ok:
                break
            n += 1
        cap.release()
        return n

    return run


def source_run(path: Path, pixel_format: str) -> Callable[[], int]:
    async def consume() -> int:
        n = 0
        async with VideoSource(path, pixel_format=pixel_format) as src:  # type: ignore[arg-type]
            async for _ in src.frames():
                n += 1
        return n

    return lambda: anyio.run(consume)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_profile(path: Path) -> list[tuple[int, float]]:
    samples: list[tuple[int, float]] = []

    async def consume() -> None:
        async with VideoSource(path, pixel_format="rgb24") as src:
            async for frame in src.frames():
                if frame.seq % 1000 == 0:
                    samples.append((frame.seq, rss_mb()))

    anyio.run(consume)
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="clip length (default 20)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per variant, best kept")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="ffmpeg -threads N")
    ap.add_argument("--memory-minutes", type=float, default=10.0, help="video for the RSS check")
    args = ap.parse_args()
    ffmpeg = need_ffmpeg()
    with tempfile.TemporaryDirectory() as tmp:
        clip = Path(tmp) / "clip720.mp4"
        console.print(f"encoding {args.seconds:g} s of 1280x720 H.264 ...")
        make_clip(ffmpeg, clip, args.seconds, "1280x720", "veryfast")
        n = frame_count(clip)
        rows: list[tuple[str, float, int]] = []
        variants: list[tuple[str, Callable[[], int] | None]] = [
            (
                f"ffmpeg -threads {args.threads} -f null (decode only)",
                ffmpeg_run(ffmpeg, clip, args.threads, False, n),
            ),
            (
                f"ffmpeg -threads {args.threads} -pix_fmt rgb24 -f null",
                ffmpeg_run(ffmpeg, clip, args.threads, True, n),
            ),
            ("PyAV bare loop, thread_type=AUTO, decode only", pyav_run(clip, "AUTO", False)),
            ("PyAV bare loop, thread_type=AUTO, + rgb24", pyav_run(clip, "AUTO", True)),
            ("PyAV plain loop (default threading) + rgb24", pyav_run(clip, None, True)),
            ("OpenCV VideoCapture.read() (BGR)", opencv_run(clip)),
            ("VideoSource yuv420p (decode stage)", source_run(clip, "yuv420p")),
            ("VideoSource rgb24", source_run(clip, "rgb24")),
        ]
        for name, fn in variants:
            if fn is None:
                console.print(f"[yellow]skipped {name}: pip install opencv-python-headless[/]")
                continue
            console.print(f"running {name} ...")
            wall, frames = best_of(args.repeats, fn)
            rows.append((name, wall, frames))
        fps = {name: frames / wall for name, wall, frames in rows}
        ff_rgb = fps[f"ffmpeg -threads {args.threads} -pix_fmt rgb24 -f null"]
        bare = fps["PyAV bare loop, thread_type=AUTO, decode only"]
        table = Table(title=f"decode 1280x720 H.264, {n} frames, {os.cpu_count()} CPUs")
        for col in ("variant", "wall s", "frames/s", "vs ffmpeg rgb24"):
            table.add_column(col, justify="right" if col != "variant" else "left")
        for name, wall, frames in rows:
            table.add_row(name, f"{wall:.2f}", f"{frames / wall:.0f}", f"{fps[name] / ff_rgb:.2f}")
        console.print(table)
        src_rgb = fps["VideoSource rgb24"] / ff_rgb
        src_dec = fps["VideoSource yuv420p (decode stage)"] / bare
        console.print(f"VideoSource rgb24 / ffmpeg rgb24 = {src_rgb:.3f} (target >= 0.90)")
        console.print(f"VideoSource decode stage / bare PyAV AUTO = {src_dec:.3f} (target >= 0.95)")

        small = Path(tmp) / "clip240.mp4"
        seconds = args.memory_minutes * 60
        console.print(f"encoding {args.memory_minutes:g} min of 320x240 for the memory check ...")
        make_clip(ffmpeg, small, seconds, "320x240", "ultrafast")
        samples = memory_profile(small)
        mem = Table(title="RSS while VideoSource decodes (rgb24, 320x240)")
        mem.add_column("frame", justify="right")
        mem.add_column("RSS MiB", justify="right")
        for seq, mb in samples[:: max(1, len(samples) // 10)] + samples[-1:]:
            mem.add_row(str(seq), f"{mb:.1f}")
        console.print(mem)
        if len(samples) > 2:
            growth = samples[-1][1] - samples[1][1]
            console.print(
                f"RSS growth after warm-up (frame {samples[1][0]} -> {samples[-1][0]}): "
                f"{growth:+.1f} MiB"
            )
    console.print("NVDEC: not measured here (no CUDA GPU); run with hwaccel='cuda' on a GPU host.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
