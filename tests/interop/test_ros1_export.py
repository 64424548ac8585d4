"""``export -o x.bag`` writes a ROS 1 bag that the real ``rosbag`` reads, value for value.

The reader is Debian's ``python3-rosbag`` (ROS 1's own ``rosbag`` Python API,
with ``genpy`` building each message class from the bag's stored
definition), run by the system Python in a subprocess
(tests/peers/rosbag_dump.py). Checked:

* a recording of a camera, a LiDAR, an IMU, a GNSS receiver and a wheel-speed
  series exported by the CLI to ``out.bag``: every message is what the
  ``ros2`` MCAP export of the same recording holds (read by ``rosbags``), field
  for field, the ROS 1 names of renamed fields matched, ``Header.seq`` the
  frame's ``seq``; the standard types carry Noetic's MD5s;
* real ROS 1 bags (../shared/data/real/bags) read by BagSource, recorded and
  exported back to ``.bag``: every message's bytes and MD5 are the original
  bag's, as ``rosbag`` reads both;
* bz2 and lz4 chunks; ``--format ros2`` (and any name without ``.bag``) still
  writes a rosbag2 directory.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import BagSource
from recordings import Recorder, open_recording
from recordings.outputs._export import export_recording
from recordings.outputs.files._ros1_bag import Ros1BagWriter
from tests.interop.test_export_mcap import recording  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
DUMP = ROOT / "tests" / "peers" / "rosbag_dump.py"
BAGS = ROOT.parent / "shared" / "data" / "real" / "bags"
SYSTEM_PYTHON = "/usr/bin/python3"


def rosbag_read(path: Path) -> dict[str, Any]:
    """The bag as the real rosbag API reads it."""
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import rosbag"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        pytest.fail(
            "the real rosbag API is missing from the system Python: run `make test` "
            f"(apt-get install python3-rosbag): {probe.stderr.strip()[-200:]}"
        )
    run = subprocess.run(
        [SYSTEM_PYTHON, str(DUMP), str(path)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def plain(value: Any) -> Any:
    """A rosbags message as the dump's nested dicts (byte arrays as hex, keys lower case)."""
    if hasattr(value, "__dataclass_fields__"):
        if type(value).__name__.startswith("builtin_interfaces__msg__"):
            return {"sec": int(value.sec), "nanosec": int(value.nanosec)}
        return {
            f.name.lower(): plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            # not rosbags' __msgtype__, nor the constants (upper case in ROS 2)
            if not f.name.startswith("__") and not f.name.isupper()
        }
    if isinstance(value, np.ndarray):
        if value.dtype == np.uint8:
            return {"hex": value.tobytes().hex()}
        return [plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, np.generic):
        return value.item()
    return value


def lowered(value: Any, *, seq: bool = False) -> Any:
    """The dump's values with keys in lower case, ``Header.seq`` left out unless ``seq``."""
    if isinstance(value, dict):
        return {
            k.lower(): lowered(v, seq=seq)
            for k, v in value.items()
            if seq or not (k == "seq" and "frame_id" in value)
        }
    if isinstance(value, list):
        return [lowered(v, seq=seq) for v in value]
    return value


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two nested values differ (paths), for a readable failure."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        return [d for k in keys for d in _diff(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _diff(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {str(a)[:60]} != {str(b)[:60]}"]


def test_cli_bag_is_ros1_read_by_rosbag_value_for_value(
    recording: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from rosbags.highlevel import AnyReader

    out = tmp_path / "out.bag"
    run = subprocess.run(
        [sys.executable, "-m", "hyperframes", "export", str(recording), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert out.read_bytes()[:13] == b"#ROSBAG V2.0\n"  # a file, ROS 1 bag format 2.0
    bag = rosbag_read(out)
    assert bag["version"] == 200
    mcap = tmp_path / "out.mcap"
    export_recording(recording, mcap, to="ros2")
    with AnyReader([mcap]) as reader:
        want = [
            (conn.topic, t, plain(reader.deserialize(raw, conn.msgtype)))
            for conn, t, raw in reader.messages()
        ]
        ros2_types = {c.topic: c.msgtype for c in reader.connections}
    got = [(m["topic"], m["time"], lowered(m["values"])) for m in bag["messages"]]
    assert len(got) == len(want) > 200
    got.sort(key=repr)
    want.sort(key=repr)
    diff = [(g[:2], _diff(g[2], w[2])) for g, w in zip(got, want, strict=True) if g != w]
    assert diff == []
    from rosbags.typesys import Stores, get_typestore

    noetic = get_typestore(Stores.ROS1_NOETIC)
    for conn in bag["connections"]:
        name = ros2_types[conn["topic"]]
        assert conn["type"] == name.replace("/msg/", "/")
        if name in noetic.fielddefs:  # the standard types: Noetic's own MD5 and definition
            assert conn["md5sum"] == noetic.generate_msgdef(name)[1]
    # Header.seq is the frame's seq (the IMU's messages count up from its first frame)
    with open_recording(recording) as log:
        imu_seqs = [f.seq for f in log.frames(["imu"])]
    seqs = [m["values"]["header"]["seq"] for m in bag["messages"] if m["topic"] == "/imu"]
    assert seqs == imu_seqs


def _record(bag: Path, out: Path) -> None:
    source = BagSource(bag)

    async def run() -> None:
        with Recorder(out, sensors=list(source.specs)) as rec:
            async for frame in source.frames():
                rec.write(frame)

    try:
        anyio.run(run)
    finally:
        source.close()


@pytest.mark.parametrize(
    "name", ["rosbagjs_example-bz2.bag", "robot_localization_test2.bag", "webviz_only-a-cube.bag"]
)
def test_real_ros1_bag_round_trips_byte_for_byte_through_rosbag(name: str, tmp_path: Path) -> None:
    original = BAGS / name
    hfr = tmp_path / "rec.hfr"
    _record(original, hfr)
    out = tmp_path / "back.bag"
    report = export_recording(hfr, out, to="ros1", groups="none")
    assert report.skipped == {}
    before, after = rosbag_read(original), rosbag_read(out)

    def messages(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((m["topic"], m["time"], m["md5sum"], m["raw"]) for m in doc["messages"])

    assert messages(after) == messages(before)
    assert Counter(m["topic"] for m in after["messages"]) == Counter(
        m["topic"] for m in before["messages"]
    )
    types = {c["topic"]: (c["type"], c["md5sum"]) for c in before["connections"]}
    assert {c["topic"]: (c["type"], c["md5sum"]) for c in after["connections"]} == types


@pytest.mark.parametrize("compression", ["bz2", "lz4"])
def test_compressed_chunks_read_by_rosbag(
    recording: Path,  # noqa: F811
    tmp_path: Path,
    compression: str,
) -> None:
    out = tmp_path / f"{compression}.bag"
    with open_recording(recording) as log, Ros1BagWriter(out, compression=compression) as w:
        specs = log.summary().sensors
        for spec in specs.values():
            w.declare(spec.spec)
        frames = [f for f in log.frames() if w.write(f, specs[f.sensor].spec.kind)]
    bag = rosbag_read(out)
    assert bag["compression"] == [compression]
    assert len(bag["messages"]) == sum(w.counts.values()) >= len(frames) > 0


def test_format_ros2_still_writes_a_rosbag2_directory(
    recording: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from rosbags.rosbag2 import Reader

    out = tmp_path / "dir.bag"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "hyperframes",
            "export",
            str(recording),
            "-o",
            str(out),
            "--format",
            "ros2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert (out / "metadata.yaml").is_file()
    with Reader(out) as reader:
        assert reader.message_count > 200
