"""The C merge kernel's life cycle: built once into a cache, found there by a stat,
loaded without numba; no compiler (or a broken one) falls back with the reason.

Each case runs in a fresh process with its own cache directory
(``HYPERFRAMES_CACHE_DIR``), so what a user's process would do is what is
tested; the columns themselves are checked against the numpy form and numba in
test_columnar_sync.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# One call of group_columns on ``n`` stamps; what it used, what got loaded, and the
# groups checked against the numpy form.
CALL = """
import json, sys, numpy as np
from fusion import Nearest
from fusion.policies import _nearest_native as native
from fusion.policies._columnar import group_columns
n = int(sys.argv[1])
rng = np.random.default_rng(1)
ref = np.arange(n // 11, dtype=np.int64) * 100 + rng.integers(0, 9, n // 11)
cam = np.arange(n - n // 11, dtype=np.int64) * 10 + 3
pol = Nearest("ref", ["ref", "cam"], 4)
cols = group_columns(pol, {"ref": ref, "cam": cam})
how = "native" if native.loaded() else "numba" if "numba" in sys.modules else "numpy"
want = group_columns(pol, {"ref": ref, "cam": cam}, compiled=False)
same = [c.t.tolist() + c.picks["cam"].tolist() for c in (cols, want)]
same = same[0] == same[1]
print(json.dumps({"how": how, "numba": "numba" in sys.modules, "failure": native.failure(),
                  "same": same}))
"""


def call(n: int, cache: Path, **env: str) -> dict[str, object]:
    full = {**os.environ, "HYPERFRAMES_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT), **env}
    out = subprocess.run(
        [sys.executable, "-c", CALL, str(n)], env=full, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


@pytest.mark.slow
def test_built_once_then_found_by_later_processes_without_numba(tmp_path: Path) -> None:
    small = call(50_000, tmp_path)
    assert small == {"how": "numpy", "numba": False, "failure": None, "same": True}
    assert list(tmp_path.iterdir()) == []  # a small call builds nothing
    big = call(110_000, tmp_path)  # from 100,000 stamps the first call builds it
    assert big == {"how": "native", "numba": False, "failure": None, "same": True}
    built = [p.name for p in tmp_path.iterdir()]
    assert len(built) == 1
    assert built[0].startswith("hf_nearest-")  # no temporary file left behind
    again = call(50_000, tmp_path)  # once built, any size uses it, and numba stays out
    assert again == {"how": "native", "numba": False, "failure": None, "same": True}


def test_without_a_compiler_the_reason_is_kept_and_the_groups_are_the_same(
    tmp_path: Path,
) -> None:
    missing = call(110_000, tmp_path, CC=str(tmp_path / "no-such-cc"))
    assert missing["how"] == "numpy"  # under numba's 100 M stamps: numpy
    assert missing["same"] is True
    assert "could not run" in str(missing["failure"])
    broken = tmp_path / "cc"
    broken.write_text("#!/bin/sh\necho 'cc: error: out of licences' >&2\nexit 3\n")
    broken.chmod(0o755)
    failed = call(110_000, tmp_path, CC=str(broken))
    assert failed["same"] is True
    assert failed["failure"] == f"{broken} failed (3): cc: error: out of licences"
    assert [p.name for p in tmp_path.iterdir()] == ["cc"]  # no half-built library left
