"""Fleets on a real local Ray (2 CPUs): same groups and outputs as one machine, retries.

Ray is started once for the module. Skipped only when the ``ray`` extra is
not installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from fusion._frames import FrameGroup  # noqa: E402
from hyperframes.fleet import read_results, run_fleet  # noqa: E402

from .fleet_helpers import (  # noqa: E402
    assert_same_groups,
    local_pipeline_groups,
    run_config,
    write_run_file,
)

pytestmark = pytest.mark.filterwarnings(
    # Ray Data reads its own deprecated settings (``use_push_based_shuffle``)
    # inside this process; the warning is Ray's, not raised by hyperframes.
    "ignore::DeprecationWarning:ray.*"
)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        num_gpus=0,
        include_dashboard=False,
        object_store_memory=128 * 1024 * 1024,
        log_to_driver=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


def test_three_recordings_give_the_groups_and_outputs_of_the_local_pipeline(
    drives: list[Path], tmp_path: Path
) -> None:
    # Every recording is cut into 1 s time ranges, read by separate tasks.
    config = run_config(
        drives, tmp_path / "out", actors=2, split_duration_s=1.0, overlap_s=0.2, batch_size=8
    )
    report = run_fleet(config, progress=False)
    assert report.plan is not None
    assert (report.plan.actors, report.plan.cpus_per_actor) == (2, 0.5)
    assert report.parts == 4 + 2 + 2  # drive-a lasts 4 s, drive-b and drive-c 1.5 s
    assert [(Path(r.path).name, r.status) for r in report.recordings] == [
        ("drive-a.hfr", "written"),
        ("drive-b.hfr", "written"),
        ("drive-c.hfr", "written"),
    ]
    for drive in drives:
        got = read_results(tmp_path / "out" / f"{drive.stem}.results.hfr")
        assert_same_groups(got, local_pipeline_groups(drive))
    again = run_fleet(config, progress=False)
    assert again.count("skipped") == 3
    assert again.parts == 0


class KillOnce:
    """A stage that kills its Ray worker process mid-recording on the first attempt."""

    def __init__(self, marker: Path, recording: str, at_group: int) -> None:
        self.marker = str(marker)
        self.recording = recording
        self.at_group = at_group
        self.seen = 0
        self.name = "kill-once"

    def __call__(self, group: FrameGroup) -> FrameGroup:
        self.seen += 1
        if self.seen == self.at_group and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
            os._exit(1)  # no cleanup, no exception: the process is gone
        return group


def test_a_read_task_killed_midway_is_retried_without_losing_or_repeating_groups(
    drives: list[Path], tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    config = run_config(drives[1:], tmp_path / "out", actors=1, rows_per_block=2)
    kill = KillOnce(marker, str(drives[1]), at_group=9)  # after several blocks went out
    report = run_fleet(config, stages=[kill], progress=False)
    assert marker.exists(), "the stage never killed its worker"
    assert int(marker.read_text()) != os.getpid()
    assert [r.status for r in report.recordings] == ["written", "written"]
    for drive in drives[1:]:
        got = read_results(tmp_path / "out" / f"{drive.stem}.results.hfr")
        assert_same_groups(got, local_pipeline_groups(drive))


def test_the_cli_runs_a_run_file_on_ray(
    drives: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hyperframes.cli import main

    run = write_run_file(tmp_path / "RUN.toml", drives[2:], tmp_path / "out")
    assert main(["fleet", str(run), "--no-progress", "--actors", "1"]) == 0
    out = capsys.readouterr().out
    assert "written" in out
    assert "resources: 1 actor(s) x 1 CPU, 1 CPU per read task" in out
    got = read_results(tmp_path / "out" / "drive-c.results.hfr")
    assert_same_groups(got, local_pipeline_groups(drives[2]))
