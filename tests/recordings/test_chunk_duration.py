"""Chunks close at ``chunk_duration`` of recording time, so damage costs about a second."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fusion._frames import Frame
from recordings import Recorder, open_recording

from .test_damage import flip

S = 1_000_000_000


def imu(path: Path, seconds: int = 10, rate: int = 200, **kw: object) -> list[Frame]:
    frames = [
        Frame("imu", i, i * S // rate, np.full(6, i, np.float32)) for i in range(seconds * rate)
    ]
    with Recorder(path, flush_interval=None, **kw) as rec:  # type: ignore[arg-type]
        for f in frames:
            rec.write(f)
    return frames


def test_a_chunk_spans_at_most_chunk_duration(tmp_path: Path) -> None:
    path = tmp_path / "imu.hfr"
    imu(path)  # 10 s of 48-byte samples: 96 KB, far below the 4 MiB size bound
    with open_recording(path) as log:
        spans = [c.t_end - c.t_start for c in log.chunks]
    assert len(spans) == 10
    assert max(spans) <= S  # the frame that reaches the bound closes the chunk


def test_one_damaged_chunk_costs_about_a_second(tmp_path: Path) -> None:
    path = tmp_path / "imu.hfr"
    frames = imu(path)
    with open_recording(path) as log:
        victim = log.chunks[4]
    flip(path, victim.offset + 200)  # inside its payload
    with open_recording(path) as log:
        got = list(log.frames())
        assert len(log.damage) == 1
    lost = {f.seq for f in frames} - {f.seq for f in got}
    assert len(lost) == victim.count
    assert (max(lost) - min(lost)) / 200 <= 1.0


def test_chunk_duration_none_closes_by_size_only(tmp_path: Path) -> None:
    path = tmp_path / "imu.hfr"
    imu(path, chunk_duration=None)
    with open_recording(path) as log:
        assert len(log.chunks) == 1


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), 1e308])
def test_a_chunk_duration_out_of_range_is_refused(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="chunk_duration"):
        Recorder(tmp_path / "x.hfr", chunk_duration=bad)
