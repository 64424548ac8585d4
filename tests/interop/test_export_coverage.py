"""Every frame has a home in an export, or is listed with its reason and the command says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fusion import Frame, SensorSpec
from hyperframes.cli import main as cli
from recordings import Recorder
from recordings.outputs._export import export_recording
from tests.interop.rosmsgs import read_mcap_cdr

MS = 1_000_000
T0 = 1_700_000_000_000_000_000


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A camera written without a spec, a depth image, a status dict with strings, raw bytes."""
    path = tmp_path_factory.mktemp("mixed") / "mixed.hfr"
    rng = np.random.default_rng(3)
    with Recorder(path, sensors=[SensorSpec("blob", kind="generic")]) as rec:
        for i in range(4):
            t = T0 + i * 100 * MS
            rec.write(Frame("cam", i, t, rng.integers(0, 255, (6, 8, 3), dtype=np.uint8)))
            rec.write(Frame("depth", i, t + MS, rng.integers(0, 9000, (6, 8), dtype=np.uint16)))
            status = {
                "mode": np.asarray("auto" if i % 2 else "manual"),
                "speed": np.asarray(0.5 * i, np.float32),
                "count": np.asarray(i, np.int64),
                "ok": np.asarray(bool(i % 2)),
                "flags": np.arange(3, dtype=np.uint8) + i,
                "grid.cells": np.arange(6, dtype=np.float64).reshape(2, 3) * i,
                "names": np.asarray(["a", "bc"]),
            }
            rec.write(Frame("status", i, t + 2 * MS, status))
            rec.write(Frame("blob", i, t + 3 * MS, b"\x00\x01\x02", meta={"format": "weird"}))
    return path


def test_images_go_out_as_images_whatever_the_kind_and_dicts_keep_every_field(
    mixed: Path, tmp_path: Path
) -> None:
    from rosbags.highlevel import AnyReader

    out = tmp_path / "m.mcap"
    report = export_recording(mixed, out, to="ros2", sensors=["cam", "depth", "status"])
    assert report.skipped == {}
    assert report.complete
    assert report.generic == {"status": "hyperframes_msgs/msg/StatusRecord"}
    with AnyReader([out]) as reader:
        types = {t: i.msgtype for t, i in reader.topics.items()}
        msgs = {}
        for conn, _, raw in reader.messages():
            msgs.setdefault(conn.topic, []).append(reader.deserialize(raw, conn.msgtype))
    assert types["/cam"] == types["/depth"] == "sensor_msgs/msg/Image"
    assert msgs["/cam"][0].encoding == "rgb8"
    assert msgs["/cam"][0].data.size == 6 * 8 * 3
    assert msgs["/depth"][0].encoding in ("mono16", "16UC1")
    last = msgs["/status"][3]
    assert (last.mode, last.count, last.ok, last.names) == ("auto", 3, True, ["a", "bc"])
    assert last.speed == pytest.approx(1.5)
    assert last.flags.tolist() == [3, 4, 5]
    np.testing.assert_array_equal(
        last.grid__cells.reshape(last.grid__cells__shape), np.arange(6).reshape(2, 3) * 3
    )
    assert last.header.stamp.sec * 10**9 + last.header.stamp.nanosec == T0 + 302 * MS


def test_foxglove_json_keeps_strings_and_shapes(mixed: Path, tmp_path: Path) -> None:
    from mcap.reader import make_reader

    out = tmp_path / "m.fox.mcap"
    report = export_recording(mixed, out, to="foxglove", sensors=["status"], groups="none")
    assert report.complete
    assert report.generic == {"status": "hyperframes.status"}
    with open(out, "rb") as f:
        rows = [
            (s, json.loads(m.data)) for s, _, m in make_reader(f).iter_messages(topics=["/status"])
        ]
    schema = json.loads(rows[0][0].data)
    assert schema["properties"]["mode"] == {"type": "string"}
    assert rows[1][1]["mode"] == "auto"
    assert rows[1][1]["names"] == ["a", "bc"]
    assert rows[1][1]["grid.cells"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_export_exits_non_zero_and_lists_what_it_left_out(
    mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "all.mcap"
    assert cli(["export", str(mixed), "-o", str(out)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "blob" in text
    assert "bytes with unknown meta['format'] 'weird'" in text
    assert "wrote 12 of 16 frames read; 4 could not be exported" in text
    assert "status: no standard type fits; written as hyperframes_msgs/msg/StatusRecord" in text
    again = tmp_path / "again.mcap"
    assert cli(["export", str(mixed), "-o", str(again), "--skip-unsupported"]) == 0
    assert "wrote 12 of 16 frames read" in " ".join(capsys.readouterr().out.split())
    assert {t for t, *_ in read_mcap_cdr(again)} == {
        "/cam",
        "/depth",
        "/status",
        "/hyperframes/groups",
    }
    complete = tmp_path / "some.mcap"
    assert cli(["export", str(mixed), "-o", str(complete), "--sensors", "cam,status"]) == 0
    assert "wrote 8 of 8 frames read" in " ".join(capsys.readouterr().out.split())
