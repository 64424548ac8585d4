"""``hyperframes doctor``: what this machine supports, and what would get in the way.

Prints the versions that matter (Python, hyperframes, numpy, PyAV and its
FFmpeg, onnxruntime...), which ONNX Runtime providers actually load here,
which hardware video decoders open (H.264 and HEVC), whether the imported
fusion, adapters and recordings packages are the ones installed with this
hyperframes (a different package of the same name earlier on sys.path is a
classic surprise), and whether ffmpeg is on PATH (the acceptance tests use
it as a sender). Exits 1 when something is wrong, not merely absent.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import logging
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DISTRIBUTIONS = (
    "hyperframes",
    "numpy",
    "av",
    "onnxruntime-gpu",
    "onnxruntime",
    "anyio",
    "msgpack",
    "zstandard",
    "pydantic",
    "rich",
    "open3d",
    "rosbags",
    "mcap",
    "ray",
)
"""Distributions whose versions are shown (``-`` when not installed)."""

_CODECS = ("h264", "hevc")


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    area: str
    item: str
    status: str
    """``ok``, ``missing`` (not installed, not an error), ``no`` or ``error``."""
    detail: str = ""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="what this machine supports: versions, ONNX providers, hardware decoders, ffmpeg",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead")
    p.add_argument(
        "--clean",
        action="store_true",
        help="remove what killed segment runs left in /dev/shm (blocks hf_<pid>_* of dead "
        "processes, multiprocessing semaphores no process maps) and say what was removed",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from hyperframes.cli._common import console_for

    if args.clean:
        return clean()
    checks = [*versions(), *packages(), *providers(), *decoders(), *tools()]
    bad = [c for c in checks if c.status == "error"]
    if args.json:
        print(json.dumps([_as_dict(c) for c in checks], indent=1))
        return 1 if bad else 0
    console = console_for(args)
    table = Table(title="hyperframes doctor")
    for col in ("area", "item", "status", "detail"):
        table.add_column(col)
    for c in checks:
        table.add_row(c.area, c.item, c.status, c.detail)
    console.print(table)
    print(f"{len(bad)} problem(s)" if bad else "no problems found")
    return 1 if bad else 0


def _as_dict(c: Check) -> dict[str, str]:
    return {"area": c.area, "item": c.item, "status": c.status, "detail": c.detail}


def versions() -> list[Check]:
    out = [Check("version", "python", "ok", f"{platform.python_version()} ({platform.platform()})")]
    for name in DISTRIBUTIONS:
        if name == "onnxruntime" and _installed("onnxruntime-gpu"):
            continue  # the GPU package provides the same module
        try:
            out.append(Check("version", name, "ok", importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            out.append(Check("version", name, "missing", "not installed"))
    try:
        import av

        libs = ", ".join(f"{k} {'.'.join(map(str, v))}" for k, v in av.library_versions.items())
        out.append(Check("version", "FFmpeg (in PyAV)", "ok", libs))
    except Exception as err:  # a broken PyAV install is worth one line, not a traceback
        out.append(Check("version", "FFmpeg (in PyAV)", "error", str(err)))
    return out


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def packages() -> list[Check]:
    """Are ``fusion``, ``adapters`` and ``recordings`` the packages beside ``hyperframes``?"""
    import hyperframes

    home = Path(hyperframes.__file__).resolve().parent.parent
    out = []
    for name in ("fusion", "adapters", "recordings"):
        try:
            module = importlib.import_module(name)
        except Exception as err:
            out.append(Check("package", name, "error", f"does not import: {err}"))
            continue
        where = Path(getattr(module, "__file__", "") or "?").resolve().parent
        ours = where.parent == home and (where / "py.typed").exists()
        detail = str(where) if ours else f"{where} is not the one beside {home / 'hyperframes'}"
        out.append(Check("package", name, "ok" if ours else "error", detail))
    return out


def providers() -> list[Check]:
    try:
        import onnxruntime as ort
    except Exception as err:
        return [Check("onnxruntime", "import", "error", str(err))]
    from fusion.workers import nvidia_gpu_present, probe_provider

    out = [
        Check(
            "onnxruntime",
            "NVIDIA GPU",
            "ok" if nvidia_gpu_present() else "no",
            "driver loaded" if nvidia_gpu_present() else "no NVIDIA driver or device",
        )
    ]
    for provider in ort.get_available_providers():
        reason = probe_provider(provider)
        out.append(Check("onnxruntime", provider, "ok" if reason is None else "no", reason or ""))
    return out


def decoders() -> list[Check]:
    try:
        import av
        from av.codec.hwaccel import hwdevices_available

        from adapters.video import _hwaccel as hw
    except Exception as err:
        return [Check("video", "hardware decode", "error", str(err))]
    built = list(hwdevices_available())
    if not built:
        return [Check("video", "hardware decode", "no", "this FFmpeg build has no device types")]
    video_log = logging.getLogger("adapters.video")
    level = video_log.level
    video_log.setLevel(logging.ERROR)  # reasons go in the table; restored for the caller
    try:
        return _probe_decoders(av, hw, built)
    finally:
        video_log.setLevel(level)


def _probe_decoders(av: Any, hw: Any, built: list[str]) -> list[Check]:
    out = []
    for device in [d for d in hw.AUTO_ORDER if d in built]:
        for name in _CODECS:
            codec = av.codec.Codec(name, "r")
            report = hw.HWAccelReport("auto")
            if not hw.candidates(device, codec, report):
                reasons = "; ".join(report.reasons) or "not supported"
                out.append(Check("video", f"{device} {name}", "no", reasons))
                continue
            reason = hw.probe_device(device, codec, timeout=3.0)
            out.append(
                Check("video", f"{device} {name}", "ok" if reason is None else "no", reason or "")
            )
    return out


def tools() -> list[Check]:
    out = []
    for tool in ("ffmpeg", "ffprobe"):
        path = shutil.which(tool)
        if path is None:
            out.append(Check("tool", tool, "missing", "not on PATH (the acceptance tests need it)"))
            continue
        try:
            first = subprocess.run(
                [path, "-version"], capture_output=True, text=True, timeout=10, check=False
            ).stdout.splitlines()[:1]
        except (OSError, subprocess.SubprocessError) as err:
            out.append(Check("tool", tool, "error", f"{path}: {err}"))
            continue
        out.append(Check("tool", tool, "ok", f"{path}: {first[0] if first else '?'}"))
    return out


def clean() -> int:
    """``doctor --clean``: reclaim stale shared memory (hyperframes.segments._janitor)."""
    from hyperframes.segments import _janitor as janitor

    removed = janitor.reclaim()
    for name in removed:
        print(f"removed {janitor.SHM / name}")
    print(f"{len(removed)} stale shared-memory files removed")
    return 0
