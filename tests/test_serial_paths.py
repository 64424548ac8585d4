"""Every path ``tests/conftest.py`` marks serial holds tests.

A file or folder that moves without its ``SERIAL`` entry leaves that entry naming
nothing: its tests then run on the two workers of ``make test``'s first pass, beside
the other worker's load, and fail by timing (the ROS 2 tests did, after
``adapters/ros2/`` was renamed in the list but not on disk).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SERIAL

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("entry", SERIAL)
def test_a_serial_entry_names_test_files(entry: str) -> None:
    named = [
        path
        for path in TESTS.rglob("test_*.py")
        if path.relative_to(TESTS).as_posix().startswith(entry)
    ]
    assert named, f"tests/conftest.py SERIAL: {entry!r} names no test file under tests/"
