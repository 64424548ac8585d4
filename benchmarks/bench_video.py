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
* a rotated phone clip: the same pattern at 1920x1080 with a -90 degree display
  matrix (written by PyAV), ``VideoSource(pixel_format="rgb24", rotate="auto")``
  against ``ffmpeg -i clip -pix_fmt rgb24 -f null -``, which autorotates the
  same way (a transpose filter before the conversion), both giving 1080x1920
  RGB frames; ``rotate="none"`` for the cost of the turn;
* memory: RSS while ``VideoSource`` decodes ``--memory-minutes`` of 320x240
  video, sampled every 1000 frames (flat = no per-frame growth).

Targets (issue #6): VideoSource rgb24 >= 90 % of the ffmpeg rgb24 figure; its
decode stage within 5 % of bare PyAV AUTO; RSS flat. Issue #16: rotated 1080p
VideoSource rgb24 ``rotate="auto"`` >= 90 % of ffmpeg's autorotated rgb24.

Needs the ffmpeg CLI (``apt-get install -y ffmpeg``) and OpenCV
(``pip install opencv-python-headless``; skipped with a note if missing).

    .venv/bin/python benchmarks/bench_video.py                # 20 s clip
    .venv/bin/python benchmarks/bench_video.py --seconds 8 --memory-minutes 3
    .venv/bin/python benchmarks/bench_video.py --only-rotated --seconds 10
    .venv/bin/python benchmarks/bench_video.py --one-thread --seconds 5 --repeats 3
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


def make_clip(
    ffmpeg: str, path: Path, seconds: float, size: str, preset: str, codec: str = "libx264"
) -> None:
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
            codec,
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


def rotate_clip(source: Path, path: Path, degrees: float) -> None:
    """Remux ``source`` with a display matrix, as a phone writes a turned camera's video."""
    with av.open(str(source)) as inp, av.open(str(path), "w") as out:
        stream = inp.streams.video[0]
        turned = out.add_stream_from_template(stream)
        turned.set_display_rotation(degrees)
        for packet in inp.demux(stream):
            if packet.size:
                packet.stream = turned
                out.mux(packet)


def rotated(ffmpeg: str, tmp: Path, seconds: float, repeats: int, threads: int) -> None:
    """VideoSource rgb24 rotate='auto' against ffmpeg's autorotated rgb24, on 1080p."""
    plain = tmp / "clip1080.mp4"
    clip = tmp / "clip1080_rot.mp4"
    console.print(f"encoding {seconds:g} s of 1920x1080 H.264, display matrix -90 ...")
    make_clip(ffmpeg, plain, seconds, "1920x1080", "veryfast")
    rotate_clip(plain, clip, -90)
    n = frame_count(clip)
    variants: list[tuple[str, Callable[[], int]]] = [
        (f"ffmpeg -threads {threads} -pix_fmt rgb24 -f null (autorotate)",
         ffmpeg_run(ffmpeg, clip, threads, True, n)),
        ("VideoSource rgb24, rotate='auto'", source_run(clip, "rgb24", rotate="auto")),
        ("VideoSource rgb24, rotate='none'", source_run(clip, "rgb24", rotate="none")),
    ]  # fmt: skip
    # Interleaved (A B C A B C ...), best of ``repeats`` each: on a shared machine the
    # load moves between runs, and interleaving gives every variant the same chances.
    best = {name: float("inf") for name, _ in variants}
    counts = dict.fromkeys(best, 0)
    for r in range(repeats):
        console.print(f"round {r + 1}/{repeats} ...")
        for name, fn in variants:
            t0 = time.perf_counter()
            counts[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    rows = [(name, best[name], counts[name]) for name, _ in variants]
    fps = {name: frames / wall for name, wall, frames in rows}
    base = fps[variants[0][0]]
    table = Table(title=f"decode 1920x1080 H.264 turned -90 -> 1080x1920 rgb24, {n} frames")
    for col in ("variant", "wall s", "frames/s", "vs ffmpeg"):
        table.add_column(col, justify="right" if col != "variant" else "left")
    for name, wall, frames in rows:
        table.add_row(name, f"{wall:.2f}", f"{frames / wall:.0f}", f"{fps[name] / base:.2f}")
    console.print(table)
    ratio = fps["VideoSource rgb24, rotate='auto'"] / base
    console.print(
        f"VideoSource rotate='auto' / ffmpeg autorotate rgb24 = {ratio:.3f} (target >= 0.90)"
    )


def source_run(path: Path, pixel_format: str, rotate: str = "auto") -> Callable[[], int]:
    async def consume() -> int:
        n = 0
        async with VideoSource(path, pixel_format=pixel_format, rotate=rotate) as src:  # type: ignore[arg-type]
            async for _ in src.frames():
                n += 1
        return n

    return lambda: anyio.run(consume)


def one_thread(ffmpeg: str, tmp: Path, seconds: float, repeats: int) -> None:
    """1080p H.264 and HEVC, one decoding thread: VideoSource rgb24 against a plain PyAV
    loop (``thread_count = 1``, ``to_ndarray("rgb24")``), rounds interleaved; wall and
    process CPU (all threads) per frame, per-round ratio of frames/s."""

    def plain(path: Path) -> int:
        n = 0
        with av.open(str(path)) as c:
            stream = c.streams.video[0]
            stream.thread_count = 1
            for f in c.decode(stream):
                f.to_ndarray(format="rgb24")
                n += 1
        return n

    async def ours(path: Path) -> int:
        n = 0
        async with VideoSource(path, pixel_format="rgb24", threads=1) as src:
            async for _ in src.frames():
                n += 1
        return n

    for codec in ("libx264", "libx265"):
        clip = tmp / f"{codec}.mp4"
        make_clip(ffmpeg, clip, seconds, "1920x1080", "veryfast", codec)
        runs: dict[str, list[tuple[float, float]]] = {"plain": [], "source": []}
        for _ in range(repeats):
            for name, fn in (
                ("plain", lambda c=clip: plain(c)),
                ("source", lambda c=clip: anyio.run(ours, c)),
            ):
                t0, c0 = time.perf_counter(), time.process_time()
                n = fn()
                runs[name].append((n / (time.perf_counter() - t0), (time.process_time() - c0) / n))
        ratios = sorted(s[0] / p[0] for s, p in zip(runs["source"], runs["plain"], strict=True))
        cpu = {k: min(c for _, c in v) for k, v in runs.items()}
        fps = {k: max(f for f, _ in v) for k, v in runs.items()}
        console.print(
            f"{codec} 1080p one thread: plain PyAV {fps['plain']:.1f} frames/s "
            f"({cpu['plain'] * 1e3:.2f} ms CPU/frame), VideoSource {fps['source']:.1f} "
            f"({cpu['source'] * 1e3:.2f} ms CPU/frame); per-round VideoSource / plain "
            f"median {ratios[len(ratios) // 2]:.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}), "
            f"CPU per frame plain / VideoSource {cpu['plain'] / cpu['source']:.2f}x "
            f"(goal >= 0.95x)"
        )


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
    ap.add_argument("--only-rotated", action="store_true", help="just the rotated 1080p clip")
    ap.add_argument(
        "--one-thread", action="store_true", help="just 1080p H.264 + HEVC, one decoding thread"
    )
    args = ap.parse_args()
    ffmpeg = need_ffmpeg()
    if args.one_thread:
        with tempfile.TemporaryDirectory() as tmp:
            one_thread(ffmpeg, Path(tmp), args.seconds, args.repeats)
        return 0
    if args.only_rotated:
        with tempfile.TemporaryDirectory() as tmp:
            rotated(ffmpeg, Path(tmp), args.seconds, args.repeats, args.threads)
        return 0
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

        rotated(ffmpeg, Path(tmp), min(args.seconds, 10.0), args.repeats, args.threads)

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
