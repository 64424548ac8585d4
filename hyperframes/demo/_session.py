"""The demo session: a synthetic drive through the whole pipeline, then its replay.

What :func:`run_session` does, in order:

1. **Camera clip.** A street scene with three moving objects is rendered at
   the camera's *true* capture times and encoded to H.264 (MP4, PyAV) with
   per-frame PTS on the camera's *own* clock (offset, skew), in microseconds.
   Frames lost on the simulated link are never written.
2. **Live run** on a :class:`~fusion.VirtualClock` with autojump. The camera
   is the clip read back through :class:`~adapters.video.VideoSource`, wrapped
   in :class:`EncodedCamera`, which keeps the PTS as ``t_sensor`` and delivers
   each frame at its simulated arrival time; LiDAR and IMU come from
   :mod:`adapters.synthetic`. Every sensor has an
   :class:`~fusion.clock.OnlineClock`; the hub groups with ``Nearest`` on the
   LiDAR; two :class:`~fusion.BatchWorker` s run ONNX models built in code
   (Sobel edges on the camera, bird's-eye-view occupancy on the LiDAR); the
   recorder taps the hub.
3. **Ground truth.** Every recorded frame carries ``meta["t_true"]``; the
   recording gives the alignment error ``t - t_true`` of every frame.
4. **Replay check.** The recording is replayed through the same policy and
   models (no clock models: frames are already aligned); the check passes
   when the replay gives the same groups, in the same order, with the same
   members, and the same model results.

Everything is seeded, so two runs print the same numbers (wall times aside).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from adapters.synthetic import Sample, SensorTiming, SyntheticImu, SyntheticLidar, SyntheticSensor
from fusion import Frame, FrameGroup, SensorSpec, Source, current_clock
from fusion.clock import OnlineClock

MS = 1_000_000
S = 1_000_000_000
WIDTH, HEIGHT = 160, 120
"""Camera resolution: small, so the demo stays fast on two cores."""

# Each sensor's clock and link. The offsets are where each device's clock
# happened to be when the session started; ``delay_ns`` is the fastest the
# link ever delivers, a calibration the clock models are given (extra_offset).
TIMINGS: dict[str, SensorTiming] = {
    "cam": SensorTiming(
        offset_ns=1_250 * MS,
        skew_ppm=40.0,
        delay_ns=8 * MS,
        jitter_mean_ns=2 * MS,
        spike_prob=0.02,
        spike_ns=15 * MS,
        drop_prob=0.01,
    ),
    "lidar": SensorTiming(
        offset_ns=12_500 * MS, skew_ppm=-35.0, delay_ns=3 * MS, jitter_mean_ns=MS
    ),
    "imu": SensorTiming(
        offset_ns=350 * MS,
        skew_ppm=80.0,
        delay_ns=MS,
        jitter_mean_ns=300_000,
        spike_prob=0.01,
        spike_ns=5 * MS,
    ),
}
RATES = {"cam": 29.97, "lidar": 10.0, "imu": 200.0}
"""NTSC camera rate: not phase-locked to the LiDAR, so the spread within groups varies."""
TOLERANCE_NS = 20 * MS
IMU_WINDOW = (50 * MS, 49 * MS)
MAX_LATENCY_NS = 200 * MS
EDGE_BATCH, EDGE_DELAY_NS = 2, 100 * MS  # one LiDAR period: pairs of groups
OCC_BATCH = 8

Progress = Callable[[str, float, float, str], None]
"""``progress(phase, done, total, info)``: phases ``encode``, ``live``, ``replay``."""


def _no_progress(phase: str, done: float, total: float, info: str) -> None:
    pass


# -- the camera --------------------------------------------------------------------


def render(t_true_ns: int, width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """The street at true time ``t_true_ns``: sky, road with moving lane marks, three objects."""
    t = t_true_ns / S
    img = np.empty((height, width, 3), np.uint8)
    horizon = height * 2 // 5
    sky = np.linspace(200, 120, horizon, dtype=np.float32)[:, None]
    img[:horizon, :, 0] = (sky * 0.55).astype(np.uint8)
    img[:horizon, :, 1] = (sky * 0.75).astype(np.uint8)
    img[:horizon, :, 2] = sky.astype(np.uint8)
    img[horizon:] = (70, 70, 74)
    # Lane marks slide towards the viewer: the ego vehicle drives forward.
    xs = np.arange(width)
    dash = ((xs + int(t * 80)) // 12) % 2 == 0
    lane = height * 3 // 4
    img[lane : lane + 2, dash] = (235, 235, 235)

    def box(cx: float, cy: float, w: int, h: int, colour: tuple[int, int, int]) -> None:
        x0, y0 = int(cx) - w // 2, int(cy) - h // 2
        x1, y1 = max(0, x0), max(0, y0)
        x2, y2 = min(width, x0 + w), min(height, y0 + h)
        if x1 < x2 and y1 < y2:
            img[y1:y2, x1:x2] = colour

    # A car crossing left to right, a van right to left, a ball bouncing.
    box((t * 45) % (width + 40) - 20, horizon + 22, 30, 14, (200, 30, 30))
    box(width + 30 - (t * 28) % (width + 60), horizon + 36, 40, 20, (40, 70, 210))
    box(width * 0.3 + 40 * math.sin(t * 1.3), horizon - 6 - abs(30 * math.sin(t * 3.1)), 9, 9,
        (250, 210, 40))  # fmt: skip
    return img


def pts_us(t_sensor_ns: int) -> int:
    """The clip's PTS (microsecond time base) for a sensor stamp."""
    return (t_sensor_ns + 500) // 1000


