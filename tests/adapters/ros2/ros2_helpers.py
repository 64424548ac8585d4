"""What the ROS 2 tests share: the publisher process, the real bags, frame comparison."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
PUBLISHER = Path(__file__).resolve().parent / "ros2_publisher.py"
BAGS = ROOT / ".." / "shared" / "data" / "real" / "bags"
TYPES_BAG = BAGS / "rosbags_rs_test_bag_sqlite3"
"""ROS 2 (sqlite3): one topic per standard message type, 2 messages each."""
JPEG_BAG = BAGS / "fiducials_aruco_images.bag"
"""ROS 1: a Raspberry Pi camera's JPEG (1280x960) as a CompressedImage."""
DRIVE_BAG = BAGS / "robot_localization_test2.bag"
"""ROS 1: a Jackal's IMU and wheel odometry at 50 Hz each for 61 s."""


def free_domain() -> int:
    """A DDS domain id no other test of this run is likely to use (loopback ports differ)."""
    return random.randrange(1, 230)


class Publisher:
    """``ros2_publisher.py`` as a process (see its docstring)."""

    def __init__(self, domain: int, bag: Path, topics: list[str], *extra: str) -> None:
        cmd = [sys.executable, str(PUBLISHER), "--domain", str(domain), "--bag", str(bag)]
        for topic in topics:
            cmd += ["--topic", topic]
        self.proc = subprocess.Popen(
            [*cmd, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def wait_line(self, prefix: str, timeout: float = 30) -> str:
        """The first line the publisher prints that starts with ``prefix``."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError(f"the publisher never printed {prefix!r}: {''.join(seen)}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def same_data(a: Any, b: Any) -> bool:
    """Frame payloads equal value for value (arrays, dicts of arrays, bytes)."""
    if isinstance(a, Mapping):
        same_keys = isinstance(b, Mapping) and a.keys() == b.keys()
        return same_keys and all(same_data(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    return bool(a == b)
