"""An Ouster capture through the CLI: a TOML ``type = "ouster"`` source recorded with
``hyperframes record``, then ``info``, ``replay``, ``sync``, ``open_source`` and
``export`` to ROS 2 MCAP, whose PointCloud2 and Imu messages are read back with the
mcap reader and rosbags."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
from lidar_testdata import write_pcap
from ouster_testdata import OUSTER_JSON, stream

from adapters.lidar import OUSTER_DTYPE
from hyperframes.cli import main
from recordings import open_recording


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("ouster")
    write_pcap(tmp / "s.pcap", stream(3))
    config = tmp / "ouster.toml"
    config.write_text(
        f"""
[[sources]]
type = "ouster"
name = "os1"
metadata = "{OUSTER_JSON}"
pcap = "{tmp / "s.pcap"}"

[sync]
policy = "nearest"
reference = "os1"
sensors = ["os1", "os1_imu"]
tolerance_ms = 20
"""
    )
    out = tmp / "os1.hfr"
    assert main(["record", str(config), "-o", str(out), "--quiet"]) == 0
    return out


def test_record_and_info_show_both_sensors_and_their_ledgers(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_recording(recorded) as log:
        counts = {n: x.count for n, x in log.summary().sensors.items()}
    assert counts == {"os1": 3, "os1_imu": 30}
    capsys.readouterr()
    assert main(["info", str(recorded), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    text = json.dumps(doc)
    assert '"os1_imu"' in text
    assert '"received": 192' in text  # the three scans' 64 datagrams each, in the ledger


def test_replay_sync_and_open_source_give_the_recorded_scans(
    recorded: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["replay", str(recorded), "-r", "max", "--quiet"]) == 0
    out = tmp_path / "groups.hfr"
    code = main(
        [
            *("sync", str(recorded), "--policy", "nearest", "--reference", "os1"),
            *("--sensors", "os1", "os1_imu", "--tolerance", "20ms", "-o", str(out), "--quiet"),
        ]
    )
    assert code == 0
    with open_recording(out) as log:
        assert {n: x.count for n, x in log.summary().sensors.items()} == {"os1": 3, "os1_imu": 3}

    import anyio

    from recordings._open import open_source

    async def scans() -> list[np.ndarray]:
        async with open_source(recorded, speed=None, sensors=["os1"]) as source:
            return [frame.data async for frame in source.frames()]

    got = anyio.run(scans)
    assert [len(s) for s in got] == [27310] * 3
    assert all(s.dtype == OUSTER_DTYPE for s in got)


def test_export_writes_pointcloud2_with_the_ouster_fields_and_imu(
    recorded: Path, tmp_path: Path
) -> None:
    from mcap.reader import make_reader
    from rosbags.typesys import Stores, get_typestore

    mcap = tmp_path / "os1.mcap"
    assert main(["export", str(recorded), "-o", str(mcap), "--groups", "none", "--quiet"]) == 0
    store = get_typestore(Stores.ROS2_HUMBLE)
    clouds, imus = [], []
    with open(mcap, "rb") as f:
        for schema, _channel, message in make_reader(f).iter_messages():
            assert schema is not None
            if schema.name == "sensor_msgs/msg/PointCloud2":
                clouds.append(store.deserialize_cdr(message.data, schema.name))
            elif schema.name == "sensor_msgs/msg/Imu":
                imus.append(store.deserialize_cdr(message.data, schema.name))
    assert len(clouds) == 3
    assert len(imus) == 30
    cloud = clouds[0]
    assert [f.name for f in cloud.fields] == list(OUSTER_DTYPE.names or ())
    assert (cloud.width, cloud.point_step) == (27310, OUSTER_DTYPE.itemsize)
    points = np.frombuffer(cloud.data.tobytes(), OUSTER_DTYPE)
    assert points["range"].min() > 0
    assert imus[7].linear_acceleration.x == pytest.approx(0.07 * 9.80665)
    assert imus[7].angular_velocity.z == pytest.approx(np.deg2rad(1.75))
