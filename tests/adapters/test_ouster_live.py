"""OusterSource live: a stream made from the real capture, replayed over loopback UDP at
its captured rate by a real sender process (lidar and IMU ports), decodes to the same
scans and IMU samples as the capture itself; a second host's datagrams are counted."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import anyio
import numpy as np
from lidar_testdata import write_pcap
from ouster_testdata import OUSTER_JSON, stream

from adapters import OusterSource
from adapters.lidar._ouster_packets import IMU_FIELDS
from fusion._frames import Frame

SENDERS = Path(__file__).resolve().parents[1] / "acceptance" / "senders.py"


async def test_live_udp_scans_and_imu_equal_the_capture_and_foreign_hosts_are_counted(
    tmp_path: Path,
) -> None:
    write_pcap(tmp_path / "s.pcap", stream(5))
    async with OusterSource(tmp_path / "s.pcap", metadata=OUSTER_JSON) as offline:
        expected = [frame async for frame in offline.frames()]
    want = {name: [f for f in expected if f.sensor == name] for name in ("lidar", "lidar_imu")}
    assert (len(want["lidar"]), len(want["lidar_imu"])) == (5, 50)

    live = OusterSource(
        metadata=OUSTER_JSON, lidar_port=0, imu_port=0, bind="127.0.0.1", host="127.0.0.1"
    )
    got: dict[str, list[Frame]] = {"lidar": [], "lidar_imu": []}
    with anyio.fail_after(30):
        async with live, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in live.frames():
                    got[frame.sensor].append(frame)
                    if all(len(got[k]) == len(want[k]) for k in got):
                        tg.cancel_scope.cancel()

            tg.start_soon(consume)
            lidar_port, imu_port = await live.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
                other.bind(("127.0.0.2", 0))  # another host on the sensor's network
                other.sendto(b"\0" * 6464, ("127.0.0.1", lidar_port))
                other.sendto(b"\0" * 48, ("127.0.0.1", imu_port))
            command = [
                sys.executable,
                str(SENDERS),
                "pcap",
                str(lidar_port),
                str(tmp_path / "s.pcap"),
            ]
            done = await anyio.run_process(
                [*command, "--data-port", "7502", "--route", f"7503:{imu_port}"], check=True
            )
            assert done.stdout.decode().strip() == "sent 370"

    for name in got:
        assert len(got[name]) == len(want[name])
        for g, w in zip(got[name], want[name], strict=True):
            assert (g.seq, g.t_sensor, g.meta) == (w.seq, w.t_sensor, w.meta)
            if name == "lidar":
                np.testing.assert_array_equal(g.data, w.data)
            else:
                assert {k: g.data[k] for k in IMU_FIELDS} == {k: w.data[k] for k in IMU_FIELDS}
    arrivals = [f.t_arrival for f in got["lidar"]]
    assert all(a is not None for a in arrivals)
    assert arrivals == sorted(arrivals)  # type: ignore[type-var]
    lidar, imu = live.ledgers()["lidar"], live.ledgers()["lidar_imu"]
    assert (lidar.received, lidar.emitted, dict(lidar.lost)) == (321, 320, {"foreign_sender": 1})
    assert (imu.received, imu.emitted, dict(imu.lost)) == (51, 50, {"foreign_sender": 1})
    assert live.last_error is not None
    assert live.last_error.startswith("datagram of 48 bytes from 127.0.0.2:")
    assert "not the configured sender 127.0.0.1" in live.last_error
    udp = live.statistics()["udp"]  # one receiver per port, each in its sensor's ledger
    assert (udp["lidar"]["foreign"], udp["lidar_imu"]["foreign"]) == (1, 1)
    assert udp["lidar"]["datagrams"] == 321
