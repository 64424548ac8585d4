"""A TOML session of a camera, an ARS548 radar and CAN signals, run as CLI processes:
``record`` (the config), ``info``, ``replay --config`` (the same groups every time),
``sync`` with ``Nearest`` on the radar and on the camera (CAN signals joined in a window),
``export`` to ROS 2 and Foxglove MCAP (read back with the ``mcap`` reader: the radar a
point cloud, CAN signals typed series) and to Parquet.

Real data: the ARS548 lists of tier4/nebula's packet bag (restamped every 50 ms as
tests/config/test_radar_session.py does) and the CAN frames of cantools' own command-line
test (``candump`` output decoded with its ``socialledge.dbc``: SENSOR_SONARS 0x0C8 and
IO_DEBUG 0x1F4), restamped onto the same timeline and written as a candump log by
python-can; the camera is synthetic. Decoded values are checked against cantools decoding
python-can's read of that log, and against the decode cantools' test expects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import can
import cantools
import numpy as np
import pyarrow.parquet as pq
import pytest
from mcap.reader import make_reader

from adapters.radar import DETECTION_DTYPE
from fusion._frames import Frame, FrameGroup
from fusion._hub import SyncHub
from fusion._timing import VirtualClock, use_clock
from hyperframes.config import load_config
from hyperframes.config._factory import build_policy
from recordings import Replay, open_recording
from tests.adapters.radar_testdata import scan_capture

ROOT = Path(__file__).resolve().parents[2]
DBC = ROOT / "tests" / "data" / "can" / "socialledge.dbc"
MS = 1_000_000
SCANS = 20
SONARS = "bus.SENSOR_SONARS"
DEBUG = "bus.IO_DEBUG"
SENSORS = ["radar_detections", "cam", "radar_objects", SONARS, DEBUG]

# cantools tests/test_command_line.py (test_single_line_decode): real candump frames and
# the decode its test expects (IO_DEBUG_test_enum 2 is the choice "two")
FRAMES = {0x0C8: bytes.fromhex("F000000000000000"), 0x1F4: bytes.fromhex("01020304")}
EXPECTED = {
    "SENSOR_SONARS": {
        "SENSOR_SONARS_mux": 0,
        "SENSOR_SONARS_err_count": 15,
        "SENSOR_SONARS_left": 0.0,
        "SENSOR_SONARS_middle": 0.0,
        "SENSOR_SONARS_right": 0.0,
        "SENSOR_SONARS_rear": 0.0,
    },
    "IO_DEBUG": {
        "IO_DEBUG_test_unsigned": 1,
        "IO_DEBUG_test_enum": 2,
        "IO_DEBUG_test_signed": 3,
        "IO_DEBUG_test_float": 2.0,
    },
}

TOML = """
[sync]
policy = "nearest"
reference = "radar_detections"
sensors = {sensors}
tolerance_ms = 30
windows_ms = {{ "bus.SENSOR_SONARS" = [25, 24], "bus.IO_DEBUG" = [25, 24] }}

[[sources]]
type = "synthetic_camera"
name = "cam"
rate_hz = 20
duration_s = 1.0
realtime = false

[[sources]]
type = "radar"
name = "radar"
pcap = "{pcap}"

