"""An Ouster's ports come from its metadata (or its capture's traffic) when not given, and
its IMU fails a run only when asked for: the real OS-1-32 capture (legacy metadata,
no IMU packets) and ouster-sdk's firmware-3 OS-1-128 capture, rewritten to other ports."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import numpy as np
import pytest

from adapters.lidar import OusterSource
from adapters.lidar._pcap import read_udp
from fusion._frames import Frame
from hyperframes.cli import main
from tests.adapters.lidar_testdata import LIDAR_DATA, write_pcap

DATA = Path(__file__).resolve().parents[1] / "data" / "ouster"
FW3_PCAP = DATA / "OS-1-128_767798045_1024x10_20230712_120049.pcap"
FW3_JSON = DATA / "OS-1-128_767798045_1024x10_20230712_120049.json"
OUSTER_PCAP = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"
OUSTER_JSON = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.json"


def read(source: OusterSource) -> list[Frame]:
    frames: list[Frame] = []

    async def run() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    anyio.run(run)
    return frames


def moved(pcap: Path, out: Path, ports: dict[int, int]) -> Path:
    """``pcap`` with each datagram sent to ``ports[its port]`` instead."""
    write_pcap(
        out, [(d.t_capture, ports.get(d.dst_port, d.dst_port), d.payload) for d in read_udp(pcap)]
    )
    return out


def same(a: list[Frame], b: list[Frame]) -> None:
    assert [(f.sensor, f.t_sensor) for f in a] == [(f.sensor, f.t_sensor) for f in b]
    for x, y in zip(a, b, strict=True):
        if isinstance(x.data, np.ndarray):
            np.testing.assert_array_equal(x.data, y.data)


def test_the_ports_of_a_firmware_3_capture_come_from_its_metadata(tmp_path: Path) -> None:
    original = OusterSource(FW3_PCAP, metadata=FW3_JSON)
    assert (original.lidar_port, original.imu_port) == (7502, 7503)
    assert original.ports_from == {"lidar": "metadata", "imu": "metadata"}
    want = read(original)
    assert [f.sensor for f in want].count("lidar_imu") == 2
    meta = json.loads(FW3_JSON.read_text())
    meta["config_params"].update(udp_port_lidar=9502, udp_port_imu=9503)
    (tmp_path / "m.json").write_text(json.dumps(meta))
    pcap = moved(FW3_PCAP, tmp_path / "m.pcap", {7502: 9502, 7503: 9503})
    source = OusterSource(pcap, metadata=tmp_path / "m.json")
    assert (source.lidar_port, source.imu_port) == (9502, 9503)
    same(read(source), want)
    assert not source.errors
    # ports given win over the metadata's: the datagrams then go to ports nobody reads
    given = OusterSource(pcap, metadata=tmp_path / "m.json", lidar_port=7502, imu_port=7503)
    assert given.ports_from == {"lidar": "given", "imu": "given"}
    assert read(given) == []
    assert given.errors["wrong_port"] == 10


def test_a_legacy_metadata_without_ports_takes_them_from_the_capture(tmp_path: Path) -> None:
    want = read(OusterSource(OUSTER_PCAP, metadata=OUSTER_JSON))
    pcap = moved(OUSTER_PCAP, tmp_path / "m.pcap", {7502: 17502})
    source = OusterSource(pcap, metadata=OUSTER_JSON)
    assert source.lidar_port == 17502
    assert source.ports_from == {"lidar": "capture", "imu": "default"}
    same(read(source), want)
    assert source.ledgers()["lidar"].received == 64


def test_the_imu_is_optional_unless_asked_for() -> None:
    source = OusterSource(OUSTER_PCAP, metadata=OUSTER_JSON, name="os")
    assert {s.name: s.optional for s in source.specs} == {"os": False, "os_imu": True}
    asked = OusterSource(OUSTER_PCAP, metadata=OUSTER_JSON, name="os", require_imu=True)
    assert {s.name: s.optional for s in asked.specs} == {"os": False, "os_imu": False}


SOURCE = f"""
[[sources]]
type = "ouster"
name = "os"
metadata = "{OUSTER_JSON}"
pcap = "{OUSTER_PCAP}"
"""


@pytest.mark.parametrize(
    ("sync", "code"),
    [
        ("", 0),
        ('[sync]\npolicy = "nearest"\nreference = "os"\ntolerance_ms = 20\n', 0),
        ('[sync]\npolicy = "nearest"\nreference = "os"\nsensors = ["os", "os_imu"]\n', 1),
        ('[sync]\npolicy = "nearest"\nreference = "os"\nwindows_ms = { os_imu = [50, 50] }\n', 1),
    ],
    ids=["no-sync", "sync-without-imu", "sync-names-imu", "imu-window"],
)
def test_record_of_a_capture_without_imu_packets_fails_only_when_the_imu_is_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sync: str, code: int
) -> None:
    config = tmp_path / "os.toml"
    config.write_text(SOURCE + sync)
    assert main(["record", str(config), "-o", str(tmp_path / "os.hfr")]) == code
    out = capsys.readouterr()
    text = out.out + out.err
    if code:
        assert "os_imu produced no frame for the whole run: nothing arrived" in text
    else:
        assert "note: os_imu (optional) produced no frame: nothing arrived" in " ".join(
            text.split()
        )
    assert "recorded 1 frames" in text
