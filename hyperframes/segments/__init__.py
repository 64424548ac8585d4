"""Segment parallelism on one machine: a long video or recording cut into time
segments, worked by a local process pool, results in time order (docs/segments.md).

The segments concept lives on the floor each part needs:

* **planning** (pure, no processes): :mod:`adapters.video._segments` cuts a
  video at key frames and decodes one range of it; :mod:`recordings.hfr._segments`
  cuts a ``.hfr`` recording at chunk boundaries from its footer index, the
  plan the Ray fleet (:func:`hyperframes.fleet._plan.plan_parts`) runs too;
* **jobs** (:mod:`hyperframes.segments._jobs`): what one segment's task runs,
  a per-frame function or a run file's sync, stages and workers;
* **the pool** (:mod:`hyperframes.segments._pool`): spawned processes,
  results through bounded shared-memory blocks, in order, stragglers split.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from hyperframes.segments._jobs import Job, RecordingJob, VideoJob, VideoWorkersJob
    from hyperframes.segments._pool import SegmentError, SegmentStatistics, run_segments, run_serial


__all__ = [
    "Job",
    "RecordingJob",
    "SegmentError",
    "SegmentStatistics",
    "VideoJob",
    "VideoWorkersJob",
    "run_segments",
    "run_serial",
]

_HOMES = {
    "Job": "hyperframes.segments._jobs",
    "RecordingJob": "hyperframes.segments._jobs",
    "SegmentError": "hyperframes.segments._pool",
    "SegmentStatistics": "hyperframes.segments._pool",
    "VideoJob": "hyperframes.segments._jobs",
    "VideoWorkersJob": "hyperframes.segments._jobs",
    "run_segments": "hyperframes.segments._pool",
    "run_serial": "hyperframes.segments._pool",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
