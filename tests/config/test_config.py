"""TOML pipeline configs: validation errors all at once, and configs that really run."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from fusion import ConfigError, VirtualClock, use_clock
from hyperframes.config import build_pipeline, load_config, parse_size

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "configs"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.toml"
    path.write_text(text)
    return path


def test_every_problem_is_reported_at_once_with_key_path_expected_and_found(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        """
[pipeline]
max_latency_ms = -5

[sync]
policy = "nearest"
reference = "lidar"

[[sources]]
type = "synthetic_lidar"
name = "lidar"
rate_hz = "fast"

[[sources]]
type = "velodyne"
name = "vlp"
model = "VLP-16"

[[sources]]
type = "thermal"
name = "t"

[[workers]]
name = "w"
model = "m.onnx"
input = "lidar"
max_btach = 4
""",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    problems = info.value.problems  # type: ignore[attr-defined]
    text = str(info.value)
    assert f"{path}: 5 problem(s)" in text
    assert any("pipeline.max_latency_ms: expected greater than 0; found -5" in p for p in problems)
    assert any("sources[0].synthetic_lidar.rate_hz" in p and "'fast'" in p for p in problems)
    assert any("sources[1].velodyne" in p and "exactly one of 'pcap'" in p for p in problems)
    assert any("sources[2]" in p and "'thermal'" in p for p in problems)
    assert any("workers[0].max_btach: unknown key" in p for p in problems)
    assert all(p.startswith(str(path)) for p in problems)


def test_unknown_sensor_names_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[sync]
policy = "nearest"
reference = "camera"

[[sources]]
type = "synthetic_camera"
name = "cam"
""",
    )
    with pytest.raises(ConfigError, match=r"sensors \['camera'\] are not the name of any source"):
        load_config(path)


def test_missing_file_and_bad_toml_say_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[sync\npolicy = 1"))


@pytest.mark.parametrize(
    ("text", "size"),
    [("4GiB", 4 * 2**30), ("500MB", 500 * 10**6), ("1024", 1024), ("1.5 KiB", 1536)],
)
def test_sizes_parse(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_size_garbage_is_refused() -> None:
    with pytest.raises(ValueError, match="expected a size like"):
        parse_size("lots")


async def test_the_synthetic_example_config_runs_end_to_end(tmp_path: Path) -> None:
    config = load_config(EXAMPLES / "synthetic.toml")
    clock = VirtualClock()
    pipeline = build_pipeline(config, recorder_path=tmp_path / "out.hfr")
    with use_clock(clock), anyio.fail_after(60):
        async with clock.autojump():
            stats = await pipeline.run()
    assert stats.groups_out == 100
    assert set(stats.workers) == {"edges", "occupancy"}
    assert stats.errors == {}
    cam_clock = stats.hub.sensors["cam"].clock
    assert cam_clock["model"] == "OnlineClock"
    assert stats.recorder is not None
    assert stats.recorder.frames == stats.hub.frames_in


async def test_the_velodyne_example_config_reads_the_real_capture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)  # the config's pcap path is relative to the repository
    config = load_config(EXAMPLES / "velodyne_pcap.toml")
    with anyio.fail_after(60):
        stats = await build_pipeline(config).run()
    assert stats.groups_out >= 15  # the repository's cut: the first 760 capture records
    assert stats.stages[1].groups_in == stats.groups_out
    assert stats.stages[0].failed == 0
