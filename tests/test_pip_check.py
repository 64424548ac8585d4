"""The environment the tests run in has no broken requirements (`pip check`): ouster-sdk,
whose pins clash with ours, is the Ouster tests' oracle outside site-packages (the
Makefile; tests/conftest.py puts it on the path), not a distribution of the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import OUSTER_ORACLE


def test_pip_check_is_clean_in_this_environment() -> None:
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p and Path(p) != OUSTER_ORACLE),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "No broken requirements found.", done.stdout


def test_ouster_sdk_is_not_a_distribution_of_the_environment() -> None:
    import importlib.metadata as md

    site = [p for p in sys.path if Path(p) != OUSTER_ORACLE]
    names = {d.metadata["Name"].lower() for d in md.distributions(path=site)}
    assert "ouster-sdk" not in names
    assert "numba" in names  # the search looked where the environment's packages are
