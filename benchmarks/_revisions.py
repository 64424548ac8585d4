"""What the ``bench_*_revisions.py`` scripts share: a git revision's tree to run, and one
measuring child run in a fresh interpreter with a given tree first on the path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def checkout(rev: str) -> str:
    """The files of ``rev`` (``git archive``) in a new temporary folder; its path."""
    base = tempfile.mkdtemp(prefix="bench-rev-")
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", base], input=archive.stdout, check=True)
    return base


def run_child(script: str, tree: str, arg: str) -> dict[str, float]:
    """``script --child tree arg`` with ``tree`` on ``PYTHONPATH``: the JSON line it prints
    last, with the load average beside it."""
    out = subprocess.run(
        [sys.executable, script, "--child", tree, arg],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": tree},
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    result["load"] = os.getloadavg()[0]
    return result
