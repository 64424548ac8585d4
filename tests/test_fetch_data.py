"""examples/fetch_data.py: the manifest names every real file the docs read, with its hash."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "fetch_data.py"
MANIFEST = json.loads((ROOT / "examples" / "data_manifest.json").read_text(encoding="utf-8"))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_the_shared_data_matches_the_manifest() -> None:
    done = run("--check")
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith(f"{len(MANIFEST)} present, 0 fetched, 0 missing")


def test_every_file_a_doc_reads_is_in_the_manifest() -> None:
    pages = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    named = {
        m.group(1).rstrip("/.,)")
        for page in pages
        for m in re.finditer(r"\.\./shared/data/([\w./*-]+)", page.read_text(encoding="utf-8"))
    }
    missing = []
    for name in sorted(named):
        pattern = re.compile(re.escape(name).replace(r"\*", "[^/]*"))
        if not any(pattern.match(entry) for entry in MANIFEST):
            missing.append(name)
    assert missing == []


def test_missing_and_changed_files_are_reported_not_overwritten(tmp_path: Path) -> None:
    name = "real/timeseries/pynmea2_data.log"
    copy = tmp_path / name
    copy.parent.mkdir(parents=True)
    shutil.copy(ROOT.parent / "shared" / "data" / name, copy)
    copy.write_bytes(copy.read_bytes() + b"x")
    done = run("--check", "--dest", str(tmp_path), "--only", "real/timeseries/")
    assert done.returncode == 1
    assert "its SHA-256 differs from the manifest's" in done.stdout
    assert copy.read_bytes().endswith(b"x")  # kept: --force replaces
    done = run("--check", "--dest", str(tmp_path), "--only", "lidar/cturtle")
    assert done.returncode == 1
    assert "cturtle.pcd: missing" in done.stdout