def encode_clip(path: Path, samples: Sequence[Sample]) -> int:
    """Write one H.264 frame per sample, PTS = the camera's own clock. Returns bytes written."""
    time_base = Fraction(1, 1_000_000)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=round(RATES["cam"]))
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.time_base = time_base
        stream.codec_context.time_base = time_base
        stream.codec_context.options = {"g": "30", "bf": "0", "preset": "veryfast"}
        for sample in samples:
            frame = av.VideoFrame.from_ndarray(render(sample.t_true), format="rgb24")
            frame.pts = pts_us(sample.t_sensor)
            frame.time_base = time_base
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path.stat().st_size


class EncodedCamera(Source):
    """A camera whose frames come from an encoded clip, delivered on a simulated link.

    The clip is decoded by :class:`~adapters.video.VideoSource`; ``t_sensor``
    is the decoded PTS (the camera's clock). Each frame is matched by PTS to
    its :class:`~adapters.synthetic.Sample` and released at that sample's
    arrival time on the runtime clock, with ``meta["t_true"]`` as ground truth.
    While waiting for the decoder thread the clock is marked busy, so virtual
    time cannot run ahead of the decoder and the run is deterministic.
    """

    def __init__(
        self,
        path: Path,
        samples: Sequence[Sample],
        *,
        name: str = "cam",
        rate_hz: float = 29.97,
        clock: OnlineClock | None = None,
    ) -> None:
        super().__init__(
            SensorSpec(
                name,
                kind="camera",
                rate_hz=rate_hz,
                clock=clock,
                meta={"codec": "h264", "size": [WIDTH, HEIGHT]},
            )
        )
        self.path = path
        self._by_pts = {pts_us(s.t_sensor): s for s in samples}
        self.decoded = 0

    async def frames(self) -> AsyncIterator[Frame]:
        from adapters.video import VideoSource

        clock = current_clock()
        epoch = clock.now()
        video = VideoSource(self.path, name=f"{self.name}.decoder", threads=1)
        async with video, aclosing(video.frames()) as decoded:  # type: ignore[type-var]
            while True:
                with clock.busy():
                    try:
                        frame: Frame = await anext(decoded)
                    except StopAsyncIteration:
                        return
                self.decoded += 1
                pts = int(frame.meta.get("pts", pts_us(frame.t_sensor)))
                sample = self._by_pts.get(pts)
                if sample is None:
                    self.count_error("unknown_pts", f"decoded PTS {pts} is not in the plan")
                    continue
                arrival = epoch + sample.t_arrival
                await clock.sleep_until(arrival)
                yield self.make_frame(
                    frame.t_sensor,
                    frame.data,
                    t_arrival=arrival,
                    meta={"t_true": epoch + sample.t_true, "index": sample.index, "pts": pts},
                )


# -- the pipeline ------------------------------------------------------------------


def _policy() -> Any:
    from fusion.policies import Nearest

    return Nearest(
        "lidar", ["lidar", "cam", "imu"], tolerance=TOLERANCE_NS, windows={"imu": IMU_WINDOW}
    )


