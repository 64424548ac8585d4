"""Public API hygiene, after httpx's test_exported_members: every package exports a
sorted ``__all__`` whose members resolve and report the package as their module."""

from __future__ import annotations

import importlib
import inspect

import pytest

PACKAGES = [
    "fusion", "adapters", "adapters.ros", "adapters.video", "recordings", "recordings.hfr.video"
]  # fmt: skip


def _isort_style(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return 0, name
    return (1 if name[:1].isupper() else 2), name


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_unique_and_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names, key=_isort_style), f"{package}.__all__ is not sorted"
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name} does not resolve"


@pytest.mark.parametrize("package", PACKAGES)
def test_public_classes_and_functions_report_the_package(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        member = getattr(module, name)
        if (inspect.isclass(member) or inspect.isfunction(member)) and member.__module__.startswith(
            package + "."
        ):
            pytest.fail(f"{package}.{name} reports module {member.__module__!r}")


@pytest.mark.parametrize(
    "name",
    [
        "Frame",
        "FrameGroup",
        "SensorSpec",
        "SyncHub",
        "ExactTime",
        "ApproximateTime",
        "Nearest",
        "BatchWorker",
    ],
)
def test_contract_names_are_exported_from_fusion(name: str) -> None:
    fusion = importlib.import_module("fusion")
    assert name in fusion.__all__


def test_contract_names_of_adapters_and_recordings() -> None:
    adapters = importlib.import_module("adapters")
    recordings = importlib.import_module("recordings")
    clock = importlib.import_module("fusion.clock")
    for name in ["Source"]:
        assert name in adapters.__all__
    for name in ["Recorder", "Replay", "open_recording"]:
        assert name in recordings.__all__
    for name in ["Identity", "FixedOffset"]:
        assert hasattr(clock, name)


def test_source_is_one_class_defined_in_the_core_and_reexported() -> None:
    fusion = importlib.import_module("fusion")
    adapters = importlib.import_module("adapters")
    assert adapters.Source is fusion.Source
    assert repr(fusion.Source).endswith("'fusion.Source'>")


def test_python_dash_m_hyperframes_runs_the_command_line() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", "--help"], capture_output=True, text=True, check=True
    )
    assert "usage: hyperframes" in done.stdout
    for command in (
        "demo",
        "record",
        "replay",
        "info",
        "check",
        "export",
        "sync",
        "bench",
        "fleet",
    ):
        assert command in done.stdout


STORAGE_ERRORS = [
    "CorruptChunk",
    "LimitExceeded",
    "RecorderClosed",
    "RecordingError",
    "TruncatedRecording",
    "UnsupportedVersion",
]


@pytest.mark.parametrize("name", STORAGE_ERRORS)
def test_storage_errors_live_in_recordings_only(name: str) -> None:
    fusion_errors = importlib.import_module("fusion.errors")
    recordings = importlib.import_module("recordings")
    storage = importlib.import_module("recordings.errors")
    assert not hasattr(fusion_errors, name)
    assert name not in importlib.import_module("fusion").__all__
    assert getattr(recordings, name) is getattr(storage, name)
    assert issubclass(
        getattr(storage, name), (fusion_errors.HyperframesError, fusion_errors.UsageError)
    )


@pytest.mark.parametrize("name", ["DecodeError", "SensorTimeout", "SourceOpenError"])
def test_source_errors_live_in_adapters_under_the_core_source_error(name: str) -> None:
    fusion = importlib.import_module("fusion")
    adapters = importlib.import_module("adapters")
    assert not hasattr(importlib.import_module("fusion.errors"), name)
    assert name not in fusion.__all__
    assert getattr(adapters, name) is getattr(importlib.import_module("adapters.errors"), name)
    assert issubclass(getattr(adapters, name), fusion.SourceError)


def test_python_dash_m_hyperframes_is_the_only_module_entry_point() -> None:
    import pathlib

    root = pathlib.Path(importlib.import_module("hyperframes").__file__ or "").parent
    assert (root / "__main__.py").is_file()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("__main__.py")) == [
        "__main__.py"
    ]
