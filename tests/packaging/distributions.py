"""Build the sdist and the wheel as a release would: the sdist from the tracked files, the
wheel from the unpacked sdist (so a file the sdist forgets is missing from the wheel too).

Both builds run without network (``--no-build-isolation``: setuptools and wheel come from
the test extra) and each is bounded by :data:`BUILD_TIMEOUT_S`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("fusion", "adapters", "recordings", "hyperframes")
BUILD_TIMEOUT_S = 180


@dataclass(frozen=True)
class Distributions:
    sdist: Path
    wheel: Path
    package_files: frozenset[str]
    """The tracked files under the four packages that were copied (the build's input)."""


def tracked_files() -> list[str]:
    """Every file git tracks in the checkout that exists in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.split(b"\0")
    return [n for n in (t.decode() for t in listed if t) if (ROOT / n).is_file()]


def _run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, f"{argv[:4]} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def build(workdir: Path) -> Distributions:
    """Copy the tracked files to ``workdir/src``, build the sdist, then the wheel from it."""
    src = workdir / "src"
    package_files = set()
    for name in tracked_files():
        target = src / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
        if name.split("/")[0] in PACKAGES:
            package_files.add(name)
    dist = workdir / "dist"
    dist.mkdir()
    _run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom setuptools import build_meta\nbuild_meta.build_sdist(sys.argv[1])",
            str(dist),
        ],
        cwd=src,
    )
    (sdist,) = dist.glob("hyperframes-*.tar.gz")
    unpacked = workdir / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (tree,) = unpacked.iterdir()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(tree),
        ],
        cwd=workdir,
    )
    (wheel,) = dist.glob("hyperframes-*.whl")
    return Distributions(sdist, wheel, frozenset(package_files))
