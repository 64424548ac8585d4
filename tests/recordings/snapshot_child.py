"""Child process of test_snapshot.py: writes one snapshot, then is killed inside a second.

Prints ``written <path>`` once the first snapshot is on disk, then ``writing``
once the second snapshot's first chunk is in its file; it then waits to be
killed (SIGKILL) with that snapshot half written.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from recordings.hfr._snapshot import SnapshotRecorder
from tests.recordings.helpers import make_frames


class Stalling(SnapshotRecorder):
    stall = False

    def _write_chunk(self, out: Any, meta: Any, parts: list[bytes]) -> None:
        super()._write_chunk(out, meta, parts)
        if self.stall:
            print("writing", flush=True)
            threading.Event().wait(60)  # killed here


def main() -> None:
    rec = Stalling(Path(sys.argv[1]), keep=10.0, chunk_seconds=0.1)
    frames = make_frames(600)  # 6 s, 10 ms apart
    for f in frames[:300]:
        rec.write(f)
    first = rec.trigger("first", pre=1.0).wait(30)
    print("written", first, flush=True)
    rec.stall = True
    for f in frames[300:]:
        rec.write(f)
    rec.trigger("second", pre=4.0)
    threading.Event().wait(60)


if __name__ == "__main__":
    main()
