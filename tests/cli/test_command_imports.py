"""``sync`` and ``info`` on a recording import what they use, not every command's needs.

The commands that only read stamps and metas are judged by their start-up
(issue 29: under 0.5 s on a 3 GB file, most of it imports), so the heavy
libraries of other commands must stay out: the bag and NMEA readers, pandas
(``pa.array`` of a numpy array would import it), anyio and asyncio (the
pipeline), rich's live views, the chunk decoder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fusion import Frame
from recordings import Recorder

MS = 1_000_000
KEPT_OUT = (
    "adapters",
    "pandas",
    "anyio",
    "asyncio",
    "rich.live",
    "rich.progress",
    "msgspec",
    "recordings.hfr._chunk_records",
    "av",
    "onnxruntime",
    "open3d",
)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("imports") / "s.hfr"
    with Recorder(path, chunk_bytes=16 << 10) as rec:
        for i in range(300):
            name = ("lidar", "cam", "imu")[i % 3]
            rec.write(Frame(name, i // 3, i * 3 * MS, np.zeros(64, np.float32)))
    return path


def loaded(argv: list[str]) -> list[str]:
    """The modules of ``KEPT_OUT`` that running ``hyperframes ARGV`` imported."""
    code = (
        "import json, sys\n"
        "from hyperframes.cli import main\n"
        f"code = main({argv!r})\n"
        f"kept = {KEPT_OUT!r}\n"
        "hit = sorted(m for m in sys.modules\n"
        "             if any(m == k or m.startswith(k + '.') for k in kept))\n"
        "print(json.dumps([code, hit]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    code_, hit = json.loads(out.stdout.strip().splitlines()[-1])
    assert code_ == 0, out.stderr
    return list(hit)


def test_sync_to_parquet_imports_no_reader_pipeline_or_pandas(
    recording: Path, tmp_path: Path
) -> None:
    argv = ["sync", str(recording), "--policy", "nearest", "--reference", "lidar"]
    argv += ["--tolerance", "5ms", "-q", "-o", str(tmp_path / "g.parquet")]
    assert loaded(argv) == []
    assert (tmp_path / "g.parquet").stat().st_size > 0


def test_info_quick_on_a_recording_imports_no_bag_reader(recording: Path) -> None:
    assert loaded(["info", "--quick", str(recording)]) == []
