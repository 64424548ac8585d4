"""Damaged real bags: a damaged chunk costs that chunk, reported with its time range and
about how many messages it held; the rest is read, checked against rosbags reading the
intact bag (the independent reference); ``replay`` never exits 0 silently."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from adapters import BagSource

REPO = Path(__file__).resolve().parents[2]
BAGS = REPO / ".." / "shared" / "data" / "real" / "bags"
ROS1 = BAGS / "robot_localization_test2.bag"
SPLIT = BAGS / "rosbag2_wbag"

pytestmark = pytest.mark.skipif(not ROS1.exists(), reason=f"real bags not found in {BAGS}")


def reference(path: Path) -> list[tuple[str, int]]:
    """``(topic, log time)`` of every message, by rosbags alone."""
    from rosbags.highlevel import AnyReader

    with AnyReader([path]) as reader:
        return [(c.topic, t) for c, t, _ in reader.messages()]


async def read(path: Path) -> tuple[BagSource, list[tuple[str, int]]]:
    source = BagSource(path)
    got = []
    async with source:
        async for f in source.frames():
            got.append((f.meta["topic"], f.t_arrival))
    return source, got


def damage_ros1_chunk(tmp_path: Path, k: int) -> tuple[Path, tuple[int, int]]:
    from rosbags.rosbag1 import Reader

    with Reader(ROS1) as r:
        info = r.chunk_infos[k]
        chunk = r.chunks[info.pos]
    data = bytearray(ROS1.read_bytes())
    data[chunk.datapos + 1000 : chunk.datapos + 1400] = bytes(400)  # inside the bz2 stream
    out = tmp_path / "damaged.bag"
    out.write_bytes(bytes(data))
    return out, (info.start_time, info.end_time)


async def test_a_damaged_ros1_chunk_costs_that_chunk(tmp_path: Path) -> None:
    path, (a, b) = damage_ros1_chunk(tmp_path, 2)
    source, got = await read(path)
    intact = reference(ROS1)
    expected = [m for m in intact if not a <= m[1] <= b]
    assert Counter(got) == Counter(expected)
    assert len(intact) - len(got) == source.lost_messages == 1397
    # The chunk is a warning; its messages are each topic's shortfall against the index.
    assert dict(source.errors) == {"damaged_chunk": 1, "missing": 2}
    ledgers = source.ledgers()
    want = Counter(topic for topic, _ in intact)
    for stats in ledgers.values():
        assert stats.received == stats.emitted + stats.lost_total
    assert sum(s.lost.get("missing", 0) for s in ledgers.values()) == 1397
    assert {s: ledgers[s].received for s in ledgers} == {
        "imu_data": want["/imu/data"],
        "jackal_velocity_controller_odom": want["/jackal_velocity_controller/odom"],
    }
    damage = next(m for m in source.reports if "is damaged" in m)
    assert f"the chunk of log time {a}..{b} ns is damaged" in damage
    assert "about 1397 messages lost" in damage


def zero_mcap_chunk(tmp_path: Path) -> tuple[Path, tuple[int, int]]:
    """A copy of the split bag whose third file has its chunk zeroed (CRC and all)."""
    from rosbags.highlevel import AnyReader

    bag = tmp_path / "wbag"
    shutil.copytree(SPLIT, bag)
    with AnyReader([bag]) as reader:
        part = reader.readers[0].storage.storages[2]  # type: ignore[attr-defined]
        chunk = part.chunks[0]
        span = (chunk.message_start_time, chunk.message_end_time)
        file = Path(part.path)
    data = bytearray(file.read_bytes())
    start, length = chunk.chunk_start_offset, chunk.chunk_length
    data[start + 100 : start + length - 10] = bytes(length - 110)
    file.write_bytes(bytes(data))
    return bag, span


async def test_a_zeroed_mcap_chunk_of_a_split_bag_costs_that_chunk(tmp_path: Path) -> None:
    bag, span = zero_mcap_chunk(tmp_path)
    source, got = await read(bag)
    intact = reference(SPLIT)
    assert set(got) <= set(intact)
    assert not [m for m in got if span[0] < m[1] < span[1]]
    assert [m for m in intact if not span[0] <= m[1] <= span[1]] == [
        m for m in got if not span[0] <= m[1] <= span[1]
    ]
    assert len(got) == len(intact) - 1240
    assert source.errors["damaged_chunk"] == 1
    missing = {s: st.lost.get("missing", 0) for s, st in source.ledgers().items()}
    assert sum(missing.values()) == 1240
    lost = Counter(t for t, lt in intact if span[0] <= lt <= span[1]) - Counter(
        t for t, lt in got if span[0] <= lt <= span[1]
    )
    assert missing == {t.strip("/"): lost[t] for t in {t for t, _ in intact}}
    assert any("Data corruption detected" in m for m in source.reports)


def test_replay_of_a_damaged_bag_says_so_and_exits_1(tmp_path: Path) -> None:
    path, _ = damage_ros1_chunk(tmp_path, 2)
    proc = subprocess.run(
        [sys.executable, "-m", "hyperframes", "replay", str(path), "--fast"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out
    assert "replayed 4724 frames" in out
    assert "1 (damaged_chunk)" in out
    assert "its index says 3060 messages, 2361 were read (699 missing)" in out
