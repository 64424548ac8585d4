"""What a segment task runs: the :class:`Job` protocol and the three jobs.

A job knows its input and nothing about processes: it plans its segments
(:meth:`Job.segments`: key frames for a video, chunk boundaries for a
recording, the planners of :mod:`adapters.video._segments` and
:mod:`recordings.hfr._segments`), yields one segment's raw items in time order
(:meth:`Job.items`), turns each into a result (:meth:`Job.process`) and says
where a lagging segment may be cut (:meth:`Job.split_point`). A job crosses
to the worker processes by pickle, so it holds only paths and configs.

* :class:`VideoJob`: a per-frame function on a video's decoded frames;
* :class:`VideoWorkersJob`: a run file's stages and workers on a video's frames;
* :class:`RecordingJob`: a run file's sync, stages and workers for a ``.hfr``
  recording, with the parts' overlap, so groups that straddle a cut are built
  from the same frames as in one pass.

:mod:`hyperframes.segments._pool` runs any of them.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from fusion import Frame, FrameGroup, SensorSpec, Source
from fusion.errors import ConfigError

if TYPE_CHECKING:
    from recordings.hfr import ChunkMeta

__all__ = ["Job", "RecordingJob", "VideoJob", "VideoWorkersJob"]


class Job(Protocol):
    """What a task runs on one segment; must pickle (it crosses to the process)."""

    def items(self, start: int | None, end: int | None) -> Iterator[tuple[int, Any]]:
        """``(t, raw)`` in time order: the segment's frames or groups, not yet processed."""
        ...

    def process(self, raw: Any) -> Any:
        """The result of one item (numpy arrays inside go through shared memory)."""
        ...

    def segments(self, target_ns: int) -> list[tuple[int | None, int | None]]:
        """The plan: ranges that tile the time axis."""
        ...

    def split_point(self, progress: int, end: int | None) -> int | None:
        """Where to cut a running segment past ``progress`` (None: not worth it)."""
        ...


@dataclass(frozen=True)
class VideoJob:
    """Decode a video file and apply ``fn(image) -> value`` to every frame.

    ``fn`` must be importable by the worker processes (a module-level
    function). Items are ``(t_ns, fn(image))`` in presentation order.
    """

    path: str
    fn: Callable[[np.ndarray[Any, Any]], Any]
    stream: int = 0
    pixel_format: str = "rgb24"
    size: tuple[int, int] | None = None
    threads: int = 1
    """Decoder threads per process (the processes are the parallelism)."""
    keyframes: tuple[int, ...] = ()
    """Presentation times of the key frames (ns); read from the file when not given."""

    def __post_init__(self) -> None:
        if not self.keyframes:
            from adapters.video import keyframe_times

            object.__setattr__(self, "keyframes", tuple(keyframe_times(self.path, self.stream)))

    def items(self, start: int | None, end: int | None) -> Iterator[tuple[int, Any]]:
        from adapters.video import decode_range

        return decode_range(
            self.path,
            start,
            end,
            stream=self.stream,
            pixel_format=self.pixel_format,
            size=self.size,
            threads=self.threads,
        )

    def process(self, raw: Any) -> Any:
        return self.fn(raw)

    def segments(self, target_ns: int) -> list[tuple[int | None, int | None]]:
        from adapters.video import video_segments

        return video_segments(self.path, target_ns, self.stream, list(self.keyframes))

    def split_point(self, progress: int, end: int | None) -> int | None:
        from adapters.video import video_split_point

        return video_split_point(self.keyframes, progress, end)


