"""PX4 ULog through ``UlogSource``: a real PX4 log (pyulog's sample) checked against pyulog
reading the same file, in the same test; subsets, the GPS anchor, dropouts, damaged files,
and ``record``/``info`` through the CLI."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
import pyulog
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.errors import SourceOpenError
from adapters.ulog import Topic, UlogSource
from adapters.ulog._log import merged_order
from fusion._frames import Frame
from fusion.errors import ConfigError
from hyperframes.cli import main
from recordings import open_recording

LOG = Path(__file__).resolve().parents[1] / "data" / "ulog" / "sample_log_small.ulg"


def read_all(source: UlogSource) -> list[Frame]:
    frames: list[Frame] = []

    async def run() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)

    anyio.run(run)
    return frames


def by_sensor(frames: list[Frame]) -> dict[str, list[Frame]]:
    out: dict[str, list[Frame]] = defaultdict(list)
    for f in frames:
        out[f.sensor].append(f)
    return out


def reference(path: Path = LOG) -> dict[str, Any]:
    """pyulog's own reading: sensor name -> its dataset."""
    log = pyulog.ULog(str(path))
    return {f"ulog.{d.name}" + (f".{d.multi_id}" if d.multi_id else ""): d for d in log.data_list}


def test_every_message_of_a_real_log_is_a_frame_equal_to_pyulogs_reading() -> None:
    ref = reference()
    source = UlogSource(LOG)
    frames = read_all(source)
    got = by_sensor(frames)
    assert set(got) == set(ref)
    assert len(ref) == 70
    for sensor, data in ref.items():
        rows = np.concatenate([f.data for f in got[sensor]])
        stamps = np.asarray(data.data["timestamp"], np.int64) * 1000
        np.testing.assert_array_equal(rows["t"], stamps)
        np.testing.assert_array_equal([f.t_sensor for f in got[sensor]], stamps)
        assert [f.seq for f in got[sensor]] == list(range(len(stamps)))
        for field in data.field_data:
            if field.field_name != "timestamp":
                np.testing.assert_array_equal(rows[field.field_name], data.data[field.field_name])
    # one stream in time order, every message once in the ledger
    times = [f.t_sensor for f in frames]
    assert times == sorted(times)
    ledgers = source.ledgers()
    for sensor, data in ref.items():
        n = len(data.data["timestamp"])
        assert (ledgers[sensor].received, ledgers[sensor].emitted) == (n, n)
    kinds = {s.name: s.kind for s in source.specs}
    assert kinds["ulog.sensor_accel.2"] == "imu"
    assert kinds["ulog.vehicle_gps_position"] == "gnss"
    assert kinds["ulog.battery_status"] == "timeseries"


def test_the_logs_dropouts_are_counted_with_their_time_and_length() -> None:
    log = pyulog.ULog(str(LOG))
    assert len(log.dropouts) == 1
    source = UlogSource(LOG, topics=["cpuload"])
    read_all(source)
    assert source.errors["dropout"] == 1
    (message,) = source.error_messages["dropout"]
    d = log.dropouts[0]
    assert message == (
        f"sample_log_small.ulg: the logger dropped {d.duration} ms of messages at "
        f"t={d.timestamp / 1e6:.6f} s"
    )
    assert source.statistics()["dropouts"] == [(d.timestamp * 1000, d.duration)]


def test_the_gps_utc_time_anchors_the_boot_clock() -> None:
    gps = pyulog.ULog(str(LOG)).get_dataset("vehicle_gps_position").data
    ok = gps["time_utc_usec"] > 0
    offsets = gps["time_utc_usec"][ok].astype(np.int64) - gps["timestamp"][ok].astype(np.int64)
    expected = int(np.median(offsets * 1000))
    boot = UlogSource(LOG, topics=["vehicle_gps_position"])
    assert boot.utc_offset_ns == expected
    assert boot.spec.meta["utc_offset_ns"] == expected
    utc = UlogSource(LOG, topics=["vehicle_gps_position"], utc=True)
    frames = read_all(utc)
    assert frames[0].t_sensor == int(gps["timestamp"][0]) * 1000 + expected
    # the UTC fix of a message is within a second of its anchored stamp (a 2021 flight)
    for f in frames:
        fix = int(f.data["time_utc_usec"][0]) * 1000
        if fix:
            assert abs(f.t_sensor - fix) < 1_000_000_000
    assert frames[0].t_sensor // 10**9 // 86400 // 365 + 1970 == 2021


def test_a_log_without_gps_has_no_anchor_and_refuses_utc(tmp_path: Path) -> None:
    source = UlogSource(LOG, topics=["cpuload"])
    assert source.utc_offset_ns is not None  # the anchor comes from the whole log
    no_gps = tmp_path / "nogps.ulg"
    log = pyulog.ULog(str(LOG), message_name_filter_list=["cpuload"])
    log.write_ulog(str(no_gps))
    assert UlogSource(no_gps).utc_offset_ns is None
    with pytest.raises(ConfigError, match=r"utc=True needs a GPS fix with a UTC time"):
        UlogSource(no_gps, utc=True)


