"""The input ledger from source to file to screen: what was lost is said, and counted.

A source counts what it receives; a pipeline with a recorder keeps each
sensor's ledger in the file's footer; ``info`` shows it, the Prometheus text
carries it, and ``record`` fails when a sensor made nothing of what it got.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import numpy as np

from fusion import ExactTime, Frame, Pipeline
from fusion._metrics import parse_prometheus, prometheus_text
from recordings import Recorder, open_recording
from tests.config.config_sources import Lossy, Ticker
from tests.terminal import run_piped

REPO = Path(__file__).resolve().parents[2]


def record_lossy(path: Path) -> Pipeline:
    sources = [Lossy(count=40, bad_every=4), Ticker(count=5)]
    pipeline = Pipeline(
        sources, ExactTime(["lossy", "ticker"]), recorder=Recorder(path, wall_clock=False)
    )
    anyio.run(pipeline.run)
    return pipeline


def test_the_recording_keeps_each_sensors_ledger(tmp_path: Path) -> None:
    path = tmp_path / "lossy.hfr"
    pipeline = record_lossy(path)
    with open_recording(path) as log:
        summary = log.summary()
    lossy = summary.ledgers["lossy"].source
    assert (lossy.unit, lossy.received, lossy.emitted, lossy.frames) == ("datagram", 40, 30, 30)
    assert lossy.lost == {"bad_length": 10}
    assert summary.sensors["lossy"].count == 30
    ticker = summary.ledgers["ticker"].source
    assert (ticker.received, ticker.frames, ticker.lost) == (5, 5, {})
    assert summary.lost == {"lossy": {"bad_length": 10}}

    metrics = parse_prometheus(prometheus_text(pipeline.statistics()))
    labels = frozenset({("sensor", "lossy"), ("unit", "datagram"), ("reason", "bad_length")})
    assert metrics[("hyperframes_source_lost_total", labels)] == 10
    received = frozenset({("sensor", "lossy"), ("unit", "datagram")})
    assert metrics[("hyperframes_source_received_total", received)] == 40


def test_info_shows_what_was_lost_while_recording(tmp_path: Path) -> None:
    path = tmp_path / "lossy.hfr"
    record_lossy(path)
    shown = run_piped("info", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "input ledger (while recording)" in shown.stdout
    assert "lossy: lost 10 of 40 datagrams (bad_length 10)" in shown.stdout
    doc = json.loads(run_piped("info", "--json", str(path), cwd=tmp_path).stdout)
    assert doc["ledger"]["lossy"]["lost"] == {"bad_length": 10}
    assert doc["ledger"]["lossy"]["received"] == 40
    assert doc["ledger"]["ticker"]["lost_total"] == 0


def test_a_file_written_without_a_pipeline_has_no_ledger(tmp_path: Path) -> None:
    path = tmp_path / "plain.hfr"
    with Recorder(path, wall_clock=False) as rec:
        rec.write(Frame("imu", 0, 0, np.zeros(6)))
    with open_recording(path) as log:
        assert log.summary().ledgers == {}
    doc = json.loads(run_piped("info", "--json", str(path), cwd=tmp_path).stdout)
    assert doc["ledger"] is None


def write_config(tmp_path: Path, bad_every: int) -> Path:
    config = tmp_path / "run.toml"
    config.write_text(
        f"""
[[sources]]
type = "python"
name = "lossy"
class = "tests.config.config_sources:Lossy"
options = {{ count = 12, bad_every = {bad_every} }}

[sync]
policy = "nearest"
reference = "lossy"
tolerance_ms = 20
"""
    )
    return config


def test_record_fails_when_a_sensor_made_nothing_of_its_input(tmp_path: Path) -> None:
    out = tmp_path / "none.hfr"
    done = run_piped("record", str(write_config(tmp_path, 1)), "-o", str(out), cwd=REPO)
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout + done.stderr
    assert "lossy received 12 datagrams and produced no frame (bad_length 12)" in text
    assert "datagram 11 has 3 bytes, want 8" in text
    assert "lossy: lost 12 of 12 datagrams (bad_length 12)" in text
    with open_recording(out) as log:
        assert log.summary().ledgers["lossy"].source.lost == {"bad_length": 12}


def test_record_with_some_losses_says_so_and_succeeds(tmp_path: Path) -> None:
    out = tmp_path / "some.hfr"
    done = run_piped("record", str(write_config(tmp_path, 3)), "-o", str(out), cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lossy: lost 4 of 12 datagrams (bad_length 4)" in done.stdout + done.stderr
    assert "recorded 8 frames" in done.stdout
