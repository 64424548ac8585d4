"""An abandoned recorder in a reference cycle still finishes its file, whichever thread
the cyclic garbage collector runs in: the cases of ``abandoned_cases.py``, run in a
fresh interpreter.

They depend on the process's collector: ``gc.collect()`` does nothing while a
collection another thread started is still running, and in a full parallel run a
worker carries other tests' threads and objects (three fresh clones' runs left the
recorder to the next test's setup). A child process of their own gives them a
collector nothing else uses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).with_name("abandoned_cases.py")


def test_the_abandoned_recorder_cases_pass_in_a_fresh_interpreter() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-o", f"python_files={CASES.name}", str(CASES)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout, done.stdout[-2000:]
