"""The clip every segment test runs on, made once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import write_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5 s of H.264 at 30 fps, a key frame every half second."""
    return write_clip(tmp_path_factory.mktemp("seg") / "clip.mp4")
