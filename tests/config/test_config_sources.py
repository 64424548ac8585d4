"""Every source in TOML: bags, UDP time series, a user's own class, video options, image sizes."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from fusion import ConfigError, VirtualClock, use_clock
from hyperframes.config import build_pipeline, load_config
from hyperframes.config._factory import build_source

BAGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.toml"
    path.write_text(text)
    return path


def test_a_bag_source_maps_topics_to_sensors_and_runs(tmp_path: Path) -> None:
    from rosbags.highlevel import AnyReader

    bag = BAGS / "robot_localization_test2.bag"
    path = write(
        tmp_path,
        f"""
[sync]
policy = "nearest"
reference = "imu"
optional = ["odom"]

[[sources]]
type = "bag"
path = "{bag}"
topics = {{ "/imu/data" = "imu", "/jackal_velocity_controller/odom" = "odom" }}
""",
    )
    pipeline = build_pipeline(load_config(path), recorder_path=tmp_path / "bag.hfr")
    assert [s.name for s in pipeline.sources[0].specs] == ["imu", "odom"]

    async def run() -> object:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await pipeline.run()

    stats = anyio.run(run)
    with AnyReader([bag]) as reader:  # the independent count
        counts = {t: i.msgcount for t, i in reader.topics.items()}
    assert stats.hub.sensors["imu"].frames_in == counts["/imu/data"] == 3061
    assert stats.hub.sensors["odom"].frames_in == counts["/jackal_velocity_controller/odom"]
    assert pipeline.recorder._wall_clock is False  # a bag keeps its own stamps


def test_a_udp_time_series_source_takes_its_options(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = write(
        tmp_path,
        f"""
[sync]
policy = "exact"
sensors = ["imu"]

[[sources]]
type = "timeseries_udp"
name = "imu"
kind = "imu"
port = {port}
format = "msgpack"
time_unit = "us"
fields = ["ax", "ay", "az"]
clock = "online"
""",
    )
    source = build_source(load_config(path).sources[0])
    assert source.spec.kind == "imu"
    assert source.spec.overflow == "drop_oldest"
    assert type(source).__name__ == "TimeSeriesSource"


def test_a_python_source_is_built_from_its_class_and_options(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[sync]
policy = "exact"
sensors = ["tick"]

[[sources]]
type = "python"
name = "tick"
class = "tests.config.config_sources:Ticker"
options = { count = 12, period_ms = 5 }
""",
    )
    pipeline = build_pipeline(load_config(path))
    source = pipeline.sources[0]
    assert source.name == "tick"
    assert source.count == 12  # type: ignore[attr-defined]

    async def run() -> object:
        clock = VirtualClock()
        with use_clock(clock):
            async with clock.autojump():
                return await pipeline.run()

    assert anyio.run(run).groups_out == 12  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('class = "tests.config.config_sources:Nope"', "has no 'Nope'"),
        ('class = "no_such_module_xyz:Ticker"', "cannot import module 'no_such_module_xyz'"),
        ('class = "tests.config.config_sources:Ticker"\noptions = { cuont = 3 }', "cuont"),
        ('class = "pathlib:Path"', "is not a subclass of fusion.Source"),
        ('class = "not a class path"', "class"),
        (
            'class = "tests.config.config_sources:Ticker"\noptions = { count = "many" }',
            "source 'tick' (tests.config.config_sources:Ticker): option 'count' expects int, "
            "found 'many' (str)",
        ),
        (
            'class = "tests.config.config_sources:Ticker"\n'
            'options = { count = 3, period_ms = "5" }',
            "option 'period_ms' expects float, found '5' (str)",
        ),
    ],
)
def test_a_python_source_is_validated_like_the_rest(
    tmp_path: Path, options: str, message: str
) -> None:
    path = write(
        tmp_path,
        f"""
[sync]
policy = "exact"
sensors = ["tick"]

[[sources]]
type = "python"
name = "tick"
{options}
""",
    )
    with pytest.raises(ConfigError, match="sources\\[0\\]") as info:
        load_config(path)
    assert message in str(info.value)


