"""A recorder killed with SIGKILL at random moments leaves a readable, faithful file."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recordings import open_recording

from .helpers import digest, payload

ROOT = Path(__file__).resolve().parents[2]
FLUSH = 0.05  # seconds: the recorder's flush interval in the child
SLACK = 0.35  # seconds the child's threads get beyond the interval (a loaded CI box)
TRIALS = 20
PARALLEL = 5


def run_trial(path: Path, delay: float, chunk_bytes: int) -> tuple[list[tuple[int, float]], float]:
    """Start the child, kill it ``delay`` s after it is ready; its acks and the kill time."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.recordings.crash_child",
            str(path),
            str(FLUSH),
            str(chunk_bytes),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    acks: list[tuple[int, float]] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            fields = line.split()
            if len(fields) == 2 and line.endswith("\n"):  # a kill can cut the last line
                acks.append((int(fields[0]), float(fields[1])))

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:  # the child runs in real time; so must the kill
        reader.join(timeout=deadline - time.monotonic())
    killed_at = time.monotonic()
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join()
    child.stdout.close()
    return acks, killed_at


@pytest.mark.parametrize("batch", range(TRIALS // PARALLEL))
def test_sigkill_at_random_moments_loses_at_most_the_flush_interval(
    tmp_path: Path, batch: int
) -> None:
    rng = random.Random(1234 + batch)
    # Random kill moments, one of them late enough that frames must have reached the disk.
    delays = [rng.uniform(0.0, 0.7) for _ in range(PARALLEL - 1)] + [rng.uniform(0.5, 0.7)]
    plans = [
        (tmp_path / f"crash-{k}.hfr", d, rng.choice([3_000, 50_000, 1 << 20]))
        for k, d in enumerate(delays)
    ]
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda p: run_trial(*p), plans))
    checked = 0
    for (path, delay, chunk_bytes), (acks, killed_at) in zip(plans, results, strict=True):
        with open_recording(path) as log:  # always readable, footer or not
            got = list(log.frames())
            assert all(e.__class__.__name__ == "TruncatedRecording" for e in log.damage), log.damage
        order = [f.meta["i"] for f in got]
        assert order == list(range(len(got))), "frames on disk are a prefix of those written"
        for f in got:
            assert digest(f.data) == digest(payload(f.sensor, f.seq)), (
                f"{path}: {f} is not byte-identical"
            )
        must_have = [i for i, t in acks if t < killed_at - FLUSH - SLACK]
        context = (
            f"delay {delay:.2f}s chunk_bytes {chunk_bytes}: {len(acks)} acked, {len(got)} on disk"
        )
        assert len(got) >= len(must_have), context
        checked += len(must_have)
    assert checked > 0, "no trial ran long enough to test the flush interval"
