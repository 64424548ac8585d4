"""hyperframes.fleet without Ray: planning, the codec, run files, and the local loop."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fusion._frames import Frame, FrameGroup
from fusion.errors import ConfigError
from hyperframes.fleet import plan_parts, plan_resources, read_results, run_local
from hyperframes.fleet._codec import decode_group, decode_results, encode_group, encode_results
from hyperframes.fleet._config import load_fleet_config, validate_fleet_config
from hyperframes.fleet._tasks import iterate_blocking

from .fleet_helpers import (
    SYNC,
    assert_same_groups,
    local_pipeline_groups,
    run_config,
    write_run_file,
)

# -- resources ------------------------------------------------------------------------------


def test_two_cpu_actors_on_two_cpus_leave_a_core_to_the_reads() -> None:
    plan = plan_resources(2, 0, actors=2)
    assert (plan.actors, plan.cpus_per_actor, plan.gpus_per_actor) == (2, 0.5, 0.0)
    assert plan.threads_per_actor == 1
    assert "1 CPU stays free for the read tasks" in plan.note


@given(
    cpus=st.integers(1, 256),
    actors=st.one_of(st.none(), st.integers(1, 64)),
    wanted=st.one_of(st.none(), st.floats(0, 8)),
    gpus=st.integers(0, 8),
)
@example(cpus=15, actors=25, wanted=None, gpus=0)  # 25 x 0.56 + 1 > 15 in floats
def test_actors_never_take_the_cpus_a_read_task_needs(
    cpus: int, actors: int | None, wanted: float | None, gpus: int
) -> None:
    try:
        plan = plan_resources(cpus, gpus, actors=actors, cpus_per_actor=wanted)
    except ConfigError:
        assert gpus
        assert actors is not None
        assert actors > gpus
        return
    assert plan.actors * plan.cpus_per_actor + plan.read_cpus <= cpus
    assert plan.gpus_per_actor == (1.0 if gpus else 0.0)


def test_one_gpu_actor_per_gpu_by_default() -> None:
    plan = plan_resources(16, 4)
    assert (plan.actors, plan.gpus_per_actor, plan.cpus_per_actor) == (4, 1.0, 1.0)
    assert plan.device == "gpu"


def test_resource_plans_that_cannot_work_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"fleet.device is 'gpu' but the cluster has no GPU"):
        plan_resources(8, 0, device="gpu")
    with pytest.raises(ConfigError, match=r"3 actors x 1 GPUs do not fit in the cluster's 2"):
        plan_resources(8, 2, actors=3)
    with pytest.raises(ConfigError, match="fewer than the 2 one read task asks for"):
        plan_resources(1, 0, read_cpus=2)


# -- parts ----------------------------------------------------------------------------------


def test_long_recordings_are_split_unless_the_policy_is_approximate(drives: list[Path]) -> None:
    parts = plan_parts([str(d) for d in drives], split=1_000_000_000, overlap=10)
    assert [(Path(p.path).name, p.index, p.count) for p in parts][:4] == [
        ("drive-a.hfr", 0, 4),
        ("drive-a.hfr", 1, 4),
        ("drive-a.hfr", 2, 4),
        ("drive-a.hfr", 3, 4),
    ]
    assert parts[1].read_start == parts[1].start - 10  # type: ignore[operator]
    whole = plan_parts([str(drives[0])], split=1_000_000_000, policy="approximate")
    assert len(whole) == 1
    assert whole[0].start is None


# -- codec ----------------------------------------------------------------------------------


def test_a_group_crosses_the_object_store_unchanged() -> None:
    cam = Frame("cam", 3, 100, np.arange(12, dtype=np.uint8).reshape(3, 4), 90, 120, {"k": 1})
    imu = [Frame("imu", i, 95 + i, {"accel": np.ones(3, np.float32) * i}) for i in range(2)]
    group = FrameGroup(100, {"cam": cam, "imu": imu, "gps": []}, frozenset({"baro"}))
    back = decode_group(encode_group(group))
    assert back.t == 100
    assert back.missing == {"baro"}
    got_cam = back.frames["cam"]
    assert isinstance(got_cam, Frame)
    assert (got_cam.seq, got_cam.t, got_cam.t_sensor, got_cam.t_arrival) == (3, 100, 90, 120)
    np.testing.assert_array_equal(got_cam.data, cam.data)
    assert got_cam.meta == {"k": 1}
    got_imu = back.frames["imu"]
    assert isinstance(got_imu, list)
    assert [f.seq for f in got_imu] == [0, 1]
    np.testing.assert_array_equal(got_imu[1].data["accel"], np.ones(3, np.float32))
    assert back.frames["gps"] == []


def test_a_result_that_cannot_be_stored_becomes_that_workers_error() -> None:
    group = FrameGroup(5, {"cam": Frame("cam", 0, 5)})
    group.results = {
        "good": np.array([1.5], np.float32),
        "bad": object(),
        "failed": ValueError("boom"),
    }
    frames = decode_results(encode_results(group, ["good", "bad", "failed"]))
    np.testing.assert_array_equal(frames["good"].data, [1.5])
    assert frames["bad"].data is None
    assert frames["bad"].meta["error"].startswith("worker 'bad': its result cannot be stored:")
    assert frames["failed"].meta == {"error": "boom"}


# -- run files ------------------------------------------------------------------------------


def test_a_run_file_loads_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "RUN.toml"
    path.write_text(
        """
