"""A parent for the orphan tests: runs a slow segment pool over a clip, says when its
workers are busy, then goes on until it is killed.

    python -m tests.segments.orphan_child CLIP
"""

from __future__ import annotations

import os
import sys

from hyperframes.segments import VideoJob, run_segments
from tests.segments.helpers import very_slow_features


def main() -> None:
    job = VideoJob(sys.argv[1], very_slow_features)
    for i, _ in enumerate(run_segments(job, processes=2, target_s=1.0)):
        if i == 0:
            print(f"started {os.getpid()}", flush=True)


if __name__ == "__main__":
    main()
