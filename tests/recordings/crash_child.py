"""Child process of test_crash.py: records frames until it is killed.

After each ``write()`` returns it prints ``<i> <monotonic seconds>``, so the
parent knows which frames the recorder had accepted, and when.
"""

from __future__ import annotations

import sys
import time

from fusion._frames import Frame
from recordings import Recorder
from tests.recordings.helpers import payload

SENSORS = ("cam", "lidar", "imu")


def main() -> None:
    path, flush, chunk = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rec = Recorder(path, flush_interval=flush, chunk_bytes=chunk)
    print("ready", flush=True)
    i = 0
    while True:
        name = SENSORS[i % 3]
        seq = i // 3
        t = i * 1_000_000
        rec.write(Frame(name, seq, t, payload(name, seq), t_arrival=t + 5, meta={"i": i}))
        print(i, time.monotonic(), flush=True)
        i += 1
        if i % 3 == 0:
            time.sleep(0.002)


if __name__ == "__main__":
    main()
