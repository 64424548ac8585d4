"""The error contract across floors: misuse is a UsageError, a bad argument a ConfigError."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import PointCloudFiles, SyntheticImu, VelodyneSource, VideoSource
from fusion import (
    ApproximateTime,
    BatchWorker,
    ConfigError,
    ExactTime,
    Frame,
    Nearest,
    OnlineClock,
    Pipeline,
    SensorSpec,
    SyncHub,
    UsageError,
    VirtualClock,
)
from fusion.workers import DynamicBatcher, ReorderBuffer
from recordings import Recorder, Replay, SnapshotRecorder, read_stream

REAL_PCAP = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "lidar"


def recording(tmp_path: Path) -> Path:
    path = tmp_path / "s.hfr"
    with Recorder(path) as rec:
        rec.write(Frame("imu", 0, 1_000, np.zeros(3, np.float32)))
    return path


async def test_a_pipeline_run_twice_is_a_usage_error() -> None:
    clock = VirtualClock()
    pipeline = Pipeline([SyntheticImu(duration_s=0.05, seed=1)], ExactTime(["imu"]), clock=clock)
    with anyio.fail_after(10):
        async with clock.autojump():
            await pipeline.run()
            with pytest.raises(UsageError, match="a Pipeline runs once; build a new one"):
                await pipeline.run()


async def test_a_hub_run_twice_is_a_usage_error() -> None:
    clock = VirtualClock()
    hub = SyncHub(ExactTime(["imu"]), clock=clock)
    with anyio.fail_after(10), hub.groups:
        async with clock.autojump():
            await hub.run([SyntheticImu(duration_s=0.05, seed=1)])
            with pytest.raises(UsageError, match="a SyncHub runs once; create a new one"):
                await hub.run([SyntheticImu(duration_s=0.05, seed=1)])


def test_a_closed_replay_is_a_usage_error(tmp_path: Path) -> None:
    replay = Replay(recording(tmp_path), speed=None)
    replay.close()
    with pytest.raises(UsageError, match=r"replay of '.*s\.hfr' is closed"):
        _ = replay.recording


def test_a_stream_read_twice_is_a_usage_error(tmp_path: Path) -> None:
    with recording(tmp_path).open("rb") as f:
        stream = read_stream(f)
        assert [frame.seq for frame in stream.frames()] == [0]
        with pytest.raises(UsageError, match="was already read; open it again"):
            next(iter(stream.frames()))


async def test_wait_listening_on_a_pcap_source_is_a_usage_error() -> None:
    pcap = REAL_PCAP / "vlp-16-test-90deg-1-50-frames.pcap"
    source = VelodyneSource(pcap=pcap, model="VLP-16")
    try:
        with pytest.raises(UsageError, match=r"wait_listening\(\) is for live sources"):
            await source.wait_listening()
    finally:
        await source.aclose()


def test_batcher_and_reorder_misuse_are_usage_errors() -> None:
    batcher: DynamicBatcher[int] = DynamicBatcher(max_batch=1, max_delay=10, capacity=1)
    batcher.push(1, now=0)
    with pytest.raises(UsageError, match=r"batcher queue is full \(1 items\)"):
        batcher.push(2, now=1)
    batcher.close()
    with pytest.raises(UsageError, match="push\\(\\) after close\\(\\)"):
        batcher.push(3, now=2)
    reorder: ReorderBuffer[int] = ReorderBuffer(window=1)
    reorder.admit()
    with pytest.raises(UsageError, match="reorder window full: 1 items outstanding"):
        reorder.admit()


def test_usage_error_is_still_a_runtime_error() -> None:
    assert issubclass(UsageError, RuntimeError)


BAD_ARGUMENTS: list[tuple[Callable[[], Any], str]] = [
    (lambda: ApproximateTime(["a", "b"], queue_size=0), r"queue_size must be >= 1, got 0"),
    (lambda: ExactTime(["a"], queue_size=0), r"queue_size must be >= 1, got 0"),
    (lambda: Nearest("c", ["a", "b"], tolerance=1), r"reference 'c' must be one of sensors"),
    (lambda: BatchWorker("m.onnx", replicas=0), r"replicas must be >= 1, got 0"),
    (lambda: DynamicBatcher(max_batch=0), r"max_batch must be >= 1, got 0"),
    (lambda: SyncHub(ExactTime(["a"]), max_latency=0), r"max_latency must be > 0 ns or None"),
    (lambda: OnlineClock(confirm_samples=0), r"confirm_samples must be >= 1, got 0"),
    (lambda: SensorSpec("cam", capacity=0), r"sensor 'cam': capacity must be >= 1, got 0"),
    (lambda: Recorder("never.hfr", chunk_bytes=0), r"chunk_bytes and max_pending must be >= 1"),
    (
        lambda: SnapshotRecorder("never.hfr", keep=0),
        r"keep must be > 0, pre and post >= 0 \(got 0",
    ),
    (
        lambda: VelodyneSource(pcap="x.pcap", port=2368, model="VLP-16"),
        r"give either pcap= \(offline\) or port=",
    ),
    (
        lambda: VideoSource("clip.mp4", rotate="left"),
        r"rotate must be 'auto' or 'none', got 'left'",
    ),
    (
        lambda: PointCloudFiles(str(REAL_PCAP / "*.pcd"), rate_hz=10, speed=0),
        r"speed must be > 0 or None",
    ),
]


@pytest.mark.parametrize(("build", "message"), BAD_ARGUMENTS, ids=[m for _, m in BAD_ARGUMENTS])
def test_a_bad_argument_is_a_config_error_and_a_value_error(
    build: Callable[[], Any], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message) as caught:
        build()
    assert isinstance(caught.value, ValueError)  # an ``except ValueError`` still catches it
    assert not list(tmp_path.iterdir())  # refused before anything was written


ROOT = Path(__file__).resolve().parents[1]
EXPORTING = ["fusion", "adapters", "adapters.video", "recordings", "recordings.hfr.video"]
EXPORTING += ["hyperframes.segments"]


def drawn_tree(text: str) -> list[tuple[str, str | None, str]]:
    """``(class, parent or None, defining module)`` for each line of the drawn tree."""
    lines = text.split("::\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    out: list[tuple[str, str | None, str]] = []
    stack: list[tuple[str, str]] = []  # (name, module) per depth
    for line in lines:
        body = line.removeprefix("    ")
        m = re.match(r"^((?:│   |    )*)(?:├── |└── )?(\w+)", body)
        assert m, line
        depth = len(m[1]) // 4 + (1 if body[len(m[1]) :].startswith(("├", "└")) else 0)
        named = re.search(r"\b((?:fusion|adapters|recordings|hyperframes)\.[\w.]+)\s*$", body)
        del stack[depth:]
        module = named[1] if named else stack[-1][1]
        out.append((m[2], stack[-1][0] if stack else None, module))
        stack.append((m[2], module))
    return out


TREE = drawn_tree(inspect.getdoc(importlib.import_module("fusion.errors")) or "")


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn = {name for name, _, _ in TREE}
    for name, parent, module in TREE:
        home = importlib.import_module(module)
        cls = getattr(home, name, None)
        assert inspect.isclass(cls), f"{name} is not in {module}"
        where = Path(inspect.getfile(home))
        files = where.parent.rglob("*.py") if where.name == "__init__.py" else [where]
        defined = [f for f in files if f"\nclass {name}(" in f.read_text(encoding="utf-8")]
        assert defined, f"{name} is drawn in {module}, defined elsewhere"
        if parent is not None:
            base = next(
                c
                for n, _, m in TREE
                if n == parent
                for c in [getattr(importlib.import_module(m), n)]
            )
            assert issubclass(cls, base), f"{name} is drawn under {parent}"
    public = set()
    for package in EXPORTING:
        module = importlib.import_module(package)
        for name in module.__all__:
            member = getattr(module, name)
            if inspect.isclass(member) and issubclass(member, BaseException):
                public.add(name)
    assert public == drawn, (
        f"exported but not drawn: {public - drawn}; drawn only: {drawn - public}"
    )
    assert {"HyperframesError", "UsageError"} == {n for n, p, _ in TREE if p is None}


def test_the_errors_page_draws_the_same_tree() -> None:
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    drawing = page.split("```\n", 2)[1]
    doc = inspect.getdoc(importlib.import_module("fusion.errors")) or ""
    tree = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    assert [line.removeprefix("    ") for line in tree.splitlines()] == drawing.splitlines()


def test_no_bare_runtime_error_is_raised_by_the_packages() -> None:
    """Misuse is a UsageError, a missing optional extra too (it names what to install)."""
    import ast

    raised = []
    for package in ("fusion", "adapters", "recordings", "hyperframes"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                exc = (
                    node.exc.func
                    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                    else None
                )
                if isinstance(exc, ast.Name) and exc.id == "RuntimeError":
                    raised.append(path.relative_to(ROOT).as_posix())
    assert raised == []