def _workers() -> dict[str, Any]:
    from fusion.workers import BatchWorker, bev_occupancy, group_input, sobel_edges

    def images(groups: list[FrameGroup]) -> np.ndarray:
        stack = np.stack([g.frames["cam"].data for g in groups])  # type: ignore[union-attr]
        return stack.transpose(0, 3, 1, 2).astype(np.float32) / 255.0

    def edge_share(groups: list[FrameGroup], outputs: list[np.ndarray]) -> list[float]:
        return [float((edges > 0.5).mean()) for edges in outputs[0]]

    def occupied(groups: list[FrameGroup], outputs: list[np.ndarray]) -> list[int]:
        return [int(grid.sum()) for grid in outputs[0]]

    return {
        "edges": BatchWorker(
            sobel_edges(),
            preprocess=images,
            postprocess=edge_share,
            max_batch=EDGE_BATCH,
            max_delay=EDGE_DELAY_NS,
            providers="cpu",
        ),
        "occupancy": BatchWorker(
            bev_occupancy(points=2048),
            preprocess=group_input("lidar", "points", points=2048),
            postprocess=occupied,
            max_batch=OCC_BATCH,
            max_delay=0,
            providers="cpu",
        ),
    }


GroupKey = tuple[int, tuple[tuple[str, int], ...], tuple[str, ...]]


def group_key(group: FrameGroup) -> GroupKey:
    """What identifies a group: its time, its members (sensor, seq) and what is missing."""
    members = tuple(sorted((f.sensor, f.seq) for f in group.members()))
    return (group.t, members, tuple(sorted(group.missing)))


@dataclass(slots=True)
class GroupRecord:
    """What the demo keeps of one group (no payloads)."""

    key: GroupKey
    results: dict[str, Any]
    t_true: dict[str, int]
    """Ground-truth capture time of each single-frame member."""
    t: dict[str, int]
    """Aligned time of each single-frame member."""
    out_at: int
    """Runtime (virtual) clock when the group left the pipeline."""


def _record(group: FrameGroup, now: int) -> GroupRecord:
    singles = {s: f for s, f in group.frames.items() if isinstance(f, Frame)}
    return GroupRecord(
        key=group_key(group),
        results={
            k: (v if not isinstance(v, Exception) else repr(v)) for k, v in group.results.items()
        },
        t_true={s: int(f.meta["t_true"]) for s, f in singles.items() if "t_true" in f.meta},
        t={s: f.t for s, f in singles.items()},
        out_at=now,
    )


@dataclass(slots=True)
class SensorTruth:
    """A sensor's true clock and link next to what the pipeline saw of it."""

    name: str
    timing: SensorTiming
    planned: int
    """Frames the sensor captured."""
    sent: int
    """Frames that survived the link."""
    clock: OnlineClock
    align_t: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """True capture time of every recorded frame (ns from the session start)."""
    align_err: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """``t - t_true`` of every recorded frame (ns)."""
    last_truth_offset: int | None = None
    """True reference-minus-sensor time at the last recorded frame."""


@dataclass(slots=True)
class DemoResult:
    seconds: float
    sensors: dict[str, SensorTruth]
    live: list[GroupRecord]
    replay: list[GroupRecord]
    stats: Any
    """The live :class:`~fusion._pipeline.PipelineStatistics`."""
    replay_stats: Any
    recording: Any
    """The recording's :class:`~recordings.hfr._summary.RecordingSummary`."""
    clip_bytes: int
    camera_decoded: int
    wall: dict[str, float]
    """Wall seconds per phase: encode, live, truth, replay."""
    virtual_end_ns: int
    mismatches: list[str]
    """Why replay differs from the live run; empty when the check passed."""

    @property
    def replay_ok(self) -> bool:
        return not self.mismatches and len(self.live) > 0


# -- running -----------------------------------------------------------------------


def plan(seconds: float, seed: int) -> dict[str, SyntheticSensor]:
    """The three sensors with their clock models (the camera as a plan for the clip)."""
    out: dict[str, SyntheticSensor] = {}
    kinds: dict[str, type[SyntheticSensor]] = {"lidar": SyntheticLidar, "imu": SyntheticImu}
    for name, timing in TIMINGS.items():
        model = OnlineClock(extra_offset_ns=-timing.delay_ns)
        common: dict[str, Any] = {"timing": timing, "duration_s": seconds, "seed": seed}
        if name == "cam":
            out[name] = SyntheticSensor(name, RATES[name], clock=model, **common)
        else:
            out[name] = kinds[name](name, RATES[name], clock=model, **common)
    return out


