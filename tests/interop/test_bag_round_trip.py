"""Real bags through BagSource -> Recorder -> export (ros2, foxglove) -> rosbags and the mcap reader.

The reference is rosbags reading the bag itself (and ``expected.json``, made
with rosbags 0.11.9): every topic comes back with its type, its count, its
log times and messages equal field for field (header stamps included).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from adapters import BagSource
from recordings import Recorder
from recordings.export import export_recording
from tests.interop.rosmsgs import BAGS, EXPECTED, assert_same_message, read_bag, read_mcap_cdr

BAG_NAMES = sorted(p.name for p in BAGS.iterdir()) if BAGS.is_dir() else []
# rosbags yields none of rosbag2_talker's messages from its directory (QoS mismatch,
# expected.json); its MCAP alone is read below.
ROUND_TRIP = [n for n in BAG_NAMES if n != "rosbag2_talker"] + ["rosbag2_talker/talker.mcap"]


def expected(name: str) -> dict[str, Any]:
    files = json.loads(EXPECTED.read_text())["files"]
    return files[f"bags/{name.split('/')[0]}"]["expected"]  # type: ignore[no-any-return]


def record_bag(bag: Path, out: Path) -> tuple[Path, BagSource]:
    async def main() -> BagSource:
        source = BagSource(bag)
        with Recorder(out, sensors=source.specs) as rec:
            async with source:
                async for frame in source.frames():
                    rec.write(frame)
        return source

    return out, anyio.run(main)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, BagSource]]:
    root = tmp_path_factory.mktemp("bags")
    return {name: record_bag(BAGS / name, root / f"{name.replace('/', '_')}.hfr") for name in ROUND_TRIP}


def by_topic(messages: list[tuple[str, str, int, Any]]) -> dict[str, list[tuple[str, int, Any]]]:
    out: dict[str, list[tuple[str, int, Any]]] = {}
    for topic, msgtype, log_time, msg in messages:
        out.setdefault(topic, []).append((msgtype, log_time, msg))
    return out


@pytest.mark.skipif(not BAG_NAMES, reason="../shared/data/real/bags is not there")
@pytest.mark.parametrize("name", ROUND_TRIP)
@pytest.mark.parametrize("profile", ["ros2", "foxglove"])
def test_every_topic_round_trips_with_its_type_stamps_and_fields(
    recorded: dict[str, tuple[Path, BagSource]], tmp_path: Path, name: str, profile: str
) -> None:
    hfr, source = recorded[name]
    want = read_bag(BAGS / name)
    lost = sum(source.errors.values())  # messages whose decoded view failed, counted
    out = tmp_path / "out.mcap"
    report = export_recording(hfr, out, to=profile, groups="none")  # type: ignore[arg-type]
    assert report.skipped == {}
    assert report.frames_written == report.frames_read
    if profile == "ros2":  # rosbags reads the file as a ROS 2 bag
        from rosbags.highlevel import AnyReader

        with AnyReader([out]) as reader:
            got = by_topic(
                [
                    (c.topic, c.msgtype, t, reader.deserialize(raw, c.msgtype))
                    for c, t, raw in reader.messages()
                ]
            )
    else:
        got = by_topic([(tp, ty, lt, m) for tp, ty, lt, _, m in read_mcap_cdr(out)])
    facts = expected(name)["topics"]
    assert {t: len(m) for t, m in want.items()} == {
        t: f["count"] for t, f in facts.items() if f["count"]
    }
    errors_by_topic: dict[str, int] = {}
    for topic, messages in want.items():
        kept = got.get(topic, [])
        assert {t for t, _, _ in kept} <= {facts[topic]["msgtype"]}
        if len(kept) != len(messages):
            errors_by_topic[topic] = len(messages) - len(kept)
            continue
        for (log_time, msgtype, msg), (got_type, got_time, got_msg) in zip(
            messages, kept, strict=True
        ):
            assert got_type == msgtype == facts[topic]["msgtype"]
            assert got_time == log_time
            assert_same_message(msg, got_msg, topic)
    # Only messages whose decoded view failed are missing, exactly as many as were counted.
    assert sum(errors_by_topic.values()) == lost, errors_by_topic
    assert set(got) <= set(want)
