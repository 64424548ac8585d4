"""Our MCAP exports read by the reference TypeScript reader, ``@mcap/core``, under Node.

Both export profiles (``ros2`` and ``foxglove``) of a recording with a camera,
a LiDAR, an IMU, a GNSS receiver and a wheel-speed series, plus sync groups,
and of a recording made from a real bag (``rosbag2_cdr_test_0.mcap``), are
read by ``@mcap/core``'s indexed reader (``McapIndexedReader``, through the
summary and chunk indexes) and its stream reader (``McapStreamReader``, every
record in file order, CRCs checked), with Foxglove's own zstd/lz4
decompressors (tests/peers/mcap_read.mjs). Each must find exactly what the
``mcap`` Python reader finds, message for message (topic, log and publish
time, sequence, bytes), and ``hyperframes info`` and ``BagSource`` must count
the same messages per topic.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from adapters import BagSource
from adapters.bags import read_bag_summary
from recordings import Recorder
from recordings.outputs._export import export_recording
from tests.interop.test_export_mcap import recording  # noqa: F401 (fixture)
from tests.interop.test_mcap_conformance import PEERS, node_tool

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "bags"


def node_read(path: Path, mode: str) -> dict[str, Any]:
    node_tool("tsx")  # the peers are installed
    run = subprocess.run(
        ["node", str(PEERS / "mcap_read.mjs"), str(path), mode],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PEERS,
    )
    assert run.returncode == 0, run.stderr
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def python_read(path: Path) -> dict[str, Any]:
    """The same document from the ``mcap`` Python reader."""
    from mcap.reader import make_reader

    with path.open("rb") as f:
        reader = make_reader(f)
        profile = reader.get_header().profile
        messages = [
            {
                "topic": channel.topic,
                "sequence": m.sequence,
                "log_time": str(m.log_time),
                "publish_time": str(m.publish_time),
                "data_hex": m.data.hex(),
            }
            for _schema, channel, m in reader.iter_messages(log_time_order=True)
        ]
        summary = reader.get_summary()
        assert summary is not None
        channels = sorted(
            (c.topic, c.message_encoding, summary.schemas[c.schema_id].name if c.schema_id else "")
            for c in summary.channels.values()
        )
    return {"profile": profile, "messages": messages, "channels": channels}


def _msg_key(m: dict[str, Any]) -> tuple[Any, ...]:
    return (int(m["log_time"]), m["topic"], m["sequence"], m["publish_time"], m["data_hex"])


def check_against_peers(path: Path) -> None:
    want = python_read(path)
    assert want["messages"], "the export holds messages"
    for mode in ("indexed", "streamed"):
        got = node_read(path, mode)
        assert got["profile"] == want["profile"]
        schemas = {s["id"]: s["name"] for s in got["schemas"]}
        assert (
            sorted(
                (c["topic"], c["message_encoding"], schemas.get(c["schema_id"], ""))
                for c in got["channels"]
            )
            == want["channels"]
        )
        # indexed: log-time order; streamed: file order, the same messages
        assert sorted(map(_msg_key, got["messages"])) == sorted(map(_msg_key, want["messages"]))
        if mode == "indexed":
            assert [int(m["log_time"]) for m in got["messages"]] == sorted(
                int(m["log_time"]) for m in want["messages"]
            )
    per_topic = Counter(m["topic"] for m in want["messages"])
    info = read_bag_summary(path)
    assert {t.name: t.count for t in info.topics} == per_topic
    assert {t.name: t.read for t in info.topics} == per_topic
    assert info.damage == ()
    source = BagSource(path)

    async def frames() -> Counter[str]:
        return Counter([f.meta["topic"] async for f in source.frames()])

    try:
        assert anyio.run(frames) == per_topic
        assert source.reports == []
    finally:
        source.close()


@pytest.mark.parametrize("profile", ["ros2", "foxglove"])
def test_exports_read_by_mcap_core_indexed_and_streamed(
    recording: Path,  # noqa: F811
    tmp_path: Path,
    profile: Literal["ros2", "foxglove"],
) -> None:
    out = tmp_path / f"{profile}.mcap"
    export_recording(recording, out, to=profile)
    check_against_peers(out)


@pytest.fixture(scope="module")
def real_bag_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rosbag2_cdr_test_0.mcap (a real rosbag2 MCAP) recorded as .hfr by BagSource."""
    path = tmp_path_factory.mktemp("realbag") / "real.hfr"
    source = BagSource(SHARED / "rosbag2_cdr_test_0.mcap")

    async def record() -> None:
        with Recorder(path, sensors=list(source.specs)) as rec:
            async for frame in source.frames():
                rec.write(frame)

    try:
        anyio.run(record)
    finally:
        source.close()
    return path


@pytest.mark.parametrize("profile", ["ros2", "foxglove"])
def test_exports_of_a_real_bag_read_by_mcap_core(
    real_bag_recording: Path, tmp_path: Path, profile: Literal["ros2", "foxglove"]
) -> None:
    out = tmp_path / f"{profile}.mcap"
    report = export_recording(real_bag_recording, out, to=profile)
    assert report.skipped == {}
    check_against_peers(out)