# long: the demo's one script (the live pipeline on a virtual clock, the recording read back
#   against the truths, the replay), read top to bottom
async def run_session(
    seconds: float,
    workdir: Path,
    recording: Path,
    *,
    seed: int = 7,
    progress: Progress | None = None,
) -> DemoResult:
    """Encode, run live, record, read the truth back and replay; see the module docstring."""
    from fusion import Pipeline, VirtualClock, use_clock
    from recordings import Recorder, Replay, open_recording

    report = progress or _no_progress
    wall: dict[str, float] = {}
    sensors = plan(seconds, seed)
    samples = {name: list(s.schedule()) for name, s in sensors.items()}
    planned = {name: math.ceil(seconds * RATES[name]) for name in sensors}

    started = time.perf_counter()
    clip = workdir / "camera.mp4"
    report("encode", 0, 1, "rendering and encoding H.264")
    clip_bytes = encode_clip(clip, samples["cam"])
    report("encode", 1, 1, f"{len(samples['cam'])} frames, {clip_bytes / 1e3:.0f} kB")
    wall["encode"] = time.perf_counter() - started

    cam_model = sensors["cam"].spec.clock
    assert isinstance(cam_model, OnlineClock)
    camera = EncodedCamera(clip, samples["cam"], clock=cam_model)
    sources: list[Source] = [camera, sensors["lidar"], sensors["imu"]]
    specs = [s.spec for s in sources]
    clock = VirtualClock()
    total_ns = int(seconds * S)
    pipeline = Pipeline(
        sources,
        _policy(),
        max_latency=MAX_LATENCY_NS,
        workers=_workers(),
        recorder=Recorder(
            recording, sensors=specs, metadata={"made_by": "hyperframes demo"}, atomic=True
        ),
        clock=clock,
    )
    live: list[GroupRecord] = []
    started = time.perf_counter()
    with use_clock(clock):
        async with clock.autojump(), pipeline.open() as groups:
            async for group in groups:
                live.append(_record(group, clock.now()))
                report("live", min(clock.now(), total_ns) / S, seconds, f"{len(live)} groups")
    stats = pipeline.statistics()
    report("live", seconds, seconds, f"{len(live)} groups")
    wall["live"] = time.perf_counter() - started
    virtual_end = clock.now()

    started = time.perf_counter()
    truths = {
        name: SensorTruth(
            name,
            TIMINGS[name],
            planned[name],
            len(samples[name]),
            s.spec.clock,  # type: ignore[arg-type]
        )
        for name, s in sensors.items()
    }
    with open_recording(recording) as log:
        summary = log.summary()
        rows: dict[str, list[tuple[int, int, int]]] = {name: [] for name in truths}
        for frame in log.frames():
            if "t_true" in frame.meta and frame.sensor in rows:
                rows[frame.sensor].append((int(frame.meta["t_true"]), frame.t, frame.t_sensor))
    for name, truth in truths.items():
        if rows[name]:
            arr = np.array(rows[name], np.int64)
            truth.align_t, truth.align_err = arr[:, 0], arr[:, 1] - arr[:, 0]
            truth.last_truth_offset = int(arr[-1, 0] - arr[-1, 2])
    wall["truth"] = time.perf_counter() - started

    started = time.perf_counter()
    replay_clock = VirtualClock()
    replayed = Pipeline(
        [Replay(recording, speed=None)], _policy(), workers=_workers(), clock=replay_clock
    )
    again: list[GroupRecord] = []
    with use_clock(replay_clock):
        async with replay_clock.autojump(), replayed.open() as groups:
            async for group in groups:
                again.append(_record(group, replay_clock.now()))
                report("replay", len(again), max(1, len(live)), f"{len(again)} groups")
    wall["replay"] = time.perf_counter() - started

    return DemoResult(
        seconds=seconds,
        sensors=truths,
        live=live,
        replay=again,
        stats=stats,
        replay_stats=replayed.statistics(),
        recording=summary,
        clip_bytes=clip_bytes,
        camera_decoded=camera.decoded,
        wall=wall,
        virtual_end_ns=virtual_end,
        mismatches=compare(live, again),
    )


def compare(live: Sequence[GroupRecord], replay: Sequence[GroupRecord]) -> list[str]:
    """Differences between two runs' groups (keys in order, then model results)."""
    problems: list[str] = []
    if len(live) != len(replay):
        problems.append(f"live run gave {len(live)} groups, replay {len(replay)}")
    for i, (a, b) in enumerate(zip(live, replay, strict=False)):
        if a.key != b.key:
            problems.append(f"group {i}: live {_describe(a.key)} != replay {_describe(b.key)}")
        elif not _same_results(a.results, b.results):
            problems.append(f"group {i} (t={a.key[0]}): results {a.results} != {b.results}")
        if len(problems) >= 5:
            problems.append("...")
            break
    return problems


def _describe(key: GroupKey) -> str:
    t, members, missing = key
    more = "..." if len(members) > 4 else ""
    return f"t={t} members={list(members)[:4]}{more} missing={list(missing)}"


def _same_results(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for name, va in a.items():
        vb = b[name]
        if isinstance(va, float) and isinstance(vb, float):
            if not math.isclose(va, vb, rel_tol=1e-6, abs_tol=1e-6):
                return False
        elif va != vb:
            return False
    return True
