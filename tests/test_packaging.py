"""The package as a user installs it: the sdist and the wheel built from it (their
contents), the wheel installed apart from the checkout runs ``hyperframes demo`` and loads
the pytest plugin.

Here the wheel is installed with ``pip --target`` into a temporary folder placed first on
``PYTHONPATH``, and everything runs from another temporary folder, so nothing is
imported from the source tree; the third-party dependencies come from this
environment. tests/packaging/test_fresh_venv.py installs the wheel with its
dependencies resolved by pip into a fresh venv (network, about a minute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.packaging.distributions import BUILD_TIMEOUT_S, PACKAGES, ROOT, Distributions, build

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Distributions:
    return build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def wheel(built: Distributions) -> Path:
    return built.wheel


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-compile",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT_S,
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("PYTEST_ADDOPTS", None)
    return env


def test_the_sdist_holds_every_package_file_and_no_tests(built: Distributions) -> None:
    with tarfile.open(built.sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    files = {n for n in names if n.split("/")[0] in PACKAGES and not n.endswith("/")}
    assert built.package_files <= files, sorted(built.package_files - files)
    assert not any(n == "tests" or n.startswith("tests/") for n in names), sorted(names)[:20]
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= names


def test_the_wheel_holds_the_four_packages_their_types_and_nothing_else(
    built: Distributions, wheel: Path
) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == set(PACKAGES)
    # every tracked file of the packages, code and data (models, calibrations, the C kernel)
    shipped = {n for n in names if n.split("/")[0] in PACKAGES}
    assert shipped == built.package_files, (
        sorted(built.package_files - shipped),
        sorted(shipped - built.package_files),
    )
    for package in PACKAGES:
        assert f"{package}/py.typed" in names
    assert "recordings/hfr/FORMAT.md" in names
    assert "fusion/workers/model_files/bev_occupancy.onnx" in names  # the demo's models
    assert "fusion/policies/_nearest_native.c" in names  # the C merge kernel's source
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert "License-Expression: Apache-2.0" in metadata
    entry = zipfile.ZipFile(wheel).read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "hyperframes = hyperframes.cli:main" in entry
    assert "hyperframes = recordings.pytest_plugin" in entry


def test_the_installed_wheel_runs_the_demo_from_outside_the_checkout(
    installed: dict[str, str], tmp_path: Path
) -> None:
    where = subprocess.run(
        [sys.executable, "-c", "import fusion, hyperframes; print(fusion.__file__)"],
        cwd=tmp_path,
        env=installed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert not where.startswith(str(ROOT)), where
    assert where.startswith(installed["PYTHONPATH"])
    # onnx is not a run-time dependency: the demo runs with it unimportable
    blocked = tmp_path / "blocked"
    (blocked / "onnx").mkdir(parents=True)
    (blocked / "onnx" / "__init__.py").write_text("raise ImportError('onnx blocked')\n")
    without_onnx = dict(installed, PYTHONPATH=f"{blocked}{os.pathsep}{installed['PYTHONPATH']}")
    demo = subprocess.run(
        [sys.executable, "-m", "hyperframes", "demo", "--quiet", "--seconds", "3"],
        cwd=tmp_path,
        env=without_onnx,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert demo.stdout.startswith("demo ok:"), demo.stdout
    assert "replay reproduced all" in demo.stdout
    script = Path(installed["PYTHONPATH"]) / "bin" / "hyperframes"
    version = subprocess.run(
        [str(script), "--version"], cwd=tmp_path, env=installed, capture_output=True, text=True
    )
    assert version.stdout.startswith("hyperframes "), version.stderr


@pytest.mark.parametrize("async_plugin", ["asyncio", "anyio"])
def test_the_installed_pytest_plugin_gives_a_user_test_the_hfr_fixture(
    installed: dict[str, str], tmp_path: Path, async_plugin: str
) -> None:
    """A fresh project with only the setting docs/recordings.md gives (``-p no:dash``):
    the docs' async test passes under ``-W error``, with pytest-asyncio in its default
    strict mode or with only anyio's plugin."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no:dash"\n', encoding="utf-8"
    )
    (tmp_path / "test_user.py").write_text(
        "from fusion import Frame\n"
        "import numpy as np\n\n"
        "async def consume(replay):\n"
        "    return [f.seq async for f in replay.frames()]\n\n"
        "async def test_replay(hfr):\n"
        "    path = hfr.record([Frame('imu', i, i * 5_000_000, np.zeros(3)) for i in range(20)])\n"
        "    assert await hfr.run(path, consume, speed=1.0) == list(range(20))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "error",
            *(["-p", "no:asyncio"] if async_plugin == "anyio" else []),
            "test_user.py",
        ],
        cwd=tmp_path,
        env=installed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 passed" in done.stdout
    assert "warning" not in done.stdout.lower()
