"""What an operator sees on the live screen: warnings stay, silence is named, exits tell.

``hyperframes record`` runs in a pseudo-terminal with a camera pointed at a
dead ``tcp://`` port and a UDP IMU whose sender stops; the bytes the terminal
received are played into a terminal emulator (pyte), so the test reads the
screen the person would read, not the log that scrolled under the table.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from recordings import open_recording
from tests.acceptance.live_helpers import Recording, free_port, python_sender, sent_count
from tests.terminal import screen

COLUMNS, LINES = 160, 60


def test_the_screen_keeps_warnings_names_silence_and_the_exit_tells(tmp_path: Path) -> None:
    dead = free_port(__import__("socket").SOCK_STREAM)  # nobody listens here
    imu_port = free_port()
    config = tmp_path / "live.toml"
    config.write_text(
        f"""
[sync]
policy = "nearest"
reference = "imu"
tolerance_ms = 50
optional = ["cam"]

[[sources]]
type = "video"
name = "cam"
url = "tcp://127.0.0.1:{dead}"
clock = "online"
read_timeout_s = 1
open_timeout_s = 1
backoff_max_s = 0.5

[[sources]]
type = "timeseries_udp"
name = "imu"
kind = "imu"
port = {imu_port}
clock = "online"
"""
    )
    out = tmp_path / "screen.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    try:
        rec.wait_for("recording to", timeout=60)
        imu = python_sender("imu", str(imu_port), "--rate", "100")
        time.sleep(2.0)
        sent = sent_count(imu.stop())
        rec.wait_for("no data for", timeout=15)  # the IMU went silent
        code, took = rec.stop(signal.SIGINT)
    finally:
        if rec.proc.poll() is None:
            rec.proc.kill()
    lines = screen(bytes(rec.output), COLUMNS, LINES).splitlines()
    text = "\n".join(lines)
    # The camera's connection error is a WARNING that stays on the screen, above the
    # table, with its reason.
    warnings = [ln for ln in lines if ln.startswith("WARNING") and "cannot open" in ln]
    assert warnings, text
    assert "refused" in warnings[0].lower(), warnings[0]
    # The run ends non-zero: the camera produced nothing, and says why.
    assert code == 1, text
    assert took < 5
    assert any("cam produced no frame for the whole run" in ln for ln in lines), text
    assert "SIGINT: stopping sources" in text
    with open_recording(out) as log:
        summary = log.summary()
    assert 0 < summary.sensors["imu"].count <= sent
    assert summary.ledgers["cam"].source.frames == 0


def test_a_silent_sensor_is_named_in_its_row(tmp_path: Path) -> None:
    import anyio
    from rich.console import Console

    from fusion import Nearest, Pipeline, VirtualClock, use_clock
    from hyperframes.cli._common import live_table, silence_notes
    from tests.config.config_sources import Ticker

    clock = VirtualClock()
    pipeline = Pipeline([Ticker(count=3, period_ms=10)], Nearest("ticker", ["ticker"], 0))

    async def main() -> None:
        async with pipeline.open() as groups:
            async for _ in groups:
                pass

    with use_clock(clock):
        anyio.run(main)
        sensors = pipeline.statistics().hub.sensors
        notes = silence_notes(pipeline, sensors, clock.now() + 5_000_000_000, 0)
    assert notes["ticker"].startswith("no data for 5.0")
    console = Console(width=160, record=True)
    console.print(live_table(pipeline.statistics(), "record", silence=notes))
    row = next(ln for ln in console.export_text().splitlines() if "ticker" in ln)
    assert "no data for 5.0" in row
