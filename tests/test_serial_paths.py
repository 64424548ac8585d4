"""Every path ``tests/conftest.py`` marks serial holds tests.

A file or folder that moves without its ``SERIAL`` entry leaves that entry naming
nothing: its tests then run on the two workers of ``make test``'s first pass, beside
the other worker's load, and fail by timing (the ROS 2 tests did, after
``adapters/ros2/`` was renamed in the list but not on disk). The same for ``SHARED``,
the serial files that must not run at the same time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SERIAL, SHARED

TESTS = Path(__file__).resolve().parent


def _named(entry: str) -> list[Path]:
    return [
        path
        for path in TESTS.rglob("test_*.py")
        if path.relative_to(TESTS).as_posix().startswith(entry)
    ]


@pytest.mark.parametrize("entry", SERIAL)
def test_a_serial_entry_names_test_files(entry: str) -> None:
    assert _named(entry), f"tests/conftest.py SERIAL: {entry!r} names no test file under tests/"


@pytest.mark.parametrize("entry", SHARED)
def test_a_shared_entry_names_serial_test_files(entry: str) -> None:
    """A file that shares a resource but is not serial would run beside the others of its
    group in the bulk pass; one that names nothing no longer keeps its group apart."""
    named = _named(entry)
    assert named, f"tests/conftest.py SHARED: {entry!r} names no test file under tests/"
    for path in named:
        assert path.relative_to(TESTS).as_posix().startswith(SERIAL), (entry, path)