def test_video_options_reach_the_source(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[sync]
policy = "exact"
sensors = ["cam"]

[[sources]]
type = "video"
name = "cam"
url = "udp://127.0.0.1:5600"
width = 640
height = 360
read_timeout = 2.5
open_timeout_s = 4
live = true
jump_threshold_s = 0.5
options = { fflags = "nobuffer", probesize = 32768 }
""",
    )
    source = build_source(load_config(path).sources[0])
    opts = source.options
    assert opts.size == (640, 360)  # (width, height): frames come out (360, 640, 3)
    assert (opts.read_timeout, opts.open_timeout, opts.jump_threshold) == (2.5, 4.0, 0.5)
    assert opts.options == {"fflags": "nobuffer", "probesize": "32768"}
    assert opts.live


@pytest.mark.parametrize("section", ["sources", "workers"])
def test_the_old_size_key_is_refused_with_what_to_write_instead(
    tmp_path: Path, section: str
) -> None:
    video = 'type = "video"\nname = "cam"\nurl = "clip.mp4"'
    worker = 'name = "w"\nmodel = "builtin:sobel_edges"\ninput = "cam"\npreprocess = "image"'
    path = write(
        tmp_path,
        f"""
[sync]
policy = "exact"
sensors = ["cam"]

[[sources]]
{video}
{"size = [360, 640]" if section == "sources" else ""}

[[workers]]
{worker}
{"size = [360, 640]" if section == "workers" else ""}
""",
    )
    with pytest.raises(
        ConfigError, match=f"{section}\\[0\\](.video)?: 'size' is ambiguous"
    ) as info:
        load_config(path)
    assert "write width = W and height = H instead" in str(info.value)


def test_width_and_height_come_together(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[sync]
policy = "exact"
sensors = ["cam"]

[[sources]]
type = "video"
name = "cam"
url = "clip.mp4"
width = 640
""",
    )
    with pytest.raises(ConfigError, match="give both 'width' and 'height'"):
        load_config(path)


def test_one_source_needs_no_sync_section_and_several_say_what_to_write(tmp_path: Path) -> None:
    one = load_config(write(tmp_path, '[[sources]]\ntype = "synthetic_imu"\nname = "imu"\n'))
    assert one.sync.policy == "nearest"
    assert one.sync.reference == "imu"
    two = write(
        tmp_path,
        '[[sources]]\ntype = "synthetic_camera"\nname = "cam"\n'
        '[[sources]]\ntype = "synthetic_imu"\nname = "imu"\n',
    )
    with pytest.raises(ConfigError) as info:
        load_config(two)
    message = str(info.value)
    assert "[sync] is missing" in message
    assert 'reference = "cam"' in message
    assert "found" not in message  # the whole file is not echoed back


def test_a_python_class_that_gives_source_a_name_is_told_which_source(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[sync]
policy = "exact"
sensors = ["slip"]

[[sources]]
type = "python"
name = "slip"
class = "tests.config.config_sources:NameAsSpec"
""",
    )
    with pytest.raises(ConfigError) as info:
        build_pipeline(load_config(path))
    message = str(info.value)
    assert message.startswith("source 'slip': tests.config.config_sources:NameAsSpec(...) failed")
    assert "Source.__init__ takes a SensorSpec" in message
    assert "got str 'slip'" in message


def test_an_int_option_is_a_float(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[sync]
policy = "exact"
sensors = ["tick"]

[[sources]]
type = "python"
name = "tick"
class = "tests.config.config_sources:Ticker"
options = { count = 2, period_ms = 5 }
""",
    )
    source = load_config(path).sources[0]
    assert source.options == {"count": 2, "period_ms": 5}  # type: ignore[union-attr]


def test_a_udp_time_series_gathers_as_its_config_says_else_as_the_command_does(
    tmp_path: Path,
) -> None:
    from adapters._timeseries import DEFAULT_GATHER
    from hyperframes.cli._record import record_gather
    from hyperframes.config.sources import RECORD_GATHER_MS

    body = '[[sources]]\ntype = "timeseries_udp"\nname = "imu"\nport = 0\n'
    unset = load_config(write(tmp_path, body)).sources[0]
    assert build_source(unset).gather == DEFAULT_GATHER
    assert build_source(unset, gather_ms=RECORD_GATHER_MS).gather == RECORD_GATHER_MS / 1e3
    (tmp_path / "set").mkdir()
    chosen = load_config(write(tmp_path / "set", body + "gather_ms = 2\n")).sources[0]
    assert build_source(chosen, gather_ms=RECORD_GATHER_MS).gather == 0.002
    # record alone gathers longer; anything watching live keeps the live default
    assert record_gather(None, None) == RECORD_GATHER_MS
    assert record_gather(object(), None) is None
    assert record_gather(None, object()) is None
