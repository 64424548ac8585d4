"""A TOML session of a camera and an ARS548 radar: recorded, grouped with ``Nearest`` on the
radar, replayed deterministically, exported to ROS 2 and Foxglove MCAP and read back with
the ``mcap`` library (not ours)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters.radar import DETECTION_DTYPE
from fusion._frames import FrameGroup
from fusion._hub import SyncHub
from fusion._timing import VirtualClock, use_clock
from hyperframes.config import build_pipeline, load_config
from hyperframes.config._factory import build_policy, build_source
from recordings import Replay, open_recording
from tests.adapters.radar_testdata import scan_capture

MS = 1_000_000
SCANS = 20

TOML = """
[sync]
policy = "nearest"
reference = "radar_detections"
sensors = ["radar_detections", "cam", "radar_objects"]
tolerance_ms = 30

[[sources]]
type = "synthetic_camera"
name = "cam"
rate_hz = 20
duration_s = 1.2
realtime = false

[[sources]]
type = "radar"
name = "radar"
pcap = "{pcap}"
"""


def _config(tmp_path: Path) -> Path:
    pcap = tmp_path / "ars548.pcap"
    scan_capture(pcap, SCANS)
    path = tmp_path / "session.toml"
    path.write_text(TOML.format(pcap=pcap))
    return path


Groups = list[tuple[int, tuple[tuple[str, int], ...]]]


async def _groups(sources: list[Any], config: Path) -> Groups:
    hub = SyncHub(
        build_policy(load_config(config).sync, ["radar_detections", "cam", "radar_objects"])
    )
    out: list[FrameGroup] = []
    async with hub.open(sources) as groups:
        async for g in groups:
            out.append(g)
    return [
        (g.t, tuple(sorted((s, f.seq) for s, f in g.frames.items() if not isinstance(f, list))))
        for g in out
    ]


def _hyperframes(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.timeout(240)
def test_a_camera_and_radar_session_records_replays_the_same_groups_and_exports(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    out = tmp_path / "session.hfr"
    pipeline = build_pipeline(load_config(config), recorder_path=out)

    async def record() -> object:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await pipeline.run()

    stats = anyio.run(record)
    assert stats.hub.sensors["radar_detections"].frames_in == SCANS  # type: ignore[attr-defined]

    log = open_recording(out)
    radar = list(log.frames(sensors=["radar_detections"]))
    assert len(radar) == SCANS
    assert radar[0].data.dtype == DETECTION_DTYPE
    assert len(radar[0].data) == 308
    assert [f.t_sensor for f in radar] == [10 * MS + k * 50 * MS for k in range(SCANS)]

    # the groups of the sources themselves, and of the recording replayed ten times
    async def live() -> Groups:
        cfg = load_config(config)
        return await _groups([build_source(s) for s in cfg.sources], config)

    async def replayed() -> Groups:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump(), Replay(out, speed=None) as replay:
                return await _groups([replay], config)

    direct = anyio.run(live)
    runs = [anyio.run(replayed) for _ in range(5)]
    assert len({tuple(r) for r in runs}) == 1
    assert runs[0] == direct
    assert len(direct) == SCANS
    for _t, members in direct:
        assert [s for s, _seq in members] == ["cam", "radar_detections", "radar_objects"]

    # ROS 2 MCAP: PointCloud2 with the radar's fields; Foxglove: foxglove.PointCloud
    from mcap.reader import make_reader

    ros = tmp_path / "session.mcap"
    _hyperframes("export", str(out), "-o", str(ros))
    with ros.open("rb") as f:
        reader = make_reader(f)
        topics: dict[str, list[bytes]] = {}
        schemas: dict[str, str] = {}
        for schema, channel, message in reader.iter_messages():
            topics.setdefault(channel.topic, []).append(message.data)
            schemas[channel.topic] = schema.name if schema else ""
    radar_topic = next(t for t in topics if t.endswith("radar_detections"))
    assert schemas[radar_topic] == "sensor_msgs/msg/PointCloud2"
    assert len(topics[radar_topic]) == SCANS
    from rosbags.typesys import Stores, get_typestore

    msg: Any = get_typestore(Stores.ROS2_HUMBLE).deserialize_cdr(
        topics[radar_topic][0], "sensor_msgs/msg/PointCloud2"
    )
    names = [f.name for f in msg.fields]
    assert names[:7] == ["x", "y", "z", "range", "azimuth", "elevation", "range_rate"]
    assert msg.width * msg.height == 308
    assert msg.point_step == DETECTION_DTYPE.itemsize
    points = np.frombuffer(bytes(msg.data), DETECTION_DTYPE)
    assert points.tobytes() == radar[0].data.tobytes()
    objects_topic = next(t for t in topics if t.endswith("radar_objects"))
    assert schemas[objects_topic] == "sensor_msgs/msg/PointCloud2"

    fox = tmp_path / "session.fox.mcap"
    _hyperframes("export", str(out), "-o", str(fox), "--profile", "foxglove")
    with fox.open("rb") as f:
        reader = make_reader(f)
        counts: dict[str, int] = {}
        fox_schemas: dict[str, str] = {}
        for schema, channel, _message in reader.iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            fox_schemas[channel.topic] = schema.name if schema else ""
    radar_topic = next(t for t in counts if t.endswith("radar_detections"))
    assert fox_schemas[radar_topic] == "foxglove.PointCloud"
    assert counts[radar_topic] == SCANS


def test_a_radar_table_takes_exactly_one_input(tmp_path: Path) -> None:
    from fusion.errors import ConfigError

    path = tmp_path / "bad.toml"
    path.write_text('[[sources]]\ntype = "radar"\nname = "r"\npcap = "a.pcap"\nport = 42102\n')
    with pytest.raises(ConfigError, match=r"exactly one of 'pcap' .* found \['pcap', 'port'\]"):
        load_config(path)
