"""OusterSource needs no ouster-sdk: the real OS-1-32 capture decoded in a process where
importing ``ouster`` fails (and ouster-sdk is not on the path) gives the very array the
in-process ouster-sdk decode (``decoder="ouster-sdk"``, its ``FrameBatcher`` and
``XYZLut``) gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import numpy as np
from ouster_testdata import OUSTER_JSON, OUSTER_PCAP, VALID_POINTS

from adapters import OusterSource
from tests.conftest import OUSTER_ORACLE

ROOT = Path(__file__).resolve().parents[2]

BLOCKED = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "ouster" or name.startswith("ouster."):
            raise ImportError("blocked for the test: " + name)
sys.meta_path.insert(0, Block())
import anyio, numpy as np
from adapters import OusterSource

async def main():
    async with OusterSource(sys.argv[1], metadata=sys.argv[2]) as source:
        frames = [f async for f in source.frames()]
    (frame,) = frames
    np.save(sys.argv[3], frame.data)
    print(frame.t_sensor, frame.meta["packets"], dict(source.errors))
    print(sorted(m for m in sys.modules if m.split(".")[0] == "ouster"))

anyio.run(main)
"""


def without_oracle() -> dict[str, str]:
    """This environment, without the folder ouster-sdk is kept in for the tests."""
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [p for p in paths if p and Path(p) != OUSTER_ORACLE]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(kept)}


async def _vendor_scan() -> tuple[int, np.ndarray]:
    async with OusterSource(OUSTER_PCAP, metadata=OUSTER_JSON, decoder="ouster-sdk") as source:
        (frame,) = [f async for f in source.frames()]
    return frame.t_sensor, frame.data


def test_the_capture_decodes_where_ouster_cannot_be_imported(tmp_path: Path) -> None:
    out = tmp_path / "points.npy"
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED, str(OUSTER_PCAP), str(OUSTER_JSON), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=without_oracle(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    stamp, modules = done.stdout.strip().splitlines()
    assert modules == "[]"  # nothing of ouster-sdk was even looked up successfully
    t_sensor, want = anyio.run(_vendor_scan)
    assert stamp == f"{t_sensor} 64 {{}}"
    got = np.load(out)
    assert len(got) == VALID_POINTS
    np.testing.assert_array_equal(got, want)


def test_the_ouster_sdk_decoder_without_ouster_sdk_says_what_to_install() -> None:
    script = BLOCKED.replace(
        "OusterSource(sys.argv[1], metadata=sys.argv[2])",
        "OusterSource(sys.argv[1], metadata=sys.argv[2], decoder='ouster-sdk')",
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(OUSTER_PCAP), str(OUSTER_JSON), "x.npy"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=without_oracle(),
        timeout=120,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "SourceOpenError" in last
    assert "decoder='ouster-sdk' needs ouster-sdk: pip install" in last
    assert "the default decoder does not" in last