[fleet]
recordings = ["drives/*.hfr"]
output = "results"
split_duration_s = 60

[sync]
policy = "nearest"
reference = "lidar"
tolerance_ms = 20

[[workers]]
name = "edges"
model = "builtin:sobel_edges"
input = "cam"
""",
        encoding="utf-8",
    )
    config = load_fleet_config(path)
    assert config.fleet.split_duration_s == 60
    assert config.workers[0].name == "edges"
    assert config.absolute().fleet.output == os.path.abspath("results")


def test_run_file_problems_are_reported_together() -> None:
    raw = {
        "fleet": {"recordings": [], "output": "out", "batch_sise": 4},
        "sync": {"policy": "nearest"},
    }
    with pytest.raises(ConfigError) as info:
        validate_fleet_config(raw, source="RUN.toml")
    text = str(info.value)
    assert "RUN.toml: 3 problem(s) in the run file" in text
    assert "fleet.recordings: list should have at least 1 item" in text
    assert "fleet.batch_sise: unknown key (check its spelling)" in text
    assert "sync: policy 'nearest' needs 'reference'" in text


def test_an_overlap_shorter_than_the_policys_reach_is_refused() -> None:
    raw = {
        "fleet": {"recordings": ["x"], "output": "o", "split_duration_s": 10, "overlap_s": 0.03},
        "sync": SYNC,
    }
    with pytest.raises(ConfigError, match=r"overlap_s = 0.03 s is shorter than .* 50(\.0)? ms"):
        validate_fleet_config(raw)


def test_the_missing_ray_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperframes.fleet._ray import require_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(
        ImportError, match=r"install it with: pip install '\.\[ray\]' in the hyperframes clone"
    ):
        require_ray()


# -- the local loop -------------------------------------------------------------------------


def test_the_local_loop_writes_the_groups_of_the_local_pipeline(
    drives: list[Path], tmp_path: Path
) -> None:
    report = run_local(run_config(drives, tmp_path / "out"))
    assert [(Path(r.path).name, r.status) for r in report.recordings] == [
        ("drive-a.hfr", "written"),
        ("drive-b.hfr", "written"),
        ("drive-c.hfr", "written"),
    ]
    for drive in drives:
        got = read_results(tmp_path / "out" / f"{drive.stem}.results.hfr")
        assert_same_groups(got, local_pipeline_groups(drive))
    assert sorted(os.listdir(tmp_path / "out")) == [f"{d.stem}.results.hfr" for d in drives]


def test_a_rerun_skips_finished_recordings_and_redoes_changed_configs(
    drives: list[Path], tmp_path: Path
) -> None:
    config = run_config(drives[1:], tmp_path / "out")
    assert run_local(config).count("written") == 2
    assert run_local(config).count("skipped") == 2
    changed = config.model_copy(update={"workers": config.workers[:1]})
    assert run_local(changed).count("written") == 2


def test_a_file_that_is_not_a_recording_fails_alone(drives: list[Path], tmp_path: Path) -> None:
    bad = tmp_path / "garbage.hfr"
    bad.write_bytes(b"not a recording at all")
    report = run_local(run_config([drives[1], bad], tmp_path / "out"))
    statuses = {Path(r.path).name: (r.status, r.error) for r in report.recordings}
    assert statuses["drive-b.hfr"] == ("written", None)
    status, error = statuses["garbage.hfr"]
    assert status == "failed"
    assert "not a hyperframes recording (bad magic bytes)" in str(error)
    assert not (tmp_path / "out" / "garbage.results.hfr").exists()


def test_iterate_blocking_streams_and_stops_its_producer_early() -> None:
    produced: list[int] = []

    async def numbers():  # type: ignore[no-untyped-def]
        for i in range(1000):
            produced.append(i)
            yield i

    it = iterate_blocking(numbers, maxsize=2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()  # type: ignore[attr-defined]
    assert len(produced) < 10


def test_iterate_blocking_closes_a_producer_stopped_early_on_its_own_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A consumer that stops early (a segment cut short) closes the producer on the
    producer's loop: its task group's tasks end there, not cancelled by asyncio.run's
    shutdown (which printed 'unhandled exception during asyncio.run() shutdown')."""
    import anyio

    ended: list[str] = []

    async def pipeline():  # type: ignore[no-untyped-def]
        send, receive = anyio.create_memory_object_stream[int](1)

        async def produce() -> None:
            try:
                async with send:
                    for i in range(1000):
                        await send.send(i)
            except anyio.get_cancelled_exc_class():
                # a stage that fails as it is cancelled (its peer already gone): asyncio.run's
                # shutdown reports it as unhandled; a close on the loop hands it to the caller
                raise RuntimeError("stage cancelled mid-send") from None

        try:
            async with anyio.create_task_group() as tg, receive:
                tg.start_soon(produce)
                async for i in receive:
                    yield i
        finally:
            ended.append("closed")

    it = iterate_blocking(pipeline, maxsize=2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()  # type: ignore[attr-defined]
    assert ended == ["closed"]  # before close() returned: the loop's thread is joined
    assert "unhandled exception" not in caplog.text


def test_iterate_blocking_raises_the_producers_error() -> None:
    async def failing():  # type: ignore[no-untyped-def]
        yield 1
        raise ValueError("producer broke")

    with pytest.raises(ValueError, match="producer broke"):
        list(iterate_blocking(failing))


def test_the_cli_runs_the_local_loop_and_lists_each_recording(
    drives: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hyperframes.cli import main

    run = write_run_file(tmp_path / "RUN.toml", drives[1:], tmp_path / "out")
    assert main(["fleet", str(run), "--local"]) == 0
    out = capsys.readouterr().out
    assert out.count("written") == 2
    assert "[green]" not in out  # every line prints literally: styles are not markup text
    assert "[/" not in out
    assert (tmp_path / "out" / "drive-b.results.hfr").exists()


def test_the_cli_names_the_extra_when_ray_is_missing(
    drives: list[Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hyperframes.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)
    run = write_run_file(tmp_path / "RUN.toml", drives[1:], tmp_path / "out")
    assert main(["fleet", str(run)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "pip install '.[ray]' in the hyperframes clone" in out


def test_the_package_exports_a_sorted_all_that_resolves_without_ray(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hyperframes.fleet as distributed

    names = list(distributed.__all__)
    assert names == sorted(names)
    monkeypatch.setitem(sys.modules, "ray", None)
    for name in set(names) - {"HfrDatasource", "InferenceActor"}:
        member = getattr(distributed, name)
        assert member.__module__ == "hyperframes.fleet", name


def test_an_actor_whose_model_cannot_load_fails_its_groups_not_the_fleet(tmp_path: Path) -> None:
    from hyperframes.fleet._codec import encode_group
    from hyperframes.fleet._tasks import InferenceModel

    config = validate_fleet_config(
        {
            "fleet": {"recordings": ["x"], "output": "o"},
            "sync": SYNC,
            "workers": [{"name": "m", "model": str(tmp_path / "missing.onnx"), "input": "cam"}],
        }
    )
    group = FrameGroup(7, {"cam": Frame("cam", 0, 7, np.zeros(4, np.float32))})
    row = {"group": encode_group(group), "results": None}
    [out] = InferenceModel(config, threads=1).process([row])
    assert out["group"] is None
    frame = decode_results(out["results"])["m"]
    assert frame.data is None
    assert frame.meta["error"].startswith("worker 'm' failed on this batch:")
    assert "missing.onnx" in frame.meta["error"]


def test_the_local_loop_shows_progress_in_a_terminal(drives: list[Path], tmp_path: Path) -> None:
    import re

    from tests.terminal import plain, run_in_terminal

    run = write_run_file(tmp_path / "RUN.toml", drives[1:], tmp_path / "out")
    code, raw = run_in_terminal("fleet", str(run), "--local", cwd=tmp_path)
    text = plain(raw)
    assert code == 0, text[-2000:]
    assert re.search(r"\d/2 recordings", text), text[-2000:]
    assert text.count("written") == 2
