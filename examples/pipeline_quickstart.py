"""A whole pipeline in 20 lines: sensors -> sync -> open3d stage -> ONNX model -> recording.

python examples/pipeline_quickstart.py
"""

import tempfile
from pathlib import Path

import anyio

from adapters import synthetic_session
from adapters.lidar._processing import VoxelDownsample
from fusion import BatchWorker, Nearest, Pipeline, SensorStage
from fusion.workers._models import bev_occupancy
from fusion.workers._preprocess import group_input
from recordings import Recorder

MS = 1_000_000


async def main(out: Path) -> None:
    pipeline = Pipeline(
        synthetic_session(5, realtime=False),  # or VideoSource, VelodyneSource, ...
        Nearest(
            "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
        ),
        stages=[SensorStage("lidar", VoxelDownsample(0.25))],  # open3d, off the event loop
        workers={
            "occupancy": BatchWorker(bev_occupancy(), preprocess=group_input("lidar", "points"))
        },
        recorder=Recorder(out),  # every frame that arrived
    )
    async for group in pipeline:  # or: await pipeline.run()
        if group.frames["lidar"].seq % 10 == 0:
            print(group.t, f"{group.results['occupancy'].mean():.3f}")
    print(pipeline.statistics().hub.groups_complete, "groups recorded to", out.name)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, Path(tmp) / "session.hfr")
