"""Every real bag opens, and BagSource reads what an independent reader reads from it.

Each bag in ``shared/data/real/bags/`` and ``bags-rosbag2/`` is read by
BagSource and by :mod:`tests.interop.bagref` (the mcap reader, Python's
sqlite3, rosbags' ROS 1 reader; rosbags' type stores for the headers) in the
same test: per topic the same messages, log times and header stamps, every
message a frame or a counted loss, and the counts the bag's curators wrote
down (``expected.json``; for ``bags-rosbag2/``, which has none, our own
``tests/data/bags_rosbag2_expected.json``, computed with the mcap reader and
rosbags and checked here against them).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from adapters import BagSource
from fusion._ledger import LedgerStatistics
from tests.interop.bagref import reference

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / ".." / "shared" / "data" / "real"
OURS = REPO / "tests" / "data" / "bags_rosbag2_expected.json"


def real_bags() -> list[Path]:
    found = []
    for folder in ("bags", "bags-rosbag2"):
        if (REAL / folder).is_dir():
            found += sorted(
                p for p in (REAL / folder).iterdir() if p.suffix not in (".md", ".json")
            )
    return found


BAGS = real_bags()
UNDECODABLE = {
    # Synthetic images whose data is shorter than width x height says (rosbags-rs' test bag):
    # counted as undecodable, never a frame.
    "rosbags_rs_test_bag_sqlite3": {"/test/sensor_msgs/image", "/test/sensor_msgs/compressed_image"}
}

pytestmark = pytest.mark.skipif(not BAGS, reason=f"real bags not found in {REAL}")


def curated(path: Path) -> dict[str, int]:
    """topic -> count, as expected.json (or ours, for bags-rosbag2) writes it down."""
    if path.parent.name == "bags":
        entry = json.loads((REAL / "expected.json").read_text())["files"][f"bags/{path.name}"]
        topics = entry["expected"]["topics"]
    else:
        topics = json.loads(OURS.read_text())[path.name]["topics"]
    return {name: t["count"] for name, t in topics.items()}


async def read_all(source: BagSource) -> dict[str, list[tuple[int, int]]]:
    got: dict[str, list[tuple[int, int]]] = {}
    async with source:
        async for f in source.frames():
            assert f.t_arrival is not None
            got.setdefault(f.meta["topic"], []).append((f.t_arrival, f.t_sensor))
    return got


@pytest.mark.parametrize("path", BAGS, ids=[p.name for p in BAGS])
async def test_every_real_bag_reads_as_the_reference_reads_it(path: Path) -> None:
    want = reference(path)
    assert {t: len(v) for t, v in want.items()} == curated(path)
    source = BagSource(path)
    got = await read_all(source)
    ledgers = source.ledgers()
    undecodable = UNDECODABLE.get(path.name, set())
    for topic, messages in want.items():
        sensor = next((s.name for s in source.specs if s.meta["topic"] == topic), None)
        assert sensor is not None, f"{topic} is not read: {source.unsupported.get(topic)}"
        stats: LedgerStatistics = ledgers[sensor]
        assert stats.received == len(messages), topic
        assert stats.received == stats.emitted + stats.lost_total
        if topic in undecodable:
            assert stats.lost == {"undecodable": len(messages)}
            continue
        assert stats.lost == {}, (topic, stats.lost, source.reports[:3])
        frames = got.get(topic, [])
        assert Counter(frames) == Counter(messages), topic
        assert [t for t, _ in frames] == sorted(t for t, _ in frames)
    assert source.unsupported == {}
    assert set(source.errors) <= {"undecodable"}


def test_our_expectations_for_the_rosbag2_test_bags_are_what_the_readers_say() -> None:
    ours = {k: v for k, v in json.loads(OURS.read_text()).items() if not k.startswith("_")}
    assert set(ours) == {p.name for p in BAGS if p.parent.name == "bags-rosbag2"}
    for name, entry in ours.items():
        want = reference(REAL / "bags-rosbag2" / name)
        for topic, t in entry["topics"].items():
            assert len(want[topic]) == t["count"]
            if t["count"]:
                assert want[topic][0] == tuple(t["first"])
                assert want[topic][-1] == tuple(t["last"])


async def test_service_events_are_read_from_their_srv_schema() -> None:
    path = REAL / "bags-rosbag2" / "rosbag2_topics_and_services.mcap"
    if not path.exists():
        pytest.skip("no rosbag2_topics_and_services.mcap")
    source = BagSource(path, {"/add_two_ints/_service_event": "adder"})
    data = []
    async with source:
        async for f in source.frames():
            data.append(f.data)
    # request[<=1] and response[<=1]: one of them holds the call, the other is empty.
    requests = [(int(d["request.a"][0]), int(d["request.b"][0])) for d in data if "request.a" in d]
    sums = [int(d["response.sum"][0]) for d in data if "response.sum" in d]
    assert all(("request.a" in d) != ("response.sum" in d) for d in data)
    assert requests == [(1, 3), (2, 3), (3, 3)]
    assert sums == [4, 5, 6]
    assert [int(d["info.sequence_number"]) for d in data] == [1, 1, 2, 2, 3, 3]
