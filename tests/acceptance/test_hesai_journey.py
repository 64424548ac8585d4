"""A live Hesai PandarXT32 on loopback: tier4/nebula's real packets as a pcap (each stamped
with its own firing time) replayed over UDP at that rate (senders.py pcap),
``hyperframes record`` with a TOML ``type = "hesai"`` source in a pseudo-terminal, Ctrl-C;
then ``info --json`` (the ledger), ``replay``, ``sync`` and ``export`` (ROS 2 and Foxglove
MCAP, read back with the mcap reader, rosbags and protobuf from the file's own schema)
on the recording, each compared with the same pcap decoded as a file.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow.parquet as pq
import pytest

from adapters import HesaiSource
from adapters.lidar._hesai_decode import HESAI_DTYPE
from fusion._frames import Frame
from recordings import open_recording
from tests.acceptance.live_helpers import (
    Recording,
    free_port,
    hyperframes,
    info_json,
    python_sender,
    sent_count,
    stopping,
    wait_udp_bound,
)
from tests.adapters.hesai_ptc_server import PtcServer, ptc_server
from tests.adapters.hesai_testdata import SHARED, sensor_timed_pcap

pytestmark = [pytest.mark.timeout(180), pytest.mark.serial]

PACKETS = 2000  # 0.4 s of an XT32 (dual return): 4 whole sweeps between two partial ones


def test_a_live_hesai_records_every_sweep_as_the_file_decodes(tmp_path: Path) -> None:
    pcap = sensor_timed_pcap("xt32", "PandarXT32", tmp_path)

    async def decode_file() -> list[Frame]:
        return [f async for f in HesaiSource(pcap, name="xt32").frames()]

    offline = anyio.run(decode_file)
    assert [f.meta["partial"] for f in offline] == [True, False, False, False, True]
    port = free_port()
    config = tmp_path / "hesai.toml"
    config.write_text(
        f'[[sources]]\ntype = "hesai"\nname = "xt32"\nport = {port}\nclock = "online"\n\n'
        '[sync]\npolicy = "nearest"\nreference = "xt32"\nsensors = ["xt32"]\n'
    )
    out = tmp_path / "hesai.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to", timeout=60)
    wait_udp_bound(port)
    sender = python_sender("pcap", str(port), str(pcap))
    with stopping(sender):
        sent, _ = sender.proc.communicate(timeout=60)  # it ends after one pass
    assert sent_count(sent) == PACKETS
    time.sleep(0.5)
    code, _ = rec.stop(signal.SIGINT)
    assert code == 0, rec.text[-3000:]

    # every packet received; the sweep still open at Ctrl-C is counted, not left pending
    last = offline[-1].meta["packets"]
    doc = info_json(out)
    ledger = doc["ledger"]["xt32"]
    assert ledger["received"] == PACKETS
    assert ledger["emitted"] == PACKETS - last
    assert ledger["lost"] == {"incomplete": last}
    assert doc["sensors"]["xt32"]["kind"] == "lidar"
    assert doc["sensors"]["xt32"]["frames"] == len(offline) - 1

    with open_recording(out) as recording:
        recorded = list(recording.frames())
    assert [(f.seq, f.t_sensor) for f in recorded] == [(f.seq, f.t_sensor) for f in offline[:-1]]
    for live, file in zip(recorded, offline, strict=False):
        assert live.data.dtype == HESAI_DTYPE
        assert live.data.tobytes() == file.data.tobytes()
        assert live.meta["partial"] == file.meta["partial"]
        assert live.t_arrival is not None

    replay = hyperframes("replay", str(out), "--fast")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"replayed {len(recorded)} frames" in replay.stdout

    groups = tmp_path / "groups.parquet"
    synced = hyperframes(
        "sync", str(out), "--policy", "nearest", "--reference", "xt32", "--sensors", "xt32",
        "-o", str(groups),
    )  # fmt: skip
    assert synced.returncode == 0, synced.stdout + synced.stderr
    table = pq.read_table(groups).to_pydict()
    assert len(next(iter(table.values()))) == len(recorded)

    ros2 = tmp_path / "hesai.mcap"
    done = hyperframes("export", str(out), "-o", str(ros2), "--groups", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    clouds = _ros2_clouds(ros2)
    assert len(clouds) == len(recorded)
    wall = doc["start_utc_ns"] - recorded[0].t  # header stamps: each frame's t, on the wall clock
    for (stamp, points), live, file in zip(clouds, recorded, offline, strict=False):
        assert abs(stamp - (live.t + wall)) < 1_000
        for axis in "xyz":
            assert (points[axis] == file.data[axis]).all()

    fox = tmp_path / "hesai.fox.mcap"
    done = hyperframes("export", str(out), "-o", str(fox), "--profile", "foxglove")
    assert done.returncode == 0, done.stdout + done.stderr
    fox_clouds = _foxglove_clouds(fox)
    assert len(fox_clouds) == len(recorded)
    for points, file in zip(fox_clouds, offline, strict=False):
        for axis in "xyz":
            assert (points[axis] == file.data[axis]).all()


def test_the_sensors_angles_over_ptc_are_the_ones_recorded(tmp_path: Path) -> None:
    """``calibration = "sensor"``: ``record`` asks a PTC server on loopback TCP for the
    angle file (nebula's XT32 CSV, elevations raised 0.25 degrees: not the built-in one)
    while the real packets come over UDP; the sweeps are the file's decode with that CSV."""
    rows = (SHARED / "PandarXT32.csv").read_text().splitlines()
    text = "\n".join(
        [rows[0]]
        + [f"{c[0]},{float(c[1]) + 0.25:.3f},{c[2]}" for c in (r.split(",") for r in rows[1:])]
    )
    csv = tmp_path / "unit.csv"
    csv.write_text(text)
    pcap = sensor_timed_pcap("xt32", "PandarXT32", tmp_path)

    async def decode_file(calibration: Path | None) -> list[Frame]:
        source = HesaiSource(pcap, name="xt32", calibration=calibration)
        return [f async for f in source.frames()]

    offline = anyio.run(decode_file, csv)
    default = anyio.run(decode_file, None)
    port = free_port()
    with ptc_server(PtcServer(payload=text.encode())) as server:
        config = tmp_path / "hesai.toml"
        config.write_text(
            f'[[sources]]\ntype = "hesai"\nname = "xt32"\nport = {port}\nclock = "online"\n'
            f'calibration = "sensor"\nptc_host = "127.0.0.1"\nptc_port = {server.port}\n'
        )
        out = tmp_path / "hesai.hfr"
        rec = Recording([str(config), "-o", str(out)], terminal=True)
        rec.wait_for("recording to", timeout=60)
        wait_udp_bound(port)
        sender = python_sender("pcap", str(port), str(pcap))
        with stopping(sender):
            sent, _ = sender.proc.communicate(timeout=60)
        assert sent_count(sent) == PACKETS
        time.sleep(0.5)
        code, _ = rec.stop(signal.SIGINT)
        assert code == 0, rec.text[-3000:]
    assert server.requests == [(0x05, 0, b"")]
    doc = info_json(out)
    assert doc["ledger"]["xt32"]["received"] == PACKETS
    with open_recording(out) as recording:
        recorded = list(recording.frames())
    assert len(recorded) == len(offline) - 1  # the last sweep was still open at Ctrl-C
    for live, file, nominal in zip(recorded, offline, default, strict=False):
        assert live.data.tobytes() == file.data.tobytes()
        assert not np.array_equal(live.data["z"], nominal.data["z"])


def _ros2_clouds(path: Path) -> list[tuple[int, np.ndarray]]:
    """(header stamp ns, x/y/z) of each PointCloud2, read with mcap and rosbags."""
    from mcap.reader import make_reader
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    out = []
    with path.open("rb") as f:
        for schema, _channel, message in make_reader(f).iter_messages():
            assert schema is not None
            if schema.name != "sensor_msgs/msg/PointCloud2":
                continue
            cloud: Any = store.deserialize_cdr(message.data, schema.name)
            assert cloud.height == 1
            stamp = cloud.header.stamp.sec * 10**9 + cloud.header.stamp.nanosec
            points = _xyz(cloud.data.tobytes(), cloud.fields, cloud.point_step)
            assert len(points) == cloud.width
            out.append((stamp, points))
    return out


def _foxglove_clouds(path: Path) -> list[np.ndarray]:
    """x/y/z of each ``foxglove.PointCloud``, decoded with protobuf from the file's schema."""
    from google.protobuf import (  # type: ignore[import-untyped]
        descriptor_pb2,
        descriptor_pool,
        message_factory,
    )
    from mcap.reader import make_reader

    out = []
    classes: dict[int, type] = {}
    with path.open("rb") as f:
        for schema, _channel, message in make_reader(f).iter_messages():
            assert schema is not None
            if schema.name != "foxglove.PointCloud":
                continue
            if schema.id not in classes:
                pool = descriptor_pool.DescriptorPool()
                for proto in descriptor_pb2.FileDescriptorSet.FromString(schema.data).file:
                    pool.Add(proto)
                found = pool.FindMessageTypeByName(schema.name)
                classes[schema.id] = message_factory.GetMessageClass(found)
            cloud: Any = classes[schema.id].FromString(message.data)  # type: ignore[attr-defined]
            out.append(_xyz(cloud.data, cloud.fields, cloud.point_stride))
    return out


def _xyz(raw: bytes, fields: Any, step: int) -> np.ndarray:
    """The float32 x, y, z of packed points described by (name, offset) fields."""
    offsets = {f.name: f.offset for f in fields}
    spec: Any = {
        "names": ["x", "y", "z"],
        "formats": ["<f4"] * 3,
        "offsets": [offsets["x"], offsets["y"], offsets["z"]],
        "itemsize": step,
    }
    return np.frombuffer(raw, np.dtype(spec))