def test_topics_choose_a_subset_by_name_or_instance() -> None:
    every = UlogSource(LOG, topics=["sensor_accel"])
    assert [s.name for s in every.specs] == [
        "ulog.sensor_accel",
        "ulog.sensor_accel.1",
        "ulog.sensor_accel.2",
    ]
    one = UlogSource(LOG, topics=["sensor_accel.1", "vehicle_attitude"], name="px4")
    assert [s.name for s in one.specs] == ["px4.sensor_accel.1", "px4.vehicle_attitude"]
    frames = by_sensor(read_all(one))
    assert len(frames["px4.sensor_accel.1"]) == 6
    assert len(frames["px4.vehicle_attitude"]) == 1298
    with pytest.raises(SourceOpenError, match=r"has no topic 'vehicle_odometry'; it has "):
        UlogSource(LOG, topics=["vehicle_odometry"])


def test_files_that_are_not_ulogs_or_too_big_are_refused_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "flight.ulg"
    bad.write_bytes(b"not a log at all" * 10)
    with pytest.raises(SourceOpenError, match=r"'.*flight.ulg' is not a PX4 ULog: it does not"):
        UlogSource(bad)
    with pytest.raises(SourceOpenError, match=r"is 921,631 bytes, above max_bytes=1,000"):
        UlogSource(LOG, max_bytes=1000)
    with pytest.raises(SourceOpenError, match=r"No such file"):
        UlogSource(tmp_path / "missing.ulg")
    header_only = tmp_path / "short.ulg"
    header_only.write_bytes(LOG.read_bytes()[:10])
    with pytest.raises(SourceOpenError, match=r"cannot be read: "):
        UlogSource(header_only)


@pytest.mark.parametrize("cut", [200_000, 512_345, 900_000])
def test_a_log_cut_short_gives_what_pyulog_reads_of_it(tmp_path: Path, cut: int) -> None:
    short = tmp_path / "cut.ulg"
    short.write_bytes(LOG.read_bytes()[:cut])
    ref = reference(short)
    got = by_sensor(read_all(UlogSource(short)))
    assert {s: len(f) for s, f in got.items()} == {
        s: len(d.data["timestamp"]) for s, d in ref.items()
    }


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), max_size=20).map(sorted), min_size=1, max_size=5))
def test_merged_order_is_a_stable_sort_by_time(stamps: list[list[int]]) -> None:
    topics = [
        Topic(f"t{i}", 0, np.array([(s,) for s in ts], dtype=[("t", "<i8")]))
        for i, ts in enumerate(stamps)
    ]
    which, rows = merged_order(topics)
    got = [(int(topics[w].rows["t"][r]), int(w), int(r)) for w, r in zip(which, rows, strict=True)]
    expected = sorted((t, i, j) for i, ts in enumerate(stamps) for j, t in enumerate(ts))
    assert got == expected


def test_record_from_toml_then_info_of_the_log_and_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "px4.toml"
    config.write_text(
        f"""
[[sources]]
type = "ulog"
name = "px4"
path = "{LOG}"
topics = ["sensor_combined", "vehicle_gps_position", "vehicle_attitude"]

[sync]
policy = "nearest"
reference = "px4.vehicle_gps_position"
sensors = ["px4.vehicle_gps_position", "px4.sensor_combined", "px4.vehicle_attitude"]
tolerance_ms = 50
"""
    )
    out = tmp_path / "px4.hfr"
    assert main(["record", str(config), "-o", str(out), "--quiet"]) == 0
    ref = reference()
    with open_recording(out) as log:
        counts = {n: x.count for n, x in log.summary().sensors.items()}
        gps = list(log.frames(sensors=["px4.vehicle_gps_position"]))
    assert counts == {
        "px4.sensor_combined": len(ref["ulog.sensor_combined"].data["timestamp"]),
        "px4.vehicle_gps_position": 32,
        "px4.vehicle_attitude": 1298,
    }
    lat = ref["ulog.vehicle_gps_position"].data["lat"]
    np.testing.assert_array_equal([int(f.data["lat"][0]) for f in gps], lat)
    capsys.readouterr()
    assert main(["info", str(LOG), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "ulog"
    assert doc["vehicle"]["ver_hw"] == "CUBEPILOT_CUBEORANGE"
    assert doc["messages"] == sum(len(d.data["timestamp"]) for d in ref.values())
    assert doc["dropouts"] == [{"t_ns": 1194367328000, "duration_ms": 30}]
    assert doc["start_utc"].startswith("2021-04-21T06:30")
    assert main(["info", str(LOG)]) == 0
    shown = capsys.readouterr().out
    assert "PX4 ULog" in shown
    assert "sensor_accel [2]" in shown
    assert "lost 30 ms" in shown
