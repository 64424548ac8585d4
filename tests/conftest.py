"""Suite-wide settings.

Hypothesis runs without per-example deadlines: CI machines are shared and slow,
and timing is what benchmarks measure, never tests.

``make test`` runs the suite in two passes: everything not marked ``serial`` on
two pytest-xdist workers, then the ``serial`` tests on two workers of their own. A
test is serial when it measures something the bulk's load would change (a real
sender's rate, frames kept at a live rate, Ctrl-C within a second): the bulk keeps
both cores busy, while two serial tests side by side mostly wait on real time (the
whole serial pass used 0.83 of 2 cores, measured). Whole files are marked here, by
path, so a new test in such a file is serial too.

In the serial pass each file's tests run on one worker, in order (``loadgroup``,
one group per file), and files that share a machine-wide resource share a group,
so they never run at the same time: ``SHARED`` below.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# ouster-sdk, the Ouster tests' reference decoder (and what reads OSF files), lives outside
# the environment's site-packages (the Makefile: pip install --no-deps --target), where its
# pins (rosbags==0.9.23, click<8.1.8 ...) cannot break it and `pip check` does not see it;
# the suite and the processes it starts find it here. OusterSource itself never needs it.
OUSTER_ORACLE = Path(sys.prefix) / "oracles" / "ouster"
if OUSTER_ORACLE.is_dir() and str(OUSTER_ORACLE) not in sys.path:
    sys.path.append(str(OUSTER_ORACLE))
    _paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([*_paths, str(OUSTER_ORACLE)])

settings.register_profile(
    "hyperframes", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("hyperframes")

_TESTS = Path(__file__).resolve().parent
SERIAL = (
    "acceptance/",  # real senders at real rates, terminals, Ctrl-C and SIGTERM timings
    "test_recipes.py",  # recipe 1 records live senders on the example config's fixed ports
    "test_examples.py",  # live_velodyne.py asserts sweeps kept at the capture's rate
    "segments/test_orphans.py",  # the shared-memory janitor sees every process's blocks
    "interop/test_foxglove_live.py",  # rates kept while a client stalls
    "recordings/test_live_server.py",  # a real-time pipeline's rate with a stalled client
    "adapters/test_video_live.py",  # live streams from ffmpeg at their rate
    "adapters/test_audio_streams.py",  # live audio senders at their rate
    "adapters/ros2/",  # DDS publishers at a bag's rate, killed and restarted
    "recordings/test_ros2_publisher.py",  # a replay's pace on DDS; publish() never blocks
    "cli/test_snapshot_cli.py",  # the last N seconds of a live run
)


# Serial files that must not run at the same time, by the resource they share.
SHARED = {
    # the example config's fixed UDP ports (2368, 5600, 5601): send_sensors.py's
    # defaults would reach recipe 1's recorder
    "test_recipes.py": "fixed-ports",
    "test_examples.py": "fixed-ports",
    # DDS domains drawn at random (ros2_helpers.free_domain): one node's traffic
    # must not reach another test's participant
    "adapters/ros2/": "dds",
    "recordings/test_ros2_publisher.py": "dds",
    # rtsp-server-perl's relay ports: probed free, bound only when a stream starts
    "adapters/test_audio_streams.py": "rtsp",
    "acceptance/test_audio_streams_journey.py": "rtsp",
}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.resolve().relative_to(_TESTS).as_posix()
        if relative.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("serial") is not None:
            group = next((g for p, g in SHARED.items() if relative.startswith(p)), relative)
            item.add_marker(pytest.mark.xdist_group(group))
