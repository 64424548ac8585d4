"""Fixtures of the fleet tests: three recordings made once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fleet_helpers import make_recording


@pytest.fixture(scope="module")
def drives(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three recordings: one of 4 s (split into time ranges when asked), two of 1.5 s."""
    folder = tmp_path_factory.mktemp("drives")
    return [
        make_recording(folder / "drive-a.hfr", 4.0, 10),
        make_recording(folder / "drive-b.hfr", 1.5, 20),
        make_recording(folder / "drive-c.hfr", 1.5, 30),
    ]