[[sources]]
type = "can"
name = "bus"
path = "{log}"
database = "{dbc}"
"""


def cli(*args: str, rc: int = 0) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert done.returncode == rc, out
    return out


def can_log(path: Path) -> Path:
    """SENSOR_SONARS every 10 ms from 2 ms, IO_DEBUG every 20 ms from 7 ms, for 1 s."""
    with can.Logger(str(path)) as writer:
        for k in range(100):
            writer.on_message_received(
                can.Message(
                    timestamp=0.002 + k * 0.01,
                    arbitration_id=0x0C8,
                    is_extended_id=False,
                    data=FRAMES[0x0C8],
                    channel="vcan0",
                )
            )
            if k % 2 == 0:
                writer.on_message_received(
                    can.Message(
                        timestamp=0.007 + k * 0.01,
                        arbitration_id=0x1F4,
                        is_extended_id=False,
                        data=FRAMES[0x1F4],
                        channel="vcan0",
                    )
                )
    return path


def session(tmp_path: Path) -> tuple[Path, Path]:
    pcap = tmp_path / "ars548.pcap"
    scan_capture(pcap, SCANS)
    log = can_log(tmp_path / "bus.log")
    config = tmp_path / "session.toml"
    config.write_text(TOML.format(sensors=json.dumps(SENSORS), pcap=pcap, log=log, dbc=DBC))
    return config, log


Groups = list[tuple[int, tuple[tuple[str, tuple[int, ...]], ...]]]


def members(group: FrameGroup) -> tuple[tuple[str, tuple[int, ...]], ...]:
    out = []
    for sensor, got in sorted(group.frames.items()):
        frames: list[Frame] = got if isinstance(got, list) else [got]
        out.append((sensor, tuple(f.seq for f in frames)))
    return tuple(out)


async def replayed_groups(hfr: Path, config: Path, reference: str) -> Groups:
    sync = load_config(config).sync.model_copy(update={"reference": reference})
    hub = SyncHub(build_policy(sync, SENSORS))
    clock = VirtualClock()
    out: Groups = []
    with use_clock(clock):
        async with clock.autojump(), Replay(hfr, speed=None) as replay, hub.open([replay]) as gs:
            async for g in gs:
                out.append((g.t, members(g)))
    return out


def mcap_topics(path: Path) -> dict[str, list[tuple[Any, bytes]]]:
    topics: dict[str, list[tuple[Any, bytes]]] = {}
    with path.open("rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(log_time_order=False):
            topics.setdefault(channel.topic, []).append((schema, message.data))
    return topics


@pytest.mark.timeout(300)
def test_camera_radar_and_can_signals_record_replay_sync_and_export(tmp_path: Path) -> None:
    config, log = session(tmp_path)
    hfr = tmp_path / "session.hfr"
    out = cli("record", str(config), "-o", str(hfr))
    # the DBC's messages this bus never sends are optional: noted, not a failure
    assert "bus.MOTOR_CMD (optional) produced no frame" in out

    info = cli("info", str(hfr))
    for sensor in ("radar_detections", "radar_objects", "cam", SONARS, DEBUG):
        assert sensor in info

    # the groups: the same over repeated replays, as the offline sync computes them
    db: Any = cantools.database.load_file(str(DBC))
    sent = list(can.LogReader(str(log)))
    t_sonars = [round(m.timestamp * 1e9) for m in sent if m.arbitration_id == 0x0C8]
    runs = [anyio.run(replayed_groups, hfr, config, "radar_detections") for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == SCANS
    for t, group in runs[0]:
        got = dict(group)
        assert sorted(got) == sorted(SENSORS)
        window = tuple(k for k, ts in enumerate(t_sonars) if t - 25 * MS <= ts <= t + 24 * MS)
        assert got[SONARS] == window
    for _ in range(2):  # the CLI replay through the config's sync: every group, each time
        assert "replayed 360 frames into 20 groups" in cli(
            "replay", str(hfr), "--config", str(config), "-r", "max", "-q"
        )

    def offline(reference: str, name: str) -> Any:
        target = tmp_path / name
        cli(
            "sync", str(hfr), "--policy", "nearest", "--reference", reference,
            "--sensors", *SENSORS, "--tolerance", "30ms",
            "--window", f"{SONARS}=25ms:24ms", "--window", f"{DEBUG}=25ms:24ms", "-o", str(target),
        )  # fmt: skip
        return pq.read_table(target)

    on_radar = [offline("radar_detections", f"radar{k}.parquet") for k in range(2)]
    assert on_radar[0].equals(on_radar[1])
    assert on_radar[0].column("t").to_pylist() == [t for t, _ in runs[0]]
    assert on_radar[0].column(f"{SONARS}_seq").to_pylist() == [
        list(dict(g)[SONARS]) for _, g in runs[0]
    ]
    # Nearest on the camera: a group per camera frame, the radar within 30 ms of it
    on_cam = offline("cam", "cam.parquet")
    cam_groups = anyio.run(replayed_groups, hfr, config, "cam")
    assert on_cam.num_rows == len(cam_groups) == 20
    assert on_cam.column("radar_detections_seq").to_pylist() == list(range(SCANS))
    assert on_cam.column(f"{DEBUG}_seq").to_pylist() == [
        list(dict(g)[DEBUG]) for _, g in cam_groups
    ]

    # ROS 2 MCAP: the radar as PointCloud2, CAN signals as typed records
    ros = tmp_path / "session.mcap"
    cli("export", str(hfr), "-o", str(ros))
    topics = mcap_topics(ros)
    assert {s.name for s, _ in topics["/radar_detections"]} == {"sensor_msgs/msg/PointCloud2"}
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    cloud: Any = store.deserialize_cdr(
        topics["/radar_detections"][0][1], "sensor_msgs/msg/PointCloud2"
    )
    assert cloud.width * cloud.height == 308
    recorded = next(open_recording(hfr).frames(sensors=["radar_detections"]))
    assert np.frombuffer(bytes(cloud.data), DETECTION_DTYPE).tobytes() == recorded.data.tobytes()
    for sensor, message in ((SONARS, "SENSOR_SONARS"), (DEBUG, "IO_DEBUG")):
        schema = topics[f"/{sensor}"][0][0]
        assert schema.name.startswith("hyperframes_msgs/msg/")
        store.register(get_types_from_msg(schema.data.decode().split("\n=====")[0], schema.name))
        rows = [store.deserialize_cdr(data, schema.name) for _, data in topics[f"/{sensor}"]]
        frames = [m for m in sent if m.arbitration_id == db.get_message_by_name(message).frame_id]
        assert len(rows) == len(frames)
        for row, m in zip(rows, frames, strict=True):
            decoded = db.decode_message(m.arbitration_id, m.data, decode_choices=False)
            for name, value in decoded.items():
                assert getattr(row, name.lower()) == value == EXPECTED[message][name]

    # Foxglove: foxglove.PointCloud, and CAN signals as JSON with numeric fields to plot
    fox = tmp_path / "session.fox.mcap"
    cli("export", str(hfr), "-o", str(fox), "--profile", "foxglove")
    topics = mcap_topics(fox)
    assert {s.name for s, _ in topics["/radar_detections"]} == {"foxglove.PointCloud"}
    assert {s.name for s, _ in topics["/radar_objects"]} == {"foxglove.PointCloud"}
    assert len(topics["/radar_detections"]) == SCANS
    for sensor, message in ((SONARS, "SENSOR_SONARS"), (DEBUG, "IO_DEBUG")):
        schema = topics[f"/{sensor}"][0][0]
        assert schema.encoding == "jsonschema"
        properties = json.loads(schema.data)["properties"]
        for name in EXPECTED[message]:
            assert properties[name]["type"] in ("number", "integer")
        records = [json.loads(data) for _, data in topics[f"/{sensor}"]]
        assert len(records) == sum(
            1 for m in sent if m.arbitration_id == db.get_message_by_name(message).frame_id
        )
        for record in records:
            for name, value in EXPECTED[message].items():
                assert record[name] == value

    # Parquet: the CAN signals and the radar detections as tables
    tables = tmp_path / "tables"
    cli("export", str(hfr), "-o", str(tables), "--to", "parquet")
    sonars = pq.read_table(tables / f"{SONARS}.parquet")
    assert sonars.column("t_sensor").to_pylist() == t_sonars
    assert sonars.column("SENSOR_SONARS_err_count").to_pylist() == [15] * len(t_sonars)
    detections = pq.read_table(tables / "radar_detections.parquet")
    assert detections.num_rows == SCANS * 308
    assert detections.column("seq").to_pylist()[::308] == list(range(SCANS))
    assert np.allclose(detections.column("x").to_numpy()[:308], recorded.data["x"])
