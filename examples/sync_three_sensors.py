"""Sync three synthetic sensors (camera 30 Hz, LiDAR 10 Hz, IMU 200 Hz) two ways.

1. ``Nearest``: one group per LiDAR sweep, with the nearest camera frame and
   every IMU sample in a window around the sweep, through the async SyncHub on
   a virtual clock (10 s of sensor time in a fraction of a second).
2. ``ApproximateTime``: the ROS message_filters algorithm, used sans-I/O:
   push frames in arrival order, get the best-matching camera/LiDAR sets out.

    python examples/sync_three_sensors.py
"""

import anyio

from adapters import synthetic_session, synthetic_timeline
from fusion import ApproximateTime, Nearest, SyncHub, VirtualClock, use_clock

MS = 1_000_000


async def nearest_through_the_hub() -> None:
    clock = VirtualClock()
    hub = SyncHub(
        Nearest(
            "lidar", ["lidar", "cam", "imu"], tolerance=20 * MS, windows={"imu": (50 * MS, 49 * MS)}
        ),
        max_latency=200 * MS,  # a silent sensor holds a group back at most this long
    )
    with use_clock(clock):
        async with clock.autojump(), hub.open(synthetic_session(10)) as groups:
            async for group in groups:
                if group.frames["lidar"].seq % 25 == 0:
                    print(group, f"spread {group.spread / MS:.1f} ms")
    print(hub.statistics().groups_complete, "groups;", dict(hub.statistics().dropped))


def approximate_sans_io() -> None:
    policy = ApproximateTime(["cam", "lidar"], queue_size=10, max_interval=30 * MS)
    cam, lidar, _imu = synthetic_session(2, realtime=False)
    sets = [g for f in synthetic_timeline([cam, lidar]) for g in policy.push(f)]
    sets += policy.drain()  # end of stream: publish the last candidate
    print(len(sets), "camera/LiDAR sets, e.g.", sets[0])
    print(policy.stats)


if __name__ == "__main__":
    anyio.run(nearest_through_the_hub)
    approximate_sans_io()
