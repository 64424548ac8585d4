"""Live ingestion: a Velodyne VLP-16 streaming UDP to this machine, synced and processed.

No sensor at hand, so a thread plays a real VLP-16 capture
(``../shared/data/lidar/vlp-16-test-90deg-1-50-frames.pcap``) to 127.0.0.1 with
its original packet timing: to the source it is a live sensor. The
pipeline then does what it would do on a vehicle:

* ``VelodyneSource(port=...)`` assembles one sweep per rotation from the packets
  (vectorised decode; malformed datagrams are counted, never fatal);
* an ``OnlineClock`` maps the sensor's "microseconds past the hour" stamps onto
  the host clock from the arrival times, hour roll-over declared by the source;
* a voxel filter (open3d) thins each sweep, and a bird's-eye-view occupancy
  model (ONNX Runtime) runs on it in batches.

    python examples/live_velodyne.py [--speed 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
import time
from pathlib import Path

import anyio
import anyio.to_thread
import numpy as np

from adapters import VelodyneSource
from adapters.lidar import read_udp
from adapters.lidar._processing import VoxelDownsample
from fusion import BatchWorker, ExactTime, OnlineClock, Pipeline, SensorStage
from fusion.workers._models import bev_occupancy
from fusion.workers._preprocess import group_input

PCAP = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/lidar/vlp-16-test-90deg-1-50-frames.pcap"
)


def play_pcap(port: int, speed: float) -> None:
    """Send the capture's Velodyne datagrams to 127.0.0.1:port at their own pace / speed."""
    packets = [(d.t_capture, d.payload) for d in read_udp(PCAP, dst_port=2368)]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        t0, start = packets[0][0], time.monotonic_ns()
        for t, payload in packets:
            wait = (start + (t - t0) / speed - time.monotonic_ns()) / 1e9
            if wait > 0.001:
                time.sleep(wait)
            sock.sendto(payload, ("127.0.0.1", port))


async def main(speed: float) -> None:
    lidar = VelodyneSource(port=0, host="127.0.0.1", model="VLP-16")
    spec = dataclasses.replace(
        lidar.spec, clock=OnlineClock(wrap_period_ns=lidar.spec.meta["wrap_period_ns"])
    )
    occupancy = BatchWorker(
        bev_occupancy(grid=32, extent=20.0),
        preprocess=group_input("lidar", "points", points=4096),
        postprocess=lambda groups, out: [float(o.mean()) for o in out[0]],
    )
    pipeline = Pipeline(
        [lidar],
        ExactTime(["lidar"]),
        sensors=[spec],
        stages=[SensorStage("lidar", VoxelDownsample(0.2))],
        workers={"occupancy": occupancy},
    )
    sweeps = 0

    async def sensor_then_stop(port: int) -> None:
        await anyio.to_thread.run_sync(play_pcap, port, speed)
        await anyio.sleep(0.3)  # the last datagrams in flight
        pipeline.stop()  # graceful: what was received drains through the pipeline

    async with pipeline.open() as groups, anyio.create_task_group() as tg:
        tg.start_soon(sensor_then_stop, await lidar.wait_listening())
        async for group in groups:
            sweeps += 1
            frame = group.frames["lidar"]
            if sweeps % 10 == 1:
                print(
                    f"sweep {frame.seq:2d}: {len(frame.data):6d} points after voxel filter, "
                    f"occupied {100 * group.results['occupancy']:.1f} % of the BEV grid"
                )
    estimate = pipeline.statistics().hub.sensors["lidar"].clock
    print(
        f"{sweeps} sweeps; clock fit: offset {estimate.get('offset_ns', 0) / 1e9:.3f} s, "
        f"skew {estimate.get('skew_ppm', float('nan')):.1f} ppm; errors {dict(lidar.errors)}"
    )
    assert sweeps >= 40, "the live source lost sweeps"
    assert np.isfinite(estimate.get("skew_ppm", 0.0))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=1.0, help="replay speed-up of the capture")
    anyio.run(main, parser.parse_args().speed)
