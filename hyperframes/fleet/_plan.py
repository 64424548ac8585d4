"""Planning a fleet run: which tasks read what, and what each asks Ray for (sans-I/O).

Parts
-----
A *part* is one read task's work: a whole recording, or one time range of a
long one. Ranges come from the recording's footer index (nothing
decompressed), cut by :func:`recordings.hfr._segments.recording_segments` at chunk
boundaries near every ``split`` ns (the cuts the local process pool of
:mod:`hyperframes.segments` uses too), and are half-open ``[start, end)`` on
the group time ``t``; the first and last are unbounded so no frame falls
outside every part. A part
replays ``overlap`` more on each side and keeps only the groups whose ``t`` is
its own, so each group is built from the same frames as in a whole-recording
replay. That holds when the policy's choice for a group depends only on frames
within the overlap: always for ``exact``; for ``nearest`` when the overlap
holds a reference frame and covers the tolerances and windows (checked when
the run file is loaded). ``approximate`` chooses sets from the whole history
of its queues, so its recordings are never split.

Resources
---------
Two 1-CPU actors on a 2-CPU node starve the read tasks and hang a Ray Data job
forever: the pool holds every core, no read task is scheduled, no batch ever
arrives. So the plan reserves ``read_cpus`` for the reads first and gives the
actors at most what is left, fractional if need be (a CPU request is Ray's
bookkeeping, not a pin). A GPU actor asks for ``gpus_per_actor`` GPUs and a
share of the spare CPUs for its pre- and post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fusion.errors import ConfigError
from recordings.errors import RecordingError
from recordings.hfr import open_recording, recording_segments


@dataclass(frozen=True, slots=True)
class Part:
    """One read task: a recording, or the time range ``[start, end)`` of one."""

    path: str
    index: int
    """Position of the part in its recording, from 0."""
    count: int
    """Parts the recording is cut into."""
    start: int | None = None
    """First group time kept (ns); ``None``: from the beginning."""
    end: int | None = None
    """Group times kept are below this (ns); ``None``: to the end."""
    overlap: int = 0
    """ns replayed beyond each bounded side."""
    size_bytes: int = 0
    """Uncompressed bytes expected (an estimate, for Ray's planning)."""

    @property
    def read_start(self) -> int | None:
        return None if self.start is None else self.start - self.overlap

    @property
    def read_end(self) -> int | None:
        return None if self.end is None else self.end + self.overlap

    def keeps(self, t: int) -> bool:
        """Whether the group at ``t`` belongs to this part."""
        return (self.start is None or t >= self.start) and (self.end is None or t < self.end)


def plan_parts(
    paths: Sequence[str], *, split: int | None = None, overlap: int = 0, policy: str = "nearest"
) -> list[Part]:
    """One part per recording, or per ``split`` ns of one (never for ``approximate``)."""
    parts: list[Part] = []
    for path in paths:
        try:
            with open_recording(path) as log:
                summary = log.summary()
                chunks = list(log.chunks)
        except (OSError, RecordingError):
            # Not readable here: one task, which reports the same error for this
            # recording alone when it runs.
            parts.append(Part(path, 0, 1))
            continue
        ranges = recording_segments(chunks, None if policy == "approximate" else split)
        each = summary.raw_bytes // len(ranges)
        for i, (start, end) in enumerate(ranges):
            parts.append(Part(path, i, len(ranges), start, end, overlap, each))
    return parts


@dataclass(frozen=True, slots=True)
class ResourcePlan:
    """What the read tasks and the inference actors ask Ray for."""

    actors: int
    cpus_per_actor: float
    gpus_per_actor: float
    """0 on a CPU-only plan."""
    threads_per_actor: int
    """onnxruntime intra-op threads in each actor."""
    read_cpus: float
    note: str
    """One sentence on why, for the log and the CLI."""

    @property
    def device(self) -> str:
        return "gpu" if self.gpus_per_actor else "cpu"


def plan_resources(
    cluster_cpus: float,
    cluster_gpus: float,
    *,
    actors: int | None = None,
    device: str = "auto",
    gpus_per_actor: float = 1.0,
    cpus_per_actor: float | None = None,
    read_cpus: float = 1.0,
) -> ResourcePlan:
    """Size the actor pool so that at least one read task always fits beside it."""
    if cluster_cpus < read_cpus:
        raise ConfigError(
            f"the cluster has {cluster_cpus:g} CPUs, fewer than the {read_cpus:g} one read task "
            "asks for (fleet.read_cpus)"
        )
    use_gpu = device == "gpu" or (device == "auto" and cluster_gpus > 0)
    if use_gpu and cluster_gpus <= 0:
        raise ConfigError("fleet.device is 'gpu' but the cluster has no GPU")
    spare = cluster_cpus - read_cpus
    if use_gpu:
        fit = int(cluster_gpus // gpus_per_actor)
        if fit < 1:
            raise ConfigError(
                f"fleet.gpus_per_actor = {gpus_per_actor:g} but the cluster has "
                f"{cluster_gpus:g} GPUs"
            )
        n = actors if actors is not None else fit
        if n > fit:
            raise ConfigError(
                f"{n} actors x {gpus_per_actor:g} GPUs do not fit in the cluster's "
                f"{cluster_gpus:g} GPUs"
            )
        gpus = gpus_per_actor
    else:
        # Auto: one actor per two spare cores (a read task feeds about two).
        n = actors if actors is not None else max(1, int(spare // 2))
        gpus = 0.0
    wanted = cpus_per_actor if cpus_per_actor is not None else 1.0
    cpus = min(wanted, spare / n)
    cpus = math.floor(cpus * 100) / 100  # Ray rounds requests to 1e-4; stay under
    while cpus > 0.01 and n * cpus > spare:  # 25 x 0.56 is 14.000000000000002 in floats
        cpus = round(cpus - 0.01, 2)
    threads = max(1, int(cpus))
    if cpus < wanted:
        note = (
            f"{n} actor(s) get {cpus:g} CPU each, not {wanted:g}, so {read_cpus:g} CPU stays "
            f"free for the read tasks of a {cluster_cpus:g}-CPU cluster"
        )
    else:
        note = f"{n} actor(s) x {cpus:g} CPU, {read_cpus:g} CPU per read task"
    if gpus:
        note += f", {gpus:g} GPU per actor"
    return ResourcePlan(n, cpus, gpus, threads, read_cpus, note)