@dataclass(frozen=True)
class RecordingJob:
    """A run file's sync, stages and workers over a ``.hfr`` recording, per segment.

    Items are ``(t, (keys, results))`` per group, ``keys`` the group's
    ``(sensor, seq)`` and ``results`` the workers' values by name.
    """

    config: Any
    """A :class:`~hyperframes.fleet._config.FleetConfig` (the run file)."""
    path: str

    def items(self, start: int | None, end: int | None) -> Iterator[tuple[int, Any]]:
        from hyperframes.fleet import Part, iterate_blocking, part_groups

        part = Part(self.path, 0, 1, start, end, int(self.config.fleet.overlap_s * 1e9))
        for group in iterate_blocking(lambda: part_groups(self.config, part, workers=True)):
            yield group.t, (group.keys, dict(group.results))

    def process(self, raw: Any) -> Any:
        return raw

    def segments(self, target_ns: int) -> list[tuple[int | None, int | None]]:
        from hyperframes.fleet import plan_parts

        parts = plan_parts([self.path], split=target_ns, policy=self.config.sync.policy)
        return [(p.start, p.end) for p in parts]

    def split_point(self, progress: int, end: int | None) -> int | None:
        from recordings.hfr import recording_split_point

        if self.config.sync.policy == "approximate":
            return None  # its groups depend on the whole history: never cut
        chunks: list[ChunkMeta] = []
        if end is None:  # the last segment: its end is the last frame's time
            from recordings.hfr import open_recording

            with open_recording(self.path) as log:
                chunks = list(log.chunks)
        return recording_split_point(chunks, progress, end)


@dataclass(frozen=True)
class VideoWorkersJob(VideoJob):
    """A run file's ``[[stages]]`` and ``[[workers]]`` on a video file's frames, per segment.

    Each frame becomes sensor ``sensor``'s frame, a group of its own
    (``ExactTime([sensor])``: the run file's ``[sync]`` is for recordings),
    and runs through the stages and batch workers :func:`build_pipeline`
    builds from the same config. Items are ``(t_ns, (keys, results))`` per
    frame, ``keys`` its ``(sensor, seq)`` with ``seq`` its index in the whole
    stream's presentation order, as in :class:`RecordingJob`. ``fn`` is unused.
    """

    fn: Callable[[np.ndarray[Any, Any]], Any] = np.asarray
    config: Any = None
    """A :class:`~hyperframes.fleet._config.FleetConfig` (the run file)."""
    sensor: str = "cam"
    times: tuple[int, ...] = ()
    """Presentation times of every frame (ns, sorted), for ``seq``; demuxed when not given."""

    def __post_init__(self) -> None:
        if self.config is None:
            raise ConfigError("VideoWorkersJob needs config= (a run file)")
        super().__post_init__()
        if not self.times:
            from adapters.video import frame_times

            object.__setattr__(self, "times", tuple(frame_times(self.path, self.stream)))

    def items(self, start: int | None, end: int | None) -> Iterator[tuple[int, Any]]:
        from hyperframes.fleet import iterate_blocking

        for group in iterate_blocking(lambda: self._groups(start, end)):
            yield group.t, (group.keys, dict(group.results))

    def process(self, raw: Any) -> Any:
        return raw

    async def _groups(self, start: int | None, end: int | None) -> AsyncIterator[FrameGroup]:
        from fusion import Pipeline, SensorStage
        from fusion.policies import ExactTime
        from hyperframes.config import build_stage, build_worker

        cfg = self.config
        pipeline = Pipeline(
            [_RangeSource(self, start, end)],
            ExactTime([self.sensor]),
            max_latency=None,  # offline: groups depend on the data, never on timing
            stages=[SensorStage(s.sensor, build_stage(s)) for s in cfg.stages],
            workers={w.name: build_worker(w) for w in cfg.workers},
            capacity=cfg.pipeline.capacity,
        )
        async with pipeline.open() as groups:
            async for group in groups:
                yield group


class _RangeSource(Source):
    """The frames of ``[start, end)`` of a :class:`VideoWorkersJob`'s file, numbered
    by their place in the whole stream."""

    def __init__(self, job: VideoWorkersJob, start: int | None, end: int | None) -> None:
        super().__init__(SensorSpec(job.sensor, kind="camera"))
        self.job, self.start, self.end = job, start, end

    async def frames(self) -> AsyncIterator[Frame]:
        job = self.job
        decoded = VideoJob.items(job, self.start, self.end)
        try:
            while (item := await self.run_blocking(next, decoded, None)) is not None:
                t, image = item
                seq = bisect.bisect_left(job.times, t)
                yield Frame(job.sensor, seq, t, image, t_sensor=t, t_arrival=t)
        finally:
            decoded.close()  # type: ignore[attr-defined]
